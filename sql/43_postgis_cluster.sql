-- Clustering on PostGIS columns against PostGIS itself: kd_cluster_dbscan
-- gives ST_ClusterDBSCAN's noise rows, core rows and clusters of core
-- rows (as sets; PostGIS may give a border row within reach of two
-- clusters to either), on PostGIS's own regression cases (cluster.sql)
-- and on clustered data in SRID 3857 with duplicates and points exactly
-- eps apart; kd_cluster_within gives ST_ClusterWithin's clusters; on
-- geography (metres on the sphere, as <->) the brute-force oracle
-- (cl_check); 3-D points; and PostGIS's errors for mixed SRIDs.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS postgis;
CREATE EXTENSION IF NOT EXISTS kdgpu;
CREATE EXTENSION IF NOT EXISTS kdgpu_postgis;
RESET client_min_messages;
SELECT setseed(0.125);
\getenv abs_srcdir PG_ABS_SRCDIR
\set cl_check_file :abs_srcdir '/sql/include/cluster_check.sql'
\i :cl_check_file

-- PostGIS's dbscan_inputs (regress/core/cluster.sql), side by side
CREATE TABLE dbscan_inputs (id int, geom geometry);
INSERT INTO dbscan_inputs VALUES
(1, 'POINT (0 0)'), (2, 'POINT (0 1)'), (3, 'POINT (-0.5 0.5)'),
(4, 'POINT (1 0)'), (5, 'POINT (1 1)'), (6, 'POINT (1.0 0.5)');
SELECT id, ST_ClusterDBSCAN(geom, eps := 0.8, minpoints := 1) OVER (ORDER BY id) AS postgis,
       kd_cluster_dbscan(geom, eps := 0.8, minpoints := 1) OVER (ORDER BY id) AS kdgpu
FROM dbscan_inputs ORDER BY id;
SELECT id, ST_ClusterDBSCAN(geom, eps := 0.8, minpoints := 4) OVER (ORDER BY id) AS postgis,
       kd_cluster_dbscan(geom, eps := 0.8, minpoints := 4) OVER (ORDER BY id) AS kdgpu
FROM dbscan_inputs ORDER BY id;
SELECT id, ST_ClusterDBSCAN(geom, eps := 0.6, minpoints := 3) OVER (ORDER BY id) AS postgis,
       kd_cluster_dbscan(geom, eps := 0.6, minpoints := 3) OVER (ORDER BY id) AS kdgpu
FROM dbscan_inputs ORDER BY id;
-- #3612b: one point, minpoints 5
SELECT ST_ClusterDBSCAN(ST_Point(1, 1), 20.1, 5) OVER () AS postgis,
       kd_cluster_dbscan(ST_Point(1, 1), 20.1, 5) OVER () AS kdgpu;

-- clustered points in SRID 3857: 40 Gaussian clusters, snapped to a 50 m
-- grid (duplicates, and many pairs exactly 100 m apart), 10% uniform
-- background, NULLs and empty points
CREATE TABLE cl_geo (id int PRIMARY KEY, part int, g geometry(Point, 3857));
INSERT INTO cl_geo
SELECT i, i % 2, ST_SetSRID(ST_MakePoint(
         50 * round(CASE WHEN random() < 0.1 THEN random() * 40000
                         ELSE cx + 120 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * t) END / 50),
         50 * round(CASE WHEN random() < 0.1 THEN random() * 40000
                         ELSE cy + 120 * sqrt(-2 * ln(1 - random())) * sin(2 * pi() * t) END / 50)), 3857)
FROM (SELECT i, random() AS t, c.cx, c.cy
      FROM generate_series(1, 1200) i
      JOIN (SELECT j, random() * 40000 AS cx, random() * 40000 AS cy FROM generate_series(0, 39) j) c
        ON c.j = i % 40) s;
INSERT INTO cl_geo VALUES (5001, 0, NULL), (5002, 1, 'SRID=3857;POINT EMPTY');

