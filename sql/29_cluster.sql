-- DBSCAN and distance components (kd_cluster_dbscan, kd_cluster_within,
-- kd_dbscan, kd_components) against brute force in SQL (cl_check):
-- points on a grid (many pairs exactly eps apart: the boundary is
-- inclusive), exact duplicates, one large cluster, all noise, a partition
-- of one row, partitions of NULLs, float8[] points with empty ones, the
-- table forms from a table with and without a kdgpu index, and errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.5);
\getenv abs_srcdir PG_ABS_SRCDIR
\set cl_check_file :abs_srcdir '/sql/include/cluster_check.sql'
\i :cl_check_file

CREATE TABLE cl_pts (id int PRIMARY KEY, part int, g point);
-- part 1: 300 points on a 16 x 16 grid, so many duplicates
INSERT INTO cl_pts SELECT i, 1, point(floor(random() * 16), floor(random() * 16))
  FROM generate_series(1, 300) i;
-- part 2: one large cluster
INSERT INTO cl_pts SELECT 1000 + i, 2, point(random(), random()) FROM generate_series(1, 120) i;
-- part 3: all noise at eps 1 (points 10 apart)
INSERT INTO cl_pts SELECT 2000 + i, 3, point(i * 10, 0) FROM generate_series(1, 20) i;
-- part 4: one row; part 5: only NULLs; NULLs in part 1
INSERT INTO cl_pts VALUES (3001, 4, point(5, 5)), (4001, 5, NULL), (4002, 5, NULL),
  (301, 1, NULL), (302, 1, NULL);

-- each eps and minpoints: the rules broken (all 0) and the clusters found
CREATE FUNCTION cl_run(eps float8, minpoints int)
RETURNS TABLE (rule text, breaking bigint) LANGUAGE plpgsql AS $f$
BEGIN
  DROP TABLE IF EXISTS cl_labels;
  CREATE TEMP TABLE cl_labels AS
    SELECT id, kd_cluster_dbscan(g, eps, minpoints) OVER (PARTITION BY part ORDER BY id) AS c
    FROM cl_pts;
  RETURN QUERY SELECT * FROM cl_check('cl_pts', 'cl_labels', 'a.g <-> b.g', eps, minpoints)
    UNION ALL SELECT 'clusters', count(DISTINCT (p.part, l.c)) FROM cl_pts p JOIN cl_labels l USING (id)
    UNION ALL SELECT 'noise rows', count(*) FROM cl_pts p JOIN cl_labels l USING (id) WHERE l.c IS NULL;
END $f$;
SELECT * FROM cl_run(1.0, 4);
SELECT * FROM cl_run(1.0, 6);
SELECT * FROM cl_run(1.5, 9);
SELECT * FROM cl_run(0.0, 2);
SELECT * FROM cl_run(0.0, 1);
SELECT * FROM cl_run(100, 5);

-- kd_cluster_within: components, every row with a point labelled
CREATE TEMP TABLE cw AS
  SELECT id, kd_cluster_within(g, 1.0) OVER (PARTITION BY part ORDER BY id) AS c FROM cl_pts;
SELECT * FROM cl_check('cl_pts', 'cw', 'a.g <-> b.g', 1.0, 1);
SELECT count(*) FILTER (WHERE c IS NULL) AS null_labels,
       count(*) FILTER (WHERE c IS NULL AND g IS NOT NULL) AS null_points
FROM cl_pts JOIN cw USING (id);

