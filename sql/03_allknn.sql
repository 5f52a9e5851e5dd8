-- kd_all_knn and kd_all_knn_arrays against brute force in SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.5);

CREATE TABLE pts (p point);
INSERT INTO pts SELECT point(random() * 10, random() * 10) FROM generate_series(1, 700);
-- duplicates: many rows at the same places
INSERT INTO pts SELECT point(floor(random() * 5), floor(random() * 5)) FROM generate_series(1, 300);
INSERT INTO pts VALUES (NULL);
DELETE FROM pts WHERE random() < 0.05;

CREATE FUNCTION brute_all_knn(k int, include_self boolean)
RETURNS TABLE (query_ctid tid, nn_ctid tid, distance float8, rank int) LANGUAGE sql AS $$
  SELECT a.ctid, b.*
    FROM pts a, LATERAL (
      SELECT o.ctid, a.p <-> o.p, (row_number() OVER (ORDER BY a.p <-> o.p, o.ctid))::int
        FROM pts o
       WHERE o.p IS NOT NULL AND (include_self OR o.ctid <> a.ctid)
       ORDER BY a.p <-> o.p, o.ctid LIMIT k) b
   WHERE a.p IS NOT NULL
$$;

-- kd_all_knn's rows against brute force: how many, and how many of them
-- are not brute force's (extra) or brute force's not among them (missing)
CREATE FUNCTION all_knn_vs_brute(k int, include_self boolean)
RETURNS TABLE (n bigint, extra bigint, missing bigint) LANGUAGE sql AS $$
  SELECT (SELECT count(*) FROM kd_all_knn('pts', k, include_self)),
         (SELECT count(*) FROM (SELECT * FROM kd_all_knn('pts', k, include_self)
                                EXCEPT ALL SELECT * FROM brute_all_knn(k, include_self)) d),
         (SELECT count(*) FROM (SELECT * FROM brute_all_knn(k, include_self)
                                EXCEPT ALL SELECT * FROM kd_all_knn('pts', k, include_self)) d)
$$;

-- pairs: same rows, same ranks, same distances
SELECT k, include_self, c.*
  FROM (VALUES (1, false), (10, false), (10, true), (30, false)) v(k, include_self),
       all_knn_vs_brute(k, include_self) c;

-- rows come in ctid order of the query rows, then by rank
SELECT bool_and(ok) AS ordered FROM (
  SELECT (query_ctid, rank) > lag((query_ctid, rank)) OVER () AS ok
    FROM kd_all_knn('pts', 3)) s WHERE ok IS NOT NULL;

-- include_self by name, default false
SELECT count(*) FILTER (WHERE query_ctid = nn_ctid) AS self_pairs FROM kd_all_knn('pts', 2);
SELECT count(*) FILTER (WHERE query_ctid = nn_ctid) > 0 AS some_self
  FROM kd_all_knn('pts', 2, include_self => true);

-- arrays: one row per point, the pairs in rank order
SELECT (SELECT count(*) FROM kd_all_knn_arrays('pts', 5)) = (SELECT count(p) FROM pts) AS one_row_per_point;
SELECT count(*) AS mismatches FROM (
  SELECT query_ctid, array_agg(nn_ctid ORDER BY rank) AS nn, array_agg(distance ORDER BY rank) AS d
    FROM brute_all_knn(5, false) GROUP BY query_ctid
  EXCEPT ALL
  SELECT query_ctid, nn_ctids, distances FROM kd_all_knn_arrays('pts', 5)) d;
SELECT count(*) AS mismatches FROM (
  SELECT query_ctid, array_agg(nn_ctid ORDER BY rank) AS nn, array_agg(distance ORDER BY rank) AS d
    FROM brute_all_knn(4, true) GROUP BY query_ctid
  EXCEPT ALL
  SELECT query_ctid, nn_ctids, distances FROM kd_all_knn_arrays('pts', 'p', 4, true)) d;

-- tiny tables
CREATE TABLE one (p point);
INSERT INTO one VALUES (point(1, 1));
SELECT * FROM kd_all_knn('one', 3);
SELECT * FROM kd_all_knn('one', 3, true);
SELECT * FROM kd_all_knn_arrays('one', 3);
INSERT INTO one VALUES (point(1, 1)), (point(2, 1));
SELECT * FROM kd_all_knn('one', 5);
SELECT * FROM kd_all_knn_arrays('one', 1);

-- float8[] points of 1 to 8 dimensions
CREATE TABLE vec (v float8[]);
CREATE FUNCTION brute_all_vknn(k int)
RETURNS TABLE (query_ctid tid, nn_ctid tid, distance float8, rank int) LANGUAGE sql AS $$
  SELECT a.ctid, b.*
    FROM vec a, LATERAL (
      SELECT o.ctid, a.v <-> o.v, (row_number() OVER (ORDER BY a.v <-> o.v, o.ctid))::int
        FROM vec o WHERE o.ctid <> a.ctid ORDER BY a.v <-> o.v, o.ctid LIMIT k) b
$$;
CREATE FUNCTION all_vknn_mismatches(d int, k int) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
BEGIN
  TRUNCATE vec;
  INSERT INTO vec SELECT array_agg(round(random() * 8) / 2 ORDER BY j)
    FROM generate_series(1, 400) i, generate_series(1, d) j GROUP BY i;
  SELECT count(*) INTO n FROM (
    (SELECT * FROM kd_all_knn('vec', k) EXCEPT ALL SELECT * FROM brute_all_vknn(k))
    UNION ALL
    (SELECT * FROM brute_all_vknn(k) EXCEPT ALL SELECT * FROM kd_all_knn('vec', k))) x;
  RETURN n;
END $$;
SELECT d, all_vknn_mismatches(d, 6) AS mismatches FROM generate_series(1, 8) d;

-- an answer larger than kdgpu.answer_memory_limit is made in slices of
-- points as its rows are read (at 1 MB, about a hundred points a slice
-- at k = 100), with the same rows, ranks and distances
SET kdgpu.answer_memory_limit = 1;
SELECT k, include_self, c.*
  FROM (VALUES (100, false), (100, true)) v(k, include_self),
       all_knn_vs_brute(k, include_self) c;
SELECT count(*) AS mismatches FROM (
  SELECT query_ctid, array_agg(nn_ctid ORDER BY rank) AS nn, array_agg(distance ORDER BY rank) AS d
    FROM brute_all_knn(100, false) GROUP BY query_ctid
  EXCEPT ALL
  SELECT query_ctid, nn_ctids, distances FROM kd_all_knn_arrays('pts', 100)) d;
SELECT bool_and(ok) AS ordered FROM (
  SELECT (query_ctid, rank) > lag((query_ctid, rank)) OVER () AS ok
    FROM kd_all_knn('pts', 100)) s WHERE ok IS NOT NULL;
-- k = 1024 with more points than that: a point's own place in the
-- engine's list of 1,024 leaves it one short, and its search widens
INSERT INTO pts SELECT point(random() * 10, random() * 10) FROM generate_series(1, 400);
INSERT INTO pts SELECT point(floor(random() * 5), floor(random() * 5)) FROM generate_series(1, 200);
SELECT * FROM all_knn_vs_brute(1024, false);
RESET kdgpu.answer_memory_limit;

DROP TABLE pts, one, vec;
DROP FUNCTION all_knn_vs_brute(int, boolean), brute_all_knn(int, boolean), brute_all_vknn(int),
  all_vknn_mismatches(int, int);
