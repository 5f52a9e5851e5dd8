-- Bad geometry and geography input to kdgpu_postgis (run where PostGIS is
-- installed), the companion of bad_input.sql: every entry point that takes
-- a geometry or geography (the kd_* functions, the index's ORDER BY and
-- <@ kd_ball quals, kd_dwithin, INSERT into a kdgpu index, CREATE INDEX
-- over stored rows) against non-point geometries, NaN and infinite
-- coordinates, empty points, other SRIDs and bad radii.  The functions
-- raise their SQLSTATEs; mixed SRIDs raise PostGIS's own error (XX000, as
-- PostGIS does).  The index takes every row its table takes (keeping what
-- its tree cannot hold beside it) and answers ORDER BY with non-point query
-- values: both as a sequential scan does.  Afterwards nothing was written,
-- the indexes pass kd_index_check, and the backend is alive.
BEGIN;
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS postgis;
CREATE EXTENSION IF NOT EXISTS kdgpu;
CREATE EXTENSION IF NOT EXISTS kdgpu_postgis;
RESET client_min_messages;
SET LOCAL kdgpu.device = 'cpu';

CREATE SCHEMA pbi;
SET LOCAL search_path = pbi, public;
CREATE TABLE g (id int, geom geometry);
INSERT INTO g SELECT i, ST_SetSRID(ST_MakePoint(i % 10, i / 10), 4326) FROM generate_series(1, 100) i;
INSERT INTO g VALUES (101, NULL), (102, 'SRID=4326;POINT EMPTY');
CREATE INDEX g_idx ON g USING kdgpu (geom);
CREATE TABLE gg (id int, geog geography);
INSERT INTO gg SELECT i, ST_SetSRID(ST_MakePoint(i % 10, i / 10), 4326)::geography FROM generate_series(1, 100) i;
CREATE INDEX gg_idx ON gg USING kdgpu (geog);
-- stored rows the tree cannot hold (no index yet: CREATE INDEX keeps them
-- beside its tree)
CREATE TABLE g_poly (geom geometry);
INSERT INTO g_poly VALUES ('SRID=4326;POINT(1 1)'), ('SRID=4326;POLYGON((0 0,1 0,1 1,0 0))');
CREATE TABLE g_nan (geom geometry);
INSERT INTO g_nan VALUES ('SRID=4326;POINT(1 1)'), (ST_SetSRID(ST_MakePoint('NaN', 1), 4326));
CREATE TABLE g_srid (geom geometry);
INSERT INTO g_srid VALUES ('SRID=4326;POINT(1 1)'), ('SRID=3857;POINT(1 1)');
CREATE TABLE gg_srid (geog geography);
INSERT INTO gg_srid VALUES ('SRID=4269;POINT(1 1)');

CREATE FUNCTION pg_temp.fingerprint() RETURNS text LANGUAGE sql AS $$
  SELECT md5(string_agg(t, '|' ORDER BY t)) FROM (
    SELECT 'g' || ctid || id || coalesce(ST_AsEWKT(geom), '-') FROM pbi.g
    UNION ALL SELECT 'gg' || ctid || id || ST_AsEWKT(geog::geometry) FROM pbi.gg) f(t)
$$;
CREATE TEMP TABLE before AS SELECT pg_temp.fingerprint() AS fp;

CREATE TEMP TABLE cases (id serial, sql text, state text, descr text);
-- geometry query values in every position
CREATE TEMP TABLE gtemplates (tpl text);
INSERT INTO gtemplates VALUES
  ('SELECT * FROM kd_knn(''g'', %Q, 3)'),
  ('SELECT * FROM kd_knn(''g'', ''geom'', %Q, 3)'),
  ('SELECT * FROM kd_knn_join(''g'', ARRAY[''SRID=4326;POINT(1 1)''::geometry, %Q], 3)'),
  ('SELECT * FROM kd_range(''g'', %Q, 1)'),
  ('SELECT * FROM kd_range_join(''g'', ARRAY[%Q], 1)'),
  ('SELECT * FROM kd_range_join(''g'', ARRAY[%Q], ARRAY[1::float8])'),
  ('SELECT * FROM kd_box(''g'', %Q, ''SRID=4326;POINT(5 5)''::geometry)'),
  ('SELECT * FROM kd_box(''g'', ''SRID=4326;POINT(0 0)''::geometry, %Q)'),
  ('SELECT id FROM g ORDER BY geom <-> %Q LIMIT 3'),
  ('SELECT id FROM g WHERE geom <@ kd_ball(%Q, 1)');
