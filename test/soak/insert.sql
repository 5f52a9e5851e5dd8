INSERT INTO soak.sp (p) VALUES (point(random() * 1000, random() * 1000));
INSERT INTO soak.sv (v) VALUES (ARRAY[random() * 100, random() * 100, random() * 100]);
