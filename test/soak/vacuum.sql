VACUUM soak.sp;
VACUUM soak.sv;
