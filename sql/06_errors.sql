-- bad input: an error with SQLSTATE, a message naming the problem (and the
-- row, for a stored value) and a hint where one helps
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;

-- run a statement and return "SQLSTATE: message" (and the hint)
CREATE FUNCTION err(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  state text;
  msg text;
  hint text;
BEGIN
  EXECUTE stmt;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
  RETURN state || ': ' || msg || CASE WHEN hint <> '' THEN ' (hint: ' || hint || ')' ELSE '' END;
END $$;

CREATE TABLE pts (id int, p point);
INSERT INTO pts SELECT i, point(i, i) FROM generate_series(1, 100) i;
CREATE TABLE vec (v float8[]);
INSERT INTO vec VALUES ('{1,2}'), ('{3,4}');
CREATE TABLE nopoint (a int, b text);
CREATE TABLE twopoints (a point, b float8[]);

-- the table and its column
SELECT err($$SELECT * FROM kd_knn('no_such_table', point(0,0), 3)$$);
SELECT err($$SELECT * FROM kd_knn('nopoint', point(0,0), 3)$$);
SELECT err($$SELECT * FROM kd_knn('twopoints', point(0,0), 3)$$);
SELECT count(*) FROM kd_knn('twopoints', 'a', point(0,0), 3);
SELECT err($$SELECT * FROM kd_knn('pts', 'q', point(0,0), 3)$$);
SELECT err($$SELECT * FROM kd_knn('pts', 'id', point(0,0), 3)$$);
SELECT err($$SELECT * FROM kd_knn(4294967295::oid::regclass, point(0,0), 3)$$);
CREATE SEQUENCE seq;
SELECT err($$SELECT * FROM kd_knn('seq', point(0,0), 3)$$);
CREATE VIEW pts_view AS SELECT * FROM pts;
SELECT err($$SELECT * FROM kd_knn('pts_view', point(0,0), 3)$$);
CREATE TABLE parted (p point, k int) PARTITION BY LIST (k);
SELECT err($$SELECT * FROM kd_knn('parted', point(0,0), 3)$$);
CREATE MATERIALIZED VIEW mv AS SELECT p FROM pts WITH NO DATA;
SELECT err($$SELECT * FROM kd_knn('mv', point(0,0), 3)$$);
REFRESH MATERIALIZED VIEW mv;
SELECT count(*) FROM kd_knn('mv', point(0,0), 3);

-- k and radius
SELECT err($$SELECT * FROM kd_knn('pts', point(0,0), 0)$$);
SELECT err($$SELECT * FROM kd_knn('pts', point(0,0), -5)$$);
SELECT err($$SELECT * FROM kd_knn('pts', point(0,0), 1025)$$);
SELECT count(*) FROM kd_knn('pts', point(0,0), 1024);
SELECT err($$SELECT * FROM kd_all_knn('pts', 0)$$);
SELECT err($$SELECT * FROM kd_knn_join('pts', ARRAY[point(0,0)], 2000)$$);
SELECT err($$SELECT * FROM kd_range('pts', point(0,0), -1)$$);
SELECT err($$SELECT * FROM kd_range('pts', point(0,0), 'NaN')$$);
SELECT err($$SELECT * FROM kd_range_join('pts', ARRAY[point(0,0), point(1,1)], ARRAY[1, -2])$$);
SELECT err($$SELECT * FROM kd_range_join('pts', ARRAY[point(0,0), point(1,1)], ARRAY[1])$$);
SELECT err($$SELECT * FROM kd_range_join('pts', ARRAY[point(0,0)], ARRAY[NULL::float8])$$);

-- query points
SELECT err($$SELECT * FROM kd_knn('pts', ARRAY[1,2]::float8[], 3)$$);
SELECT err($$SELECT * FROM kd_knn('vec', point(1,2), 3)$$);
SELECT err($$SELECT * FROM kd_knn('vec', ARRAY[1,2,3]::float8[], 3)$$);
SELECT err($$SELECT * FROM kd_knn('vec', '{}'::float8[], 3)$$);
SELECT err($$SELECT * FROM kd_knn('vec', ARRAY[1,'NaN']::float8[], 3)$$);
SELECT err($$SELECT * FROM kd_knn('pts', point(1,'Infinity'), 3)$$);
SELECT err($$SELECT * FROM kd_knn_join('vec', ARRAY[1,2]::float8[], 3)$$);
SELECT err($$SELECT * FROM kd_knn_join('vec', ARRAY[[1,2,3]]::float8[], 3)$$);
SELECT err($$SELECT * FROM kd_knn_join('vec', ARRAY[[1,2],[3,NULL]]::float8[], 3)$$);
SELECT err($$SELECT * FROM kd_knn_join('vec', ARRAY[[1,2],[3,'-Infinity']]::float8[], 3)$$);
SELECT err($$SELECT * FROM kd_knn_join('pts', ARRAY[point(1,1), NULL], 3)$$);
SELECT err($$SELECT * FROM kd_box('pts', point(5,5), point(1,10))$$);
SELECT err($$SELECT * FROM kd_box('vec', ARRAY[0,0]::float8[], ARRAY[1]::float8[])$$);
SELECT err($$SELECT * FROM kd_box('vec', box(point(0,0), point(1,1)))$$);
SELECT err($$SELECT * FROM kd_knn_join('vec', 'pts'::regclass, 3)$$);
CREATE TABLE vec3 (v float8[]);
INSERT INTO vec3 VALUES ('{1,2,3}');
SELECT err($$SELECT * FROM kd_knn_join('vec', 'vec3'::regclass, 3)$$);

-- stored values: the error names the row
INSERT INTO pts VALUES (101, point('NaN', 1));
SELECT err($$SELECT * FROM kd_knn('pts', point(0,0), 3)$$);
DELETE FROM pts WHERE id = 101;
INSERT INTO pts VALUES (102, point(1, '-Infinity'));
SELECT err($$SELECT * FROM kd_all_knn('pts', 3)$$);
DELETE FROM pts WHERE id = 102;
INSERT INTO vec VALUES ('{1,2,3}');
SELECT err($$SELECT * FROM kd_knn('vec', ARRAY[1,2]::float8[], 3)$$);
DELETE FROM vec WHERE array_length(v, 1) = 3;
INSERT INTO vec VALUES ('{1,NULL}');
SELECT err($$SELECT * FROM kd_knn('vec', ARRAY[1,2]::float8[], 3)$$);
DELETE FROM vec WHERE v[2] IS NULL;
INSERT INTO vec VALUES ('{{1,2},{3,4}}');
SELECT err($$SELECT * FROM kd_knn('vec', ARRAY[1,2]::float8[], 3)$$);
DELETE FROM vec WHERE array_ndims(v) = 2;
INSERT INTO vec VALUES (array_fill(1::float8, ARRAY[16001]));
SELECT err($$SELECT * FROM kd_range('vec', ARRAY[1,2]::float8[], 3)$$);
DELETE FROM vec WHERE array_length(v, 1) = 16001;
-- and the table is usable again
SELECT count(*) FROM kd_knn('vec', ARRAY[1,2]::float8[], 3);

-- NULL arguments give no rows (the functions are strict)
SELECT count(*) FROM kd_knn('pts', NULL::point, 3);
SELECT count(*) FROM kd_knn('pts', point(0,0), NULL);
SELECT count(*) FROM kd_all_knn('pts', 3, NULL);

-- an ambiguous literal needs a type
SELECT err($$SELECT * FROM kd_knn('vec', '{1,2}', 3)$$);

DROP TABLE pts, vec, vec3, nopoint, twopoints, parted CASCADE;
DROP SEQUENCE seq;
DROP FUNCTION err(text);
