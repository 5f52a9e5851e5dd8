-- kdgpu_postgis against PostGIS itself: kNN, All-kNN, kNN joins and radius
-- queries on geometry (XY, XYZ, XYM, XYZM, a projected SRID) and geography
-- points, index scans through inserts, deletes, VACUUM and REINDEX, and
-- edge cases (antipodes, the date line, the poles, duplicates).
BEGIN;
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS postgis;
CREATE EXTENSION IF NOT EXISTS kdgpu;
CREATE EXTENSION IF NOT EXISTS kdgpu_postgis;
RESET client_min_messages;

SELECT plan(28);
SELECT setseed(0.7);

-- kd_knn(t, q, k) equals PostGIS's ORDER BY col <-> q, ctid (op: the operator)
CREATE FUNCTION pg_temp.knn_matches(t text, col text, q text, k int, op text DEFAULT '<->')
RETURNS text LANGUAGE sql AS $f$
  SELECT results_eq(
    format('SELECT * FROM kd_knn(%L, %L, %s, %s)', t, col, q, k),
    format($$SELECT ctid AS c, %I %s %s, (row_number() OVER (ORDER BY %I %s %s, ctid))::int
               FROM %I WHERE %I IS NOT NULL AND NOT ST_IsEmpty(%I::geometry)
              ORDER BY %I %s %s, ctid LIMIT %s$$,
           col, op, q, col, op, q, t, col, col, col, op, q, k),
    format('kd_knn(%s, %s, %s)', t, q, k))
$f$;
-- an ordered index scan equals a sequential scan (ties left out at the end)
CREATE FUNCTION pg_temp.top(t text, col text, q text, k int, op text) RETURNS float8[] LANGUAGE plpgsql AS $f$
DECLARE
  r float8[];
BEGIN
  EXECUTE format('SELECT array_agg(d) FROM (SELECT %I %s %s AS d FROM %I ORDER BY %I %s %s LIMIT %s) s',
                 col, op, q, t, col, op, q, k) INTO r;
  RETURN r;
END $f$;
CREATE FUNCTION pg_temp.index_matches(t text, col text, q text, k int, op text DEFAULT '<->')
RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
  a float8[];
  b float8[];
BEGIN
  SET LOCAL enable_seqscan = off;
  a := pg_temp.top(t, col, q, k, op);
  SET LOCAL enable_seqscan = on;
  SET LOCAL enable_indexscan = off;
  SET LOCAL enable_bitmapscan = off;
  b := pg_temp.top(t, col, q, k, op);
  SET LOCAL enable_indexscan = on;
  SET LOCAL enable_bitmapscan = on;
  RETURN is(a, b, format('index scan on %s by %s %s', t, op, q));
END $f$;

-- XY points in SRID 4326 on a grid with duplicates, and geography copies
CREATE TABLE gpts (id serial, geom geometry(Point, 4326));
INSERT INTO gpts (geom) SELECT ST_SetSRID(ST_MakePoint(round((random() * 40 - 20)::numeric, 2), round((random() * 20 + 30)::numeric, 2)), 4326)
  FROM generate_series(1, 2000);
CREATE TABLE ggeog AS SELECT id, geom::geography AS geog FROM gpts;
-- the date line, the poles and antipodes of each other
INSERT INTO ggeog VALUES (-1, 'SRID=4326;POINT(179.999 0)'), (-2, 'SRID=4326;POINT(-179.999 0)'),
  (-3, 'SRID=4326;POINT(0 90)'), (-4, 'SRID=4326;POINT(45 -90)'), (-5, 'SRID=4326;POINT(0 -0.5)');
CREATE INDEX ON gpts USING kdgpu (geom);
CREATE INDEX ON ggeog USING kdgpu (geog);

SELECT pg_temp.knn_matches('gpts', 'geom', $$'SRID=4326;POINT(0 40)'::geometry$$, 50);
SELECT pg_temp.knn_matches('ggeog', 'geog', $$'SRID=4326;POINT(0 40)'::geography$$, 50);
SELECT pg_temp.knn_matches('ggeog', 'geog', $$'SRID=4326;POINT(180 0)'::geography$$, 5);
SELECT pg_temp.knn_matches('ggeog', 'geog', $$'SRID=4326;POINT(180 0.5)'::geography$$, 8);
SELECT pg_temp.index_matches('gpts', 'geom', $$'SRID=4326;POINT(3.3 33.3)'::geometry$$, 100);
SELECT pg_temp.index_matches('ggeog', 'geog', $$'SRID=4326;POINT(-179.9 0.1)'::geography$$, 10);
SELECT pg_temp.index_matches('ggeog', 'geog', $$'SRID=4326;POINT(10 -89.9)'::geography$$, 10);

