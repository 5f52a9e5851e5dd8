-- The kd_* functions search a kdgpu index's tree when its rows are the rows
-- they read, or differ from them by at most 256 gone and max(1024, n / 8)
-- added (searched beside it), and build a tree otherwise; either way their
-- answers equal a brute-force scan's.  kd_load tells which happened (cached,
-- index).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.75);

CREATE TABLE fx_pts (id int, tag int, p point) WITH (autovacuum_enabled = false, fillfactor = 70);
INSERT INTO fx_pts SELECT i, 0, point(round(random() * 1000) / 10, round(random() * 1000) / 10)
  FROM generate_series(1, 3000) i;
INSERT INTO fx_pts VALUES (0, 0, NULL);
-- room on every page, so that rows inserted later lie among the indexed ones
DELETE FROM fx_pts WHERE id % 10 = 5;
VACUUM fx_pts;
CREATE INDEX fx_p ON fx_pts USING kdgpu (p);
CREATE TABLE fx_q (qid int, q point);
INSERT INTO fx_q SELECT i, point(random() * 100, random() * 100) FROM generate_series(1, 25) i;

-- the oracle, fx_check (pg_regress gives the suites' directory in PG_ABS_SRCDIR)
\getenv abs_srcdir PG_ABS_SRCDIR
\set fx_check_file :abs_srcdir '/sql/include/fx_check.sql'
\i :fx_check_file

-- a freshly built index holds exactly the table's rows: its tree is used
SELECT points, cached, index FROM kd_load('fx_pts');
SELECT trees_cached >= 1 AS cached FROM kd_status();
SELECT * FROM fx_check();

-- rows inserted since the build (20 new points, and 54 copies of indexed
-- points, tied with them and placed among them) are searched beside the
-- tree
INSERT INTO fx_pts SELECT 5000 + i, 0, point(50 + i * 0.01, 50) FROM generate_series(1, 20) i;
INSERT INTO fx_pts SELECT 6000 + id, 0, p FROM fx_pts WHERE id % 50 = 0;
SELECT count(*) AS added_among_indexed FROM fx_pts
  WHERE id > 5000 AND ctid < (SELECT max(ctid) FROM fx_pts WHERE id <= 3000);
SELECT points, cached, index FROM kd_load('fx_pts');
SELECT * FROM fx_check();

-- rows deleted since (each query's nearest row) are dropped from its answers
DELETE FROM fx_pts WHERE ctid IN (SELECT (SELECT ctid FROM fx_pts WHERE p IS NOT NULL
                                          ORDER BY p <-> q, ctid LIMIT 1) FROM fx_q);
SELECT points, cached, index FROM kd_load('fx_pts');
SELECT * FROM fx_check();

-- so are rows updated since (HOT: the visible row moves to a new ctid)
UPDATE fx_pts SET tag = 2 WHERE id % 40 = 3;
SELECT points, cached, index FROM kd_load('fx_pts');
SELECT * FROM fx_check();

-- a larger delete, within max(1024, n / 8) rows gone
DELETE FROM fx_pts WHERE id % 9 = 0;
SELECT points, cached FROM kd_load('fx_pts');
SELECT * FROM fx_check();

-- VACUUM rebuilds the forest as one tree when it fits maintenance_work_mem
-- (as it does here), which is used
VACUUM (INDEX_CLEANUP ON) fx_pts;
SELECT trees, pending_rows, dead_rows FROM kd_index_stats('fx_p');
SELECT points, cached, index FROM kd_load('fx_pts');
SELECT * FROM fx_check();

-- an update not touching the point is HOT: the visible row moves to a new
-- ctid the tree does not know (gone, and added)
UPDATE fx_pts SET tag = 1 WHERE id % 4 = 1;
SELECT points, cached FROM kd_load('fx_pts');
SELECT * FROM fx_check();
VACUUM fx_pts;

-- rows VACUUM marked dead in a tree it could not rebuild within
-- maintenance_work_mem count as gone; the heap then reuses their TIDs for
-- new rows elsewhere, which are added, not taken for the tree's
CREATE TABLE fx_dead (id int, p point) WITH (autovacuum_enabled = false);
INSERT INTO fx_dead SELECT i, point(round(random() * 1000) / 10, round(random() * 1000) / 10)
  FROM generate_series(1, 40000) i;
CREATE INDEX fx_dead_p ON fx_dead USING kdgpu (p);
-- (the tree, cached before the marks, is not used after them)
SELECT points, cached, index FROM kd_load('fx_dead');
CREATE TEMP TABLE fx_freed AS SELECT ctid AS tid FROM fx_dead WHERE id % 50 = 7;
DELETE FROM fx_dead WHERE id % 50 = 7;
SET maintenance_work_mem = '1MB';
VACUUM fx_dead;
RESET maintenance_work_mem;
SELECT trees, pending_rows, dead_rows FROM kd_index_stats('fx_dead_p');
SELECT points, cached, index FROM kd_load('fx_dead');
SELECT * FROM fx_check('fx_dead');
INSERT INTO fx_dead SELECT 50000 + i, point(i % 61 + 0.5, i % 53 + 0.5) FROM generate_series(1, 500) i;
SELECT count(*) > 100 AS tids_reused FROM fx_dead
  WHERE id > 50000 AND ctid IN (SELECT tid FROM fx_freed);
SELECT points, cached, index FROM kd_load('fx_dead');
SELECT * FROM fx_check('fx_dead');
DROP TABLE fx_dead, fx_freed;

-- a row inserted by this transaction, not yet committed
BEGIN;
INSERT INTO fx_pts VALUES (9999, 0, point(1, 1));
SELECT points, cached FROM kd_load('fx_pts');
SELECT * FROM fx_check();
ROLLBACK;

-- row-level security hides rows from the caller: their tree is not used
CREATE ROLE fx_reader;
GRANT SELECT ON fx_pts, fx_q TO fx_reader;
CREATE TABLE fx_fresh AS SELECT id, p FROM fx_pts;
CREATE INDEX ON fx_fresh USING kdgpu (p);
ALTER TABLE fx_fresh ENABLE ROW LEVEL SECURITY;
CREATE POLICY fx_half ON fx_fresh FOR SELECT USING (id % 2 = 0);
GRANT SELECT ON fx_fresh TO fx_reader;
SELECT points, cached FROM kd_load('fx_fresh');
SET ROLE fx_reader;
SELECT points, cached FROM kd_load('fx_fresh');
SELECT count(*) = count(*) FILTER (WHERE id % 2 = 0) AS only_policy_rows
  FROM kd_knn('fx_fresh', point(50, 50), 40) k JOIN fx_fresh f ON f.ctid = k.nn_ctid;
RESET ROLE;

-- more rows added, or gone, than max(1024, n / 8): a tree is built
CREATE TABLE fx_grow AS SELECT id, p FROM fx_pts WHERE p IS NOT NULL;
CREATE INDEX ON fx_grow USING kdgpu (p);
INSERT INTO fx_grow SELECT 20000 + i, point(i % 97, i % 89) FROM generate_series(1, 1000) i;
SELECT points, cached FROM kd_load('fx_grow');
INSERT INTO fx_grow SELECT 30000 + i, point(i % 83, i % 79) FROM generate_series(1, 100) i;
SELECT points, cached FROM kd_load('fx_grow');
CREATE TABLE fx_shrink AS SELECT id, p FROM fx_grow;
CREATE INDEX ON fx_shrink USING kdgpu (p);
DELETE FROM fx_shrink WHERE id % 4 = 0 AND id < 2000;
SELECT points, cached FROM kd_load('fx_shrink');
DELETE FROM fx_shrink WHERE id % 4 = 0;
SELECT points, cached FROM kd_load('fx_shrink');

-- partial indexes are not used by the functions
CREATE TABLE fx_part AS SELECT id, p FROM fx_pts;
CREATE INDEX ON fx_part USING kdgpu (p) WHERE id > 100;
SELECT points, cached FROM kd_load('fx_part');
-- nor is an index on another column
CREATE TABLE fx_two AS SELECT id, p AS p1, p AS p2 FROM fx_pts;
CREATE INDEX ON fx_two USING kdgpu (p1);
SELECT (SELECT cached FROM kd_load('fx_two', 'p1')) AS p1, (SELECT cached FROM kd_load('fx_two', 'p2')) AS p2;

-- kd_unload says whether kd_load had kept a device copy: the loads of the
-- index's tree above did, with a GPU
SELECT kd_unload('fx_pts') = gpu_usable AS unload_consistent
  FROM kd_status();
SELECT kd_unload('fx_pts');

DROP TABLE fx_pts, fx_q, fx_fresh, fx_grow, fx_shrink, fx_part, fx_two;
DROP FUNCTION fx_check(text);
DROP ROLE fx_reader;
