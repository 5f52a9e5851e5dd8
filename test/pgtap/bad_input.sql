-- Bad input: every SQL entry point of kdgpu--0.1.sql against NULLs, empty
-- points, NaN, +-Infinity, huge and tiny magnitudes, wrong and mixed
-- dimensions, bad k, bad radii, inverted boxes, unknown and non-table
-- relations, tables with no point column or several, and every GUC at bad
-- values.  Each case is either an error with its SQLSTATE (throws_ok) or a
-- documented result checked against an independent oracle (a sequential
-- scan or brute force in SQL).  Afterwards: no message leaks "(null)" or an
-- internal error, nothing was written, every index passes kd_index_check
-- and still answers like a sequential scan, and the backend is alive.
--
-- The cases are generated: templates (one per function signature and
-- argument position) crossed with bad values, so that a new signature or a
-- new bad value is one row.  test/README.md lists the classes and counts.
--
-- Geometry and geography inputs (non-point geometries, mixed SRIDs, empty
-- geometries, M and Z mixes, geography out of range) belong to the
-- kdgpu_postgis extension: they go in test/pgtap/bad_input_postgis.sql,
-- with the same pg_temp.cases layout, once that extension is merged.
BEGIN;
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SET LOCAL kdgpu.device = 'cpu';

CREATE SCHEMA bi;
SET LOCAL search_path = bi, public;

-- good tables, with kdgpu indexes
CREATE TABLE pts (id int, p point);
INSERT INTO pts SELECT i, point(i % 10, i / 10) FROM generate_series(1, 100) i;
INSERT INTO pts VALUES (101, NULL), (102, point(1e300, -1e300)), (103, point(5e-324, 0));
CREATE INDEX pts_idx ON pts USING kdgpu (p);
CREATE TABLE vec (id int, v float8[]);
INSERT INTO vec SELECT i, ARRAY[i % 10, i / 10]::float8[] FROM generate_series(1, 100) i;
INSERT INTO vec VALUES (101, NULL), (102, '{}'), (103, '{1e300,-1e300}'), (104, '{5e-324,0}');
CREATE INDEX vec_idx ON vec USING kdgpu (v);
-- float8[] points whose squared distances overflow and underflow
CREATE TABLE big (v float8[]);
INSERT INTO big VALUES ('{1e308,1e308}'), ('{-1e308,1e308}'), ('{1e200,0}'), ('{0,0}'),
  ('{5e-324,0}'), ('{0,-5e-324}'), ('{1e-160,1e-160}'), ('{2.2250738585072014e-308,0}');
-- empty tables, and tables of only NULL and empty points
CREATE TABLE e0 (p point);
CREATE TABLE ev (v float8[]);
INSERT INTO ev VALUES (NULL), ('{}'), ('{}');
-- relations that are not readable tables, or not of the right shape
CREATE TABLE nocol (a int, b text);
CREATE TABLE twop (a point, b float8[]);
CREATE TABLE dropped (gone point, p point);
ALTER TABLE dropped DROP COLUMN gone;
INSERT INTO dropped VALUES (point(1, 1));
CREATE VIEW v AS SELECT * FROM pts;
CREATE SEQUENCE s;
CREATE TYPE comp AS (a int, p point);
CREATE TABLE parted (p point, k int) PARTITION BY LIST (k);
CREATE MATERIALIZED VIEW mv AS SELECT p FROM pts WITH NO DATA;
CREATE INDEX gi ON pts USING gist (p);
-- stored points the tree cannot hold (no index yet: CREATE INDEX keeps them
-- beside its tree)
CREATE TABLE nanrow (p point);
INSERT INTO nanrow VALUES (point(1, 1)), (point('NaN', 1));
CREATE TABLE infrow (p point);
INSERT INTO infrow VALUES (point(1, 1)), (point(1, '-Infinity'));
CREATE TABLE mixed (v float8[]);
INSERT INTO mixed VALUES ('{1,2}'), ('{1,2,3}');
CREATE TABLE twod (v float8[]);
INSERT INTO twod VALUES ('{1,2}'), ('{{1,2}}');
CREATE TABLE nullcoord (v float8[]);
INSERT INTO nullcoord VALUES ('{1,2}'), ('{1,NULL}');
CREATE TABLE ninecoord (v float8[]);
INSERT INTO ninecoord VALUES ('{1,2,3,4,5,6,7,8,9}');
CREATE TABLE widecoord (v float8[]);
INSERT INTO widecoord VALUES (array_fill(1::float8, ARRAY[16001]));
CREATE TABLE nanarr (v float8[]);
INSERT INTO nanarr VALUES ('{1,2}'), ('{Infinity,2}');

-- what the tables hold, to show that nothing was written
CREATE FUNCTION pg_temp.fingerprint() RETURNS text LANGUAGE sql AS $$
  SELECT md5(string_agg(t, '|' ORDER BY t)) FROM (
    SELECT 'pts' || ctid || id || coalesce(p::text, '-') FROM bi.pts
    UNION ALL SELECT 'vec' || ctid || id || coalesce(v::text, '-') FROM bi.vec
    UNION ALL SELECT 'big' || ctid || v::text FROM bi.big
    UNION ALL SELECT 'nanrow' || ctid || p::text FROM bi.nanrow
    UNION ALL SELECT 'mixed' || ctid || v::text FROM bi.mixed
    UNION ALL SELECT 'e0' || count(*) FROM bi.e0) f(t)
$$;
CREATE TEMP TABLE before AS SELECT pg_temp.fingerprint() AS fp;

-- the cases: (sql, expected SQLSTATE, description)
CREATE TEMP TABLE cases (id serial, sql text, state text, descr text);

