-- kd_knn of one query point runs an ordered scan of a kdgpu index when the
-- index holds only finite points of one dimension (index_knn.c), and reads
-- the table otherwise; either way its rows equal a brute-force scan's, ties
-- by ctid, and kd_status().last_run tells which ran.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;

-- a grid with 20 rows at each place (ties at every distance), a NULL row,
-- and a float8[] column beside the point column
CREATE TABLE ik (id int, p point, v float8[]);
INSERT INTO ik SELECT i, point((i % 30)::float8, ((i / 30) % 20)::float8),
    ARRAY[(i % 30)::float8, ((i / 30) % 20)::float8, (i % 7)::float8]
  FROM generate_series(1, 12000) i;
INSERT INTO ik VALUES (0, NULL, NULL);
CREATE INDEX ik_p ON ik USING kdgpu (p);
CREATE INDEX ik_v ON ik USING kdgpu (v);
CREATE TABLE ikq (q point, qv float8[]);
INSERT INTO ikq VALUES
  (point(10, 10), ARRAY[10, 10, 3]), (point(10.5, 10.5), ARRAY[10.5, 10.5, 3.5]),
  (point(-3, 40), ARRAY[-3, 40, 0]), (point(29, 19), ARRAY[29, 19, 6]),
  (point(7.25, 2), ARRAY[7.25, 2, 1]);

-- queries whose rows differ from brute force, for each k
SELECT k, count(*) FILTER (WHERE
    ARRAY(SELECT (nn_ctid, distance, rank)::text FROM kd_knn('ik', 'p', q, k) ORDER BY rank)
    IS DISTINCT FROM
    ARRAY(SELECT (ctid, d, row_number() OVER (ORDER BY d, ctid))::text
            FROM (SELECT ctid, p <-> q AS d FROM ik WHERE p IS NOT NULL
                   ORDER BY p <-> q, ctid LIMIT k) s ORDER BY d, ctid)) AS point_differing,
  count(*) FILTER (WHERE
    ARRAY(SELECT (nn_ctid, distance, rank)::text FROM kd_knn('ik', 'v', qv, k) ORDER BY rank)
    IS DISTINCT FROM
    ARRAY(SELECT (ctid, d, row_number() OVER (ORDER BY d, ctid))::text
            FROM (SELECT ctid, v <-> qv AS d FROM ik WHERE v IS NOT NULL
                   ORDER BY v <-> qv, ctid LIMIT k) s ORDER BY d, ctid)) AS array_differing
FROM ikq, (VALUES (1), (5), (19), (20), (21), (60), (500)) ks(k)
GROUP BY k ORDER BY k;

-- which path ran: the index for a query whose k-th neighbour has few ties
SELECT count(*) FROM kd_knn('ik', 'p', point(10, 10), 5);
SELECT last_run FROM kd_status();
SELECT count(*) FROM kd_knn('ik', 'v', ARRAY[10, 10, 3]::float8[], 5);
SELECT last_run FROM kd_status();
-- 80 rows tie at the nearest distance, more than the scan fetches past k:
-- the table is read
SELECT count(*) FROM kd_knn('ik', 'p', point(10.5, 10.5), 1);
SELECT last_run !~ 'ordered scan' AS read_the_table FROM kd_status();
-- a key column that may hold NULLs or repeats: the table is read, so that
-- they are refused
SELECT count(*) FROM kd_knn('ik', 'p', point(10, 10), 5, 'id');
SELECT last_run !~ 'ordered scan' AS read_the_table FROM kd_status();
-- a primary key: the index, ties ranked by key (the keys made to run
-- against the ctid order first)
UPDATE ik SET id = -id;
ALTER TABLE ik ADD PRIMARY KEY (id);
SELECT k, count(*) FILTER (WHERE
    ARRAY(SELECT (nn_key, distance, rank)::text FROM kd_knn('ik', 'p', q, k, 'id') ORDER BY rank)
    IS DISTINCT FROM
    ARRAY(SELECT (id, d, row_number() OVER (ORDER BY d, id))::text
            FROM (SELECT id, p <-> q AS d FROM ik WHERE p IS NOT NULL
                   ORDER BY p <-> q, id LIMIT k) s ORDER BY d, id)) AS key_differing
FROM ikq, (VALUES (1), (5), (20), (21), (500)) ks(k)
GROUP BY k ORDER BY k;
SELECT count(*) FROM kd_knn('ik', 'p', point(10, 10), 5, 'id');
SELECT last_run FROM kd_status();
-- a row the function refuses, in the index's outside pages: the table is
-- read, and the row is named as before
INSERT INTO ik VALUES (99999, point('NaN', 0), NULL);
SELECT count(*) FROM kd_knn('ik', 'p', point(10, 10), 5);
DELETE FROM ik WHERE id = 99999;
-- a query point of another dimension: the table is read, with its error
SELECT count(*) FROM kd_knn('ik', 'v', ARRAY[1, 2]::float8[], 5);

DROP TABLE ik, ikq;
