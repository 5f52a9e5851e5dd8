-- kd_knn and kd_knn_join against brute force in SQL: the same rows, in the
-- same order, with the same distances (compared with =, bit for bit)
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.25);

-- uniform points, grid points full of ties, large offsets (UTM-like metres,
-- millimetre spacing) where pg_hypot and sqrt(dx*dx + dy*dy) differ in the
-- last bit, NULLs that must be skipped
CREATE TABLE pts (id int, p point);
INSERT INTO pts SELECT i, point(random() * 100, random() * 100) FROM generate_series(1, 3000) i;
INSERT INTO pts SELECT i, point(floor(random() * 10) * 10, floor(random() * 10) * 10) FROM generate_series(3001, 4000) i;
INSERT INTO pts SELECT i, point(500000 + round(random() * 1000) / 1000, 5400000 + round(random() * 1000) / 1000)
  FROM generate_series(4001, 5000) i;
INSERT INTO pts VALUES (0, NULL), (-1, NULL);
DELETE FROM pts WHERE id % 97 = 0;
UPDATE pts SET p = point(p[0] + 0.5, p[1]) WHERE id % 89 = 0;

CREATE TABLE queries (q point);
INSERT INTO queries SELECT point(random() * 100, random() * 100) FROM generate_series(1, 40);
INSERT INTO queries SELECT point(x * 10, y * 10) FROM generate_series(0, 3) x, generate_series(0, 3) y;
INSERT INTO queries SELECT point(500000 + random(), 5400000 + random()) FROM generate_series(1, 20);
INSERT INTO queries VALUES (point(-1000, -1000)), (point(1e6, 1e6));

CREATE FUNCTION brute_knn(query point, k int)
RETURNS TABLE (nn_ctid tid, distance float8, rank int) LANGUAGE sql AS $$
  SELECT ctid, p <-> query, (row_number() OVER (ORDER BY p <-> query, ctid))::int
    FROM pts WHERE p IS NOT NULL ORDER BY p <-> query, ctid LIMIT k
$$;

-- the large-offset points make the exact path matter: pg_hypot differs
-- from sqrt(dx*dx + dy*dy) for some of them
SELECT count(*) > 0 AS hypot_differs
  FROM pts, (VALUES (point(500000.5, 5400000.5))) v(q)
 WHERE p <-> q <> sqrt((p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]));

-- the design card's example works as written
SELECT count(*) FROM kd_knn('pts', point(1,2), 10);

-- one query at a time, for several k
SELECT k, count(*) AS queries,
       count(*) FILTER (WHERE
         (SELECT array_agg((nn_ctid, distance, rank) ORDER BY rank) FROM kd_knn('pts', q, k))
         IS NOT DISTINCT FROM
         (SELECT array_agg((nn_ctid, distance, rank) ORDER BY rank) FROM brute_knn(q, k))) AS exact
  FROM queries, (VALUES (1), (7), (50)) ks(k)
 GROUP BY k ORDER BY k;

-- a tie-heavy case shown in full: grid points at the same place, by ctid
SELECT (SELECT array_agg(nn_ctid ORDER BY rank) FROM kd_knn('pts', point(20, 30), 25))
       = (SELECT array_agg(nn_ctid ORDER BY rank) FROM brute_knn(point(20, 30), 25)) AS ties_by_ctid;

-- the column may be named
SELECT (SELECT array_agg((nn_ctid, distance)) FROM kd_knn('pts', 'p', point(3, 4), 5))
       = (SELECT array_agg((nn_ctid, distance)) FROM brute_knn(point(3, 4), 5)) AS named;

-- kNN join from an array: query_ord is the position in the array
WITH qa AS (SELECT array_agg(q ORDER BY q[0], q[1]) AS qs FROM queries),
     got AS (SELECT j.* FROM qa, kd_knn_join('pts', qa.qs, 9) j),
     want AS (SELECT o::int AS query_ord, b.* FROM qa, unnest(qa.qs) WITH ORDINALITY u(q, o),
                     brute_knn(u.q, 9) b)
