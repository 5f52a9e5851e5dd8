-- Shared by the suites of the kd_* functions on indexed tables
-- (22_index_functions, 28_index_rows): the query points are fx_q's.
-- Differences between the functions' answers and brute force on a table
-- (fx_pts unless named), as a count of queries that differ for each
-- function.
CREATE FUNCTION fx_check(tbl text DEFAULT 'fx_pts')
RETURNS TABLE (fn text, queries bigint, differing bigint)
LANGUAGE plpgsql AS $f$
BEGIN
  SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off;
  RETURN QUERY EXECUTE format($q$
  WITH allknn AS MATERIALIZED (SELECT * FROM kd_all_knn(%1$L, 3))
  SELECT 'kd_knn', count(*), count(*) FILTER (WHERE
      ARRAY(SELECT (nn_ctid, distance)::text FROM kd_knn(%1$L, q, 7) ORDER BY rank)
      IS DISTINCT FROM
      ARRAY(SELECT (ctid, p <-> q)::text FROM %1$I WHERE p IS NOT NULL ORDER BY p <-> q, ctid LIMIT 7))
  FROM fx_q
  UNION ALL
  SELECT 'kd_knn_join', count(*), count(*) FILTER (WHERE
      ARRAY(SELECT (nn_ctid, distance)::text FROM kd_knn_join(%1$L, (SELECT array_agg(q ORDER BY qid) FROM fx_q), 4) j
            WHERE j.query_ord = qid ORDER BY rank)
      IS DISTINCT FROM
      ARRAY(SELECT (ctid, p <-> q)::text FROM %1$I WHERE p IS NOT NULL ORDER BY p <-> q, ctid LIMIT 4))
  FROM fx_q
  UNION ALL
  SELECT 'kd_range', count(*), count(*) FILTER (WHERE
      ARRAY(SELECT nn_ctid FROM kd_range(%1$L, q, 6) ORDER BY nn_ctid)
      IS DISTINCT FROM
      ARRAY(SELECT ctid FROM %1$I WHERE p <-> q <= 6 ORDER BY ctid))
  FROM fx_q
  UNION ALL
  SELECT 'kd_box', count(*), count(*) FILTER (WHERE
      ARRAY(SELECT nn_ctid FROM kd_box(%1$L, box(q, point(q[0] + 9, q[1] + 9))) ORDER BY nn_ctid)
      IS DISTINCT FROM
      ARRAY(SELECT ctid FROM %1$I WHERE p <@ box(q, point(q[0] + 9, q[1] + 9)) ORDER BY ctid))
  FROM fx_q
  UNION ALL
  SELECT 'kd_all_knn', count(*), count(*) FILTER (WHERE
      ARRAY(SELECT (a.nn_ctid, a.distance)::text FROM allknn a
            WHERE a.query_ctid = s.ctid ORDER BY a.rank)
      IS DISTINCT FROM
      ARRAY(SELECT (o.ctid, o.p <-> s.p)::text FROM %1$I o
            WHERE o.p IS NOT NULL AND o.ctid <> s.ctid ORDER BY o.p <-> s.p, o.ctid LIMIT 3))
  FROM (SELECT ctid, p FROM %1$I
        WHERE p IS NOT NULL AND id %% (SELECT greatest(100, count(*) / 30) FROM %1$I) = 1) s$q$, tbl);
END $f$;
