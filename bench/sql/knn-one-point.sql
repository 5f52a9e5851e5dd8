-- kd_knn of one query point beside ORDER BY <-> LIMIT 10 through kdgpu,
-- GiST and SP-GiST indexes on copies of the same 1M uniform 2-D points, in
-- one session on the CPU: each statement 200 times at random query points
-- (kb_latency of bench/kdbench/setup.sql, in-server timing, median in ms).
-- psql -f bench/kdbench/setup.sql -f bench/sql/knn-one-point.sql
SELECT version();
SET kdgpu.device = cpu;
DROP TABLE IF EXISTS ko_kd, ko_gist, ko_spgist;
CREATE TABLE ko_kd AS
  SELECT i AS id, point(random() * 1000, random() * 1000) AS p FROM generate_series(1, 1000000) i;
CREATE TABLE ko_gist AS SELECT * FROM ko_kd;
CREATE TABLE ko_spgist AS SELECT * FROM ko_kd;
ALTER TABLE ko_kd ADD PRIMARY KEY (id);
CREATE INDEX ON ko_kd USING kdgpu (p);
CREATE INDEX ON ko_gist USING gist (p);
CREATE INDEX ON ko_spgist USING spgist (p);
VACUUM ANALYZE ko_kd, ko_gist, ko_spgist;
CREATE TEMP TABLE ko_q AS
  SELECT array_agg(format('(%s,%s)', random() * 1000, random() * 1000)) AS args FROM generate_series(1, 200);
CREATE FUNCTION pg_temp.median_ms(stmt text) RETURNS float8 LANGUAGE sql AS $$
  SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY t)::numeric, 4)::float8
    FROM unnest((SELECT times FROM kb_latency(stmt, (SELECT args FROM ko_q), 20, 1e9))) t $$;
SELECT s AS statement, pg_temp.median_ms(s) AS median_ms FROM (VALUES
  ('SELECT count(*) FROM kd_knn(''ko_kd'', $1::point, 10)'),
  ('SELECT count(*) FROM kd_knn(''ko_kd'', $1::point, 10, ''id'')'),
  ('SELECT count(*) FROM (SELECT id FROM ko_kd ORDER BY p <-> $1::point LIMIT 10) s'),
  ('SELECT count(*) FROM (SELECT id FROM ko_gist ORDER BY p <-> $1::point LIMIT 10) s'),
  ('SELECT count(*) FROM (SELECT id FROM ko_spgist ORDER BY p <-> $1::point LIMIT 10) s')) v(s);
SELECT last_run FROM kd_status();
-- the same kd_knn reading the table (its path before the index scan, and
-- still the path of a key column without a unique index)
ALTER TABLE ko_kd ADD COLUMN k2 int;
UPDATE ko_kd SET k2 = id;
VACUUM ANALYZE ko_kd;
SELECT pg_temp.median_ms('SELECT count(*) FROM kd_knn(''ko_kd'', $1::point, 10, ''k2'')') AS table_read_median_ms;
SELECT last_run FROM kd_status();
DROP TABLE ko_kd, ko_gist, ko_spgist;
