-- Partitioned tables: the _parts and key forms' results on a small table
-- whose answers can be read off (duplicates in two partitions, an empty
-- partition), and the plan of ORDER BY p <-> q LIMIT k over partitions
-- with kdgpu indexes: a Merge Append of the partitions' ordered index
-- scans.  test/pgtap/partitions.sql compares every form with brute force.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;

CREATE TABLE grid (id int, p point) PARTITION BY RANGE (id);
CREATE TABLE grid_lo PARTITION OF grid FOR VALUES FROM (0) TO (10);
CREATE TABLE grid_hi PARTITION OF grid FOR VALUES FROM (10) TO (20);
CREATE TABLE grid_none PARTITION OF grid FOR VALUES FROM (20) TO (30);
-- ids 11 and 3, 14 and 0 share a point across the partitions
INSERT INTO grid VALUES (3, point(1, 1)), (0, point(2, 2)), (5, point(4, 0)), (7, NULL),
  (11, point(1, 1)), (14, point(2, 2)), (12, point(0, 4)), (19, point(5, 5));

-- by partition and ctid, ties by (tableoid, ctid)
SELECT * FROM kd_knn_parts('grid', point(1, 1), 4);
-- by key, ties by key
SELECT * FROM kd_knn('grid', point(2, 2), 3, key_col => 'id');
SELECT * FROM kd_all_knn('grid', 1, 'id') ORDER BY query_key;
SELECT * FROM kd_all_knn_arrays_parts('grid', 2) ORDER BY query_rel::oid, query_ctid;
SELECT * FROM kd_range('grid', point(1.5, 1.5), 1, 'id');
SELECT * FROM kd_range_join_parts('grid', ARRAY[point(0, 0), point(5, 5)], ARRAY[1.5, 0]);
SELECT * FROM kd_box('grid', point(0, 0), point(2, 4), 'id');
SELECT * FROM kd_knn_join('grid', ARRAY[point(4, 4)], 2, 'id');

-- ORDER BY <-> LIMIT through the partitioned table: each partition's kdgpu
-- index scan, merged
CREATE INDEX ON grid_lo USING kdgpu (p);
CREATE INDEX ON grid_hi USING kdgpu (p);
CREATE INDEX ON grid_none USING kdgpu (p);
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM grid ORDER BY p <-> point(1, 1) LIMIT 3;
SELECT id, p <-> point(1, 1) AS d FROM grid ORDER BY p <-> point(1, 1), id LIMIT 3;
RESET enable_seqscan;

-- kd_all_knn_chunks, the part of a distributed All-kNN a shard answers
-- (allknn_chunks.c), read here byte by byte: a 36-byte header, then for
-- each point its row slots (coordinates' bits, packed ctid, key ref), its
-- number of neighbours and each one's ref and distance bits, big-endian.
-- Every point and answer equals kd_all_knn_arrays's.
CREATE FUNCTION chunk_i64(c bytea, o int) RETURNS bigint
  LANGUAGE sql IMMUTABLE AS $$ SELECT ('x' || encode(substring(c FROM o + 1 FOR 8), 'hex'))::bit(64)::bigint $$;
CREATE FUNCTION chunk_points(c bytea, keyed bool)
  RETURNS TABLE(ident text, nn text[], dist_bits text[])
  LANGUAGE plpgsql AS $$
DECLARE
  dim int := ('x' || encode(substring(c FROM 9 FOR 4), 'hex'))::bit(32)::int;
  npoints int := ('x' || encode(substring(c FROM 33 FOR 4), 'hex'))::bit(32)::int;
  stride int := dim + 1 + keyed::int;
  o int := 36;
  cnt int;
  ref bigint;
BEGIN
  FOR i IN 1 .. npoints LOOP
    ref := chunk_i64(c, o + 8 * (stride - 1));
    ident := CASE WHEN keyed THEN (ref # (-9223372036854775807 - 1))::text
                  ELSE format('(%s,%s)', ref >> 16, ref & 65535) END;
    o := o + 8 * stride;
    cnt := ('x' || encode(substring(c FROM o + 1 FOR 4), 'hex'))::bit(32)::int;
    o := o + 4;
    nn := '{}';
    dist_bits := '{}';
    FOR j IN 1 .. cnt LOOP
      ref := chunk_i64(c, o);
      nn := nn || CASE WHEN keyed THEN (ref # (-9223372036854775807 - 1))::text
                       ELSE format('(%s,%s)', ref >> 16, ref & 65535) END;
      dist_bits := dist_bits || encode(substring(c FROM o + 9 FOR 8), 'hex');
      o := o + 16;
    END LOOP;
    RETURN NEXT;
  END LOOP;
END $$;
SELECT length(c) AS bytes, encode(substring(c FROM 1 FOR 36), 'hex') AS header
FROM (SELECT kd_all_knn_chunks('grid', 'p', 2, 'id', false) c) s;
SELECT count(*) AS points,
       count(*) FILTER (WHERE (ident, nn, dist_bits) NOT IN
         (SELECT query_key::text, nn_keys::text[],
                 ARRAY(SELECT encode(float8send(d), 'hex') FROM unnest(distances) d)
          FROM kd_all_knn_arrays('grid', 2, 'id'))) AS differing
FROM (SELECT (chunk_points(c, true)).* FROM (SELECT kd_all_knn_chunks('grid', 'p', 2, 'id', false) c) s) x;
CREATE TABLE grid_plain AS SELECT * FROM grid;
SELECT count(*) AS points,
       count(*) FILTER (WHERE (ident, nn, dist_bits) NOT IN
         (SELECT query_ctid::text, nn_ctids::text[],
                 ARRAY(SELECT encode(float8send(d), 'hex') FROM unnest(distances) d)
          FROM kd_all_knn_arrays('grid_plain', 3, true))) AS differing
FROM (SELECT (chunk_points(c, false)).* FROM (SELECT kd_all_knn_chunks('grid_plain', 'p', 3, NULL, true) c) s) x;
-- a partitioned table needs a key; NULL arguments
SELECT kd_all_knn_chunks('grid', 'p', 2, NULL, false);
SELECT kd_all_knn_chunks('grid', 'p', NULL, 'id', false);
DROP TABLE grid_plain;
DROP FUNCTION chunk_points(bytea, bool);
DROP FUNCTION chunk_i64(bytea, int);

DROP TABLE grid;
