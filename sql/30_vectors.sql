-- Vectors of any dimension: the kNN and radius functions on float8[]
-- columns of 20, 64 and 300 coordinates, under each kd_metric, against
-- brute force in SQL whose distances are computed here from their
-- definitions (vo_dist: sums over unnest, in coordinate order), ties by
-- ctid or key: kd_knn, kd_knn_join (array and table forms), kd_all_knn and
-- its arrays, kd_range and kd_range_join (one radius, one per centre, a
-- table of centres), their key forms, a partitioned table, rows deleted
-- under the snapshot; the distance functions and operators; and the
-- errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.5);

-- The oracle: each metric from its definition, summed in coordinate order.
CREATE FUNCTION vo_dist(a float8[], b float8[], m kd_metric) RETURNS float8
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT CASE m
    WHEN 'l2' THEN sqrt(sum((x - y) * (x - y)))
    WHEN 'l1' THEN sum(abs(x - y))
    WHEN 'linf' THEN max(abs(x - y))
    ELSE 1 - greatest(-1, least(1, sum(x * y) / (sqrt(sum(x * x)) * sqrt(sum(y * y)))))
  END FROM unnest(a, b) u(x, y) $$;

-- small integers: many equal distances, so ties by ctid decide
CREATE TABLE vt (id int PRIMARY KEY, v float8[]);
INSERT INTO vt SELECT i, ARRAY(SELECT floor(random() * 3) - 1 + CASE WHEN j = 1 THEN 2 ELSE 0 END
                               FROM generate_series(1, 20) j WHERE i > 0)
  FROM generate_series(1, 400) i;
-- uniform in 64 dimensions, and queries, some of them rows of the table
CREATE TABLE vu (id int PRIMARY KEY, v float8[]);
INSERT INTO vu SELECT i, ARRAY(SELECT random() - 0.5 FROM generate_series(1, 64) j WHERE i > 0)
  FROM generate_series(1, 500) i;
CREATE TABLE vq (qid int PRIMARY KEY, v float8[]);
INSERT INTO vq SELECT i, ARRAY(SELECT random() - 0.5 FROM generate_series(1, 64) j WHERE i > 0)
  FROM generate_series(1, 6) i;
INSERT INTO vq SELECT 100 + id, v FROM vu WHERE id IN (3, 77, 400);
CREATE TABLE vtq (qid int PRIMARY KEY, v float8[]);
INSERT INTO vtq SELECT 100 + id, v FROM vt WHERE id IN (1, 2, 50, 399);
INSERT INTO vtq SELECT i, ARRAY(SELECT floor(random() * 3) - 1 FROM generate_series(1, 20) j WHERE i > 0)
  FROM generate_series(1, 4) i;
-- 300 dimensions on few rows, with a NULL and an empty vector (skipped)
CREATE TABLE vw (id int PRIMARY KEY, v float8[]);
INSERT INTO vw SELECT i, ARRAY(SELECT random() * 1e3 FROM generate_series(1, 300) j WHERE i > 0)
  FROM generate_series(1, 40) i;
INSERT INTO vw VALUES (41, NULL), (42, '{}');
CREATE TABLE vwq (qid int PRIMARY KEY, v float8[]);
INSERT INTO vwq SELECT id, v FROM vw WHERE id IN (5, 6);
INSERT INTO vwq SELECT 100 + i, ARRAY(SELECT random() * 1e3 FROM generate_series(1, 300) j WHERE i > 0)
  FROM generate_series(1, 3) i;

-- For a table, its queries and k: per metric, the queries whose kd_knn,
-- kd_knn_join (array) and kd_knn_join (table) answers differ from brute
-- force, and how many were asked (all 0 but the counts).
CREATE FUNCTION vo_check(tbl text, qtbl text, k int)
RETURNS TABLE (metric kd_metric, queries bigint, knn_differing bigint,
               join_differing bigint, table_join_differing bigint)