-- writes after the build: pending rows, deletes, VACUUM merging, REINDEX
INSERT INTO gpts (geom) SELECT ST_SetSRID(ST_MakePoint(random() * 2, random() * 2 + 39), 4326) FROM generate_series(1, 300);
INSERT INTO ggeog SELECT -100 - i, ST_MakePoint(random() * 2, random() * 2 + 39)::geography FROM generate_series(1, 300) i;
SELECT pg_temp.index_matches('gpts', 'geom', $$'SRID=4326;POINT(1 40)'::geometry$$, 60);
SELECT pg_temp.index_matches('ggeog', 'geog', $$'SRID=4326;POINT(1 40)'::geography$$, 60);
DELETE FROM gpts WHERE id % 3 = 0;
DELETE FROM ggeog WHERE id % 3 = 0;
SELECT pg_temp.index_matches('gpts', 'geom', $$'SRID=4326;POINT(1 40)'::geometry$$, 60);
-- (VACUUM cannot run in a transaction: REINDEX rebuilds the tree instead)
REINDEX TABLE gpts;
REINDEX TABLE ggeog;
SELECT pg_temp.index_matches('gpts', 'geom', $$'SRID=4326;POINT(1 40)'::geometry$$, 60);
SELECT pg_temp.index_matches('ggeog', 'geog', $$'SRID=4326;POINT(1 40)'::geography$$, 60);
SELECT pg_temp.knn_matches('ggeog', 'geog', $$'SRID=4326;POINT(1 40)'::geography$$, 30);

-- kNN joins and radius joins over arrays of geometry and geography
SELECT results_eq(
  $$SELECT query_ord, nn_ctid, rank FROM kd_knn_join('ggeog', ARRAY['SRID=4326;POINT(0 40)'::geography, 'SRID=4326;POINT(179 0)'], 4)$$,
  $$SELECT o, ctid AS c, r::int FROM (VALUES (1, 'SRID=4326;POINT(0 40)'::geography), (2, 'SRID=4326;POINT(179 0)')) q(o, g),
      LATERAL (SELECT ctid, row_number() OVER (ORDER BY geog <-> g, ctid) AS r FROM ggeog ORDER BY geog <-> g, ctid LIMIT 4) s
     ORDER BY o, r$$,
  'kd_knn_join over geography[]');
SELECT set_eq(
  $$SELECT query_ord, nn_ctid FROM kd_range_join('gpts', ARRAY['SRID=4326;POINT(0 40)'::geometry, 'SRID=4326;POINT(1 40)'], ARRAY[0.5, 0.25])$$,
  $$SELECT o, ctid AS c FROM (VALUES (1, 'SRID=4326;POINT(0 40)'::geometry, 0.5), (2, 'SRID=4326;POINT(1 40)', 0.25)) q(o, g, r), gpts
     WHERE ST_DWithin(geom, g, r)$$,
  'kd_range_join over geometry[] with radii');
SELECT set_eq(
  $$SELECT nn_ctid FROM kd_range('ggeog', 'SRID=4326;POINT(0 40)'::geography, 75000)$$,
  $$SELECT ctid AS c FROM ggeog WHERE ST_DWithin(geog, 'SRID=4326;POINT(0 40)'::geography, 75000, false)$$,
  'kd_range on geography equals ST_DWithin(.., false)');
SELECT set_eq(
  $$SELECT nn_ctid FROM kd_range('ggeog', 'SRID=4326;POINT(0 0)'::geography, 2.0016e7)$$,
  $$SELECT ctid AS c FROM ggeog WHERE geog IS NOT NULL$$,
  'a radius beyond half the circumference holds every point');
SELECT is((SELECT count(*) FROM kd_range('ggeog', 'SRID=4326;POINT(0 0)'::geography, 2.0014e7)),
  (SELECT count(*) FROM ggeog WHERE geog <-> 'SRID=4326;POINT(0 0)'::geography <= 2.0014e7),
  'points near the antipode lie beyond a radius just short of it');

-- XYM and XYZM points with kd_geometry_nd_ops and <<->>
CREATE TABLE gm AS SELECT id, ST_MakePointM(ST_X(geom), ST_Y(geom), id % 5) AS geom FROM gpts;
CREATE TABLE gzm AS SELECT id, ST_MakePoint(ST_X(geom), ST_Y(geom), id % 3, id % 7) AS geom FROM gpts;
CREATE INDEX ON gm USING kdgpu (geom kd_geometry_nd_ops);
CREATE INDEX ON gzm USING kdgpu (geom kd_geometry_nd_ops);
SELECT pg_temp.index_matches('gm', 'geom', $$ST_MakePointM(1, 40, 2)$$, 40, '<<->>');
SELECT pg_temp.index_matches('gzm', 'geom', $$ST_MakePoint(1, 40, 1, 3)$$, 40, '<<->>');
SELECT results_eq(
  $$SELECT nn_ctid FROM kd_knn('gzm', ST_MakePoint(1, 40, 1, 3), 20)$$,
  $$SELECT ctid AS c FROM gzm ORDER BY sqrt((ST_X(geom) - 1) ^ 2 + (ST_Y(geom) - 40) ^ 2 + (ST_Z(geom) - 1) ^ 2 + (ST_M(geom) - 3) ^ 2), ctid LIMIT 20$$,
  'kd_knn on XYZM points: distance over the four coordinates');

