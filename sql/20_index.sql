-- The kdgpu index access method: plans, and index answers equal to a
-- sequential scan's (ORDER BY ... , ctid), with ties, duplicates, filters,
-- range and bitmap scans, writes, VACUUM and REINDEX.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.5);

CREATE TABLE ix_pts (id int, cat int, p point) WITH (autovacuum_enabled = false);
INSERT INTO ix_pts SELECT i, i % 7, point(random() * 100, random() * 100) FROM generate_series(1, 4000) i;
-- grid points: many exact duplicates and equal distances
INSERT INTO ix_pts SELECT i, i % 7, point(floor(random() * 10) * 10, floor(random() * 10) * 10) FROM generate_series(4001, 6000) i;
-- UTM-like coordinates, where pg_hypot and sqrt(dx*dx + dy*dy) can differ
INSERT INTO ix_pts SELECT i, i % 7, point(500000 + round(random() * 1000) / 1000, 5400000 + round(random() * 1000) / 1000)
  FROM generate_series(6001, 7000) i;
INSERT INTO ix_pts VALUES (0, 0, NULL);
CREATE INDEX ix_pts_p ON ix_pts USING kdgpu (p);
ANALYZE ix_pts;

CREATE TABLE ix_queries (qid serial, q point);
INSERT INTO ix_queries (q) SELECT point(random() * 110 - 5, random() * 110 - 5) FROM generate_series(1, 30);
INSERT INTO ix_queries (q) SELECT point(x * 10, y * 10) FROM generate_series(0, 4) x, generate_series(0, 4) y;
INSERT INTO ix_queries (q) SELECT point(500000 + random(), 5400000 + random()) FROM generate_series(1, 15);
INSERT INTO ix_queries (q) VALUES (point(-1e6, 3)), (point(1e5, 1e5));

-- plans
EXPLAIN (COSTS OFF) SELECT id FROM ix_pts ORDER BY p <-> point(5, 5) LIMIT 10;
EXPLAIN (COSTS OFF) SELECT id FROM ix_pts WHERE cat = 3 ORDER BY p <-> point(5, 5) LIMIT 10;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ix_pts WHERE p <@ box '((1,1),(3,3))';
EXPLAIN (COSTS OFF) SELECT count(*) FROM ix_pts WHERE p <@ circle '((50,50),2)';
-- no qual and no ordering: the index does not help
EXPLAIN (COSTS OFF) SELECT count(*) FROM ix_pts;
EXPLAIN (COSTS OFF) SELECT id FROM ix_pts WHERE cat = 1;

-- Compare the answers of the current plan with a sequential scan's, for
-- every query point: ctids and distances, in order.
CREATE FUNCTION ix_knn(k int, only_cat int) RETURNS TABLE (qid int, ctids tid[], dists float8[])
LANGUAGE sql AS $$
  SELECT qid, (SELECT array_agg(c) FROM (SELECT ctid c FROM ix_pts
                WHERE only_cat IS NULL OR cat = only_cat
                ORDER BY p <-> q LIMIT k) s),
              (SELECT array_agg(d) FROM (SELECT p <-> q d FROM ix_pts
                WHERE only_cat IS NULL OR cat = only_cat
                ORDER BY p <-> q LIMIT k) s)
    FROM ix_queries
$$;
CREATE FUNCTION ix_knn_seq(k int, only_cat int) RETURNS TABLE (qid int, ctids tid[], dists float8[])
LANGUAGE sql AS $$
  SELECT qid, (SELECT array_agg(c) FROM (SELECT ctid c FROM ix_pts
                WHERE p IS NOT NULL AND (only_cat IS NULL OR cat = only_cat)
                ORDER BY p <-> q, ctid LIMIT k) s),
              (SELECT array_agg(d) FROM (SELECT p <-> q d FROM ix_pts
                WHERE p IS NOT NULL AND (only_cat IS NULL OR cat = only_cat)
                ORDER BY p <-> q, ctid LIMIT k) s)
    FROM ix_queries