-- relations: every table-taking signature against every bad relation.  A
-- template's tag says which column type its other arguments fit: a stored
-- bad point is only reached when the query is of the column's type.
CREATE TEMP TABLE rel_templates (tpl text, tag text);
INSERT INTO rel_templates VALUES
  ('kd_knn(%R, point(0,0), 3)', 'point'),
  ('kd_knn(%R, ''{0,0}''::float8[], 3)', 'array'),
  ('kd_knn_join(%R, ARRAY[point(0,0)], 3)', 'point'),
  ('kd_knn_join(%R, ''{{0,0}}''::float8[], 3)', 'array'),
  ('kd_knn_join(%R, ''pts''::regclass, 3)', 'point'),
  ('kd_knn_join(''pts'', %R, 3)', 'point'),
  ('kd_knn_join(''vec'', %R, 3)', 'array'),
  ('kd_all_knn(%R, 3)', 'none'),
  ('kd_all_knn(%R, 3, true)', 'none'),
  ('kd_all_knn_arrays(%R, 3)', 'none'),
  ('kd_range(%R, point(0,0), 1)', 'point'),
  ('kd_range(%R, ''{0,0}''::float8[], 1)', 'array'),
  ('kd_range_join(%R, ARRAY[point(0,0)], 1)', 'point'),
  ('kd_range_join(%R, ARRAY[point(0,0)], ARRAY[1::float8])', 'point'),
  ('kd_range_join(%R, ''{{0,0}}''::float8[], 1)', 'array'),
  ('kd_range_join(%R, ''{{0,0}}''::float8[], ''{1}''::float8[])', 'array'),
  ('kd_box(%R, point(0,0), point(1,1))', 'point'),
  ('kd_box(%R, ''{0,0}''::float8[], ''{1,1}''::float8[])', 'array'),
  ('kd_box(%R, box(point(0,0), point(1,1)))', 'point'),
  ('kd_load(%R)', 'none');
