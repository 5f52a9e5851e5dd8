-- Partitioned tables and key columns: every kd_* function's _parts form
-- (rows as partition and ctid) and key form (rows as an integer key)
-- against sequential scans in SQL ordering by (distance, tableoid, ctid)
-- and (distance, key); the key forms on a plain table too.  The data is a
-- coarse grid, so distances tie within and across partitions; keys are
-- given in random order, so key order is not ctid order.  Partitions: a
-- sub-partitioned one, an empty one, one attached with its columns in
-- another order and a dropped column, a default one; kdgpu indexes on two
-- of them (their trees serve the functions while they hold exactly the
-- rows read), then rows inserted and deleted so that they no longer do.
BEGIN;
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;

SELECT plan(64);
SELECT setseed(0.3);
-- the oracles are sequential scans, not the kdgpu indexes
SET enable_indexscan = off;
SET enable_bitmapscan = off;

CREATE TABLE pt (id int, tag int, p point) PARTITION BY RANGE (id);
CREATE TABLE pt_a PARTITION OF pt FOR VALUES FROM (0) TO (400);
CREATE TABLE pt_b PARTITION OF pt FOR VALUES FROM (400) TO (800) PARTITION BY LIST (tag);
CREATE TABLE pt_b0 PARTITION OF pt_b FOR VALUES IN (0);
CREATE TABLE pt_b1 PARTITION OF pt_b FOR VALUES IN (1);
CREATE TABLE pt_empty PARTITION OF pt FOR VALUES FROM (800) TO (900);
CREATE TABLE pt_c (junk int, p point, tag int, id int);
ALTER TABLE pt_c DROP COLUMN junk;
ALTER TABLE pt ATTACH PARTITION pt_c FOR VALUES FROM (900) TO (1300);
CREATE TABLE pt_def PARTITION OF pt DEFAULT;
INSERT INTO pt SELECT id, id % 2, point(floor(random() * 12), floor(random() * 12))
  FROM (SELECT id FROM generate_series(0, 1499) id WHERE id NOT BETWEEN 800 AND 899 ORDER BY random()) s;
UPDATE pt SET p = NULL WHERE id % 101 = 7;
CREATE INDEX ON pt_a USING kdgpu (p);
CREATE INDEX ON pt_c USING kdgpu (p);
-- the same rows in one plain table, for the key forms on a plain table
CREATE TABLE flat AS SELECT * FROM pt ORDER BY random();
-- a partitioned table of query points, and one with a key
CREATE TABLE qt (qid int, q point) PARTITION BY RANGE (qid);
CREATE TABLE qt1 PARTITION OF qt FOR VALUES FROM (0) TO (10);
CREATE TABLE qt2 PARTITION OF qt FOR VALUES FROM (10) TO (100);
INSERT INTO qt SELECT i, point(random() * 12, random() * 12) FROM generate_series(0, 14) i ORDER BY random();
INSERT INTO qt VALUES (20, point(3, 4)), (21, point(5.5, 5.5));

-- kNN: _parts vs ORDER BY p <-> q, tableoid, ctid; key vs ORDER BY p <-> q, id
CREATE FUNCTION pg_temp.knn_parts(t text, q point, k int) RETURNS text LANGUAGE sql AS $f$
  SELECT results_eq(
    format('SELECT * FROM kd_knn_parts(%L, %L::point, %s)', t, q, k),
    format($$SELECT tableoid::regclass, ctid, p <-> %L::point,
                    (row_number() OVER (ORDER BY p <-> %L::point, tableoid, ctid))::int
               FROM %I WHERE p IS NOT NULL ORDER BY p <-> %L::point, tableoid, ctid LIMIT %s$$,
           q, q, t, q, k),
    format('kd_knn_parts(%s, %s, %s)', t, q, k))