LANGUAGE plpgsql AS $f$
DECLARE m kd_metric;
BEGIN
  FOREACH m IN ARRAY enum_range(NULL::kd_metric) LOOP
    RETURN QUERY EXECUTE format($q$
      WITH want AS MATERIALIZED (
        SELECT q.qid, array_agg((o.ctid, o.d)::text ORDER BY o.d, o.ctid) AS nn
        FROM %2$I q, LATERAL (SELECT t.ctid, vo_dist(t.v, q.v, %3$L) d FROM %1$I t
                              WHERE t.v IS NOT NULL AND t.v <> '{}'
                              ORDER BY 2, 1 LIMIT %4$s) o
        GROUP BY q.qid),
      joined AS MATERIALIZED (
        SELECT ids.a[j.query_ord] AS qid,
               array_agg((j.nn_ctid, j.distance)::text ORDER BY j.rank) AS nn
        FROM (SELECT array_agg(qid ORDER BY qid) a, array_agg(v ORDER BY qid) vs FROM %2$I) ids,
             LATERAL kd_knn_join(%1$L, 'v', ids.vs, %4$s, metric => %3$L) j
        GROUP BY 1),
      tjoined AS MATERIALIZED (
        SELECT q.qid, array_agg((j.nn_ctid, j.distance)::text ORDER BY j.rank) AS nn
        FROM kd_knn_join(%1$L, 'v', %2$L, 'v', %4$s, metric => %3$L) j
        JOIN %2$I q ON q.ctid = j.query_ctid
        GROUP BY q.qid)
      SELECT %3$L::kd_metric, count(*),
        count(*) FILTER (WHERE w.nn IS DISTINCT FROM
          ARRAY(SELECT (nn_ctid, distance)::text
                FROM kd_knn(%1$L, 'v', (SELECT v FROM %2$I WHERE qid = w.qid), %4$s, metric => %3$L)
                ORDER BY rank)),
        count(*) FILTER (WHERE w.nn IS DISTINCT FROM (SELECT nn FROM joined WHERE joined.qid = w.qid)),
        count(*) FILTER (WHERE w.nn IS DISTINCT FROM (SELECT nn FROM tjoined WHERE tjoined.qid = w.qid))
      FROM want w $q$, tbl, qtbl, m, k);
  END LOOP;
END $f$;

SELECT * FROM vo_check('vt', 'vtq', 10);
SELECT * FROM vo_check('vu', 'vq', 7);
SELECT * FROM vo_check('vw', 'vwq', 4);
SELECT (kd_status()).last_run ~ '^flat kNN search \(cosine distance, 300 dimensions\) ran on the (CPU|GPU)' AS flat_ran;

-- Without a metric, a column of more than 8 coordinates is searched flat
-- under <->: the forms without the column name too.
SELECT count(*) AS queries, count(*) FILTER (WHERE
    ARRAY(SELECT (nn_ctid, distance)::text FROM kd_knn('vu', q.v, 4) ORDER BY rank)
    IS DISTINCT FROM
    ARRAY(SELECT (ctid, v <-> q.v)::text FROM vu ORDER BY v <-> q.v, ctid LIMIT 4)) AS differing
FROM vq q;
SELECT count(*) AS pairs FROM kd_knn_join('vu', (SELECT array_agg(v ORDER BY qid) FROM vq), 4);
SELECT (kd_status()).last_run ~ '^flat kNN search \(l2 distance, 64 dimensions\)' AS flat_ran;

-- <-> is the oracle's l2, <+> its l1, <=> its cosine, kd_linf_distance its linf
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE a.v <-> b.v IS DISTINCT FROM vo_dist(a.v, b.v, 'l2')) AS l2_differing,
       count(*) FILTER (WHERE a.v <+> b.v IS DISTINCT FROM vo_dist(a.v, b.v, 'l1')) AS l1_differing,
       count(*) FILTER (WHERE kd_linf_distance(a.v, b.v) IS DISTINCT FROM vo_dist(a.v, b.v, 'linf')) AS linf_differing,
       count(*) FILTER (WHERE a.v <=> b.v IS DISTINCT FROM vo_dist(a.v, b.v, 'cosine')) AS cosine_differing
FROM vu a JOIN vu b ON b.id = a.id % 50 + 1;
SELECT ARRAY[3, 4]::float8[] <-> ARRAY[0, 0]::float8[] AS l2,
       ARRAY[3, -4]::float8[] <+> ARRAY[0, 0]::float8[] AS l1,
       kd_linf_distance(ARRAY[3, -4]::float8[], ARRAY[0, 0]::float8[]) AS linf,
       ARRAY[1, 0]::float8[] <=> ARRAY[0, 2]::float8[] AS cosine_orthogonal,
       ARRAY[1, 1]::float8[] <=> ARRAY[-2, -2]::float8[] AS cosine_opposite,
       '{}'::float8[] <+> ARRAY[1]::float8[] AS empty;