$$;
CREATE FUNCTION ix_compare(k int, only_cat int) RETURNS TABLE (queries bigint, differing bigint)
LANGUAGE plpgsql AS $$
BEGIN
  SET LOCAL enable_seqscan = off;
  CREATE TEMP TABLE ix_a AS SELECT * FROM ix_knn(k, only_cat);
  SET LOCAL enable_seqscan = on;
  SET LOCAL enable_indexscan = off;
  SET LOCAL enable_bitmapscan = off;
  CREATE TEMP TABLE ix_b AS SELECT * FROM ix_knn_seq(k, only_cat);
  RETURN QUERY SELECT count(*), count(*) FILTER (WHERE a.ctids IS DISTINCT FROM b.ctids
                                                    OR a.dists IS DISTINCT FROM b.dists)
    FROM ix_a a JOIN ix_b b USING (qid);
  DROP TABLE ix_a, ix_b;
END $$;

-- the plan used by ix_knn is the index's
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT ctid FROM ix_pts ORDER BY p <-> point(1, 1) LIMIT 5;
RESET enable_seqscan;

SELECT * FROM ix_compare(1, NULL);
SELECT * FROM ix_compare(10, NULL);
SELECT * FROM ix_compare(250, NULL);
-- a filter above the scan never starves the LIMIT
SELECT * FROM ix_compare(10, 3);
SELECT count(*) >= 10 AS enough_rows FROM ix_pts WHERE cat = 3 AND p IS NOT NULL;

-- range and bitmap scans against the sequential scan
CREATE FUNCTION ix_range_counts() RETURNS TABLE (box_rows bigint, circle_rows bigint, box_ctids tid[])
LANGUAGE sql AS $$
  SELECT (SELECT count(*) FROM ix_pts WHERE p <@ box '((10,10),(30,25))'),
         (SELECT count(*) FROM ix_pts WHERE p <@ circle '((50,50),10)'),
         (SELECT array_agg(ctid ORDER BY ctid) FROM ix_pts WHERE p <@ box '((0,0),(10,10))')
$$;
CREATE TEMP TABLE ix_r AS SELECT 'seq' AS how, * FROM ix_range_counts() WHERE false;
SET enable_indexscan = off; SET enable_bitmapscan = off;
INSERT INTO ix_r SELECT 'seq', * FROM ix_range_counts();
RESET enable_indexscan; SET enable_seqscan = off;
INSERT INTO ix_r SELECT 'bitmap', * FROM ix_range_counts();
SET enable_bitmapscan = off;
INSERT INTO ix_r SELECT 'index', * FROM ix_range_counts();
RESET ALL;
SELECT how, box_rows > 0 AS some_box, circle_rows > 0 AS some_circle,
       (box_rows, circle_rows, box_ctids) = (SELECT box_rows, circle_rows, box_ctids FROM ix_r WHERE how = 'seq') AS same_as_seq
  FROM ix_r ORDER BY how;

-- writes after the build: inserts land in the pending area, deletes and
-- updates are filtered by visibility until VACUUM removes them
INSERT INTO ix_pts SELECT i, i % 7, point(random() * 100, random() * 100) FROM generate_series(7001, 7600) i;
UPDATE ix_pts SET p = point(p[0] + 1, p[1] - 1) WHERE id % 11 = 0;
DELETE FROM ix_pts WHERE id % 13 = 0;
SELECT * FROM ix_compare(10, NULL);
SELECT * FROM ix_compare(10, 2);
SELECT kd_index_check('ix_pts_p');
SELECT tree_rows, pending_rows, dead_rows, dimension FROM kd_index_stats('ix_pts_p');
VACUUM ix_pts;
-- VACUUM merged the pending rows and the tree into one tree without the dead ones
SELECT tree_rows, pending_rows, dead_rows, dimension FROM kd_index_stats('ix_pts_p');
SELECT * FROM ix_compare(10, NULL);
SELECT * FROM ix_compare(100, NULL);
SELECT kd_index_check('ix_pts_p');
SELECT pg_relation_size('ix_pts_p') > 0 AS has_pages;

