-- Behaviour on point data: every function against brute force in SQL
-- (ORDER BY p <-> q, ctid), on uniform, clustered and duplicate-heavy data,
-- on the CPU and with automatic device choice at the smallest threshold
-- (the GPU where one is usable).
BEGIN;
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;

SELECT plan(3 * 2 * 7);
SELECT setseed(0.3);

-- the data sets
CREATE TEMP TABLE uniform (p point);
INSERT INTO uniform SELECT point(random() * 1000, random() * 1000) FROM generate_series(1, 1000);
CREATE TEMP TABLE clustered (p point);
INSERT INTO clustered
  SELECT point(cx + (random() + random() + random() - 1.5) * 2, cy + (random() + random() + random() - 1.5) * 2)
    FROM (SELECT random() * 1000 AS cx, random() * 1000 AS cy FROM generate_series(1, 12)) c,
         generate_series(1, 85);
CREATE TEMP TABLE duplicates (p point);
INSERT INTO duplicates SELECT point(round(random() * 8) * 125, round(random() * 8) * 125) FROM generate_series(1, 1000);
CREATE TEMP TABLE queries (q point);
INSERT INTO queries SELECT point(random() * 1000, random() * 1000) FROM generate_series(1, 6);
INSERT INTO queries VALUES (point(500, 500)), (point(250, 375)), (point(-5000, 2000)), (point(1e7, -1e7));

-- one check: set the device, compare two queries row by row
CREATE FUNCTION pg_temp.check(dev text, got text, want text, descr text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('kdgpu.device', dev, true);
  PERFORM set_config('kdgpu.gpu_min_points', CASE dev WHEN 'auto' THEN '0' ELSE '100000' END, true);
  RETURN results_eq(got, want, descr || ' [' || dev || ']');
END $$;

SELECT pg_temp.check(dev, format($$
    SELECT q.q::text, k.* FROM queries q, kd_knn(%L, q.q, 10) k ORDER BY 1, k.rank $$, t),
  format($$
    SELECT q.q::text, b.* FROM queries q, LATERAL (
      SELECT ctid, p <-> q.q, (row_number() OVER (ORDER BY p <-> q.q, ctid))::int
        FROM %I ORDER BY p <-> q.q, ctid LIMIT 10) b ORDER BY 1, 4 $$, t),
  'kd_knn on ' || t)
FROM (VALUES ('uniform'), ('clustered'), ('duplicates')) ts(t), (VALUES ('cpu'), ('auto')) ds(dev);

SELECT pg_temp.check(dev, format($$
    SELECT * FROM kd_knn_join(%L, (SELECT array_agg(q ORDER BY q[0], q[1]) FROM queries), 7) $$, t),
  format($$
    SELECT o::int, b.* FROM unnest((SELECT array_agg(q ORDER BY q[0], q[1]) FROM queries)) WITH ORDINALITY u(q, o),
      LATERAL (SELECT ctid, p <-> u.q, (row_number() OVER (ORDER BY p <-> u.q, ctid))::int
                 FROM %I ORDER BY p <-> u.q, ctid LIMIT 7) b ORDER BY 1, 4 $$, t),
  'kd_knn_join (array) on ' || t)
FROM (VALUES ('uniform'), ('clustered'), ('duplicates')) ts(t), (VALUES ('cpu'), ('auto')) ds(dev);

SELECT pg_temp.check(dev, format($$
    SELECT * FROM kd_knn_join(%L, 'queries'::regclass, 3) ORDER BY query_ctid, rank $$, t),
  format($$
    SELECT q.ctid, b.* FROM queries q, LATERAL (
      SELECT ctid, p <-> q.q, (row_number() OVER (ORDER BY p <-> q.q, ctid))::int
        FROM %I ORDER BY p <-> q.q, ctid LIMIT 3) b ORDER BY 1, 4 $$, t),
  'kd_knn_join (table) on ' || t)
FROM (VALUES ('uniform'), ('clustered'), ('duplicates')) ts(t), (VALUES ('cpu'), ('auto')) ds(dev);

SELECT pg_temp.check(dev, format($$
    SELECT * FROM kd_all_knn(%L, 6) $$, t),
  format($$
    SELECT a.ctid, b.* FROM %I a, LATERAL (
      SELECT o.ctid, a.p <-> o.p, (row_number() OVER (ORDER BY a.p <-> o.p, o.ctid))::int
        FROM %I o WHERE o.ctid <> a.ctid ORDER BY a.p <-> o.p, o.ctid LIMIT 6) b ORDER BY 1, 4 $$, t, t),
  'kd_all_knn on ' || t)
FROM (VALUES ('uniform'), ('clustered'), ('duplicates')) ts(t), (VALUES ('cpu'), ('auto')) ds(dev);

SELECT pg_temp.check(dev, format($$
    SELECT query_ctid, nn_ctids, distances FROM kd_all_knn_arrays(%L, 4, include_self => true) $$, t),
  format($$
    SELECT a.ctid, array_agg(b.ctid ORDER BY b.d, b.ctid), array_agg(b.d ORDER BY b.d, b.ctid) FROM %I a, LATERAL (
      SELECT o.ctid, a.p <-> o.p AS d FROM %I o ORDER BY a.p <-> o.p, o.ctid LIMIT 4) b
     GROUP BY a.ctid ORDER BY 1 $$, t, t),
  'kd_all_knn_arrays with include_self on ' || t)
FROM (VALUES ('uniform'), ('clustered'), ('duplicates')) ts(t), (VALUES ('cpu'), ('auto')) ds(dev);

SELECT pg_temp.check(dev, format($$
    SELECT * FROM kd_range_join(%L, (SELECT array_agg(q ORDER BY q[0], q[1]) FROM queries), 125) $$, t),
  format($$
    SELECT o::int, b.* FROM unnest((SELECT array_agg(q ORDER BY q[0], q[1]) FROM queries)) WITH ORDINALITY u(q, o),
      LATERAL (SELECT ctid, p <-> u.q, (row_number() OVER (ORDER BY p <-> u.q, ctid))::int
                 FROM %I WHERE p <-> u.q <= 125 ORDER BY p <-> u.q, ctid) b ORDER BY 1, 4 $$, t),
  'kd_range_join on ' || t)
FROM (VALUES ('uniform'), ('clustered'), ('duplicates')) ts(t), (VALUES ('cpu'), ('auto')) ds(dev);

SELECT pg_temp.check(dev, format($$
    SELECT * FROM kd_box(%L, point(125, 250), point(625, 500)) $$, t),
  format($$
    SELECT ctid FROM %I WHERE p[0] BETWEEN 125 AND 625 AND p[1] BETWEEN 250 AND 500 ORDER BY ctid $$, t),
  'kd_box on ' || t)
FROM (VALUES ('uniform'), ('clustered'), ('duplicates')) ts(t), (VALUES ('cpu'), ('auto')) ds(dev);

SELECT * FROM finish();
ROLLBACK;
