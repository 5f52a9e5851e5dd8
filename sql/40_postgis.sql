-- kdgpu_postgis: geometry and geography points.  Every answer is compared
-- with PostGIS's own: a sequential scan and a GiST index ordering by its
-- <-> and <<->>, ST_DWithin, ST_Distance; plans show the kdgpu index.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS postgis;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
-- without kdgpu_postgis, an index on a PostGIS column says to install it
CREATE TABLE pg_hint (g geometry, h geography);
CREATE INDEX ON pg_hint USING kdgpu (g);
CREATE INDEX ON pg_hint USING kdgpu (h);
DROP TABLE pg_hint;
SET client_min_messages = warning;
CREATE EXTENSION kdgpu_postgis;
RESET client_min_messages;
SELECT setseed(0.25);

-- clustered lon/lat points around five cities, with exact duplicates
CREATE TABLE pg_pts (id int, geom geometry(Point, 4326)) WITH (autovacuum_enabled = false);
INSERT INTO pg_pts
SELECT i, ST_SetSRID(ST_MakePoint(c.lon + (random() - 0.5) * 0.2, c.lat + (random() - 0.5) * 0.1), 4326)
FROM generate_series(1, 3000) i,
	LATERAL (SELECT (ARRAY[2.35, 13.40, -0.12, 139.69, -74.00])[1 + i % 5] AS lon,
					(ARRAY[48.85, 52.52, 51.50, 35.68, 40.71])[1 + i % 5] AS lat) c;
INSERT INTO pg_pts SELECT 3000 + id, geom FROM pg_pts WHERE id <= 300;
-- NULL and empty points are neither indexed nor returned
INSERT INTO pg_pts VALUES (-1, NULL), (-2, 'SRID=4326;POINT EMPTY');
ANALYZE pg_pts;

CREATE TABLE pg_q (qid int, q geometry);
INSERT INTO pg_q SELECT i, ST_SetSRID(ST_MakePoint(c.lon + (random() - 0.5) * 0.3, c.lat + (random() - 0.5) * 0.15), 4326)
FROM generate_series(1, 20) i,
	LATERAL (SELECT (ARRAY[2.35, 13.40, -0.12, 139.69, -74.00])[1 + i % 5] AS lon,
					(ARRAY[48.85, 52.52, 51.50, 35.68, 40.71])[1 + i % 5] AS lat) c;
-- a query point on a duplicated point: equal distances
INSERT INTO pg_q SELECT 21, geom FROM pg_pts WHERE id = 7;

-- kd_knn equals ORDER BY geom <-> q, ctid, distances equal to ST_Distance
SELECT count(*) AS knn_mismatches FROM (
	(SELECT qid, k.rank, k.nn_ctid, k.distance FROM pg_q, kd_knn('pg_pts', q, 10) k
	 EXCEPT
	 SELECT qid, rank::int, b.ctid, d FROM pg_q, LATERAL (
		SELECT ctid, ST_Distance(geom, q) AS d, row_number() OVER (ORDER BY geom <-> q, ctid) AS rank
		FROM pg_pts WHERE geom IS NOT NULL AND NOT ST_IsEmpty(geom) ORDER BY geom <-> q, ctid LIMIT 10) b)
	UNION ALL
	(SELECT qid, rank::int, b.ctid, d FROM pg_q, LATERAL (
		SELECT ctid, ST_Distance(geom, q) AS d, row_number() OVER (ORDER BY geom <-> q, ctid) AS rank
		FROM pg_pts WHERE geom IS NOT NULL AND NOT ST_IsEmpty(geom) ORDER BY geom <-> q, ctid LIMIT 10) b
	 EXCEPT
	 SELECT qid, k.rank, k.nn_ctid, k.distance FROM pg_q, kd_knn('pg_pts', q, 10) k)) x;

