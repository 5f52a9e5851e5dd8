-- Shared by the drop-in suites (25_drop_in, 42_postgis_drop_in).
--
-- di_run(method, index, query): the query's rows, one text per row joined
-- by ' ', under a plan of the given kind (seq, index or bitmap) on the given
-- index; an error if the planner does not take that plan, so a comparison
-- can never pass by comparing a sequential scan with itself.
CREATE FUNCTION di_run(method text, idx text, q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  plan text := '';
  line text;
  result text;
BEGIN
  PERFORM set_config('enable_seqscan', (method = 'seq')::text, true);
  PERFORM set_config('enable_indexscan', (method = 'index')::text, true);
  PERFORM set_config('enable_indexonlyscan', (method = 'index')::text, true);
  PERFORM set_config('enable_bitmapscan', (method = 'bitmap')::text, true);
  PERFORM set_config('enable_sort', (method = 'seq')::text, true);
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    plan := plan || line || E'\n';
  END LOOP;
  IF (method = 'seq' AND plan LIKE '%Index%')
     OR (method = 'index' AND plan NOT LIKE '%Index Scan using ' || idx || ' %'
         AND plan NOT LIKE '%Index Only Scan using ' || idx || ' %')
     OR (method = 'bitmap' AND plan NOT LIKE '%Bitmap Index Scan on ' || idx || E'\n%') THEN
    RAISE EXCEPTION 'plan is not a % scan on %: %', method, idx, plan;
  END IF;
  EXECUTE 'SELECT string_agg(r::text, '' '') FROM (' || q || ') r' INTO result;
  RETURN coalesce(result, '');
END $$;