-- partitioned geometry and geography tables: the _parts and key forms
-- against PostGIS's <-> ordered by (distance, tableoid, ctid) and (distance, id)
CREATE TABLE pgeo (id int, geom geometry(Point, 4326)) PARTITION BY RANGE (id);
CREATE TABLE pgeo_1 PARTITION OF pgeo FOR VALUES FROM (MINVALUE) TO (1000);
CREATE TABLE pgeo_2 PARTITION OF pgeo FOR VALUES FROM (1000) TO (MAXVALUE);
INSERT INTO pgeo SELECT id, geom FROM gpts ORDER BY random();
CREATE INDEX ON pgeo_1 USING kdgpu (geom);
CREATE TABLE pgeog (id int, geog geography(Point, 4326)) PARTITION BY HASH (id);
CREATE TABLE pgeog_0 PARTITION OF pgeog FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE pgeog_1 PARTITION OF pgeog FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO pgeog SELECT id, geog FROM ggeog ORDER BY random();
SELECT results_eq(
  $$SELECT * FROM kd_knn_parts('pgeo', 'SRID=4326;POINT(1 40)'::geometry, 40)$$,
  $$SELECT tableoid::regclass, ctid, geom <-> 'SRID=4326;POINT(1 40)'::geometry,
           (row_number() OVER (ORDER BY geom <-> 'SRID=4326;POINT(1 40)'::geometry, tableoid, ctid))::int
      FROM pgeo ORDER BY geom <-> 'SRID=4326;POINT(1 40)'::geometry, tableoid, ctid LIMIT 40$$,
  'kd_knn_parts over geometry partitions');
SELECT results_eq(
  $$SELECT * FROM kd_knn('pgeog', 'SRID=4326;POINT(1 40)'::geography, 40, 'id')$$,
  $$SELECT id::bigint, geog <-> 'SRID=4326;POINT(1 40)'::geography,
           (row_number() OVER (ORDER BY geog <-> 'SRID=4326;POINT(1 40)'::geography, id))::int
      FROM pgeog ORDER BY geog <-> 'SRID=4326;POINT(1 40)'::geography, id LIMIT 40$$,
  'kd_knn with a key over geography partitions');
SELECT set_eq(
  $$SELECT nn_key FROM kd_range('pgeog', 'SRID=4326;POINT(0 40)'::geography, 75000, 'id')$$,
  $$SELECT id::bigint FROM pgeog WHERE ST_DWithin(geog, 'SRID=4326;POINT(0 40)'::geography, 75000, false)$$,
  'kd_range with a key over geography partitions equals ST_DWithin(.., false)');
SELECT results_eq(
  $$SELECT * FROM kd_knn_join('pgeo', ARRAY['SRID=4326;POINT(0 40)'::geometry, 'SRID=4326;POINT(-5 35)'], 6, 'id')$$,
  $$SELECT o::int, s.* FROM unnest(ARRAY['SRID=4326;POINT(0 40)'::geometry, 'SRID=4326;POINT(-5 35)']) WITH ORDINALITY q(g, o),
      LATERAL (SELECT id::bigint, geom <-> g, (row_number() OVER (ORDER BY geom <-> g, id))::int
                 FROM pgeo ORDER BY geom <-> g, id LIMIT 6) s ORDER BY o, 4$$,
  'kd_knn_join with a key over geometry partitions');

-- a projected SRID
CREATE TABLE gutm AS SELECT id, ST_Transform(geom, 32631) AS geom FROM gpts;
CREATE INDEX ON gutm USING kdgpu (geom);
SELECT pg_temp.knn_matches('gutm', 'geom', $$'SRID=32631;POINT(500000 4500000)'::geometry$$, 40);
SELECT pg_temp.index_matches('gutm', 'geom', $$'SRID=32631;POINT(500000 4500000)'::geometry$$, 40);

SELECT throws_like($$SELECT * FROM kd_knn('gutm', 'SRID=4326;POINT(0 0)'::geometry, 1)$$,
  '%Operation on mixed SRID geometries%', 'a query in another SRID is PostGIS''s error');

SELECT * FROM finish();
ROLLBACK;
