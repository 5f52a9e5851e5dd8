-- kdgpu's own range operators, p <@ kd_ball(center, radius) and
-- p <@ kd_rect(low, high): index scans, bitmap scans and ordered scans with
-- them as quals give exactly the rows a sequential scan's operator gives,
-- including points exactly on the boundary; bad regions are errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.25);

-- kd_ball() and kd_rect() make the rows that ROW(...)::kd_ball and
-- ROW(...)::kd_rect make, NULL arguments included
SELECT kd_ball(point(1, 2), 3) IS NOT DISTINCT FROM ROW(ARRAY[1, 2]::float8[], 3)::kd_ball AS ball_point,
       kd_ball(NULL::point, 1) IS NOT DISTINCT FROM ROW(ARRAY[NULL, NULL]::float8[], 1)::kd_ball AS ball_null_point,
       kd_ball(point(1, 2), NULL) IS NOT DISTINCT FROM ROW(ARRAY[1, 2]::float8[], NULL)::kd_ball AS ball_null_radius,
       kd_ball(ARRAY[1, 2, 3]::float8[], 0.5) IS NOT DISTINCT FROM ROW(ARRAY[1, 2, 3]::float8[], 0.5)::kd_ball AS ball_array,
       kd_ball(NULL::float8[], 2) IS NOT DISTINCT FROM ROW(NULL::float8[], 2)::kd_ball AS ball_null_array,
       kd_rect(ARRAY[0, 0]::float8[], ARRAY[1, 1]::float8[]) IS NOT DISTINCT FROM ROW(ARRAY[0, 0]::float8[], ARRAY[1, 1]::float8[])::kd_rect AS rect,
       kd_rect(NULL, ARRAY[1]::float8[]) IS NOT DISTINCT FROM ROW(NULL::float8[], ARRAY[1]::float8[])::kd_rect AS rect_null,
       kd_ball(point(1, 2), 3)::text AS ball_text, kd_ball(NULL::point, 1)::text AS ball_null_text;

CREATE TABLE rg_pts (id int, p point, a float8[]) WITH (autovacuum_enabled = false);
INSERT INTO rg_pts SELECT i, point(random() * 100, random() * 100),
    ARRAY[random() * 100, random() * 100, random() * 10]
  FROM generate_series(1, 3000) i;
-- integer grid: many points exactly at distance 5 (3-4-5) or on a rect side
INSERT INTO rg_pts SELECT 3000 + x * 21 + y + 1, point(x, y), ARRAY[x, y, (x + y) % 3]::float8[]
  FROM generate_series(0, 20) x, generate_series(0, 20) y;
INSERT INTO rg_pts VALUES (0, NULL, NULL), (-1, point(1, 1), '{}');
CREATE INDEX rg_p ON rg_pts USING kdgpu (p);
CREATE INDEX rg_a ON rg_pts USING kdgpu (a);
ANALYZE rg_pts;

CREATE TABLE rg_q (qid int, c point, r float8, lo float8[], hi float8[]);
INSERT INTO rg_q SELECT i, point(random() * 110 - 5, random() * 110 - 5), random() * 15,
    ARRAY[random() * 80, random() * 80, random() * 5], NULL
  FROM generate_series(1, 40) i;
UPDATE rg_q SET hi = ARRAY[lo[1] + random() * 30, lo[2] + random() * 30, lo[3] + random() * 5];
INSERT INTO rg_q VALUES (41, point(10, 10), 5, '{3,4,0}', '{10,10,2}'),
  (42, point(0, 0), 0, '{0,0,0}', '{0,0,0}'), (43, point(10, 10), 0, '{20,20,2}', '{20,20,2}'),
  (44, point(-50, -50), 1, '{-9,-9,-9}', '{-1,-1,-1}');

-- plans
EXPLAIN (COSTS OFF) SELECT id FROM rg_pts WHERE p <@ kd_ball(point(10, 10), 5);
EXPLAIN (COSTS OFF) SELECT id FROM rg_pts WHERE a <@ kd_ball(ARRAY[10, 10, 1], 5);
EXPLAIN (COSTS OFF) SELECT id FROM rg_pts WHERE a <@ kd_rect(ARRAY[1, 1, 0], ARRAY[2, 2, 1]);

-- Every query's rows under the current plan settings, as sorted id arrays.
CREATE FUNCTION rg_answers() RETURNS TABLE (qid int, ball_p int[], ball_a int[], rect_a int[])
LANGUAGE sql AS $$
  SELECT qid,
    ARRAY(SELECT id FROM rg_pts WHERE p <@ kd_ball(c, r) ORDER BY id),
    ARRAY(SELECT id FROM rg_pts WHERE a <@ kd_ball(ARRAY[c[0], c[1], 1], r) ORDER BY id),
    ARRAY(SELECT id FROM rg_pts WHERE a <@ kd_rect(lo, hi) ORDER BY id)
  FROM rg_q
$$;
-- The oracle: the same regions written with <-> and comparisons, seq scan.
CREATE FUNCTION rg_oracle() RETURNS TABLE (qid int, ball_p int[], ball_a int[], rect_a int[])
LANGUAGE sql AS $$
  SELECT qid,
    ARRAY(SELECT id FROM rg_pts WHERE p <-> c <= r ORDER BY id),
    ARRAY(SELECT id FROM rg_pts WHERE cardinality(a) = 3 AND a <-> ARRAY[c[0], c[1], 1] <= r ORDER BY id),
    ARRAY(SELECT id FROM rg_pts WHERE cardinality(a) = 3 AND a[1] BETWEEN lo[1] AND hi[1]
            AND a[2] BETWEEN lo[2] AND hi[2] AND a[3] BETWEEN lo[3] AND hi[3] ORDER BY id)
  FROM rg_q