CREATE TEMP TABLE gbad (q text, state text, kinds text);
INSERT INTO gbad VALUES
  ($$'SRID=4326;LINESTRING(0 0,1 1)'::geometry$$, '22000', 'all'),
  ($$'SRID=4326;POLYGON((0 0,1 0,1 1,0 0))'::geometry$$, '22000', 'all'),
  ($$'SRID=4326;MULTIPOINT((0 0))'::geometry$$, '22000', 'all'),
  ($$'SRID=4326;GEOMETRYCOLLECTION(POINT(0 0))'::geometry$$, '22000', 'all'),
  ($$ST_SetSRID(ST_MakePoint('NaN', 1), 4326)$$, '22000', 'all'),
  ($$ST_SetSRID(ST_MakePoint(1, '-Infinity'), 4326)$$, '22000', 'all'),
  ($$'SRID=4326;POINT EMPTY'::geometry$$, '22023', 'query'),
  ($$ST_SetSRID(ST_MakePoint(1, 1), 3857)$$, 'XX000', 'query'),
  ($$ST_MakePoint(1, 1)$$, 'XX000', 'query');
INSERT INTO cases (sql, state, descr)
  SELECT replace(t.tpl, '%Q', b.q), st, replace(t.tpl, '%Q', b.q) || ' is ' || st
    FROM gtemplates t, gbad b,
         LATERAL (SELECT CASE
           -- non-points through kd_ball's SQL body fail in PostGIS's ST_X
           WHEN t.tpl LIKE '%kd_ball%' AND b.q ~ 'LINESTRING|POLYGON|MULTIPOINT|COLLECTION' THEN 'XX000'
           -- an empty kd_ball centre is NULL coordinates
           WHEN t.tpl LIKE '%kd_ball%' AND b.q LIKE '%EMPTY%' THEN '22004'
           ELSE b.state END st) s
   WHERE NOT (t.tpl LIKE '%ORDER BY%' AND b.q ~ 'LINESTRING|POLYGON|MULTIPOINT|COLLECTION')
     AND (b.kinds = 'all'
          OR (t.tpl NOT LIKE '%ORDER BY%' AND t.tpl NOT LIKE '%kd_ball%')
          OR (t.tpl LIKE '%ORDER BY%' AND b.state = 'XX000'))
   ORDER BY 1;
-- geography query values
CREATE TEMP TABLE ggtemplates (tpl text);
INSERT INTO ggtemplates VALUES
  ('SELECT * FROM kd_knn(''gg'', %Q, 3)'),
  ('SELECT * FROM kd_knn_join(''gg'', ARRAY[%Q], 3)'),
  ('SELECT * FROM kd_range(''gg'', %Q, 1000)'),
  ('SELECT * FROM kd_range_join(''gg'', ARRAY[%Q], ARRAY[1000::float8])'),
  ('SELECT id FROM gg ORDER BY geog <-> %Q LIMIT 3');
INSERT INTO cases (sql, state, descr)
  SELECT replace(t.tpl, '%Q', b.q), b.state, replace(t.tpl, '%Q', b.q) || ' is ' || b.state
    FROM ggtemplates t, (VALUES
      ($$'SRID=4326;LINESTRING(0 0,1 1)'::geography$$, '22000', 'all'),
      ($$ST_SetSRID(ST_MakePoint('NaN', 1), 4326)::geography$$, '22000', 'all'),
      ($$'SRID=4326;POINT EMPTY'::geography$$, '22023', 'function'),
      ($$'SRID=4269;POINT(1 1)'::geography$$, 'XX000', 'query')) b(q, state, kinds)
   WHERE NOT (t.tpl LIKE '%ORDER BY%' AND b.q LIKE '%LINESTRING%')
     AND (b.kinds IN ('all', 'query')
          OR (b.kinds = 'function' AND t.tpl LIKE 'SELECT * FROM%'))
   ORDER BY 1;
