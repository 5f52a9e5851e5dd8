-- The index as a forest of trees: a build larger than maintenance_work_mem
-- (a small setting on a small table reaches the same code as 100M points
-- at the default), inserts that turn pending rows into trees and merge
-- them, VACUUM's merges, and scan counting.  Every answer is compared with
-- a sequential scan of the same table (di_run errors unless the plan is
-- the one asked for).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.25);

\getenv abs_srcdir PG_ABS_SRCDIR
\set di_run_file :abs_srcdir '/sql/include/di_run.sql'
\i :di_run_file

-- an ordered query's rows through index idx equal a sequential scan's; #
-- is where the sequential scan's sort adds ctid
CREATE FUNCTION fo_ordered_equal(idx text, q text) RETURNS boolean
LANGUAGE sql AS $$
  SELECT di_run('index', idx, replace(q, '#', ''))
         = di_run('seq', '', replace(q, '#', ', ctid'))
$$;

-- clusters and a uniform spread, an INCLUDE column, NULL and NaN rows
CREATE TABLE fo_pts (id int, tag int, p point) WITH (autovacuum_enabled = false);
INSERT INTO fo_pts SELECT i, i % 7,
  CASE WHEN i % 3 = 0 THEN point(random() * 1000, random() * 1000)
       ELSE point((i % 10) * 100 + random() * 5, (i % 13) * 70 + random() * 5) END
  FROM generate_series(1, 40000) i;
INSERT INTO fo_pts VALUES (-1, 0, NULL), (-2, 0, point('NaN', 1));
-- equal points across trees: ties come out in ctid order
INSERT INTO fo_pts SELECT 100000 + i, 1, point(500, 500) FROM generate_series(1, 50) i;

SET maintenance_work_mem = '1MB';
CREATE INDEX fo_kd ON fo_pts USING kdgpu (p) INCLUDE (tag);
RESET maintenance_work_mem;
SELECT trees > 4 AS several_trees, tree_rows, pending_rows, null_rows, outside_rows
  FROM kd_index_stats('fo_kd');
SELECT kd_index_check('fo_kd');

-- ordered queries
CREATE FUNCTION fo_compare() RETURNS TABLE (query text, equal boolean)
LANGUAGE sql AS $$
  SELECT q, fo_ordered_equal('fo_kd', q)
  FROM (VALUES
    ('SELECT id FROM fo_pts ORDER BY p <-> point(500, 500)# LIMIT 80'),
    ('SELECT id FROM fo_pts ORDER BY p <-> point(0, 0)# LIMIT 25'),
    ('SELECT id FROM fo_pts ORDER BY p <-> point(-300, 2000)# LIMIT 25'),
    ('SELECT id, tag FROM fo_pts ORDER BY p <-> point(333, 777)# LIMIT 300'),
    ('SELECT id FROM fo_pts WHERE p <@ box ''(120,300),(80,60)'' ORDER BY p <-> point(100, 100)# LIMIT 40'),
    ('SELECT id FROM fo_pts WHERE p <@ circle ''((650,420),30)'' ORDER BY p <-> point(650, 420)#'),
    ('SELECT id FROM fo_pts ORDER BY p <-> point(250, 250)# LIMIT 41000'),
    ('SELECT id FROM fo_pts ORDER BY p <-> point(500, 500), p <-> point(0, 990)# LIMIT 120'),
    ('SELECT id FROM fo_pts WHERE p <@ box ''(900,900),(300,300)'' ORDER BY p <-> point(0, 0)# LIMIT 60'),
    ('SELECT id FROM fo_pts ORDER BY p <-> point(''NaN'', 5)# LIMIT 30')
  ) v(q)
$$;
CREATE FUNCTION fo_counts() RETURNS TABLE (query text, equal boolean)
LANGUAGE sql AS $$
  SELECT q, di_run('bitmap', 'fo_kd', q) = di_run('seq', '', q)
  FROM (VALUES
    ('SELECT count(*) FROM fo_pts WHERE p <@ box ''(420,610),(180,20)'''),
    ('SELECT count(*) FROM fo_pts WHERE p <@ box ''(1000,1000),(0,0)'''),
    ('SELECT count(*) FROM fo_pts WHERE p <@ circle ''((505,505),9)''')
  ) v(q)
