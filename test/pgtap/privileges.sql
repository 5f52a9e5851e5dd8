-- Privileges: every function that takes a table reads it with the caller's
-- rights (no SELECT privilege: an error and no rows; a column privilege on
-- the point column is enough), row-level security applies (answers equal a
-- brute force run by the same role, and differ from the owner's), the index
-- check and statistics need SELECT on the table, nothing is SECURITY
-- DEFINER or sets its own configuration, only superusers may install the
-- extension, and the install script binds nothing to objects a hostile
-- role placed in the target schema or on the search_path.
BEGIN;
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SET LOCAL kdgpu.device = 'cpu';

CREATE ROLE kd_reader;
CREATE ROLE kd_colreader;
CREATE ROLE kd_owner;
CREATE ROLE kd_bypass BYPASSRLS;
CREATE SCHEMA pv AUTHORIZATION kd_owner;
GRANT USAGE ON SCHEMA pv TO PUBLIC;
SET LOCAL search_path = pv, public;

SET ROLE kd_owner;
-- secret: no privilege for anyone but its owner
CREATE TABLE secret (id int, note text, p point);
INSERT INTO secret SELECT i, 'row ' || i, point(i % 13, i / 13) FROM generate_series(1, 200) i;
CREATE INDEX secret_idx ON secret USING kdgpu (p);
CREATE TABLE secret_v (v float8[]);
INSERT INTO secret_v SELECT ARRAY[i % 7, i / 7]::float8[] FROM generate_series(1, 50) i;
GRANT SELECT (id, note) ON secret TO kd_colreader;
-- open: readable, for the query side of kd_knn_join
CREATE TABLE open (p point);
INSERT INTO open VALUES (point(1, 1)), (point(6, 6));
GRANT SELECT ON open TO PUBLIC;
-- guarded: row-level security, readers see rows with even id
CREATE TABLE guarded (id int, p point);
INSERT INTO guarded SELECT i, point(i % 17, i / 17) FROM generate_series(1, 300) i;
CREATE INDEX guarded_idx ON guarded USING kdgpu (p);
ALTER TABLE guarded ENABLE ROW LEVEL SECURITY;
CREATE POLICY even ON guarded FOR SELECT USING (id % 2 = 0);
GRANT SELECT ON guarded TO kd_reader, kd_bypass;
-- query points under row-level security too
CREATE TABLE guarded_q (id int, p point);
INSERT INTO guarded_q SELECT i, point(i, 20 - i) FROM generate_series(1, 8) i;
ALTER TABLE guarded_q ENABLE ROW LEVEL SECURITY;
CREATE POLICY odd ON guarded_q FOR SELECT USING (id % 2 = 1);
GRANT SELECT ON guarded_q TO kd_reader;
-- forced: row-level security that applies to its owner as well
CREATE TABLE forced (id int, p point);
INSERT INTO forced SELECT i, point(i, i) FROM generate_series(1, 40) i;
ALTER TABLE forced ENABLE ROW LEVEL SECURITY;
ALTER TABLE forced FORCE ROW LEVEL SECURITY;
CREATE POLICY small ON forced USING (id <= 10);
RESET ROLE;

-- without SELECT: every table-taking signature is refused
CREATE TEMP TABLE denied (sql text, descr text);
INSERT INTO denied VALUES
  ($$SELECT * FROM kd_knn('secret', point(0,0), 3)$$, 'kd_knn'),
  ($$SELECT * FROM kd_knn('secret', 'p', point(0,0), 3)$$, 'kd_knn with a column'),
  ($$SELECT * FROM kd_knn('secret_v', '{0,0}'::float8[], 3)$$, 'kd_knn on float8[]'),
  ($$SELECT * FROM kd_knn_join('secret', ARRAY[point(0,0)], 3)$$, 'kd_knn_join (array)'),
  ($$SELECT * FROM kd_knn_join('secret', 'p', ARRAY[point(0,0)], 3)$$, 'kd_knn_join (array) with a column'),
  ($$SELECT * FROM kd_knn_join('secret_v', '{{0,0}}'::float8[], 3)$$, 'kd_knn_join (float8[])'),
  ($$SELECT * FROM kd_knn_join('secret', 'open'::regclass, 3)$$, 'kd_knn_join: the searched table'),
  ($$SELECT * FROM kd_knn_join('open', 'secret'::regclass, 3)$$, 'kd_knn_join: the query table'),
  ($$SELECT * FROM kd_knn_join('open', 'p', 'secret'::regclass, 'p', 3)$$, 'kd_knn_join: the query table, with columns'),
  ($$SELECT * FROM kd_all_knn('secret', 3)$$, 'kd_all_knn'),
  ($$SELECT * FROM kd_all_knn('secret', 'p', 3, true)$$, 'kd_all_knn with a column'),
  ($$SELECT * FROM kd_all_knn_arrays('secret', 3)$$, 'kd_all_knn_arrays'),
  ($$SELECT * FROM kd_all_knn_arrays('secret', 'p', 3)$$, 'kd_all_knn_arrays with a column'),
  ($$SELECT * FROM kd_range('secret', point(0,0), 5)$$, 'kd_range'),
  ($$SELECT * FROM kd_range('secret', 'p', point(0,0), 5)$$, 'kd_range with a column'),
  ($$SELECT * FROM kd_range('secret_v', '{0,0}'::float8[], 5)$$, 'kd_range on float8[]'),
  ($$SELECT * FROM kd_range_join('secret', ARRAY[point(0,0)], 5)$$, 'kd_range_join'),
  ($$SELECT * FROM kd_range_join('secret', ARRAY[point(0,0)], ARRAY[5::float8])$$, 'kd_range_join with radii'),
  ($$SELECT * FROM kd_range_join('secret_v', '{{0,0}}'::float8[], 5)$$, 'kd_range_join on float8[]'),
  ($$SELECT * FROM kd_box('secret', point(0,0), point(5,5))$$, 'kd_box (points)'),
  ($$SELECT * FROM kd_box('secret', box(point(0,0), point(5,5)))$$, 'kd_box (box)'),
  ($$SELECT * FROM kd_box('secret', 'p', box(point(0,0), point(5,5)))$$, 'kd_box with a column'),
  ($$SELECT * FROM kd_box('secret_v', '{0,0}'::float8[], '{5,5}'::float8[])$$, 'kd_box on float8[]'),
  ($$SELECT * FROM kd_knn('secret', point(0,0), 3, 'id')$$, 'kd_knn with a key'),
  ($$SELECT * FROM kd_knn_parts('secret', point(0,0), 3)$$, 'kd_knn_parts'),
  ($$SELECT * FROM kd_knn_join('secret', ARRAY[point(0,0)], 3, 'id')$$, 'kd_knn_join (array) with a key'),
  ($$SELECT * FROM kd_knn_join_parts('secret', ARRAY[point(0,0)], 3)$$, 'kd_knn_join_parts (array)'),
  ($$SELECT * FROM kd_knn_join('secret', 'open'::regclass, 3, 'id', 'id')$$, 'kd_knn_join with keys: the searched table'),
  ($$SELECT * FROM kd_knn_join_parts('open', 'secret'::regclass, 3)$$, 'kd_knn_join_parts: the query table'),
  ($$SELECT * FROM kd_all_knn('secret', 3, 'id')$$, 'kd_all_knn with a key'),
  ($$SELECT * FROM kd_all_knn_parts('secret', 3)$$, 'kd_all_knn_parts'),
  ($$SELECT * FROM kd_all_knn_arrays('secret', 'p', 3, 'id', true)$$, 'kd_all_knn_arrays with a column and a key'),
  ($$SELECT * FROM kd_all_knn_arrays_parts('secret', 3)$$, 'kd_all_knn_arrays_parts'),
  ($$SELECT * FROM kd_range('secret', point(0,0), 5, 'id')$$, 'kd_range with a key'),
  ($$SELECT * FROM kd_range_parts('secret', point(0,0), 5)$$, 'kd_range_parts'),
  ($$SELECT * FROM kd_range_join('secret', ARRAY[point(0,0)], ARRAY[5::float8], 'id')$$, 'kd_range_join with radii and a key'),
  ($$SELECT * FROM kd_range_join_parts('secret', ARRAY[point(0,0)], 5)$$, 'kd_range_join_parts'),
  ($$SELECT * FROM kd_box('secret', box(point(0,0), point(5,5)), 'id')$$, 'kd_box (box) with a key'),
  ($$SELECT * FROM kd_box_parts('secret', point(0,0), point(5,5))$$, 'kd_box_parts'),
  ($$SELECT * FROM kd_load('secret')$$, 'kd_load'),
  ($$SELECT * FROM kd_load('secret', 'p')$$, 'kd_load with a column'),
  ($$SELECT kd_index_check('secret_idx')$$, 'kd_index_check'),
  ($$SELECT * FROM kd_index_stats('secret_idx')$$, 'kd_index_stats');

GRANT SELECT ON denied TO PUBLIC;

SELECT plan((SELECT 2 * count(*)::int FROM denied) + 35);

-- each refused for a role with no privilege, and for one with SELECT on
-- other columns only
SET ROLE kd_reader;
SELECT throws_ok(sql, '42501', NULL, descr || ': no SELECT privilege, permission denied') FROM denied;
RESET ROLE;
SET ROLE kd_colreader;
SELECT throws_ok(sql, '42501', NULL, descr || ': SELECT on other columns only, permission denied')
  FROM denied;
RESET ROLE;
-- a column privilege on the point column is enough
SET ROLE kd_owner;
GRANT SELECT (p) ON secret TO kd_colreader;
RESET ROLE;
SET ROLE kd_colreader;
SELECT results_eq($$SELECT count(*)::int FROM kd_knn('secret', point(0,0), 5)$$, $$SELECT 5$$,
                  'SELECT on the point column is enough for kd_knn');
SELECT results_eq($$SELECT count(*)::int FROM kd_all_knn('secret', 2)$$, $$SELECT 400$$,
                  'SELECT on the point column is enough for kd_all_knn');
SELECT throws_ok($$SELECT * FROM kd_knn('secret', 'note', point(0,0), 3)$$, '42804', NULL,
                 'a readable column of another type is still not a point column');
RESET ROLE;

-- a superuser's work in the session first (kd_load, index tree loaded,
-- queries): nothing of it may serve the reader below unfiltered
DO $$
BEGIN
  PERFORM * FROM kd_load('guarded');
  PERFORM * FROM kd_knn('guarded', point(3, 3), 12);
  PERFORM * FROM kd_all_knn('guarded', 3);