-- against ST_ClusterDBSCAN: rows on which the two disagree, for each rule
CREATE FUNCTION cl_vs_postgis(eps float8, minpoints int)
RETURNS TABLE (rule text, breaking bigint) LANGUAGE plpgsql AS $f$
BEGIN
  DROP TABLE IF EXISTS cl_both;
  CREATE TEMP TABLE cl_both AS
    SELECT id, part, g,
           ST_ClusterDBSCAN(g, eps, minpoints) OVER (PARTITION BY part ORDER BY id) AS pg,
           kd_cluster_dbscan(g, eps, minpoints) OVER (PARTITION BY part ORDER BY id) AS kd,
           (SELECT count(*) FROM cl_geo o WHERE o.part = c.part AND ST_DWithin(o.g, c.g, eps)) >= minpoints AS core
    FROM cl_geo c;
  RETURN QUERY
  SELECT 'same noise rows', count(*) FROM cl_both WHERE (pg IS NULL) <> (kd IS NULL)
  UNION ALL
  SELECT 'same core clusters', (SELECT count(DISTINCT (part, pg)) + count(DISTINCT (part, kd))
                                       - 2 * count(DISTINCT (part, pg, kd))
                                FROM cl_both WHERE core)
  UNION ALL
  SELECT 'border in a cluster in reach', count(*) FROM cl_both b
  WHERE NOT b.core AND b.kd IS NOT NULL
    AND NOT EXISTS (SELECT FROM cl_both c WHERE c.core AND c.part = b.part AND c.kd = b.kd
                    AND ST_DWithin(c.g, b.g, eps))
  UNION ALL
  SELECT 'clusters', count(DISTINCT (part, kd)) FROM cl_both
  UNION ALL
  SELECT 'noise rows', count(*) FROM cl_both WHERE kd IS NULL;
END $f$;
SELECT * FROM cl_vs_postgis(100, 5);
SELECT * FROM cl_vs_postgis(150, 8);
SELECT * FROM cl_vs_postgis(50, 2);
-- and the brute-force rules, with ST_Distance as the metric
CREATE TEMP TABLE cl_geo_labels AS
  SELECT id, kd_cluster_dbscan(g, 100, 5) OVER (PARTITION BY part ORDER BY id) AS c FROM cl_geo;
SELECT * FROM cl_check('cl_geo', 'cl_geo_labels', 'ST_Distance(a.g, b.g)', 100, 5);

-- kd_cluster_within against ST_ClusterWithin: the same sets of points
WITH kd AS (SELECT kd_cluster_within(g, 100) OVER (ORDER BY id) AS c, g FROM cl_geo WHERE part = 0),
     kd_sets AS (SELECT array_agg(ST_AsText(g) ORDER BY ST_X(g), ST_Y(g)) AS s FROM kd
                 WHERE c IS NOT NULL GROUP BY c),
     pg_sets AS (SELECT ARRAY(SELECT ST_AsText(d.geom) FROM ST_Dump(gc) d
                              ORDER BY ST_X(d.geom), ST_Y(d.geom)) AS s
                 FROM unnest((SELECT ST_ClusterWithin(g, 100) FROM cl_geo
                              WHERE part = 0 AND NOT ST_IsEmpty(g))) gc)
SELECT (SELECT count(*) FROM kd_sets) AS kdgpu_sets, (SELECT count(*) FROM pg_sets) AS postgis_sets,
       (SELECT count(*) FROM (SELECT s FROM kd_sets EXCEPT SELECT s FROM pg_sets) x) AS only_kdgpu,
       (SELECT count(*) FROM (SELECT s FROM pg_sets EXCEPT SELECT s FROM kd_sets) x) AS only_postgis;

-- the table forms on a geometry column with a kdgpu index
CREATE INDEX cl_geo_g ON cl_geo USING kdgpu (g);
VACUUM cl_geo;
SELECT count(*) AS differing
FROM (SELECT ctid AS t, kd_cluster_dbscan(g, 100, 5) OVER (ORDER BY ctid) AS c
      FROM cl_geo WHERE g IS NOT NULL AND NOT ST_IsEmpty(g)) w
