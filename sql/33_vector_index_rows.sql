-- The kd_* functions over vectors take a table's rows from its kdvec
-- index where the visibility map marks their pages all-visible, read the
-- other pages under their snapshot, and search the index's own
-- vantage-point tree: their answers equal brute force's (distances from
-- their definitions, ties by ctid) on tables that are all-visible, partly
-- visible (inserts, deletes and updates not yet vacuumed, HOT chains
-- before and after VACUUM prunes them, aborted inserts), under L2 and L1,
-- and kd_status() says where the rows and the tree came from.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.75);

CREATE FUNCTION vr_dist(a float8[], b float8[], m kd_metric) RETURNS float8
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT CASE m WHEN 'l2' THEN sqrt(sum((x - y) * (x - y))) ELSE sum(abs(x - y)) END
  FROM unnest(a, b) u(x, y) $$;

-- 12 coordinates in 30 clusters of small integers: many equal distances,
-- so ties by ctid decide; room on every page for HOT updates
CREATE TABLE vr (id int PRIMARY KEY, tag int, v float8[])
  WITH (autovacuum_enabled = false, fillfactor = 70);
INSERT INTO vr SELECT i, 0, ARRAY(SELECT (i % 30) * 20 + floor(random() * 3)
                                  FROM generate_series(1, 12) j WHERE i > 0)
  FROM generate_series(1, 3000) i;
INSERT INTO vr VALUES (0, 0, NULL), (-1, 0, '{}');
CREATE INDEX vr_l2 ON vr USING kdvec (v kd_vector_ops);
CREATE INDEX vr_l1 ON vr USING kdvec (v kd_vector_l1_ops);
CREATE TABLE vr_q (qid int PRIMARY KEY, v float8[]);
INSERT INTO vr_q SELECT i, ARRAY(SELECT (i % 30) * 20 + floor(random() * 3)
                                 FROM generate_series(1, 12) j WHERE i > 0)
  FROM generate_series(1, 12) i;

-- Per metric, the queries whose kd_knn_join (array and table forms) and
-- kd_range_join answers, and the rows whose kd_all_knn answers, differ
-- from brute force's; and where the last call took its rows.
CREATE FUNCTION vr_check(k int, radius float8)
RETURNS TABLE (metric kd_metric, join_differing bigint,
               table_join_differing bigint, range_differing bigint,
               all_knn_differing bigint, source text)