END $$;
-- row-level security: the reader's answers equal its own brute force
SET ROLE kd_reader;
SELECT results_eq($$SELECT * FROM kd_knn('guarded', point(3, 3), 12)$$,
  $$SELECT ctid, p <-> point(3, 3), (row_number() OVER (ORDER BY p <-> point(3, 3), ctid))::int
      FROM guarded ORDER BY p <-> point(3, 3), ctid LIMIT 12$$,
  'kd_knn under row-level security equals the reader''s brute force');
SELECT is((SELECT count(*) FROM kd_knn('guarded', point(3, 3), 12) k JOIN guarded g ON g.ctid = k.nn_ctid
            WHERE g.id % 2 = 0), 12::bigint, 'kd_knn returns only rows the policy shows');
SELECT results_eq($$SELECT * FROM kd_all_knn('guarded', 3)$$,
  $$SELECT a.ctid, b.* FROM guarded a, LATERAL (
      SELECT o.ctid, a.p <-> o.p, (row_number() OVER (ORDER BY a.p <-> o.p, o.ctid))::int
        FROM guarded o WHERE o.ctid <> a.ctid ORDER BY a.p <-> o.p, o.ctid LIMIT 3) b ORDER BY 1, 4$$,
  'kd_all_knn under row-level security equals the reader''s brute force');