-- All-kNN and its arrays, with and without the row itself, per metric
CREATE FUNCTION vo_all(tbl text, k int)
RETURNS TABLE (metric kd_metric, include_self boolean, rows_checked bigint,
               pairs_differing bigint, arrays_differing bigint)
LANGUAGE plpgsql AS $f$
DECLARE m kd_metric; s boolean;
BEGIN
  FOREACH m IN ARRAY enum_range(NULL::kd_metric) LOOP
    FOREACH s IN ARRAY ARRAY[false, true] LOOP
      RETURN QUERY EXECUTE format($q$
        WITH want AS MATERIALIZED (
          SELECT q.ctid AS qc, array_agg((o.ctid, o.d)::text ORDER BY o.d, o.ctid) AS nn
          FROM %1$I q, LATERAL (SELECT t.ctid, vo_dist(t.v, q.v, %2$L) d FROM %1$I t
                                WHERE t.v IS NOT NULL AND t.v <> '{}' AND (%3$L OR t.ctid <> q.ctid)
                                ORDER BY 2, 1 LIMIT %4$s) o
          WHERE q.v IS NOT NULL AND q.v <> '{}'
          GROUP BY q.ctid),
        got AS MATERIALIZED (
          SELECT query_ctid AS qc, array_agg((nn_ctid, distance)::text ORDER BY rank) AS nn
          FROM kd_all_knn(%1$L, 'v', %4$s, metric => %2$L, include_self => %3$L)
          GROUP BY query_ctid),
        arrays AS MATERIALIZED (
          SELECT query_ctid AS qc,
                 ARRAY(SELECT (c, d)::text FROM unnest(nn_ctids, distances) u(c, d)) AS nn
          FROM kd_all_knn_arrays(%1$L, 'v', %4$s, metric => %2$L, include_self => %3$L))
        SELECT %2$L::kd_metric, %3$L::boolean, count(*),
          count(*) FILTER (WHERE w.nn IS DISTINCT FROM (SELECT nn FROM got WHERE got.qc = w.qc)),
          count(*) FILTER (WHERE w.nn IS DISTINCT FROM (SELECT nn FROM arrays WHERE arrays.qc = w.qc))
        FROM want w $q$, tbl, m, s, k);
    END LOOP;
  END LOOP;
END $f$;
SELECT * FROM vo_all('vt', 6);
SELECT * FROM vo_all('vw', 3);
SELECT count(*) AS rows_asked FROM kd_all_knn('vw', 'v', 45, metric => 'l2');

-- kd_range and kd_range_join, per metric at a radius that finds a few
-- rows: the hits equal the rows within it, by (distance, ctid)
CREATE FUNCTION vo_range(tbl text, qtbl text, radii float8[])
RETURNS TABLE (metric kd_metric, radius float8, queries bigint, hits bigint,
               range_differing bigint, join_differing bigint,
               radii_differing bigint, table_join_differing bigint)
LANGUAGE plpgsql AS $f$
DECLARE m kd_metric; r float8; i int := 0;
BEGIN
  FOREACH m IN ARRAY enum_range(NULL::kd_metric) LOOP
    i := i + 1;
    r := radii[i];
    RETURN QUERY EXECUTE format($q$
      WITH want AS MATERIALIZED (
        SELECT q.qid, ARRAY(SELECT (t.ctid, vo_dist(t.v, q.v, %3$L))::text FROM %1$I t
                            WHERE t.v IS NOT NULL AND t.v <> '{}' AND vo_dist(t.v, q.v, %3$L) <= %4$s
                            ORDER BY vo_dist(t.v, q.v, %3$L), t.ctid) AS nn
        FROM %2$I q),
      ids AS (SELECT array_agg(qid ORDER BY qid) a, array_agg(v ORDER BY qid) vs,
                     array_agg(%4$s * (1 + 0 * qid) ORDER BY qid) rs FROM %2$I),
      joined AS MATERIALIZED (
        SELECT ids.a[j.query_ord] AS qid, array_agg((j.nn_ctid, j.distance)::text ORDER BY j.rank) AS nn
        FROM ids, LATERAL kd_range_join(%1$L, 'v', ids.vs, %4$s, metric => %3$L) j GROUP BY 1),
      radii AS MATERIALIZED (
        SELECT ids.a[j.query_ord] AS qid, array_agg((j.nn_ctid, j.distance)::text ORDER BY j.rank) AS nn
        FROM ids, LATERAL kd_range_join(%1$L, 'v', ids.vs, ids.rs, metric => %3$L) j GROUP BY 1),
      tjoined AS MATERIALIZED (
        SELECT q.qid, array_agg((j.nn_ctid, j.distance)::text ORDER BY j.rank) AS nn
        FROM kd_range_join(%1$L, 'v', %2$L, 'v', %4$s, metric => %3$L) j
        JOIN %2$I q ON q.ctid = j.query_ctid GROUP BY q.qid)
      SELECT %3$L::kd_metric, %4$s::float8, count(*), sum(cardinality(w.nn)),
        count(*) FILTER (WHERE w.nn IS DISTINCT FROM
          ARRAY(SELECT (nn_ctid, distance)::text
                FROM kd_range(%1$L, 'v', (SELECT v FROM %2$I WHERE qid = w.qid), %4$s, metric => %3$L)
                ORDER BY rank)),
        count(*) FILTER (WHERE w.nn IS DISTINCT FROM coalesce((SELECT nn FROM joined WHERE joined.qid = w.qid), '{}')),
        count(*) FILTER (WHERE w.nn IS DISTINCT FROM coalesce((SELECT nn FROM radii WHERE radii.qid = w.qid), '{}')),
        count(*) FILTER (WHERE w.nn IS DISTINCT FROM coalesce((SELECT nn FROM tjoined WHERE tjoined.qid = w.qid), '{}'))
      FROM want w $q$, tbl, qtbl, m, r);
  END LOOP;
