-- real[] (float4[]) columns and arguments: each element converts to float8
-- exactly, so every answer must be that of the same values stored as
-- float8[].  Checked against brute force in SQL on the ::float8[] values
-- (rv_dist: each metric from its definition, summed over unnest in
-- coordinate order; ties by ctid) and against a float8[] twin of each
-- table (the key forms: same rows, same order, same distances), under each
-- kd_metric, in 3 dimensions (small integers: ties; the kd-tree under l2)
-- and 100 (searched flat): kd_knn, kd_knn_join (array and table forms),
-- kd_all_knn and its arrays, kd_range, kd_range_join, kd_box,
-- kd_cluster_dbscan, the operators; NULL rows and empty arrays skipped;
-- and the errors, each beside the float8[] twin's.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.25);

CREATE FUNCTION rv_dist(a float8[], b float8[], m kd_metric) RETURNS float8
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT CASE m
    WHEN 'l2' THEN sqrt(sum((x - y) * (x - y)))
    WHEN 'l1' THEN sum(abs(x - y))
    WHEN 'linf' THEN max(abs(x - y))
    ELSE 1 - greatest(-1, least(1, sum(x * y) / (sqrt(sum(x * x)) * sqrt(sum(y * y)))))
  END FROM unnest(a, b) u(x, y) $$;

-- 3 dimensions: small integers (many ties) and reals with no short decimal
-- form, a NULL row and an empty one; queries partly rows of the table
CREATE TABLE rv_3 (id int PRIMARY KEY, v real[]);
INSERT INTO rv_3 SELECT i, ARRAY(SELECT CASE WHEN i % 2 = 0 THEN floor(random() * 5) - 2
                                             ELSE (random() * 20 - 10)::real END
                                 FROM generate_series(1, 3) j WHERE i > 0)
  FROM generate_series(1, 160) i;
INSERT INTO rv_3 VALUES (161, NULL), (162, '{}');
CREATE TABLE rv_3q (qid int PRIMARY KEY, v real[]);
INSERT INTO rv_3q SELECT 100 + id, v FROM rv_3 WHERE id IN (2, 7, 40);
INSERT INTO rv_3q SELECT i, ARRAY(SELECT (random() * 6 - 3)::real FROM generate_series(1, 3) j WHERE i > 0)
  FROM generate_series(1, 4) i;
-- 100 dimensions
CREATE TABLE rv_100 (id int PRIMARY KEY, v real[]);
INSERT INTO rv_100 SELECT i, ARRAY(SELECT (random() - 0.5)::real FROM generate_series(1, 100) j WHERE i > 0)
  FROM generate_series(1, 120) i;
INSERT INTO rv_100 VALUES (121, NULL), (122, '{}');
CREATE TABLE rv_100q (qid int PRIMARY KEY, v real[]);
INSERT INTO rv_100q SELECT 100 + id, v FROM rv_100 WHERE id IN (5, 60);
INSERT INTO rv_100q SELECT i, ARRAY(SELECT (random() - 0.5)::real FROM generate_series(1, 100) j WHERE i > 0)
  FROM generate_series(1, 3) i;
-- the float8[] twins: the same values, converted
CREATE TABLE rv_3f AS SELECT id, v::float8[] AS v FROM rv_3 ORDER BY id;
CREATE TABLE rv_100f AS SELECT id, v::float8[] AS v FROM rv_100 ORDER BY id;

-- For a real[] table, its queries (real[]) and k: per metric, the queries
-- whose answers differ from brute force (kd_knn, kd_knn_join array and
-- table forms) or from the float8[] twin's (kd_knn and kd_knn_join by key)
CREATE FUNCTION rv_knn(tbl text, qtbl text, k int)
RETURNS TABLE (metric kd_metric, queries bigint, knn_differing bigint,
               join_differing bigint, table_join_differing bigint,
               twin_differing bigint, twin_join_differing bigint)