SELECT results_eq($$SELECT query_ctid, nn_ctids FROM kd_all_knn_arrays('guarded', 2)$$,
  $$SELECT a.ctid, (SELECT array_agg(o.ctid ORDER BY a.p <-> o.p, o.ctid) FROM (
      SELECT ctid, p FROM guarded o WHERE o.ctid <> a.ctid ORDER BY a.p <-> o.p, o.ctid LIMIT 2) o)
      FROM guarded a ORDER BY 1$$,
  'kd_all_knn_arrays under row-level security');
SELECT results_eq($$SELECT nn_ctid FROM kd_range('guarded', point(8, 8), 4) ORDER BY 1$$,
  $$SELECT ctid FROM guarded WHERE p <-> point(8, 8) <= 4 ORDER BY 1$$,
  'kd_range under row-level security');
SELECT results_eq($$SELECT nn_ctid FROM kd_box('guarded', box(point(2, 2), point(9, 9))) ORDER BY 1$$,
  $$SELECT ctid FROM guarded WHERE p <@ box(point(2, 2), point(9, 9)) ORDER BY 1$$,
  'kd_box under row-level security');
SELECT results_eq($$SELECT * FROM kd_knn_join('guarded', 'guarded_q'::regclass, 2) ORDER BY 1, 4$$,
  $$SELECT q.ctid, b.* FROM guarded_q q, LATERAL (
      SELECT ctid, p <-> q.p, (row_number() OVER (ORDER BY p <-> q.p, ctid))::int
        FROM guarded ORDER BY p <-> q.p, ctid LIMIT 2) b ORDER BY 1, 4$$,
  'kd_knn_join: row-level security on both tables');
