\set id random(1, :rows)
UPDATE soak.sp SET p = point(random() * 1000, random() * 1000) WHERE id = :id;
UPDATE soak.sv SET v = ARRAY[random() * 100, random() * 100, random() * 100] WHERE id = :id;
