-- What CREATE TABLE AS of All-kNN's arrays can cost at best (bench/README.md,
-- "SQL All-kNN"): 10M uniform 2-D points, k = 10.  PostgreSQL 15 inserts a
-- CREATE TABLE AS's rows in the leader only, so its floor is the same rows
-- copied from a table: serially, and through a Gather whose workers read
-- them (the leader only inserting), which is what a table creation fed by
-- parallel workers could at best cost.  kdgpu's own table creation runs
-- serially and then at the planner's default costs.
--   psql -v device=gpu -f bench/sql/ctas-floor-10m.sql
\ir pts-10m.sql

\echo '== serial: kdgpu, then the same rows copied from a table (the insert floor)'
SET max_parallel_workers_per_gather = 0;
CREATE TABLE nb1 AS SELECT * FROM kd_all_knn_arrays('pts', 10);
VACUUM ANALYZE nb1;
CREATE TABLE f1 AS SELECT * FROM nb1;
DROP TABLE f1;
CREATE TABLE f1 AS SELECT * FROM nb1;
DROP TABLE f1;

\echo '== through a Gather: workers read the rows, the leader only inserts'
SET max_parallel_workers_per_gather = 15;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
EXPLAIN (COSTS OFF) CREATE TABLE f2 AS SELECT * FROM nb1;
CREATE TABLE f2 AS SELECT * FROM nb1;
DROP TABLE f2;
CREATE TABLE f2 AS SELECT * FROM nb1;
DROP TABLE f2;

\echo '== kdgpu at the default planner costs, up to 15 workers, then up to 2 (the default)'
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET parallel_leader_participation;
EXPLAIN (COSTS OFF) CREATE TABLE nb2 AS SELECT * FROM kd_all_knn_arrays('pts', 10);
CREATE TABLE nb2 AS SELECT * FROM kd_all_knn_arrays('pts', 10);
DROP TABLE nb2;
CREATE TABLE nb2 AS SELECT * FROM kd_all_knn_arrays('pts', 10);
DROP TABLE nb2;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) CREATE TABLE nb2 AS SELECT * FROM kd_all_knn_arrays('pts', 10);
CREATE TABLE nb2 AS SELECT * FROM kd_all_knn_arrays('pts', 10);
SELECT count(*) AS rows,
       count(*) FILTER (WHERE a.nn_ctids IS DISTINCT FROM b.nn_ctids OR
                              a.distances IS DISTINCT FROM b.distances) AS differ
  FROM nb1 a FULL JOIN nb2 b USING (query_ctid);