FULL JOIN kd_dbscan('cl_geo', 'g', 100, 5) d ON d.nn_ctid = w.t
WHERE w.c IS DISTINCT FROM d.cluster OR w.t IS NULL OR d.nn_ctid IS NULL;
-- (the empty point is kept outside the index's trees: the table is read)
SELECT substring(last_run from 'cl_geo: .*') AS source FROM kd_status();
DELETE FROM cl_geo WHERE ST_IsEmpty(g);
VACUUM cl_geo;
SELECT count(*) AS differing
FROM (SELECT ctid AS t, kd_cluster_dbscan(g, 100, 5) OVER (ORDER BY ctid) AS c
      FROM cl_geo WHERE g IS NOT NULL) w
FULL JOIN kd_dbscan('cl_geo', 'g', 100, 5) d ON d.nn_ctid = w.t
WHERE w.c IS DISTINCT FROM d.cluster OR w.t IS NULL OR d.nn_ctid IS NULL;
SELECT substring(last_run from 'cl_geo: .*') AS source FROM kd_status();

-- geography: metres on the sphere, decided as <-> decides them; points
-- near the antimeridian and a pole
CREATE TABLE cl_geog (id int PRIMARY KEY, part int, g geography(Point, 4326));
INSERT INTO cl_geog
SELECT i, 0, ST_SetSRID(ST_MakePoint(CASE WHEN x > 180 THEN x - 360 ELSE x END, y), 4326)::geography
FROM (SELECT i, 179.98 + random() * 0.04 AS x, (random() - 0.5) * 0.02 AS y
      FROM generate_series(1, 200) i) s;
INSERT INTO cl_geog
SELECT 200 + i, 1, ST_SetSRID(ST_MakePoint(random() * 360 - 180, 89.99 + random() * 0.01), 4326)::geography
FROM generate_series(1, 200) i;
CREATE TEMP TABLE cl_geog_labels AS
  SELECT id, kd_cluster_dbscan(g, 150, 4) OVER (PARTITION BY part ORDER BY id) AS c FROM cl_geog;
SELECT * FROM cl_check('cl_geog', 'cl_geog_labels', 'a.g <-> b.g', 150, 4);
SELECT count(DISTINCT c) > 1 AS several_clusters FROM cl_geog_labels;

-- 3-D points: distances in 3-D
CREATE TABLE cl_3d (id int PRIMARY KEY, part int, g geometry(PointZ, 0));
INSERT INTO cl_3d SELECT i, 0, ST_MakePoint(floor(random() * 5), floor(random() * 5), floor(random() * 5))
FROM generate_series(1, 200) i;
CREATE TEMP TABLE cl_3d_labels AS
  SELECT id, kd_cluster_dbscan(g, 1, 4) OVER (ORDER BY id) AS c FROM cl_3d;
SELECT * FROM cl_check('cl_3d', 'cl_3d_labels', 'ST_3DDistance(a.g, b.g)', 1, 4);

-- errors: mixed SRIDs, and lines
SELECT kd_cluster_dbscan(g, 1, 2) OVER ()
FROM (VALUES ('SRID=3857;POINT(0 0)'::geometry), ('SRID=4326;POINT(0 0)'::geometry)) v(g);
SELECT kd_cluster_dbscan(g, 1, 2) OVER ()
FROM (VALUES ('POINT(0 0)'::geometry), ('LINESTRING(0 0, 1 1)'::geometry)) v(g);

-- kd_pairs_within against the ST_DWithin self-join (the pairs and their
-- ST_Distance), on geometry with a kdgpu index and on geography
SELECT count(*) AS pairs,
       (SELECT count(*) FROM (
          SELECT a.ctid, b.ctid, ST_Distance(a.g, b.g) FROM cl_geo a JOIN cl_geo b
            ON a.ctid < b.ctid AND ST_DWithin(a.g, b.g, 100)
          EXCEPT SELECT * FROM kd_pairs_within('cl_geo', 'g', 100)) x) AS only_postgis,
       (SELECT count(*) FROM (
          SELECT * FROM kd_pairs_within('cl_geo', 'g', 100)
          EXCEPT SELECT a.ctid, b.ctid, ST_Distance(a.g, b.g) FROM cl_geo a JOIN cl_geo b
            ON a.ctid < b.ctid AND ST_DWithin(a.g, b.g, 100)) x) AS only_kdgpu
FROM kd_pairs_within('cl_geo', 'g', 100);
SELECT count(*) AS pairs,
       (SELECT count(*) FROM (
          SELECT a.id, b.id, a.g <-> b.g FROM cl_geog a JOIN cl_geog b ON a.id < b.id AND a.g <-> b.g <= 150
          EXCEPT SELECT * FROM kd_pairs_within('cl_geog', 'g', 150, key_col => 'id')) x) AS only_brute_force,
       (SELECT count(*) FROM (
          SELECT * FROM kd_pairs_within('cl_geog', 'g', 150, key_col => 'id')
          EXCEPT SELECT a.id, b.id, a.g <-> b.g FROM cl_geog a JOIN cl_geog b ON a.id < b.id AND a.g <-> b.g <= 150) x) AS only_kdgpu
FROM kd_pairs_within('cl_geog', 'g', 150, key_col => 'id');