-- the kdgpu index: plans
CREATE INDEX pg_pts_kd ON pg_pts USING kdgpu (geom);
EXPLAIN (COSTS OFF) SELECT id FROM pg_pts ORDER BY geom <-> ST_SetSRID(ST_MakePoint(2.35, 48.85), 4326) LIMIT 10;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pg_pts WHERE geom && ST_MakeEnvelope(2.3, 48.8, 2.4, 48.9, 4326);
EXPLAIN (COSTS OFF) SELECT count(*) FROM pg_pts WHERE kd_dwithin(geom, ST_SetSRID(ST_MakePoint(2.35, 48.85), 4326), 0.01);

-- the index's answers, and PostGIS's own (sequential scan, then GiST)
CREATE TEMP TABLE pg_ans (src text, qid int, ord int, id int, d float8);
CREATE FUNCTION pg_collect(tag text, k int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT qid, q FROM pg_q LOOP
		INSERT INTO pg_ans SELECT tag || '_plain', r.qid, row_number() OVER (), 0, d
			FROM (SELECT geom <-> r.q AS d FROM pg_pts ORDER BY geom <-> r.q LIMIT k) s;
		-- (distance, id) order: the first k + 50 by distance hold the first k
		INSERT INTO pg_ans SELECT tag || '_ties', r.qid, row_number() OVER (), id, d
			FROM (SELECT id, d FROM (SELECT id, geom <-> r.q AS d FROM pg_pts ORDER BY geom <-> r.q LIMIT k + 50) s0
				  ORDER BY d, id LIMIT k) s;
	END LOOP;
END $$;
SELECT pg_collect('kdgpu', 25);
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT pg_collect('seq', 25);
RESET enable_indexscan;
RESET enable_bitmapscan;
DROP INDEX pg_pts_kd;
CREATE INDEX pg_pts_gist ON pg_pts USING gist (geom);
SELECT pg_collect('gist', 25);
DROP INDEX pg_pts_gist;
CREATE INDEX pg_pts_kd ON pg_pts USING kdgpu (geom);
SELECT a.src, b.src, count(*) AS rows, count(*) FILTER (WHERE a.d IS DISTINCT FROM b.d OR a.id <> b.id) AS mismatches
FROM pg_ans a JOIN pg_ans b ON a.qid = b.qid AND a.ord = b.ord AND b.src = replace(a.src, 'kdgpu', 'seq')
WHERE a.src LIKE 'kdgpu%' GROUP BY 1, 2 ORDER BY 1;
SELECT a.src, b.src, count(*) AS rows, count(*) FILTER (WHERE a.d IS DISTINCT FROM b.d OR a.id <> b.id) AS mismatches
FROM pg_ans a JOIN pg_ans b ON a.qid = b.qid AND a.ord = b.ord AND b.src = replace(a.src, 'kdgpu', 'gist')
WHERE a.src LIKE 'kdgpu%' GROUP BY 1, 2 ORDER BY 1;

-- rows inserted after the build, then a filter above the scan
INSERT INTO pg_pts SELECT 5000 + i, ST_SetSRID(ST_MakePoint(2.35 + i * 0.0001, 48.85), 4326) FROM generate_series(1, 50) i;
-- (rows tied with the 80th may differ: they are left out)
CREATE FUNCTION pg_filtered() RETURNS int[] LANGUAGE sql AS $$
	WITH s AS (SELECT id, geom <-> ST_SetSRID(ST_MakePoint(2.35, 48.85), 4326) AS d
		FROM pg_pts WHERE id % 3 = 0 ORDER BY geom <-> ST_SetSRID(ST_MakePoint(2.35, 48.85), 4326) LIMIT 80)
	SELECT array_agg(id ORDER BY d, id) FROM s WHERE d < (SELECT max(d) FROM s) $$;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM pg_pts WHERE id % 3 = 0 ORDER BY geom <-> ST_SetSRID(ST_MakePoint(2.35, 48.85), 4326) LIMIT 80;
CREATE TEMP TABLE pg_filtered_kd AS SELECT pg_filtered() AS ids;
RESET enable_seqscan;
SET enable_indexscan = off;
SELECT array_length(ids, 1) AS filtered_rows, ids = pg_filtered() AS same_as_seq FROM pg_filtered_kd;
RESET enable_indexscan;

-- a NULL or an empty query point: every distance is NULL, rows still come
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM pg_pts ORDER BY geom <-> 'SRID=4326;POINT EMPTY'::geometry LIMIT 50;
SELECT count(*) AS rows, count(d) AS distances FROM (SELECT geom <-> 'SRID=4326;POINT EMPTY'::geometry AS d
	FROM pg_pts ORDER BY geom <-> 'SRID=4326;POINT EMPTY'::geometry LIMIT 50) s;
SELECT count(*) AS rows, count(d) AS distances FROM (SELECT geom <-> NULL::geometry AS d
	FROM pg_pts ORDER BY geom <-> NULL::geometry LIMIT 50) s;
RESET enable_seqscan;

-- && and kd_dwithin through the index equal PostGIS's answers
SELECT count(*) AS overlap_rows,
	count(*) = (SELECT count(*) FROM pg_pts WHERE ST_X(geom) BETWEEN 2.3 AND 2.4 AND ST_Y(geom) BETWEEN 48.8 AND 48.9) AS same_as_xy
FROM pg_pts WHERE geom && ST_MakeEnvelope(2.3, 48.8, 2.4, 48.9, 4326);
SELECT qid, count(*) AS dwithin_rows,
	array_agg(id ORDER BY id) = (SELECT array_agg(id ORDER BY id) FROM pg_pts p2
		WHERE ST_DWithin(p2.geom, q, 0.02)) AS same_as_st_dwithin
FROM pg_q, pg_pts WHERE kd_dwithin(geom, q, 0.02) AND qid <= 5 GROUP BY qid, q ORDER BY qid;
-- geom <@ kd_ball(center, radius), the index's radius search, equals ST_DWithin
EXPLAIN (COSTS OFF) SELECT id FROM pg_pts WHERE geom <@ kd_ball('SRID=4326;POINT(2.35 48.85)'::geometry, 0.02);
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT qid, id FROM pg_q, pg_pts WHERE geom <@ kd_ball(q, 0.02);
CREATE TEMP TABLE pg_ball AS SELECT qid, array_agg(id ORDER BY id) AS ids FROM pg_q, pg_pts
	WHERE geom <@ kd_ball(q, 0.02) GROUP BY qid;
RESET enable_seqscan;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT count(*) AS queries, sum(array_length(ids, 1)) AS rows, count(*) FILTER (WHERE ids <> (SELECT array_agg(id ORDER BY id)
		FROM pg_pts WHERE ST_DWithin(geom, q, 0.02))) AS mismatches
FROM pg_ball JOIN pg_q USING (qid);
SELECT count(*) AS seq_rows FROM pg_q, pg_pts WHERE geom <@ kd_ball(q, 0.02);
RESET enable_indexscan;
RESET enable_bitmapscan;
SELECT count(*) AS range_mismatches FROM (
	(SELECT qid, k.nn_ctid, k.distance FROM pg_q, kd_range('pg_pts', q, 0.015) k
	 EXCEPT SELECT qid, pg_pts.ctid, ST_Distance(geom, q) FROM pg_q, pg_pts WHERE ST_DWithin(geom, q, 0.015))
	UNION ALL
	(SELECT qid, pg_pts.ctid, ST_Distance(geom, q) FROM pg_q, pg_pts WHERE ST_DWithin(geom, q, 0.015)
	 EXCEPT SELECT qid, k.nn_ctid, k.distance FROM pg_q, kd_range('pg_pts', q, 0.015) k)) x;
SELECT count(*) AS box_rows, count(*) = (SELECT count(*) FROM pg_pts
		WHERE ST_X(geom) BETWEEN 13.35 AND 13.45 AND ST_Y(geom) BETWEEN 52.5 AND 52.55) AS same_as_xy
FROM kd_box('pg_pts', ST_SetSRID(ST_MakePoint(13.35, 52.5), 4326), ST_SetSRID(ST_MakePoint(13.45, 52.55), 4326));

-- kd_knn_join over an array, kd_all_knn and kd_all_knn_arrays
SELECT count(*) AS knn_join_mismatches FROM (
	SELECT j.query_ord, j.rank, j.nn_ctid, j.distance FROM kd_knn_join('pg_pts', (SELECT array_agg(q ORDER BY qid) FROM pg_q), 5) j
	EXCEPT SELECT qid, k.rank, k.nn_ctid, k.distance FROM pg_q, kd_knn('pg_pts', q, 5) k) x;
CREATE TABLE pg_small AS SELECT id, geom FROM pg_pts WHERE id % 10 = 0;
SELECT count(*) AS all_knn_pairs, count(*) FILTER (WHERE a.distance IS DISTINCT FROM b.d OR a.nn_ctid <> b.ctid) AS mismatches
FROM kd_all_knn('pg_small', 4) a
LEFT JOIN LATERAL (SELECT p2.ctid, p2.geom <-> p1.geom AS d, row_number() OVER (ORDER BY p2.geom <-> p1.geom, p2.ctid) AS rank
	FROM pg_small p1, pg_small p2 WHERE p1.ctid = a.query_ctid AND p2.ctid <> p1.ctid
	ORDER BY p2.geom <-> p1.geom, p2.ctid LIMIT 4) b ON b.rank = a.rank;

SELECT count(*) AS knn_join_table_rows, count(*) FILTER (WHERE k.nn_ctid IS NULL) AS mismatches
FROM pg_q JOIN kd_knn_join('pg_small', 'pg_q', 3) j ON j.query_ctid = pg_q.ctid
LEFT JOIN LATERAL kd_knn('pg_small', pg_q.q, 3) k ON k.rank = j.rank AND k.nn_ctid = j.nn_ctid AND k.distance = j.distance;
SELECT count(*) AS arrays_rows, count(*) FILTER (WHERE a.nn_ctids <> b.ctids OR a.distances <> b.ds) AS mismatches
FROM kd_all_knn_arrays('pg_small', 4) a
JOIN (SELECT query_ctid, array_agg(nn_ctid ORDER BY rank) AS ctids, array_agg(distance ORDER BY rank) AS ds
	  FROM kd_all_knn('pg_small', 4) GROUP BY query_ctid) b USING (query_ctid);

-- a projected SRID (UTM 31N, metres): large coordinates, distances in metres
CREATE TABLE pg_utm AS SELECT id, ST_Transform(geom, 32631) AS geom FROM pg_pts WHERE id % 5 = 0 AND geom IS NOT NULL AND NOT ST_IsEmpty(geom);
CREATE INDEX ON pg_utm USING kdgpu (geom);
CREATE FUNCTION pg_utm_top(k int) RETURNS TABLE (qid int, ids int[], ds float8[]) LANGUAGE sql AS $$
	SELECT qid, array_agg(id ORDER BY ord), array_agg(d ORDER BY ord) FROM pg_q, LATERAL (
		SELECT id, d, row_number() OVER (ORDER BY d, id) AS ord FROM (
			SELECT id, geom <-> ST_Transform(q, 32631) AS d FROM pg_utm
			ORDER BY geom <-> ST_Transform(q, 32631) LIMIT k + 50) s
		ORDER BY d, id LIMIT k) s2 GROUP BY qid $$;
EXPLAIN (COSTS OFF) SELECT id FROM pg_utm ORDER BY geom <-> 'SRID=32631;POINT(450000 5410000)'::geometry LIMIT 10;
CREATE TEMP TABLE pg_utm_kd AS SELECT * FROM pg_utm_top(20);
SET enable_indexscan = off;
CREATE TEMP TABLE pg_utm_seq AS SELECT * FROM pg_utm_top(20);
RESET enable_indexscan;
SELECT count(*) AS queries, count(*) FILTER (WHERE a.ids <> b.ids OR a.ds <> b.ds) AS mismatches
FROM pg_utm_kd a JOIN pg_utm_seq b USING (qid);
SELECT count(*) AS utm_knn_mismatches FROM (
	SELECT qid, k.rank, k.nn_ctid, k.distance FROM pg_q, kd_knn('pg_utm', ST_Transform(q, 32631), 10) k
	EXCEPT SELECT qid, rank::int, b.ctid, d FROM pg_q, LATERAL (
		SELECT ctid, ST_Distance(geom, ST_Transform(q, 32631)) AS d,
			row_number() OVER (ORDER BY geom <-> ST_Transform(q, 32631), ctid) AS rank
		FROM pg_utm ORDER BY geom <-> ST_Transform(q, 32631), ctid LIMIT 10) b) x;
-- one XY point of the column's SRID runs as an ordered scan of the index;
-- its rows, distances and ties by ctid are brute force's for every k,
-- also at points that lie on two rows (a tie at the first place)
SELECT count(*) FROM kd_knn('pg_utm', 'SRID=32631;POINT(450000 5410000)'::geometry, 10);
SELECT last_run FROM kd_status();
SELECT k, count(*) FILTER (WHERE
	ARRAY(SELECT (nn_ctid, distance)::text FROM kd_knn('pg_utm', uq, k) ORDER BY rank)
	IS DISTINCT FROM
	ARRAY(SELECT (ctid, ST_Distance(geom, uq))::text FROM pg_utm
		  ORDER BY geom <-> uq, ctid LIMIT k)) AS ordered_scan_mismatches
FROM (SELECT ST_Transform(q, 32631) AS uq FROM pg_q
	  UNION ALL SELECT geom FROM pg_utm WHERE id IN (5, 10)) qs,
	(VALUES (1), (2), (10), (60)) ks(k) GROUP BY k ORDER BY k;
-- a point of another SRID or with a Z is not the index's: the table is
-- read, which refuses it as before
SELECT * FROM kd_knn('pg_utm', 'SRID=4326;POINT(2.35 48.85)'::geometry, 1);
SELECT * FROM kd_knn('pg_utm', 'SRID=32631;POINT Z(450000 5410000 5)'::geometry, 1);

-- geography: sphere distance in metres, like geography <-> and ST_Distance(.., false)
CREATE TABLE pg_geog AS SELECT id, geom::geography AS geog FROM pg_pts;
SELECT count(*) AS geog_rows,
	count(*) FILTER (WHERE k.distance <> g.geog <-> q::geography) AS knn_op_mismatches,
	count(*) FILTER (WHERE abs(k.distance - ST_Distance(g.geog, q::geography, false)) > 1e-8) AS st_distance_mismatches
FROM pg_q, kd_knn('pg_geog', q::geography, 10) k JOIN pg_geog g ON g.ctid = k.nn_ctid;
SELECT count(*) AS geog_knn_mismatches FROM (
	SELECT qid, k.rank, k.nn_ctid FROM pg_q, kd_knn('pg_geog', q::geography, 10) k
	EXCEPT SELECT qid, rank::int, b.ctid FROM pg_q, LATERAL (
		SELECT ctid, row_number() OVER (ORDER BY geog <-> q::geography, ctid) AS rank
		FROM pg_geog WHERE geog IS NOT NULL AND NOT ST_IsEmpty(geog::geometry) ORDER BY geog <-> q::geography, ctid LIMIT 10) b) x;
SELECT count(*) AS geog_range_mismatches FROM (
	(SELECT qid, k.nn_ctid FROM pg_q, kd_range('pg_geog', q::geography, 1500) k
	 EXCEPT SELECT qid, pg_geog.ctid FROM pg_q, pg_geog WHERE ST_DWithin(geog, q::geography, 1500, false))
	UNION ALL
	(SELECT qid, pg_geog.ctid FROM pg_q, pg_geog WHERE ST_DWithin(geog, q::geography, 1500, false)
	 EXCEPT SELECT qid, k.nn_ctid FROM pg_q, kd_range('pg_geog', q::geography, 1500) k)) x;
SELECT count(*) AS geog_dwithin_rows,
	count(*) = (SELECT count(*) FROM pg_q, pg_geog WHERE ST_DWithin(geog, q::geography, 1000, false)) AS same_as_st_dwithin
FROM pg_q, pg_geog WHERE kd_dwithin(geog, q::geography, 1000);
CREATE INDEX pg_geog_kd ON pg_geog USING kdgpu (geog);
EXPLAIN (COSTS OFF) SELECT id FROM pg_geog ORDER BY geog <-> 'SRID=4326;POINT(2.35 48.85)'::geography LIMIT 10;
CREATE FUNCTION pg_geog_top(k int) RETURNS TABLE (qid int, ids int[], ds float8[]) LANGUAGE sql AS $$
	SELECT qid, array_agg(id ORDER BY ord), array_agg(d ORDER BY ord) FROM pg_q, LATERAL (
		SELECT id, d, row_number() OVER (ORDER BY d, id) AS ord FROM (
			SELECT id, geog <-> q::geography AS d FROM pg_geog ORDER BY geog <-> q::geography LIMIT k + 50) s
		ORDER BY d, id LIMIT k) s2 GROUP BY qid $$;
EXPLAIN (COSTS OFF) SELECT id, geog <-> 'SRID=4326;POINT(2.35 48.85)'::geography AS d FROM pg_geog
	ORDER BY geog <-> 'SRID=4326;POINT(2.35 48.85)'::geography LIMIT 70;
CREATE TEMP TABLE pg_geog_kd AS SELECT * FROM pg_geog_top(20);
SET enable_indexscan = off;
CREATE TEMP TABLE pg_geog_seq AS SELECT * FROM pg_geog_top(20);
RESET enable_indexscan;
SELECT count(*) AS queries, count(*) FILTER (WHERE a.ids <> b.ids OR a.ds <> b.ds) AS mismatches
FROM pg_geog_kd a JOIN pg_geog_seq b USING (qid);
-- geography && and kd_dwithin through the index (a box on the unit sphere)
EXPLAIN (COSTS OFF) SELECT count(*) FROM pg_geog WHERE kd_dwithin(geog, 'SRID=4326;POINT(2.35 48.85)'::geography, 800);
CREATE TEMP TABLE pg_geog_dw AS SELECT qid, array_agg(id ORDER BY id) AS ids FROM pg_q, pg_geog
	WHERE kd_dwithin(geog, q::geography, 800) GROUP BY qid;
CREATE TEMP TABLE pg_geog_ov AS SELECT qid, count(*) AS n FROM pg_q, pg_geog
	WHERE geog && _ST_Expand(q::geography, 2000) GROUP BY qid;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SELECT count(*) AS queries, sum(array_length(ids, 1)) AS rows, count(*) FILTER (WHERE ids <> (SELECT array_agg(id ORDER BY id)
		FROM pg_geog WHERE ST_DWithin(geog, q::geography, 800, false))) AS mismatches
FROM pg_geog_dw JOIN pg_q USING (qid);
SELECT count(*) AS queries, sum(n) AS rows, count(*) FILTER (WHERE n <> (SELECT count(*)
		FROM pg_geog WHERE geog && _ST_Expand(q::geography, 2000))) AS mismatches
FROM pg_geog_ov JOIN pg_q USING (qid);
RESET enable_indexscan;
RESET enable_bitmapscan;
-- writes and a VACUUM that merges the pending rows into the tree
INSERT INTO pg_geog SELECT 10000 + i, ST_MakePoint(2.35 + (random() - 0.5) * 0.3, 48.85 + (random() - 0.5) * 0.2)::geography
	FROM generate_series(1, 800) i;
DELETE FROM pg_geog WHERE id % 7 = 0;
CREATE TEMP TABLE pg_geog_kd2 AS SELECT * FROM pg_geog_top(30);
VACUUM pg_geog;
SELECT kd_index_check('public.pg_geog_kd') AS index_ok;
CREATE TEMP TABLE pg_geog_kd3 AS SELECT * FROM pg_geog_top(30);
SET enable_indexscan = off;
CREATE TEMP TABLE pg_geog_seq2 AS SELECT * FROM pg_geog_top(30);
RESET enable_indexscan;
SELECT count(*) AS queries, count(*) FILTER (WHERE a.ids <> b.ids OR a.ds <> b.ds) AS before_vacuum_mismatches,
	count(*) FILTER (WHERE c.ids <> b.ids OR c.ds <> b.ds) AS after_vacuum_mismatches
FROM pg_geog_kd2 a JOIN pg_geog_seq2 b USING (qid) JOIN pg_geog_kd3 c USING (qid);
-- the kd_* functions on the index's tree give the same answers
SELECT count(*) AS geog_all_knn_pairs, count(*) FILTER (WHERE a.distance IS DISTINCT FROM b.d OR a.nn_ctid <> b.ctid) AS mismatches
FROM (SELECT * FROM kd_all_knn('pg_geog', 3) LIMIT 600) a
LEFT JOIN LATERAL (SELECT p2.ctid, p2.geog <-> p1.geog AS d, row_number() OVER (ORDER BY p2.geog <-> p1.geog, p2.ctid) AS rank
	FROM pg_geog p1, pg_geog p2 WHERE p1.ctid = a.query_ctid AND p2.ctid <> p1.ctid
	ORDER BY p2.geog <-> p1.geog, p2.ctid LIMIT 3) b ON b.rank = a.rank;

-- 3-D points: <<->> with kd_geometry_nd_ops, functions in 3-D (ST_3DDistance)
CREATE TABLE pg_pts3 AS SELECT id, ST_MakePoint(ST_X(geom), ST_Y(geom), (id % 11) * 0.01) AS geom FROM pg_pts
	WHERE geom IS NOT NULL AND NOT ST_IsEmpty(geom);
CREATE INDEX pg_pts3_kd ON pg_pts3 USING kdgpu (geom kd_geometry_nd_ops);
EXPLAIN (COSTS OFF) SELECT id FROM pg_pts3 ORDER BY geom <<->> ST_MakePoint(2.35, 48.85, 0.05) LIMIT 10;
CREATE FUNCTION pg_top3(k int) RETURNS TABLE (qid int, ids int[], ds float8[]) LANGUAGE sql AS $$
	SELECT qid, array_agg(id ORDER BY ord), array_agg(d ORDER BY ord) FROM pg_q, LATERAL (
		SELECT id, d, row_number() OVER (ORDER BY d, id) AS ord FROM (
			SELECT id, geom <<->> ST_MakePoint(ST_X(q), ST_Y(q), 0.05) AS d FROM pg_pts3
			ORDER BY geom <<->> ST_MakePoint(ST_X(q), ST_Y(q), 0.05) LIMIT k + 50) s
		ORDER BY d, id LIMIT k) s2 GROUP BY qid $$;
CREATE TEMP TABLE pg_top3_kd AS SELECT * FROM pg_top3(20);
SET enable_indexscan = off;
CREATE TEMP TABLE pg_top3_seq AS SELECT * FROM pg_top3(20);
RESET enable_indexscan;
SELECT count(*) AS queries, count(*) FILTER (WHERE a.ids <> b.ids OR a.ds <> b.ds) AS mismatches
FROM pg_top3_kd a JOIN pg_top3_seq b USING (qid);
SELECT count(*) AS knn3_rows, count(*) FILTER (WHERE k.distance <> ST_3DDistance(p.geom, ST_MakePoint(ST_X(q), ST_Y(q), 0.05))) AS st_3ddistance_mismatches
FROM pg_q, kd_knn('pg_pts3', ST_MakePoint(ST_X(q), ST_Y(q), 0.05), 10) k JOIN pg_pts3 p ON p.ctid = k.nn_ctid;

-- bad input
SELECT * FROM kd_knn('pg_pts', 'SRID=4326;LINESTRING(0 0, 1 1)'::geometry, 1);
SELECT * FROM kd_knn('pg_pts', ST_MakePoint(2.35, 48.85), 1);
SELECT id FROM pg_pts ORDER BY geom <-> ST_MakePoint(2.35, 48.85) LIMIT 1;
SELECT id FROM pg_geog ORDER BY geog <-> 'SRID=4269;POINT(2.35 48.85)'::geography LIMIT 1;
SELECT id FROM pg_pts3 ORDER BY geom <<->> ST_MakePoint(2.35, 48.85) LIMIT 1;
-- <<->> does not compare SRIDs: neither does the index
SELECT (SELECT array_agg(id) FROM (SELECT id FROM pg_pts3 ORDER BY geom <<->> 'SRID=3857;POINT(2.35 48.85 0.05)'::geometry LIMIT 5) s)
	= (SELECT array_agg(id) FROM (SELECT id FROM pg_pts3 ORDER BY geom <<->> 'POINT(2.35 48.85 0.05)'::geometry LIMIT 5) s) AS srid_ignored;
SELECT id FROM pg_pts3 ORDER BY geom <<->> ST_MakePointM(2.35, 48.85, 1) LIMIT 1;
SELECT * FROM kd_knn('pg_pts3', ST_MakePoint(2.35, 48.85), 1);
SELECT kd_dwithin('SRID=4326;POINT(0 0)'::geometry, 'POINT(0 0)'::geometry, 1);
SELECT kd_dwithin('POINT(0 0)'::geometry, 'POINT EMPTY'::geometry, 1);
SELECT kd_dwithin('POINT(0 0)'::geometry, 'POINT(3 4)'::geometry, 5), kd_dwithin('POINT(0 0)'::geometry, 'POINT(3 4)'::geometry, 4.999);
SELECT * FROM kd_box('pg_geog', 'SRID=4326;POINT(0 0)'::geography, 'SRID=4326;POINT(1 1)'::geography);
CREATE TABLE pg_mixed (id int, geom geometry);
INSERT INTO pg_mixed VALUES (1, 'POINT(0 0)'), (2, 'POLYGON((0 0, 1 0, 1 1, 0 0))');
CREATE INDEX ON pg_mixed USING kdgpu (geom);
SELECT * FROM kd_knn('pg_mixed', 'POINT(0 0)'::geometry, 1);
CREATE INDEX pg_mixed_c ON pg_mixed USING kdgpu (ST_PointOnSurface(geom));
SELECT id FROM pg_mixed ORDER BY ST_PointOnSurface(geom) <-> 'POINT(0.9 0.1)'::geometry LIMIT 1;
DROP INDEX pg_mixed_c;
TRUNCATE pg_mixed;
INSERT INTO pg_mixed VALUES (1, 'SRID=4326;POINT(0 0)'), (2, 'SRID=3857;POINT(1 1)');
CREATE INDEX ON pg_mixed USING kdgpu (geom);
SELECT * FROM kd_knn('pg_mixed', 'SRID=4326;POINT(0 0)'::geometry, 1);
TRUNCATE pg_mixed;
INSERT INTO pg_mixed VALUES (1, 'POINT(0 0)'), (2, 'POINT Z (1 1 1)');
CREATE INDEX ON pg_mixed USING kdgpu (geom kd_geometry_nd_ops);
CREATE TABLE pg_geog_other (g geography);
INSERT INTO pg_geog_other VALUES ('SRID=4269;POINT(0 0)');
SELECT * FROM kd_knn('pg_geog_other', 'SRID=4269;POINT(0 0)'::geography, 1);

DROP TABLE pg_pts, pg_q, pg_small, pg_utm, pg_geog, pg_pts3, pg_mixed, pg_geog_other;
DROP FUNCTION pg_filtered(), pg_collect(text, int), pg_geog_top(int), pg_top3(int), pg_utm_top(int);
DROP EXTENSION kdgpu_postgis;
