-- Helpers shared by the bad-input suites (bad_input.sql and
-- postgis_bad_input.sql): a query through a kdgpu index against its
-- oracle with index scans off, and a statement the index must take.
-- Functions in pg_temp, for one session.

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
-- a statement the index must take: it succeeds, the index passes
-- kd_index_check and answers its kind's probes (the suite's pg_temp.probes:
-- kind, descr, q and oracle, %T the table and %C the indexed column; descr
-- defaults to q, the oracle to q itself) as a sequential scan does; then the
-- statement is undone, so that the tables stay as they were.  what names
-- the tests (by default the statement).
CREATE FUNCTION pg_temp.takes(stmt text, idx text, tab text, col text, kind text,
                              what text DEFAULT NULL)
  RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
  err text;
  chk text;
  qs text[] := '{}';
  os text[] := '{}';
  ds text[] := '{}';
  res text[] := '{}';
  pr record;
BEGIN
  what := coalesce(what, stmt);
  FOR pr IN SELECT replace(replace(q, '%T', tab), '%C', col) q,
                   replace(replace(coalesce(oracle, q), '%T', tab), '%C', col) o,
                   replace(replace(coalesce(descr, q), '%T', tab), '%C', col) d
              FROM pg_temp.probes p WHERE p.kind = takes.kind ORDER BY p.id LOOP
    qs := qs || pr.q;
    os := os || pr.o;
    ds := ds || pr.d;
  END LOOP;
  BEGIN
    BEGIN
      EXECUTE stmt;
    EXCEPTION WHEN OTHERS THEN
      err := SQLSTATE || ': ' || SQLERRM;
    END;
    BEGIN
      chk := CASE WHEN kd_index_check(idx::regclass) THEN 'true' ELSE 'false' END;
    EXCEPTION WHEN OTHERS THEN
      chk := SQLSTATE || ': ' || SQLERRM;
    END;
    FOR i IN 1 .. cardinality(qs) LOOP
      res := res || pg_temp.index_and_seqscan(qs[i], os[i]);
    END LOOP;
    RAISE EXCEPTION 'undo' USING ERRCODE = 'KDUND';
  EXCEPTION WHEN SQLSTATE 'KDUND' THEN
    NULL;
  END;
  RETURN NEXT ok(err IS NULL, what || ' succeeds: the index keeps the row beside its tree')
              || CASE WHEN err IS NULL THEN '' ELSE E'\n' || diag('    died: ' || err) END;
  RETURN NEXT is(chk, 'true', what || ': the index passes kd_index_check');
  FOR i IN 1 .. cardinality(qs) LOOP
    RETURN NEXT pg_temp.same_outcome(res[3 * i - 2 : 3 * i],
                                     what || ': ' || ds[i] || ', index scan = sequential scan');
  END LOOP;
END $$;
