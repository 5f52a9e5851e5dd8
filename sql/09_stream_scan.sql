-- The streaming scan of the kd_* functions in FROM (stream_scan.c): where
-- the planner uses it, and that its rows equal brute force in SQL and the
-- Function Scan's (kdgpu.stream_rows = off), through rescans, parameters,
-- filters and cursors
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.75);

CREATE TABLE pts (id int, p point);
INSERT INTO pts SELECT i, point(random() * 100, random() * 100) FROM generate_series(1, 1500) i;
INSERT INTO pts SELECT i, point(floor(random() * 5) * 20, floor(random() * 5) * 20) FROM generate_series(1501, 2000) i;
INSERT INTO pts VALUES (0, NULL);
ANALYZE pts;

CREATE FUNCTION brute_knn(query point, k int)
RETURNS TABLE (nn_ctid tid, distance float8, rank int) LANGUAGE sql AS $$
  SELECT ctid, p <-> query, (row_number() OVER (ORDER BY p <-> query, ctid))::int
    FROM pts WHERE p IS NOT NULL ORDER BY p <-> query, ctid LIMIT k
$$;

-- the plans: the scan for a single call, the Function Scan otherwise
EXPLAIN (COSTS OFF) SELECT count(*) FROM kd_all_knn_arrays('pts', 5);
EXPLAIN (COSTS OFF) SELECT * FROM kd_knn('pts', point(1, 2), 3) WHERE rank > 1;
EXPLAIN (COSTS OFF) SELECT * FROM kd_knn('pts', point(1, 2), 3) WITH ORDINALITY;
EXPLAIN (COSTS OFF) SELECT k FROM kd_knn('pts', point(1, 2), 3) k;
EXPLAIN (COSTS OFF) SELECT * FROM pts a, LATERAL kd_knn('pts', a.p, 2) WHERE a.id < 3;
SET kdgpu.stream_rows = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM kd_all_knn_arrays('pts', 5);
RESET kdgpu.stream_rows;