LANGUAGE plpgsql AS $f$
DECLARE m kd_metric;
BEGIN
  SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off;
  FOREACH m IN ARRAY ARRAY['l2', 'l1']::kd_metric[] LOOP
    RETURN QUERY EXECUTE format($q$
      WITH want AS MATERIALIZED (
        SELECT q.qid, array_agg((o.ctid, o.d)::text ORDER BY o.d, o.ctid) AS nn
        FROM vr_q q, LATERAL (SELECT t.ctid, vr_dist(t.v, q.v, %1$L) d FROM vr t
                              WHERE t.v IS NOT NULL AND t.v <> '{}'
                              ORDER BY 2, 1 LIMIT %2$s) o
        GROUP BY q.qid),
      joined AS MATERIALIZED (
        SELECT ids.a[j.query_ord] AS qid,
               array_agg((j.nn_ctid, j.distance)::text ORDER BY j.rank) AS nn
        FROM (SELECT array_agg(qid ORDER BY qid) a, array_agg(v ORDER BY qid) vs FROM vr_q) ids,
             LATERAL kd_knn_join('vr', 'v', ids.vs, %2$s, metric => %1$L) j
        GROUP BY 1),
      tjoined AS MATERIALIZED (
        SELECT q.qid, array_agg((j.nn_ctid, j.distance)::text ORDER BY j.rank) AS nn
        FROM kd_knn_join('vr', 'v', 'vr_q', 'v', %2$s, metric => %1$L) j
        JOIN vr_q q ON q.ctid = j.query_ctid
        GROUP BY q.qid),
      rwant AS MATERIALIZED (
        SELECT q.qid, ARRAY(SELECT (t.ctid, vr_dist(t.v, q.v, %1$L))::text FROM vr t
                            WHERE t.v IS NOT NULL AND t.v <> '{}' AND vr_dist(t.v, q.v, %1$L) <= %3$s
                            ORDER BY vr_dist(t.v, q.v, %1$L), t.ctid) AS nn
        FROM vr_q q),
      ranged AS MATERIALIZED (
        SELECT ids.a[j.query_ord] AS qid,
               array_agg((j.nn_ctid, j.distance)::text ORDER BY j.rank) AS nn
        FROM (SELECT array_agg(qid ORDER BY qid) a, array_agg(v ORDER BY qid) vs FROM vr_q) ids,
             LATERAL kd_range_join('vr', 'v', ids.vs, %3$s, metric => %1$L) j
        GROUP BY 1),
      awant AS MATERIALIZED (
        SELECT q.ctid AS qc, array_agg((o.ctid, o.d)::text ORDER BY o.d, o.ctid) AS nn
        FROM vr q, LATERAL (SELECT t.ctid, vr_dist(t.v, q.v, %1$L) d FROM vr t
                            WHERE t.v IS NOT NULL AND t.v <> '{}' AND t.ctid <> q.ctid
                            ORDER BY 2, 1 LIMIT %2$s) o
        WHERE q.v IS NOT NULL AND q.v <> '{}' AND q.id %% 40 = 0
        GROUP BY q.ctid),
      agot AS MATERIALIZED (
        SELECT query_ctid AS qc, array_agg((nn_ctid, distance)::text ORDER BY rank) AS nn
        FROM kd_all_knn('vr', 'v', %2$s, metric => %1$L)
        GROUP BY query_ctid)
      SELECT %1$L::kd_metric,
        (SELECT count(*) FILTER (WHERE w.nn IS DISTINCT FROM (SELECT nn FROM joined j WHERE j.qid = w.qid)) FROM want w),
        (SELECT count(*) FILTER (WHERE w.nn IS DISTINCT FROM (SELECT nn FROM tjoined j WHERE j.qid = w.qid)) FROM want w),
        (SELECT count(*) FILTER (WHERE w.nn IS DISTINCT FROM coalesce((SELECT nn FROM ranged r WHERE r.qid = w.qid), '{}')) FROM rwant w),
        (SELECT count(*) FILTER (WHERE w.nn IS DISTINCT FROM (SELECT nn FROM agot a WHERE a.qc = w.qc)) FROM awant w),
        (SELECT regexp_replace(substring(last_run FROM 'vr: ([^;]*)'),
                '^rows and vantage-point tree from index "[^"]*" and the visibility map, ([0-9]+) of [0-9]+ table pages read$',
                'index and its tree, \1 pages read') FROM kd_status()) $q$, m, k, radius);
  END LOOP;
END $f$;

-- How the last call searched: through the index's tree or not.
CREATE FUNCTION vr_searched() RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(substring(last_run FROM 'through the index''s vantage-point tree'),
                  'not through the index''s tree') FROM kd_status() $$;

-- not yet vacuumed: no page is all-visible, every page is read
SELECT metric, join_differing, table_join_differing, range_differing, all_knn_differing,
       source ~ '^index and its tree, [1-9]' AS all_pages_read
  FROM vr_check(5, 3);

-- all-visible: no page is read, and the kNN goes through the index's tree
VACUUM vr;
SELECT * FROM vr_check(5, 3);
SELECT count(*) FROM kd_knn_join('vr', 'v', (SELECT array_agg(v) FROM vr_q), 5);
SELECT vr_searched();

-- HOT updates (the vector unchanged) move rows within their pages
CREATE TEMP TABLE vr_was AS SELECT id, ctid AS tid FROM vr;
UPDATE vr SET tag = 1 WHERE id % 7 = 3;
SELECT count(*) > 200 AS moved FROM vr JOIN vr_was USING (id) WHERE vr.ctid <> tid;
SELECT metric, join_differing, table_join_differing, range_differing, all_knn_differing,
       source ~ '^index and its tree, [1-9]' AS updated_pages_read
  FROM vr_check(5, 3);
