-- Drop-in for PostGIS columns: the kinds of query PostGIS's own regression
-- suites run on its indexes (knn_recheck, regress_index,
-- regress_index_nulls, the n-D and geography tests) give, with a kdgpu
-- index, what a sequential scan gives, with GiST beside it: ORDER BY with
-- several distance keys, query values that are lines, polygons and points
-- of other kinds, tables holding lines, polygons, empty and non-finite
-- geometries (kept outside the tree), every box operator, and kd_dwithin
-- on tables whose index is GiST, SP-GiST or BRIN.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS postgis;
CREATE EXTENSION IF NOT EXISTS kdgpu;
CREATE EXTENSION IF NOT EXISTS kdgpu_postgis;
RESET client_min_messages;
SELECT setseed(0.75);
-- the shared helper (pg_regress gives the suites' directory in PG_ABS_SRCDIR)
\getenv abs_srcdir PG_ABS_SRCDIR
\set di_run_file :abs_srcdir '/sql/include/di_run.sql'
\i :di_run_file

-- a geometry column of points on a grid (equal distances), random points,
-- and the rows a GIS table also holds: lines, polygons, empty and NULL
-- values, and a point with a NaN coordinate
CREATE TABLE gd_geom (id int, geom geometry) WITH (autovacuum_enabled = false);
INSERT INTO gd_geom SELECT x * 40 + y, ST_MakePoint(x, y) FROM generate_series(0, 39) x, generate_series(0, 39) y;
INSERT INTO gd_geom SELECT 2000 + i, ST_MakePoint(round(random() * 400) / 10, round(random() * 400) / 10)
  FROM generate_series(1, 1500) i;
INSERT INTO gd_geom VALUES (-1, NULL), (-2, 'POINT EMPTY'), (-3, 'LINESTRING(3.5 3.5, 30.5 4.5)'),
  (-4, 'POLYGON((10.2 10.2, 12.8 10.2, 12.8 30.5, 10.2 10.2))'), (-5, 'MULTIPOINT((5.5 5.5), (35.5 35.5))'),
  (-6, 'GEOMETRYCOLLECTION EMPTY'), (-7, 'CIRCULARSTRING(20 20, 22.5 22.5, 25 20)');
CREATE TABLE gd_gist AS TABLE gd_geom;
CREATE INDEX gd_kd ON gd_geom USING kdgpu (geom);
INSERT INTO gd_geom VALUES (-8, 'LINESTRING(0.5 39.5, 39.5 0.5)'), (-9, 'POINT EMPTY'), (-10, NULL),
  (9000, 'POINT(7 7)'), (9001, 'POINT(7 7)');
INSERT INTO gd_gist VALUES (-8, 'LINESTRING(0.5 39.5, 39.5 0.5)'), (-9, 'POINT EMPTY'), (-10, NULL),
  (9000, 'POINT(7 7)'), (9001, 'POINT(7 7)');
CREATE INDEX gd_gist_g ON gd_gist USING gist (geom);
ANALYZE gd_geom, gd_gist;
SELECT tree_rows, pending_rows, null_rows, outside_rows FROM kd_index_stats('gd_kd');
SELECT kd_index_check('gd_kd');

-- ORDER BY: keys are compared (ties come in no set order from either
-- index), with query values that are points, lines, polygons, a
-- polyhedral surface and a point with Z; one, two and three keys
CREATE TABLE gd_q (qid int, a geometry, b geometry);
INSERT INTO gd_q SELECT i, ST_MakePoint(round(random() * 40), round(random() * 40)),
    ST_MakePoint(round(random() * 40), round(random() * 40)) FROM generate_series(1, 12) i;
INSERT INTO gd_q VALUES (13, 'LINESTRING(1 1, 9 30)', 'POINT(20 20)'),
  (14, 'MULTILINESTRING((0 0, 5 5), (30 30, 31 38))', 'POLYGON((5 5, 6 5, 6 6, 5 5))'),
  (15, 'POLYGON((15 15, 25 15, 25 25, 15 25, 15 15))', 'POINT(1 1)'),
  (16, 'POLYHEDRALSURFACE(((0 0 0, 0 5 0, 5 5 0, 0 0 0)), ((10 10 1, 10 12 1, 12 12 1, 10 10 1)))', 'POINT(3 3)'),
  (17, 'POINT Z (20 20 7)', 'LINESTRING(0 40, 40 0)'), (18, 'POINT(7 7)', 'POINT(7 7)');

CREATE FUNCTION gd_order(tab text, col text, op text, a geometry, b geometry, nkeys int, lim int) RETURNS text
LANGUAGE sql AS $$
  SELECT format('SELECT %s FROM %s ORDER BY %s LIMIT %s', keys, tab, keys, lim)
  FROM (SELECT array_to_string((ARRAY[format('%s %s %L::geometry', col, op, a),
                                      format('%s %s %L::geometry', col, op, b),
                                      format('%s %s %L::geometry', col, op, a)])[1:nkeys], ', ') AS keys) k
$$;
SELECT nkeys, lim, count(*) AS queries,
  count(*) FILTER (WHERE di_run('index', 'gd_kd', gd_order('gd_geom', 'geom', '<->', a, b, nkeys, lim))
                       = di_run('seq', '', gd_order('gd_geom', 'geom', '<->', a, b, nkeys, lim))) AS kdgpu_equal,
  count(*) FILTER (WHERE di_run('index', 'gd_gist_g', gd_order('gd_gist', 'geom', '<->', a, b, nkeys, lim))
                       = di_run('seq', '', gd_order('gd_gist', 'geom', '<->', a, b, nkeys, lim))) AS gist_equal
FROM gd_q, (VALUES (1, 10), (1, 2000), (2, 30), (2, 3400), (3, 60)) v(nkeys, lim)
GROUP BY 1, 2 ORDER BY 1, 2;

-- a NULL first key (a parameter the planner cannot fold): every distance of
-- it is NULL and the second key orders the points.  (PostgreSQL's executor
-- stops comparing rechecked keys at one where both values are NULL, so
-- after a NULL key the rows outside the tree keep the order of their lower
-- bounds; GiST's order is off even among points here.)
SELECT di_run('index', 'gd_kd', 'SELECT geom <-> ''POINT(3.3 3)'' FROM gd_geom WHERE id >= 0 ORDER BY geom <-> (SELECT NULL::geometry), geom <-> ''POINT(3.3 3)'' LIMIT 3400')
     = di_run('seq', '', 'SELECT geom <-> ''POINT(3.3 3)'' FROM gd_geom WHERE id >= 0 ORDER BY geom <-> (SELECT NULL::geometry), geom <-> ''POINT(3.3 3)'' LIMIT 3400') AS equal;

-- every box operator of PostGIS's 2-D GiST: index, bitmap and sequential
-- scans on the kdgpu table, and GiST on its copy, give the same rows
CREATE TABLE gd_ops (op text, arg text);
INSERT INTO gd_ops SELECT op, arg FROM
  unnest(ARRAY['&&', '~=', '~', '@', '<<', '>>', '&<', '&>', '<<|', '|>>', '&<|', '|&>']) op,
  unnest(ARRAY['''POINT(7 7)''', '''LINESTRING(3.5 3.5, 30.5 4.5)''', 'ST_MakeEnvelope(5, 5, 12.5, 9)',
               '''POLYGON((0 0, 20 0, 20 20, 0 0))''', '''POINT EMPTY''']) arg;
CREATE FUNCTION gd_where(tab text, op text, arg text) RETURNS text LANGUAGE sql AS $$
  SELECT format('SELECT id FROM %s WHERE geom %s %s::geometry ORDER BY id', tab, op, arg)
$$;
SELECT op, count(*) AS args,
  count(*) FILTER (WHERE length(di_run('seq', '', gd_where('gd_geom', op, arg))) > 0) AS with_rows,
  count(*) FILTER (WHERE di_run('index', 'gd_kd', gd_where('gd_geom', op, arg))
                       = di_run('seq', '', gd_where('gd_geom', op, arg))) AS kd_index,
  count(*) FILTER (WHERE di_run('bitmap', 'gd_kd', gd_where('gd_geom', op, arg))
                       = di_run('seq', '', gd_where('gd_geom', op, arg))) AS kd_bitmap,
  count(*) FILTER (WHERE di_run('bitmap', 'gd_gist_g', gd_where('gd_gist', op, arg))
                       = di_run('seq', '', gd_where('gd_gist', op, arg))) AS gist
FROM gd_ops GROUP BY op ORDER BY op;

-- IS NULL and IS NOT NULL, as regress_index_nulls asks
SELECT di_run('bitmap', 'gd_kd', 'SELECT id FROM gd_geom WHERE geom IS NULL ORDER BY id')
     = di_run('seq', '', 'SELECT id FROM gd_geom WHERE geom IS NULL ORDER BY id') AS is_null,
       di_run('bitmap', 'gd_kd', 'SELECT count(*) FROM gd_geom WHERE geom IS NOT NULL')
     = di_run('seq', '', 'SELECT count(*) FROM gd_geom WHERE geom IS NOT NULL') AS is_not_null;

-- after VACUUM of rows of each kind
DELETE FROM gd_geom WHERE id IN (-1, -2, -3, 5, 2001);
VACUUM gd_geom;
SELECT tree_rows, null_rows, outside_rows FROM kd_index_stats('gd_kd');
SELECT kd_index_check('gd_kd');
SELECT di_run('index', 'gd_kd', gd_order('gd_geom', 'geom', '<->', 'LINESTRING(0 0, 40 40)', 'POINT(9 9)', 2, 3500))
     = di_run('seq', '', gd_order('gd_geom', 'geom', '<->', 'LINESTRING(0 0, 40 40)', 'POINT(9 9)', 2, 3500)) AS equal;

-- kd_geometry_nd_ops: <<->> with queries of every Z/M kind, rows of other
-- kinds, and the n-D box operators
CREATE TABLE gd_nd (id int, geom geometry);
INSERT INTO gd_nd SELECT i, ST_MakePoint(i % 20, (i / 20) % 20, i % 7) FROM generate_series(1, 1200) i;
INSERT INTO gd_nd VALUES (-1, 'POINT(3 3)'), (-2, 'POINT M (4 4 4)'), (-3, 'LINESTRING Z (1 1 1, 9 9 9)'), (-4, NULL);
CREATE INDEX gd_nd_kd ON gd_nd USING kdgpu (geom kd_geometry_nd_ops);
SELECT ST_AsText(q) AS q, di_run('index', 'gd_nd_kd', gd_order('gd_nd', 'geom', '<<->>', q, 'POINT Z (0 0 0)', 2, 1300))
        = di_run('seq', '', gd_order('gd_nd', 'geom', '<<->>', q, 'POINT Z (0 0 0)', 2, 1300)) AS equal
FROM unnest(ARRAY['POINT Z (5 5 3)', 'POINT(5 5)', 'POINT M (5 5 3)', 'POINT ZM (5 5 3 1)',
                  'LINESTRING Z (0 0 0, 10 10 10)']::geometry[]) q;
SELECT op, di_run('bitmap', 'gd_nd_kd', format('SELECT id FROM gd_nd WHERE geom %s %L::geometry ORDER BY id', op, arg))
         = di_run('seq', '', format('SELECT id FROM gd_nd WHERE geom %s %L::geometry ORDER BY id', op, arg)) AS equal
FROM (VALUES ('&&&', 'LINESTRING Z (0 0 0, 6 6 3)'), ('~~=', 'POINT Z (5 5 5)'), ('@@', 'LINESTRING Z (0 0 0, 6 6 3)'),
             ('~~', 'POINT Z (5 5 5)')) v(op, arg);

-- geography: lines among the points, and a line as query value
CREATE TABLE gd_geog (id int, geog geography);
INSERT INTO gd_geog SELECT i, ST_MakePoint(-180 + (i % 72) * 5, -85 + (i / 72) * 10)::geography
  FROM generate_series(0, 1295) i;
INSERT INTO gd_geog VALUES (-1, 'LINESTRING(0 0, 10 10)'), (-2, 'POINT EMPTY'), (-3, NULL),
  (-4, 'POLYGON((100 -10, 120 -10, 120 10, 100 -10))');
CREATE INDEX gd_geog_kd ON gd_geog USING kdgpu (geog);
CREATE FUNCTION gd_geog_order(a geography, b geography, nkeys int, lim int) RETURNS text
LANGUAGE sql AS $$
  SELECT format('SELECT %s FROM gd_geog ORDER BY %s LIMIT %s', keys, keys, lim)
  FROM (SELECT array_to_string((ARRAY[format('geog <-> %L::geography', a),
                                      format('geog <-> %L::geography', b)])[1:nkeys], ', ') AS keys) k
$$;
SELECT ST_AsText(a) AS a, ST_AsText(b) AS b, nkeys, di_run('index', 'gd_geog_kd', gd_geog_order(a, b, nkeys, 1400))
                  = di_run('seq', '', gd_geog_order(a, b, nkeys, 1400)) AS equal
FROM (VALUES ('POINT(2 3)'::geography, 'POINT(0 90)'::geography, 2), ('LINESTRING(-170 0, 170 0)', 'POINT(7 7)', 2),
             ('POINT(180 -85)', NULL, 1), ('POLYGON((0 0, 20 0, 20 20, 0 0))', 'POINT(10 10)', 2)) v(a, b, nkeys);
SELECT di_run('bitmap', 'gd_geog_kd', 'SELECT id FROM gd_geog WHERE geog && ''LINESTRING(5 5, 15 15)''::geography ORDER BY id')
     = di_run('seq', '', 'SELECT id FROM gd_geog WHERE geog && ''LINESTRING(5 5, 15 15)''::geography ORDER BY id') AS equal;

-- ORDER BY q <-> geog: PostGIS's sphere distance is not symmetric to the
-- last bit, and among the near-ties of points around a pole the written
-- argument order decides which rows come first.  The planner hands the
-- index the commuted form; the rows still come out in the written order's
-- distances, whether the ORDER BY is in the select list or not.
CREATE TABLE gd_polar (id int, geog geography);
INSERT INTO gd_polar SELECT i, ST_MakePoint(-180 + ((i * 7919) % 36000) / 100.0, 89.99)::geography
  FROM generate_series(1, 3000) i;
CREATE INDEX gd_polar_kd ON gd_polar USING kdgpu (geog);
SELECT count(*) FILTER (WHERE a <> b) > 0 AS asymmetric FROM
  (SELECT 'POINT(17 90)'::geography <-> geog a, geog <-> 'POINT(17 90)'::geography b FROM gd_polar) s;
SELECT form, di_run('index', 'gd_polar_kd', format('SELECT %s FROM gd_polar ORDER BY %s LIMIT 60', form, form))
           = di_run('seq', '', format('SELECT %s FROM gd_polar ORDER BY %s, ctid LIMIT 60', form, form)) AS selected,
  di_run('index', 'gd_polar_kd', format('SELECT (SELECT %s FROM gd_polar p WHERE p.id = s.id) FROM
                                           (SELECT id FROM gd_polar ORDER BY %s LIMIT 60) s', form, form))
  = di_run('seq', '', format('SELECT %s FROM gd_polar ORDER BY %s, ctid LIMIT 60', form, form)) AS resjunk
FROM unnest(ARRAY['''POINT(17 90)''::geography <-> geog', 'geog <-> ''POINT(17 90)''::geography']) form;

-- kd_knn (as every kd_* function) computes geog <-> q, the column on the
-- left, bit for bit, and ranks by it (ties by ctid): its rows are those of
-- ORDER BY geog <-> q; q <-> geog differs in the last bit for some rows
-- and may rank the near-ties around the pole otherwise
SELECT count(*) FILTER (WHERE k.distance = p.geog <-> 'POINT(17 90)'::geography) AS column_left,
       count(*) FILTER (WHERE k.distance = 'POINT(17 90)'::geography <-> p.geog) AS query_left,
       count(*) AS rows
FROM kd_knn('gd_polar', 'geog', 'POINT(17 90)'::geography, 60) k JOIN gd_polar p ON p.ctid = k.nn_ctid;
SELECT (SELECT array_agg(nn_ctid ORDER BY rank) FROM kd_knn('gd_polar', 'geog', 'POINT(17 90)'::geography, 60))
       = (SELECT array_agg(ctid) FROM (SELECT ctid FROM gd_polar
                                       ORDER BY geog <-> 'POINT(17 90)'::geography, ctid LIMIT 60) s) AS as_column_left;

-- kd_dwithin on tables indexed by GiST, SP-GiST, BRIN and kdgpu: its
-- index condition goes to kdgpu indexes only, and every count is
-- ST_DWithin's
CREATE TABLE gd_dw (id int, geom geometry(Point));
INSERT INTO gd_dw SELECT i, ST_MakePoint(random() * 100, random() * 100) FROM generate_series(1, 5000) i;
CREATE TABLE gd_dw_gist AS TABLE gd_dw;
CREATE TABLE gd_dw_spg AS TABLE gd_dw;
CREATE TABLE gd_dw_brin AS TABLE gd_dw;
CREATE INDEX ON gd_dw USING kdgpu (geom);
CREATE INDEX ON gd_dw_gist USING gist (geom);
CREATE INDEX ON gd_dw_spg USING spgist (geom);
CREATE INDEX ON gd_dw_brin USING brin (geom);
ANALYZE gd_dw, gd_dw_gist, gd_dw_spg, gd_dw_brin;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM gd_dw_gist WHERE kd_dwithin(geom, 'POINT(50 50)', 5);
EXPLAIN (COSTS OFF) SELECT count(*) FROM gd_dw WHERE kd_dwithin(geom, 'POINT(50 50)', 5);
SELECT r, (SELECT count(*) FROM gd_dw WHERE ST_DWithin(geom, 'POINT(50 50)', r)) AS st_dwithin,
  (SELECT count(*) FROM gd_dw WHERE kd_dwithin(geom, 'POINT(50 50)', r)) AS kdgpu,
  (SELECT count(*) FROM gd_dw_gist WHERE kd_dwithin(geom, 'POINT(50 50)', r)) AS gist,
  (SELECT count(*) FROM gd_dw_spg WHERE kd_dwithin(geom, 'POINT(50 50)', r)) AS spgist,
  (SELECT count(*) FROM gd_dw_brin WHERE kd_dwithin(geom, 'POINT(50 50)', r)) AS brin
FROM unnest(ARRAY[0.5, 5, 20]) r;
RESET enable_seqscan;

-- a parallel build of a geometry index larger than maintenance_work_mem:
-- two workers and the leader sort the rows, the leader builds a forest,
-- and the NULL row and the rows outside the trees (an empty point, a line)
-- come back from the sort to their chains; the 2-D operator class holds
-- the point of three dimensions by its x and y, as a serial build does
CREATE TABLE gd_par (id int, geom geometry)
  WITH (autovacuum_enabled = false, parallel_workers = 2);
INSERT INTO gd_par SELECT i, ST_MakePoint(random() * 100, random() * 100)
  FROM generate_series(1, 20000) i;
INSERT INTO gd_par VALUES (-1, NULL), (-2, 'POINT EMPTY'),
  (-3, 'LINESTRING(3.5 3.5, 30.5 4.5)'), (-4, 'POINT(1 2 3)');
SET max_parallel_maintenance_workers = 2;
SET maintenance_work_mem = '1MB';
CREATE INDEX gd_par_kd ON gd_par USING kdgpu (geom);
RESET maintenance_work_mem;
RESET max_parallel_maintenance_workers;
ANALYZE gd_par;
SELECT trees > 1 AS forest, tree_rows, null_rows, outside_rows FROM kd_index_stats('gd_par_kd');
SELECT kd_index_check('gd_par_kd');
SELECT q, di_run('index', 'gd_par_kd', format('SELECT id FROM gd_par ORDER BY geom <-> %L::geometry LIMIT 30', q))
        = di_run('seq', '', format('SELECT id FROM gd_par ORDER BY geom <-> %L::geometry, ctid LIMIT 30', q)) AS equal
FROM unnest(ARRAY['POINT(50 50)', 'POINT(0 0)', 'LINESTRING(10 10, 90 20)']) q;
SELECT di_run('bitmap', 'gd_par_kd', 'SELECT count(*) FROM gd_par WHERE geom && ST_MakeEnvelope(20, 20, 40, 30)')
     = di_run('seq', '', 'SELECT count(*) FROM gd_par WHERE geom && ST_MakeEnvelope(20, 20, 40, 30)') AS box_equal;

DROP TABLE gd_geom, gd_gist, gd_q, gd_ops, gd_nd, gd_geog, gd_polar, gd_dw, gd_dw_gist, gd_dw_spg, gd_dw_brin, gd_par;
DROP FUNCTION di_run(text, text, text), gd_order(text, text, text, geometry, geometry, int, int),
  gd_where(text, text, text), gd_geog_order(geography, geography, int, int);