$f$;
CREATE FUNCTION pg_temp.knn_key(t text, q point, k int) RETURNS text LANGUAGE sql AS $f$
  SELECT results_eq(
    format('SELECT * FROM kd_knn(%L, %L::point, %s, key_col => %L)', t, q, k, 'id'),
    format($$SELECT id::bigint, p <-> %L::point, (row_number() OVER (ORDER BY p <-> %L::point, id))::int
               FROM %I WHERE p IS NOT NULL ORDER BY p <-> %L::point, id LIMIT %s$$, q, q, t, q, k),
    format('kd_knn(%s, %s, %s, key_col => id)', t, q, k))
$f$;
-- range: the rows within r, by (distance, tableoid, ctid) or (distance, id)
CREATE FUNCTION pg_temp.range_parts(q point, r float8) RETURNS text LANGUAGE sql AS $f$
  SELECT results_eq(
    format('SELECT * FROM kd_range_parts(%L, %L::point, %s)', 'pt', q, r),
    format($$SELECT tableoid::regclass, ctid, p <-> %L::point,
                    (row_number() OVER (ORDER BY p <-> %L::point, tableoid, ctid))::int
               FROM pt WHERE p <-> %L::point <= %s ORDER BY p <-> %L::point, tableoid, ctid$$,
           q, q, q, r, q),
    format('kd_range_parts(pt, %s, %s)', q, r))
$f$;
CREATE FUNCTION pg_temp.range_key(t text, q point, r float8) RETURNS text LANGUAGE sql AS $f$
  SELECT results_eq(
    format('SELECT * FROM kd_range(%L, %L::point, %s, %L)', t, q, r, 'id'),
    format($$SELECT id::bigint, p <-> %L::point, (row_number() OVER (ORDER BY p <-> %L::point, id))::int
               FROM %I WHERE p <-> %L::point <= %s ORDER BY p <-> %L::point, id$$, q, q, t, q, r, q),
    format('kd_range(%s, %s, %s, id)', t, q, r))
$f$;
-- box: the rows inside, bounds included, by (tableoid, ctid) or id
CREATE FUNCTION pg_temp.box_parts(lo point, hi point) RETURNS text LANGUAGE sql AS $f$
  SELECT results_eq(
    format('SELECT * FROM kd_box_parts(%L, %L::point, %L::point)', 'pt', lo, hi),
    format($$SELECT tableoid::regclass, ctid FROM pt
              WHERE p[0] BETWEEN %s AND %s AND p[1] BETWEEN %s AND %s ORDER BY tableoid, ctid$$,
           lo[0], hi[0], lo[1], hi[1]),
    format('kd_box_parts(pt, %s, %s)', lo, hi))
$f$;
CREATE FUNCTION pg_temp.box_key(t text, lo point, hi point) RETURNS text LANGUAGE sql AS $f$
  SELECT results_eq(
    format('SELECT * FROM kd_box(%L, box(%L::point, %L::point), %L)', t, lo, hi, 'id'),
    format($$SELECT id::bigint FROM %I
              WHERE p[0] BETWEEN %s AND %s AND p[1] BETWEEN %s AND %s ORDER BY id$$,
           t, lo[0], hi[0], lo[1], hi[1]),
    format('kd_box(%s, box(%s, %s), id)', t, lo, hi))
$f$;
-- All-kNN, pairs: by query row then rank, each query's k nearest others
CREATE FUNCTION pg_temp.all_knn_parts(k int, self bool) RETURNS text LANGUAGE sql AS $f$
  SELECT results_eq(
    format('SELECT * FROM kd_all_knn_parts(%L, %s, include_self => %L)', 'pt', k, self),
    format($$SELECT a.tableoid::regclass, a.ctid, b.* FROM pt a, LATERAL (
               SELECT o.tableoid::regclass, o.ctid, a.p <-> o.p,
                      (row_number() OVER (ORDER BY a.p <-> o.p, o.tableoid, o.ctid))::int
                 FROM pt o WHERE (%L OR (o.tableoid, o.ctid) <> (a.tableoid, a.ctid)) AND o.p IS NOT NULL
                ORDER BY a.p <-> o.p, o.tableoid, o.ctid LIMIT %s) b
             WHERE a.p IS NOT NULL ORDER BY a.tableoid, a.ctid, 6$$, self, k),
    format('kd_all_knn_parts(pt, %s, include_self => %s)', k, self))