-- tag any: every template; point or array: templates taking a query of that
-- type or none; only point, only array: templates taking a query of that type
CREATE TEMP TABLE bad_rels (rel text, tag text, state text);
INSERT INTO bad_rels VALUES
  ('0', 'any', '42P01'),
  ('4294967295::oid', 'any', '42P01'),
  ('''v''', 'any', '42809'),
  ('''s''', 'any', '42809'),
  ('''pts_idx''', 'any', '42809'),
  ('''gi''', 'any', '42809'),
  ('''comp''', 'any', '42809'),
  ('''parted''', 'any', '42809'),
  ('''pg_toast.pg_toast_'' || (SELECT oid FROM pg_class WHERE relname = ''nocol'' AND relnamespace = ''bi''::regnamespace)', 'any', '42809'),
  ('''mv''', 'any', '55000'),
  ('''nocol''', 'any', '42703'),
  ('''twop''', 'any', '42702'),
  ('''nanrow''', 'point', '22000'),
  ('''infrow''', 'point', '22000'),
  ('''mixed''', 'array', '22000'),
  ('''nanarr''', 'array', '22000'),
  ('''twod''', 'array', '2202E'),
  ('''nullcoord''', 'array', '22004'),
  ('''widecoord''', 'array', '22023'),
  ('''vec''', 'only point', '42804'),
  ('''pts''', 'only array', '42804');
INSERT INTO cases (sql, state, descr)
  SELECT 'SELECT * FROM ' || replace(t.tpl, '%R', '(' || r.rel || ')::regclass'), r.state,
         replace(t.tpl, '%R', r.rel) || ' is ' || r.state
    FROM rel_templates t, bad_rels r
   WHERE (r.tag = 'any' OR r.tag = 'only ' || t.tag
          OR (r.tag NOT LIKE 'only %' AND t.tag IN ('none', r.tag)))
     AND NOT (t.tpl LIKE '%''pts'', \%R%' AND r.rel = '''pts''')
     AND NOT (t.tpl LIKE '%''vec'', \%R%' AND r.rel = '''vec''')
   ORDER BY t.tpl, r.rel;

-- columns: every signature with a column name against bad names
CREATE TEMP TABLE col_templates (tpl text);
INSERT INTO col_templates VALUES
  ('kd_knn(''pts'', %C, point(0,0), 3)'),
  ('kd_knn_join(''pts'', %C, ARRAY[point(0,0)], 3)'),
  ('kd_knn_join(''pts'', %C, ''pts''::regclass, ''p'', 3)'),
  ('kd_knn_join(''pts'', ''p'', ''pts''::regclass, %C, 3)'),
  ('kd_all_knn(''pts'', %C, 3)'),
  ('kd_all_knn_arrays(''pts'', %C, 3, true)'),
  ('kd_all_knn_chunks(''pts'', %C, 3, NULL, false)'),
  ('kd_knn_join_chunks(''pts'', %C, ARRAY[point(0,0)], 3, NULL)'),
  ('kd_range(''pts'', %C, point(0,0), 1)'),
  ('kd_range_join(''pts'', %C, ARRAY[point(0,0)], 1)'),
  ('kd_range_join(''pts'', %C, ARRAY[point(0,0)], ARRAY[1::float8])'),
  ('kd_box(''pts'', %C, point(0,0), point(1,1))'),
  ('kd_box(''pts'', %C, box(point(0,0), point(1,1)))'),
  ('kd_load(''pts'', %C)');
CREATE TEMP TABLE bad_cols (col text, state text);
INSERT INTO bad_cols VALUES ('nope', '42703'), ('id', '42804'), ('ctid', '42703'),
  ('', '42703'), ('P', '42703'), ('........pg.dropped.2........', '42703');
INSERT INTO cases (sql, state, descr)
  SELECT 'SELECT * FROM ' || replace(t.tpl, '%C', quote_literal(c.col) || '::name'), c.state,
         replace(t.tpl, '%C', quote_literal(c.col)) || ' is ' || c.state
    FROM col_templates t, bad_cols c ORDER BY t.tpl, c.col;
INSERT INTO cases (sql, state, descr) VALUES
  ($$SELECT * FROM kd_knn('dropped', '........pg.dropped.1........', point(0,0), 1)$$, '42703',
   'a dropped column cannot be named');

-- point query values: NaN and infinite coordinates in every query position
-- of the functions (the index's ORDER BY answers them: odd_orders below)
CREATE TEMP TABLE point_templates (tpl text);
INSERT INTO point_templates VALUES
  ('SELECT * FROM kd_knn(''pts'', %Q, 3)'),
  ('SELECT * FROM kd_knn(''pts'', ''p'', %Q, 3)'),
  ('SELECT * FROM kd_knn(''e0'', %Q, 3)'),
  ('SELECT * FROM kd_knn_join(''pts'', ARRAY[point(1,1), %Q], 3)'),
  ('SELECT * FROM kd_knn_join(''pts'', ''p'', ARRAY[%Q], 3)'),
  ('SELECT * FROM kd_range(''pts'', %Q, 1)'),
  ('SELECT * FROM kd_range(''pts'', ''p'', %Q, 1)'),
  ('SELECT * FROM kd_range_join(''pts'', ARRAY[%Q], 1)'),
  ('SELECT * FROM kd_range_join(''pts'', ARRAY[%Q, point(1,1)], ARRAY[1, 2::float8])'),
  ('SELECT * FROM kd_box(''pts'', %Q, point(1,1))'),
  ('SELECT * FROM kd_box(''pts'', point(-1,-1), %Q)'),
  ('SELECT * FROM kd_box(''pts'', ''p'', %Q, point(1,1))');
CREATE TEMP TABLE bad_points (q text, state text);
INSERT INTO bad_points VALUES
  ('point(''NaN'', 0)', '22000'), ('point(0, ''NaN'')', '22000'),
  ('point(''Infinity'', 0)', '22000'), ('point(0, ''-Infinity'')', '22000'),
  ('point(''NaN'', ''Infinity'')', '22000');
INSERT INTO cases (sql, state, descr)
  SELECT replace(t.tpl, '%Q', p.q), p.state, replace(t.tpl, '%Q', p.q) || ' is ' || p.state
    FROM point_templates t, bad_points p ORDER BY t.tpl, p.q;
INSERT INTO cases (sql, state, descr) VALUES
  ($$SELECT * FROM kd_knn_join('pts', ARRAY[point(1,1), NULL], 3)$$, '22004', 'a NULL query point in an array'),
  ($$SELECT * FROM kd_range_join('pts', ARRAY[NULL::point], 1)$$, '22004', 'a NULL centre in an array'),
  ($$SELECT * FROM kd_knn_join('pts', '{{"(1,2)"}}'::point[], 3)$$, '2202E', 'a two-dimensional point[]'),
  ($$SELECT * FROM kd_knn('pts', '{0,0}'::float8[], 3)$$, '42804', 'a float8[] query on a point column'),
  ($$SELECT * FROM kd_knn('vec', point(0,0), 3)$$, '42804', 'a point query on a float8[] column'),
  ($$SELECT * FROM kd_knn_join('vec', ARRAY[point(0,0)], 3)$$, '42804', 'point[] queries on a float8[] column'),
  ($$SELECT * FROM kd_box('vec', box(point(0,0), point(1,1)))$$, '42804', 'a box on a float8[] column');

-- float8[] query values
CREATE TEMP TABLE array_templates (tpl text);
INSERT INTO array_templates VALUES
  ('SELECT * FROM kd_knn(''vec'', %Q, 3)'),
  ('SELECT * FROM kd_knn(''vec'', ''v'', %Q, 3)'),
  ('SELECT * FROM kd_range(''vec'', %Q, 1)'),
  ('SELECT * FROM kd_range(''vec'', ''v'', %Q, 1)'),
  ('SELECT * FROM kd_box(''vec'', %Q, ''{1,1}''::float8[])'),
  ('SELECT * FROM kd_box(''vec'', ''{-1,-1}''::float8[], %Q)'),
  ('SELECT id FROM vec ORDER BY v <-> %Q LIMIT 3');
CREATE TEMP TABLE bad_arrays (q text, state text);
INSERT INTO bad_arrays VALUES
  ('{NaN,0}', '22000'), ('{0,Infinity}', '22000'), ('{-Infinity,0}', '22000'),
  ('{}', '22023'), ('{1}', '22023'), ('{1,2,3}', '22023'),
  ('{{1,2}}', '2202E'), ('{1,NULL}', '22004'), ('{NULL,NULL}', '22004'),
  ('{1,2,3,4,5,6,7,8,9}', '22023');
INSERT INTO cases (sql, state, descr)
  SELECT replace(t.tpl, '%Q', quote_literal(a.q) || '::float8[]'), a.state,
         replace(t.tpl, '%Q', quote_literal(a.q)) || ' is ' || a.state
    FROM array_templates t, bad_arrays a
   WHERE NOT (t.tpl LIKE '%ORDER BY%' AND a.q = '{}')
   ORDER BY t.tpl, a.q;
-- the index's ORDER BY with a NaN or infinite query point, or an empty
-- float8[] one, answers as a sequential scan does (pg_hypot's NaN and
-- Infinity distances, NULL distances for '{}'; ties in ctid order)
CREATE TEMP TABLE odd_orders (id serial, q text, oracle text);
INSERT INTO odd_orders (q, oracle)
  SELECT replace(t.tpl, '%Q', p.q), replace(t.oracle, '%Q', p.q)
    FROM (VALUES ('SELECT id FROM pts ORDER BY p <-> %Q LIMIT 3', 'SELECT id FROM pts ORDER BY p <-> %Q, ctid LIMIT 3'),
                 ('SELECT id FROM pts ORDER BY %Q <-> p LIMIT 3', 'SELECT id FROM pts ORDER BY %Q <-> p, ctid LIMIT 3')) t(tpl, oracle),
         bad_points p
   ORDER BY t.tpl, p.q;
INSERT INTO odd_orders (q, oracle) VALUES
  ($$SELECT id FROM vec ORDER BY v <-> '{}'::float8[] LIMIT 3$$,
   $$SELECT id FROM vec ORDER BY v <-> '{}'::float8[], ctid LIMIT 3$$);
-- float8[] query arrays (one point per row)
CREATE TEMP TABLE join_templates (tpl text);
INSERT INTO join_templates VALUES
  ('SELECT * FROM kd_knn_join(''vec'', %Q, 3)'),
  ('SELECT * FROM kd_knn_join(''vec'', ''v'', %Q, 3)'),
  ('SELECT * FROM kd_range_join(''vec'', %Q, 1)'),
  ('SELECT * FROM kd_range_join(''vec'', ''v'', %Q, 1)');
CREATE TEMP TABLE bad_joins (q text, state text);
INSERT INTO bad_joins VALUES
  ('{{NaN,0}}', '22000'), ('{{0,0},{0,Infinity}}', '22000'), ('{{1,2,3}}', '22023'),
  ('{{1}}', '22023'), ('{1,2}', '2202E'), ('{{{1,2}}}', '2202E'),
  ('{{1,2},{3,NULL}}', '22004'), ('{{1,2,3,4,5,6,7,8,9}}', '22023');
INSERT INTO cases (sql, state, descr)
  SELECT replace(t.tpl, '%Q', quote_literal(j.q) || '::float8[]'), j.state,
         replace(t.tpl, '%Q', quote_literal(j.q)) || ' is ' || j.state
    FROM join_templates t, bad_joins j ORDER BY t.tpl, j.q;

-- k: every kNN signature
CREATE TEMP TABLE k_templates (tpl text);
INSERT INTO k_templates VALUES
  ('kd_knn(''pts'', point(0,0), %K)'),
  ('kd_knn(''pts'', ''p'', point(0,0), %K)'),
  ('kd_knn(''vec'', ''{0,0}''::float8[], %K)'),
  ('kd_knn(''e0'', point(0,0), %K)'),
  ('kd_knn_join(''pts'', ARRAY[point(0,0)], %K)'),
  ('kd_knn_join(''vec'', ''{{0,0}}''::float8[], %K)'),
  ('kd_knn_join(''pts'', ''pts''::regclass, %K)'),
  ('kd_knn_join(''pts'', ''p'', ''pts''::regclass, ''p'', %K)'),
  ('kd_all_knn(''pts'', %K)'),
  ('kd_all_knn(''pts'', %K, true)'),
  ('kd_all_knn(''pts'', ''p'', %K)'),
  ('kd_all_knn(''e0'', %K)'),
  ('kd_all_knn_arrays(''pts'', %K)'),
  ('kd_all_knn_arrays(''vec'', ''v'', %K, true)'),
  ('kd_all_knn_chunks(''pts'', ''p'', %K, ''id'', false)'),
  ('kd_knn_join_chunks(''pts'', ''p'', ARRAY[point(0,0)], %K, ''id'')');
INSERT INTO cases (sql, state, descr)
  SELECT 'SELECT * FROM ' || replace(t.tpl, '%K', k), '22023', replace(t.tpl, '%K', k) || ' is 22023'
    FROM k_templates t, unnest(ARRAY['0', '-1', '(-2147483648)', '1025', '1000001', '2147483647']) k
   ORDER BY t.tpl, k;

-- radii
CREATE TEMP TABLE r_templates (tpl text);
INSERT INTO r_templates VALUES
  ('kd_range(''pts'', point(0,0), %r)'),
  ('kd_range(''pts'', ''p'', point(0,0), %r)'),
  ('kd_range(''vec'', ''{0,0}''::float8[], %r)'),
  ('kd_range(''e0'', point(0,0), %r)'),
  ('kd_range_join(''pts'', ARRAY[point(0,0)], %r)'),
  ('kd_range_join(''pts'', ARRAY[point(0,0), point(1,1)], ARRAY[1, %r])'),
  ('kd_range_join(''vec'', ''{{0,0}}''::float8[], %r)'),
  ('kd_range_join(''vec'', ''v'', ''{{0,0}}''::float8[], ARRAY[%r])');
INSERT INTO cases (sql, state, descr)
  SELECT 'SELECT * FROM ' || replace(t.tpl, '%r', r), '22023', replace(t.tpl, '%r', r) || ' is 22023'
    FROM r_templates t,
         unnest(ARRAY['(-1)::float8', '''-Infinity''::float8', '''NaN''::float8', '(-1e-320)::float8', '(-1e308)::float8']) r
   ORDER BY t.tpl, r;
INSERT INTO cases (sql, state, descr) VALUES
  ($$SELECT * FROM kd_range_join('pts', ARRAY[point(0,0), point(1,1)], ARRAY[1::float8])$$, '22023', 'fewer radii than centres'),
  ($$SELECT * FROM kd_range_join('pts', ARRAY[point(0,0)], ARRAY[1, 2::float8])$$, '22023', 'more radii than centres'),
  ($$SELECT * FROM kd_range_join('pts', ARRAY[point(0,0)], '{}'::float8[])$$, '22023', 'no radii'),
  ($$SELECT * FROM kd_range_join('pts', ARRAY[point(0,0)], '{{1}}'::float8[])$$, '22023', 'a two-dimensional radii array'),
  ($$SELECT * FROM kd_range_join('pts', ARRAY[point(0,0), point(1,1)], ARRAY[1, NULL]::float8[])$$, '22004', 'a NULL radius'),
  ($$SELECT * FROM kd_range_join('vec', '{{0,0},{1,1}}'::float8[], ARRAY[2::float8])$$, '22023', 'radii and float8[] centres of different lengths');

-- boxes
INSERT INTO cases (sql, state, descr) VALUES
  ($$SELECT * FROM kd_box('pts', point(5,5), point(1,10))$$, '22023', 'kd_box(point): low x above high x'),
  ($$SELECT * FROM kd_box('pts', point(1,5), point(5,1))$$, '22023', 'kd_box(point): low y above high y'),
  ($$SELECT * FROM kd_box('pts', 'p', point(5,5), point(1,1))$$, '22023', 'kd_box(col, point): inverted'),
  ($$SELECT * FROM kd_box('vec', '{2,0}'::float8[], '{1,1}'::float8[])$$, '22023', 'kd_box(float8[]): inverted in dimension 1'),
  ($$SELECT * FROM kd_box('vec', '{0,2}'::float8[], '{1,1}'::float8[])$$, '22023', 'kd_box(float8[]): inverted in dimension 2'),
  ($$SELECT * FROM kd_box('vec', 'v', '{2,2}'::float8[], '{1,1}'::float8[])$$, '22023', 'kd_box(col, float8[]): inverted'),
  ($$SELECT * FROM kd_box('vec', '{0,0}'::float8[], '{1}'::float8[])$$, '22023', 'kd_box: corners of different dimensions'),
  ($$SELECT * FROM kd_box('vec', '{0}'::float8[], '{1,1}'::float8[])$$, '22023', 'kd_box: low corner of the wrong dimension'),
  ($$SELECT * FROM kd_box('ev', '{0}'::float8[], '{1,1}'::float8[])$$, '22023', 'kd_box on a table of empty points: corners of different dimensions'),
  ($$SELECT * FROM kd_box('vec', '{0,0}'::float8[], '{1,1,1}'::float8[])$$, '22023', 'kd_box: high corner of the wrong dimension');

-- kd_ball and kd_rect regions, through the index (<@) and kd_within
INSERT INTO cases (sql, state, descr)
  SELECT replace(t, '%B', b), st, replace(t, '%B', b) || ' is ' || st
    FROM unnest(ARRAY['SELECT id FROM %T WHERE %C <@ %B', 'SELECT kd_within(%C, %B) FROM %T']) t0,
         LATERAL (VALUES
           ('pts', 'p', 'kd_ball(point(1,1), -1)', '22023'),
           ('pts', 'p', 'kd_ball(point(1,1), ''NaN'')', '22023'),
           ('pts', 'p', 'kd_ball(point(''NaN'',1), 1)', '22000'),
           ('pts', 'p', 'kd_ball(point(1,''-Infinity''), 1)', '22000'),
           ('vec', 'v', 'kd_ball(''{1,1}''::float8[], -1e-320)', '22023'),
           ('vec', 'v', 'kd_ball(''{1,1,1}''::float8[], 1)', '22023'),
           ('vec', 'v', 'kd_ball(''{}''::float8[], 1)', '22023'),
           ('vec', 'v', 'kd_ball(''{NaN,1}''::float8[], 1)', '22000'),
           ('vec', 'v', 'kd_ball(''{{1,1}}''::float8[], 1)', '2202E'),
           ('vec', 'v', 'kd_ball(''{1,NULL}''::float8[], 1)', '22004'),
           ('vec', 'v', 'kd_rect(''{2,2}''::float8[], ''{1,1}''::float8[])', '22023'),
           ('vec', 'v', 'kd_rect(''{1,1}''::float8[], ''{1,1,1}''::float8[])', '22023'),
           ('vec', 'v', 'kd_rect(''{NaN,1}''::float8[], ''{3,3}''::float8[])', '22000'),
           ('vec', 'v', 'kd_rect(''{0,0}''::float8[], ''{Infinity,3}''::float8[])', '22000')) r(tab, col, b, st),
         LATERAL (SELECT replace(replace(t0, '%T', tab), '%C', col) t) tt
   WHERE NOT (t0 LIKE '%kd_within%' AND b LIKE 'kd_rect%')
   ORDER BY 1;

-- index check, statistics: relations that are not kdgpu indexes
INSERT INTO cases (sql, state, descr)
  SELECT format('SELECT * FROM %s((%s)::regclass)', f, r), st, format('%s(%s) is %s', f, r, st)
    FROM unnest(ARRAY['kd_index_check', 'kd_index_stats']) f,
         (VALUES ('0', '42P01'), ('4294967295::oid', '42P01'), ('''pts''', '42809'), ('''v''', '42809'),
                 ('''s''', '42809'), ('''gi''', '42809'), ('''comp''', '42809'), ('''mv''', '42809'),
                 ('''pg_class_oid_index''', '42809')) r(r, st)
   ORDER BY 1;

-- kd_distance and <->
INSERT INTO cases (sql, state, descr) VALUES
  ($$SELECT kd_distance('{NaN,0}', '{0,0}')$$, '22000', 'kd_distance: NaN'),
  ($$SELECT kd_distance('{0,0}', '{0,-Infinity}')$$, '22000', 'kd_distance: -Infinity'),
  ($$SELECT kd_distance('{1,2}', '{1,2,3}')$$, '22000', 'kd_distance: mixed dimensions'),
  ($$SELECT kd_distance('{{1,2}}', '{1,2}')$$, '2202E', 'kd_distance: a two-dimensional array'),
  ($$SELECT kd_distance('{1,NULL}', '{1,2}')$$, '22004', 'kd_distance: a NULL coordinate'),
  ($$SELECT kd_distance(array_fill(1::float8, ARRAY[16001]), array_fill(1::float8, ARRAY[16001]))$$, '22023', 'kd_distance: 16001 coordinates'),
  ($$SELECT '{1,2}'::float8[] <-> '{1}'::float8[]$$, '22000', '<->: mixed dimensions'),
  ($$SELECT '{1,2}'::float8[] <-> '{Infinity,1}'::float8[]$$, '22000', '<->: infinite');

-- the index access method: what it refuses
INSERT INTO cases (sql, state, descr) VALUES
  ('CREATE INDEX ON pts USING kdgpu (id)', '42704', 'CREATE INDEX on an integer column'),
  ('CREATE INDEX ON pts USING kdgpu (p, p)', '0A000', 'a multicolumn kdgpu index'),
  ('CREATE UNIQUE INDEX ON pts USING kdgpu (p)', '0A000', 'a unique kdgpu index'),
  ('CREATE INDEX ON twop USING kdgpu (a) INCLUDE (b)', '0A000', 'a kdgpu index INCLUDE of a varlena column'),
  ('CREATE INDEX ON pts USING kdgpu (p) WITH (fillfactor = 50)', '22023', 'a kdgpu index with a storage parameter'),
  ('CREATE INDEX ON pts USING kdgpu (p point_ops)', '42704', 'an unknown operator class'),
  ('CREATE INDEX ON vec USING kdgpu (v kd_point_ops)', '42804', 'the point operator class on float8[]');
-- the index access method: building over and writing values the tree cannot
-- hold (NaN, infinite, other dimensions, not a point).  The table takes
-- them, so the index must: it keeps them beside its tree, passes
-- kd_index_check, and answers the probes below as a sequential scan does
-- (where the operator rejects such a row in a sequential scan, the index
-- scan raises the same error).  Each statement is undone afterwards.
CREATE TEMP TABLE takes (id serial, stmt text, idx text, tab text, col text, kind text, what text);
INSERT INTO takes (stmt, idx, tab, col, kind, what) VALUES
  ('CREATE INDEX nanrow_idx ON nanrow USING kdgpu (p)', 'nanrow_idx', 'nanrow', 'p', 'point', 'CREATE INDEX over a NaN point'),
  ('CREATE INDEX infrow_idx ON infrow USING kdgpu (p)', 'infrow_idx', 'infrow', 'p', 'point', 'CREATE INDEX over an infinite point'),
  ('CREATE INDEX mixed_idx ON mixed USING kdgpu (v)', 'mixed_idx', 'mixed', 'v', 'array', 'CREATE INDEX over mixed dimensions'),
  ('CREATE INDEX nanarr_idx ON nanarr USING kdgpu (v)', 'nanarr_idx', 'nanarr', 'v', 'array', 'CREATE INDEX over an infinite float8[] point'),
  ('CREATE INDEX twod_idx ON twod USING kdgpu (v)', 'twod_idx', 'twod', 'v', 'array', 'CREATE INDEX over a two-dimensional array'),
  ('CREATE INDEX nullcoord_idx ON nullcoord USING kdgpu (v)', 'nullcoord_idx', 'nullcoord', 'v', 'array', 'CREATE INDEX over a NULL coordinate'),
  ('CREATE INDEX ninecoord_idx ON ninecoord USING kdgpu (v)', 'ninecoord_idx', 'ninecoord', 'v', 'array', 'CREATE INDEX over 9 coordinates'),
  ($$CREATE INDEX pts_nan_idx ON pts USING kdgpu ((point(id, 'NaN')))$$, 'pts_nan_idx', 'pts', $$point(id, 'NaN')$$, 'point',
   'an expression index yielding NaN'),
  ($$INSERT INTO pts VALUES (0, point('NaN', 0))$$, 'pts_idx', 'pts', 'p', 'point', 'INSERT a NaN point into an index'),
  ($$INSERT INTO pts VALUES (0, point(0, 'Infinity'))$$, 'pts_idx', 'pts', 'p', 'point', 'INSERT an infinite point into an index'),
  ($$INSERT INTO pts VALUES (0, point(1, 1)), (0, point('-Infinity', 0))$$, 'pts_idx', 'pts', 'p', 'point', 'INSERT a good and a bad row'),
  ($$UPDATE pts SET p = point('NaN', 0) WHERE id = 1$$, 'pts_idx', 'pts', 'p', 'point', 'UPDATE a point to NaN'),
  ($$INSERT INTO vec VALUES (0, '{1,2,3}')$$, 'vec_idx', 'vec', 'v', 'array', 'INSERT a point of the wrong dimension'),
  ($$INSERT INTO vec VALUES (0, '{1}')$$, 'vec_idx', 'vec', 'v', 'array', 'INSERT a point of too few dimensions'),
  ($$INSERT INTO vec VALUES (0, '{{1,2}}')$$, 'vec_idx', 'vec', 'v', 'array', 'INSERT a two-dimensional array'),
  ($$INSERT INTO vec VALUES (0, '{1,NULL}')$$, 'vec_idx', 'vec', 'v', 'array', 'INSERT a NULL coordinate'),
  ($$INSERT INTO vec VALUES (0, '{1,2,3,4,5,6,7,8,9}')$$, 'vec_idx', 'vec', 'v', 'array', 'INSERT 9 coordinates'),
  ($$INSERT INTO vec VALUES (0, '{NaN,1}')$$, 'vec_idx', 'vec', 'v', 'array', 'INSERT a NaN float8[] point'),
  ($$UPDATE vec SET v = v || 1::float8 WHERE id = 1$$, 'vec_idx', 'vec', 'v', 'array', 'UPDATE a point to another dimension'),
  ($$INSERT INTO vec SELECT 0, ARRAY[i, i]::float8[] FROM generate_series(1, 50) i UNION ALL SELECT 0, '{NaN,0}'$$,
   'vec_idx', 'vec', 'v', 'array', 'a bad row after 50 good ones'),
  ($$COPY vec FROM PROGRAM 'printf "0\t{1,Infinity}\n"'$$, 'vec_idx', 'vec', 'v', 'array', 'COPY an infinite point');
-- the probes: an ORDER BY and a range query over every row (%T the table,
-- %C the indexed column or expression), and their sequential-scan oracles
CREATE TEMP TABLE probes (id serial, kind text, descr text, q text, oracle text);
INSERT INTO probes (kind, q, oracle) VALUES
  ('point', 'SELECT ctid, %C FROM %T ORDER BY %C <-> point(0.5, 0.5)',
            'SELECT ctid, %C FROM %T ORDER BY %C <-> point(0.5, 0.5), ctid'),
  ('point', $$SELECT ctid, %C FROM %T WHERE %C <@ box(point('-Infinity', '-Infinity'), point('Infinity', 'Infinity')) ORDER BY ctid$$,
            $$SELECT ctid, %C FROM %T WHERE %C <@ box(point('-Infinity', '-Infinity'), point('Infinity', 'Infinity')) ORDER BY ctid$$),
  ('array', $$SELECT ctid, %C FROM %T ORDER BY %C <-> '{0.5,0.5}'::float8[]$$,
            $$SELECT ctid, %C FROM %T ORDER BY %C <-> '{0.5,0.5}'::float8[], ctid$$),
  ('array', $$SELECT ctid, %C FROM %T WHERE %C <@ kd_ball('{0,0}'::float8[], 'Infinity') ORDER BY ctid$$,
            $$SELECT ctid, %C FROM %T WHERE %C <@ kd_ball('{0,0}'::float8[], 'Infinity') ORDER BY ctid$$);

-- GUCs
INSERT INTO cases (sql, state, descr) VALUES
  ($$SET kdgpu.device = 'tpu'$$, '22023', 'kdgpu.device: unknown value'),
  ($$SET kdgpu.device = ''$$, '22023', 'kdgpu.device: empty'),
  ($$SET kdgpu.device = 1$$, '22023', 'kdgpu.device: a number'),
  ($$SET kdgpu.gpu_min_points = -1$$, '22023', 'kdgpu.gpu_min_points: negative'),
  ($$SET kdgpu.gpu_min_points = 2147483648$$, '22023', 'kdgpu.gpu_min_points: above INT_MAX'),
  ($$SET kdgpu.gpu_min_points = 'many'$$, '22023', 'kdgpu.gpu_min_points: text'),
  ($$SET kdgpu.gpu_memory_limit = '-1MB'$$, '22023', 'kdgpu.gpu_memory_limit: negative'),
  ($$SET kdgpu.gpu_memory_limit = '3PB'$$, '22023', 'kdgpu.gpu_memory_limit: beyond the range'),
  ($$SET kdgpu.gpu_memory_limit = '10 parsecs'$$, '22023', 'kdgpu.gpu_memory_limit: unknown unit'),
  ($$SET kdgpu.cpu_threads = -1$$, '22023', 'kdgpu.cpu_threads: negative'),
  ($$SET kdgpu.cpu_threads = 1025$$, '22023', 'kdgpu.cpu_threads: above 1024'),
  ($$SET kdgpu.cpu_threads = 'all'$$, '22023', 'kdgpu.cpu_threads: text'),
  ($$SET kdgpu.no_such_setting = 1$$, '42602', 'an unknown kdgpu.* setting'),
  ($$SELECT set_config('kdgpu.cpu_threads', '99999', true)$$, '22023', 'set_config outside the range');

-- helpers: plan_text, outcome, index_and_seqscan, same_outcome, takes
\ir include/index_compare.sql


SELECT plan((SELECT count(*)::int FROM cases) + 54 + (SELECT count(*)::int FROM odd_orders)
            + (SELECT sum(2 + (SELECT count(*) FROM probes p WHERE p.kind = t.kind))::int FROM takes t));

SET LOCAL enable_seqscan = off;
SELECT throws_ok(sql, state, NULL, descr) FROM cases ORDER BY id;
SELECT is(count(*), 0::bigint, 'the index served the ORDER BY cases: '
          || 'each is an Index Scan') FROM (VALUES
  ($$SELECT id FROM pts ORDER BY p <-> point(0,0) LIMIT 3$$),
  ($$SELECT id FROM vec ORDER BY v <-> '{0,0}'::float8[] LIMIT 3$$)) q(sql)
 WHERE NOT EXISTS (SELECT 1 FROM (SELECT pg_temp.plan_text(sql) t) p WHERE t ~ 'Index (Only )?Scan using');
RESET enable_seqscan;

-- every message names its problem: no "(null)", no internal error
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
                   WHERE m IS NULL OR m ~* '\(null\)|cache lookup|unrecognized|unexpected|internal'$$,
                'every error message names the problem');