-- VACUUM prunes the chains: the index's TIDs redirect to the rows, which
-- the answers give as the table does, ranked by them, reading no page
VACUUM vr;
SELECT * FROM vr_check(5, 3);
SELECT * FROM vr_check(40, 4);

-- deletes, updates of the vector and inserts not yet vacuumed: the rows
-- the tree lacks are searched beside it
DELETE FROM vr WHERE id % 11 = 4;
UPDATE vr SET v = ARRAY(SELECT x + 1 FROM unnest(v) x) WHERE id % 13 = 6;
INSERT INTO vr SELECT 10000 + i, 0, ARRAY(SELECT (i % 30) * 20 + floor(random() * 3)
                                          FROM generate_series(1, 12) j WHERE i > 0)
  FROM generate_series(1, 150) i;
SELECT metric, join_differing, table_join_differing, range_differing, all_knn_differing,
       source ~ '^index and its tree, [1-9]' AS changed_pages_read
  FROM vr_check(5, 3);
SELECT count(*) FROM kd_knn_join('vr', 'v', (SELECT array_agg(v) FROM vr_q), 5);
SELECT vr_searched();
-- an aborted insert leaves its rows in the index and on its pages
BEGIN;
INSERT INTO vr SELECT 20000 + i, 0, (SELECT v FROM vr_q WHERE qid = 1)
  FROM generate_series(1, 100) i;
ROLLBACK;
SELECT metric, join_differing, table_join_differing, range_differing, all_knn_differing
  FROM vr_check(5, 3);
-- the transaction's own uncommitted deletes and inserts
BEGIN;
DELETE FROM vr WHERE id % 17 = 2;
INSERT INTO vr SELECT 30000 + qid, 0, v FROM vr_q;
SELECT metric, join_differing, table_join_differing, range_differing, all_knn_differing
  FROM vr_check(5, 3);
ROLLBACK;
-- vacuumed again: the pending rows are on all-visible pages
VACUUM vr;
SELECT * FROM vr_check(5, 3);

-- equal vectors on one page, the first of them HOT-updated and pruned:
-- their roots come first on the page and their rows last, so a kNN whose
-- k-th neighbour ties rows beyond it must ask again for more
CREATE TABLE vr_dup (id int PRIMARY KEY, tag int, v float8[])
  WITH (autovacuum_enabled = false, fillfactor = 50);
INSERT INTO vr_dup SELECT i, 0, array_fill(5::float8, ARRAY[12]) FROM generate_series(1, 20) i;
INSERT INTO vr_dup SELECT 100 + i, 0, ARRAY(SELECT floor(random() * 10) FROM generate_series(1, 12) j WHERE i > 0)
  FROM generate_series(1, 200) i;
CREATE INDEX vr_dup_v ON vr_dup USING kdvec (v);
VACUUM vr_dup;
UPDATE vr_dup SET tag = 1 WHERE id <= 3;
VACUUM vr_dup;
SELECT count(*) AS moved_on_page_0 FROM vr_dup WHERE id <= 3 AND (ctid::text::point)[0] = 0
  AND (ctid::text::point)[1] > 20;
SELECT ARRAY(SELECT (nn_ctid, distance)::text
             FROM kd_knn_join('vr_dup', 'v', ARRAY[array_fill(5::float8, ARRAY[12])], k) ORDER BY rank)
       IS NOT DISTINCT FROM
       ARRAY(SELECT (ctid, v <-> array_fill(5::float8, ARRAY[12]))::text FROM vr_dup
             ORDER BY v <-> array_fill(5::float8, ARRAY[12]), ctid LIMIT k) AS same
  FROM generate_series(2, 22, 5) k;
SELECT substring(last_run FROM 'vr_dup: ([^;]*)') FROM kd_status();
DROP TABLE vr_dup;

