-- rights, row-level security, and visibility: the functions see exactly
-- the rows the calling query may see
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
DROP ROLE IF EXISTS regress_kd_reader;
RESET client_min_messages;
CREATE ROLE regress_kd_reader;

CREATE TABLE pts (id int, p point, owner text);
INSERT INTO pts SELECT i, point(i % 50, i / 50), CASE WHEN i % 3 = 0 THEN 'regress_kd_reader' ELSE 'other' END
  FROM generate_series(1, 2500) i;

-- no SELECT right: 42501
SET ROLE regress_kd_reader;
SELECT * FROM kd_knn('pts', point(0, 0), 3);
SELECT * FROM kd_all_knn('pts', 3);
RESET ROLE;

-- a column right on the point column is enough
GRANT SELECT (p) ON pts TO regress_kd_reader;
SET ROLE regress_kd_reader;
SELECT count(*) FROM kd_knn('pts', point(0, 0), 3);
SELECT * FROM kd_knn('pts', 'owner', point(0, 0), 3);
RESET ROLE;
REVOKE SELECT (p) ON pts FROM regress_kd_reader;

-- row-level security: only the rows the policy lets the caller see
GRANT SELECT ON pts TO regress_kd_reader;
ALTER TABLE pts ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON pts FOR SELECT USING (owner = current_user);
SET ROLE regress_kd_reader;
SELECT count(*) AS visible FROM pts;
SELECT (SELECT array_agg((nn_ctid, distance, rank) ORDER BY rank) FROM kd_knn('pts', point(10, 10), 20))
       = (SELECT array_agg((ctid, d, r) ORDER BY r) FROM (
            SELECT ctid, p <-> point(10, 10) AS d,
                   (row_number() OVER (ORDER BY p <-> point(10, 10), ctid))::int AS r
              FROM pts ORDER BY 2, 1 LIMIT 20) s) AS knn_under_rls;
SELECT count(*) AS pairs, count(*) FILTER (WHERE nn_ctid NOT IN (SELECT ctid FROM pts)) AS hidden
  FROM kd_all_knn('pts', 4);
SELECT count(*) FILTER (WHERE nn_ctid NOT IN (SELECT ctid FROM pts)) AS hidden
  FROM kd_range('pts', point(25, 25), 10);
SELECT count(*) FILTER (WHERE nn_ctid NOT IN (SELECT ctid FROM pts)) AS hidden
  FROM kd_box('pts', point(0, 0), point(20, 20));
RESET ROLE;
-- the owner is not subject to the policy
SELECT count(*) AS pairs FROM kd_all_knn('pts', 4);
ALTER TABLE pts DISABLE ROW LEVEL SECURITY;

-- own uncommitted changes are seen, rolled-back ones are not, deleted and
-- updated rows are seen in their current version only
BEGIN;
INSERT INTO pts VALUES (0, point(-5, -5), 'other');
SELECT count(*) FROM kd_knn('pts', point(-5, -5), 1) k JOIN pts ON pts.ctid = k.nn_ctid WHERE pts.id = 0;
ROLLBACK;
SELECT count(*) FROM kd_knn('pts', point(-5, -5), 1) k JOIN pts ON pts.ctid = k.nn_ctid WHERE pts.id = 0;
DELETE FROM pts WHERE id <= 100;
UPDATE pts SET p = point(p[0] + 0.25, p[1]) WHERE id % 7 = 0;
SELECT count(*) AS stale FROM kd_all_knn('pts', 5) a
  LEFT JOIN pts q ON q.ctid = a.query_ctid
  LEFT JOIN pts n ON n.ctid = a.nn_ctid
 WHERE q.id IS NULL OR n.id IS NULL OR a.distance <> q.p <-> n.p;
SELECT (SELECT count(*) FROM kd_all_knn_arrays('pts', 5)) = (SELECT count(*) FROM pts) AS all_live_rows;

-- a hostile search_path does not change what the functions read
CREATE SCHEMA evil;
CREATE TABLE evil.pts (p point);
SET search_path = evil, public;
SELECT count(*) FROM public.kd_knn('public.pts', point(0, 0), 5);
RESET search_path;

DROP SCHEMA evil CASCADE;
DROP TABLE pts;
DROP ROLE regress_kd_reader;