-- REINDEX gives the same answers
REINDEX INDEX ix_pts_p;
SELECT * FROM ix_compare(10, NULL);
SELECT kd_index_check('ix_pts_p');

-- an index built on an empty table, then filled by inserts only
CREATE TABLE ix_empty (p point);
CREATE INDEX ix_empty_p ON ix_empty USING kdgpu (p);
SET enable_seqscan = off;
SELECT count(*) FROM (SELECT * FROM ix_empty ORDER BY p <-> point(0, 0) LIMIT 5) s;
INSERT INTO ix_empty SELECT point(i, i) FROM generate_series(1, 50) i;
SELECT array_agg(p[0]) FROM (SELECT p FROM ix_empty ORDER BY p <-> point(10.2, 10.2) LIMIT 4) s;
VACUUM ix_empty;
SELECT array_agg(p[0]) FROM (SELECT p FROM ix_empty ORDER BY p <-> point(10.2, 10.2) LIMIT 4) s;
SELECT kd_index_check('ix_empty_p');
RESET enable_seqscan;

-- float8[] points in three dimensions
CREATE TABLE ix_vec (id int, v float8[]);
INSERT INTO ix_vec SELECT i, ARRAY[random(), random(), round(random() * 4)] FROM generate_series(1, 3000) i;
INSERT INTO ix_vec VALUES (0, NULL), (-1, '{}');
CREATE INDEX ix_vec_v ON ix_vec USING kdgpu (v);
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM ix_vec ORDER BY v <-> ARRAY[0.5, 0.5, 2] LIMIT 10;
CREATE TEMP TABLE ix_va AS SELECT array_agg(ctid) c, array_agg(d) d FROM
  (SELECT ctid, v <-> ARRAY[0.5, 0.5, 2] d FROM ix_vec ORDER BY v <-> ARRAY[0.5, 0.5, 2] LIMIT 300) s;
RESET enable_seqscan; SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT (SELECT c FROM ix_va) = array_agg(ctid) AS same_rows, (SELECT d FROM ix_va) = array_agg(d) AS same_distances FROM
  (SELECT ctid, v <-> ARRAY[0.5, 0.5, 2] d FROM ix_vec WHERE cardinality(v) > 0
    ORDER BY v <-> ARRAY[0.5, 0.5, 2], ctid LIMIT 300) s;
RESET ALL;
SELECT kd_index_check('ix_vec_v');

-- expression and partial indexes
CREATE TABLE ix_xy (x float8, y float8);
INSERT INTO ix_xy SELECT random() * 10, random() * 10 FROM generate_series(1, 1000);
CREATE INDEX ix_xy_p ON ix_xy USING kdgpu (point(x, y)) WHERE x > 5;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM ix_xy WHERE x > 5 ORDER BY point(x, y) <-> point(7, 7) LIMIT 3;
CREATE TEMP TABLE ix_xa AS SELECT array_agg(ctid) c FROM
  (SELECT ctid FROM ix_xy WHERE x > 5 ORDER BY point(x, y) <-> point(7, 7) LIMIT 50) s;
RESET enable_seqscan; SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT (SELECT c FROM ix_xa) = array_agg(ctid) AS same_rows FROM
  (SELECT ctid FROM ix_xy WHERE x > 5 ORDER BY point(x, y) <-> point(7, 7), ctid LIMIT 50) s;
RESET ALL;
SELECT kd_index_check('ix_xy_p');

