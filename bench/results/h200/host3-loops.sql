-- per-statement time (us) of index-only LIMIT 10 and radius (~10 rows)
-- in plpgsql loops (static SQL: plans cached, no client round trip), on
-- pgbench-parts' tables, kdgpu beside GiST and the empty tables
DO $d$
DECLARE tab text; kind text; body text;
BEGIN
  FOREACH tab IN ARRAY ARRAY['kp_kd', 'kp_gist', 'kp_empty_kd', 'kp_empty_gist'] LOOP
    FOREACH kind IN ARRAY ARRAY['knn', 'radius'] LOOP
      body := CASE kind WHEN 'knn'
        THEN format('SELECT count(*) INTO c FROM (SELECT p FROM %I ORDER BY p <-> q LIMIT 10) s;', tab)
        ELSE format('SELECT count(*) INTO c FROM %I WHERE p <@ circle(q, 0.000564);', tab) END;
      EXECUTE format($f$
        CREATE OR REPLACE FUNCTION %I(n int) RETURNS float8 LANGUAGE plpgsql AS $b$
        DECLARE t0 timestamptz; c int; q point;
        BEGIN
          PERFORM setseed(0.5);
          t0 := clock_timestamp();
          FOR i IN 1..n LOOP
            q := point(random(), random());
            %s
          END LOOP;
          RETURN round((extract(epoch FROM clock_timestamp() - t0) * 1e6 / n)::numeric, 1);
        END $b$ $f$, 'lp_' || tab || '_' || kind, body);
    END LOOP;
  END LOOP;
END $d$;
VACUUM kp_kd, kp_gist, kp_empty_kd, kp_empty_gist;
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT 'knn' w, r, lp_kp_kd_knn(20000) kd, lp_kp_gist_knn(5000) gist, lp_kp_empty_kd_knn(20000) empty_kd, lp_kp_empty_gist_knn(20000) empty_gist FROM generate_series(1, 3) r;
SELECT 'radius' w, r, lp_kp_kd_radius(20000) kd, lp_kp_gist_radius(20000) gist, lp_kp_empty_kd_radius(20000) empty_kd, lp_kp_empty_gist_radius(20000) empty_gist FROM generate_series(1, 3) r;
EXPLAIN (ANALYZE, BUFFERS) SELECT count(*) FROM (SELECT p FROM kp_kd ORDER BY p <-> point(0.3, 0.4) LIMIT 10) s;
EXPLAIN (ANALYZE, BUFFERS) SELECT count(*) FROM kp_kd WHERE p <@ circle(point(0.3, 0.4), 0.000564);
