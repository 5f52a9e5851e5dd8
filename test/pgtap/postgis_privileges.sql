-- Privileges of kdgpu_postgis (run where PostGIS is installed): geometry
-- and geography tables are read with the caller's rights and row-level
-- security, nothing is SECURITY DEFINER, and the install script binds
-- nothing to look-alikes of PostGIS's operators, functions and types that
-- another role placed in the schema the extension goes into.  (Before the
-- script put that schema last on its search_path, such a role's && became
-- the operator class's strategy 1 and its st_x ran inside kd_ball.)
BEGIN;
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS postgis;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SET LOCAL kdgpu.device = 'cpu';

SELECT plan(20);

-- a role with CREATE on the target schema plants look-alikes there
CREATE ROLE kd_pg_mallory;
CREATE ROLE kd_pg_reader;
CREATE SCHEMA kdpg_target;
GRANT CREATE, USAGE ON SCHEMA kdpg_target TO kd_pg_mallory;
GRANT USAGE ON SCHEMA kdpg_target TO PUBLIC;
SET ROLE kd_pg_mallory;
CREATE FUNCTION kdpg_target.evil_overlaps(geometry, geometry) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR kdpg_target.&& (LEFTARG = geometry, RIGHTARG = geometry, FUNCTION = kdpg_target.evil_overlaps);
CREATE FUNCTION kdpg_target.evil_distance(geography, geography) RETURNS float8 LANGUAGE sql AS 'SELECT 0::float8';
CREATE OPERATOR kdpg_target.<-> (LEFTARG = geography, RIGHTARG = geography, FUNCTION = kdpg_target.evil_distance);
CREATE FUNCTION kdpg_target.st_x(geometry) RETURNS float8 LANGUAGE sql AS 'SELECT 12345::float8';
CREATE FUNCTION kdpg_target.st_y(geometry) RETURNS float8 LANGUAGE sql AS 'SELECT 54321::float8';
CREATE TYPE kdpg_target.kd_ball AS (x int);
RESET ROLE;
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS kdgpu_postgis CASCADE;
SET LOCAL search_path = kdpg_target, public;
CREATE EXTENSION kdgpu_postgis SCHEMA kdpg_target;
RESET client_min_messages;
RESET search_path;

CREATE TEMP VIEW pg_ext AS
  SELECT d.classid, d.objid FROM pg_depend d
   WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
     AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'kdgpu_postgis');
SELECT is_empty($$
  SELECT ao.amopopr::regoperator FROM pg_amop ao JOIN pg_opclass c ON c.opcfamily = ao.amopfamily
    JOIN pg_ext x ON x.classid = 'pg_opclass'::regclass AND x.objid = c.oid
   WHERE (SELECT oprowner FROM pg_operator WHERE oid = ao.amopopr) = 'kd_pg_mallory'::regrole$$,
  'no operator class of kdgpu_postgis uses a planted operator');
SELECT is_empty($$
  SELECT pg_describe_object(x.classid, x.objid, 0), pg_describe_object(d.refclassid, d.refobjid, 0)
    FROM pg_ext x JOIN pg_depend d ON d.classid = x.classid AND d.objid = x.objid
   WHERE d.deptype = 'n' AND (
         (d.refclassid = 'pg_proc'::regclass AND (SELECT proowner FROM pg_proc WHERE oid = d.refobjid) = 'kd_pg_mallory'::regrole)
      OR (d.refclassid = 'pg_operator'::regclass AND (SELECT oprowner FROM pg_operator WHERE oid = d.refobjid) = 'kd_pg_mallory'::regrole)
      OR (d.refclassid = 'pg_type'::regclass AND (SELECT typowner FROM pg_type WHERE oid = d.refobjid) = 'kd_pg_mallory'::regrole))$$,
  'no object of kdgpu_postgis depends on a planted function, operator or type');
SELECT is(kdpg_target.kd_ball('POINT(1 2)'::geometry, 3)::text, '("{1,2}",3)',
          'kd_ball(geometry) calls PostGIS''s ST_X and ST_Y, not the planted ones');
SELECT is((SELECT pg_typeof(kdpg_target.kd_ball('POINT(1 2)'::geometry, 3))::oid),
          (SELECT t.oid FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
            JOIN pg_extension e ON e.extnamespace = n.oid AND e.extname = 'kdgpu' WHERE t.typname = 'kd_ball'),
          'kd_ball(geometry) returns kdgpu''s kd_ball, not the planted type');
SELECT is_empty($$
  SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_ext x ON x.classid = 'pg_proc'::regclass AND x.objid = p.oid
   WHERE p.pronamespace <> 'kdpg_target'::regnamespace$$,
  'every function of kdgpu_postgis is in the schema it was installed into');
SELECT is_empty($$
  SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_ext x ON x.classid = 'pg_proc'::regclass AND x.objid = p.oid
   WHERE p.prosecdef$$,
  'no function of kdgpu_postgis is SECURITY DEFINER');
