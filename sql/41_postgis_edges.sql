-- Edge cases of kdgpu_postgis found in review, each against PostGIS itself
-- on a sequential scan: a point far away in an ordered scan, kd_dwithin
-- against another column of the same table, && with a curve, and
-- geography at longitude -180 and against a line that stores no box.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS postgis;
CREATE EXTENSION IF NOT EXISTS kdgpu;
CREATE EXTENSION IF NOT EXISTS kdgpu_postgis;
RESET client_min_messages;

-- a point at 1e200 (its squared distance overflows): every row once, in order
CREATE TABLE pe_far (id int, g geometry(Point));
INSERT INTO pe_far SELECT i, ST_MakePoint(i, 0) FROM generate_series(0, 15) i;
INSERT INTO pe_far VALUES (99, ST_MakePoint(1e200, 0));
CREATE INDEX pe_far_g ON pe_far USING kdgpu (g);
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM pe_far ORDER BY g <-> 'POINT(0 0)'::geometry;
SELECT string_agg(id::text, ',') FROM (SELECT id FROM pe_far ORDER BY g <-> 'POINT(0 0)'::geometry) s;
RESET enable_seqscan;

-- kd_dwithin with the other side a column of the same table: no index condition
CREATE TABLE pe_two (id int, g geometry(Point), g2 geometry(Point));
INSERT INTO pe_two SELECT i, ST_MakePoint(i % 50, i / 50), ST_MakePoint(i % 50 + (i % 3), i / 50)
  FROM generate_series(1, 2000) i;
CREATE INDEX ON pe_two USING kdgpu (g);
SET enable_seqscan = off;
SELECT count(*) FROM pe_two WHERE kd_dwithin(g, g2, 1.5);
SELECT count(*) FROM pe_two WHERE kd_dwithin(g, g, 0);
RESET enable_seqscan;
SELECT count(*) FROM pe_two WHERE ST_DWithin(g, g2, 1.5);

-- && with a circular arc: its box reaches y = 1, past its control points
CREATE TABLE pe_arc (id int, g geometry(Point));
INSERT INTO pe_arc SELECT i, ST_MakePoint((i % 21 - 10) / 10.0, (i / 21) / 10.0)
  FROM generate_series(0, 21 * 11 - 1) i;
INSERT INTO pe_arc VALUES (1000, 'POINT(0 0.99)');
CREATE INDEX ON pe_arc USING kdgpu (g);
SET enable_seqscan = off;
SELECT array_agg(id ORDER BY id) FROM pe_arc
  WHERE g && 'CIRCULARSTRING(-0.7071 0.7071, -0.1736 0.9848, 0.7071 0.7071)'::geometry;
RESET enable_seqscan;
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT array_agg(id ORDER BY id) FROM pe_arc
  WHERE g && 'CIRCULARSTRING(-0.7071 0.7071, -0.1736 0.9848, 0.7071 0.7071)'::geometry;
RESET enable_indexscan; RESET enable_bitmapscan;

-- geography at longitude -180, and && against a two-point line
CREATE TABLE pe_geog (id int, g geography(Point, 4326));
INSERT INTO pe_geog VALUES (1, 'SRID=4326;POINT(-180 10)'), (2, 'SRID=4326;POINT(180 10)'),
  (3, 'SRID=4326;POINT(179.9 10)'), (4, 'SRID=4326;POINT(0.5 0.5)'), (5, 'SRID=4326;POINT(0 0)'),
  (6, 'SRID=4326;POINT(10 10)');
INSERT INTO pe_geog SELECT 100 + i, ST_MakePoint(i % 360 - 180, (i % 170) - 85)::geography
  FROM generate_series(1, 1000) i;
CREATE INDEX ON pe_geog USING kdgpu (g);
SET enable_seqscan = off;
SELECT array_agg(id ORDER BY id) FROM pe_geog WHERE kd_dwithin(g, 'SRID=4326;POINT(-180 10)'::geography, 0);
SELECT array_agg(id ORDER BY id) FROM pe_geog WHERE g && 'SRID=4326;LINESTRING(0 0, 1 1)'::geography;
RESET enable_seqscan;
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT array_agg(id ORDER BY id) FROM pe_geog WHERE ST_DWithin(g, 'SRID=4326;POINT(-180 10)'::geography, 0);
SELECT array_agg(id ORDER BY id) FROM pe_geog WHERE g && 'SRID=4326;LINESTRING(0 0, 1 1)'::geography;
RESET enable_indexscan; RESET enable_bitmapscan;

DROP TABLE pe_far, pe_two, pe_arc, pe_geog;