-- ORDER BY with odd query values, and values the tree cannot hold: through
-- the index as through a sequential scan
SELECT pg_temp.same_outcome(pg_temp.index_and_seqscan(q, oracle), 'index scan = sequential scan: ' || q)
  FROM odd_orders ORDER BY id;
SET LOCAL client_min_messages = warning;
SELECT pg_temp.takes(stmt, idx, tab, col, kind, what) FROM takes ORDER BY id;
RESET client_min_messages;

-- documented results: STRICT functions return nothing for NULL arguments
SELECT is_empty($$SELECT * FROM kd_knn('pts', NULL::point, 3)$$, 'kd_knn: a NULL query returns no rows');
SELECT is_empty($$SELECT * FROM kd_knn('pts', point(0,0), NULL)$$, 'kd_knn: a NULL k returns no rows');
SELECT is_empty($$SELECT * FROM kd_knn(NULL, point(0,0), 3)$$, 'kd_knn: a NULL table returns no rows');
SELECT is_empty($$SELECT * FROM kd_range('pts', point(0,0), NULL)$$, 'kd_range: a NULL radius returns no rows');
SELECT is_empty($$SELECT * FROM kd_all_knn('pts', 3, NULL)$$, 'kd_all_knn: a NULL include_self returns no rows');
SELECT is_empty($$SELECT * FROM kd_box('pts', NULL::box)$$, 'kd_box: a NULL box returns no rows');
SELECT is(kd_distance('{}', '{1,2}'), NULL, 'kd_distance: an empty point gives NULL');
-- empty tables, and tables of only NULL and empty points: no rows
SELECT is_empty($$SELECT * FROM kd_knn('e0', point(0,0), 3)$$, 'kd_knn on an empty table');
SELECT is_empty($$SELECT * FROM kd_all_knn_arrays('e0', 3)$$, 'kd_all_knn_arrays on an empty table');
SELECT is_empty($$SELECT * FROM kd_knn('ev', '{1,2,3,4,5,6,7,8}'::float8[], 3)$$,
                'kd_knn on a table of NULL and empty points: no rows, any dimension');
