-- Edge cases of the kdgpu index found in review, each against a sequential
-- scan: a table truncated in place in the transaction that created it (the
-- rebuilt index must not reuse the tree cached before), and distances whose
-- squares underflow (the scan's lower bounds must stay below pg_hypot),
-- and rows with no point in ordered scans.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;

-- TRUNCATE in the creating transaction truncates in place: same relfilenode
BEGIN;
CREATE TABLE ed_trunc (id int, p point);
INSERT INTO ed_trunc SELECT i, point(i, 0) FROM generate_series(1, 100) i;
CREATE INDEX ed_trunc_p ON ed_trunc USING kdgpu (p);
SET LOCAL enable_seqscan = off;
SELECT id FROM ed_trunc ORDER BY p <-> point(0, 0) LIMIT 3;
TRUNCATE ed_trunc;
INSERT INTO ed_trunc SELECT 1000 + i, point(-i, 0) FROM generate_series(1, 5) i;
SELECT id, p <-> point(0, 0) AS d FROM ed_trunc ORDER BY p <-> point(0, 0);
SELECT count(*) FROM ed_trunc WHERE p <@ box '((-100,-1),(100,1))';
SELECT kd_index_check('ed_trunc_p');
COMMIT;
DROP TABLE ed_trunc;

-- tiny coordinates: squares of the differences underflow to subnormals
CREATE TABLE ed_tiny (id int, p point);
INSERT INTO ed_tiny SELECT i, point(i * 1e-161 * (1 + (i % 3) * 1e-3), (i % 7) * 3e-162)
  FROM generate_series(1, 400) i;
CREATE INDEX ON ed_tiny USING kdgpu (p);
CREATE TABLE ed_tiny_q AS SELECT point(q * 2.5e-160, (q % 5) * 1e-161) AS q FROM generate_series(0, 20) q;
SET enable_seqscan = off;
CREATE TABLE ed_tiny_idx AS
  SELECT q, ARRAY(SELECT ctid FROM ed_tiny ORDER BY p <-> q LIMIT 25) c FROM ed_tiny_q;
RESET enable_seqscan;
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT count(*) AS queries, count(*) FILTER (WHERE i.c IS DISTINCT FROM
    ARRAY(SELECT ctid FROM ed_tiny ORDER BY p <-> i.q, ctid LIMIT 25)) AS differing
  FROM ed_tiny_idx i;
RESET enable_indexscan; RESET enable_bitmapscan;
DROP TABLE ed_tiny, ed_tiny_q, ed_tiny_idx;

-- rows with no point (NULL, or an empty float8[]) come last from an ordered
-- scan, in ctid order, as a sort by distance puts them; through inserts,
-- VACUUM and index-only scans, and kd_index_check knows them
CREATE TABLE ed_null (id int, p point, v float8[]) WITH (autovacuum_enabled = false);
INSERT INTO ed_null SELECT i, CASE WHEN i % 5 = 0 THEN NULL ELSE point(i % 17, i % 13) END,
    CASE WHEN i % 4 = 0 THEN '{}'::float8[] WHEN i % 9 = 0 THEN NULL ELSE ARRAY[i % 11, i % 7]::float8[] END
  FROM generate_series(1, 300) i;
CREATE INDEX ed_null_p ON ed_null USING kdgpu (p) INCLUDE (id);
CREATE INDEX ed_null_v ON ed_null USING kdgpu (v);
INSERT INTO ed_null VALUES (301, NULL, '{}'), (302, point(1, 1), NULL);
DELETE FROM ed_null WHERE id IN (10, 20, 36);
VACUUM ed_null;
SELECT null_rows FROM kd_index_stats('ed_null_p');
SELECT null_rows FROM kd_index_stats('ed_null_v');
SELECT kd_index_check('ed_null_p') AND kd_index_check('ed_null_v') AS sound;
SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT id FROM ed_null ORDER BY p <-> point(3, 3);
CREATE TEMP TABLE ed_null_idx AS
  SELECT (SELECT array_agg(id) FROM (SELECT id FROM ed_null ORDER BY p <-> point(3, 3)) s) AS p_ids,
         (SELECT array_agg(id) FROM (SELECT id FROM ed_null ORDER BY v <-> '{3,3}') s) AS v_ids;
RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_sort;
SET enable_indexscan = off;
SELECT cardinality(p_ids) AS p_rows, cardinality(v_ids) AS v_rows,
  p_ids = (SELECT array_agg(id) FROM (SELECT id FROM ed_null ORDER BY p <-> point(3, 3), ctid) s) AS p_same,
  v_ids = (SELECT array_agg(id) FROM (SELECT id FROM ed_null ORDER BY v <-> '{3,3}', ctid) s) AS v_same
  FROM ed_null_idx;
RESET enable_indexscan;
DROP TABLE ed_null;

-- trees of every shape of last level (full, a single node, less than half
-- full, exactly half, between half and full: the bottom range and its tail
-- range of shorter blocks), each node on its pages once: the index is
-- sound, and its ordered and box scans equal sequential scans
CREATE TABLE ed_shape_q AS
  SELECT point((q * 37) % 100, (q * 53) % 100) AS q FROM generate_series(1, 12) q;
CREATE TABLE ed_shape (id int, p point);
CREATE FUNCTION ed_shape_diff(n int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  plans text := '';
  line text;
  bad bigint;
BEGIN
  DROP TABLE ed_shape;
  CREATE TABLE ed_shape AS
    SELECT i AS id, point((i * 7919::bigint) % 1000 / 10.0, (i * 104729::bigint) % 997 / 10.0) AS p
      FROM generate_series(1, n) i;
  CREATE INDEX ed_shape_p ON ed_shape USING kdgpu (p);
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) SELECT ctid FROM ed_shape ORDER BY p <-> point(1, 1) LIMIT 15' LOOP
    plans := plans || line;
  END LOOP;
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) SELECT count(*) FROM ed_shape WHERE p <@ box(point(1, 1), point(20, 20))' LOOP
    plans := plans || line;
  END LOOP;
  EXECUTE 'CREATE TEMP TABLE ed_shape_idx AS SELECT q,
      ARRAY(SELECT ctid FROM ed_shape ORDER BY p <-> q LIMIT 15) AS c,
      (SELECT count(*) FROM ed_shape WHERE p <@ box(q, q + point(20, 20))) AS b
    FROM ed_shape_q';
  PERFORM set_config('enable_seqscan', 'on', true);
  PERFORM set_config('enable_bitmapscan', 'on', true);
  PERFORM set_config('enable_indexscan', 'off', true);
  EXECUTE 'SELECT count(*) FROM ed_shape_idx i WHERE i.c IS DISTINCT FROM
      ARRAY(SELECT ctid FROM ed_shape ORDER BY p <-> i.q, ctid LIMIT 15)
      OR i.b <> (SELECT count(*) FROM ed_shape WHERE p <@ box(i.q, i.q + point(20, 20)))' INTO bad;
  PERFORM set_config('enable_indexscan', 'on', true);
  DROP TABLE ed_shape_idx;
  RETURN format('index scans %s, sound %s, differing %s',
    (plans LIKE '%Index Scan using ed_shape_p%' AND plans LIKE '%Index Only Scan using ed_shape_p%'),
    kd_index_check('ed_shape_p'), bad);
