-- INCLUDE columns of a kdgpu index: stored beside each point, returned by
-- index-only scans (ordered, range) that match a sequential scan's answers,
-- through inserts, deletes, VACUUM merges and REINDEX; checked by
-- kd_index_check; types that do not fit are refused.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.125);

CREATE TABLE inc_pts (id int, cat smallint, ts timestamp, w float8, p point)
  WITH (autovacuum_enabled = false);
INSERT INTO inc_pts SELECT i, (i % 5)::smallint,
    CASE WHEN i % 11 = 0 THEN NULL ELSE timestamp '2026-01-01' + i * interval '1 minute' END,
    CASE WHEN i % 7 = 0 THEN NULL ELSE i / 3.0 END,
    point(round(random() * 1000) / 10, round(random() * 1000) / 10)
  FROM generate_series(1, 4000) i;
INSERT INTO inc_pts VALUES (0, 0, NULL, NULL, NULL);
CREATE INDEX inc_p ON inc_pts USING kdgpu (p) INCLUDE (id, cat, ts, w);
VACUUM ANALYZE inc_pts;
CREATE TABLE inc_q (qid int, q point);
INSERT INTO inc_q SELECT i, point(random() * 100, random() * 100) FROM generate_series(1, 30) i;

-- index-only scans, with no heap fetches once the table is all-visible
EXPLAIN (COSTS OFF) SELECT id, ts FROM inc_pts ORDER BY p <-> point(50, 50) LIMIT 10;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT id, ts FROM inc_pts ORDER BY p <-> point(50, 50) LIMIT 10;
EXPLAIN (COSTS OFF) SELECT id, cat FROM inc_pts WHERE p <@ box '((10,10),(12,12))';

-- Each query's rows as text, under the current settings, and the oracle.
CREATE FUNCTION inc_answers(k int) RETURNS TABLE (qid int, knn text[], boxed text[])
LANGUAGE sql AS $$
  SELECT qid,
    ARRAY(SELECT (id, cat, ts, w, p)::text FROM inc_pts ORDER BY p <-> q LIMIT k),
    ARRAY(SELECT (id, cat, ts, w, p)::text FROM inc_pts
          WHERE p <@ box(q, point(q[0] + 6, q[1] + 6)) ORDER BY id)
  FROM inc_q
$$;
CREATE FUNCTION inc_oracle(k int) RETURNS TABLE (qid int, knn text[], boxed text[])
LANGUAGE sql AS $$
  SELECT qid,
    ARRAY(SELECT (id, cat, ts, w, p)::text FROM inc_pts WHERE p IS NOT NULL
          ORDER BY p <-> q, ctid LIMIT k),
    ARRAY(SELECT (id, cat, ts, w, p)::text FROM inc_pts
          WHERE p[0] BETWEEN q[0] AND q[0] + 6 AND p[1] BETWEEN q[1] AND q[1] + 6 ORDER BY id)
  FROM inc_q
$$;
CREATE FUNCTION inc_compare() RETURNS TABLE (k int, queries bigint, differing bigint)
LANGUAGE plpgsql AS $$
DECLARE kk int;
BEGIN
  FOREACH kk IN ARRAY ARRAY[1, 10, 100] LOOP
    CREATE TEMP TABLE inc_want AS SELECT * FROM inc_oracle(kk);
    SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off;
    SET LOCAL enable_indexscan = on;
    RETURN QUERY SELECT kk, count(*), count(*) FILTER (WHERE w IS DISTINCT FROM g)
      FROM inc_want w JOIN inc_answers(kk) g USING (qid);
    RESET enable_seqscan; RESET enable_bitmapscan;
    DROP TABLE inc_want;
  END LOOP;
END $$;
SELECT * FROM inc_compare();

-- rows inserted after the build carry their INCLUDE values in the pending area
INSERT INTO inc_pts SELECT 5000 + i, 1, timestamp '2030-01-01', NULL,
    point(50 + i * 0.01, 50 - i * 0.01) FROM generate_series(1, 200) i;
UPDATE inc_pts SET cat = 4, w = -1 WHERE id % 13 = 0;
DELETE FROM inc_pts WHERE id % 17 = 0;
SELECT pending_rows > 0 AS pending FROM kd_index_stats('inc_p');
SELECT * FROM inc_compare();
SELECT kd_index_check('inc_p');
-- VACUUM merges them into one tree with their values
VACUUM inc_pts;
SELECT pending_rows, dead_rows FROM kd_index_stats('inc_p');
SELECT * FROM inc_compare();
SELECT kd_index_check('inc_p');
REINDEX INDEX inc_p;
SELECT * FROM inc_compare();

-- a float8[] key is not returned (its lower bound is not kept): the heap is read
CREATE TABLE inc_vec (id int, v float8[]);
INSERT INTO inc_vec SELECT i, ARRAY[i % 10, i % 7, i % 3]::float8[] FROM generate_series(1, 500) i;
INSERT INTO inc_vec VALUES (501, '[0:2]={1,1,1}');
CREATE INDEX ON inc_vec USING kdgpu (v) INCLUDE (id);
VACUUM ANALYZE inc_vec;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id, v FROM inc_vec ORDER BY v <-> ARRAY[1, 1, 1]::float8[] LIMIT 4;
SELECT id, v FROM inc_vec ORDER BY v <-> ARRAY[1, 1, 1]::float8[] LIMIT 4;
RESET enable_seqscan;