$$;
SELECT * FROM fo_compare();
SELECT * FROM fo_counts();

-- VACUUM leaves the build's trees, each over its own part of space, as
-- they are: merging two by size class would make a tree over two parts
-- (at 2 MB two of them fit in memory, the forest does not)
SELECT trees AS built_trees FROM kd_index_stats('fo_kd') \gset
SET maintenance_work_mem = '2MB';
VACUUM fo_pts;
RESET maintenance_work_mem;
SELECT trees = :built_trees AS build_trees_kept FROM kd_index_stats('fo_kd');

-- inserts: when the insert lanes hold KDAM_FLUSH_ROWS (1024) rows, the
-- pending rows become a tree, and trees of like size merge; answers stay
-- those of a sequential scan
INSERT INTO fo_pts SELECT 200000 + i, i % 7, point(random() * 1000, random() * 1000)
  FROM generate_series(1, 5000) i;
SELECT pending_rows < 1024 AS pending_bounded, tree_rows + pending_rows AS rows_with_points
  FROM kd_index_stats('fo_kd');
SELECT kd_index_check('fo_kd');
SELECT * FROM fo_compare();
SELECT * FROM fo_counts();

-- a scan in flight goes on reading the trees it started with while an
-- insert in the same transaction turns pending rows into a tree: its rows
-- are those of a sequential scan before the insert
SELECT di_run('seq', '', 'SELECT id FROM fo_pts ORDER BY p <-> point(10, 10), ctid LIMIT 60') AS expect \gset
CREATE FUNCTION fo_scan_across_flush() RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  c refcursor;
  r record;
  got text := '';
BEGIN
  SET LOCAL enable_seqscan = off;
  SET LOCAL enable_sort = off;
  OPEN c FOR SELECT id FROM fo_pts ORDER BY p <-> point(10, 10);
  FOR i IN 1..60 LOOP
    FETCH c INTO r;
    got := got || CASE WHEN i > 1 THEN ' ' ELSE '' END || '(' || r.id || ')';
    IF i = 30 THEN
      INSERT INTO fo_pts SELECT 300000 + j, 0, point(10 + j * 0.001, 10)
        FROM generate_series(1, 1500) j;
    END IF;
  END LOOP;
  CLOSE c;
  RETURN got = current_setting('fo.expect');
END $$;
SELECT set_config('fo.expect', :'expect', false) IS NOT NULL AS set;
SELECT fo_scan_across_flush();
SELECT kd_index_check('fo_kd');
SELECT * FROM fo_compare();

-- deletes, then VACUUM: dead rows leave the trees, the forest is merged
-- into one tree when it fits in maintenance_work_mem
DELETE FROM fo_pts WHERE id % 5 = 0 OR id BETWEEN 300100 AND 300900;
VACUUM fo_pts;
SELECT trees, dead_rows, pending_rows FROM kd_index_stats('fo_kd');
SELECT kd_index_check('fo_kd');
SELECT * FROM fo_compare();
SELECT * FROM fo_counts();

-- with a small maintenance_work_mem VACUUM merges only what fits
DELETE FROM fo_pts WHERE id % 7 = 1;
INSERT INTO fo_pts SELECT 400000 + i, 3, point(random() * 1000, random() * 1000)
  FROM generate_series(1, 700) i;
SET maintenance_work_mem = '1MB';
VACUUM fo_pts;
RESET maintenance_work_mem;
SELECT trees > 1 AS several_trees, pending_rows FROM kd_index_stats('fo_kd');
SELECT kd_index_check('fo_kd');
SELECT * FROM fo_compare();

-- REINDEX at the small setting builds a forest again
SET maintenance_work_mem = '1MB';
REINDEX INDEX fo_kd;
RESET maintenance_work_mem;
SELECT trees > 1 AS several_trees, dead_rows, pending_rows FROM kd_index_stats('fo_kd');
SELECT kd_index_check('fo_kd');
SELECT * FROM fo_compare();