$f$;
CREATE FUNCTION pg_temp.all_knn_key(t text, k int) RETURNS text LANGUAGE sql AS $f$
  SELECT results_eq(
    format('SELECT * FROM kd_all_knn(%L, %s, %L) ORDER BY query_key, rank', t, k, 'id'),
    format($$SELECT a.id::bigint, b.* FROM %I a, LATERAL (
               SELECT o.id::bigint, a.p <-> o.p, (row_number() OVER (ORDER BY a.p <-> o.p, o.id))::int
                 FROM %I o WHERE o.id <> a.id AND o.p IS NOT NULL ORDER BY a.p <-> o.p, o.id LIMIT %s) b
             WHERE a.p IS NOT NULL ORDER BY 1, 4$$, t, t, k),
    format('kd_all_knn(%s, %s, id)', t, k))
$f$;
-- every check of the partitioned table, on its current rows
CREATE FUNCTION pg_temp.round(tag text) RETURNS SETOF text LANGUAGE plpgsql AS $f$
BEGIN
  RETURN NEXT pg_temp.knn_parts('pt', point(3, 4), 1);
  RETURN NEXT pg_temp.knn_parts('pt', point(3, 4), 40);
  RETURN NEXT pg_temp.knn_parts('pt', point(5.5, 5.5), 17);
  RETURN NEXT pg_temp.knn_parts('pt', point(-100, 20), 1024);
  RETURN NEXT pg_temp.knn_key('pt', point(3, 4), 40);
  RETURN NEXT pg_temp.knn_key('pt', point(5.5, 5.5), 17);
  RETURN NEXT pg_temp.knn_key('pt', point(11.2, 0.3), 3);
  RETURN NEXT pg_temp.range_parts(point(6, 6), 1.5);
  RETURN NEXT pg_temp.range_parts(point(0.5, 0.5), 0);
  RETURN NEXT pg_temp.range_key('pt', point(6, 6), 1.5);
  RETURN NEXT pg_temp.box_parts(point(2, 3), point(4, 5));
  RETURN NEXT pg_temp.box_key('pt', point(2, 3), point(4, 5));
  RETURN NEXT pg_temp.all_knn_parts(5, false);
  RETURN NEXT pg_temp.all_knn_parts(3, true);
  RETURN NEXT pg_temp.all_knn_key('pt', 6);
END
$f$;

SELECT pg_temp.round('indexes qualify');

-- the key forms on a plain table: ties by key, not by ctid
SELECT pg_temp.knn_key('flat', point(3, 4), 40);
SELECT pg_temp.knn_key('flat', point(5.5, 5.5), 1024);
SELECT pg_temp.range_key('flat', point(6, 6), 2);
SELECT pg_temp.box_key('flat', point(0, 0), point(3, 11));
SELECT pg_temp.all_knn_key('flat', 4);
-- a partitioned table of fewer rows than k: every answer is short, and
-- the gathered answers close up behind each
CREATE TABLE few (id int, p point) PARTITION BY RANGE (id);
CREATE TABLE few_a PARTITION OF few FOR VALUES FROM (0) TO (4);
CREATE TABLE few_b PARTITION OF few FOR VALUES FROM (4) TO (10);
INSERT INTO few SELECT (i * 7) % 9, point(i % 3, i / 3) FROM generate_series(0, 8) i;
SELECT pg_temp.all_knn_key('few', 10);
SELECT isnt(
  ARRAY(SELECT nn_key FROM kd_knn('flat', point(3, 4), 40, 'id') ORDER BY rank),
  ARRAY(SELECT f.id::bigint FROM kd_knn('flat', point(3, 4), 40) k JOIN flat f ON f.ctid = k.nn_ctid ORDER BY k.rank),
  'ties go by key in the key form, by ctid in the ctid form');
