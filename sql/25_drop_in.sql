-- Drop-in for point and float8[] columns: the queries PostgreSQL's own
-- regression suites run on point indexes (create_index, create_index_spgist)
-- give, with a kdgpu index, exactly the rows and order of a sequential scan
-- and of GiST and SP-GiST on copies of the same table: ORDER BY with several
-- distance keys, NULL query points, every operator GiST and SP-GiST index
-- for point, IS [NOT] NULL, and rows with NaN or infinite coordinates that
-- the index keeps outside its tree.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.5);

-- the shared helper (pg_regress gives the suites' directory in PG_ABS_SRCDIR)
\getenv abs_srcdir PG_ABS_SRCDIR
\set di_run_file :abs_srcdir '/sql/include/di_run.sql'
\i :di_run_file

-- points on an integer grid (many equal distances), random points, NULLs,
-- and points a kdgpu tree cannot hold: NaN and infinite coordinates
CREATE TABLE di_pts (id int, p point) WITH (autovacuum_enabled = false);
INSERT INTO di_pts SELECT x * 30 + y, point(x, y)
  FROM generate_series(0, 29) x, generate_series(0, 29) y;
INSERT INTO di_pts SELECT 1000 + i, point(round(random() * 300) / 10, round(random() * 300) / 10)
  FROM generate_series(1, 2000) i;
INSERT INTO di_pts VALUES (-1, NULL), (-2, point('NaN', 3)), (-3, point(4, 'Infinity')),
  (-4, point('-Infinity', 'NaN')), (-5, NULL);
-- GiST and SP-GiST get the finite points only: GiST raises "inconsistent
-- point values" ordering NaN points, and both miss or add rows with NaN or
-- infinite coordinates that a sequential scan's operator gives
CREATE TABLE di_gist WITH (autovacuum_enabled = false) AS SELECT * FROM di_pts WHERE id >= 0;
CREATE TABLE di_spg WITH (autovacuum_enabled = false) AS SELECT * FROM di_pts WHERE id >= 0;
-- the index takes every row the table takes; the NOTICE counts those
-- outside its tree
CREATE INDEX di_kd ON di_pts USING kdgpu (p);
-- and later ones too
INSERT INTO di_pts VALUES (-6, point('NaN', 'NaN')), (-7, point(5, '-Infinity')), (-8, NULL),
  (5000, point(7, 7)), (5001, point(7, 7));
INSERT INTO di_gist VALUES (5000, point(7, 7)), (5001, point(7, 7));
INSERT INTO di_spg VALUES (5000, point(7, 7)), (5001, point(7, 7));
CREATE INDEX di_gist_p ON di_gist USING gist (p);
CREATE INDEX di_spg_p ON di_spg USING spgist (p kd_point_ops);
ANALYZE di_pts, di_gist, di_spg;
SELECT tree_rows, pending_rows, null_rows, outside_rows FROM kd_index_stats('di_kd');
SELECT kd_index_check('di_kd');

-- plans
EXPLAIN (COSTS OFF) SELECT id FROM di_pts ORDER BY p <-> point(3, 3), p <-> point(9, 1) LIMIT 5;
EXPLAIN (COSTS OFF) SELECT id FROM di_pts WHERE p << point(3, 3);
EXPLAIN (COSTS OFF) SELECT id FROM di_pts WHERE p <@ polygon '((0,0),(5,9),(9,0))';
EXPLAIN (COSTS OFF) SELECT id FROM di_pts WHERE p IS NULL;

-- ORDER BY with two and three distance keys, and NULL query points: kdgpu
-- returns exactly the sequential scan's order by (keys, ctid) with no sort
-- of its own; GiST and SP-GiST (which return ties in no set order) return
-- the same sequence of distances
CREATE TABLE di_q (qid int, a point, b point, c point);
INSERT INTO di_q SELECT i, point(round(random() * 30), round(random() * 30)),
    point(round(random() * 30), round(random() * 30)), point(random() * 30, random() * 30)
  FROM generate_series(1, 25) i;
INSERT INTO di_q VALUES (26, point(3, 3), point(3, 3), NULL), (27, NULL, point(10, 10), point(1, 1)),
  (28, point(4, 7), NULL, point(2, 2)), (29, NULL, NULL, point(5, 5)), (30, point(15, 15), point(15, 16), point(15, 15));

CREATE FUNCTION di_order(tab text, a point, b point, c point, nkeys int, lim int, tiebreak bool,
  what text DEFAULT 'id')
RETURNS text LANGUAGE sql AS $$
  -- query points as parameters, which the planner cannot fold when NULL
  SELECT format('SELECT %s FROM %s ORDER BY p <-> (SELECT %L::point)%s%s%s LIMIT %s',
    CASE WHEN what = 'id' THEN 'id'
      ELSE array_to_string((ARRAY[format('p <-> %L::point', a), format('p <-> %L::point', b),
                                  format('p <-> %L::point', c)])[1:nkeys], ', ') END,
    tab, a,
    CASE WHEN nkeys >= 2 THEN format(', p <-> (SELECT %L::point)', b) ELSE '' END,
    CASE WHEN nkeys >= 3 THEN format(', p <-> (SELECT %L::point)', c) ELSE '' END,
    CASE WHEN tiebreak THEN ', ctid' ELSE '' END, lim)
$$;

SELECT nkeys, lim, count(*) AS queries,
  count(*) FILTER (WHERE di_run('index', 'di_kd', di_order('di_pts', a, b, c, nkeys, lim, false))
                       = di_run('seq', '', di_order('di_pts', a, b, c, nkeys, lim, true))) AS kdgpu_equal,
  count(*) FILTER (WHERE di_run('index', 'di_kd', di_order('di_pts', a, b, c, nkeys, lim, false, 'keys'))
                       = di_run('seq', '', di_order('di_pts', a, b, c, nkeys, lim, true, 'keys'))) AS kdgpu_keys,
  count(*) FILTER (WHERE di_run('index', 'di_gist_p', di_order('di_gist', a, b, c, nkeys, lim, false, 'keys'))
                       = di_run('seq', '', di_order('di_gist', a, b, c, nkeys, lim, true, 'keys'))) AS gist_keys,
  count(*) FILTER (WHERE di_run('index', 'di_spg_p', di_order('di_spg', a, b, c, nkeys, lim, false, 'keys'))
                       = di_run('seq', '', di_order('di_spg', a, b, c, nkeys, lim, true, 'keys'))) AS spgist_keys
FROM di_q, (VALUES (1, 7), (2, 1), (2, 40), (3, 25), (2, 3000)) v(nkeys, lim)
GROUP BY 1, 2 ORDER BY 1, 2;

-- a query with a NaN or infinite coordinate: the same order as a sort
SELECT q, di_run('index', 'di_kd', format('SELECT id FROM di_pts ORDER BY p <-> %L::point, p <-> point(1, 1) LIMIT 3000', q))
        = di_run('seq', '', format('SELECT id FROM di_pts ORDER BY p <-> %L::point, p <-> point(1, 1), ctid LIMIT 3000', q)) AS equal
FROM unnest(ARRAY[point('NaN', 1), point('Infinity', 2), point(3, '-Infinity')]) q;

-- every operator GiST and SP-GiST index for point: index, bitmap and
-- sequential scans on the kdgpu table, and GiST and SP-GiST, give the
-- same rows
CREATE TABLE di_ops (op text, arg text);
INSERT INTO di_ops VALUES
  ('<@', 'box ''(10,10),(5,5)'''), ('<@', 'box ''(30,30),(-1,0.5)'''),
  ('<@', 'circle ''<(5,5),3>'''), ('<@', 'circle ''<(5,5),0>'''),
  ('<@', 'polygon ''((0,0),(5,9),(9,0))'''), ('<@', 'polygon ''((2,2),(2,8),(8,8),(8,2))'''),
  ('<<', 'point(5, 5)'), ('>>', 'point(27.5, 0)'), ('<<|', 'point(0, 2)'), ('|>>', 'point(0, 28)'),
  ('<^', 'point(0, 1)'), ('>^', 'point(0, 29)'), ('~=', 'point(7, 7)'), ('~=', 'point(7.00000000001, 7)'),
  ('~=', 'point(''NaN'', 3)'), ('<<', 'point(''NaN'', 0)'), ('>>', 'point(''-Infinity'', 0)');
CREATE FUNCTION di_where(tab text, op text, arg text) RETURNS text LANGUAGE sql AS $$
  SELECT format('SELECT id FROM %s WHERE p %s %s ORDER BY id', tab, op, arg)
$$;
SELECT op, arg,
  length(di_run('seq', '', di_where('di_pts', op, arg))) > 0 AS some_rows,
  di_run('index', 'di_kd', di_where('di_pts', op, arg)) = di_run('seq', '', di_where('di_pts', op, arg)) AS kd_index,
  di_run('bitmap', 'di_kd', di_where('di_pts', op, arg)) = di_run('seq', '', di_where('di_pts', op, arg)) AS kd_bitmap,
  di_run('bitmap', 'di_gist_p', di_where('di_gist', op, arg)) = di_run('seq', '', di_where('di_gist', op, arg)) AS gist,
  CASE WHEN arg LIKE 'point%' OR arg LIKE 'box%' THEN
    di_run('bitmap', 'di_spg_p', di_where('di_spg', op, arg)) = di_run('seq', '', di_where('di_spg', op, arg))
  END AS spgist
FROM di_ops ORDER BY op, arg;

-- IS NULL and IS NOT NULL, alone and with ordering
SELECT di_run('index', 'di_kd', 'SELECT id FROM di_pts WHERE p IS NULL ORDER BY id')
     = di_run('seq', '', 'SELECT id FROM di_pts WHERE p IS NULL ORDER BY id') AS is_null,
       di_run('bitmap', 'di_kd', 'SELECT count(*) FROM di_pts WHERE p IS NOT NULL')
     = di_run('seq', '', 'SELECT count(*) FROM di_pts WHERE p IS NOT NULL') AS is_not_null,
       di_run('index', 'di_kd', 'SELECT id FROM di_pts WHERE p IS NOT NULL ORDER BY p <-> point(2, 2) LIMIT 3000')
     = di_run('seq', '', 'SELECT id FROM di_pts WHERE p IS NOT NULL ORDER BY p <-> point(2, 2), ctid LIMIT 3000') AS not_null_ordered,
       di_run('index', 'di_kd', 'SELECT id FROM di_pts ORDER BY p <-> point(2, 2) LIMIT 3000')
     = di_run('seq', '', 'SELECT id FROM di_pts ORDER BY p <-> point(2, 2), ctid LIMIT 3000') AS all_rows_ordered;

-- a qual and two ORDER BY keys together
SELECT di_run('index', 'di_kd', 'SELECT id FROM di_pts WHERE p <@ box ''(20,20),(2,2)'' ORDER BY p <-> point(9, 9), p <-> point(0, 0) LIMIT 50')
     = di_run('seq', '', 'SELECT id FROM di_pts WHERE p <@ box ''(20,20),(2,2)'' ORDER BY p <-> point(9, 9), p <-> point(0, 0), ctid LIMIT 50') AS equal;

-- after VACUUM removes rows of each kind, and merges.  VACUUM removes the
-- deleted rows only once no snapshot from before the DELETE is left, and
-- an autovacuum ANALYZE of another table of the database holds one: wait
-- (at most a minute) for other backends' snapshots to go
DELETE FROM di_pts WHERE id IN (-2, -5, -6, 3, 1001);
DO $$
BEGIN
  FOR i IN 1..600 LOOP
    EXIT WHEN NOT EXISTS (SELECT FROM pg_stat_activity
                          WHERE pid <> pg_backend_pid() AND backend_xmin IS NOT NULL);
    PERFORM pg_sleep(0.1);
  END LOOP;
END $$;
VACUUM di_pts;
SELECT tree_rows, pending_rows, null_rows, outside_rows FROM kd_index_stats('di_kd');
SELECT kd_index_check('di_kd');
SELECT di_run('index', 'di_kd', 'SELECT id FROM di_pts ORDER BY p <-> point(0, 0), p <-> point(29, 0) LIMIT 3000')
     = di_run('seq', '', 'SELECT id FROM di_pts ORDER BY p <-> point(0, 0), p <-> point(29, 0), ctid LIMIT 3000') AS equal;

-- float8[]: rows the float8[] operators reject (NaN, another dimension, a
-- NULL element) are indexed; a query meeting them raises the operator's
-- own error, as a sequential scan does
CREATE TABLE di_vec (id int, v float8[]);
INSERT INTO di_vec SELECT i, ARRAY[i % 17, i % 13, i % 5] FROM generate_series(1, 500) i;
INSERT INTO di_vec VALUES (-1, '{}'), (-2, NULL);
CREATE INDEX di_vec_v ON di_vec USING kdgpu (v);
SELECT di_run('index', 'di_vec_v', 'SELECT id FROM di_vec ORDER BY v <-> ARRAY[3, 3, 3], v <-> ARRAY[0, 0, 0] LIMIT 600')
     = di_run('seq', '', 'SELECT id FROM di_vec ORDER BY v <-> ARRAY[3, 3, 3], v <-> ARRAY[0, 0, 0], ctid LIMIT 600') AS equal;
INSERT INTO di_vec VALUES (-3, ARRAY[1, 'NaN', 2]::float8[]), (-4, ARRAY[1, 2]), (-5, ARRAY[1, NULL, 3]);
SELECT outside_rows FROM kd_index_stats('di_vec_v');
SELECT kd_index_check('di_vec_v');
SET enable_seqscan = off;
SELECT id FROM di_vec ORDER BY v <-> ARRAY[3, 3, 3] LIMIT 5;
SELECT count(*) FROM di_vec WHERE v <@ kd_ball(ARRAY[3, 3, 3], 1);
RESET enable_seqscan;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT id FROM di_vec ORDER BY v <-> ARRAY[3, 3, 3] LIMIT 5;
SELECT count(*) FROM di_vec WHERE v <@ kd_ball(ARRAY[3, 3, 3], 1);
RESET enable_indexscan;
RESET enable_bitmapscan;
DELETE FROM di_vec WHERE id IN (-3, -4, -5);
VACUUM di_vec;
SELECT di_run('index', 'di_vec_v', 'SELECT id FROM di_vec WHERE v <@ kd_rect(ARRAY[0, 0, 0], ARRAY[4, 4, 4]) ORDER BY id')
     = di_run('seq', '', 'SELECT id FROM di_vec WHERE v <@ kd_rect(ARRAY[0, 0, 0], ARRAY[4, 4, 4]) ORDER BY id') AS equal;

-- idx_scan counts kdgpu scans, as it does for other indexes
SELECT pg_stat_force_next_flush();
SELECT idx_scan > 0 AS counted FROM pg_stat_user_indexes WHERE indexrelname = 'di_kd';

DROP TABLE di_pts, di_gist, di_spg, di_q, di_ops, di_vec;
DROP FUNCTION di_run(text, text, text), di_order(text, point, point, point, int, int, bool, text),
  di_where(text, text, text);
