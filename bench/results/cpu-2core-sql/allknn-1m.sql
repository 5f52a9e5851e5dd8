-- All-kNN at 1M uniform 2-D points (table u1m: id int, p point, a kdgpu
-- index and an SP-GiST index on p), k = 10, 2-core AMD EPYC, no GPU:
-- kdgpu's functions and the SP-GiST LATERAL peer in one session
\timing on
SELECT version();
SELECT count(*) FROM u1m;
SELECT count(*) FROM generate_series(1, 1000000);
SELECT count(*) FROM generate_series(1, 10000000);
SELECT count(*) FROM kd_all_knn_arrays('u1m', 10);
SELECT count(*) FROM kd_all_knn_arrays('u1m', 10);
SELECT sum(cardinality(nn_ctids)) FROM kd_all_knn_arrays('u1m', 10);
SELECT count(*) FROM kd_all_knn('u1m', 10);
SELECT count(*) FROM kd_all_knn('u1m', 10);
BEGIN;
DROP INDEX u1m_p_idx;  -- so that LATERAL uses SP-GiST; rolled back
EXPLAIN (COSTS OFF) SELECT count(*) FROM u1m a CROSS JOIN LATERAL (SELECT 1 FROM u1m b ORDER BY b.p <-> a.p LIMIT 11) s;
SELECT count(*) FROM u1m a CROSS JOIN LATERAL (SELECT 1 FROM u1m b ORDER BY b.p <-> a.p LIMIT 11) s;
ROLLBACK;