-- a parallel build: two workers and the leader scan the table and write
-- its points to files of their cells, the leader builds the forest from
-- every participant's files, and the NULL and NaN rows come back from
-- them to their chains
ALTER TABLE fo_pts SET (parallel_workers = 2);
SET max_parallel_maintenance_workers = 2;
SET maintenance_work_mem = '1MB';
REINDEX INDEX fo_kd;
RESET maintenance_work_mem;
SELECT trees > 2 AS several_trees, tree_rows = (SELECT count(*) FROM fo_pts
    WHERE p IS NOT NULL AND NOT p ~= point('NaN', 1)) AS all_points,
  pending_rows, null_rows, outside_rows
  FROM kd_index_stats('fo_kd');
SELECT kd_index_check('fo_kd');
SELECT * FROM fo_compare();
SELECT * FROM fo_counts();
-- the same in a CREATE INDEX CONCURRENTLY, over an expression
SET maintenance_work_mem = '1MB';
CREATE INDEX CONCURRENTLY fo_kd_shift ON fo_pts USING kdgpu ((p + point(1, 2)));
RESET maintenance_work_mem;
SELECT kd_index_check('fo_kd_shift');
SELECT di_run('index', 'fo_kd_shift', 'SELECT id FROM fo_pts ORDER BY (p + point(1, 2)) <-> point(400, 400) LIMIT 50')
     = di_run('seq', '', 'SELECT id FROM fo_pts ORDER BY (p + point(1, 2)) <-> point(400, 400), ctid LIMIT 50') AS shift_equal;
DROP INDEX fo_kd_shift;
RESET max_parallel_maintenance_workers;
ALTER TABLE fo_pts RESET (parallel_workers);

-- scans are counted in pg_stat_user_indexes like other indexes'
SELECT pg_stat_force_next_flush();
SELECT idx_scan AS before FROM pg_stat_user_indexes WHERE indexrelname = 'fo_kd' \gset
SET enable_seqscan = off;
SELECT count(*) FROM (SELECT id FROM fo_pts ORDER BY p <-> point(1, 1) LIMIT 5) s;
SELECT count(*) FROM fo_pts WHERE p <@ box '(10,10),(0,0)';
RESET enable_seqscan;
SELECT pg_stat_force_next_flush();
SELECT idx_scan - :before AS scans, idx_tup_read > 0 AS tuples_read
  FROM pg_stat_user_indexes WHERE indexrelname = 'fo_kd';

-- the curve of a forest build spreads the box of the rows read before the
-- sort; rows far outside it, on every side and at every magnitude, get
-- trees of their own: answers stay those of a sequential scan
CREATE TABLE fo_far (id int, p point) WITH (autovacuum_enabled = false);
INSERT INTO fo_far SELECT i, point(random() * 10, random() * 10)
  FROM generate_series(1, 12000) i;
INSERT INTO fo_far SELECT 20000 + i,
  point((random() - 0.5) * 10 ^ (i % 7 * 50 - 150), (random() - 0.5) * 10 ^ (i % 5 * 60 - 120))
  FROM generate_series(1, 3000) i;
INSERT INTO fo_far SELECT 30000 + i, point(random() * 2e6 - 1e6, random() * 2e6 - 1e6)
  FROM generate_series(1, 20000) i;
-- first rows spread wider than the largest finite float8 (their box's
-- width overflows), then rows near the middle
CREATE TABLE fo_huge (id int, p point) WITH (autovacuum_enabled = false);
INSERT INTO fo_huge SELECT i, point(sign(random() - 0.5) * random() * 0.95e308,
                                     sign(random() - 0.5) * random() * 0.95e308)
  FROM generate_series(1, 15000) i;
INSERT INTO fo_huge SELECT 20000 + i, point(random(), random()) FROM generate_series(1, 5000) i;
SET maintenance_work_mem = '1MB';
CREATE INDEX fo_huge_kd ON fo_huge USING kdgpu (p);
RESET maintenance_work_mem;
SELECT trees > 1 AS several_trees, tree_rows FROM kd_index_stats('fo_huge_kd');
SELECT kd_index_check('fo_huge_kd');
SELECT q, fo_ordered_equal('fo_huge_kd', q) AS equal
  FROM (VALUES
    ('SELECT id FROM fo_huge ORDER BY p <-> point(0.5, 0.5)# LIMIT 30'),
    ('SELECT id FROM fo_huge ORDER BY p <-> point(-1e307, 2e307)# LIMIT 30')
  ) v(q);
