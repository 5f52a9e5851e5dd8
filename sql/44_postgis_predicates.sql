-- PostGIS's own predicates through a kdgpu index, as written
-- (plan/postgis_paths.c): on tables whose only index is kdgpu, ST_DWithin,
-- ST_DFullyWithin, ST_Intersects, ST_Contains, ST_Within, ST_Covers,
-- ST_CoveredBy, ST_ContainsProperly, ST_Touches and ST_Equals on
-- geometry, ST_3DDWithin, ST_3DDFullyWithin and ST_3DIntersects on n-D
-- geometry, ST_DWithin (spheroid and sphere), ST_Intersects, ST_Covers and
-- ST_CoveredBy on geography, and the distance cap `col <-> q < r` (or
-- <= r) that makes ORDER BY col <-> q LIMIT k walk only the ball, for
-- point, float8[], geometry and geography.  Each query's rows under an
-- index scan and a bitmap scan of the kdgpu index equal a sequential
-- scan's (di_run refuses a plan of another kind, so the index must be
-- used): grid points exactly at the radius, the antimeridian and the
-- poles, lines and polygons in the table, both argument orders; mixed
-- SRIDs raise PostGIS's error; join clauses use the index as a nested
-- loop's inner side; a table with GiST beside kdgpu gives the same rows
-- through either, and a table with GiST alone keeps PostGIS's own plan.
-- Then what a new user writes first (kd_dwithin on any geometry, kd_box
-- of a region, an index whose first row is a stray), and PostGIS's own
-- regress_index data and queries.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS postgis;
CREATE EXTENSION IF NOT EXISTS kdgpu;
CREATE EXTENSION IF NOT EXISTS kdgpu_postgis;
RESET client_min_messages;
SELECT setseed(0.25);
\getenv abs_srcdir PG_ABS_SRCDIR
\set di_run_file :abs_srcdir '/sql/include/di_run.sql'
\i :di_run_file