SELECT (SELECT count(*) FROM got) AS n,
       (SELECT count(*) FROM (SELECT * FROM got EXCEPT ALL SELECT * FROM want) d) AS extra,
       (SELECT count(*) FROM (SELECT * FROM want EXCEPT ALL SELECT * FROM got) d) AS missing;

-- kNN join from another table: query_ctid names the query row
WITH got AS (SELECT * FROM kd_knn_join('pts', 'queries'::regclass, 4)),
     want AS (SELECT qr.ctid AS query_ctid, b.* FROM queries qr, brute_knn(qr.q, 4) b)
SELECT (SELECT count(*) FROM got) AS n,
       (SELECT count(*) FROM (SELECT * FROM got EXCEPT ALL SELECT * FROM want) d) AS extra,
       (SELECT count(*) FROM (SELECT * FROM want EXCEPT ALL SELECT * FROM got) d) AS missing;
SELECT count(*) FROM kd_knn_join('pts', 'p', 'queries', 'q', 4);

-- k larger than the table returns every row; an empty table returns none
CREATE TABLE few (p point);
INSERT INTO few VALUES (point(0,0)), (point(1,1)), (NULL), (point(0,0));
SELECT * FROM kd_knn('few', point(0.2, 0.2), 10);
SELECT * FROM kd_knn_join('few', ARRAY[point(1,1), point(0,0)], 2);
SELECT * FROM kd_knn_join('few', ARRAY[]::point[], 2);
TRUNCATE few;
SELECT * FROM kd_knn('few', point(0, 0), 3);

-- k = 1024, the largest k, takes the engine's boundary path
SELECT (SELECT array_agg((nn_ctid, distance, rank) ORDER BY rank) FROM kd_knn('pts', point(50, 50), 1024))
       = (SELECT array_agg((nn_ctid, distance, rank) ORDER BY rank) FROM brute_knn(point(50, 50), 1024)) AS k1024;

-- float8[] points: distance is <-> on float8[]
CREATE TABLE vec (v float8[]);
INSERT INTO vec SELECT ARRAY[random(), random(), random()] FROM generate_series(1, 2000);
INSERT INTO vec SELECT ARRAY[round(random() * 4), round(random() * 4), 1] FROM generate_series(1, 500);
INSERT INTO vec VALUES (NULL), ('{}');
CREATE FUNCTION brute_vknn(query float8[], k int)
RETURNS TABLE (nn_ctid tid, distance float8, rank int) LANGUAGE sql AS $$
  SELECT ctid, v <-> query, (row_number() OVER (ORDER BY v <-> query, ctid))::int
    FROM vec WHERE v <> '{}' ORDER BY v <-> query, ctid LIMIT k
$$;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE
         (SELECT array_agg((nn_ctid, distance, rank) ORDER BY rank) FROM kd_knn('vec', q, 12))
         = (SELECT array_agg((nn_ctid, distance, rank) ORDER BY rank) FROM brute_vknn(q, 12))) AS exact
  FROM (SELECT ARRAY[random(), random(), random()] AS q FROM generate_series(1, 20)
        UNION ALL SELECT ARRAY[x, y, 1]::float8[] FROM generate_series(0, 4) x, generate_series(0, 4) y) qs;
SELECT q.o, (SELECT array_agg((nn_ctid, distance, rank) ORDER BY rank)
               FROM kd_knn_join('vec', ARRAY[[0.5, 0.5, 0.5], [2, 2, 1], [4, 4, 1]], 30) j WHERE j.query_ord = q.o)
            = (SELECT array_agg((nn_ctid, distance, rank) ORDER BY rank) FROM brute_vknn(q.v, 30)) AS exact
  FROM (VALUES (1, ARRAY[0.5, 0.5, 0.5]::float8[]), (2, ARRAY[2, 2, 1]::float8[]), (3, ARRAY[4, 4, 1]::float8[])) q(o, v);

DROP TABLE pts, queries, few, vec;
DROP FUNCTION brute_knn(point, int), brute_vknn(float8[], int);