-- the planner's row counts: k per query, the table's rows per point
CREATE FUNCTION plan_rows(query text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  line text;
BEGIN
  EXECUTE 'EXPLAIN ' || query INTO line;
  RETURN (regexp_match(line, 'rows=(\d+)'))[1]::bigint;
END $$;
SELECT plan_rows($$SELECT * FROM kd_knn('pts', point(1, 2), 7)$$) AS knn_rows,
       plan_rows($$SELECT * FROM kd_all_knn('pts', 4)$$) AS all_knn_rows,
       plan_rows($$SELECT * FROM kd_all_knn_arrays('pts', 4)$$) AS arrays_rows,
       plan_rows($$SELECT * FROM kd_knn_join('pts', 'pts', 2)$$) AS join_rows;

-- every function's rows equal the Function Scan's, in the same order
CREATE FUNCTION every_call() RETURNS TABLE (f text, n bigint, r text) LANGUAGE sql STABLE AS $$
  SELECT 'knn', row_number() OVER (), ROW(r.*)::text FROM kd_knn('pts', point(50, 50), 20) r
  UNION ALL SELECT 'knn_join', row_number() OVER (), ROW(r.*)::text
    FROM kd_knn_join('pts', ARRAY[point(1, 1), point(40, 60), point(80, 80)], 9) r
  UNION ALL SELECT 'knn_join_table', row_number() OVER (), ROW(r.*)::text FROM kd_knn_join('pts', 'pts', 3) r
  UNION ALL SELECT 'all_knn', row_number() OVER (), ROW(r.*)::text FROM kd_all_knn('pts', 6) r
  UNION ALL SELECT 'all_knn_arrays', row_number() OVER (), ROW(r.*)::text FROM kd_all_knn_arrays('pts', 6) r
  UNION ALL SELECT 'range', row_number() OVER (), ROW(r.*)::text FROM kd_range('pts', point(20, 20), 9) r
  UNION ALL SELECT 'range_join', row_number() OVER (), ROW(r.*)::text
    FROM kd_range_join('pts', ARRAY[point(1, 1), point(60, 60)], ARRAY[5, 12]) r
  UNION ALL SELECT 'box', row_number() OVER (), ROW(r.*)::text FROM kd_box('pts', point(10, 10), point(30, 40)) r
$$;
EXPLAIN (COSTS OFF) SELECT * FROM every_call() WHERE f = 'box';
CREATE TABLE streamed AS SELECT * FROM every_call();
SET kdgpu.stream_rows = off;
EXPLAIN (COSTS OFF) SELECT * FROM every_call() WHERE f = 'box';
CREATE TABLE stored AS SELECT * FROM every_call();
RESET kdgpu.stream_rows;
SELECT f, count(s.r) AS rows, count(t.r) AS stored_rows,
       count(*) FILTER (WHERE s.r IS DISTINCT FROM t.r) AS differ
  FROM streamed s FULL JOIN stored t USING (f, n) GROUP BY f ORDER BY f;

-- and brute force: kNN and All-kNN pairs
SELECT count(*) AS mismatches FROM (
  SELECT * FROM kd_knn('pts', point(33, 44), 25) EXCEPT ALL SELECT * FROM brute_knn(point(33, 44), 25)) d;
SELECT count(*) AS mismatches FROM (
  SELECT q.ctid, b.* FROM pts q, LATERAL brute_knn(q.p, 3) b WHERE q.p IS NOT NULL
  EXCEPT ALL SELECT * FROM kd_knn_join('pts', 'pts', 3)) d;
SELECT count(*) = 3 * (SELECT count(p) FROM pts) AS join_rows FROM kd_knn_join('pts', 'pts', 3);

-- columns read only by a filter are made; unread arrays are not needed
SELECT count(*) = (SELECT count(p) FROM pts) AS one_row_per_point,
       count(*) FILTER (WHERE cardinality(distances) = 4 AND distances[1] <= distances[4]) = count(*) AS arrays_made
  FROM kd_all_knn_arrays('pts', 4);
SELECT count(*) = (SELECT count(p) FROM pts) AS filtered_rows
  FROM kd_all_knn_arrays('pts', 4) WHERE distances[4] >= 0;

-- rescans: with the same arguments the rows start over, with new ones
-- (an outer reference is a parameter) the call runs again
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
EXPLAIN (COSTS OFF) SELECT g, k.rank FROM generate_series(1, 3) g, kd_knn('pts', point(7, 7), 4) k;
SELECT count(*) AS rows, count(DISTINCT (g, k.rank)) AS distinct_rows
  FROM generate_series(1, 3) g, kd_knn('pts', point(7, 7), 4) k;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_material;
SELECT g, (SELECT array_agg(distance ORDER BY rank) FROM kd_knn('pts', point(g * 10, g * 10), g))
          = (SELECT array_agg(distance ORDER BY rank) FROM brute_knn(point(g * 10, g * 10), g)) AS same
  FROM generate_series(1, 4) g;

-- parameters of a prepared statement, and NULL arguments (strict: no rows)
PREPARE near(point, int) AS SELECT * FROM kd_knn('pts', $1, $2);
EXPLAIN (COSTS OFF) EXECUTE near(point(5, 5), 3);
CREATE TEMP TABLE near_rows AS EXECUTE near(point(61, 3), 8);
SELECT count(*) AS rows, count(*) FILTER (WHERE (n.nn_ctid, n.distance) IS DISTINCT FROM (b.nn_ctid, b.distance)) AS mismatches
  FROM near_rows n FULL JOIN brute_knn(point(61, 3), 8) b USING (rank);
SELECT count(*) AS null_query_rows FROM kd_knn('pts', NULL::point, 3);
SELECT count(*) AS null_k_rows FROM kd_all_knn('pts', NULL::int);

-- errors are the function's own
SELECT * FROM kd_knn('pts', point(1, 1), 0);
SELECT * FROM kd_all_knn_arrays('pts', 2000);

-- a scrollable cursor reads the rows backwards through a Material node
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT rank FROM kd_knn('pts', point(50, 50), 5);
FETCH LAST FROM c;
FETCH BACKWARD 2 FROM c;
FETCH FIRST FROM c;
COMMIT;
