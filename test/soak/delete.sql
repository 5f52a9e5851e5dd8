\set id random(1, :rows)
DELETE FROM soak.sp WHERE id = :id;
DELETE FROM soak.sv WHERE id = :id;