SELECT is((SELECT count(DISTINCT query_ctid) FROM kd_knn_join('guarded', 'guarded_q'::regclass, 2)), 4::bigint,
  'kd_knn_join reads only the query rows the policy shows');
SELECT results_eq($$SELECT points FROM kd_load('guarded')$$, $$SELECT count(*) FROM guarded$$,
  'kd_load counts only the rows the policy shows');
CREATE TEMP TABLE reader_knn AS SELECT array_agg(nn_ctid) a FROM kd_knn('guarded', point(3, 3), 12);
SET LOCAL enable_seqscan = off;
SELECT results_eq($$SELECT ctid FROM guarded ORDER BY p <-> point(5, 5) LIMIT 9$$,
  $$SELECT ctid FROM guarded ORDER BY p <-> point(5, 5), ctid LIMIT 9$$,
  'an index scan under row-level security returns only rows the policy shows');
RESET enable_seqscan;
RESET ROLE;
-- the policy did filter: a superuser (exempt from it) gets another answer
SELECT isnt((SELECT array_agg(nn_ctid) FROM kd_knn('guarded', point(3, 3), 12)),
            (SELECT a FROM reader_knn),
            'a superuser''s answer differs from the reader''s: the policy filtered');
SET ROLE kd_bypass;
SELECT is((SELECT count(*) FROM kd_all_knn('guarded', 1)), 300::bigint, 'a BYPASSRLS role reads every row');
RESET ROLE;
SET ROLE kd_reader;
SELECT is((SELECT count(*) FROM kd_all_knn('guarded', 1)), 150::bigint,
          'the reader again, after other roles in the session: still filtered');
RESET ROLE;
-- FORCE ROW LEVEL SECURITY applies to the table owner too
SET ROLE kd_owner;
SELECT is((SELECT count(*) FROM kd_all_knn('forced', 1)), 10::bigint,
          'FORCE ROW LEVEL SECURITY applies to the owner');
SELECT results_eq($$SELECT nn_ctid FROM kd_knn('forced', point(40, 40), 3)$$,
                  $$SELECT ctid FROM forced ORDER BY p <-> point(40, 40), ctid LIMIT 3$$,
                  'kd_knn under FORCE ROW LEVEL SECURITY equals the owner''s brute force');