LANGUAGE plpgsql AS $f$
DECLARE m kd_metric;
BEGIN
  FOREACH m IN ARRAY enum_range(NULL::kd_metric) LOOP
    RETURN QUERY EXECUTE format($q$
      WITH want AS MATERIALIZED (
        SELECT q.qid, array_agg((o.ctid, o.d)::text ORDER BY o.d, o.ctid) AS nn
        FROM %2$I q, LATERAL (SELECT t.ctid, rv_dist(t.v::float8[], q.v::float8[], %3$L) d FROM %1$I t
                              WHERE t.v IS NOT NULL AND t.v <> '{}'
                              ORDER BY 2, 1 LIMIT %4$s) o
        GROUP BY q.qid),
      ids AS (SELECT array_agg(qid ORDER BY qid) a, array_agg(v ORDER BY qid) vs FROM %2$I),
      joined AS MATERIALIZED (
        SELECT ids.a[j.query_ord] AS qid,
               array_agg((j.nn_ctid, j.distance)::text ORDER BY j.rank) AS nn
        FROM ids, LATERAL kd_knn_join(%1$L, 'v', ids.vs, %4$s, metric => %3$L) j
        GROUP BY 1),
      tjoined AS MATERIALIZED (
        SELECT q.qid, array_agg((j.nn_ctid, j.distance)::text ORDER BY j.rank) AS nn
        FROM kd_knn_join(%1$L, 'v', %2$L, 'v', %4$s, metric => %3$L) j
        JOIN %2$I q ON q.ctid = j.query_ctid
        GROUP BY q.qid),
      keyed AS MATERIALIZED (
        SELECT ids.a[j.query_ord] AS qid, array_agg((j.nn_key, j.distance)::text ORDER BY j.rank) AS nn
        FROM ids, LATERAL kd_knn_join(%1$L, 'v', ids.vs, %4$s, metric => %3$L, key_col => 'id') j
        GROUP BY 1),
      twin AS MATERIALIZED (
        SELECT ids.a[j.query_ord] AS qid, array_agg((j.nn_key, j.distance)::text ORDER BY j.rank) AS nn
        FROM ids, LATERAL kd_knn_join(%1$L || 'f', 'v', ids.vs::float8[], %4$s, metric => %3$L, key_col => 'id') j
        GROUP BY 1)
      SELECT %3$L::kd_metric, count(*),
        count(*) FILTER (WHERE w.nn IS DISTINCT FROM
          ARRAY(SELECT (nn_ctid, distance)::text
                FROM kd_knn(%1$L, 'v', (SELECT v FROM %2$I WHERE qid = w.qid), %4$s, metric => %3$L)
                ORDER BY rank)),
        count(*) FILTER (WHERE w.nn IS DISTINCT FROM (SELECT nn FROM joined WHERE joined.qid = w.qid)),
        count(*) FILTER (WHERE w.nn IS DISTINCT FROM (SELECT nn FROM tjoined WHERE tjoined.qid = w.qid)),
        count(*) FILTER (WHERE
          ARRAY(SELECT (nn_key, distance)::text
                FROM kd_knn(%1$L, 'v', (SELECT v FROM %2$I WHERE qid = w.qid), %4$s, metric => %3$L, key_col => 'id')
                ORDER BY rank)
          IS DISTINCT FROM
          ARRAY(SELECT (nn_key, distance)::text
                FROM kd_knn(%1$L || 'f', 'v', (SELECT v::float8[] FROM %2$I WHERE qid = w.qid), %4$s,
                            metric => %3$L, key_col => 'id')
                ORDER BY rank)),
        count(*) FILTER (WHERE (SELECT nn FROM keyed WHERE keyed.qid = w.qid)
                               IS DISTINCT FROM (SELECT nn FROM twin WHERE twin.qid = w.qid))
      FROM want w $q$, tbl, qtbl, m, k);
  END LOOP;
END $f$;
SELECT * FROM rv_knn('rv_3', 'rv_3q', 9);
SELECT (kd_status()).last_run ~ '^flat kNN search \(cosine distance, 3 dimensions\)' AS flat_ran;
SELECT * FROM rv_knn('rv_100', 'rv_100q', 6);
SELECT (kd_status()).last_run ~ '^flat kNN search \(cosine distance, 100 dimensions\)' AS flat_ran;