END $f$;
SELECT * FROM vo_range('vt', 'vtq', ARRAY[4.0, 12, 1, 0.35]);
SELECT * FROM vo_range('vu', 'vq', ARRAY[3.0, 19, 0.85, 0.9]);
SELECT (kd_status()).last_run ~ '^flat radius search \(cosine distance, 64 dimensions\) ran on the (CPU|GPU)' AS flat_ran;
-- without a metric, under <->: every row within 'Infinity'
SELECT count(*) AS rows FROM kd_range('vw', 'v', (SELECT v FROM vwq LIMIT 1), 'Infinity');

-- The key forms rank ties by key: keys in the opposite order of ctids
CREATE TABLE vk (key bigint, v float8[]);
INSERT INTO vk SELECT 1000 - id, v FROM vt ORDER BY id;
SELECT count(*) AS queries, count(*) FILTER (WHERE
    ARRAY(SELECT (nn_key, distance)::text FROM kd_knn('vk', 'v', q.v, 9, metric => 'l1', key_col => 'key') ORDER BY rank)
    IS DISTINCT FROM
    ARRAY(SELECT (key, vo_dist(v, q.v, 'l1'))::text FROM vk ORDER BY vo_dist(v, q.v, 'l1'), key LIMIT 9)) AS differing
FROM vtq q;
SELECT count(*) AS rows_checked, count(*) FILTER (WHERE a.nn IS DISTINCT FROM b.nn) AS differing
FROM (SELECT query_key, array_agg(nn_key ORDER BY rank) nn
      FROM kd_all_knn('vk', 'v', 5, metric => 'linf', key_col => 'key') GROUP BY 1) a
JOIN LATERAL (SELECT array_agg(t.key ORDER BY vo_dist(t.v, q.v, 'linf'), t.key) nn
              FROM vk q, LATERAL (SELECT key, v FROM vk t WHERE t.key <> q.key
                                  ORDER BY vo_dist(t.v, q.v, 'linf'), t.key LIMIT 5) t
              WHERE q.key = a.query_key) b ON true;
SELECT count(*) AS rows FROM kd_knn_join('vk', 'v', 'vtq', 'v', 3, metric => 'cosine',
                                         key_col => 'key', query_key_col => 'qid');
SELECT count(*) AS rows FROM kd_all_knn_arrays('vk', 'v', 3, metric => 'l2', key_col => 'key');
SELECT count(*) AS rows FROM kd_knn_join('vk', 'v', ARRAY[ARRAY[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]]::float8[],
                                         3, metric => 'l2', key_col => 'key');

-- A partitioned table: each leaf searched flat, answers merged; All-kNN
-- asks every point of every other leaf
CREATE TABLE vp (id int, v float8[]) PARTITION BY RANGE (id);
CREATE TABLE vp1 PARTITION OF vp FOR VALUES FROM (0) TO (200);
CREATE TABLE vp2 PARTITION OF vp FOR VALUES FROM (200) TO (1000);
INSERT INTO vp SELECT id, v FROM vt;
SELECT count(*) AS queries, count(*) FILTER (WHERE
    ARRAY(SELECT (nn_rel, nn_ctid, distance)::text FROM kd_knn_parts('vp', 'v', q.v, 6) ORDER BY rank)
    IS DISTINCT FROM
    ARRAY(SELECT (tableoid::regclass, ctid, v <-> q.v)::text FROM vp ORDER BY v <-> q.v, tableoid::regclass::text, ctid LIMIT 6)) AS differing