-- the rows of q under a sequential, an index and a bitmap scan of idx:
-- 'same' when all three agree, else the three
CREATE FUNCTION pp_same(idx text, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  s text := di_run('seq', idx, q);
  i text := di_run('index', idx, q);
  b text := di_run('bitmap', idx, q);
BEGIN
  RETURN CASE WHEN s = i AND s = b THEN 'same (' || coalesce(array_length(string_to_array(s, ' '), 1), 0) || ' rows)'
              ELSE format('seq %s / index %s / bitmap %s', s, i, b) END;
END $$;
-- the same for ordered queries, which have no bitmap scan
CREATE FUNCTION pp_same_ordered(idx text, q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  s text := di_run('seq', idx, q);
  i text := di_run('index', idx, q);
BEGIN
  RETURN CASE WHEN s = i THEN 'same (' || coalesce(array_length(string_to_array(s, ' '), 1), 0) || ' rows)'
              ELSE format('seq %s / index %s', s, i) END;
END $$;

-- geometry: a grid (points exactly at integer distances), random points,
-- and lines, polygons, empty and NULL rows
CREATE TABLE pp_geom (id int, g geometry) WITH (autovacuum_enabled = false);
INSERT INTO pp_geom SELECT x * 40 + y, ST_MakePoint(x, y) FROM generate_series(0, 39) x, generate_series(0, 39) y;
INSERT INTO pp_geom SELECT 2000 + i, ST_MakePoint(random() * 40, random() * 40) FROM generate_series(1, 1500) i;
INSERT INTO pp_geom VALUES (-1, NULL), (-2, 'POINT EMPTY'), (-3, 'LINESTRING(3.5 3.5, 30.5 4.5)'),
  (-4, 'POLYGON((10.2 10.2, 12.8 10.2, 12.8 30.5, 10.2 10.2))'), (-5, 'MULTIPOINT((5.5 5.5), (35.5 35.5))');
CREATE INDEX pp_geom_kd ON pp_geom USING kdgpu (g);
VACUUM ANALYZE pp_geom;

-- radius predicates, both argument orders, radii 0, 1, 5 (grid points
-- exactly at them) and 7.5
SELECT f, r, pp_same('pp_geom_kd',
         format('SELECT id FROM pp_geom WHERE %s ORDER BY id',
                replace(replace(f, 'R', r::text), 'Q', '''POINT(20 20)''::geometry')))
FROM unnest(ARRAY['ST_DWithin(g, Q, R)', 'ST_DWithin(Q, g, R)', 'ST_DFullyWithin(g, Q, R)']) f,
     unnest(ARRAY[0, 1, 5, 7.5]) r
ORDER BY f, r;

-- box predicates against polygons, a line and a point
SELECT f, q, pp_same('pp_geom_kd',
         format('SELECT id FROM pp_geom WHERE %s ORDER BY id', replace(f, 'Q', quote_literal(q) || '::geometry')))
FROM unnest(ARRAY['ST_Intersects(g, Q)', 'ST_Intersects(Q, g)', 'ST_Contains(Q, g)', 'ST_Within(g, Q)',
                  'ST_Covers(Q, g)', 'ST_CoveredBy(g, Q)', 'ST_ContainsProperly(Q, g)', 'ST_Touches(g, Q)',
                  'ST_Equals(g, Q)']) f,
     unnest(ARRAY['POLYGON((5 5, 15 5, 15 12, 5 12, 5 5))', 'POLYGON((0 0, 30 2, 2 30, 0 0))',
                  'LINESTRING(0 0, 39 39)', 'POINT(7 7)']) q
ORDER BY f, q;

-- EXPLAIN: the kdgpu index, its condition, the predicate as the filter
EXPLAIN (COSTS OFF) SELECT id FROM pp_geom WHERE ST_DWithin(g, 'POINT(20 20)', 3);
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM pp_geom WHERE ST_Intersects('POLYGON((5 5, 15 5, 15 12, 5 12, 5 5))', g);
RESET enable_bitmapscan;

-- a prepared statement's radius and point as parameters, in its generic
-- plan too
PREPARE pp_dw(geometry, float8) AS SELECT count(*) FROM pp_geom WHERE ST_DWithin(g, $1, $2);
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE pp_dw('POINT(20 20)', 5);
EXECUTE pp_dw('POINT(20 20)', 5);
RESET plan_cache_mode;
SELECT count(*) FROM pp_geom WHERE ST_DWithin(g, 'POINT(20 20)', 5);

-- the capped kNN: the ordered scan walks only the ball; fewer than k rows
-- when fewer lie within r; < and <=, either way round
SELECT c, k, pp_same_ordered('pp_geom_kd',
         format('SELECT id FROM pp_geom WHERE %s ORDER BY g <-> ''POINT(20 20)''::geometry, id LIMIT %s', c, k))
FROM unnest(ARRAY['g <-> ''POINT(20 20)''::geometry < 3', 'g <-> ''POINT(20 20)''::geometry <= 3',
                  '3 > g <-> ''POINT(20 20)''::geometry', '''POINT(20 20)''::geometry <-> g <= 1',
                  'g <-> ''POINT(20 20)''::geometry < 0', 'g <-> ''POINT(20 20)''::geometry <= 0',
                  'ST_DWithin(g, ''POINT(20 20)'', 2)']) c,
     unnest(ARRAY[5, 50]) k
ORDER BY c, k;
EXPLAIN (COSTS OFF) SELECT id FROM pp_geom WHERE g <-> 'POINT(20 20)' < 3 ORDER BY g <-> 'POINT(20 20)' LIMIT 5;

-- join clauses: the kdgpu index as the inner side of a nested loop,
-- parameterized by the outer row (a point and a line as outer values)
CREATE TABLE pp_q (qid int, q geometry);
INSERT INTO pp_q VALUES (1, 'POINT(20 20)'), (2, 'POINT(0 0)'), (3, 'POINT(39.5 10.25)'),
  (4, 'LINESTRING(5 5, 9 7)'), (5, NULL);
ANALYZE pp_q;
SELECT c, pp_same_ordered('pp_geom_kd', format('SELECT qid, id FROM pp_q %s ORDER BY qid, id', c))
FROM unnest(ARRAY['JOIN pp_geom ON ST_DWithin(q, g, 2.5)', 'JOIN pp_geom ON ST_Intersects(g, ST_Buffer(q, 1))',
                  'LEFT JOIN pp_geom ON g <-> q <= 1']) c ORDER BY c;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT qid, id FROM pp_q JOIN pp_geom ON ST_DWithin(q, g, 2.5);
RESET enable_bitmapscan;

-- n-D geometry (kd_geometry_nd_ops): ST_3DDWithin, ST_3DDFullyWithin and
-- ST_3DIntersects through &&&, and the <<->> cap; XYZ points on a grid
-- (exactly at the radii) and at random, and a 3-D line in the table
CREATE TABLE pp_nd (id int, g geometry) WITH (autovacuum_enabled = false);
INSERT INTO pp_nd SELECT (x * 12 + y) * 12 + z, ST_MakePoint(x, y, z)
  FROM generate_series(0, 11) x, generate_series(0, 11) y, generate_series(0, 11) z;
INSERT INTO pp_nd SELECT 5000 + i, ST_MakePoint(random() * 12, random() * 12, random() * 12) FROM generate_series(1, 800) i;
INSERT INTO pp_nd VALUES (-1, 'LINESTRING Z (0 0 0, 11 11 11)'), (-2, NULL);
CREATE INDEX pp_nd_kd ON pp_nd USING kdgpu (g kd_geometry_nd_ops);
VACUUM ANALYZE pp_nd;
SELECT f, r, pp_same('pp_nd_kd',
         format('SELECT id FROM pp_nd WHERE %s ORDER BY id',
                replace(replace(f, 'R', r::text), 'Q', '''POINT Z (6 6 6)''::geometry')))
FROM unnest(ARRAY['ST_3DDWithin(g, Q, R)', 'ST_3DDWithin(Q, g, R)', 'ST_3DDFullyWithin(g, Q, R)']) f,
     unnest(ARRAY[0, 1, 2.5]) r
ORDER BY f, r;
SELECT pp_same('pp_nd_kd', 'SELECT id FROM pp_nd WHERE ST_3DIntersects(g, ''LINESTRING Z (0 0 0, 11 11 11)''::geometry) ORDER BY id');
SELECT c, pp_same_ordered('pp_nd_kd',
         format('SELECT id FROM pp_nd WHERE %s ORDER BY g <<->> ''POINT Z (6 6 6)''::geometry, id LIMIT 12', c))
FROM unnest(ARRAY['g <<->> ''POINT Z (6 6 6)''::geometry <= 1', 'g <<->> ''POINT Z (6 6 6)''::geometry < 2']) c ORDER BY c;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM pp_nd WHERE ST_3DDWithin(g, 'POINT Z (6 6 6)', 1);
RESET enable_bitmapscan;

-- mixed SRIDs: PostGIS's error, through the index as through a scan
CREATE TABLE pp_srid (id int, g geometry(Point, 3857));
INSERT INTO pp_srid SELECT i, ST_SetSRID(ST_MakePoint(i, i), 3857) FROM generate_series(1, 100) i;
CREATE INDEX pp_srid_kd ON pp_srid USING kdgpu (g);
ANALYZE pp_srid;
SELECT count(*) FROM pp_srid WHERE ST_DWithin(g, 'SRID=4326;POINT(5 5)', 3);
SELECT count(*) FROM pp_srid WHERE ST_DWithin(g, 'SRID=3857;POINT(5 5)', 3);

-- geography: the antimeridian, the poles and the rest of the sphere;
-- ST_DWithin on the spheroid (its default) and the sphere
CREATE TABLE pp_geog (id int, g geography) WITH (autovacuum_enabled = false);
INSERT INTO pp_geog SELECT i, ST_MakePoint(179.9 + random() * 0.1, random() * 2 - 1)::geography
  FROM generate_series(1, 400) i;
INSERT INTO pp_geog SELECT 1000 + i, ST_MakePoint(CASE WHEN i % 2 = 0 THEN 180 - random() * 0.1 ELSE -180 + random() * 0.1 END,
                                                   random() * 2 - 1)::geography
  FROM generate_series(1, 400) i;
INSERT INTO pp_geog SELECT 2000 + i, ST_MakePoint(random() * 360 - 180, 89.9 + random() * 0.1)::geography
  FROM generate_series(1, 400) i;
INSERT INTO pp_geog SELECT 3000 + i, ST_MakePoint(random() * 360 - 180, random() * 180 - 90)::geography
  FROM generate_series(1, 1000) i;
INSERT INTO pp_geog VALUES (-1, NULL), (-2, 'POINT EMPTY');
CREATE INDEX pp_geog_kd ON pp_geog USING kdgpu (g);
VACUUM ANALYZE pp_geog;
SELECT f, q, r, pp_same('pp_geog_kd',
         format('SELECT id FROM pp_geog WHERE %s ORDER BY id',
                replace(replace(f, 'R', r::text), 'Q', quote_literal(q) || '::geography')))
FROM unnest(ARRAY['ST_DWithin(g, Q, R)', 'ST_DWithin(Q, g, R)', 'ST_DWithin(g, Q, R, false)',
                  'ST_DWithin(g, Q, R, true)']) f,
     unnest(ARRAY['POINT(180 0)', 'POINT(-179.95 0.5)', 'POINT(0 90)', 'POINT(45 89.95)']) q,
     unnest(ARRAY[1000, 20000]) r
ORDER BY f, q, r;
-- each boundary pair: the radius set to a row's spheroid distance, and
-- its sphere distance, so that the row lies exactly at it
SELECT pp_same('pp_geog_kd',
         format('SELECT id FROM pp_geog WHERE ST_DWithin(g, %L::geography, %s) ORDER BY id',
                'POINT(-179.95 0.5)', ST_Distance(g, 'POINT(-179.95 0.5)'::geography))) AS spheroid_boundary,
       pp_same('pp_geog_kd',
         format('SELECT id FROM pp_geog WHERE ST_DWithin(g, %L::geography, %s, false) ORDER BY id',
                'POINT(-179.95 0.5)', ST_Distance(g, 'POINT(-179.95 0.5)'::geography, false))) AS sphere_boundary
FROM pp_geog WHERE id IN (7, 1003, 2005) ORDER BY id;
-- box predicates, with PostGIS's own query polygons of its
-- geography_covers regression test (one across the antimeridian, one
-- around the pole) beside a square at the antimeridian
SELECT f, q, pp_same('pp_geog_kd',
         format('SELECT id FROM pp_geog WHERE %s ORDER BY id', replace(f, 'Q', quote_literal(q) || '::geography')))
FROM unnest(ARRAY['ST_Intersects(g, Q)', 'ST_Covers(Q, g)', 'ST_CoveredBy(g, Q)']) f,
     unnest(ARRAY['POLYGON((179 -1, 180 -1, 180 1, 179 1, 179 -1))',
                  'POLYGON((-170 -20, 170 -20, 170 20, -170 20, -170 -20))',
                  'POLYGON((0 80, 90 80, 180 80, -90 80, 0 80))',
                  'POLYGON((0 40, 40 40, 40 0, 0 0, 0 40))']) q
ORDER BY f, q;
SELECT c, pp_same_ordered('pp_geog_kd',
         format('SELECT id FROM pp_geog WHERE %s ORDER BY g <-> ''POINT(180 0)''::geography, id LIMIT 20', c))
FROM unnest(ARRAY['g <-> ''POINT(180 0)''::geography < 5000', 'g <-> ''POINT(180 0)''::geography <= 100000',
                  'ST_DWithin(g, ''POINT(180 0)'', 5000)']) c ORDER BY c;

-- point and float8[]: the capped kNN, and a range through the circle and
-- the ball
CREATE TABLE pp_pt (id int, p point, v float8[]);
INSERT INTO pp_pt SELECT x * 30 + y, point(x, y), ARRAY[x, y, (x + y) % 3]::float8[]
  FROM generate_series(0, 29) x, generate_series(0, 29) y;
INSERT INTO pp_pt VALUES (-1, NULL, NULL), (-2, point('NaN', 1), NULL);
CREATE INDEX pp_pt_kd ON pp_pt USING kdgpu (p);
CREATE INDEX pp_v_kd ON pp_pt USING kdgpu (v);
ANALYZE pp_pt;
SELECT c, pp_same_ordered('pp_pt_kd',
         format('SELECT id FROM pp_pt WHERE %s ORDER BY p <-> point(10, 10), id LIMIT 8', c))
FROM unnest(ARRAY['p <-> point(10, 10) < 2', 'p <-> point(10, 10) <= 2', 'point(10, 10) <-> p <= 1',
                  'p <-> point(10, 10) < 0.5']) c ORDER BY c;
SELECT c, pp_same('pp_pt_kd', format('SELECT id FROM pp_pt WHERE %s ORDER BY id', c))
FROM unnest(ARRAY['p <-> point(10, 10) <= 3', 'p <-> point(10.5, 10.5) < 1']) c ORDER BY c;
SELECT c, pp_same_ordered('pp_v_kd',
         format('SELECT id FROM pp_pt WHERE %s ORDER BY v <-> ''{10,10,1}''::float8[], id LIMIT 8', c))
FROM unnest(ARRAY['v <-> ''{10,10,1}''::float8[] <= 2', 'v <-> ''{10,10,1}''::float8[] < 1.5']) c ORDER BY c;
EXPLAIN (COSTS OFF) SELECT id FROM pp_pt WHERE p <-> point(10, 10) < 2 ORDER BY p <-> point(10, 10) LIMIT 8;

-- GiST beside kdgpu: the planner takes the cheaper (kdgpu here), and
-- either index gives the sequential scan's rows; GiST alone keeps
-- PostGIS's own index condition and nothing of kdgpu's
CREATE TABLE pp_both AS TABLE pp_geom;
CREATE INDEX pp_both_kd ON pp_both USING kdgpu (g);
CREATE INDEX pp_both_gist ON pp_both USING gist (g);
ANALYZE pp_both;
SELECT pp_same('pp_both_kd', 'SELECT id FROM pp_both WHERE ST_DWithin(g, ''POINT(20 20)'', 5) ORDER BY id');
BEGIN;
DROP INDEX pp_both_kd;
SELECT pp_same('pp_both_gist', 'SELECT id FROM pp_both WHERE ST_DWithin(g, ''POINT(20 20)'', 5) ORDER BY id');
ROLLBACK;
CREATE TABLE pp_gist AS TABLE pp_geom;
CREATE INDEX pp_gist_g ON pp_gist USING gist (g);
ANALYZE pp_gist;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM pp_gist WHERE ST_DWithin(g, 'POINT(20 20)', 5);
RESET enable_seqscan;
RESET enable_bitmapscan;

-- What a new user writes first.  kd_dwithin answers wherever ST_DWithin
-- does: on a table holding lines and polygons, around a line or a polygon,
-- through the index (a box around anything but a constant point) as
-- without it; its rows are ST_DWithin's under a sequential scan
SELECT q, r,
       di_run('seq', 'pp_geom_kd', format('SELECT id FROM pp_geom WHERE ST_DWithin(g, %L, %s) ORDER BY id', q, r)) AS st_dwithin,
       pp_same('pp_geom_kd', format('SELECT id FROM pp_geom WHERE kd_dwithin(g, %L, %s) ORDER BY id', q, r)) AS kd_dwithin_scans,
       di_run('seq', 'pp_geom_kd', format('SELECT id FROM pp_geom WHERE ST_DWithin(g, %L, %s) ORDER BY id', q, r))
         = di_run('bitmap', 'pp_geom_kd', format('SELECT id FROM pp_geom WHERE kd_dwithin(g, %L, %s) ORDER BY id', q, r)) AS equal
FROM unnest(ARRAY['POINT(3 4)', 'LINESTRING(4 4, 4.5 12)', 'POLYGON((11 11, 12 11, 12 12, 11 11))']) q,
     unnest(ARRAY[0, 0.6]) r
ORDER BY q, r;
SELECT count(*) FILTER (WHERE kd_dwithin(a.g, b.g, 1.5) IS DISTINCT FROM ST_DWithin(a.g, b.g, 1.5)) AS differ,
       count(*) FILTER (WHERE kd_dwithin(a.g, b.g, 1.5)) AS within
FROM pp_geom a, pp_geom b WHERE a.id < 0 OR b.id < 0;
EXPLAIN (COSTS OFF) SELECT id FROM pp_geom WHERE kd_dwithin(g, 'LINESTRING(4 4, 4.5 12)', 0.6);
SELECT kd_dwithin('SRID=3857;LINESTRING(0 0, 1 1)'::geometry, 'SRID=4326;POINT(0 0)'::geometry, 1);
-- geography: the spheroid (PostGIS's default) on request, the sphere as
-- before, at each row's exact distance (the boundary)
SELECT s, pp_same('pp_geog_kd',
         format('SELECT id FROM pp_geog WHERE kd_dwithin(g, %L::geography, %s, %s) ORDER BY id',
                'POINT(-179.95 0.5)', ST_Distance(g, 'POINT(-179.95 0.5)'::geography, s), s::text)) AS scans,
       di_run('seq', 'pp_geog_kd', format('SELECT id FROM pp_geog WHERE ST_DWithin(g, %L::geography, %s, %s) ORDER BY id',
                'POINT(-179.95 0.5)', ST_Distance(g, 'POINT(-179.95 0.5)'::geography, s), s::text))
         = di_run('index', 'pp_geog_kd', format('SELECT id FROM pp_geog WHERE kd_dwithin(g, %L::geography, %s, %s) ORDER BY id',
                'POINT(-179.95 0.5)', ST_Distance(g, 'POINT(-179.95 0.5)'::geography, s), s::text)) AS equal
FROM pp_geog, unnest(ARRAY[true, false]) s WHERE id IN (7, 1003) ORDER BY id, s;
SELECT count(*) FILTER (WHERE kd_dwithin(g, 'POINT(0 90)', 20000, true) IS DISTINCT FROM ST_DWithin(g, 'POINT(0 90)', 20000, true)) AS differ,
       count(*) FILTER (WHERE kd_dwithin(g, 'POINT(0 90)', 20000, true)) AS within
FROM pp_geog;

-- kd_box of a region: a box2d or ST_MakeEnvelope gives the rows `&&`
-- gives, SRID 0 (a box2d) fitting any column; a 3-D column is bounded in
-- x and y only, as && bounds it
CREATE TABLE pp_box (id int, g geometry(Point, 4326));
INSERT INTO pp_box SELECT id, ST_SetSRID(g, 4326) FROM pp_geom WHERE GeometryType(g) = 'POINT' AND NOT ST_IsEmpty(g);
CREATE INDEX pp_box_kd ON pp_box USING kdgpu (g);
SELECT r, (SELECT array_agg(b.id ORDER BY b.id) FROM pp_box b JOIN kd_box('pp_box', r) k ON b.ctid = k.nn_ctid)
          = (SELECT array_agg(id ORDER BY id) FROM pp_box WHERE g && r) AS same,
       (SELECT count(*) FROM kd_box('pp_box', 'g', r)) AS n
FROM unnest(ARRAY[ST_MakeEnvelope(3, 4, 9.5, 6, 4326), ST_MakeEnvelope(0, 0, 0, 0, 4326),
                  ST_SetSRID('LINESTRING(2 30, 5.5 35)'::geometry, 4326)]) r ORDER BY n;
SELECT (SELECT count(*) FROM kd_box('pp_box', 'BOX(3 4, 9.5 6)'::box2d)) AS box2d,
       (SELECT count(*) FROM kd_box_parts('pp_box', 'g', 'BOX(3 4, 9.5 6)'::box2d)) AS parts,
       (SELECT count(*) FROM pp_box WHERE g && 'BOX(3 4, 9.5 6)'::box2d) AS "&&";
CREATE TABLE pp_box3 AS SELECT id, g FROM pp_nd WHERE GeometryType(g) = 'POINT';
SELECT (SELECT array_agg(b.id ORDER BY b.id) FROM pp_box3 b JOIN kd_box('pp_box3', ST_MakeEnvelope(2, 3, 4, 5)) k ON b.ctid = k.nn_ctid)
       = (SELECT array_agg(id ORDER BY id) FROM pp_box3 WHERE g && ST_MakeEnvelope(2, 3, 4, 5)) AS nd_same,
       (SELECT count(*) FROM kd_box('pp_box3', ST_MakeEnvelope(2, 3, 4, 5))) AS n;
SELECT count(*) FROM kd_box('pp_box', ST_MakeEnvelope(3, 4, 9.5, 6, 3857));
SELECT count(*) FROM kd_box('pp_box', 'POLYGON EMPTY'::geometry);

-- the index's kind of point is most of the table's, not its first row's:
-- one stray point of another SRID, of three dimensions, or a 3-element
-- float8[], inserted first, stays outside the tree and the rest go in it;
-- scans answer as a sequential scan (PostGIS raises its mixed-SRID error
-- on the first column, so that one is only counted)
CREATE TABLE pp_stray (id int, g geometry, h geometry, v float8[]);
INSERT INTO pp_stray VALUES (0, 'POINT Z (1 2 3)', 'SRID=4326;POINT Z (1 2 3)', '{1,2,3}');
INSERT INTO pp_stray SELECT i, ST_SetSRID(ST_MakePoint(i % 50, i / 50), 4326), ST_SetSRID(ST_MakePoint(i % 50, i / 50), 4326),
                            ARRAY[i % 50, i / 50] FROM generate_series(1, 3000) i;
CREATE INDEX pp_stray_g ON pp_stray USING kdgpu (g);
CREATE INDEX pp_stray_h ON pp_stray USING kdgpu (h kd_geometry_nd_ops);
CREATE INDEX pp_stray_v ON pp_stray USING kdgpu (v);
ANALYZE pp_stray;
SELECT i, s.tree_rows, s.outside_rows, s.dimension
FROM unnest(ARRAY['pp_stray_g', 'pp_stray_h', 'pp_stray_v']) i, kd_index_stats(i::regclass) s ORDER BY i;
SELECT pp_same_ordered('pp_stray_h', 'SELECT id FROM pp_stray ORDER BY h <<->> ''SRID=4326;POINT(1.2 2.1)''::geometry LIMIT 1');
SELECT pp_same('pp_stray_h', 'SELECT id FROM pp_stray WHERE h &&& ''SRID=4326;LINESTRING(0 1, 2 3)''::geometry ORDER BY id');

-- PostGIS's own regression data: regress_index's 50,000 seeded points
-- (regress_lots_of_points.sql) and the boxes its queries use, through the
-- kdgpu index as PostGIS runs them through GiST, beside a sequential scan
CREATE TABLE pp_lots (num bigint, the_geom geometry);
INSERT INTO pp_lots (num, the_geom)
  SELECT path[1], ST_AsText(geom, 6)
  FROM (SELECT (ST_DumpPoints(ST_GeneratePoints(ST_MakeEnvelope(0, 0, 1000, 1000), 50000, 654321))).*) f;
CREATE INDEX pp_lots_kd ON pp_lots USING kdgpu (the_geom);
ANALYZE pp_lots;
SELECT pp_same('pp_lots_kd', 'SELECT num FROM pp_lots WHERE the_geom && ''BOX3D(125 125,135 135)''::box3d ORDER BY num');
SELECT pp_same('pp_lots_kd', 'SELECT num FROM pp_lots WHERE the_geom && ST_MakePoint(0, 0) ORDER BY num');
SELECT b, f, pp_same('pp_lots_kd', format('SELECT num FROM pp_lots WHERE %s ORDER BY num', replace(f, 'B', b)))
FROM unnest(ARRAY['ST_MakeEnvelope(125,125,135,135)', 'ST_MakeEnvelope(0,0,135,135)',
                  'ST_MakeEnvelope(0,0,500,500)']) b,
     unnest(ARRAY['the_geom && B', 'ST_Intersects(the_geom, B)', 'ST_Contains(B, the_geom)',
                  'ST_DWithin(the_geom, ST_Centroid(B), 5)']) f
ORDER BY b, f;
SELECT pp_same_ordered('pp_lots_kd', 'SELECT num FROM pp_lots ORDER BY the_geom <-> ''POINT(130 130)'' LIMIT 10');