SELECT is(
  (SELECT array_agg((nn_key, distance, rank)::text ORDER BY rank) FROM kd_knn('pt', point(3, 4), 25, 'id')),
  (SELECT array_agg((nn_key, distance, rank)::text ORDER BY rank) FROM kd_knn('flat', point(3, 4), 25, 'id')),
  'a partitioned table and a plain table of the same rows give the same key answers');

-- kNN join from an array: query_ord is the array position
SELECT results_eq(
  $$SELECT * FROM kd_knn_join_parts('pt', ARRAY[point(3, 4), point(9.5, 0.5), point(3, 4)], 9)$$,
  $$SELECT o::int, b.* FROM unnest(ARRAY[point(3, 4), point(9.5, 0.5), point(3, 4)]) WITH ORDINALITY u(q, o),
      LATERAL (SELECT tableoid::regclass, ctid, p <-> q, (row_number() OVER (ORDER BY p <-> q, tableoid, ctid))::int
                 FROM pt WHERE p IS NOT NULL ORDER BY p <-> q, tableoid, ctid LIMIT 9) b ORDER BY o, 5$$,
  'kd_knn_join_parts(pt, point[], 9)');
SELECT results_eq(
  $$SELECT * FROM kd_knn_join('pt', ARRAY[point(3, 4), point(9.5, 0.5)], 9, 'id')$$,
  $$SELECT o::int, b.* FROM unnest(ARRAY[point(3, 4), point(9.5, 0.5)]) WITH ORDINALITY u(q, o),
      LATERAL (SELECT id::bigint, p <-> q, (row_number() OVER (ORDER BY p <-> q, id))::int
                 FROM pt WHERE p IS NOT NULL ORDER BY p <-> q, id LIMIT 9) b ORDER BY o, 4$$,
  'kd_knn_join(pt, point[], 9, id)');
-- kNN join from a partitioned query table
SELECT results_eq(
  $$SELECT * FROM kd_knn_join_parts('pt', 'qt'::regclass, 7)$$,
  $$SELECT qt.tableoid::regclass, qt.ctid, b.* FROM qt,
      LATERAL (SELECT tableoid::regclass, ctid, p <-> q, (row_number() OVER (ORDER BY p <-> q, tableoid, ctid))::int
                 FROM pt WHERE p IS NOT NULL ORDER BY p <-> q, tableoid, ctid LIMIT 7) b
     ORDER BY qt.tableoid, qt.ctid, 6$$,
  'kd_knn_join_parts(pt, qt, 7)');
SELECT results_eq(
  $$SELECT * FROM kd_knn_join('pt', 'p', 'qt'::regclass, 'q', 7, 'id', 'qid') ORDER BY query_key, rank$$,
  $$SELECT qid::bigint, b.* FROM qt,
      LATERAL (SELECT id::bigint, p <-> q, (row_number() OVER (ORDER BY p <-> q, id))::int
                 FROM pt WHERE p IS NOT NULL ORDER BY p <-> q, id LIMIT 7) b ORDER BY 1, 4$$,
  'kd_knn_join(pt, p, qt, q, 7, id, qid)');
SELECT results_eq(
  $$SELECT * FROM kd_knn_join('flat', 'qt'::regclass, 3, key_col => 'id', query_key_col => 'qid') ORDER BY query_key, rank$$,
  $$SELECT qid::bigint, b.* FROM qt,
      LATERAL (SELECT id::bigint, p <-> q, (row_number() OVER (ORDER BY p <-> q, id))::int
                 FROM flat WHERE p IS NOT NULL ORDER BY p <-> q, id LIMIT 3) b ORDER BY 1, 4$$,
  'kd_knn_join(flat, qt, 3, id, qid): a plain table, partitioned queries');
