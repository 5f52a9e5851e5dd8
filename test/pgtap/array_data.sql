-- Behaviour on float8[] points of 1 to 8 dimensions: kNN joins, All-kNN,
-- radius joins and boxes against brute force in SQL (ORDER BY v <-> q,
-- ctid), on data that is half uniform and half snapped to a coarse grid
-- (ties), on the CPU and with automatic device choice.
BEGIN;
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;

SELECT plan(8 * 2 * 4);
SELECT setseed(0.6);

-- vecD: 600 points of D dimensions; qD: 12 query points
CREATE FUNCTION pg_temp.make(d int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TEMP TABLE vec%s (v float8[])', d);
  EXECUTE format($q$INSERT INTO vec%s
    SELECT array_agg(CASE WHEN i %% 2 = 0 THEN random() ELSE round(random() * 3) / 3 END ORDER BY j)
      FROM generate_series(1, 600) i, generate_series(1, %s) j GROUP BY i$q$, d, d);
  EXECUTE format('CREATE TEMP TABLE q%s (q float8[])', d);
  EXECUTE format($q$INSERT INTO q%s
    SELECT array_agg(CASE WHEN i %% 3 = 0 THEN round(random() * 3) / 3 ELSE random() * 1.4 - 0.2 END ORDER BY j)
      FROM generate_series(1, 12) i, generate_series(1, %s) j GROUP BY i$q$, d, d);
END $$;
SELECT pg_temp.make(d) FROM generate_series(1, 8) d;

-- the query points of qD as a two-dimensional array, in a fixed order
CREATE FUNCTION pg_temp.qarr(d int) RETURNS float8[] LANGUAGE plpgsql AS $$
DECLARE
  r float8[];
BEGIN
  EXECUTE format('SELECT array_agg(q ORDER BY q::text) FROM q%s', d) INTO r;
  RETURN r;
END $$;

CREATE FUNCTION pg_temp.check(dev text, got text, want text, descr text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('kdgpu.device', dev, true);
  PERFORM set_config('kdgpu.gpu_min_points', CASE dev WHEN 'auto' THEN '0' ELSE '100000' END, true);
  RETURN results_eq(got, want, descr || ' [' || dev || ']');
END $$;

SELECT pg_temp.check(dev, format($$
    SELECT * FROM kd_knn_join('vec%s', pg_temp.qarr(%s), 8) $$, d, d),
  format($$
    SELECT o::int, b.* FROM (SELECT q, row_number() OVER (ORDER BY q::text) AS o FROM q%s) u,
      LATERAL (SELECT ctid, v <-> u.q, (row_number() OVER (ORDER BY v <-> u.q, ctid))::int
                 FROM vec%s ORDER BY v <-> u.q, ctid LIMIT 8) b ORDER BY 1, 4 $$, d, d),
  format('kd_knn_join in %s-D', d))
FROM generate_series(1, 8) d, (VALUES ('cpu'), ('auto')) ds(dev);

SELECT pg_temp.check(dev, format($$
    SELECT * FROM kd_all_knn('vec%s', 5) $$, d),
  format($$
    SELECT a.ctid, b.* FROM vec%s a, LATERAL (
      SELECT o.ctid, a.v <-> o.v, (row_number() OVER (ORDER BY a.v <-> o.v, o.ctid))::int
        FROM vec%s o WHERE o.ctid <> a.ctid ORDER BY a.v <-> o.v, o.ctid LIMIT 5) b ORDER BY 1, 4 $$, d, d),
  format('kd_all_knn in %s-D', d))
FROM generate_series(1, 8) d, (VALUES ('cpu'), ('auto')) ds(dev);

SELECT pg_temp.check(dev, format($$
    SELECT * FROM kd_range_join('vec%s', pg_temp.qarr(%s),
                                (SELECT array_agg(0.1 * (i %% 4) + 0.05) FROM generate_series(1, 12) i)) $$, d, d),
  format($$
    SELECT o::int, b.* FROM (SELECT q, row_number() OVER (ORDER BY q::text) AS o FROM q%s) u,
      LATERAL (SELECT ctid, v <-> u.q, (row_number() OVER (ORDER BY v <-> u.q, ctid))::int
                 FROM vec%s WHERE v <-> u.q <= 0.1 * (u.o %% 4) + 0.05 ORDER BY v <-> u.q, ctid) b ORDER BY 1, 4 $$, d, d),
  format('kd_range_join with radii in %s-D', d))
FROM generate_series(1, 8) d, (VALUES ('cpu'), ('auto')) ds(dev);

SELECT pg_temp.check(dev, format($$
    SELECT * FROM kd_box('vec%s', array_fill((1.0 / 3)::float8, ARRAY[%s]), array_fill(0.9::float8, ARRAY[%s])) $$, d, d, d),
  format($$
    SELECT ctid FROM vec%s
     WHERE (SELECT bool_and(x BETWEEN (1.0 / 3)::float8 AND 0.9) FROM unnest(v) x) ORDER BY ctid $$, d),
  format('kd_box in %s-D', d))
FROM generate_series(1, 8) d, (VALUES ('cpu'), ('auto')) ds(dev);

SELECT * FROM finish();
ROLLBACK;