-- radii, k
INSERT INTO cases (sql, state, descr)
  SELECT s, '22023', s || ' is 22023' FROM unnest(ARRAY[
    $$SELECT * FROM kd_range('g', 'SRID=4326;POINT(1 1)'::geometry, -1)$$,
    $$SELECT * FROM kd_range('gg', 'SRID=4326;POINT(1 1)'::geography, 'NaN')$$,
    $$SELECT * FROM kd_range_join('gg', ARRAY['SRID=4326;POINT(1 1)'::geography], ARRAY[-1::float8])$$,
    $$SELECT kd_dwithin('SRID=4326;POINT(1 1)'::geometry, 'SRID=4326;POINT(1 1)'::geometry, -1)$$,
    $$SELECT kd_dwithin('SRID=4326;POINT(1 1)'::geography, 'SRID=4326;POINT(1 1)'::geography, 'NaN')$$,
    $$SELECT id FROM g WHERE kd_dwithin(geom, 'SRID=4326;POINT(1 1)'::geometry, -1)$$,
    $$SELECT id FROM g WHERE geom <@ kd_ball('SRID=4326;POINT(1 1)'::geometry, -1)$$,
    $$SELECT * FROM kd_knn('g', 'SRID=4326;POINT(1 1)'::geometry, 0)$$,
    $$SELECT * FROM kd_knn('gg', 'SRID=4326;POINT(1 1)'::geography, 1025)$$,
    $$SELECT * FROM kd_all_knn('g', -1)$$]) s;
-- stored bad rows, for the functions
INSERT INTO cases (sql, state, descr)
  SELECT replace(t, '%R', r), st, replace(t, '%R', r) || ' is ' || st
    FROM unnest(ARRAY['SELECT * FROM kd_all_knn(''%R'', 1)', 'SELECT * FROM kd_load(''%R'')']) t,
         (VALUES ('g_poly', '22000'), ('g_nan', '22000'), ('g_srid', '22000')) r(r, st)
   ORDER BY 1;
INSERT INTO cases (sql, state, descr) VALUES
  ($$SELECT * FROM kd_all_knn('gg_srid', 1)$$, '0A000', 'a stored geography in another SRID'),
  ($$SELECT * FROM kd_box('gg', 'SRID=4326;POINT(0 0)'::geometry, 'SRID=4326;POINT(1 1)'::geometry)$$, '42804',
   'kd_box with geometry corners on a geography column');