-- range join, one radius per centre
SELECT results_eq(
  $$SELECT * FROM kd_range_join_parts('pt', ARRAY[point(2, 2), point(7.5, 7.5)], ARRAY[1, 0.8])$$,
  $$SELECT o::int, b.* FROM unnest(ARRAY[point(2, 2), point(7.5, 7.5)], ARRAY[1, 0.8]) WITH ORDINALITY u(q, r, o),
      LATERAL (SELECT tableoid::regclass, ctid, p <-> q, (row_number() OVER (ORDER BY p <-> q, tableoid, ctid))::int
                 FROM pt WHERE p <-> q <= r ORDER BY p <-> q, tableoid, ctid) b ORDER BY o, 5$$,
  'kd_range_join_parts(pt, point[], radii)');
SELECT results_eq(
  $$SELECT * FROM kd_range_join('pt', ARRAY[point(2, 2), point(7.5, 7.5)], 1.2, 'id')$$,
  $$SELECT o::int, b.* FROM unnest(ARRAY[point(2, 2), point(7.5, 7.5)]) WITH ORDINALITY u(q, o),
      LATERAL (SELECT id::bigint, p <-> q, (row_number() OVER (ORDER BY p <-> q, id))::int
                 FROM pt WHERE p <-> q <= 1.2 ORDER BY p <-> q, id) b ORDER BY o, 4$$,
  'kd_range_join(pt, point[], 1.2, id)');
-- All-kNN as arrays
SELECT results_eq(
  $$SELECT * FROM kd_all_knn_arrays_parts('pt', 4)$$,
  $$SELECT query_rel, query_ctid, array_agg(nn_rel ORDER BY rank), array_agg(nn_ctid ORDER BY rank),
           array_agg(distance ORDER BY rank)
      FROM kd_all_knn_parts('pt', 4) GROUP BY 1, 2 ORDER BY query_rel::oid, query_ctid$$,
  'kd_all_knn_arrays_parts(pt, 4) = kd_all_knn_parts(pt, 4) aggregated');
SELECT results_eq(
  $$SELECT * FROM kd_all_knn_arrays('pt', 4, 'id') ORDER BY query_key$$,
  $$SELECT a.id::bigint, array_agg(b.id::bigint ORDER BY b.d, b.id), array_agg(b.d ORDER BY b.d, b.id)
      FROM pt a, LATERAL (SELECT o.id, a.p <-> o.p AS d FROM pt o WHERE o.id <> a.id AND o.p IS NOT NULL
                          ORDER BY a.p <-> o.p, o.id LIMIT 4) b
     WHERE a.p IS NOT NULL GROUP BY a.id ORDER BY 1$$,
  'kd_all_knn_arrays(pt, 4, id)');
-- float8[] points, a partitioned table of two partitions, one empty
CREATE TABLE vt (id bigint, v float8[]) PARTITION BY HASH (id);
CREATE TABLE vt0 PARTITION OF vt FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE vt1 PARTITION OF vt FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE vt2 PARTITION OF vt FOR VALUES WITH (MODULUS 3, REMAINDER 2);
INSERT INTO vt SELECT i * 1000000000000, ARRAY[floor(random() * 4), floor(random() * 4), floor(random() * 4)]
  FROM generate_series(-150, 150) i;
SELECT results_eq(
  $$SELECT * FROM kd_knn('vt', ARRAY[1, 2, 1.5]::float8[], 30, 'id')$$,
  $$SELECT id, v <-> ARRAY[1, 2, 1.5]::float8[], (row_number() OVER (ORDER BY v <-> ARRAY[1, 2, 1.5]::float8[], id))::int
      FROM vt ORDER BY 2, id LIMIT 30$$,
  'float8[] over hash partitions, bigint keys of either sign');
SELECT results_eq(
  $$SELECT * FROM kd_box_parts('vt', ARRAY[0, 1, 1]::float8[], ARRAY[2, 2, 3]::float8[])$$,
  $$SELECT tableoid::regclass, ctid FROM vt WHERE v[1] BETWEEN 0 AND 2 AND v[2] BETWEEN 1 AND 2
        AND v[3] BETWEEN 1 AND 3 ORDER BY tableoid, ctid$$,
  'kd_box_parts over float8[] partitions');