FROM vtq q;
SELECT count(*) AS queries, count(*) FILTER (WHERE
    ARRAY(SELECT (nn_key, distance)::text FROM kd_knn('vp', 'v', q.v, 6, metric => 'l1', key_col => 'id') ORDER BY rank)
    IS DISTINCT FROM
    ARRAY(SELECT (id, vo_dist(v, q.v, 'l1'))::text FROM vp ORDER BY vo_dist(v, q.v, 'l1'), id LIMIT 6)) AS differing
FROM vtq q;
SELECT count(*) AS rows_checked, count(*) FILTER (WHERE a.d IS DISTINCT FROM b.d) AS differing
FROM (SELECT p.id, array_agg(distance ORDER BY rank) d
      FROM kd_all_knn('vp', 'v', 4, metric => 'cosine', key_col => 'id') a JOIN vp p ON p.id = a.query_key
      GROUP BY p.id) a
JOIN LATERAL (SELECT array_agg(d ORDER BY d) d FROM (SELECT vo_dist(t.v, q.v, 'cosine') d FROM vp q, vp t
              WHERE q.id = a.id AND t.id <> q.id ORDER BY 1 LIMIT 4) s) b ON true;

-- Rows deleted in this transaction are not found; the snapshot decides
BEGIN;
DELETE FROM vu WHERE id % 3 = 0;
SELECT count(*) AS queries, count(*) FILTER (WHERE
    ARRAY(SELECT (nn_ctid, distance)::text FROM kd_knn('vu', 'v', q.v, 5, metric => 'linf') ORDER BY rank)
    IS DISTINCT FROM
    ARRAY(SELECT (ctid, vo_dist(v, q.v, 'linf'))::text FROM vu ORDER BY vo_dist(v, q.v, 'linf'), ctid LIMIT 5)) AS differing
FROM vq q;
ROLLBACK;

-- errors
\set VERBOSITY terse
SELECT * FROM kd_knn('vu', 'v', ARRAY[1, 2, 3]::float8[], 3, metric => 'l1');
SELECT * FROM kd_knn('vu', 'v', (SELECT v FROM vq LIMIT 1), 3, metric => 'l3');
SELECT * FROM kd_knn('vu', 'v', array_fill(0::float8, ARRAY[64]), 3, metric => 'cosine');
SELECT * FROM kd_knn_join('vu', 'v', ARRAY[array_fill(1::float8, ARRAY[64]), array_fill(0::float8, ARRAY[64])], 3, metric => 'cosine');
SELECT * FROM kd_box('vu', 'v', array_fill(0::float8, ARRAY[64]), array_fill(1::float8, ARRAY[64]));
SELECT * FROM kd_pairs_within('vu', 'v', 1.0);
SELECT * FROM kd_range('vu', 'v', (SELECT v FROM vq LIMIT 1), -1, metric => 'l1');
SELECT * FROM kd_knn_join('vu', 'v', 'vt', 'v', 3, metric => 'l2');
SELECT kd_cosine_distance(ARRAY[0, 0]::float8[], ARRAY[1, 2]::float8[]);
SELECT ARRAY[1, 2]::float8[] <+> ARRAY[1, 2, 3]::float8[];
SELECT array_fill(1::float8, ARRAY[16001]) <-> array_fill(1::float8, ARRAY[16001]);
INSERT INTO vw VALUES (43, array_fill(0::float8, ARRAY[300]));
SELECT * FROM kd_knn('vw', 'v', (SELECT v FROM vw WHERE id = 1), 3, metric => 'cosine');
UPDATE vw SET v = array_fill('NaN'::float8, ARRAY[300]) WHERE id = 43;
SELECT * FROM kd_knn('vw', 'v', (SELECT v FROM vw WHERE id = 1), 3, metric => 'l1');
UPDATE vw SET v = array_fill(1::float8, ARRAY[299]) WHERE id = 43;
SELECT * FROM kd_knn('vw', 'v', (SELECT v FROM vw WHERE id = 1), 3);
