-- All-kNN at 1M uniform 2-D points, k = 10, on the CPU: kdgpu's functions
-- on a table whose kdgpu index is one tree (built at the default
-- maintenance_work_mem, which holds 1M 2-D points since builds sort in
-- place, so the functions search the index's tree) and a forest (built at
-- 32 MB, so they build a tree of their own), beside the SP-GiST LATERAL
-- peer and the executor's floor for the same row counts, in one session.
-- psql -f bench/sql/allknn-1m-trees.sql
\timing on
SELECT version();
SET kdgpu.device = cpu;
DROP TABLE IF EXISTS akt;
CREATE TABLE akt AS
  SELECT i AS id, point(random(), random()) AS p FROM generate_series(1, 1000000) i;
VACUUM ANALYZE akt;
SELECT count(*) FROM generate_series(1, 1000000);
SELECT count(*) FROM generate_series(1, 10000000);
RESET maintenance_work_mem;
CREATE INDEX akt_kd ON akt USING kdgpu (p);
SELECT trees FROM kd_index_stats('akt_kd');
SELECT count(*) FROM kd_all_knn_arrays('akt', 10);
SELECT count(*) FROM kd_all_knn_arrays('akt', 10);
SELECT count(*) FROM kd_all_knn('akt', 10);
SELECT count(*) FROM kd_all_knn('akt', 10);
SET maintenance_work_mem = '32MB';
REINDEX INDEX akt_kd;
RESET maintenance_work_mem;
SELECT trees FROM kd_index_stats('akt_kd');
SELECT count(*) FROM kd_all_knn_arrays('akt', 10);
SELECT count(*) FROM kd_all_knn_arrays('akt', 10);
SELECT sum(cardinality(nn_ctids)) FROM kd_all_knn_arrays('akt', 10);
SELECT count(*) FROM kd_all_knn('akt', 10);
SELECT count(*) FROM kd_all_knn('akt', 10);
DROP INDEX akt_kd;
CREATE INDEX akt_sp ON akt USING spgist (p);
EXPLAIN (COSTS OFF) SELECT count(*) FROM akt a CROSS JOIN LATERAL (SELECT 1 FROM akt b ORDER BY b.p <-> a.p LIMIT 11) s;
SELECT count(*) FROM akt a CROSS JOIN LATERAL (SELECT 1 FROM akt b ORDER BY b.p <-> a.p LIMIT 11) s;
SELECT count(*) FROM akt a CROSS JOIN LATERAL (SELECT 1 FROM akt b ORDER BY b.p <-> a.p LIMIT 11) s;
DROP TABLE akt;
