-- Edge cases of the kdgpu index found in review, each against a sequential
-- scan: a table truncated in place in the transaction that created it (the
-- rebuilt index must not reuse the tree cached before), and distances whose
-- squares underflow (the scan's lower bounds must stay below pg_hypot).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;

-- TRUNCATE in the creating transaction truncates in place: same relfilenode
BEGIN;
CREATE TABLE ed_trunc (id int, p point);
INSERT INTO ed_trunc SELECT i, point(i, 0) FROM generate_series(1, 100) i;
CREATE INDEX ed_trunc_p ON ed_trunc USING kdgpu (p);
SET LOCAL enable_seqscan = off;
SELECT id FROM ed_trunc ORDER BY p <-> point(0, 0) LIMIT 3;
TRUNCATE ed_trunc;
INSERT INTO ed_trunc SELECT 1000 + i, point(-i, 0) FROM generate_series(1, 5) i;
SELECT id, p <-> point(0, 0) AS d FROM ed_trunc ORDER BY p <-> point(0, 0);
SELECT count(*) FROM ed_trunc WHERE p <@ box '((-100,-1),(100,1))';
SELECT kd_index_check('ed_trunc_p');
COMMIT;
DROP TABLE ed_trunc;

-- tiny coordinates: squares of the differences underflow to subnormals
CREATE TABLE ed_tiny (id int, p point);
INSERT INTO ed_tiny SELECT i, point(i * 1e-161 * (1 + (i % 3) * 1e-3), (i % 7) * 3e-162)
  FROM generate_series(1, 400) i;
CREATE INDEX ON ed_tiny USING kdgpu (p);
CREATE TABLE ed_tiny_q AS SELECT point(q * 2.5e-160, (q % 5) * 1e-161) AS q FROM generate_series(0, 20) q;
SET enable_seqscan = off;
CREATE TABLE ed_tiny_idx AS
  SELECT q, ARRAY(SELECT ctid FROM ed_tiny ORDER BY p <-> q LIMIT 25) c FROM ed_tiny_q;
RESET enable_seqscan;
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT count(*) AS queries, count(*) FILTER (WHERE i.c IS DISTINCT FROM
    ARRAY(SELECT ctid FROM ed_tiny ORDER BY p <-> i.q, ctid LIMIT 25)) AS differing
  FROM ed_tiny_idx i;
RESET enable_indexscan; RESET enable_bitmapscan;
DROP TABLE ed_tiny, ed_tiny_q, ed_tiny_idx;
