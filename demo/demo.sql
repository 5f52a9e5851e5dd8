-- demo/demo.sql: kdgpu on :points generated points (run by demo/run)
\set QUIET on
\pset footer off
CREATE EXTENSION kdgpu;

\echo
\echo '== where kdgpu runs'
SELECT device, runs_on, gpu_usable, gpu, cpu_threads FROM kd_status();

\echo '== data: ':points' points in 200 clusters over a 100 km square (metres), plus noise'
SELECT setseed(0.42) AS seed \gset
CREATE TABLE pts (id int PRIMARY KEY, p point);
INSERT INTO pts
  SELECT i, CASE WHEN i % 10 = 0
                 THEN point(random() * 100000, random() * 100000)
                 ELSE point(c.x + (random() + random() + random() - 1.5) * 800,
                            c.y + (random() + random() + random() - 1.5) * 800) END
    FROM generate_series(1, :points) i
    JOIN (SELECT j, random() * 100000 AS x, random() * 100000 AS y FROM generate_series(0, 199) j) c
      ON c.j = i % 200;
VACUUM ANALYZE pts;

\timing on
\echo
\echo '== kNN: the 5 nearest rows to one point'
SELECT rank, nn_key AS id, distance
  FROM kd_knn('pts', point(50000, 50000), 5, key_col => 'id')
 ORDER BY rank;

\echo '== All-kNN: every point''s 10 nearest neighbours (one row per pair)'
SELECT count(*) AS pairs, round(avg(distance)::numeric, 2) AS avg_distance_m
  FROM kd_all_knn('pts', 10, 'id');

\echo '== All-kNN, one row per point with arrays of ids: the first three points'
CREATE TEMP TABLE nn AS SELECT * FROM kd_all_knn_arrays('pts', 10, 'id');
SELECT query_key AS id, nn_keys[1:3] AS nearest_3, distances[1:3] AS distances_m
  FROM nn ORDER BY query_key LIMIT 3;

\echo '== kNN join: the 3 nearest rows to each of 10000 query points'
SELECT count(*) AS rows, max(distance) AS farthest_m
  FROM kd_knn_join('pts', (SELECT array_agg(point(random() * 100000, random() * 100000))
                             FROM generate_series(1, 10000)), 3);

\echo '== range: rows within 250 m of point 1, and inside a 2 km box'
SELECT count(*) AS within_250m, max(distance) AS farthest_m FROM kd_range('pts', (SELECT p FROM pts WHERE id = 1), 250);
SELECT count(*) AS in_box FROM kd_box('pts', point(40000, 40000), point(42000, 42000));

\echo '== for comparison: the same All-kNN through an SP-GiST index and LATERAL'
CREATE INDEX ON pts USING spgist (p);
SELECT count(*) AS pairs FROM pts a CROSS JOIN LATERAL (
  SELECT o.id FROM pts o WHERE o.id <> a.id ORDER BY o.p <-> a.p LIMIT 10) b;

\echo '== exactness: All-kNN equals SP-GiST''s 20 nearest re-sorted by (distance, id), for 20000 points'
SELECT count(*) AS differences FROM (
  (SELECT * FROM kd_all_knn('pts', 10, 'id') WHERE query_key <= 20000
   EXCEPT ALL
   SELECT a.id, b.id, b.d, (row_number() OVER (PARTITION BY a.id ORDER BY b.d, b.id))::int
     FROM pts a, LATERAL (
       SELECT id, d FROM (SELECT o.id, o.p <-> a.p AS d FROM pts o WHERE o.id <> a.id
                           ORDER BY o.p <-> a.p LIMIT 20) s
        ORDER BY d, id LIMIT 10) b
    WHERE a.id <= 20000)) d;