-- a table over two visibility map pages (32672 heap blocks each): an
-- index-only range scan returns its rows grouped by map page, every row once
CREATE TABLE inc_wide (id int, p point, pad text) WITH (fillfactor = 10);
ALTER TABLE inc_wide ALTER COLUMN pad SET STORAGE PLAIN;
INSERT INTO inc_wide SELECT i, point(i % 181, i % 211), repeat('x', 700)
  FROM generate_series(1, 33000) i;
VACUUM ANALYZE inc_wide;
SELECT pg_relation_size('inc_wide') / current_setting('block_size')::int > 32672 AS two_map_pages;
CREATE INDEX inc_wide_p ON inc_wide USING kdgpu (p) INCLUDE (id);
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id, p FROM inc_wide WHERE p <@ box '(20,30),(150,190)';
CREATE TEMP TABLE inc_wide_idx AS
  SELECT id, p[0] AS x, p[1] AS y FROM inc_wide WHERE p <@ box '(20,30),(150,190)';
RESET enable_seqscan;
RESET enable_bitmapscan;
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
SET enable_bitmapscan = off;
CREATE TEMP TABLE inc_wide_seq AS
  SELECT id, p[0] AS x, p[1] AS y FROM inc_wide WHERE p <@ box '(20,30),(150,190)';
RESET enable_indexscan;
RESET enable_indexonlyscan;
RESET enable_bitmapscan;
SELECT (SELECT count(*) FROM inc_wide_seq) AS rows,
       (SELECT count(*) FROM (SELECT * FROM inc_wide_idx EXCEPT ALL SELECT * FROM inc_wide_seq) d) AS extra,
       (SELECT count(*) FROM (SELECT * FROM inc_wide_seq EXCEPT ALL SELECT * FROM inc_wide_idx) d) AS missing;
DROP TABLE inc_wide, inc_wide_idx, inc_wide_seq;

-- a point index without INCLUDE columns: an index-only scan returns each
-- row's own point (it forms one tuple and rewrites its point for each row),
-- among rows of the tree, pending rows, NULL rows and rows outside the tree
CREATE TABLE inc_pt (id int, p point);
INSERT INTO inc_pt SELECT i, point(i % 97, i % 89) FROM generate_series(1, 3000) i;
CREATE INDEX inc_pt_p ON inc_pt USING kdgpu (p);
INSERT INTO inc_pt SELECT i, point(i % 53 + 0.5, i % 47 + 0.25) FROM generate_series(3001, 3400) i;
INSERT INTO inc_pt VALUES (-1, NULL), (-2, point('NaN', 1)), (-3, point(2, 'Infinity')), (-4, NULL);
ANALYZE inc_pt;
SELECT tree_rows, pending_rows, null_rows, outside_rows FROM kd_index_stats('inc_pt_p');
-- the points of a range and of an ordered query, the latter's ties ordered
-- by tiebreak (the index returns them in ctid order without one)
CREATE FUNCTION inc_pt_answers(tiebreak text) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  a text[];
BEGIN
  EXECUTE format($q$
    SELECT ARRAY[(SELECT string_agg(t, ' ' ORDER BY t) FROM
                    (SELECT p::text AS t FROM inc_pt WHERE p <@ box '((5,5),(60,70))') s),
                 (SELECT string_agg(coalesce(p::text, 'null'), ' ') FROM
                    (SELECT p FROM inc_pt ORDER BY p <-> point(30, 30)%s) s)]$q$, tiebreak)
    INTO a;
  RETURN a;
END $$;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT p FROM inc_pt WHERE p <@ box '((5,5),(60,70))';
EXPLAIN (COSTS OFF) SELECT p FROM inc_pt ORDER BY p <-> point(30, 30);
CREATE TEMP TABLE inc_pt_idx AS SELECT inc_pt_answers('') AS a;
RESET enable_seqscan;
RESET enable_bitmapscan;
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
SET enable_bitmapscan = off;
CREATE TEMP TABLE inc_pt_seq AS SELECT inc_pt_answers(', ctid') AS a;
RESET enable_indexscan;
RESET enable_indexonlyscan;
RESET enable_bitmapscan;
SELECT array_length(string_to_array(s.a[1], ' '), 1) AS range_rows,
       array_length(string_to_array(s.a[2], ' '), 1) AS ordered_rows,
       i.a[1] = s.a[1] AS range_equal, i.a[2] = s.a[2] AS ordered_equal
  FROM inc_pt_idx i, inc_pt_seq s;
DROP TABLE inc_pt, inc_pt_idx, inc_pt_seq;
DROP FUNCTION inc_pt_answers(text);

-- INCLUDE columns must fit 8 bytes and be passed by value
CREATE TABLE inc_bad (p point, name text, n numeric);
CREATE INDEX ON inc_bad USING kdgpu (p) INCLUDE (name);
CREATE INDEX ON inc_bad USING kdgpu (p) INCLUDE (n);

DROP TABLE inc_pts, inc_q, inc_vec, inc_bad;
DROP FUNCTION inc_answers(int), inc_oracle(int), inc_compare();
