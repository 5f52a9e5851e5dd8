-- The kd_* functions take a table's rows from its kdgpu index where the
-- visibility map marks their pages all-visible, and read the other pages
-- under their snapshot: their answers equal brute force's on tables that
-- are all-visible, partly visible (inserts, deletes and updates not yet
-- vacuumed, HOT chains pruned by VACUUM, aborted inserts), with one tree
-- or a forest, and kd_status() says how many table pages a call read.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.25);

CREATE TABLE fx_q (qid int, q point);
INSERT INTO fx_q SELECT i, point(random() * 100, random() * 100) FROM generate_series(1, 25) i;
-- the oracle, fx_check (pg_regress gives the suites' directory in PG_ABS_SRCDIR)
\getenv abs_srcdir PG_ABS_SRCDIR
\set fx_check_file :abs_srcdir '/sql/include/fx_check.sql'
\i :fx_check_file

-- The same for the key forms (key_col => 'id', ties ranked by key): the
-- count of query points whose answers differ from brute force's.
CREATE FUNCTION ir_key_check(tbl text) RETURNS TABLE (fn text, differing bigint)
LANGUAGE plpgsql AS $f$
BEGIN
  SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off;
  RETURN QUERY EXECUTE format($q$
  SELECT 'kd_knn_join key', count(*) FILTER (WHERE
      ARRAY(SELECT (nn_key, distance)::text
            FROM kd_knn_join(%1$L, (SELECT array_agg(q ORDER BY qid) FROM fx_q), 4, key_col => 'id') j
            WHERE j.query_ord = qid ORDER BY rank)
      IS DISTINCT FROM
      ARRAY(SELECT (id, p <-> q)::text FROM %1$I WHERE p IS NOT NULL ORDER BY p <-> q, id LIMIT 4))
  FROM fx_q
  UNION ALL
  SELECT 'kd_range key', count(*) FILTER (WHERE
      ARRAY(SELECT nn_key FROM kd_range(%1$L, q, 6, key_col => 'id') ORDER BY nn_key)
      IS DISTINCT FROM
      ARRAY(SELECT id::bigint FROM %1$I WHERE p <-> q <= 6 ORDER BY id))
  FROM fx_q$q$, tbl);
END $f$;

-- How the last call on tbl took its rows: from the index (with how many
-- table pages it read), or from the table, and why.
CREATE FUNCTION ir_source(tbl text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
  how text;
BEGIN
  PERFORM count(*) FROM kd_knn_join(tbl::regclass, ARRAY[point(50, 50)], 3);
  SELECT substring(last_run FROM tbl || ': ([^;]*)') INTO how FROM kd_status();
  RETURN regexp_replace(how, '^rows from index "[^"]*" and the visibility map, ([0-9]+) of [0-9]+ table pages read$',
                        'index, \1 pages read');
END $f$;

-- points on a 0.5 grid (many ties), room on every page for HOT updates
CREATE TABLE fx_vis (id int PRIMARY KEY, tag int, p point)
  WITH (autovacuum_enabled = false, fillfactor = 60);
INSERT INTO fx_vis SELECT i, 0, point(round(random() * 200) / 2, round(random() * 200) / 2)
  FROM generate_series(1, 6000) i;
INSERT INTO fx_vis VALUES (0, 0, NULL);
CREATE INDEX fx_vis_p ON fx_vis USING kdgpu (p);

-- not yet vacuumed: no page is all-visible, every page is read
SELECT ir_source('fx_vis') ~ '^index, [1-9]' AS all_pages_read;
SELECT * FROM fx_check('fx_vis');

-- all-visible: no page is read
VACUUM fx_vis;
SELECT ir_source('fx_vis');
SELECT * FROM fx_check('fx_vis');
SELECT * FROM ir_key_check('fx_vis');

-- HOT updates (the indexed column unchanged) move rows within their pages
-- and add nothing to the index
CREATE TEMP TABLE fx_was AS SELECT id, ctid AS tid FROM fx_vis;
UPDATE fx_vis SET tag = 1 WHERE id % 7 = 3;
SELECT pending_rows FROM kd_index_stats('fx_vis_p');
SELECT count(*) > 500 AS moved FROM fx_vis JOIN fx_was USING (id) WHERE fx_vis.ctid <> tid;
SELECT ir_source('fx_vis') ~ '^index, [1-9]' AS updated_pages_read;
SELECT * FROM fx_check('fx_vis');
-- VACUUM prunes the chains: the index's TIDs now redirect to the rows,
-- which the answers give as the table does, reading no page
VACUUM fx_vis;
SELECT ir_source('fx_vis');
SELECT * FROM fx_check('fx_vis');
SELECT * FROM ir_key_check('fx_vis');

-- deletes, non-HOT updates and inserts not yet vacuumed
DELETE FROM fx_vis WHERE id % 11 = 4;
UPDATE fx_vis SET p = point(p[1], p[0]) WHERE id % 13 = 6;
INSERT INTO fx_vis SELECT 10000 + i, 0, point(round(random() * 200) / 2, round(random() * 200) / 2)
  FROM generate_series(1, 300) i;
SELECT ir_source('fx_vis') ~ '^index, [1-9]' AS changed_pages_read;
SELECT * FROM fx_check('fx_vis');
SELECT * FROM ir_key_check('fx_vis');
-- a later call finds those pages unchanged: it takes the rows the first
-- call read there, and its answers are still brute force's
SELECT ir_source('fx_vis') ~ 'read by an earlier call and unchanged since$' AS pages_kept;
SELECT * FROM fx_check('fx_vis');
SELECT * FROM ir_key_check('fx_vis');
-- one row deleted on one of them changes its page: every page is read again
DELETE FROM fx_vis WHERE id = (SELECT max(id) FROM fx_vis);
SELECT ir_source('fx_vis') ~ '^index, [1-9]' AS deleted_page_read;
SELECT * FROM fx_check('fx_vis');
-- a lock alone changes the page too, and the row stays
SELECT id FROM fx_vis WHERE id = 10001 FOR UPDATE;
SELECT ir_source('fx_vis') ~ '^index, [1-9]' AS locked_page_read;
SELECT * FROM fx_check('fx_vis');
-- rows of a transaction still open, even the caller's own, are never kept
BEGIN;
INSERT INTO fx_vis VALUES (30002, 0, point(25, 25)), (30003, 0, point(75, 75));
SELECT ir_source('fx_vis') ~ '^index, [1-9]' AS own_rows_read;
SELECT ir_source('fx_vis') ~ '^index, [1-9]' AS own_rows_read_again;
SELECT * FROM fx_check('fx_vis');
ROLLBACK;
-- an aborted insert leaves its rows in the index and on its pages
BEGIN;
INSERT INTO fx_vis SELECT 20000 + i, 0, point(50, 50) FROM generate_series(1, 200) i;
ROLLBACK;
SELECT * FROM fx_check('fx_vis');
VACUUM fx_vis;
SELECT ir_source('fx_vis');
SELECT * FROM fx_check('fx_vis');

-- the snapshot's rows, not the newest: a transaction's own uncommitted
-- deletes and inserts (older snapshots: test/isolation/specs/index_rows.spec)
BEGIN;
DELETE FROM fx_vis WHERE id % 17 = 2;
INSERT INTO fx_vis VALUES (30000, 0, point(50, 50)), (30001, 0, point(50, 50));
SELECT * FROM fx_check('fx_vis');
SELECT * FROM ir_key_check('fx_vis');
ROLLBACK;

-- a forest (built within 1MB) is searched as one tree
SET maintenance_work_mem = '1MB';
CREATE TABLE fx_forest (id int, p point) WITH (autovacuum_enabled = false);
INSERT INTO fx_forest SELECT i, point(round(random() * 1000) / 10, round(random() * 1000) / 10)
  FROM generate_series(1, 40000) i;
CREATE INDEX fx_forest_p ON fx_forest USING kdgpu (p);
RESET maintenance_work_mem;
SELECT trees > 1 AS forest FROM kd_index_stats('fx_forest_p');
VACUUM fx_forest;
SELECT ir_source('fx_forest');
SELECT * FROM fx_check('fx_forest');
DELETE FROM fx_forest WHERE id % 9 = 1;
SELECT * FROM fx_check('fx_forest');
SET maintenance_work_mem = '1MB';
VACUUM fx_forest;
RESET maintenance_work_mem;
SELECT ir_source('fx_forest');
SELECT * FROM fx_check('fx_forest');

-- a few rows pending in the index's insert lanes, on all-visible pages
-- (VACUUM without index cleanup leaves them pending): their keys are read
-- from their pages
INSERT INTO fx_vis SELECT 50000 + i, 0, point(i % 100, i % 90) FROM generate_series(1, 40) i;
VACUUM (INDEX_CLEANUP off) fx_vis;
SELECT pending_rows > 0 AS pending FROM kd_index_stats('fx_vis_p');
SELECT ir_source('fx_vis');
SELECT * FROM fx_check('fx_vis');
SELECT * FROM ir_key_check('fx_vis');

-- where the index cannot hold every row, the table is read, and the
-- status says why: row-level security, a key column with no unique index,
-- an index holding values outside its trees, kdgpu.index_rows off
CREATE ROLE fx_rls_reader;
GRANT SELECT ON fx_vis TO fx_rls_reader;
ALTER TABLE fx_vis ENABLE ROW LEVEL SECURITY;
CREATE POLICY fx_even ON fx_vis FOR SELECT USING (id % 2 = 0);
SET ROLE fx_rls_reader;
SELECT ir_source('fx_vis');
SELECT count(*) = (SELECT count(*) FROM fx_vis WHERE p IS NOT NULL) AS policy_applies
  FROM kd_all_knn('fx_vis', 1);
RESET ROLE;
DROP POLICY fx_even ON fx_vis;
ALTER TABLE fx_vis DISABLE ROW LEVEL SECURITY;
SELECT count(*) FROM kd_knn_join('fx_forest', ARRAY[point(50, 50)], 3, key_col => 'id');
SELECT substring(last_run FROM 'fx_forest: ([^;]*)') FROM kd_status();
INSERT INTO fx_vis VALUES (40000, 0, point('NaN', 1));
SELECT ir_source('fx_vis');
DELETE FROM fx_vis WHERE id = 40000;
SET kdgpu.index_rows = off;
SELECT ir_source('fx_vis');
RESET kdgpu.index_rows;

-- an All-kNN answer larger than kdgpu.answer_memory_limit (the default is
-- a quarter of the machine's memory) is made in slices as its rows are
-- read, from the index's rows; a join's is refused before it is made
CREATE TABLE fx_whole AS SELECT * FROM kd_all_knn('fx_forest', 20);
SET kdgpu.answer_memory_limit = '4MB';
SELECT count(*) AS differ FROM (
  (SELECT * FROM kd_all_knn('fx_forest', 20) EXCEPT ALL SELECT * FROM fx_whole)
  UNION ALL (SELECT * FROM fx_whole EXCEPT ALL SELECT * FROM kd_all_knn('fx_forest', 20))) d;
SELECT substring(last_run FROM 'fx_forest: ([^;]*)') FROM kd_status();
SELECT count(*) FROM kd_knn_join('fx_forest', (SELECT array_agg(q) FROM fx_q), 20);
RESET kdgpu.answer_memory_limit;
DROP TABLE fx_whole;

DROP TABLE fx_q, fx_vis, fx_forest;
DROP FUNCTION fx_check(text), ir_key_check(text), ir_source(text);
DROP ROLE fx_rls_reader;
