-- The kdvec index: ORDER BY v <-> q (kd_vector_ops) and v <+> q
-- (kd_vector_l1_ops) through the index against an oracle computed in SQL
-- from each metric's definition (sums over unnest, in coordinate order),
-- rows by (distance, ctid), NULL distances last: on small
-- integers (many ties), on clustered vectors (few directions), on vectors
-- of 600 coordinates (leaves of several pages); after inserts, deletes
-- with VACUUM, and REINDEX; an index built empty; the plans; the errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.25);

-- Whether the first k rows of tbl ordered by v <op> q (the index, as the
-- settings below leave no other plan) are the oracle's, ids and distances.
CREATE FUNCTION vi_same(tbl regclass, q float8[], k bigint, m kd_metric)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  ok boolean;
BEGIN
  EXECUTE format($f$
    WITH got AS (SELECT row_number() OVER () n, id, d
                 FROM (SELECT id, v %1$s $1 d FROM %2$s ORDER BY v %1$s $1 LIMIT $2) s),
         want AS (SELECT n, id, d FROM (
                    SELECT row_number() OVER (ORDER BY d NULLS LAST, ctid) n, id, d
                    FROM (SELECT id, ctid, (SELECT %3$s FROM unnest(t.v, $1) u(x, y)) d
                          FROM %2$s t) o) w
                  WHERE n <= $2)
    SELECT count(*) = (SELECT count(*) FROM want)
           AND bool_and(g.id = w.id AND g.d IS NOT DISTINCT FROM w.d)
    FROM got g FULL JOIN want w USING (n)$f$,
    CASE m WHEN 'l2' THEN '<->' ELSE '<+>' END, tbl,
    CASE m WHEN 'l2' THEN 'sqrt(sum((x - y) * (x - y)))' ELSE 'sum(abs(x - y))' END)
  INTO ok USING q, k;
  RETURN ok;
END $$;

-- vi_same of the first 57 rows for 12 queries: 6 rows of tbl, 6 random
-- vectors of dim coordinates, scale wide; the count that differ.
CREATE FUNCTION vi_failures(tbl regclass, dim int, scale float8, m kd_metric)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  bad bigint;
BEGIN
  EXECUTE format($f$
    WITH qs AS ((SELECT v FROM %1$s WHERE v IS NOT NULL AND v <> '{}' ORDER BY id LIMIT 6)
                UNION ALL
                SELECT ARRAY(SELECT (random() - 0.5) * $2 FROM generate_series(1, $1) j WHERE g > 0)
                FROM generate_series(1, 6) g)
    SELECT count(*) FILTER (WHERE NOT vi_same(%2$L, qs.v, 57, $3)) FROM qs$f$, tbl, tbl)
  INTO bad USING dim, scale, m;
  RETURN bad;
END $$;

-- small integers in 8 dimensions: many rows at one distance
CREATE TABLE vi_int (id int PRIMARY KEY, v float8[]);
INSERT INTO vi_int SELECT i, ARRAY(SELECT floor(random() * 3) - 1 FROM generate_series(1, 8) j WHERE i > 0)
FROM generate_series(1, 1500) i;
INSERT INTO vi_int VALUES (3001, NULL), (3002, '{}'), (3003, '{0,0,0,0,0,0,0,0}');
CREATE INDEX vi_int_v ON vi_int USING kdvec (v);

-- clustered: 24 dimensions on 5 lines through the origin, a little noise;
-- a row in 8 with no vector
CREATE TABLE vi_lines (id int PRIMARY KEY, v float8[]);
CREATE TABLE vi_dirs AS SELECT d, ARRAY(SELECT random() - 0.5 FROM generate_series(1, 24) j WHERE d >= 0) u
FROM generate_series(0, 4) d;
INSERT INTO vi_lines SELECT i, (SELECT array_agg(t * x + (random() - 0.5) * 1e-3 ORDER BY o)
                                FROM unnest((SELECT u FROM vi_dirs WHERE d = i % 5)) WITH ORDINALITY a(x, o))
FROM generate_series(1, 2000) i, LATERAL (SELECT (random() - 0.5) * 100 + i * 0 t) s;
UPDATE vi_lines SET v = CASE WHEN id % 16 = 0 THEN NULL ELSE '{}'::float8[] END WHERE id % 8 = 0;
CREATE INDEX vi_lines_v ON vi_lines USING kdvec (v kd_vector_ops);
CREATE INDEX vi_lines_l1 ON vi_lines USING kdvec (v kd_vector_l1_ops);

