-- The SQL side of the vectors peers run (bench/vectors/peers), for one
-- dimension: kd_knn_join (table form, L2, k = 10) of nq query rows
-- against n rows of float8[] vectors, its rows and tree taken from a kdvec
-- index, beside the LATERAL sequential search a user writes without
-- kdgpu (ORDER BY v <-> q LIMIT 10 per query row, run on the first
-- lateral_q query rows and its time scaled to nq).  The LATERAL's rows are
-- the oracle: the join's rows for the same queries must equal them (ids
-- and distances).  Uniform and clustered sets (vectors-data.sql); the join
-- runs once untimed after the index is built (that call copies the
-- index's rows), then runs times, and the median is reported.
-- psql -v n=1000000 -v nq=100000 -v dim=64 -v lateral_q=4 -v runs=3 -f bench/sql/vectors-peers.sql
\set ON_ERROR_STOP on
CREATE EXTENSION IF NOT EXISTS kdgpu;
SELECT gpu, service FROM kd_status();
\ir vectors-data.sql
\ir timing.sql

CREATE TEMP TABLE vp_lateral (tbl text, qid int, id int, d float8);
CREATE FUNCTION pg_temp.vp_row(tbl text, qtbl text, nq int, dim int, lateral_q int, runs int)
RETURNS TABLE (tbl_ text, dim_ int, queries int, lateral_ms_scaled float8,
               create_index_ms float8, first_join_ms float8, kd_join_ms float8,
               lateral_over_join float8, differ_from_lateral bigint, last_run text)
LANGUAGE plpgsql AS $f$
DECLARE
  join_sql text := format('SELECT count(*) FROM kd_knn_join(%L, %L, %L, %L, 10)', tbl, 'v', qtbl, 'v');
BEGIN
  tbl_ := tbl; dim_ := dim; queries := nq;
  lateral_ms_scaled := round((pg_temp.once_ms(format(
    'INSERT INTO vp_lateral SELECT %L, q.id, x.id, x.d
     FROM (SELECT * FROM %I ORDER BY id LIMIT %s) q,
          LATERAL (SELECT t.id, t.v <-> q.v AS d FROM %I t ORDER BY t.v <-> q.v LIMIT 10) x',
    tbl, qtbl, lateral_q, tbl)) * nq / lateral_q)::numeric, 1);
  create_index_ms := pg_temp.once_ms(format('CREATE INDEX ON %I USING kdvec (v)', tbl));
  first_join_ms := pg_temp.once_ms(join_sql);
  kd_join_ms := pg_temp.median_ms(join_sql, runs);
  last_run := (SELECT k.last_run FROM kd_status() k);
  lateral_over_join := round((lateral_ms_scaled / kd_join_ms)::numeric, 0);
  EXECUTE format('WITH j AS (SELECT q.id AS qid, t.id, j.distance AS d
                             FROM kd_knn_join(%1$L, %3$L, %2$L, %3$L, 10) j
                             JOIN %2$I q ON q.ctid = j.query_ctid
                             JOIN %1$I t ON t.ctid = j.nn_ctid
                             WHERE q.id <= %4$s),
                      l AS (SELECT qid, id, d FROM vp_lateral WHERE tbl = %1$L)
                  SELECT count(*) FROM ((SELECT * FROM j EXCEPT ALL SELECT * FROM l)
                                        UNION ALL (SELECT * FROM l EXCEPT ALL SELECT * FROM j)) x',
                 tbl, qtbl, 'v', lateral_q) INTO differ_from_lateral;
  RETURN NEXT;
END $f$;
SELECT r.* FROM (VALUES ('vb_u', 'vb_qu'), ('vb_c', 'vb_qc')) s(tbl, qtbl),
  LATERAL pg_temp.vp_row(s.tbl, s.qtbl, :nq, :dim, :lateral_q, :runs) r
\gx
DROP TABLE vb_u, vb_c, vb_qu, vb_qc, vb_dirs;
