-- kd_knn of one query point beside ORDER BY <-> LIMIT 10 through kdgpu,
-- GiST and SP-GiST indexes on copies of the same 2M uniform 2-D points
-- (point, and PostGIS geometry of SRID 3857 through kdgpu and GiST), in
-- one session on the CPU, in two rounds: each statement 200 times at random query points
-- after one untimed pass over the same points (kb_latency of
-- bench/kdbench/setup.sql, in-server timing, median in ms).
-- psql -f bench/kdbench/setup.sql -f bench/sql/knn-one-point.sql
SELECT version();
SET kdgpu.device = cpu;
CREATE EXTENSION IF NOT EXISTS kdgpu;
CREATE EXTENSION IF NOT EXISTS postgis;
CREATE EXTENSION IF NOT EXISTS kdgpu_postgis;
DROP TABLE IF EXISTS ko_kd, ko_gist, ko_spgist, ko_geom_kd, ko_geom_gist;
CREATE TABLE ko_kd AS
  SELECT i AS id, point(random() * 1000, random() * 1000) AS p FROM generate_series(1, 2000000) i;
CREATE TABLE ko_gist AS SELECT * FROM ko_kd;
CREATE TABLE ko_spgist AS SELECT * FROM ko_kd;
CREATE TABLE ko_geom_kd AS SELECT id, ST_SetSRID(ST_MakePoint(p[0], p[1]), 3857) AS g FROM ko_kd;
CREATE TABLE ko_geom_gist AS SELECT * FROM ko_geom_kd;
ALTER TABLE ko_kd ADD PRIMARY KEY (id);
CREATE INDEX ON ko_kd USING kdgpu (p);
CREATE INDEX ON ko_gist USING gist (p);
CREATE INDEX ON ko_spgist USING spgist (p);
CREATE INDEX ON ko_geom_kd USING kdgpu (g);
CREATE INDEX ON ko_geom_gist USING gist (g);
VACUUM ANALYZE ko_kd, ko_gist, ko_spgist, ko_geom_kd, ko_geom_gist;
CREATE TEMP TABLE ko_q AS
  SELECT array_agg(format('(%s,%s)', random() * 1000, random() * 1000)) AS args FROM generate_series(1, 200);
CREATE FUNCTION pg_temp.median_ms(stmt text) RETURNS float8 LANGUAGE sql AS $$
  SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY t)::numeric, 4)::float8
    FROM unnest((SELECT times FROM kb_latency(stmt, (SELECT args FROM ko_q), 200, 1e9))) t $$;
SELECT round, s AS statement, pg_temp.median_ms(s) AS median_ms FROM generate_series(1, 2) round, (VALUES
  ('SELECT count(*) FROM kd_knn(''ko_kd'', $1::point, 10)'),
  ('SELECT count(*) FROM kd_knn(''ko_kd'', $1::point, 10, ''id'')'),
  ('SELECT count(*) FROM (SELECT id FROM ko_kd ORDER BY p <-> $1::point LIMIT 10) s'),
  ('SELECT count(*) FROM (SELECT id FROM ko_gist ORDER BY p <-> $1::point LIMIT 10) s'),
  ('SELECT count(*) FROM (SELECT id FROM ko_spgist ORDER BY p <-> $1::point LIMIT 10) s'),
  ('SELECT count(*) FROM kd_knn(''ko_geom_kd'', ST_SetSRID($1::point::geometry, 3857), 10)'),
  ('SELECT count(*) FROM (SELECT id FROM ko_geom_kd ORDER BY g <-> ST_SetSRID($1::point::geometry, 3857) LIMIT 10) s'),
  ('SELECT count(*) FROM (SELECT id FROM ko_geom_gist ORDER BY g <-> ST_SetSRID($1::point::geometry, 3857) LIMIT 10) s')) v(s)
ORDER BY round;
SELECT last_run FROM kd_status();
-- the same kd_knn reading the table (its path before the index scan, and
-- still the path of a key column without a unique index)
ALTER TABLE ko_kd ADD COLUMN k2 int;
UPDATE ko_kd SET k2 = id;
VACUUM ANALYZE ko_kd;
SELECT pg_temp.median_ms('SELECT count(*) FROM kd_knn(''ko_kd'', $1::point, 10, ''k2'')') AS table_read_median_ms;
SELECT last_run FROM kd_status();
DROP TABLE ko_kd, ko_gist, ko_spgist, ko_geom_kd, ko_geom_gist;