SELECT di_run('bitmap', 'fo_huge_kd', q) = di_run('seq', '', q) AS equal
  FROM (VALUES ('SELECT count(*) FROM fo_huge WHERE p <@ box ''(1,1),(0,0)''')) v(q);
DROP TABLE fo_huge;
SET maintenance_work_mem = '1MB';
CREATE INDEX fo_far_kd ON fo_far USING kdgpu (p);
RESET maintenance_work_mem;
SELECT trees > 4 AS several_trees, tree_rows FROM kd_index_stats('fo_far_kd');
SELECT kd_index_check('fo_far_kd');
SELECT q, fo_ordered_equal('fo_far_kd', q) AS equal
  FROM (VALUES
    ('SELECT id FROM fo_far ORDER BY p <-> point(5, 5)# LIMIT 50'),
    ('SELECT id FROM fo_far ORDER BY p <-> point(-999000, 999000)# LIMIT 50'),
    ('SELECT id FROM fo_far ORDER BY p <-> point(0, 0)# LIMIT 3000'),
    ('SELECT id FROM fo_far ORDER BY p <-> point(1e200, -1e100)# LIMIT 20'),
    ('SELECT id FROM fo_far WHERE p <@ box ''(20,20),(-20,-20)'' ORDER BY p <-> point(9, 1)#')
  ) v(q);
SELECT q, di_run('bitmap', 'fo_far_kd', q) = di_run('seq', '', q) AS equal
  FROM (VALUES
    ('SELECT count(*) FROM fo_far WHERE p <@ box ''(1e6,1e6),(-1e6,-1e6)'''),
    ('SELECT count(*) FROM fo_far WHERE p <@ box ''(1e300,1e300),(1e3,-1e300)'''),
    ('SELECT count(*) FROM fo_far WHERE p <@ circle ''((500000,-500000),20000)''')
  ) v(q);
DROP TABLE fo_far;

-- a cell of the curve with more points than one tree takes (30000 in a
-- unit square, at 1 MB about 13000 a tree) is built from a sort of its
-- points, cut into trees along the curve; the other cells are built a
-- group at a time; serially and in parallel
CREATE TABLE fo_dense (id int, p point) WITH (autovacuum_enabled = false);
INSERT INTO fo_dense SELECT i, point(random() * 1000, random() * 1000)
  FROM generate_series(1, 20000) i;
INSERT INTO fo_dense SELECT 100000 + i, point(10 + random(), 10 + random())
  FROM generate_series(1, 30000) i;
CREATE FUNCTION fo_dense_compare() RETURNS TABLE (query text, equal boolean)
LANGUAGE sql AS $$
  SELECT q, fo_ordered_equal('fo_dense_kd', q)
  FROM (VALUES
    ('SELECT id FROM fo_dense ORDER BY p <-> point(10.5, 10.5)# LIMIT 100'),
    ('SELECT id FROM fo_dense ORDER BY p <-> point(12, 9)# LIMIT 40'),
    ('SELECT id FROM fo_dense ORDER BY p <-> point(700, 300)# LIMIT 40')
  ) v(q)
  UNION ALL
  SELECT q, di_run('bitmap', 'fo_dense_kd', q) = di_run('seq', '', q)
  FROM (VALUES
    ('SELECT count(*) FROM fo_dense WHERE p <@ box ''(10.5,10.5),(10,10)'''),
    ('SELECT count(*) FROM fo_dense WHERE p <@ box ''(600,600),(5,5)''')
  ) v(q)
$$;
SET maintenance_work_mem = '1MB';
CREATE INDEX fo_dense_kd ON fo_dense USING kdgpu (p);
SELECT trees > 4 AS several_trees, tree_rows FROM kd_index_stats('fo_dense_kd');
SELECT kd_index_check('fo_dense_kd');
SELECT * FROM fo_dense_compare();
ALTER TABLE fo_dense SET (parallel_workers = 2);
SET max_parallel_maintenance_workers = 2;
REINDEX INDEX fo_dense_kd;
RESET max_parallel_maintenance_workers;
RESET maintenance_work_mem;
SELECT trees > 4 AS several_trees, tree_rows FROM kd_index_stats('fo_dense_kd');
SELECT kd_index_check('fo_dense_kd');
SELECT * FROM fo_dense_compare();
DROP TABLE fo_dense;
DROP FUNCTION fo_dense_compare;

