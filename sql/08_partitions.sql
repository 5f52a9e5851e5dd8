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

-- the planner's row count of a function over a partitioned table never
-- analyzed itself: its partitions' rows (their CREATE INDEX counted them),
-- k per row for the pairs
CREATE FUNCTION parts_plan_rows(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
	j			json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
	RETURN (j -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
END $$;
SELECT c.reltuples AS parent_reltuples,
       parts_plan_rows($q$SELECT * FROM kd_all_knn_arrays('grid', 2, 'id')$q$) = n AS arrays_rows_right,
       parts_plan_rows($q$SELECT * FROM kd_all_knn('grid', 2, 'id')$q$) = 2 * n AS pairs_rows_right
FROM pg_class c, (SELECT count(*) AS n FROM grid) g WHERE c.oid = 'grid'::regclass;

-- kd_all_knn_chunks and kd_knn_join_chunks, what a shard answers a
-- coordinator (answer_chunks.c), read here byte by byte: a 44-byte header,
-- then for each entry (a point of the table, or a query) its row's slots
-- (coordinates' bits, packed ctid, key ref; none for a query), its number
-- of neighbours and each one's ref and distance bits, big-endian.  Every
-- entry equals kd_all_knn_arrays's or kd_knn_join's.
CREATE FUNCTION chunk_i64(c bytea, o int) RETURNS bigint
  LANGUAGE sql IMMUTABLE AS $$ SELECT ('x' || encode(substring(c FROM o + 1 FOR 8), 'hex'))::bit(64)::bigint $$;
CREATE FUNCTION chunk_i32(c bytea, o int) RETURNS int
  LANGUAGE sql IMMUTABLE AS $$ SELECT ('x' || encode(substring(c FROM o + 1 FOR 4), 'hex'))::bit(32)::int $$;
CREATE FUNCTION chunk_ref(ref bigint, keyed bool) RETURNS text
  LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN keyed THEN (ref # (-9223372036854775807 - 1))::text
                ELSE format('(%s,%s)', ref >> 16, ref & 65535) END $$;
CREATE FUNCTION chunk_entries(c bytea)
  RETURNS TABLE(ident text, nn text[], dist_bits text[])
  LANGUAGE plpgsql AS $$
DECLARE
  keyed bool := chunk_i32(c, 16) <> 0;
  slots int := chunk_i32(c, 32);
  o int := 44;
  cnt int;
BEGIN
  FOR i IN 1 .. chunk_i32(c, 36) LOOP
    ident := CASE WHEN slots = 0 THEN i::text
                  ELSE chunk_ref(chunk_i64(c, o + 8 * (slots - 1)), keyed) END;
    o := o + 8 * slots;
    cnt := chunk_i32(c, o);
    o := o + 4;
    nn := '{}';
    dist_bits := '{}';
    FOR j IN 1 .. cnt LOOP
      nn := nn || chunk_ref(chunk_i64(c, o), keyed);
      dist_bits := dist_bits || encode(substring(c FROM o + 9 FOR 8), 'hex');
      o := o + 16;
    END LOOP;
    RETURN NEXT;
  END LOOP;
END $$;
SELECT length(c) AS bytes, encode(substring(c FROM 1 FOR 44), 'hex') AS header
FROM (SELECT kd_all_knn_chunks('grid', 'p', 2, 'id', false) c) s;
SELECT count(*) AS points,
       count(*) FILTER (WHERE (ident, nn, dist_bits) NOT IN
         (SELECT query_key::text, nn_keys::text[],
                 ARRAY(SELECT encode(float8send(d), 'hex') FROM unnest(distances) d)
          FROM kd_all_knn_arrays('grid', 2, 'id'))) AS differing
FROM (SELECT (chunk_entries(c)).* FROM (SELECT kd_all_knn_chunks('grid', 'p', 2, 'id', false) c) s) x;
CREATE TABLE grid_plain AS SELECT * FROM grid;
SELECT count(*) AS points,
       count(*) FILTER (WHERE (ident, nn, dist_bits) NOT IN
         (SELECT query_ctid::text, nn_ctids::text[],
                 ARRAY(SELECT encode(float8send(d), 'hex') FROM unnest(distances) d)
          FROM kd_all_knn_arrays('grid_plain', 3, true))) AS differing
FROM (SELECT (chunk_entries(c)).* FROM (SELECT kd_all_knn_chunks('grid_plain', 'p', 3, NULL, true) c) s) x;
SELECT encode(substring(c FROM 1 FOR 44), 'hex') AS header
FROM (SELECT kd_knn_join_chunks('grid', 'p', ARRAY[point(1, 1), point(9, 9), point(3, 0)], 3, 'id') c) s;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE (ident, nn, dist_bits) NOT IN
         (SELECT query_ord::text, array_agg(nn_key::text ORDER BY distance, nn_key),
                 array_agg(encode(float8send(distance), 'hex') ORDER BY distance, nn_key)
          FROM kd_knn_join('grid', ARRAY[point(1, 1), point(9, 9), point(3, 0)], 3, 'id')
          GROUP BY query_ord)) AS differing
FROM (SELECT (chunk_entries(c)).*
      FROM (SELECT kd_knn_join_chunks('grid', 'p', ARRAY[point(1, 1), point(9, 9), point(3, 0)], 3, 'id') c) s) x;
CREATE TABLE grid_vec AS SELECT ARRAY[p[0], p[1]] AS v FROM grid WHERE p IS NOT NULL;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE (ident, nn, dist_bits) NOT IN
         (SELECT query_ord::text, array_agg(nn_ctid::text ORDER BY distance, nn_ctid),
                 array_agg(encode(float8send(distance), 'hex') ORDER BY distance, nn_ctid)
          FROM kd_knn_join('grid_vec', '{{1,1},{9,9}}'::float8[], 2)
          GROUP BY query_ord)) AS differing
FROM (SELECT (chunk_entries(c)).*
      FROM (SELECT kd_knn_join_chunks('grid_vec', 'v', '{{1,1},{9,9}}'::float8[], 2, NULL) c) s) x;
-- a partitioned table needs a key; NULL arguments
SELECT kd_all_knn_chunks('grid', 'p', 2, NULL, false);
SELECT kd_all_knn_chunks('grid', 'p', NULL, 'id', false);
SELECT kd_knn_join_chunks('grid', 'p', ARRAY[point(1, 1)], 2, NULL);
SELECT kd_knn_join_chunks('grid', 'p', NULL::point[], 2, 'id');
DROP TABLE grid_plain, grid_vec;
DROP FUNCTION chunk_entries(bytea);
DROP FUNCTION chunk_ref(bigint, bool);
DROP FUNCTION chunk_i32(bytea, int);
DROP FUNCTION chunk_i64(bytea, int);
DROP FUNCTION parts_plan_rows(text);

DROP TABLE grid;