-- the index's ORDER BY with a non-point query value answers as a sequential
-- scan does (PostGIS's distances).  Ties may come in any order: the query
-- lists each distance, in the order of the scan, with its rows, and whether
-- they came together
CREATE TEMP TABLE odd_orders (id serial, q text, descr text);
INSERT INTO odd_orders (q, descr)
  SELECT format('SELECT d, array_agg(id ORDER BY id), count(*) = max(n) - min(n) + 1 FROM (
                   SELECT id, d, row_number() OVER () n FROM (
                     SELECT id, %2$s <-> %3$s d FROM %1$s ORDER BY %2$s <-> %3$s) o) s
                  GROUP BY d ORDER BY min(n)', tab, col, q),
         format('SELECT id FROM %s ORDER BY %s <-> %s: index scan = sequential scan', tab, col, q)
    FROM (SELECT 'g', 'geom', b.q FROM gbad b WHERE b.q ~ 'LINESTRING|POLYGON|MULTIPOINT|COLLECTION'
          UNION ALL SELECT 'gg', 'geog', $$'SRID=4326;LINESTRING(0 0,1 1)'::geography$$) v(tab, col, q)
   ORDER BY tab, q;

-- building over and writing rows the tree cannot hold (non-points, NaN and
-- infinite coordinates, other SRIDs): the table takes them, so the index
-- must.  It keeps them beside its tree, passes kd_index_check, and answers
-- the probes below as a sequential scan does (where PostGIS's operator
-- raises an error for such a row, the index scan raises the same).  Each
-- statement is undone afterwards.
CREATE TEMP TABLE takes (id serial, stmt text, idx text, tab text, col text, kind text);
INSERT INTO takes (stmt, idx, tab, col, kind)
  SELECT format('CREATE INDEX %s_idx ON %s USING kdgpu (%s)', r, r, c), r || '_idx', r, c, k
    FROM (VALUES ('g_poly', 'geom', 'geometry'), ('g_nan', 'geom', 'geometry'), ('g_srid', 'geom', 'geometry'),
                 ('gg_srid', 'geog', 'geography')) r(r, c, k)
   ORDER BY 1;
INSERT INTO takes (stmt, idx, tab, col, kind)
  SELECT format('INSERT INTO g VALUES (0, %s)', b.q), 'g_idx', 'g', 'geom', 'geometry'
    FROM gbad b WHERE b.kinds = 'all' ORDER BY 1;
INSERT INTO takes (stmt, idx, tab, col, kind)
  SELECT format('INSERT INTO gg VALUES (0, %s)', q), 'gg_idx', 'gg', 'geog', 'geography'
    FROM unnest(ARRAY[$$'SRID=4326;LINESTRING(0 0,1 1)'::geography$$,
                      $$ST_SetSRID(ST_MakePoint('NaN', 1), 4326)::geography$$,
                      $$'SRID=4269;POINT(1 1)'::geography$$]) q ORDER BY 1;
-- the probes: an ORDER BY (ties in any order, as above) and a range query
-- over every row (%T the table, %C the indexed column)
CREATE TEMP TABLE probes (id serial, kind text, descr text, q text, oracle text);
INSERT INTO probes (kind, descr, q) VALUES
  ('geometry', 'ORDER BY %C <-> POINT(0.5 0.5)', $$SELECT d, array_agg(c ORDER BY c), count(*) = max(n) - min(n) + 1 FROM (
                   SELECT c, d, row_number() OVER () n FROM (
                     SELECT ctid c, %C <-> 'SRID=4326;POINT(0.5 0.5)'::geometry d FROM %T
                      ORDER BY %C <-> 'SRID=4326;POINT(0.5 0.5)'::geometry) o) s
                  GROUP BY d ORDER BY min(n)$$),
  ('geometry', '%C && a box', $$SELECT ctid FROM %T WHERE %C && ST_MakeEnvelope(-1e9, -1e9, 1e9, 1e9, 4326) ORDER BY ctid$$),
  ('geography', 'ORDER BY %C <-> POINT(0.5 0.5)', $$SELECT d, array_agg(c ORDER BY c), count(*) = max(n) - min(n) + 1 FROM (
                    SELECT c, d, row_number() OVER () n FROM (
                      SELECT ctid c, %C <-> 'SRID=4326;POINT(0.5 0.5)'::geography d FROM %T
                       ORDER BY %C <-> 'SRID=4326;POINT(0.5 0.5)'::geography) o) s
                   GROUP BY d ORDER BY min(n)$$),
  ('geography', '%C && a polygon', $$SELECT ctid FROM %T WHERE %C && 'SRID=4326;POLYGON((-10 -10,10 -10,10 10,-10 10,-10 -10))'::geography
                   ORDER BY ctid$$);

-- helpers: plan_text, outcome, index_and_seqscan, same_outcome, takes
\ir include/index_compare.sql


SELECT plan((SELECT count(*)::int FROM cases) + 5 + (SELECT count(*)::int FROM odd_orders)
            + (SELECT sum(2 + (SELECT count(*) FROM probes p WHERE p.kind = t.kind))::int FROM takes t));

SET LOCAL enable_seqscan = off;
SELECT throws_ok(sql, state, NULL, descr) FROM cases ORDER BY id;
RESET enable_seqscan;

-- messages name the problem (PostGIS's own mixed-SRID errors aside)
CREATE FUNCTION pg_temp.message(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  m text;
BEGIN
  EXECUTE stmt;
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS m = MESSAGE_TEXT;
  RETURN m;
END $$;
SELECT is_empty($$SELECT descr, m FROM (SELECT descr, pg_temp.message(sql) m FROM pg_temp.cases) c
                   WHERE m IS NULL OR m ~* '\(null\)|cache lookup|unrecognized|unexpected'$$,
                'every error message names the problem');

-- ORDER BY with non-point query values, and rows the tree cannot hold:
-- through the index as through a sequential scan
SELECT pg_temp.same_outcome(pg_temp.index_and_seqscan(q), descr) FROM odd_orders ORDER BY id;
SET LOCAL client_min_messages = warning;
SELECT pg_temp.takes(stmt, idx, tab, col, kind) FROM takes ORDER BY id;
RESET client_min_messages;
SELECT is(pg_temp.fingerprint(), (SELECT fp FROM before), 'no table changed');
SELECT ok(kd_index_check('g_idx') AND kd_index_check('gg_idx'), 'the indexes pass kd_index_check');
SET LOCAL enable_seqscan = off;
CREATE TEMP TABLE via_index AS
  SELECT array_agg(d ORDER BY d) a FROM (
    SELECT geom <-> 'SRID=4326;POINT(4.5 4.5)'::geometry d FROM g
     ORDER BY geom <-> 'SRID=4326;POINT(4.5 4.5)'::geometry LIMIT 20) s;
RESET enable_seqscan;
SELECT is((SELECT a FROM via_index),
          (SELECT array_agg(d ORDER BY d) FROM (
             SELECT ST_Distance(geom, 'SRID=4326;POINT(4.5 4.5)'::geometry) d FROM g
              WHERE NOT ST_IsEmpty(geom) ORDER BY 1 LIMIT 20) s),
          'the geometry index still gives a sequential scan''s distances');
SELECT is(pg_backend_pid(), (SELECT pid FROM pg_stat_activity WHERE pid = pg_backend_pid()),
          'the backend that ran every case is alive');

SELECT * FROM finish();
ROLLBACK;
