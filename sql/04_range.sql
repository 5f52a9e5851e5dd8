-- kd_range, kd_range_join and kd_box against brute force in SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.75);

CREATE TABLE pts (p point);
INSERT INTO pts SELECT point(random() * 100, random() * 100) FROM generate_series(1, 3000);
INSERT INTO pts SELECT point(floor(random() * 10) * 10, floor(random() * 10) * 10) FROM generate_series(1, 1000);
INSERT INTO pts SELECT point(500000 + round(random() * 1000) / 1000, 5400000 + round(random() * 1000) / 1000)
  FROM generate_series(1, 1000);
INSERT INTO pts VALUES (NULL);

CREATE FUNCTION brute_range(c point, r float8)
RETURNS TABLE (nn_ctid tid, distance float8, rank int) LANGUAGE sql AS $$
  SELECT ctid, p <-> c, (row_number() OVER (ORDER BY p <-> c, ctid))::int
    FROM pts WHERE p <-> c <= r ORDER BY p <-> c, ctid
$$;

-- radius: same rows, order and distances, for radii that fall on grid
-- points (distance exactly r), between them, and at zero
SELECT r, count(*) AS queries,
       count(*) FILTER (WHERE
         (SELECT array_agg((nn_ctid, distance, rank) ORDER BY rank) FROM kd_range('pts', c, r))
         IS NOT DISTINCT FROM
         (SELECT array_agg((nn_ctid, distance, rank) ORDER BY rank) FROM brute_range(c, r))) AS exact
  FROM (SELECT point(random() * 100, random() * 100) FROM generate_series(1, 30)
        UNION ALL SELECT point(x * 10, y * 10) FROM generate_series(0, 2) x, generate_series(0, 2) y) cs(c),
       (VALUES (0), (3.5), (10), (20)) rs(r)
 GROUP BY r ORDER BY r;
-- radius exactly at distances that only pg_hypot gets right
SELECT count(*) AS queries,
       count(*) FILTER (WHERE
         (SELECT array_agg((nn_ctid, distance, rank) ORDER BY rank) FROM kd_range('pts', c, r))
         IS NOT DISTINCT FROM
         (SELECT array_agg((nn_ctid, distance, rank) ORDER BY rank) FROM brute_range(c, r))) AS exact
  FROM (SELECT c, p <-> c AS r FROM pts, (VALUES (point(500000.5, 5400000.5))) v(c)
         WHERE p[0] > 400000 ORDER BY random() LIMIT 25) s;
SELECT count(*) FROM kd_range('pts', 'p', point(50, 50), 5);
SELECT count(*) = (SELECT count(p) FROM pts) AS everything FROM kd_range('pts', point(0, 0), 'Infinity');

-- batched radius: one radius, or one per centre
WITH got AS (SELECT * FROM kd_range_join('pts', ARRAY[point(10, 10), point(55.5, 20), point(90, 90)], 6)),
     want AS (SELECT o::int AS query_ord, b.*
                FROM unnest(ARRAY[point(10, 10), point(55.5, 20), point(90, 90)]) WITH ORDINALITY u(c, o),
                     brute_range(u.c, 6) b)
SELECT (SELECT count(*) FROM got) AS n,
       (SELECT count(*) FROM (SELECT * FROM got EXCEPT ALL SELECT * FROM want) d) AS extra,
       (SELECT count(*) FROM (SELECT * FROM want EXCEPT ALL SELECT * FROM got) d) AS missing;
WITH got AS (SELECT * FROM kd_range_join('pts', ARRAY[point(10, 10), point(55.5, 20), point(90, 90)],
                                         ARRAY[0, 7.25, 10])),
     want AS (SELECT o::int AS query_ord, b.*
                FROM unnest(ARRAY[point(10, 10), point(55.5, 20), point(90, 90)], ARRAY[0, 7.25, 10])
                     WITH ORDINALITY u(c, r, o),
                     brute_range(u.c, u.r) b)
SELECT (SELECT count(*) FROM got) AS n,
       (SELECT count(*) FROM (SELECT * FROM got EXCEPT ALL SELECT * FROM want) d) AS extra,
       (SELECT count(*) FROM (SELECT * FROM want EXCEPT ALL SELECT * FROM got) d) AS missing;
SELECT count(*) FROM kd_range_join('pts', 'p', ARRAY[point(1, 1)], 4);
SELECT count(*) FROM kd_range_join('pts', 'p', ARRAY[point(1, 1), point(2, 2)], ARRAY[4, 5]);
SELECT * FROM kd_range_join('pts', ARRAY[]::point[], 4);

-- box: bounds included, in ctid order; low/high as points or a box
SELECT (SELECT array_agg(nn_ctid) FROM kd_box('pts', point(10, 20), point(30, 50)))
       = (SELECT array_agg(ctid ORDER BY ctid) FROM pts
           WHERE p[0] BETWEEN 10 AND 30 AND p[1] BETWEEN 20 AND 50) AS box_points;
SELECT (SELECT array_agg(nn_ctid) FROM kd_box('pts', box(point(30, 50), point(10, 20))))
       = (SELECT array_agg(ctid ORDER BY ctid) FROM pts
           WHERE p[0] BETWEEN 10 AND 30 AND p[1] BETWEEN 20 AND 50) AS box_type;
SELECT (SELECT count(*) FROM kd_box('pts', 'p', point(20, 20), point(20, 20)))
       = (SELECT count(*) FROM pts WHERE p[0] = 20 AND p[1] = 20) AS degenerate_box;
SELECT count(*) FROM kd_box('pts', 'p', box(point(0, 0), point(5, 5))) b;

-- float8[] points
CREATE TABLE vec (v float8[]);
INSERT INTO vec SELECT ARRAY[random(), random(), random(), random()] FROM generate_series(1, 2000);
INSERT INTO vec SELECT ARRAY[0.5, 0.5, 0.5, 0.5] FROM generate_series(1, 10);
SELECT (SELECT array_agg((nn_ctid, distance, rank) ORDER BY rank) FROM kd_range('vec', ARRAY[0.5, 0.5, 0.5, 0.5], 0.2))
       = (SELECT array_agg((ctid, d, r) ORDER BY r) FROM (
            SELECT ctid, v <-> ARRAY[0.5, 0.5, 0.5, 0.5] AS d,
                   (row_number() OVER (ORDER BY v <-> ARRAY[0.5, 0.5, 0.5, 0.5], ctid))::int AS r
              FROM vec WHERE v <-> ARRAY[0.5, 0.5, 0.5, 0.5] <= 0.2) s) AS vec_range;
SELECT count(*) AS n FROM kd_range_join('vec', ARRAY[[0.5, 0.5, 0.5, 0.5], [0, 0, 0, 0]], ARRAY[0, 0.3]) GROUP BY query_ord ORDER BY query_ord;
SELECT (SELECT array_agg(nn_ctid) FROM kd_box('vec', ARRAY[0.1, 0.2, 0.3, 0.4], ARRAY[0.6, 0.7, 0.8, 0.9]))
       = (SELECT array_agg(ctid ORDER BY ctid) FROM vec
           WHERE v[1] BETWEEN 0.1 AND 0.6 AND v[2] BETWEEN 0.2 AND 0.7
             AND v[3] BETWEEN 0.3 AND 0.8 AND v[4] BETWEEN 0.4 AND 0.9) AS vec_box;

DROP TABLE pts, vec;
DROP FUNCTION brute_range(point, float8);