-- the row order decides: row 7, a border row equally far from the core
-- rows 1 and 4 of two clusters, joins the cluster of the one that comes
-- first in the window's order, and clusters are numbered by their first
-- row (row 7's with ORDER BY id DESC)
CREATE TABLE cl_tie (id int, g point);
INSERT INTO cl_tie VALUES (1, '(0,0)'), (2, '(0,0.5)'), (3, '(0,-0.5)'),
  (4, '(2,0)'), (5, '(2,0.5)'), (6, '(2,-0.5)'), (7, '(1,0)');
SELECT id, kd_cluster_dbscan(g, 1.0, 4) OVER (ORDER BY id) FROM cl_tie ORDER BY id;
SELECT id, kd_cluster_dbscan(g, 1.0, 4) OVER (ORDER BY id DESC) FROM cl_tie ORDER BY id;

-- float8[] points in 3-D, with empty arrays (no point)
CREATE TABLE cl_vec (id int PRIMARY KEY, part int, g float8[]);
INSERT INTO cl_vec SELECT i, i % 2, ARRAY[floor(random() * 6), floor(random() * 6), floor(random() * 6)]
  FROM generate_series(1, 250) i;
INSERT INTO cl_vec VALUES (251, 1, '{}'), (252, 0, NULL);
CREATE TEMP TABLE cv AS
  SELECT id, kd_cluster_dbscan(g, 1.0, 5) OVER (PARTITION BY part ORDER BY id) AS c FROM cl_vec;
SELECT * FROM cl_check('cl_vec', 'cv', 'a.g <-> b.g', 1.0, 5);
SELECT c IS NULL AS no_label FROM cv WHERE id IN (251, 252);

-- the table forms: the window functions' labels over the table in ctid
-- order; without an index (the table read), with a kdgpu index (its rows),
-- and after writes not yet vacuumed
CREATE TABLE cl_tab (id int PRIMARY KEY, g point) WITH (autovacuum_enabled = false);
INSERT INTO cl_tab SELECT id, g FROM cl_pts WHERE part = 1;
CREATE FUNCTION cl_tab_diff(eps float8, minpoints int) RETURNS TABLE (form text, differing bigint)
LANGUAGE sql AS $f$
  WITH w AS (SELECT ctid AS t, id, kd_cluster_dbscan(g, eps, minpoints) OVER (ORDER BY ctid) AS c
             FROM cl_tab WHERE g IS NOT NULL),
       cw AS (SELECT ctid AS t, kd_cluster_within(g, eps) OVER (ORDER BY ctid) AS c
              FROM cl_tab WHERE g IS NOT NULL)
  SELECT 'kd_dbscan', count(*) FROM w FULL JOIN kd_dbscan('cl_tab', eps, minpoints) d ON d.nn_ctid = w.t
    WHERE w.c IS DISTINCT FROM d.cluster OR w.t IS NULL OR d.nn_ctid IS NULL
  UNION ALL
  SELECT 'kd_dbscan key', count(*) FROM w FULL JOIN kd_dbscan('cl_tab', 'g', eps, minpoints, key_col => 'id') d ON d.nn_key = w.id
    WHERE w.c IS DISTINCT FROM d.cluster OR w.t IS NULL OR d.nn_key IS NULL
  UNION ALL
  SELECT 'kd_components', count(*) FROM cw FULL JOIN kd_components('cl_tab', eps) d ON d.nn_ctid = cw.t
    WHERE cw.c IS DISTINCT FROM d.cluster OR cw.t IS NULL OR d.nn_ctid IS NULL
$f$;
SELECT * FROM cl_tab_diff(1.0, 4);
CREATE INDEX cl_tab_g ON cl_tab USING kdgpu (g);
VACUUM cl_tab;
SELECT * FROM cl_tab_diff(1.0, 4);
SELECT last_run LIKE '%rows from index "cl_tab_g" and the visibility map, 0 of%' AS from_index
FROM kd_status();
DELETE FROM cl_tab WHERE id % 7 = 0;
UPDATE cl_tab SET g = point(g[0] + 0.5, g[1]) WHERE id % 11 = 0;
INSERT INTO cl_tab SELECT 500 + i, point(floor(random() * 16), floor(random() * 16)) FROM generate_series(1, 40) i;
SELECT * FROM cl_tab_diff(1.0, 4);
SELECT * FROM cl_tab_diff(1.5, 3);

-- errors
SELECT kd_cluster_dbscan(g, -1, 3) OVER () FROM cl_tie;
SELECT kd_cluster_dbscan(g, 'NaN', 3) OVER () FROM cl_tie;
SELECT kd_cluster_dbscan(g, NULL, 3) OVER () FROM cl_tie;
SELECT kd_cluster_dbscan(g, 1, -1) OVER () FROM cl_tie;
SELECT kd_cluster_within(g, -2) OVER () FROM cl_tie;
SELECT kd_cluster_dbscan(id, 1, 3) OVER () FROM cl_tie;
SELECT kd_cluster_dbscan(g, 1, 3) OVER () FROM (VALUES (ARRAY[1, 2]::float8[]), (ARRAY[1, 2, 3]::float8[])) v(g);
SELECT * FROM kd_dbscan('cl_tab', -1, 3);
SELECT * FROM kd_components('cl_tie', 'id', 1);

-- kd_pairs_within: every pair within the distance once, with its
-- distance, against the self-join; from the table with writes not yet
-- vacuumed, after VACUUM (rows from the index), and the key form
CREATE FUNCTION cl_pairs_diff(tbl text, r float8) RETURNS TABLE (form text, pairs bigint, differing bigint)
LANGUAGE plpgsql AS $f$
BEGIN
  RETURN QUERY EXECUTE format($q$
    WITH j AS (SELECT a.ctid AS qa, b.ctid AS qb, a.id AS ka, b.id AS kb, a.g <-> b.g AS d
               FROM %1$I a JOIN %1$I b ON a.ctid < b.ctid AND a.g <-> b.g <= %2$s),
         k AS (SELECT * FROM kd_pairs_within(%1$L, %2$s)),
         kk AS (SELECT * FROM kd_pairs_within(%1$L, 'g', %2$s, key_col => 'id'))
    SELECT 'ctid', (SELECT count(*) FROM k),
           (SELECT count(*) FROM (SELECT qa, qb, d FROM j EXCEPT SELECT * FROM k) x) +
           (SELECT count(*) FROM (SELECT * FROM k EXCEPT SELECT qa, qb, d FROM j) x)
    UNION ALL
    SELECT 'key', (SELECT count(*) FROM kk),
           (SELECT count(*) FROM (SELECT least(ka, kb), greatest(ka, kb), d FROM j EXCEPT SELECT * FROM kk) x) +
           (SELECT count(*) FROM (SELECT * FROM kk EXCEPT SELECT least(ka, kb), greatest(ka, kb), d FROM j) x)
    $q$, tbl, r);
END $f$;
SELECT * FROM cl_pairs_diff('cl_tab', 1.0);
SELECT * FROM cl_pairs_diff('cl_tab', 0);
VACUUM cl_tab;
SELECT * FROM cl_pairs_diff('cl_tab', 1.5);
SELECT substring(last_run from 'cl_tab: .*') AS source FROM kd_status();
SELECT count(*) FROM kd_pairs_within('cl_tab', 'Infinity');
SELECT * FROM kd_pairs_within('cl_tab', -1);

-- kdgpu.progress: a NOTICE per slice of the points searched
SET kdgpu.progress = on;
SELECT count(*) FROM kd_dbscan('cl_tab', 1.0, 4);
RESET kdgpu.progress;

-- kd_range_join of two tables: every row of the query table with the
-- rows within the radius of it, ranked by (distance, ctid), against the
-- join; the key form; errors
CREATE TABLE cl_q (qid int PRIMARY KEY, g point);
INSERT INTO cl_q SELECT i, point(random() * 16, random() * 16) FROM generate_series(1, 60) i;
INSERT INTO cl_q VALUES (61, NULL);
SELECT count(*) AS rows,
       (SELECT count(*) FROM (
          SELECT q.ctid, t.ctid, q.g <-> t.g, rank() OVER (PARTITION BY q.ctid ORDER BY q.g <-> t.g, t.ctid)::int
          FROM cl_q q JOIN cl_tab t ON q.g <-> t.g <= 1.5
          EXCEPT SELECT * FROM kd_range_join('cl_tab', 'cl_q'::regclass, 1.5)) x) AS only_join,
       (SELECT count(*) FROM (
          SELECT * FROM kd_range_join('cl_tab', 'cl_q'::regclass, 1.5)
          EXCEPT SELECT q.ctid, t.ctid, q.g <-> t.g, rank() OVER (PARTITION BY q.ctid ORDER BY q.g <-> t.g, t.ctid)::int
          FROM cl_q q JOIN cl_tab t ON q.g <-> t.g <= 1.5) x) AS only_kdgpu
FROM kd_range_join('cl_tab', 'cl_q'::regclass, 1.5);
CREATE TEMP VIEW cl_qj AS
  SELECT q.qid, t.id, q.g <-> t.g, rank() OVER (PARTITION BY q.qid ORDER BY q.g <-> t.g, t.id)::int
  FROM cl_q q JOIN cl_tab t ON q.g <-> t.g <= 2;
SELECT (SELECT count(*) FROM (SELECT * FROM cl_qj EXCEPT
          SELECT * FROM kd_range_join('cl_tab', 'g', 'cl_q', 'g', 2, key_col => 'id', query_key_col => 'qid')) x) +
       (SELECT count(*) FROM (
          SELECT * FROM kd_range_join('cl_tab', 'g', 'cl_q', 'g', 2, key_col => 'id', query_key_col => 'qid')
          EXCEPT SELECT * FROM cl_qj) x) AS differing,
       (SELECT count(*) FROM cl_qj) AS rows;
SELECT * FROM kd_range_join('cl_tab', 'cl_q'::regclass, -1);
SELECT * FROM kd_range_join('cl_tab', 'cl_vec'::regclass, 1);