-- Without a metric (<->: the kd-tree in 3 dimensions), a real[] query, a
-- float8[] query with no real[] form, and ORDER BY v <-> q on the column
SELECT count(*) AS queries, count(*) FILTER (WHERE
    ARRAY(SELECT (nn_ctid, distance)::text FROM kd_knn('rv_3', q.v, 7) ORDER BY rank)
    IS DISTINCT FROM
    ARRAY(SELECT (ctid, v <-> q.v)::text FROM rv_3 WHERE v <> '{}' ORDER BY v <-> q.v, ctid LIMIT 7)) AS differing
FROM rv_3q q;
SELECT (kd_status()).last_run !~ '^flat' AS tree_ran;
SELECT count(*) AS queries, count(*) FILTER (WHERE
    ARRAY(SELECT (nn_ctid, distance)::text FROM kd_knn('rv_3', q.v, 5) ORDER BY rank)
    IS DISTINCT FROM
    ARRAY(SELECT (ctid, rv_dist(v::float8[], q.v, 'l2'))::text FROM rv_3 WHERE v <> '{}'
          ORDER BY rv_dist(v::float8[], q.v, 'l2'), ctid LIMIT 5)) AS differing
FROM (VALUES (ARRAY[0.1, 0.2, 0.3]::float8[]), (ARRAY[1e-9, -1.0000001, 2.5]::float8[])) q(v);
SELECT count(*) AS queries, count(*) FILTER (WHERE
    ARRAY(SELECT (nn_ctid, distance)::text FROM kd_knn('rv_100', q.v, 4) ORDER BY rank)
    IS DISTINCT FROM
    ARRAY(SELECT (ctid, v <-> q.v)::text FROM rv_100 WHERE v <> '{}' ORDER BY v <-> q.v, ctid LIMIT 4)) AS differing
FROM rv_100q q;

-- A partitioned real[] table: each leaf searched, answers merged
CREATE TABLE rv_p (id int, v real[]) PARTITION BY RANGE (id);
CREATE TABLE rv_p1 PARTITION OF rv_p FOR VALUES FROM (0) TO (80);
CREATE TABLE rv_p2 PARTITION OF rv_p FOR VALUES FROM (80) TO (1000);
INSERT INTO rv_p SELECT id, v FROM rv_3;
SELECT count(*) AS queries, count(*) FILTER (WHERE
    ARRAY(SELECT (nn_key, distance)::text FROM kd_knn('rv_p', 'v', q.v, 6, key_col => 'id') ORDER BY rank)
    IS DISTINCT FROM
    ARRAY(SELECT (nn_key, distance)::text FROM kd_knn('rv_3f', 'v', q.v, 6, key_col => 'id') ORDER BY rank)) AS twin_differing
FROM rv_3q q;

-- The operators on real[] are float8[]'s on the converted values
SELECT count(*) AS pairs,
       count(*) FILTER (WHERE a.v <-> b.v IS DISTINCT FROM rv_dist(a.v::float8[], b.v::float8[], 'l2')) AS l2_differing,
       count(*) FILTER (WHERE a.v <+> b.v IS DISTINCT FROM rv_dist(a.v::float8[], b.v::float8[], 'l1')) AS l1_differing,
       count(*) FILTER (WHERE kd_linf_distance(a.v, b.v) IS DISTINCT FROM rv_dist(a.v::float8[], b.v::float8[], 'linf')) AS linf_differing,
       count(*) FILTER (WHERE a.v <=> b.v IS DISTINCT FROM rv_dist(a.v::float8[], b.v::float8[], 'cosine')) AS cosine_differing,
       count(*) FILTER (WHERE a.v <-> b.v IS DISTINCT FROM af.v <-> bf.v) AS twin_differing
FROM rv_100 a JOIN rv_100 b ON b.id = a.id % 50 + 1
JOIN rv_100f af ON af.id = a.id JOIN rv_100f bf ON bf.id = b.id
WHERE a.v <> '{}';
SELECT ARRAY[0.1]::real[] <-> ARRAY[0]::real[] AS l2_of_real_tenth,
       ARRAY[3, -4]::real[] <+> ARRAY[0, 0]::float8[] AS l1_mixed,
       '{}'::real[] <-> ARRAY[1]::real[] AS empty;
