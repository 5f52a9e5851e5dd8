-- The parallel streaming scan (stream_parallel.c): where the planner uses
-- it, and that the rows its workers return together equal the Function
-- Scan's (kdgpu.stream_rows = off) and brute force in SQL, for each way of
-- naming query and neighbour rows, with filters, joins above and rescans
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.25);

CREATE TABLE ppts (id int, p point);
INSERT INTO ppts SELECT i, point(random() * 100, random() * 100) FROM generate_series(1, 2500) i;
INSERT INTO ppts SELECT i, point(floor(random() * 6) * 15, floor(random() * 6) * 15) FROM generate_series(2501, 3000) i;
INSERT INTO ppts VALUES (0, NULL);
ANALYZE ppts;
CREATE TABLE pparts (id int, p point) PARTITION BY RANGE (id);
CREATE TABLE pparts_lo PARTITION OF pparts FOR VALUES FROM (0) TO (1500);
CREATE TABLE pparts_hi PARTITION OF pparts FOR VALUES FROM (1500) TO (4000);
INSERT INTO pparts SELECT * FROM ppts;
ANALYZE pparts;

-- the rows of each call, from the Function Scan
SET kdgpu.stream_rows = off;
CREATE TABLE f_all AS SELECT * FROM kd_all_knn('ppts', 5);
CREATE TABLE f_key AS SELECT * FROM kd_all_knn('ppts', 4, 'id', include_self => true);
CREATE TABLE f_parts AS SELECT * FROM kd_all_knn_parts('pparts', 3);
CREATE TABLE f_arrays AS SELECT * FROM kd_all_knn_arrays('ppts', 6);
CREATE TABLE f_join AS SELECT * FROM kd_knn_join('ppts', 'pparts_hi', 2);
CREATE TABLE f_ord AS SELECT * FROM kd_knn_join('ppts', ARRAY[point(1, 1), point(50, 50), point(90, 15)], 700);
CREATE TABLE f_range AS SELECT * FROM kd_range_join('ppts', ARRAY[point(10, 10), point(200, 200), point(45, 45)], ARRAY[8, 1, 15]);
RESET kdgpu.stream_rows;

-- a parallel plan wherever it is not dearer
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT count(*) FROM kd_all_knn('ppts', 5);
EXPLAIN (COSTS OFF) SELECT query_ctid, max(distance) FROM kd_all_knn('ppts', 5) WHERE rank > 1 GROUP BY query_ctid;
EXPLAIN (COSTS OFF) SELECT * FROM kd_all_knn('ppts', 5) EXCEPT ALL SELECT * FROM f_all;
-- not with an argument that is not a constant
EXPLAIN (COSTS OFF) SELECT count(*) FROM kd_all_knn('ppts', (SELECT 5));

-- the same rows as the Function Scan's, each once
SELECT 'all' AS call, count(*) AS differ FROM (
  (SELECT * FROM kd_all_knn('ppts', 5) EXCEPT ALL SELECT * FROM f_all)
  UNION ALL (SELECT * FROM f_all EXCEPT ALL SELECT * FROM kd_all_knn('ppts', 5))) d
UNION ALL SELECT 'key', count(*) FROM (
  (SELECT * FROM kd_all_knn('ppts', 4, 'id', include_self => true) EXCEPT ALL SELECT * FROM f_key)
  UNION ALL (SELECT * FROM f_key EXCEPT ALL SELECT * FROM kd_all_knn('ppts', 4, 'id', include_self => true))) d
UNION ALL SELECT 'parts', count(*) FROM (
  (SELECT * FROM kd_all_knn_parts('pparts', 3) EXCEPT ALL SELECT * FROM f_parts)
  UNION ALL (SELECT * FROM f_parts EXCEPT ALL SELECT * FROM kd_all_knn_parts('pparts', 3))) d
