-- Partitioned tables: the _parts and key forms' results on a small table
-- whose answers can be read off (duplicates in two partitions, an empty
-- partition), and the plan of ORDER BY p <-> q LIMIT k over partitions
-- with kdgpu indexes: a Merge Append of the partitions' ordered index
-- scans.  test/pgtap/partitions.sql compares every form with brute force.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;

CREATE TABLE grid (id int, p point) PARTITION BY RANGE (id);
CREATE TABLE grid_lo PARTITION OF grid FOR VALUES FROM (0) TO (10);
CREATE TABLE grid_hi PARTITION OF grid FOR VALUES FROM (10) TO (20);
CREATE TABLE grid_none PARTITION OF grid FOR VALUES FROM (20) TO (30);
-- ids 11 and 3, 14 and 0 share a point across the partitions
INSERT INTO grid VALUES (3, point(1, 1)), (0, point(2, 2)), (5, point(4, 0)), (7, NULL),
  (11, point(1, 1)), (14, point(2, 2)), (12, point(0, 4)), (19, point(5, 5));

-- by partition and ctid, ties by (tableoid, ctid)
SELECT * FROM kd_knn_parts('grid', point(1, 1), 4);
-- by key, ties by key
SELECT * FROM kd_knn('grid', point(2, 2), 3, key_col => 'id');
SELECT * FROM kd_all_knn('grid', 1, 'id') ORDER BY query_key;
SELECT * FROM kd_all_knn_arrays_parts('grid', 2) ORDER BY query_rel::oid, query_ctid;
SELECT * FROM kd_range('grid', point(1.5, 1.5), 1, 'id');
SELECT * FROM kd_range_join_parts('grid', ARRAY[point(0, 0), point(5, 5)], ARRAY[1.5, 0]);
SELECT * FROM kd_box('grid', point(0, 0), point(2, 4), 'id');
SELECT * FROM kd_knn_join('grid', ARRAY[point(4, 4)], 2, 'id');

-- ORDER BY <-> LIMIT through the partitioned table: each partition's kdgpu
-- index scan, merged
CREATE INDEX ON grid_lo USING kdgpu (p);
CREATE INDEX ON grid_hi USING kdgpu (p);
CREATE INDEX ON grid_none USING kdgpu (p);
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM grid ORDER BY p <-> point(1, 1) LIMIT 3;
SELECT id, p <-> point(1, 1) AS d FROM grid ORDER BY p <-> point(1, 1), id LIMIT 3;
RESET enable_seqscan;

DROP TABLE grid;