SELECT oprname, oprleft::regtype, oprright::regtype FROM pg_operator
WHERE 'real[]'::regtype IN (oprleft, oprright) AND oprname IN ('<->', '<+>', '<=>')
ORDER BY 1;

-- All-kNN and its arrays: the ctid forms against brute force (on the rows
-- whose id is a multiple of every), the key forms against the float8[]
-- twin's (every row)
CREATE FUNCTION rv_all(tbl text, k int, every int)
RETURNS TABLE (metric kd_metric, include_self boolean, rows_checked bigint,
               pairs_differing bigint, arrays_differing bigint, twin_differing bigint)
LANGUAGE plpgsql AS $f$
DECLARE m kd_metric; s boolean;
BEGIN
  FOREACH m IN ARRAY enum_range(NULL::kd_metric) LOOP
    FOREACH s IN ARRAY ARRAY[false, true] LOOP
      RETURN QUERY EXECUTE format($q$
        WITH want AS MATERIALIZED (
          SELECT q.ctid AS qc, array_agg((o.ctid, o.d)::text ORDER BY o.d, o.ctid) AS nn
          FROM %1$I q, LATERAL (SELECT t.ctid, rv_dist(t.v::float8[], q.v::float8[], %2$L) d FROM %1$I t
                                WHERE t.v IS NOT NULL AND t.v <> '{}' AND (%3$L OR t.ctid <> q.ctid)
                                ORDER BY 2, 1 LIMIT %4$s) o
          WHERE q.v IS NOT NULL AND q.v <> '{}' AND q.id %% %5$s = 0
          GROUP BY q.ctid),
        got AS MATERIALIZED (
          SELECT query_ctid AS qc, array_agg((nn_ctid, distance)::text ORDER BY rank) AS nn
          FROM kd_all_knn(%1$L, 'v', %4$s, metric => %2$L, include_self => %3$L)
          GROUP BY query_ctid),
        arrays AS MATERIALIZED (
          SELECT query_ctid AS qc,
                 ARRAY(SELECT (c, d)::text FROM unnest(nn_ctids, distances) u(c, d)) AS nn
          FROM kd_all_knn_arrays(%1$L, 'v', %4$s, metric => %2$L, include_self => %3$L)),
        keyed AS (
          SELECT query_key, array_agg((nn_key, distance)::text ORDER BY rank) AS nn
          FROM kd_all_knn(%1$L, 'v', %4$s, metric => %2$L, include_self => %3$L, key_col => 'id')
          GROUP BY 1),
        twin AS (
          SELECT query_key, array_agg((nn_key, distance)::text ORDER BY rank) AS nn
          FROM kd_all_knn(%1$L || 'f', 'v', %4$s, metric => %2$L, include_self => %3$L, key_col => 'id')
          GROUP BY 1)
        SELECT %2$L::kd_metric, %3$L::boolean, count(*),
          count(*) FILTER (WHERE w.nn IS DISTINCT FROM (SELECT nn FROM got WHERE got.qc = w.qc)),
          count(*) FILTER (WHERE w.nn IS DISTINCT FROM (SELECT nn FROM arrays WHERE arrays.qc = w.qc)),
          (SELECT count(*) FROM keyed FULL JOIN twin USING (query_key)
           WHERE keyed.nn IS DISTINCT FROM twin.nn)
        FROM want w $q$, tbl, m, s, k, every);
    END LOOP;
  END LOOP;
END $f$;
SELECT * FROM rv_all('rv_3', 5, 2);
SELECT * FROM rv_all('rv_100', 3, 6);

-- kd_range, kd_range_join (array of real[] centres, and a table of them)
-- against brute force; the key form against the twin's
CREATE FUNCTION rv_range(tbl text, qtbl text, radii float8[])
RETURNS TABLE (metric kd_metric, radius float8, queries bigint, hits bigint,
               range_differing bigint, join_differing bigint,
               table_join_differing bigint, twin_differing bigint)