UNION ALL SELECT 'arrays', count(*) FROM (
  (SELECT * FROM kd_all_knn_arrays('ppts', 6) EXCEPT ALL SELECT * FROM f_arrays)
  UNION ALL (SELECT * FROM f_arrays EXCEPT ALL SELECT * FROM kd_all_knn_arrays('ppts', 6))) d
UNION ALL SELECT 'join', count(*) FROM (
  (SELECT * FROM kd_knn_join('ppts', 'pparts_hi', 2) EXCEPT ALL SELECT * FROM f_join)
  UNION ALL (SELECT * FROM f_join EXCEPT ALL SELECT * FROM kd_knn_join('ppts', 'pparts_hi', 2))) d
UNION ALL SELECT 'ord', count(*) FROM (
  (SELECT * FROM kd_knn_join('ppts', ARRAY[point(1, 1), point(50, 50), point(90, 15)], 700) EXCEPT ALL SELECT * FROM f_ord)
  UNION ALL (SELECT * FROM f_ord EXCEPT ALL SELECT * FROM kd_knn_join('ppts', ARRAY[point(1, 1), point(50, 50), point(90, 15)], 700))) d
UNION ALL SELECT 'range', count(*) FROM (
  (SELECT * FROM kd_range_join('ppts', ARRAY[point(10, 10), point(200, 200), point(45, 45)], ARRAY[8, 1, 15]) EXCEPT ALL SELECT * FROM f_range)
  UNION ALL (SELECT * FROM f_range EXCEPT ALL SELECT * FROM kd_range_join('ppts', ARRAY[point(10, 10), point(200, 200), point(45, 45)], ARRAY[8, 1, 15]))) d;
SELECT (SELECT count(*) FROM f_all) AS all_rows, (SELECT count(*) FROM f_arrays) AS arrays_rows,
       (SELECT count(*) FROM f_range) AS range_rows;

-- aggregates in the workers, and a filter in the scan, against brute force
SELECT count(*) AS mismatches FROM (
  SELECT query_ctid, max(distance), count(*) FROM kd_all_knn('ppts', 5) WHERE rank > 1 GROUP BY query_ctid
  EXCEPT ALL
  SELECT q.ctid, max(b.d), count(*) FROM ppts q,
    LATERAL (SELECT p <-> q.p AS d, row_number() OVER (ORDER BY p <-> q.p, ctid) AS r
               FROM ppts o WHERE o.p IS NOT NULL AND o.ctid <> q.ctid ORDER BY p <-> q.p, ctid LIMIT 5) b
   WHERE q.p IS NOT NULL AND b.r > 1 GROUP BY q.ctid) d;
SELECT count(*) = 5 * (SELECT count(p) FROM ppts) AS pair_count, sum(rank) = 15 * (SELECT count(p) FROM ppts) AS rank_sum
  FROM kd_all_knn('ppts', 5);

-- an answer made in slices (larger than kdgpu.answer_memory_limit) is not
-- shared: the leader returns all its rows, the same as the whole answer's
SET kdgpu.answer_memory_limit = 1;
EXPLAIN (COSTS OFF) SELECT count(*) FROM kd_all_knn('ppts', 5);
SELECT count(*) AS differ FROM (
  (SELECT * FROM kd_all_knn('ppts', 5) EXCEPT ALL SELECT * FROM f_all)
  UNION ALL (SELECT * FROM f_all EXCEPT ALL SELECT * FROM kd_all_knn('ppts', 5))) d;
SELECT count(*) AS differ FROM (
  (SELECT * FROM kd_all_knn_arrays('ppts', 6) EXCEPT ALL SELECT * FROM f_arrays)
  UNION ALL (SELECT * FROM f_arrays EXCEPT ALL SELECT * FROM kd_all_knn_arrays('ppts', 6))) d;
RESET kdgpu.answer_memory_limit;