END $$;
SELECT n, ed_shape_diff(n)
  FROM unnest(ARRAY[1023, 1024, 1535, 1536, 1537, 1800, 2046, 2047, 40000, 60000, 65534]) n;
DROP FUNCTION ed_shape_diff(int);
DROP TABLE ed_shape, ed_shape_q;

-- Pending rows (a heap of their own in ordered scans) among tree rows:
-- duplicates of tree points and of each other, so that ties by ctid cross
-- the two; one key and two keys, with and without a qual, against
-- sequential scans.
CREATE TABLE ed_pend (id int, p point);
INSERT INTO ed_pend SELECT i, point(i % 9, (i / 9) % 7) FROM generate_series(1, 3000) i;
CREATE INDEX ed_pend_p ON ed_pend USING kdgpu (p);
INSERT INTO ed_pend SELECT 3000 + i, point(i % 5, (i * 3) % 7) FROM generate_series(1, 100) i;
INSERT INTO ed_pend VALUES (4000, point(2.5, 3.5)), (4001, point(2.5, 3.5));
SELECT pending_rows, trees FROM kd_index_stats('ed_pend_p');
CREATE TABLE ed_pend_q AS SELECT point(i % 10 * 0.97, i / 10 * 0.71) AS q FROM generate_series(0, 99) i;
-- the index's runs leave ties to the scan (a ctid key would put a sort
-- above it), the sequential scan's order them by ctid
CREATE FUNCTION ed_pend_index() RETURNS TABLE (q point, one int[], two int[], boxed int[])
LANGUAGE sql AS $$
  SELECT q,
    ARRAY(SELECT id FROM ed_pend ORDER BY p <-> q LIMIT 130),
    ARRAY(SELECT id FROM ed_pend ORDER BY p <-> q, p <-> point(4, 0) LIMIT 130),
    ARRAY(SELECT id FROM ed_pend WHERE p <@ box(point(1, 1), point(3, 4)) ORDER BY p <-> q LIMIT 60)
  FROM ed_pend_q
$$;
CREATE FUNCTION ed_pend_seq() RETURNS TABLE (q point, one int[], two int[], boxed int[])
LANGUAGE sql AS $$
  SELECT q,
    ARRAY(SELECT id FROM ed_pend ORDER BY p <-> q, ctid LIMIT 130),
    ARRAY(SELECT id FROM ed_pend ORDER BY p <-> q, p <-> point(4, 0), ctid LIMIT 130),
    ARRAY(SELECT id FROM ed_pend WHERE p <@ box(point(1, 1), point(3, 4)) ORDER BY p <-> q, ctid LIMIT 60)
  FROM ed_pend_q
$$;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM ed_pend ORDER BY p <-> point(1, 1), p <-> point(4, 0) LIMIT 130;
EXPLAIN (COSTS OFF) SELECT id FROM ed_pend WHERE p <@ box(point(1, 1), point(3, 4)) ORDER BY p <-> point(1, 1) LIMIT 60;
CREATE TEMP TABLE ed_pend_idx AS SELECT * FROM ed_pend_index();
RESET enable_seqscan;
RESET enable_bitmapscan;
SET enable_indexscan = off;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE i.one IS DISTINCT FROM s.one) AS one_key_differing,
       count(*) FILTER (WHERE i.two IS DISTINCT FROM s.two) AS two_keys_differing,
       count(*) FILTER (WHERE i.boxed IS DISTINCT FROM s.boxed) AS qual_differing
  FROM ed_pend_idx i JOIN ed_pend_seq() s ON i.q ~= s.q;
RESET enable_indexscan;
DROP FUNCTION ed_pend_index(), ed_pend_seq();
DROP TABLE ed_pend, ed_pend_q;