LANGUAGE plpgsql AS $f$
DECLARE m kd_metric; r float8; i int := 0;
BEGIN
  FOREACH m IN ARRAY enum_range(NULL::kd_metric) LOOP
    i := i + 1;
    r := radii[i];
    RETURN QUERY EXECUTE format($q$
      WITH want AS MATERIALIZED (
        SELECT q.qid, ARRAY(SELECT (t.ctid, rv_dist(t.v::float8[], q.v::float8[], %3$L))::text FROM %1$I t
                            WHERE t.v IS NOT NULL AND t.v <> '{}'
                              AND rv_dist(t.v::float8[], q.v::float8[], %3$L) <= %4$s
                            ORDER BY rv_dist(t.v::float8[], q.v::float8[], %3$L), t.ctid) AS nn
        FROM %2$I q),
      ids AS (SELECT array_agg(qid ORDER BY qid) a, array_agg(v ORDER BY qid) vs FROM %2$I),
      joined AS MATERIALIZED (
        SELECT ids.a[j.query_ord] AS qid, array_agg((j.nn_ctid, j.distance)::text ORDER BY j.rank) AS nn
        FROM ids, LATERAL kd_range_join(%1$L, 'v', ids.vs, %4$s, metric => %3$L) j GROUP BY 1),
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
        count(*) FILTER (WHERE w.nn IS DISTINCT FROM coalesce((SELECT nn FROM tjoined WHERE tjoined.qid = w.qid), '{}')),
        count(*) FILTER (WHERE
          ARRAY(SELECT (nn_key, distance)::text
                FROM kd_range(%1$L, 'v', (SELECT v FROM %2$I WHERE qid = w.qid), %4$s, metric => %3$L, key_col => 'id')
                ORDER BY rank)
          IS DISTINCT FROM
          ARRAY(SELECT (nn_key, distance)::text
                FROM kd_range(%1$L || 'f', 'v', (SELECT v::float8[] FROM %2$I WHERE qid = w.qid), %4$s,
                              metric => %3$L, key_col => 'id')
                ORDER BY rank))
      FROM want w $q$, tbl, qtbl, m, r);
  END LOOP;
END $f$;
SELECT * FROM rv_range('rv_3', 'rv_3q', ARRAY[2.5, 4, 2, 0.05]);
SELECT * FROM rv_range('rv_100', 'rv_100q', ARRAY[4.0, 33, 0.8, 0.9]);

-- kd_box with real[] corners, and DBSCAN, against the twin and SQL
SELECT count(*) AS hits,
       count(*) FILTER (WHERE b.nn_key IS NULL OR f.nn_key IS NULL) AS twin_differing,
       (SELECT count(*) FROM rv_3 WHERE v <> '{}' AND v[1] BETWEEN -1 AND 1.5
          AND v[2] BETWEEN -2 AND 0 AND v[3] BETWEEN -1.25 AND 2) AS brute_force
FROM kd_box('rv_3', 'v', ARRAY[-1, -2, -1.25]::real[], ARRAY[1.5, 0, 2]::real[], key_col => 'id') b
FULL JOIN kd_box('rv_3f', 'v', ARRAY[-1, -2, -1.25], ARRAY[1.5, 0, 2], key_col => 'id') f USING (nn_key);
SELECT count(*) AS rows, count(*) FILTER (WHERE r.c IS DISTINCT FROM f.c) AS twin_differing,
       count(DISTINCT r.c) > 1 AS clustered
FROM (SELECT id, kd_cluster_dbscan(v, 1.0, 3) OVER () c FROM rv_3 WHERE v <> '{}') r
JOIN (SELECT id, kd_cluster_dbscan(v, 1.0, 3) OVER () c FROM rv_3f WHERE v <> '{}') f USING (id);