$$;
CREATE TABLE rg_expected AS SELECT * FROM rg_oracle();
-- the boundary cases hold points exactly on the ball and rect boundaries
SELECT qid, cardinality(ball_p) AS ball_p, cardinality(ball_a) AS ball_a,
       cardinality(rect_a) AS rect_a
  FROM rg_expected WHERE qid > 40 ORDER BY qid;
SELECT count(*) > 30 AS most_nonempty FROM rg_expected WHERE cardinality(ball_p) > 0;

-- index scans
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*) AS queries, count(*) FILTER (WHERE e IS DISTINCT FROM g) AS differing
  FROM rg_expected e JOIN rg_answers() g USING (qid);
-- bitmap scans
SET enable_indexscan = off; SET enable_bitmapscan = on;
SELECT count(*) AS queries, count(*) FILTER (WHERE e IS DISTINCT FROM g) AS differing
  FROM rg_expected e JOIN rg_answers() g USING (qid);
-- sequential scans of the operators themselves
RESET enable_indexscan; SET enable_bitmapscan = off; SET enable_seqscan = on;
SET enable_indexscan = off;
SELECT count(*) AS queries, count(*) FILTER (WHERE e IS DISTINCT FROM g) AS differing
  FROM rg_expected e JOIN rg_answers() g USING (qid);
RESET ALL;

-- ordered scans with a region qual: the nearest rows inside the region
SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT id FROM rg_pts WHERE p <@ kd_ball(point(10, 10), 5)
  ORDER BY p <-> point(10, 10) LIMIT 3;
SELECT count(*) AS queries,
  count(*) FILTER (WHERE ARRAY(SELECT ctid FROM rg_pts WHERE p <@ kd_ball(c, r + 5)
                               ORDER BY p <-> c LIMIT 7)
                   IS DISTINCT FROM
                   ARRAY(SELECT ctid FROM (SELECT ctid, p <-> c d FROM rg_pts
                                           WHERE p <-> c <= r + 5 OFFSET 0) s
                         ORDER BY d, ctid LIMIT 7)) AS differing
  FROM rg_q;
RESET ALL;

-- after inserts (pending area) and deletes
INSERT INTO rg_pts SELECT 10000 + i, point(10 + i % 4, 10 - i % 3), ARRAY[10 + i % 4, 10 - i % 3, 1]::float8[]
  FROM generate_series(1, 50) i;
DELETE FROM rg_pts WHERE id % 5 = 0;
DROP TABLE rg_expected;
CREATE TABLE rg_expected AS SELECT * FROM rg_oracle();
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*) AS queries, count(*) FILTER (WHERE e IS DISTINCT FROM g) AS differing
  FROM rg_expected e JOIN rg_answers() g USING (qid);
RESET ALL;
VACUUM rg_pts;
SET enable_seqscan = off; SET enable_indexscan = off;
SELECT count(*) AS queries, count(*) FILTER (WHERE e IS DISTINCT FROM g) AS differing
  FROM rg_expected e JOIN rg_answers() g USING (qid);
RESET ALL;

-- bad regions: errors from an index scan and from a sequential scan
SET enable_seqscan = off;
SELECT count(*) FROM rg_pts WHERE a <@ kd_ball(ARRAY[1, 2], 3);
SELECT count(*) FROM rg_pts WHERE a <@ kd_ball(ARRAY[1, 2, 3], -1);
SELECT count(*) FROM rg_pts WHERE a <@ kd_ball(ARRAY[1, 2, 3], 'NaN');
SELECT count(*) FROM rg_pts WHERE a <@ kd_rect(ARRAY[1, 2, 3], ARRAY[0, 5, 5]);
SELECT count(*) FROM rg_pts WHERE a <@ kd_rect(ARRAY[1, 2, 3], ARRAY[5, 5]);
SELECT count(*) FROM rg_pts WHERE a <@ kd_rect(ARRAY[1, 'Infinity', 3]::float8[], ARRAY[5, 5, 5]);
RESET ALL;
SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM rg_pts WHERE a <@ kd_ball(ARRAY[1, 2], 3);
SELECT count(*) FROM rg_pts WHERE a <@ kd_ball(ARRAY[1, 2, 3], -1);
SELECT count(*) FROM rg_pts WHERE a <@ kd_rect(ARRAY[1, 2, 3], ARRAY[0, 5, 5]);
RESET ALL;
-- NULL fields match nothing
SELECT count(*) FROM rg_pts WHERE a <@ ROW(NULL, 3)::kd_ball;
SELECT count(*) FROM rg_pts WHERE p <@ kd_ball(point(1, 1), NULL);
SET enable_seqscan = off;
SELECT count(*) FROM rg_pts WHERE a <@ ROW(NULL, 3)::kd_ball;
SELECT count(*) FROM rg_pts WHERE p <@ kd_ball(point(1, 1), NULL);
RESET ALL;
SELECT opcname, amvalidate(c.oid) FROM pg_opclass c JOIN pg_am a ON a.oid = c.opcmethod
  WHERE a.amname = 'kdgpu' ORDER BY opcname;

DROP TABLE rg_pts, rg_q, rg_expected;
DROP FUNCTION rg_answers(), rg_oracle();