SELECT is_empty($$
  SELECT p.oid::regprocedure, c FROM pg_proc p JOIN pg_ext x ON x.classid = 'pg_proc'::regclass AND x.objid = p.oid,
         unnest(p.proconfig) c
   WHERE c !~ '^search_path=pg_catalog, .*kdpg_target$'$$,
  'the only setting a function pins is a search_path that puts the install schema last');
SELECT is((SELECT bool_or(trusted) FROM pg_available_extension_versions WHERE name = 'kdgpu_postgis'), false,
          'kdgpu_postgis is not trusted');
SELECT is(current_setting('search_path'), '"$user", public', 'CREATE EXTENSION left the session''s search_path as it was');

-- the caller's rights and row-level security on geometry and geography
-- (the planted operators stay behind PostGIS's on this path)
SET LOCAL search_path = public, kdpg_target;
CREATE TABLE kdpg_geo (id int, g geometry(Point, 4326), gg geography(Point, 4326));
INSERT INTO kdpg_geo SELECT i, ST_SetSRID(ST_MakePoint(i % 20, i / 20), 4326),
                            ST_SetSRID(ST_MakePoint(i % 20, i / 20), 4326)::geography
  FROM generate_series(1, 200) i;
CREATE INDEX ON kdpg_geo USING kdgpu (g);
SET ROLE kd_pg_reader;
SELECT throws_ok($$SELECT * FROM kd_knn('kdpg_geo', 'g', 'SRID=4326;POINT(1 1)'::geometry, 3)$$, '42501', NULL,
                 'kd_knn(geometry) without SELECT: permission denied');
SELECT throws_ok($$SELECT * FROM kd_knn('kdpg_geo', 'gg', 'SRID=4326;POINT(1 1)'::geography, 3)$$, '42501', NULL,
                 'kd_knn(geography) without SELECT: permission denied');
SELECT throws_ok($$SELECT * FROM kd_all_knn('kdpg_geo', 'g', 3)$$, '42501', NULL,
                 'kd_all_knn(geometry) without SELECT: permission denied');
SELECT throws_ok($$SELECT * FROM kd_range('kdpg_geo', 'gg', 'SRID=4326;POINT(1 1)'::geography, 1000)$$, '42501', NULL,
                 'kd_range(geography) without SELECT: permission denied');
SELECT throws_ok($$SELECT * FROM kd_box('kdpg_geo', 'g', 'SRID=4326;POINT(0 0)'::geometry, 'SRID=4326;POINT(5 5)'::geometry)$$,
                 '42501', NULL, 'kd_box(geometry) without SELECT: permission denied');
RESET ROLE;
ALTER TABLE kdpg_geo ENABLE ROW LEVEL SECURITY;
CREATE POLICY kdpg_even ON kdpg_geo FOR SELECT USING (id % 2 = 0);
GRANT SELECT ON kdpg_geo TO kd_pg_reader;
SET ROLE kd_pg_reader;
SELECT results_eq($$SELECT nn_ctid FROM kd_knn('kdpg_geo', 'g', 'SRID=4326;POINT(3 3)'::geometry, 15)$$,
                  $$SELECT ctid FROM kdpg_geo ORDER BY ST_Distance(g, 'SRID=4326;POINT(3 3)'::geometry), ctid LIMIT 15$$,
                  'kd_knn(geometry) under row-level security equals the reader''s brute force');
SELECT is((SELECT count(*) FROM kd_all_knn('kdpg_geo', 'gg', 1)), 100::bigint,
          'kd_all_knn(geography) reads only the rows the policy shows');
SELECT results_eq($$SELECT nn_ctid FROM kd_range('kdpg_geo', 'gg', 'SRID=4326;POINT(3 3)'::geography, 300000) ORDER BY 1$$,
                  $$SELECT ctid FROM kdpg_geo WHERE ST_DWithin(gg, 'SRID=4326;POINT(3 3)'::geography, 300000, false) ORDER BY 1$$,
                  'kd_range(geography) under row-level security equals the reader''s ST_DWithin');
SET LOCAL enable_seqscan = off;
CREATE TEMP TABLE kdpg_scan AS
  SELECT id, g <-> 'SRID=4326;POINT(3 3)'::geometry d FROM kdpg_geo ORDER BY g <-> 'SRID=4326;POINT(3 3)'::geometry LIMIT 9;
SELECT is((SELECT array_agg(d ORDER BY d) FROM kdpg_scan),
          (SELECT array_agg(d ORDER BY d) FROM (SELECT ST_Distance(g, 'SRID=4326;POINT(3 3)'::geometry) d
                                                   FROM kdpg_geo ORDER BY 1 LIMIT 9) b),
          'an index scan on geometry under row-level security gives the reader''s nearest distances');
SELECT is((SELECT bool_and(id % 2 = 0) FROM kdpg_scan), true,
          'and only rows the policy shows');
RESET enable_seqscan;
RESET ROLE;
SELECT is((SELECT count(*) FROM kd_all_knn('kdpg_geo', 'g', 1)), 200::bigint,
          'a superuser, exempt from the policy, reads every row');

SELECT * FROM finish();
ROLLBACK;