-- coordinates so small that their squares underflow
CREATE TABLE vi_tiny (id int PRIMARY KEY, v float8[]);
INSERT INTO vi_tiny SELECT i, ARRAY(SELECT round(random() * 40) * 1e-160 FROM generate_series(1, 4) j WHERE i > 0)
FROM generate_series(1, 600) i;
CREATE INDEX vi_tiny_v ON vi_tiny USING kdvec (v);

-- 600 coordinates: a page holds one row, a leaf two pages
CREATE TABLE vi_wide (id int PRIMARY KEY, v float8[]);
INSERT INTO vi_wide SELECT i, ARRAY(SELECT round(random() * 4) FROM generate_series(1, 600) j WHERE i > 0)
FROM generate_series(1, 200) i;
CREATE INDEX vi_wide_v ON vi_wide USING kdvec (v);
ANALYZE vi_int, vi_lines, vi_wide;

-- the operator classes validate
SELECT opcname, amvalidate(c.oid) FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
 WHERE a.amname = 'kdvec' ORDER BY opcname;

-- the plans: the index for ORDER BY ... LIMIT at the default settings,
-- the L1 index for <+>, no kdvec index for cosine
EXPLAIN (COSTS OFF) SELECT id FROM vi_lines ORDER BY v <-> (SELECT v FROM vi_lines WHERE id = 7) LIMIT 10;
EXPLAIN (COSTS OFF) SELECT id FROM vi_lines ORDER BY v <+> '{1,2,3}' LIMIT 10;
EXPLAIN (COSTS OFF) SELECT id FROM vi_lines ORDER BY v <=> '{1,2,3}' LIMIT 10;
-- two distances to order by: no kdvec scan, which orders by one
EXPLAIN (COSTS OFF) SELECT id FROM vi_lines ORDER BY v <-> '{1,2,3}', v <-> '{3,2,1}' LIMIT 10;
-- uniform vectors in 32 dimensions leave the tree nothing to prune: the
-- build says so, and the planner takes the sequential scan
CREATE TABLE vi_uni AS SELECT i AS id, ARRAY(SELECT random() FROM generate_series(1, 32) j WHERE i > 0) v
FROM generate_series(1, 20000) i;
CREATE INDEX vi_uni_v ON vi_uni USING kdvec (v);
ANALYZE vi_uni;
EXPLAIN (COSTS OFF) SELECT id FROM vi_uni ORDER BY v <-> (SELECT v FROM vi_uni WHERE id = 7) LIMIT 10;
DROP TABLE vi_uni;

SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT vi_failures('vi_int', 8, 3, 'l2') AS int_l2,
       vi_failures('vi_lines', 24, 60, 'l2') AS lines_l2,
       vi_failures('vi_lines', 24, 60, 'l1') AS lines_l1,
       vi_failures('vi_wide', 600, 8, 'l2') AS wide_l2,
       vi_failures('vi_tiny', 4, 8e-159, 'l2') AS tiny_l2;
-- every row, NULL distances last
SELECT vi_same('vi_int', '{1,0,1,0,1,0,1,0}', 5000, 'l2') AS int_all,
       vi_same('vi_wide', (SELECT v FROM vi_wide WHERE id = 3), 5000, 'l2') AS wide_all;
SELECT count(*), count(*) FILTER (WHERE d IS NULL) AS null_distance
FROM (SELECT v <-> NULL::float8[] d FROM vi_int ORDER BY v <-> NULL::float8[]) s;

-- inserts land on the pending chain, next to equal vectors in the tree
INSERT INTO vi_int SELECT 4000 + id, v FROM vi_int WHERE id <= 400 ORDER BY id;
INSERT INTO vi_int VALUES (4401, NULL), (4402, '{}');
INSERT INTO vi_lines SELECT 4000 + id, (SELECT array_agg(x * 1.5) FROM unnest(v) x) FROM vi_lines WHERE id <= 500;
SELECT vi_failures('vi_int', 8, 3, 'l2') AS int_l2,
       vi_failures('vi_lines', 24, 60, 'l2') AS lines_l2,
       vi_failures('vi_lines', 24, 60, 'l1') AS lines_l1;

-- deletes, then VACUUM marks their rows dead in the tree and the chains
DELETE FROM vi_int WHERE id % 3 = 0;
DELETE FROM vi_lines WHERE id % 4 = 1;
VACUUM vi_int, vi_lines;
SELECT vi_failures('vi_int', 8, 3, 'l2') AS int_l2,
       vi_failures('vi_lines', 24, 60, 'l2') AS lines_l2,
       vi_failures('vi_lines', 24, 60, 'l1') AS lines_l1;
SELECT vi_same('vi_int', '{0,0,0,0,0,0,0,0}', 5000, 'l2') AS int_all;

