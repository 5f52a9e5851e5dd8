SELECT count(*) FROM kd_all_knn('soak.sv', 4);
SELECT count(*) FROM kd_all_knn_arrays('soak.sp', 3);