-- float8[] points of 3 and 8 dimensions larger than maintenance_work_mem:
-- each coordinate takes its share of a cell's bits; serially and in
-- parallel, answers stay those of a sequential scan
CREATE TABLE fo_vec (id int, v float8[]) WITH (autovacuum_enabled = false);
INSERT INTO fo_vec SELECT i, ARRAY[random() * 100, random() * 100, round(random() * 50)]
  FROM generate_series(1, 30000) i;
CREATE TABLE fo_vec8 (id int, v float8[]) WITH (autovacuum_enabled = false);
INSERT INTO fo_vec8 SELECT i, ARRAY(SELECT round((random() * 10)::numeric, 1)::float8 + i * 0
                                    FROM generate_series(1, 8))
  FROM generate_series(1, 20000) i;
CREATE FUNCTION fo_vec_compare() RETURNS TABLE (query text, equal boolean)
LANGUAGE sql AS $$
  SELECT q, fo_ordered_equal(CASE WHEN q LIKE '%fo_vec8%' THEN 'fo_vec8_kd' ELSE 'fo_vec_kd' END, q)
  FROM (VALUES
    ('SELECT id FROM fo_vec ORDER BY v <-> ARRAY[50, 50, 25]::float8[]# LIMIT 60'),
    ('SELECT id FROM fo_vec ORDER BY v <-> ARRAY[-10, 120, 0]::float8[]# LIMIT 30'),
    ('SELECT id FROM fo_vec8 ORDER BY v <-> ARRAY[5, 5, 5, 5, 5, 5, 5, 5]::float8[]# LIMIT 60'),
    ('SELECT id FROM fo_vec8 ORDER BY v <-> ARRAY[0, 10, 0, 10, 0, 10, 0, 10]::float8[]# LIMIT 30')
  ) v(q)
  UNION ALL
  SELECT q, di_run('bitmap', CASE WHEN q LIKE '%fo_vec8%' THEN 'fo_vec8_kd' ELSE 'fo_vec_kd' END, q)
          = di_run('seq', '', q)
  FROM (VALUES
    ('SELECT count(*) FROM fo_vec WHERE v <@ kd_ball(ARRAY[30, 70, 10], 9)'),
    ('SELECT count(*) FROM fo_vec WHERE v <@ kd_rect(ARRAY[10, 10, 0], ARRAY[40, 20, 20])'),
    ('SELECT count(*) FROM fo_vec8 WHERE v <@ kd_ball(ARRAY[5, 5, 5, 5, 5, 5, 5, 5], 7)')
  ) v(q)
$$;
SET maintenance_work_mem = '1MB';
CREATE INDEX fo_vec_kd ON fo_vec USING kdgpu (v);
CREATE INDEX fo_vec8_kd ON fo_vec8 USING kdgpu (v);
SELECT trees > 2 AS several_trees, tree_rows FROM kd_index_stats('fo_vec_kd');
SELECT trees > 2 AS several_trees, tree_rows FROM kd_index_stats('fo_vec8_kd');
SELECT kd_index_check('fo_vec_kd'), kd_index_check('fo_vec8_kd');
SELECT * FROM fo_vec_compare();
ALTER TABLE fo_vec SET (parallel_workers = 2);
ALTER TABLE fo_vec8 SET (parallel_workers = 2);
SET max_parallel_maintenance_workers = 2;
REINDEX INDEX fo_vec_kd;
REINDEX INDEX fo_vec8_kd;
RESET max_parallel_maintenance_workers;
RESET maintenance_work_mem;
SELECT trees > 2 AS several_trees, tree_rows FROM kd_index_stats('fo_vec_kd');
SELECT trees > 2 AS several_trees, tree_rows FROM kd_index_stats('fo_vec8_kd');
SELECT kd_index_check('fo_vec_kd'), kd_index_check('fo_vec8_kd');
SELECT * FROM fo_vec_compare();
DROP TABLE fo_vec, fo_vec8;
DROP FUNCTION fo_vec_compare;

DROP TABLE fo_pts;
DROP FUNCTION fo_compare, fo_counts, fo_scan_across_flush, fo_ordered_equal, di_run;
