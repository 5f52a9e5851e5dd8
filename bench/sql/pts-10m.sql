-- The table of the 10M-point SQL benchmarks (allknn-10m.sql,
-- ctas-floor-10m.sql), read with \ir: 10M uniform 2-D points in pts with
-- a kdgpu index built in one tree, on the device the psql variable device
-- names.
\set ON_ERROR_STOP on
\timing on
CREATE EXTENSION IF NOT EXISTS kdgpu;
SET kdgpu.device = :'device';
SET kdgpu.gpu_min_points = 0;
SELECT setseed(0.5);
CREATE TABLE pts AS SELECT i AS id, point(random() * 1000, random() * 1000) AS p FROM generate_series(1, 10000000) i;
SET maintenance_work_mem = '4GB';
CREATE INDEX ON pts USING kdgpu (p);
VACUUM ANALYZE pts;
