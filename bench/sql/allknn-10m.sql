-- All-kNN and the kNN join through SQL at 10M points, k = 10, with the
-- executor's floors beside them (bench/README.md, "SQL All-kNN"):
--   psql -v device=gpu -f bench/sql/allknn-10m.sql
-- Each statement runs three times; serial (no parallel workers) first,
-- then with the parallel streaming scan.
\ir pts-10m.sql
CREATE TABLE q AS SELECT i AS id, point(random() * 1000, random() * 1000) AS p FROM generate_series(1, 1000000) i;
VACUUM ANALYZE q;
SELECT device, runs_on, gpu_usable, gpu FROM kd_status();
SHOW max_parallel_workers;

\echo '== floors: the executor through a tuplestore, 10M and 100M rows'
SELECT count(*) FROM generate_series(1, 10000000);
SELECT count(*) FROM generate_series(1, 100000000);

\echo '== serial: max_parallel_workers_per_gather = 0'
SET max_parallel_workers_per_gather = 0;
SELECT count(*) FROM kd_all_knn_arrays('pts', 10);
SELECT count(*) FROM kd_all_knn_arrays('pts', 10);
SELECT count(*) FROM kd_all_knn_arrays('pts', 10);
SELECT count(*) FROM kd_all_knn('pts', 10);
SELECT count(*) FROM kd_all_knn('pts', 10);
SELECT count(*) FROM kd_all_knn('pts', 10);
SELECT count(*) FROM kd_knn_join('pts', 'q', 10);
SELECT count(*) FROM kd_knn_join('pts', 'q', 10);
SELECT count(*) FROM kd_knn_join('pts', 'q', 10);
SELECT sum(cardinality(nn_ctids)) FROM kd_all_knn_arrays('pts', 10);
SELECT sum(cardinality(nn_ctids)) FROM kd_all_knn_arrays('pts', 10);

\echo '== parallel: 15 workers per gather, workers by the answer size'
SET max_parallel_workers_per_gather = 15;
SET min_parallel_table_scan_size = 0;
EXPLAIN (COSTS OFF) SELECT count(*) FROM kd_all_knn('pts', 10);
SELECT count(*) FROM kd_all_knn_arrays('pts', 10);
SELECT count(*) FROM kd_all_knn_arrays('pts', 10);
SELECT count(*) FROM kd_all_knn_arrays('pts', 10);
SELECT count(*) FROM kd_all_knn('pts', 10);
SELECT count(*) FROM kd_all_knn('pts', 10);
SELECT count(*) FROM kd_all_knn('pts', 10);
SELECT count(*) FROM kd_knn_join('pts', 'q', 10);
SELECT count(*) FROM kd_knn_join('pts', 'q', 10);
SELECT count(*) FROM kd_knn_join('pts', 'q', 10);
SELECT sum(cardinality(nn_ctids)) FROM kd_all_knn_arrays('pts', 10);
SELECT sum(cardinality(nn_ctids)) FROM kd_all_knn_arrays('pts', 10);
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT count(*) FROM kd_all_knn('pts', 10);

\echo '== the same rows, serial and parallel (GPU): fingerprints of the 1M-point join and All-kNN'
CREATE TEMP TABLE fp (how text, n bigint, d float8, r bigint, h numeric);
SET max_parallel_workers_per_gather = 0;
INSERT INTO fp SELECT 'serial join', count(*), sum(distance), sum(rank), sum(hashtext(query_ctid::text || nn_ctid::text)::numeric) FROM kd_knn_join('pts', 'q', 10);
INSERT INTO fp SELECT 'serial allknn', count(*), sum(distance), sum(rank), sum(hashtext(query_ctid::text || nn_ctid::text)::numeric) FROM kd_all_knn('q', 10);
SET max_parallel_workers_per_gather = 15;
INSERT INTO fp SELECT 'parallel join', count(*), sum(distance), sum(rank), sum(hashtext(query_ctid::text || nn_ctid::text)::numeric) FROM kd_knn_join('pts', 'q', 10);
INSERT INTO fp SELECT 'parallel allknn', count(*), sum(distance), sum(rank), sum(hashtext(query_ctid::text || nn_ctid::text)::numeric) FROM kd_all_knn('q', 10);
SELECT * FROM fp;
SELECT count(DISTINCT (n, r, h)) = 1 AND max(d) - min(d) < 1e-6 * max(d) AS join_same FROM fp WHERE how LIKE '%join';
SELECT count(DISTINCT (n, r, h)) = 1 AND max(d) - min(d) < 1e-6 * max(d) AS allknn_same FROM fp WHERE how LIKE '%allknn';

\echo '== CREATE TABLE AS: kdgpu, and the same rows copied from a table (the insert floor)'
SET max_parallel_workers_per_gather = 0;
CREATE TABLE nb1 AS SELECT * FROM kd_all_knn_arrays('pts', 10);
DROP TABLE nb1;
CREATE TABLE nb1 AS SELECT * FROM kd_all_knn_arrays('pts', 10);
CREATE TABLE nb2 AS SELECT * FROM nb1;
DROP TABLE nb2;
CREATE TABLE nb2 AS SELECT * FROM nb1;
CREATE UNLOGGED TABLE nb3 AS SELECT * FROM kd_all_knn_arrays('pts', 10);
CREATE UNLOGGED TABLE nb4 AS SELECT * FROM nb1;
SELECT pg_size_pretty(pg_relation_size('nb1')) AS table_size;
SET max_parallel_workers_per_gather = 15;
EXPLAIN (COSTS OFF) CREATE TABLE nb5 AS SELECT * FROM kd_all_knn_arrays('pts', 10);
CREATE TABLE nb5 AS SELECT * FROM kd_all_knn_arrays('pts', 10);
