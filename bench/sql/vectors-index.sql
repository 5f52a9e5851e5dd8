-- ORDER BY v <-> q LIMIT 10 with a kdvec index: the planner's choice, the
-- index forced, and the sequential scan PostgreSQL runs without it (a
-- parallel scan and a top-N sort, with 2 and 8 workers per gather), on n
-- rows of float8[] of dim coordinates: the sets of vectors-data.sql, a clustered one
-- (8 random directions with 1% noise: low intrinsic dimension) and a
-- uniform one.  For each of its nq query rows, drawn like the set (not
-- rows of it), every plan's answer is compared with the others' (ids in
-- order) and timed; the medians are reported, with the index's build time
-- and size.
-- psql -v n=1000000 -v nq=50 -v dim=64 -f bench/sql/vectors-index.sql
\set ON_ERROR_STOP on
SELECT version();
CREATE EXTENSION IF NOT EXISTS kdgpu;
\ir vectors-data.sql

\timing on
CREATE INDEX vb_c_v ON vb_c USING kdvec (v);
CREATE INDEX vb_u_v ON vb_u USING kdvec (v);
\timing off
SELECT relname, pg_size_pretty(pg_relation_size(oid)) FROM pg_class
WHERE relname IN ('vb_c', 'vb_u', 'vb_c_v', 'vb_u_v') ORDER BY 1;

-- The ids of the first 10 rows of tbl by v <-> q under the current
-- settings, and the time taken in ms.
CREATE FUNCTION pg_temp.top10(tbl text, q float8[], OUT ids int[], OUT ms float8)
LANGUAGE plpgsql AS $$
DECLARE
  t0 timestamptz := clock_timestamp();
BEGIN
  EXECUTE format('SELECT array_agg(id) FROM (SELECT id FROM %I ORDER BY v <-> $1 LIMIT 10) s', tbl)
    INTO ids USING q;
  ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$;

-- For the query rows of qtbl: the medians of the planner's own
-- plan, the index forced, and the sequential scan forced with 2 and 8
-- workers, and whether every answer agreed.
CREATE FUNCTION pg_temp.vx_row(tbl text, qtbl text,
  OUT tbl_ text, OUT queries int, OUT planner_ms float8, OUT index_ms float8,
  OUT seq_ms float8, OUT seq8_ms float8, OUT seq_over_index float8,
  OUT same_answers boolean, OUT planner_plan text)
LANGUAGE plpgsql AS $$
DECLARE
  q float8[];
  r_plan record;
  r_index record;
  r_seq record;
  r_seq8 record;
  tp float8[] := '{}';
  ti float8[] := '{}';
  ts float8[] := '{}';
  t8 float8[] := '{}';
  line text;
  workers text := current_setting('max_parallel_workers_per_gather');
BEGIN
  tbl_ := tbl; queries := 0; same_answers := true;
  FOR q IN EXECUTE format('SELECT v FROM %I ORDER BY id', qtbl) LOOP
    queries := queries + 1;
    IF queries = 1 THEN
      FOR line IN EXECUTE format('EXPLAIN (COSTS OFF) SELECT id FROM %I ORDER BY v <-> $1 LIMIT 10', tbl)
        USING q LOOP
        CONTINUE WHEN trim(line) LIKE 'Order By%' OR trim(line) LIKE 'Sort Key%';
        planner_plan := concat_ws(' / ', planner_plan, trim(line));
      END LOOP;
      PERFORM pg_temp.top10(tbl, q);	-- warm the pages
    END IF;
    r_plan := pg_temp.top10(tbl, q);
    PERFORM set_config('enable_seqscan', 'off', true);
    r_index := pg_temp.top10(tbl, q);
    PERFORM set_config('enable_seqscan', 'on', true);
    PERFORM set_config('enable_indexscan', 'off', true);
    PERFORM set_config('max_parallel_workers_per_gather', '2', true);
    r_seq := pg_temp.top10(tbl, q);
    PERFORM set_config('max_parallel_workers_per_gather', '8', true);
    r_seq8 := pg_temp.top10(tbl, q);
    PERFORM set_config('enable_indexscan', 'on', true);
    PERFORM set_config('max_parallel_workers_per_gather', workers, true);
    same_answers := same_answers AND r_plan.ids = r_index.ids AND r_plan.ids = r_seq.ids
                    AND r_plan.ids = r_seq8.ids;
    tp := tp || r_plan.ms; ti := ti || r_index.ms; ts := ts || r_seq.ms; t8 := t8 || r_seq8.ms;
  END LOOP;
  planner_ms := (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY x)::numeric, 2) FROM unnest(tp) x);
  index_ms := (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY x)::numeric, 2) FROM unnest(ti) x);
  seq_ms := (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY x)::numeric, 2) FROM unnest(ts) x);
  seq8_ms := (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY x)::numeric, 2) FROM unnest(t8) x);
  seq_over_index := round((seq_ms / index_ms)::numeric, 1);
END $$;

SELECT r.* FROM (VALUES ('vb_c', 'vb_qc'), ('vb_u', 'vb_qu')) s(tbl, qtbl),
  LATERAL pg_temp.vx_row(s.tbl, s.qtbl) r
\gx
DROP TABLE vb_u, vb_c, vb_qu, vb_qc, vb_dirs;
