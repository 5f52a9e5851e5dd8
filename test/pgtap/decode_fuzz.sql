-- Randomized float8[] and point values through the datum decoders
-- (src/datum.c), from a fixed seed: arrays of 0 to 3 dimensions, 0 to 10
-- elements per dimension, lower bounds other than 1, NULL elements, and
-- elements drawn from NaN, +-Infinity, +-0, subnormal, huge and ordinary
-- values.  An independent classifier in PL/pgSQL says what each value must
-- give (an empty point, or an error with its SQLSTATE, or a point), and
-- every decoder is checked against it: kd_distance, kd_knn's query,
-- kd_knn_join's query rows, and kd_knn over a table holding the value.  An
-- INSERT into a table with a kdgpu index takes every value, as the table
-- does: the index keeps what its tree cannot hold beside it.  Afterwards the
-- index passes kd_index_check and answers like a sequential scan.
BEGIN;
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SET LOCAL kdgpu.device = 'cpu';
SELECT setseed(0.4242);

-- a random element
CREATE FUNCTION pg_temp.elem() RETURNS float8 LANGUAGE sql VOLATILE AS $$
  SELECT (ARRAY['NaN', 'Infinity', '-Infinity', '0', '-0', '5e-324', '-2.2250738585072014e-308',
                '1e308', '-1e308', '1e-160', '3.5', '-7', '1000000.001', '42']::float8[])
         [1 + floor(random() * 14)::int]
$$;
-- a random array: shape, lower bounds, NULLs and values all random
CREATE FUNCTION pg_temp.random_array() RETURNS float8[] LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  nd int := (ARRAY[0, 1, 1, 1, 1, 1, 2, 3])[1 + floor(random() * 8)::int];
  dims int[] := '{}';
  lbs int[] := '{}';
  n int := 1;
  vals float8[] := '{}';
  txt text;
BEGIN
  IF nd = 0 THEN
    RETURN '{}'::float8[];
  END IF;
  FOR i IN 1 .. nd LOOP
    dims := dims || (1 + floor(random() * (CASE WHEN nd = 1 THEN 10 ELSE 3 END)))::int;
    lbs := lbs || (CASE WHEN random() < 0.2 THEN floor(random() * 9)::int - 4 ELSE 1 END);
    n := n * dims[i];
  END LOOP;
  FOR i IN 1 .. n LOOP
    vals := vals || (CASE WHEN random() < 0.05 THEN NULL
                          WHEN random() < 0.6 THEN (random() * 100)::numeric(10, 3)::float8
                          ELSE pg_temp.elem() END);
  END LOOP;
  -- build with the bounds: '[l1:u1][l2:u2]={...}'
  SELECT string_agg(format('[%s:%s]', lbs[i], lbs[i] + dims[i] - 1), '' ORDER BY i) INTO txt
    FROM generate_subscripts(dims, 1) i;
  RETURN (txt || '=' || pg_temp.nest(vals, dims))::float8[];
END $$;
-- the array literal of vals in the shape dims
CREATE FUNCTION pg_temp.nest(vals float8[], dims int[]) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  inner_n int := 1;
  parts text[] := '{}';
BEGIN
  IF cardinality(dims) = 1 THEN
    RETURN '{' || array_to_string(vals, ',', 'NULL') || '}';
  END IF;
  FOR i IN 2 .. cardinality(dims) LOOP
    inner_n := inner_n * dims[i];
  END LOOP;
  FOR i IN 0 .. dims[1] - 1 LOOP
    parts := parts || pg_temp.nest(vals[i * inner_n + 1 : (i + 1) * inner_n], dims[2:]);
  END LOOP;
  RETURN '{' || array_to_string(parts, ',') || '}';
END $$;
-- what a stored float8[] point must give: 'empty', a SQLSTATE, or 'point'
-- (a vector of up to 16000 coordinates, which the kNN functions search)
CREATE FUNCTION pg_temp.classify(a float8[]) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  x float8;
BEGIN
  IF array_ndims(a) IS NULL THEN RETURN 'empty'; END IF;
  IF array_ndims(a) > 1 THEN RETURN '2202E'; END IF;
  IF cardinality(a) > 16000 THEN RETURN '22023'; END IF;
  FOREACH x IN ARRAY a LOOP
    IF x IS NULL THEN RETURN '22004'; END IF;
  END LOOP;
  FOREACH x IN ARRAY a LOOP
    IF x = 'NaN' OR x IN ('Infinity', '-Infinity') THEN RETURN '22000'; END IF;
  END LOOP;
  RETURN 'point';