-- a partitioned table without partitions, and one whose partitions hold no points
CREATE TABLE nopart (id int, p point) PARTITION BY RANGE (id);
SELECT is((SELECT count(*) FROM kd_knn_parts('nopart', point(0, 0), 3)), 0::bigint, 'no partitions: no rows');
SELECT is((SELECT count(*) FROM kd_all_knn('nopart', 3, 'id')), 0::bigint, 'no partitions: no All-kNN rows');

-- rows inserted, deleted and updated: the indexes' trees no longer hold the rows read
INSERT INTO pt SELECT id, id % 2, point(floor(random() * 12), floor(random() * 12))
  FROM generate_series(1500, 1560) id;
DELETE FROM pt WHERE id = 398;
INSERT INTO pt_a VALUES (398, 0, point(3, 4));
DELETE FROM pt WHERE id % 13 = 0;
UPDATE pt SET p = point(p[1], p[0]) WHERE id % 17 = 0;
SELECT pg_temp.round('after writes');

-- row-level security on the partitioned table applies; a partition's own
-- policies do not, as in a query of the partitioned table
CREATE ROLE kd_part_reader;
GRANT SELECT ON pt TO kd_part_reader;
ALTER TABLE pt ENABLE ROW LEVEL SECURITY;
CREATE POLICY even ON pt TO kd_part_reader USING (id % 2 = 0);
ALTER TABLE pt_a ENABLE ROW LEVEL SECURITY;
SET ROLE kd_part_reader;
SELECT pg_temp.knn_parts('pt', point(3, 4), 30);
SELECT pg_temp.knn_key('pt', point(3, 4), 30);
SELECT pg_temp.all_knn_key('pt', 3);
SELECT is((SELECT bool_and(nn_key % 2 = 0) FROM kd_knn('pt', point(3, 4), 30, 'id')), true,
          'the policy of the partitioned table hides odd keys');
RESET ROLE;

-- errors
CREATE TABLE badkeys (id int, name text, p point);
INSERT INTO badkeys VALUES (1, 'a', point(0, 0)), (1, 'b', point(1, 1)), (NULL, 'c', NULL);
SELECT throws_ok($$SELECT * FROM kd_knn('badkeys', point(0, 0), 1, 'id')$$, '23505',
  'key column "id" of table "badkeys" has the value 1 in more than one row', 'a key on two rows is an error');
UPDATE badkeys SET id = 2 WHERE name = 'b';
SELECT is((SELECT count(*) FROM kd_knn('badkeys', point(0, 0), 5, 'id')), 2::bigint,
  'a NULL key on a row without a point is skipped with the row');
INSERT INTO badkeys VALUES (NULL, 'd', point(2, 2));
SELECT throws_ok($$SELECT * FROM kd_knn('badkeys', point(0, 0), 1, 'id')$$, '23502', NULL, 'a NULL key is an error');
SELECT throws_ok($$SELECT * FROM kd_knn('badkeys', point(0, 0), 1, 'name')$$, '42804',
  'key column "name" of table "badkeys" is of type text, not an integer type', 'a text key is an error');
SELECT throws_ok($$SELECT * FROM kd_knn('badkeys', point(0, 0), 1, 'nope')$$, '42703', NULL, 'a missing key column is an error');
SELECT throws_ok($$SELECT * FROM kd_all_knn('pt', 3)$$, '42809', NULL, 'the ctid form refuses a partitioned table');
SELECT throws_ok($$SELECT * FROM kd_load('pt')$$, '42809', NULL, 'kd_load refuses a partitioned table');
SELECT throws_ok($$SELECT * FROM kd_knn_join_parts('pt', 'qt'::regclass, 3, key_col => 'id', query_key_col => 'qid')$$,
  '42883', NULL, 'the _parts forms take no key');
GRANT SELECT (p) ON badkeys TO kd_part_reader;
SET ROLE kd_part_reader;
SELECT throws_ok($$SELECT * FROM kd_knn('badkeys', point(0, 0), 1, 'id')$$, '42501', NULL,
  'the key column needs the SELECT right');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