SELECT is_empty($$SELECT * FROM kd_knn_join('ev', '{}'::float8[], 3)$$, 'kd_knn_join with no queries');
SELECT is_empty($$SELECT * FROM kd_knn_join('pts', '{}'::point[], 3)$$, 'kd_knn_join with an empty point[]');
SELECT is_empty($$SELECT * FROM kd_range_join('pts', '{}'::point[], 1)$$, 'kd_range_join with no centres');
SELECT is_empty($$SELECT * FROM kd_all_knn('ev', 3)$$, 'kd_all_knn over NULL and empty points');
SELECT results_eq($$SELECT points, dimensions FROM kd_load('ev')$$, $$VALUES (0::bigint, NULL::int)$$,
                  'kd_load of a table without points: 0 points, no dimension');
-- regions with NULL parts select nothing
SELECT is_empty($$SELECT id FROM vec WHERE v <@ kd_rect(NULL, '{3,3}'::float8[])$$, 'kd_rect with a NULL corner selects nothing');
SELECT is_empty($$SELECT id FROM vec WHERE v <@ ROW(NULL, 1)::kd_ball$$, 'a kd_ball with a NULL center selects nothing');
SELECT is_empty($$SELECT id FROM vec WHERE v <@ ROW('{1,1}', NULL)::kd_ball$$, 'a kd_ball with a NULL radius selects nothing');
-- radius +Infinity and boxes of infinite extent: every point
SELECT results_eq($$SELECT count(*) FROM kd_range('pts', point(0,0), 'Infinity')$$,
                  $$SELECT count(p) FROM pts$$, 'kd_range: radius Infinity returns every point');
