-- The kNN join of vectors: kd_knn_join (table form, k = 10) of nq query
-- rows against n rows of float8[] vectors of dim coordinates, under L2 and
-- cosine, beside the LATERAL sequential search a user writes without it
-- (ORDER BY v <-> q LIMIT 10 per query row, timed on lateral_q of the
-- queries and scaled to nq), and the same for one query (kd_knn beside
-- ORDER BY ... LIMIT 10).  Uniform coordinates in [-0.5, 0.5) and a
-- clustered set (8 random directions with 1% noise: low intrinsic
-- dimension).  Each kdgpu statement runs once untimed, then `runs` times;
-- the median is reported with kd_status().last_run.  Then the same L2
-- joins with a kdvec index on the column, which the function takes its
-- rows and tree from (their answers compared with the table's; the first
-- call, a batch of 1,000, copies the index's rows), beside
-- the same join with kdgpu.index_rows off (the table read, a tree or
-- tiles per call), a batch of 1,000 queries both ways, and the LATERAL
-- search through the index.
-- psql -v n=1000000 -v nq=100000 -v dim=64 -v lateral_q=20 -v runs=3 -f bench/sql/vectors-knn-join.sql
\set ON_ERROR_STOP on
SELECT version();
CREATE EXTENSION IF NOT EXISTS kdgpu;
SELECT gpu, service FROM kd_status();
\ir vectors-data.sql

\ir timing.sql

-- one table's figures, in this order
CREATE FUNCTION pg_temp.vb_row(tbl text, qtbl text, metric text, op text, n int, nq int,
                               dim int, lateral_q int, runs int)
RETURNS TABLE (tbl_ text, metric_ text, n_ int, queries int, dim_ int, kd_join_ms float8,
               last_run text, lateral_ms_scaled float8, kd_knn_ms float8, seq_limit_ms float8)
LANGUAGE plpgsql AS $f$
BEGIN
  tbl_ := tbl; metric_ := metric; n_ := n; queries := nq; dim_ := dim;
  kd_join_ms := pg_temp.median_ms(format('SELECT count(*) FROM kd_knn_join(%L, %L, %L, %L, 10, metric => %L)',
                                         tbl, 'v', qtbl, 'v', metric), runs);
  last_run := (SELECT k.last_run FROM kd_status() k);
  lateral_ms_scaled := round((pg_temp.once_ms(format(
    'SELECT count(*) FROM (SELECT * FROM %I LIMIT %s) q, LATERAL (SELECT t.id FROM %I t ORDER BY t.v %s q.v LIMIT 10) x',
    qtbl, lateral_q, tbl, op)) * nq / lateral_q)::numeric, 1);
  kd_knn_ms := pg_temp.median_ms(format('SELECT count(*) FROM kd_knn(%L, %L, (SELECT v FROM %I LIMIT 1), 10, metric => %L)',
                                        tbl, 'v', qtbl, metric), runs);
  seq_limit_ms := pg_temp.median_ms(format('SELECT count(*) FROM (SELECT id FROM %I ORDER BY v %s (SELECT v FROM %I LIMIT 1) LIMIT 10) x',
                                           tbl, op, qtbl), runs);
  RETURN NEXT;
END $f$;
SELECT r.* FROM (VALUES ('vb_u', 'vb_qu', 'l2', '<->'), ('vb_c', 'vb_qc', 'l2', '<->'),
                        ('vb_u', 'vb_qu', 'cosine', '<=>'), ('vb_c', 'vb_qc', 'cosine', '<=>')) s(tbl, qtbl, metric, op),
  LATERAL pg_temp.vb_row(s.tbl, s.qtbl, s.metric, s.op, :n, :nq, :dim, :lateral_q, :runs) r
\gx

-- With a kdvec index: the answers above are the oracle
CREATE TEMP TABLE vb_want AS
  SELECT 'vb_u'::text AS tbl, * FROM kd_knn_join('vb_u', 'v', 'vb_qu', 'v', 10)
  UNION ALL SELECT 'vb_c', * FROM kd_knn_join('vb_c', 'v', 'vb_qc', 'v', 10);
\timing on
CREATE INDEX vb_u_v ON vb_u USING kdvec (v);
CREATE INDEX vb_c_v ON vb_c USING kdvec (v);
\timing off
CREATE FUNCTION pg_temp.vb_index_row(tbl text, qtbl text, nq int, lateral_q int, runs int)
RETURNS TABLE (tbl_ text, queries int, first_1k_index_ms float8,
               kd_join_index_ms float8, last_run text,
               same_answers boolean, kd_join_table_ms float8, table_last_run text,
               join_1k_index_ms float8, join_1k_table_ms float8,
               lateral_index_ms_scaled float8)
LANGUAGE plpgsql AS $f$
DECLARE
  join_sql text := format('SELECT count(*) FROM kd_knn_join(%L, %L, %L, %L, 10)', tbl, 'v', qtbl, 'v');
  join_1k text := format('SELECT count(*) FROM kd_knn_join(%L, %L, (SELECT array_agg(v) FROM (SELECT v FROM %I ORDER BY id LIMIT 1000) s), 10)',
                         tbl, 'v', qtbl);
BEGIN
  tbl_ := tbl; queries := nq;
  first_1k_index_ms := pg_temp.once_ms(join_1k);
  kd_join_index_ms := pg_temp.median_ms(join_sql, runs);
  last_run := (SELECT k.last_run FROM kd_status() k);
  EXECUTE format('SELECT NOT EXISTS ((SELECT * FROM kd_knn_join(%1$L, %2$L, %3$L, %2$L, 10)
                                      EXCEPT ALL SELECT %5$s FROM vb_want WHERE tbl = %1$L)
                                     UNION ALL
                                     (SELECT %5$s FROM vb_want WHERE tbl = %1$L
                                      EXCEPT ALL SELECT * FROM kd_knn_join(%1$L, %2$L, %3$L, %2$L, 10)))',
                 tbl, 'v', qtbl, 'v',
                 'query_ctid, nn_ctid, distance, rank') INTO same_answers;
  join_1k_index_ms := pg_temp.median_ms(join_1k, runs);
  SET LOCAL kdgpu.index_rows = off;
  kd_join_table_ms := pg_temp.median_ms(join_sql, runs);
  table_last_run := (SELECT k.last_run FROM kd_status() k);
  join_1k_table_ms := pg_temp.median_ms(join_1k, runs);
  SET LOCAL kdgpu.index_rows = on;
  SET LOCAL enable_seqscan = off;
  lateral_index_ms_scaled := round((pg_temp.once_ms(format(
    'SELECT count(*) FROM (SELECT * FROM %I LIMIT %s) q, LATERAL (SELECT t.id FROM %I t ORDER BY t.v <-> q.v LIMIT 10) x',
    qtbl, lateral_q, tbl)) * nq / lateral_q)::numeric, 1);
  RETURN NEXT;
END $f$;
SELECT r.* FROM (VALUES ('vb_c', 'vb_qc'), ('vb_u', 'vb_qu')) s(tbl, qtbl),
  LATERAL pg_temp.vb_index_row(s.tbl, s.qtbl, :nq, :lateral_q, :runs) r
\gx
DROP TABLE vb_u, vb_c, vb_qu, vb_qc, vb_dirs;