-- errors, each beside the float8[] twin's: the same refusals
\set VERBOSITY terse
SELECT * FROM kd_knn('rv_3', 'v', ARRAY[1, 'NaN', 2]::real[], 3);
SELECT * FROM kd_knn('rv_3f', 'v', ARRAY[1, 'NaN', 2]::float8[], 3);
SELECT * FROM kd_knn_join('rv_3', 'v', ARRAY[[1, 2, 3], [1, 'Infinity', 3]]::real[], 3);
SELECT * FROM kd_knn_join('rv_3f', 'v', ARRAY[[1, 2, 3], [1, 'Infinity', 3]]::float8[], 3);
SELECT * FROM kd_knn('rv_3', 'v', ARRAY[1, 2]::real[], 3);
SELECT * FROM kd_knn('rv_100', 'v', ARRAY[1, 2, 3]::real[], 3, metric => 'l1');
SELECT * FROM kd_knn('rv_3', 'v', '{}'::real[], 3);
SELECT * FROM kd_knn('rv_3', 'v', ARRAY[1, NULL, 3]::real[], 3);
SELECT * FROM kd_knn('rv_3', 'v', point(1, 2), 3);
SELECT * FROM kd_knn('rv_3', 'v', ARRAY[0, 0, 0]::real[], 3, metric => 'cosine');
SELECT * FROM kd_box('rv_100', 'v', array_fill(0::real, ARRAY[100]), array_fill(1::real, ARRAY[100]));
CREATE TABLE rv_pts (p point);
SELECT * FROM kd_knn_join('rv_3', 'v', 'rv_pts', 'p', 3);
SELECT ARRAY[1, 2]::real[] <-> ARRAY[1, 2, 3]::real[];
SELECT ARRAY[1, 'Infinity']::real[] <+> ARRAY[1, 2]::real[];
SELECT kd_cosine_distance(ARRAY[0, 0]::real[], ARRAY[1, 2]::real[]);
-- stored values the functions refuse, naming the row
CREATE TABLE rv_bad (id int, v real[]);
CREATE TABLE rv_badf (id int, v float8[]);
INSERT INTO rv_bad VALUES (1, '{1,2,3}'), (2, '{1,NaN,3}');
INSERT INTO rv_badf SELECT id, v::float8[] FROM rv_bad;
SELECT * FROM kd_knn('rv_bad', 'v', ARRAY[0, 0, 0]::real[], 1);
SELECT * FROM kd_knn('rv_badf', 'v', ARRAY[0, 0, 0]::real[], 1);
UPDATE rv_bad SET v = '{-Infinity,2,3}' WHERE id = 2;
UPDATE rv_badf SET v = '{-Infinity,2,3}' WHERE id = 2;
SELECT * FROM kd_all_knn('rv_bad', 'v', 1, metric => 'l1');
SELECT * FROM kd_all_knn('rv_badf', 'v', 1, metric => 'l1');
UPDATE rv_bad SET v = '{1,NULL,3}' WHERE id = 2;
UPDATE rv_badf SET v = '{1,NULL,3}' WHERE id = 2;
SELECT * FROM kd_knn('rv_bad', 'v', ARRAY[0, 0, 0]::real[], 1);
SELECT * FROM kd_knn('rv_badf', 'v', ARRAY[0, 0, 0]::real[], 1);
UPDATE rv_bad SET v = '{{1,2},{3,4}}' WHERE id = 2;
UPDATE rv_badf SET v = '{{1,2},{3,4}}' WHERE id = 2;
SELECT * FROM kd_range('rv_bad', 'v', ARRAY[0, 0, 0]::real[], 1);
SELECT * FROM kd_range('rv_badf', 'v', ARRAY[0, 0, 0]::real[], 1);
UPDATE rv_bad SET v = '{1,2}' WHERE id = 2;
UPDATE rv_badf SET v = '{1,2}' WHERE id = 2;
SELECT * FROM kd_knn('rv_bad', 'v', ARRAY[0, 0, 0]::real[], 1);
SELECT * FROM kd_knn('rv_badf', 'v', ARRAY[0, 0, 0]::real[], 1);
UPDATE rv_bad SET v = array_fill(1::real, ARRAY[16001]) WHERE id = 2;
SELECT * FROM kd_knn('rv_bad', 'v', ARRAY[0, 0, 0]::real[], 1);
CREATE TABLE rv_none (id int, t text);
SELECT * FROM kd_knn('rv_none', ARRAY[0, 0, 0]::real[], 1);