SELECT results_eq($$SELECT count(*) FROM kd_range('vec', '{0,0}'::float8[], 1e308)$$,
                  $$SELECT count(*) FROM vec WHERE v <-> '{0,0}' <= 1e308$$, 'kd_range: radius 1e308 equals the operator');
SELECT results_eq($$SELECT nn_ctid FROM kd_box('pts', box(point(5,5), point(1,1))) ORDER BY 1$$,
                  $$SELECT ctid FROM pts WHERE p <@ box(point(1,1), point(5,5)) ORDER BY 1$$,
                  'kd_box(box): a box given with swapped corners is normalized, as box does');
-- k above the row count, radius 0
SELECT results_eq($$SELECT count(*)::int FROM kd_knn('vec', '{0,0}'::float8[], 1024)$$, $$SELECT 102$$,
                  'kd_knn: k above the row count returns every point');
SELECT results_eq($$SELECT nn_ctid FROM kd_range('pts', point(3,4), 0)$$,
                  $$SELECT ctid FROM pts WHERE p ~= point(3,4) ORDER BY ctid$$, 'kd_range: radius 0 returns exact matches');
-- huge and tiny magnitudes in float8[]: the function equals the operator
SELECT results_eq(format($$SELECT * FROM kd_knn('big', %L::float8[], 8)$$, q),
                  format($$SELECT ctid, v <-> %L::float8[], (row_number() OVER (ORDER BY v <-> %L::float8[], ctid))::int
                             FROM big ORDER BY v <-> %L::float8[], ctid$$, q, q, q),
                  'kd_knn on huge and subnormal float8[] points from ' || q)
  FROM unnest(ARRAY['{0,0}', '{1e308,-1e308}', '{5e-324,5e-324}']) q;
