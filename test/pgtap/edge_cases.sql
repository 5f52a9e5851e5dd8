-- Edge cases against brute force in SQL: coordinates whose squares overflow
-- or underflow, large offsets with millimetre spacing, all points equal,
-- collinear points, tiny tables, NULL and empty points; and errors.
BEGIN;
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;

SELECT plan(21);
SELECT setseed(0.9);

CREATE FUNCTION pg_temp.knn_matches(t text, q point, k int) RETURNS text LANGUAGE sql AS $f$
  SELECT results_eq(
    format('SELECT * FROM kd_knn(%L, %L::point, %s)', t, q, k),
    format($$SELECT ctid, p <-> %L::point, (row_number() OVER (ORDER BY p <-> %L::point, ctid))::int
               FROM %I WHERE p IS NOT NULL ORDER BY p <-> %L::point, ctid LIMIT %s$$, q, q, t, q, k),
    format('kd_knn(%s, %s, %s)', t, q, k))
$f$;
CREATE FUNCTION pg_temp.all_knn_matches(t text, k int) RETURNS text LANGUAGE sql AS $f$
  SELECT results_eq(
    format('SELECT * FROM kd_all_knn(%L, %s)', t, k),
    format($$SELECT a.ctid, b.* FROM %I a, LATERAL (
               SELECT o.ctid, a.p <-> o.p, (row_number() OVER (ORDER BY a.p <-> o.p, o.ctid))::int
                 FROM %I o WHERE o.ctid <> a.ctid AND o.p IS NOT NULL ORDER BY a.p <-> o.p, o.ctid LIMIT %s) b
             WHERE a.p IS NOT NULL ORDER BY 1, 4$$, t, t, k),
    format('kd_all_knn(%s, %s)', t, k))
$f$;

-- squares that overflow (|dx| > 1e154) and underflow (|dx| < 1e-162)
CREATE TEMP TABLE huge (p point);
INSERT INTO huge SELECT point((random() - 0.5) * 1e300, (random() - 0.5) * 1e300) FROM generate_series(1, 200);
INSERT INTO huge VALUES (point(1e300, 1e300)), (point(-1e300, -1e300)), (point(1e300, -1e300));
CREATE TEMP TABLE tiny (p point);
INSERT INTO tiny SELECT point((random() - 0.5) * 1e-300, (random() - 0.5) * 1e-300) FROM generate_series(1, 200);
INSERT INTO tiny VALUES (point(0, 0)), (point(1e-310, 0)), (point(0, -2e-310)), (point(1e-320, 1e-320));
SELECT pg_temp.knn_matches('huge', point(0, 0), 10);
SELECT pg_temp.knn_matches('huge', point(1e300, 1e300), 5);
SELECT pg_temp.all_knn_matches('huge', 4);
SELECT pg_temp.knn_matches('tiny', point(0, 0), 10);
SELECT pg_temp.all_knn_matches('tiny', 4);

-- UTM-like metres with millimetre spacing: pg_hypot and sqrt(d2) disagree
CREATE TEMP TABLE utm (p point);
INSERT INTO utm SELECT point(500000 + round(random() * 2000) / 1000, 5400000 + round(random() * 2000) / 1000)
  FROM generate_series(1, 1500);
SELECT pg_temp.knn_matches('utm', point(500001.0005, 5400001.0005), 25);
SELECT pg_temp.all_knn_matches('utm', 8);

-- all points equal, collinear points
CREATE TEMP TABLE same (p point);
INSERT INTO same SELECT point(3, 4) FROM generate_series(1, 300);
SELECT pg_temp.knn_matches('same', point(3, 4), 20);
SELECT pg_temp.all_knn_matches('same', 5);
CREATE TEMP TABLE line (p point);
INSERT INTO line SELECT point(i * 0.5, i * 0.25) FROM generate_series(1, 400) i;
INSERT INTO line SELECT point(i * 0.5, i * 0.25) FROM generate_series(1, 400, 7) i;
SELECT pg_temp.all_knn_matches('line', 3);

-- tiny tables, NULL and empty points
CREATE TEMP TABLE few (p point);
SELECT is_empty($$SELECT * FROM kd_knn('few', point(0, 0), 3)$$, 'no rows from an empty table');
SELECT is_empty($$SELECT * FROM kd_all_knn('few', 3)$$, 'no pairs from an empty table');
INSERT INTO few VALUES (NULL), (point(1, 1)), (NULL);
SELECT is((SELECT count(*) FROM kd_knn('few', point(0, 0), 3)), 1::bigint, 'NULL points are skipped');
SELECT is_empty($$SELECT * FROM kd_all_knn('few', 3)$$, 'one point has no neighbours');
SELECT is((SELECT count(*) FROM kd_all_knn('few', 3, true)), 1::bigint, 'one point is its own neighbour');
CREATE TEMP TABLE vfew (v float8[]);
INSERT INTO vfew VALUES ('{}'), ('{1,2}'), (NULL), ('{2,2}');
SELECT is((SELECT count(*) FROM kd_knn('vfew', ARRAY[0, 0]::float8[], 5)), 2::bigint, 'empty arrays are skipped');

-- errors
SELECT throws_ok($$SELECT * FROM kd_knn('utm', point(0, 0), 0)$$, '22023',
                 'k must be between 1 and 1024, not 0', 'k = 0 is an error');
SELECT throws_ok($$SELECT * FROM kd_range('utm', point(0, 0), -1)$$, '22023', NULL, 'a negative radius is an error');
INSERT INTO few VALUES (point('NaN', 0));
SELECT throws_ok($$SELECT * FROM kd_knn('few', point(0, 0), 1)$$, '22000',
                 'NaN coordinate in row (0,4) of table "few"', 'a NaN row is an error naming the row');
SELECT throws_ok($$SELECT * FROM kd_knn('vfew', point(0, 0), 1)$$, '42804', NULL, 'a query of the wrong type is an error');
SELECT throws_ok($$SELECT * FROM kd_knn('pg_class', point(0, 0), 1)$$, '42703', NULL, 'a table without points is an error');

SELECT * FROM finish();
ROLLBACK;