-- wide vectors, three rows to a page: the copy joins the index's leaves
-- of a page each into leaves of up to 32 rows, whose searches must still
-- find every row, with the tree given whole and with rows gone from it
CREATE TABLE vr_wide (id int PRIMARY KEY, v float8[]) WITH (autovacuum_enabled = false);
CREATE TEMP TABLE vr_wide_dirs AS
  SELECT c, ARRAY(SELECT floor(random() * 7) - 3 FROM generate_series(1, 256) j WHERE c >= 0) AS d
  FROM generate_series(0, 5) c;
INSERT INTO vr_wide SELECT i, ARRAY(SELECT (i / 6 % 40) * x + floor(random() * 2) FROM unnest(d.d) x)
  FROM generate_series(1, 1200) i JOIN vr_wide_dirs d ON d.c = i % 6;
CREATE INDEX vr_wide_l2 ON vr_wide USING kdvec (v kd_vector_ops);
CREATE INDEX vr_wide_l1 ON vr_wide USING kdvec (v kd_vector_l1_ops);
VACUUM vr_wide;
CREATE FUNCTION vr_wide_check(k int)
RETURNS TABLE (metric kd_metric, differing bigint, searched text)
LANGUAGE plpgsql AS $f$
DECLARE m kd_metric;
BEGIN
  FOREACH m IN ARRAY ARRAY['l2', 'l1']::kd_metric[] LOOP
    RETURN QUERY EXECUTE format($q$
      WITH q AS MATERIALIZED (
        SELECT row_number() OVER (ORDER BY id) AS qo, ARRAY(SELECT x + 0.5 FROM unnest(v) x) AS qv
        FROM vr_wide WHERE id %% 97 = 1),
      want AS MATERIALIZED (
        SELECT q.qo, array_agg((o.ctid, o.d)::text ORDER BY o.d, o.ctid) AS nn
        FROM q, LATERAL (SELECT t.ctid, vr_dist(t.v, q.qv, %1$L) d FROM vr_wide t
                         ORDER BY 2, 1 LIMIT %2$s) o
        GROUP BY q.qo),
      got AS MATERIALIZED (
        SELECT j.query_ord AS qo, array_agg((j.nn_ctid, j.distance)::text ORDER BY j.rank) AS nn
        FROM kd_knn_join('vr_wide', 'v', (SELECT array_agg(qv ORDER BY qo) FROM q), %2$s,
                         metric => %1$L) j
        GROUP BY 1)
      SELECT %1$L::kd_metric, count(*) FILTER (WHERE w.nn IS DISTINCT FROM g.nn), vr_searched()
      FROM want w LEFT JOIN got g USING (qo) $q$, m, k);
  END LOOP;
END $f$;
SELECT * FROM vr_wide_check(7);
DELETE FROM vr_wide WHERE id % 5 = 2;
SELECT * FROM vr_wide_check(7);
DROP TABLE vr_wide;
DROP FUNCTION vr_wide_check(int);

-- where the index cannot serve, the table is read and the status says
-- why: keys, metrics without a kdvec index, kdgpu.index_rows off
SELECT count(*) FROM kd_knn_join('vr', 'v', (SELECT array_agg(v) FROM vr_q), 3, key_col => 'id');
SELECT substring(last_run FROM 'vr: ([^;]*)') FROM kd_status();
SELECT count(*) FROM kd_knn_join('vr', 'v', (SELECT array_agg(v) FROM vr_q), 3, metric => 'linf');
SELECT substring(last_run FROM 'vr: ([^;]*)') FROM kd_status();
SET kdgpu.index_rows = off;
SELECT count(*) FROM kd_knn_join('vr', 'v', (SELECT array_agg(v) FROM vr_q), 3);
SELECT substring(last_run FROM 'vr: ([^;]*)') FROM kd_status();
RESET kdgpu.index_rows;

DROP TABLE vr, vr_q;
DROP FUNCTION vr_dist(float8[], float8[], kd_metric), vr_check(int, float8), vr_searched();