-- CREATE INDEX CONCURRENTLY and unlogged tables
CREATE INDEX CONCURRENTLY ix_pts_p2 ON ix_pts USING kdgpu (p);
SELECT kd_index_check('ix_pts_p2');
DROP INDEX ix_pts_p2;
CREATE UNLOGGED TABLE ix_unlogged (p point);
INSERT INTO ix_unlogged SELECT point(i, 0) FROM generate_series(1, 100) i;
CREATE INDEX ON ix_unlogged USING kdgpu (p);
SET enable_seqscan = off;
SELECT array_agg(p[0]) FROM (SELECT p FROM ix_unlogged ORDER BY p <-> point(50.4, 0) LIMIT 3) s;
RESET enable_seqscan;

-- coordinates whose squares overflow: pg_hypot stays finite, the order holds
CREATE TABLE ix_huge (p point);
INSERT INTO ix_huge SELECT point(x * 1e200, y * 1e200) FROM generate_series(-3, 3) x, generate_series(-3, 3) y;
INSERT INTO ix_huge SELECT point(x, y) FROM generate_series(-3, 3) x, generate_series(-3, 3) y;
CREATE INDEX ix_huge_p ON ix_huge USING kdgpu (p);
SET enable_seqscan = off;
CREATE TEMP TABLE ix_ha AS SELECT array_agg(c) c, array_agg(d) d FROM
  (SELECT ctid c, p <-> point(1e200, 5) d FROM ix_huge ORDER BY p <-> point(1e200, 5)) s;
RESET enable_seqscan; SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT (SELECT c FROM ix_ha) = array_agg(c) AS same_rows, (SELECT d FROM ix_ha) = array_agg(d) AS same_distances FROM
  (SELECT ctid c, p <-> point(1e200, 5) d FROM ix_huge ORDER BY p <-> point(1e200, 5), ctid) s;
RESET ALL;

-- a partitioned table: MergeAppend keeps 17 index scans open and
-- interleaved, more than the 8 trees the cache keeps when nothing pins them
CREATE TABLE ix_parts (id int, p point) PARTITION BY RANGE (id);
SELECT format('CREATE TABLE ix_parts%s PARTITION OF ix_parts FOR VALUES FROM (%s) TO (%s)', i, i * 100, i * 100 + 100)
  FROM generate_series(0, 16) i \gexec
INSERT INTO ix_parts SELECT i, point(random() * 100, random() * 100) FROM generate_series(0, 1699) i;
CREATE INDEX ix_parts_p ON ix_parts USING kdgpu (p);
ANALYZE ix_parts;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM ix_parts ORDER BY p <-> point(50, 50) LIMIT 300;
CREATE TEMP TABLE ix_pa AS SELECT array_agg(id) ids FROM
  (SELECT id FROM ix_parts ORDER BY p <-> point(50, 50) LIMIT 300) s;
RESET enable_seqscan; SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT (SELECT ids FROM ix_pa) = array_agg(id) AS same_rows FROM
  (SELECT id FROM ix_parts ORDER BY p <-> point(50, 50), id LIMIT 300) s;
RESET ALL;
DROP TABLE ix_parts;

-- operator classes validate
SELECT opcname, amvalidate(c.oid) FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
 WHERE a.amname = 'kdgpu' ORDER BY opcname;

-- errors
CREATE INDEX ON ix_pts USING kdgpu (p) WITH (fillfactor = 50);
CREATE INDEX ON ix_pts USING kdgpu (id);
INSERT INTO ix_vec VALUES (9999, ARRAY[1, 2]);
INSERT INTO ix_pts VALUES (9999, 0, point('NaN', 0));
SET enable_seqscan = off;
SELECT id FROM ix_vec ORDER BY v <-> ARRAY[1, 2] LIMIT 1;
RESET enable_seqscan;
SELECT kd_index_check('ix_pts');
SELECT kd_index_check('ix_queries_qid_seq');
SELECT * FROM kd_index_stats('ix_pts');

DROP TABLE ix_pts, ix_queries, ix_empty, ix_vec, ix_xy, ix_unlogged, ix_huge;
DROP FUNCTION ix_range_counts, ix_knn, ix_knn_seq, ix_compare;
