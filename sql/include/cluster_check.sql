-- Shared by the clustering suites (29_cluster, 43_postgis_cluster): an
-- oracle of DBSCAN labels by brute force in SQL.
--
-- cl_check(pts, labels, dist, eps, minpoints): pts has (id, part, g), g
-- the point (NULL or empty: no point, as dist then gives NULL), labels has
-- (id, c), the labels to check; dist is the distance of rows a and b as an
-- SQL expression (e.g. 'a.g <-> b.g').  Every part is clustered on its
-- own, and rows are in id order within it.  One row per rule, with the
-- number of rows (or clusters) breaking it:
--   noise       a row is NULL exactly when it has no point, or is not a
--               core row (fewer than minpoints rows within eps, itself
--               included) and has no core row within eps
--   core sets   two core rows share a label exactly when a chain of core
--               rows, each within eps of the next, joins them (the
--               components of a recursive query)
--   border      a border row has the label of its nearest core row within
--               eps, ties to the lower id
--   numbering   a part's labels are 0, 1, ... in the order of their rows'
--               lowest id
CREATE OR REPLACE FUNCTION cl_check(pts text, labels text, dist text, eps float8,
                         minpoints int)
RETURNS TABLE (rule text, breaking bigint)
LANGUAGE plpgsql AS $f$
BEGIN
  EXECUTE format($q$
    CREATE TEMP TABLE cl_pairs ON COMMIT DROP AS
      SELECT a.id AS a, b.id AS b, a.part, %1$s AS d
      FROM %2$I a JOIN %2$I b ON a.part IS NOT DISTINCT FROM b.part
      WHERE %1$s <= %3$s$q$, dist, pts, eps);
  CREATE TEMP TABLE cl_core ON COMMIT DROP AS
    SELECT a AS id, part FROM cl_pairs GROUP BY a, part HAVING count(*) >= minpoints;
  CREATE TEMP TABLE cl_comp ON COMMIT DROP AS
    WITH RECURSIVE edge AS (
      SELECT p.a, p.b FROM cl_pairs p
      JOIN cl_core x ON x.id = p.a JOIN cl_core y ON y.id = p.b),
    reach (id, r) AS (
      SELECT id, id FROM cl_core
      UNION
      SELECT reach.id, edge.b FROM reach JOIN edge ON edge.a = reach.r)
    SELECT id, min(r) AS comp FROM reach GROUP BY id;
  EXECUTE format($q$
    CREATE TEMP TABLE cl_lab ON COMMIT DROP AS
      SELECT p.id, p.part, l.c FROM %I p JOIN %I l USING (id)$q$, pts, labels);

  RETURN QUERY
  SELECT 'noise', count(*) FROM cl_lab l
  WHERE (l.c IS NULL) <> (l.id NOT IN (SELECT id FROM cl_core) AND
                          l.id NOT IN (SELECT p.a FROM cl_pairs p JOIN cl_core x ON x.id = p.b))
  UNION ALL
  SELECT 'core sets', (SELECT count(DISTINCT (l.part, l.c)) FROM cl_lab l JOIN cl_comp USING (id)) +
                      (SELECT count(DISTINCT comp) FROM cl_comp) -
                      2 * (SELECT count(DISTINCT (l.part, l.c, comp)) FROM cl_lab l JOIN cl_comp USING (id))
  UNION ALL
  SELECT 'border', count(*) FROM cl_lab l
  WHERE l.id NOT IN (SELECT id FROM cl_core) AND l.c IS NOT NULL
    AND l.c IS DISTINCT FROM (
      SELECT n.c FROM cl_pairs p JOIN cl_core x ON x.id = p.b JOIN cl_lab n ON n.id = p.b
      WHERE p.a = l.id ORDER BY p.d, p.b LIMIT 1)
  UNION ALL
  SELECT 'numbering', count(*) FROM (
    SELECT l.c, row_number() OVER (PARTITION BY l.part ORDER BY min(l.id)) - 1 AS want
    FROM cl_lab l WHERE l.c IS NOT NULL GROUP BY l.part, l.c) s
  WHERE s.c <> s.want;
  DROP TABLE cl_pairs, cl_core, cl_comp, cl_lab;
END $f$;