RESET ROLE;
-- the index check and statistics for one who may read the table
SET ROLE kd_reader;
SELECT ok(kd_index_check('guarded_idx'), 'kd_index_check for a reader of the table');
SELECT is((SELECT pages > 0 FROM kd_index_stats('guarded_idx')), true, 'kd_index_stats for a reader of the table');
RESET ROLE;

-- the catalog: nothing is SECURITY DEFINER, nothing sets its own config
CREATE TEMP VIEW ext_funcs AS
  SELECT p.* FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
   WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
     AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'kdgpu');
SELECT cmp_ok((SELECT count(*) FROM ext_funcs), '>=', 40::bigint, 'the extension''s functions are found');
SELECT is_empty($$SELECT oid::regprocedure FROM ext_funcs WHERE prosecdef$$, 'no function is SECURITY DEFINER');
SELECT is_empty($$SELECT oid::regprocedure FROM ext_funcs WHERE proconfig IS NOT NULL$$,
                'no function sets its own search_path or role');
SELECT is_empty($$SELECT oid::regprocedure FROM ext_funcs
                   WHERE prolang <> (SELECT oid FROM pg_language WHERE lanname = 'c')
                     AND (prolang <> (SELECT oid FROM pg_language WHERE lanname = 'sql')
                          OR prosrc ~ '::\s*(?!\w+\.)\w')$$,
                'every function is C, or SQL whose every cast names its schema');
SELECT is((SELECT bool_or(trusted) FROM pg_available_extension_versions WHERE name = 'kdgpu'), false,
          'the extension is not trusted: only superusers install it');

-- the install script against hostile objects: a role with CREATE on the
-- target schema and a schema first on the search_path, both holding
-- look-alike functions, operators and types, must capture nothing
CREATE ROLE kd_mallory;
CREATE SCHEMA target;
GRANT CREATE, USAGE ON SCHEMA target TO kd_mallory;
CREATE SCHEMA evil AUTHORIZATION kd_mallory;
SET ROLE kd_mallory;
CREATE FUNCTION target.kd_distance(anyarray, anyarray) RETURNS float8 LANGUAGE sql AS 'SELECT 0::float8';
CREATE FUNCTION evil.kd_distance(float8[], float8[]) RETURNS float8 LANGUAGE sql AS 'SELECT 0::float8';
CREATE OPERATOR target.<-> (LEFTARG = anyarray, RIGHTARG = anyarray, FUNCTION = target.kd_distance);
CREATE OPERATOR evil.<-> (LEFTARG = float8[], RIGHTARG = float8[], FUNCTION = evil.kd_distance);
CREATE FUNCTION evil.box_contain_pt(point, box) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR evil.<@ (LEFTARG = point, RIGHTARG = box, FUNCTION = evil.box_contain_pt);
CREATE FUNCTION evil.point_distance(point, point) RETURNS float8 LANGUAGE sql AS 'SELECT 0::float8';
CREATE OPERATOR target.<-> (LEFTARG = point, RIGHTARG = point, FUNCTION = evil.point_distance);
CREATE TYPE evil.point AS (x int);
CREATE TYPE evil.kd_ball AS (x int);
CREATE TYPE target.kd_rect AS (x int);
CREATE TYPE target.name AS (x int);
RESET ROLE;
SET client_min_messages = warning;
DROP EXTENSION kdgpu CASCADE;
SET LOCAL search_path = evil, target, public;
RESET client_min_messages;
SELECT throws_ok('CREATE EXTENSION kdgpu SCHEMA target', '42710', NULL,
                 'a look-alike of one of the extension''s types in the target schema makes CREATE EXTENSION fail, not adopt it');
DROP TYPE target.kd_rect;
SET client_min_messages = warning;
CREATE EXTENSION kdgpu SCHEMA target;
RESET client_min_messages;
CREATE TEMP VIEW ext_objs AS
  SELECT d.classid, d.objid FROM pg_depend d
   WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
     AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'kdgpu');
