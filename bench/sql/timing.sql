-- Timing helpers of the benchmark scripts (psql \ir): a statement's
-- median over runs after an untimed run, or its time once, in ms, as
-- clock time in the backend, so psql's round trips are not counted.
-- the median of runs timings of stmt, in ms, after one untimed run
CREATE FUNCTION pg_temp.median_ms(stmt text, runs int) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
  t float8[] := '{}';
  t0 timestamptz;
BEGIN
  EXECUTE stmt;
  FOR i IN 1 .. runs LOOP
    t0 := clock_timestamp();
    EXECUTE stmt;
    t := t || extract(epoch FROM clock_timestamp() - t0) * 1000;
  END LOOP;
  RETURN (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY x)::numeric, 1) FROM unnest(t) x);
END $$;
-- the time of stmt once, in ms
CREATE FUNCTION pg_temp.once_ms(stmt text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
  t0 timestamptz := clock_timestamp();
BEGIN
  EXECUTE stmt;
  RETURN round((extract(epoch FROM clock_timestamp() - t0) * 1000)::numeric, 1);
END $$;