SELECT results_eq($$SELECT * FROM kd_all_knn('big', 3)$$,
                  $$SELECT a.ctid, b.* FROM big a, LATERAL (
                      SELECT o.ctid, a.v <-> o.v, (row_number() OVER (ORDER BY a.v <-> o.v, o.ctid))::int
                        FROM big o WHERE o.ctid <> a.ctid ORDER BY a.v <-> o.v, o.ctid LIMIT 3) b ORDER BY 1, 4$$,
                  'kd_all_knn on huge and subnormal float8[] points');
-- index scans with odd but valid arguments answer like a sequential scan
CREATE FUNCTION pg_temp.same_as_seqscan(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  got text;
  want text;
BEGIN
  SET LOCAL enable_seqscan = off;
  EXECUTE format('SELECT string_agg(x::text, %L) FROM (%s) x', ';', q) INTO got;
  SET LOCAL enable_seqscan = on;
  SET LOCAL enable_indexscan = off;
  SET LOCAL enable_bitmapscan = off;
  EXECUTE format('SELECT string_agg(x::text, %L) FROM (%s) x', ';', q) INTO want;
  RESET enable_indexscan;
  RESET enable_bitmapscan;
  RETURN is(got, want, 'index scan = sequential scan: ' || q);
END $$;
SELECT pg_temp.same_as_seqscan(q) FROM unnest(ARRAY[
  $$SELECT id FROM pts WHERE p <@ circle(point(5,5), -1) ORDER BY id$$,
  $$SELECT id FROM pts WHERE p <@ circle(point(5,5), 'NaN') ORDER BY id$$,
  $$SELECT id FROM pts WHERE p <@ circle(point(5,5), 'Infinity') ORDER BY id$$,
  $$SELECT id FROM pts WHERE p <@ circle(point('NaN',5), 3) ORDER BY id$$,
  $$SELECT id FROM pts WHERE p <@ box(point('NaN',5), point(3,3)) ORDER BY id$$,
  $$SELECT id FROM pts WHERE p <@ box(point('-Infinity',0), point(2,2)) ORDER BY id$$,
  $$SELECT id FROM pts WHERE p <@ NULL::box ORDER BY id$$,
  $$SELECT id, p <-> point(2.5, 3.5) FROM pts ORDER BY p <-> point(2.5, 3.5), id LIMIT 12$$,
  $$SELECT v <-> '{5e-324,0}' FROM vec ORDER BY v <-> '{5e-324,0}' LIMIT 5$$,
  $$SELECT id FROM pts WHERE p <@ kd_ball(point(1,1), 'Infinity') ORDER BY id$$]) q;
-- rows whose point is NULL come last from an index-ordered scan, as GiST's do
SELECT pg_temp.same_as_seqscan(
  $$SELECT count(*) FROM (SELECT id FROM pts ORDER BY p <-> point(0,0) LIMIT 1000) s$$);
SELECT pg_temp.same_as_seqscan(
  $$SELECT array_agg(id) FROM (SELECT id FROM pts ORDER BY p <-> point(0,0), id LIMIT 1000) s$$);

-- every GUC at the ends of its range: the same exact answers (with
-- kdgpu.device = auto, so that a GPU, where there is one, takes its part)
CREATE FUNCTION pg_temp.allknn_under(setting text, value text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r text;
BEGIN
  PERFORM set_config('kdgpu.device', 'auto', true);
  PERFORM set_config(setting, value, true);
  r := results_eq($q$SELECT * FROM kd_all_knn('pts', 3)$q$,
    $q$SELECT a.ctid, b.* FROM pts a, LATERAL (
         SELECT o.ctid, a.p <-> o.p, (row_number() OVER (ORDER BY a.p <-> o.p, o.ctid))::int
           FROM pts o WHERE o.ctid <> a.ctid AND o.p IS NOT NULL ORDER BY a.p <-> o.p, o.ctid LIMIT 3) b
        WHERE a.p IS NOT NULL ORDER BY 1, 4$q$,
    format('kd_all_knn with %s = %s equals brute force', setting, value));
  PERFORM set_config(setting, NULL, true);
  PERFORM set_config('kdgpu.device', 'cpu', true);
  RETURN r;
END $$;
SELECT pg_temp.allknn_under(s, v) FROM (VALUES
  ('kdgpu.cpu_threads', '1'), ('kdgpu.cpu_threads', '1024'), ('kdgpu.cpu_threads', '0'),
  ('kdgpu.gpu_min_points', '0'), ('kdgpu.gpu_min_points', '2147483647'),
  ('kdgpu.gpu_memory_limit', '1MB'), ('kdgpu.gpu_memory_limit', '2147483647MB'),
  ('kdgpu.device', 'cpu')) sv(s, v);

-- nothing was written, the indexes are sound, the backend is alive
SELECT is(pg_temp.fingerprint(), (SELECT fp FROM before), 'no table changed');
SELECT ok(kd_index_check('pts_idx') AND kd_index_check('vec_idx'), 'the indexes pass kd_index_check');
SELECT pg_temp.same_as_seqscan(
  $$SELECT id FROM pts WHERE p <@ box(point('-Infinity','-Infinity'), point('Infinity','Infinity')) ORDER BY id$$);
SELECT pg_temp.same_as_seqscan($$SELECT id FROM vec ORDER BY v <-> '{3,3}', id LIMIT 101$$);
SELECT is(pg_backend_pid(), (SELECT pid FROM pg_stat_activity WHERE pid = pg_backend_pid()),
          'the backend that ran every case is alive');

SELECT * FROM finish();
ROLLBACK;
