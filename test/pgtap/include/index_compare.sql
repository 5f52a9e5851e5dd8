-- Helpers shared by the bad-input suites (bad_input.sql and
-- postgis_bad_input.sql): a query through a kdgpu index against its
-- oracle with index scans off.  Functions in pg_temp, for one session.

-- the plan of a query, as one text
CREATE FUNCTION pg_temp.plan_text(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  line text;
  t text := '';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    t := t || line || E'\n';
  END LOOP;
  RETURN t;
END $$;

-- a query's rows as one text, or the error it raises
CREATE FUNCTION pg_temp.outcome(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r text;
BEGIN
  EXECUTE format('SELECT string_agg(x::text, %L) FROM (%s) x', ';', q) INTO r;
  RETURN coalesce(r, '(no rows)');
EXCEPTION WHEN OTHERS THEN
  RETURN 'ERROR ' || SQLSTATE || ': ' || SQLERRM;
END $$;
-- a query with sequential scans off (NULL where a kdgpu index serves it,
-- else its plan; its outcome), and its oracle (by default the query itself)
-- with index scans off (its outcome)
CREATE FUNCTION pg_temp.index_and_seqscan(q text, oracle text DEFAULT NULL) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  r text[];
  plan text;
BEGIN
  SET LOCAL enable_seqscan = off;
  SET LOCAL enable_bitmapscan = off;
  plan := pg_temp.plan_text(q);
  IF EXISTS (SELECT 1 FROM regexp_matches(plan, 'Index (?:Only )?Scan using (\S+) on', 'g') m
               JOIN pg_class c ON c.oid = to_regclass(m[1]) JOIN pg_am a ON a.oid = c.relam
              WHERE a.amname = 'kdgpu') THEN
    plan := NULL;
  END IF;
  r := ARRAY[plan, pg_temp.outcome(q)];
  SET LOCAL enable_seqscan = on;
  SET LOCAL enable_indexscan = off;
  SET LOCAL enable_indexonlyscan = off;
  r := r || pg_temp.outcome(coalesce(oracle, q));
  RESET enable_seqscan;
  RESET enable_bitmapscan;
  RESET enable_indexscan;
  RESET enable_indexonlyscan;
  RETURN r;
END $$;
-- the verdict on index_and_seqscan's answer: a kdgpu index served the query,
-- and gave the oracle's rows in its order, or raised its error
CREATE FUNCTION pg_temp.same_outcome(r text[], descr text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  IF r[1] IS NOT NULL THEN
    RETURN fail(descr) || E'\n' || diag(E'no kdgpu index scan in the plan:\n' || r[1]);
  END IF;
  RETURN is(r[2], r[3], descr);
END $$;