END $$;
-- the SQLSTATE of a statement, or 'ok'
CREATE FUNCTION pg_temp.state(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE;
END $$;
-- the distance by the definition: the square root of the sum of squared
-- differences in dimension order, in float8, where SQL's overflow and
-- underflow errors stand for the IEEE results (+Infinity, 0)
CREATE FUNCTION pg_temp.dist(a float8[], b float8[]) RETURNS float8 LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  s float8 := 0;
  d float8;
  sq float8;
  ia int := array_lower(a, 1);
  ib int := array_lower(b, 1);
BEGIN
  FOR i IN 0 .. cardinality(a) - 1 LOOP
    BEGIN
      d := a[ia + i] - b[ib + i];
    EXCEPTION WHEN numeric_value_out_of_range THEN
      d := 'Infinity';
    END;
    BEGIN
      sq := d * d;
    EXCEPTION WHEN numeric_value_out_of_range THEN
      sq := CASE WHEN abs(d) > 1 THEN 'Infinity'::float8 ELSE 0 END;
    END;
    BEGIN
      s := s + sq;
    EXCEPTION WHEN numeric_value_out_of_range THEN
      s := 'Infinity';
    END;
  END LOOP;
  RETURN sqrt(s);
END $$;

CREATE TEMP TABLE vals AS SELECT i, pg_temp.random_array() a FROM generate_series(1, 400) i;
UPDATE vals SET a = a;
CREATE TEMP TABLE cls AS SELECT i, a, pg_temp.classify(a) c FROM vals;
CREATE TEMP TABLE idx (i int, v float8[]);
INSERT INTO idx SELECT 1000 + g, ARRAY[g % 10, g / 10]::float8[] FROM generate_series(1, 60) g;
CREATE INDEX idx_v ON idx USING kdgpu (v);
CREATE TEMP TABLE plain (i int, v float8[]);
CREATE TEMP TABLE one (v float8[]);

SELECT plan(12);

SELECT cmp_ok((SELECT count(DISTINCT c) FROM cls), '>=', 5::bigint,
              'the random values cover every class (empty, point and three errors; bad_input has the 16000-coordinate limit)');
-- kd_distance against a fixed 2-D point: NULL for empty, the class's SQLSTATE,
-- or the defined distance (values of another dimension: 22000)
SELECT is_empty($$
  SELECT i, a, c, got FROM (
    SELECT i, a, c, pg_temp.state(format('SELECT kd_distance(%L::float8[], ''{1,2}'')', a)) got FROM cls) x
   WHERE got <> CASE WHEN c = 'point' AND cardinality(a) <> 2 THEN '22000'
                     WHEN c IN ('point', 'empty') THEN 'ok' ELSE c END$$,
  'kd_distance: every random value gives its class''s outcome');
SELECT is_empty($$
  SELECT i, a FROM cls
   WHERE CASE WHEN c = 'point' AND cardinality(a) = 2
              THEN kd_distance(a, '{1,2}') IS DISTINCT FROM pg_temp.dist(a, '{1,2}') END$$,
  'kd_distance: every valid 2-D value gives the defined distance, bit for bit');
SELECT is_empty($$
  SELECT i, a FROM cls WHERE CASE WHEN c = 'empty' THEN kd_distance(a, '{1,2}') IS NOT NULL END$$,
  'kd_distance: empty values give NULL');
-- kd_knn's query argument on a 2-D table
SELECT is_empty($$
  SELECT i, a, c, got FROM (
    SELECT i, a, c, pg_temp.state(format('SELECT * FROM kd_knn(''idx'', %L::float8[], 3)', a)) got FROM cls) x
   WHERE got <> CASE WHEN c = 'point' AND cardinality(a) = 2 THEN 'ok'
                     WHEN c IN ('point', 'empty') THEN '22023' ELSE c END$$,
  'kd_knn query: every random value gives its class''s outcome');
-- kd_knn_join's rows: a 2-D array is a list of points, anything else 2202E;
-- the values are checked before the table is read, its dimension after
SELECT is_empty($$
  SELECT i, a, got FROM (
    SELECT i, a, pg_temp.state(format('SELECT * FROM kd_knn_join(''idx'', %L::float8[], 3)', a)) got FROM cls) x
   WHERE got <> CASE
     WHEN array_ndims(a) IS NULL THEN 'ok'
     WHEN array_ndims(a) <> 2 THEN '2202E'
     WHEN array_length(a, 2) > 16000 THEN '22023'
     WHEN EXISTS (SELECT 1 FROM unnest(a) e WHERE e IS NULL) THEN '22004'
     WHEN EXISTS (SELECT 1 FROM unnest(a) e WHERE e = 'NaN' OR e IN ('Infinity', '-Infinity')) THEN '22000'
     WHEN array_length(a, 2) <> 2 THEN '22023'
     ELSE 'ok' END$$,
  'kd_knn_join query rows: every random value gives its outcome');
-- INSERT into the indexed table: every value is stored, as in a table
-- without an index (2-D points in the tree, every other value beside it)
SELECT is_empty($$
  SELECT i, a, c, got, want FROM (
    SELECT i, a, c, pg_temp.state(format('INSERT INTO idx VALUES (%s, %L::float8[])', i, a)) got,
           pg_temp.state(format('INSERT INTO plain VALUES (%s, %L::float8[])', i, a)) want FROM cls) x
   WHERE got <> want OR want <> 'ok'$$,
  'INSERT into a kdgpu index: every random value is stored, as in a table without an index');
-- kd_knn over a table holding the value alone: errors name the row
SELECT is_empty($$
  SELECT i, a, c, got FROM (
    SELECT i, a, c, pg_temp.state(format(
      'WITH d AS (DELETE FROM one), ins AS (INSERT INTO one VALUES (%L::float8[]))
       SELECT 1', a)) || pg_temp.state(format('SELECT * FROM kd_all_knn(''one'', 1)')) got FROM cls) x
   WHERE got <> 'ok' || CASE WHEN c IN ('point', 'empty') THEN 'ok' ELSE c END$$,
  'kd_all_knn over a stored random value: its class''s outcome');
-- the index after all the inserts
SELECT ok(kd_index_check('idx_v'), 'the index passes kd_index_check after the random inserts');
SELECT results_eq($$SELECT (SELECT count(*) FROM idx), tree_rows + pending_rows, outside_rows
                      FROM kd_index_stats('idx_v')$$,
                  $$SELECT count(*) + 60, count(*) FILTER (WHERE c = 'point' AND cardinality(a) = 2) + 60,
                           count(*) FILTER (WHERE c <> 'point' OR cardinality(a) <> 2) FROM cls$$,
                  'every value was stored: the valid 2-D points in the tree, every other value beside it');
-- <-> rejects the stored values that are not 2-D points or empty (a
-- sequential scan raises its error): delete them, so that the index holds
-- them dead, and compare the scans
DELETE FROM idx WHERE NOT (pg_temp.classify(v) = 'empty' OR (pg_temp.classify(v) = 'point' AND cardinality(v) = 2));
SET LOCAL enable_seqscan = off;
CREATE TEMP TABLE via_index AS
  SELECT q, (SELECT array_agg(d ORDER BY d) FROM (
               SELECT v <-> q d FROM idx ORDER BY v <-> q LIMIT 25) s) a
    FROM (VALUES ('{0,0}'::float8[]), ('{5,3}'), ('{1e308,-1e308}'), ('{5e-324,0}')) qs(q);
RESET enable_seqscan;
SELECT is_empty($$
  SELECT q FROM via_index v WHERE a IS DISTINCT FROM (
    SELECT array_agg(d ORDER BY d) FROM (
      SELECT kd_distance(v, q) d FROM idx WHERE cardinality(v) > 0 ORDER BY 1 LIMIT 25) s)$$,
  'index scans after the random inserts give a sequential scan''s distances (ties at +Infinity may come in any order)');
SELECT results_eq($$SELECT count(*) FROM kd_knn('idx', '{3,3}'::float8[], 1024)$$,
                  $$SELECT count(*) FROM idx WHERE cardinality(v) > 0$$,
                  'kd_knn sees every stored point, skips the empty ones');

SELECT * FROM finish();
ROLLBACK;