-- rescans: the Gather on the inner side of a nested loop starts its
-- workers again, and the answer's queries are handed out again
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
-- (a parallel restricted filter keeps the loop in the leader)
EXPLAIN (COSTS OFF) SELECT g, count(*) FROM generate_series(1, 3) g, kd_all_knn('ppts', 2) a
 WHERE a.rank = least(g, 2) AND g > pg_backend_pid() - pg_backend_pid() GROUP BY g;
SELECT g, count(*) = (SELECT count(p) FROM ppts) AS one_per_point FROM generate_series(1, 3) g, kd_all_knn('ppts', 2) a
 WHERE a.rank = least(g, 2) AND g > pg_backend_pid() - pg_backend_pid() GROUP BY g ORDER BY g;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;

-- no rows: an empty table
CREATE TABLE pnone (p point);
SELECT count(*) AS no_rows FROM kd_all_knn('pnone', 3);

-- at the planner's default parallel costs: the rows of All-kNN's arrays
-- for a table made of them come from workers, which make the arrays
-- (stream_scan.c, KDG_ARRAY_HIT_COST); a count(*), which makes none, and a
-- small answer stay serial
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
CREATE TABLE pbig AS SELECT i AS id, point(random() * 1000, random() * 1000) AS p FROM generate_series(1, 50000) i;
ANALYZE pbig;
EXPLAIN (COSTS OFF) CREATE TABLE pbig_nb AS SELECT * FROM kd_all_knn_arrays('pbig', 10);
EXPLAIN (COSTS OFF) SELECT count(*) FROM kd_all_knn_arrays('pbig', 10);
EXPLAIN (COSTS OFF) CREATE TABLE ppts_nb AS SELECT * FROM kd_all_knn_arrays('ppts', 10);
SET kdgpu.stream_rows = off;
CREATE TABLE pbig_f AS SELECT * FROM kd_all_knn_arrays('pbig', 10);
RESET kdgpu.stream_rows;
CREATE TABLE pbig_nb AS SELECT * FROM kd_all_knn_arrays('pbig', 10);
SELECT count(*) AS rows,
       count(*) FILTER (WHERE a.nn_ctids IS DISTINCT FROM b.nn_ctids OR
                              a.distances IS DISTINCT FROM b.distances) AS differ
  FROM pbig_f a FULL JOIN pbig_nb b USING (query_ctid);

-- a large answer (16 MB or more) goes into a segment the leader keeps
-- mapped for the next query, which takes it again; a second parallel scan
-- in the same query, while the first still holds it, makes a segment of
-- its own; a count shares no hits.  Each against the Function Scan's rows.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET kdgpu.stream_rows = off;
CREATE TABLE pbig_f25 AS SELECT * FROM kd_all_knn('pbig', 25);
RESET kdgpu.stream_rows;
EXPLAIN (COSTS OFF) SELECT count(*) FROM kd_all_knn('pbig', 25);
SELECT count(*) AS differ FROM (
  (SELECT * FROM kd_all_knn('pbig', 25) EXCEPT ALL SELECT * FROM pbig_f25)
  UNION ALL (SELECT * FROM pbig_f25 EXCEPT ALL SELECT * FROM kd_all_knn('pbig', 25))) d;
SELECT count(*) AS differ FROM (
  (SELECT * FROM kd_all_knn('pbig', 25) EXCEPT ALL SELECT * FROM pbig_f25)
  UNION ALL (SELECT * FROM pbig_f25 EXCEPT ALL SELECT * FROM kd_all_knn('pbig', 25))) d;
SELECT (SELECT sum(distance::numeric) FROM kd_all_knn('pbig', 25)) =
       (SELECT sum(distance::numeric) FROM pbig_f25) AS summed_25,
       (SELECT sum(distance::numeric) FROM kd_all_knn('pbig', 24)) =
       (SELECT sum(distance::numeric) FROM pbig_f25 WHERE rank <= 24) AS summed_24,
       (SELECT count(*) FROM kd_all_knn('pbig', 25)) = 25 * 50000 AS counted;
