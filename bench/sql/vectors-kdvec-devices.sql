-- kd_knn_join through a kdvec index's rows and tree on each device:
-- 1M clustered 64-D vectors (vb_c of vectors-data.sql), a
-- kdvec index, then joins of 1k, 10k and 100k query rows (table form,
-- k = 10) under kdgpu.device = auto, cpu and gpu, each run twice after
-- the copy of the index's rows is made, with \timing and last_run.
-- psql -f bench/sql/vectors-kdvec-devices.sql
\set ON_ERROR_STOP on
CREATE EXTENSION IF NOT EXISTS kdgpu;
\set n 1000000
\set nq 100000
\set dim 64
\ir vectors-data.sql
CREATE INDEX ON vb_c USING kdvec (v);
CREATE TEMP TABLE q1k AS SELECT * FROM vb_qc WHERE id <= 1000;
CREATE TEMP TABLE q10k AS SELECT * FROM vb_qc WHERE id <= 10000;
SELECT count(*) FROM kd_knn_join('vb_c', 'v', 'q1k', 'v', 10);
\timing on
SET kdgpu.device = auto;
SELECT count(*) FROM kd_knn_join('vb_c', 'v', 'q1k', 'v', 10);
SELECT count(*) FROM kd_knn_join('vb_c', 'v', 'q1k', 'v', 10);
SELECT last_run FROM kd_status();
SELECT count(*) FROM kd_knn_join('vb_c', 'v', 'q10k', 'v', 10);
SELECT count(*) FROM kd_knn_join('vb_c', 'v', 'q10k', 'v', 10);
SELECT last_run FROM kd_status();
SELECT count(*) FROM kd_knn_join('vb_c', 'v', 'vb_qc', 'v', 10);
SELECT count(*) FROM kd_knn_join('vb_c', 'v', 'vb_qc', 'v', 10);
SELECT last_run FROM kd_status();
SET kdgpu.device = cpu;
SELECT count(*) FROM kd_knn_join('vb_c', 'v', 'q1k', 'v', 10);
SELECT count(*) FROM kd_knn_join('vb_c', 'v', 'q1k', 'v', 10);
SELECT last_run FROM kd_status();
SELECT count(*) FROM kd_knn_join('vb_c', 'v', 'q10k', 'v', 10);
SELECT count(*) FROM kd_knn_join('vb_c', 'v', 'q10k', 'v', 10);
SELECT count(*) FROM kd_knn_join('vb_c', 'v', 'vb_qc', 'v', 10);
SELECT count(*) FROM kd_knn_join('vb_c', 'v', 'vb_qc', 'v', 10);
SELECT last_run FROM kd_status();
SET kdgpu.device = gpu;
SELECT count(*) FROM kd_knn_join('vb_c', 'v', 'q1k', 'v', 10);
SELECT count(*) FROM kd_knn_join('vb_c', 'v', 'q1k', 'v', 10);
SELECT last_run FROM kd_status();