REINDEX TABLE vi_lines;
SELECT vi_failures('vi_lines', 24, 60, 'l2') AS lines_l2,
       vi_failures('vi_lines', 24, 60, 'l1') AS lines_l1;

-- kd_knn of one vector runs as an ordered scan of the index of its metric
CREATE FUNCTION vi_knn_same(q float8[], m kd_metric) RETURNS boolean LANGUAGE sql AS $$
  SELECT (SELECT array_agg(nn_ctid ORDER BY rank) FROM kd_knn('vi_lines', 'v', q, 10, metric => m)) =
         (SELECT array_agg(ctid ORDER BY d, ctid) FROM (
            SELECT ctid, (SELECT CASE m WHEN 'l2' THEN sqrt(sum((x - y) * (x - y))) ELSE sum(abs(x - y)) END
                          FROM unnest(t.v, q) u(x, y)) d
            FROM vi_lines t ORDER BY 2, 1 LIMIT 10) o)
     AND (SELECT last_run FROM kd_status()) LIKE 'kd_knn ran as an ordered scan of index%' $$;
SELECT vi_knn_same((SELECT v FROM vi_lines WHERE id = 12), 'l2') AS l2,
       vi_knn_same((SELECT v FROM vi_lines WHERE id = 12), 'l1') AS l1,
       vi_knn_same(ARRAY(SELECT 0.5 FROM generate_series(1, 24)), 'l2') AS l2_off;
SELECT (SELECT array_agg(nn_key ORDER BY rank) FROM kd_knn('vi_lines', 'v', (SELECT v FROM vi_lines WHERE id = 42), 5, 'id')) =
       (SELECT array_agg(id::bigint) FROM (SELECT id FROM vi_lines ORDER BY v <-> (SELECT v FROM vi_lines WHERE id = 42), id LIMIT 5) s)
       AS by_key, (SELECT last_run FROM kd_status());
SELECT count(*), (SELECT last_run FROM kd_status()) LIKE 'flat kNN search%' AS read_table
FROM kd_knn('vi_lines', 'v', (SELECT v FROM vi_lines WHERE id = 42), 5, metric => 'linf');

-- an index built on an empty table takes its dimension from the first row
CREATE UNLOGGED TABLE vi_empty (id int, v float8[]);
CREATE INDEX vi_empty_v ON vi_empty USING kdvec (v);
SELECT count(*) FROM (SELECT id FROM vi_empty ORDER BY v <-> '{1,2}') s;
INSERT INTO vi_empty SELECT i, ARRAY[i % 7, i % 11] FROM generate_series(1, 300) i;
INSERT INTO vi_empty VALUES (301, NULL);
SELECT vi_failures('vi_empty', 2, 20, 'l2') AS empty_l2;

-- a cursor takes its rows a few at a time
BEGIN;
DECLARE c CURSOR FOR SELECT id, v <-> '{3,4}' d FROM vi_empty ORDER BY v <-> '{3,4}';
FETCH 3 FROM c;
FETCH 2 FROM c;
COMMIT;

RESET enable_seqscan;
RESET enable_bitmapscan;

-- errors
CREATE TABLE vi_err (id int, v float8[]);
CREATE INDEX vi_err_v ON vi_err USING kdvec (v);
INSERT INTO vi_err VALUES (1, '{1,2,3}');
INSERT INTO vi_err VALUES (2, '{1,2}');
INSERT INTO vi_err VALUES (3, '{1,2,NaN}');
INSERT INTO vi_err VALUES (4, '{{1,2,3},{5,6,7}}');
INSERT INTO vi_err VALUES (5, '{1,NULL,3}');
SET enable_seqscan = off;
SELECT id FROM vi_err ORDER BY v <-> '{1,2}' LIMIT 1;
SELECT id FROM vi_err ORDER BY v <-> '{1,2,Infinity}' LIMIT 1;
RESET enable_seqscan;
SELECT id, v <-> '{1,2,4}' FROM vi_err ORDER BY v <-> '{1,2,4}';
CREATE TABLE vi_bad (id int, v float8[]);
INSERT INTO vi_bad VALUES (1, '{1,2,3}'), (2, '{1,2}');
CREATE INDEX ON vi_bad USING kdvec (v);
TRUNCATE vi_bad;
INSERT INTO vi_bad SELECT 1, array_fill(1.0::float8, ARRAY[1001]);
CREATE INDEX ON vi_bad USING kdvec (v);
CREATE INDEX ON vi_bad USING kdvec (v) WITH (fillfactor = 50);
CREATE TABLE vi_ints (v int[]);
CREATE INDEX ON vi_ints USING kdvec (v);