SELECT is_empty($$
  SELECT pg_describe_object(x.classid, x.objid, 0), pg_describe_object(d.refclassid, d.refobjid, 0)
    FROM ext_objs x JOIN pg_depend d ON d.classid = x.classid AND d.objid = x.objid
   WHERE d.deptype = 'n' AND (
         (d.refclassid = 'pg_proc'::regclass AND (SELECT proowner FROM pg_proc WHERE oid = d.refobjid) = 'kd_mallory'::regrole)
      OR (d.refclassid = 'pg_operator'::regclass AND (SELECT oprowner FROM pg_operator WHERE oid = d.refobjid) = 'kd_mallory'::regrole)
      OR (d.refclassid = 'pg_type'::regclass AND (SELECT typowner FROM pg_type WHERE oid = d.refobjid) = 'kd_mallory'::regrole))$$,
  'no object of the extension depends on a hostile function, operator or type');
SELECT is_empty($$
  SELECT p.oid::regprocedure FROM pg_proc p JOIN ext_objs x ON x.classid = 'pg_proc'::regclass AND x.objid = p.oid
   WHERE EXISTS (SELECT 1 FROM unnest(p.proargtypes::oid[] || p.prorettype) t(oid)
                  JOIN pg_type ty ON ty.oid = t.oid WHERE ty.typowner = 'kd_mallory'::regrole)$$,
  'no function of the extension takes or returns a hostile type');
SELECT is_empty($$
  SELECT amopopr::regoperator FROM pg_amop ao JOIN pg_opfamily f ON f.oid = ao.amopfamily
   WHERE f.opfmethod = (SELECT oid FROM pg_am WHERE amname = 'kdgpu')
     AND (SELECT oprowner FROM pg_operator WHERE oid = ao.amopopr) <> (SELECT oid FROM pg_roles WHERE rolname = current_user)
     AND (SELECT oprnamespace FROM pg_operator WHERE oid = ao.amopopr) <> 'pg_catalog'::regnamespace$$,
  'the operator classes use only pg_catalog''s operators and the extension''s own');
SELECT is((SELECT oprcode::regprocedure::text FROM pg_operator o JOIN ext_objs x
            ON x.classid = 'pg_operator'::regclass AND x.objid = o.oid WHERE o.oprname = '<->'),
          'target.kd_distance(double precision[],double precision[])',
          'the extension''s <-> calls the extension''s kd_distance');
SELECT is((SELECT oprcom = o.oid FROM pg_operator o JOIN ext_objs x
            ON x.classid = 'pg_operator'::regclass AND x.objid = o.oid WHERE o.oprname = '<->'), true,
          'the extension''s <-> is its own commutator');
SELECT is((SELECT p.pronamespace::regnamespace::text || '.' || p.proname || '/' || l.lanname
             FROM pg_am a JOIN pg_proc p ON p.oid = a.amhandler JOIN pg_language l ON l.oid = p.prolang
            WHERE a.amname = 'kdgpu'), 'target.kdam_handler/c',
          'the access method''s handler is the extension''s');
SELECT results_eq($$SELECT nn_ctid FROM target.kd_knn('pv.guarded'::regclass, point(3, 3), 4)$$,
                  $$SELECT ctid FROM pv.guarded ORDER BY p OPERATOR(pg_catalog.<->) point(3, 3), ctid LIMIT 4$$,
                  'the reinstalled extension answers right with the hostile path in force');
SELECT is(target.kd_distance('{0,0}'::float8[], '{3,4}'::float8[]), 5::float8,
          'the reinstalled kd_distance is the real one');
SELECT is(pg_typeof(target.kd_ball('{1,2}'::float8[], 3))::oid,
          (SELECT t.oid FROM pg_type t JOIN ext_objs x ON x.classid = 'pg_type'::regclass AND x.objid = t.oid
            WHERE t.typname = 'kd_ball'),
          'kd_ball builds the extension''s kd_ball under the hostile path');

SELECT * FROM finish();
ROLLBACK;
