/*
 * kdgpu--0.5--0.6.sql
 *	  ALTER EXTENSION kdgpu UPDATE from 0.5: a shard's answers to a
 *	  coordinator in binary chunks.
 *
 * kd_all_knn_chunks and kd_knn_join_chunks are what a coordinator runs on
 * each shard of a table whose partitions are postgres_fdw foreign tables
 * (answer_chunks.c): the shard's points and their All-kNN, or a kNN join's
 * answers, in binary chunks.  They are called in a SELECT list, where
 * their values are not stored in a tuplestore.
 *
 * A description (COMMENT ON) of every function, operator, operator class,
 * type and view that had none, as sql/install/kdgpu.sql gives them.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kdgpu UPDATE TO '0.6'" to load this file. \quit

CREATE FUNCTION kd_all_knn_chunks(rel regclass, col name, k integer, key_col name,
								  include_self boolean)
	RETURNS SETOF bytea
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_chunks'
	LANGUAGE C STABLE PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join_chunks(rel regclass, col name, queries anyarray, k integer,
								   key_col name)
	RETURNS SETOF bytea
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_chunks'
	LANGUAGE C STABLE PARALLEL RESTRICTED;

-- descriptions, as the install script gives them
COMMENT ON FUNCTION kd_distance(float8[], float8[]) IS
	'Euclidean distance between two float8[] points, bit for bit the engine''s; NULL when either is empty';
COMMENT ON OPERATOR <-> (float8[], float8[]) IS
	'Euclidean distance between two float8[] points (kd_distance); ORDER BY p <-> q on a kdgpu index';
COMMENT ON FUNCTION kdgpu_rows_support(internal) IS
	'planner support of the kd_* functions that return rows: their row counts, and kdgpu loaded at planning time';
COMMENT ON FUNCTION kd_knn(regclass, point, integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_knn(regclass, name, point, integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_knn(regclass, float8[], integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_knn(regclass, name, float8[], integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_knn_join(regclass, point[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_knn_join(regclass, name, point[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_knn_join(regclass, float8[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_knn_join(regclass, name, float8[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_knn_join(regclass, regclass, integer) IS
	'the k rows of rel nearest to each row of query_rel (points of each table''s only point column); returns (query_ctid, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_knn_join(regclass, name, regclass, name, integer) IS
	'the k rows of rel nearest to each row of query_rel (points of columns col and query_col); returns (query_ctid, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_all_knn(regclass, integer, boolean) IS
	'each row''s k nearest rows of rel (points of rel''s only point column); returns (query_ctid, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_all_knn(regclass, name, integer, boolean) IS
	'each row''s k nearest rows of rel (points of column col); returns (query_ctid, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_all_knn_arrays(regclass, integer, boolean) IS
	'each row''s k nearest rows of rel, one row per point with arrays (points of rel''s only point column); returns (query_ctid, nn_ctids, distances)';
COMMENT ON FUNCTION kd_all_knn_arrays(regclass, name, integer, boolean) IS
	'each row''s k nearest rows of rel, one row per point with arrays (points of column col); returns (query_ctid, nn_ctids, distances)';
COMMENT ON FUNCTION kd_range(regclass, point, float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_range(regclass, name, point, float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_range(regclass, float8[], float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_range(regclass, name, float8[], float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_range_join(regclass, point[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_range_join(regclass, name, point[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_range_join(regclass, point[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_range_join(regclass, name, point[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_range_join(regclass, float8[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_range_join(regclass, name, float8[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_range_join(regclass, float8[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_range_join(regclass, name, float8[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION kd_box(regclass, point, point) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_ctid)';
COMMENT ON FUNCTION kd_box(regclass, name, point, point) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_ctid)';
COMMENT ON FUNCTION kd_box(regclass, float8[], float8[]) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_ctid)';
COMMENT ON FUNCTION kd_box(regclass, name, float8[], float8[]) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_ctid)';
COMMENT ON FUNCTION kd_box(regclass, box) IS
	'the rows of rel inside box b, bounds included (points of rel''s only point column); returns (nn_ctid)';
COMMENT ON FUNCTION kd_box(regclass, name, box) IS
	'the rows of rel inside box b, bounds included (points of column col); returns (nn_ctid)';
COMMENT ON FUNCTION kd_knn(regclass, point, integer, name) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_knn(regclass, name, point, integer, name) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_knn(regclass, float8[], integer, name) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_knn(regclass, name, float8[], integer, name) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_knn_join(regclass, point[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_knn_join(regclass, name, point[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_knn_join(regclass, float8[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_knn_join(regclass, name, float8[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_knn_join(regclass, regclass, integer, name, name) IS
	'the k rows of rel nearest to each row of query_rel (points of each table''s only point column); returns (query_key, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_knn_join(regclass, name, regclass, name, integer, name, name) IS
	'the k rows of rel nearest to each row of query_rel (points of columns col and query_col); returns (query_key, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_all_knn(regclass, integer, name, boolean) IS
	'each row''s k nearest rows of rel (points of rel''s only point column); returns (query_key, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_all_knn(regclass, name, integer, name, boolean) IS
	'each row''s k nearest rows of rel (points of column col); returns (query_key, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_all_knn_arrays(regclass, integer, name, boolean) IS
	'each row''s k nearest rows of rel, one row per point with arrays (points of rel''s only point column); returns (query_key, nn_keys, distances); key_col names the rows';
COMMENT ON FUNCTION kd_all_knn_arrays(regclass, name, integer, name, boolean) IS
	'each row''s k nearest rows of rel, one row per point with arrays (points of column col); returns (query_key, nn_keys, distances); key_col names the rows';
COMMENT ON FUNCTION kd_range(regclass, point, float8, name) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_range(regclass, name, point, float8, name) IS
	'the rows of rel within radius of center (points of column col); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_range(regclass, float8[], float8, name) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_range(regclass, name, float8[], float8, name) IS
	'the rows of rel within radius of center (points of column col); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_range_join(regclass, point[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_range_join(regclass, name, point[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_range_join(regclass, point[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_range_join(regclass, name, point[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_range_join(regclass, float8[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_range_join(regclass, name, float8[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_range_join(regclass, float8[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_range_join(regclass, name, float8[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION kd_box(regclass, point, point, name) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_key); key_col names the rows';
COMMENT ON FUNCTION kd_box(regclass, name, point, point, name) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_key); key_col names the rows';
COMMENT ON FUNCTION kd_box(regclass, float8[], float8[], name) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_key); key_col names the rows';
COMMENT ON FUNCTION kd_box(regclass, name, float8[], float8[], name) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_key); key_col names the rows';
COMMENT ON FUNCTION kd_box(regclass, box, name) IS
	'the rows of rel inside box b, bounds included (points of rel''s only point column); returns (nn_key); key_col names the rows';
COMMENT ON FUNCTION kd_box(regclass, name, box, name) IS
	'the rows of rel inside box b, bounds included (points of column col); returns (nn_key); key_col names the rows';
COMMENT ON FUNCTION kd_knn_parts(regclass, point, integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_knn_parts(regclass, name, point, integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_knn_parts(regclass, float8[], integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_knn_parts(regclass, name, float8[], integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_knn_join_parts(regclass, point[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_knn_join_parts(regclass, name, point[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_knn_join_parts(regclass, float8[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_knn_join_parts(regclass, name, float8[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_knn_join_parts(regclass, regclass, integer) IS
	'the k rows of rel nearest to each row of query_rel (points of each table''s only point column); returns (query_rel, query_ctid, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_knn_join_parts(regclass, name, regclass, name, integer) IS
	'the k rows of rel nearest to each row of query_rel (points of columns col and query_col); returns (query_rel, query_ctid, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_all_knn_parts(regclass, integer, boolean) IS
	'each row''s k nearest rows of rel (points of rel''s only point column); returns (query_rel, query_ctid, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_all_knn_parts(regclass, name, integer, boolean) IS
	'each row''s k nearest rows of rel (points of column col); returns (query_rel, query_ctid, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_all_knn_arrays_parts(regclass, integer, boolean) IS
	'each row''s k nearest rows of rel, one row per point with arrays (points of rel''s only point column); returns (query_rel, query_ctid, nn_rels, nn_ctids, distances); a row is its partition and ctid';
COMMENT ON FUNCTION kd_all_knn_arrays_parts(regclass, name, integer, boolean) IS
	'each row''s k nearest rows of rel, one row per point with arrays (points of column col); returns (query_rel, query_ctid, nn_rels, nn_ctids, distances); a row is its partition and ctid';
COMMENT ON FUNCTION kd_range_parts(regclass, point, float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_range_parts(regclass, name, point, float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_range_parts(regclass, float8[], float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_range_parts(regclass, name, float8[], float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_range_join_parts(regclass, point[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_range_join_parts(regclass, name, point[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_range_join_parts(regclass, point[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_range_join_parts(regclass, name, point[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_range_join_parts(regclass, float8[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_range_join_parts(regclass, name, float8[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_range_join_parts(regclass, float8[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_range_join_parts(regclass, name, float8[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION kd_box_parts(regclass, point, point) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_rel, nn_ctid); a row is its partition and ctid';
COMMENT ON FUNCTION kd_box_parts(regclass, name, point, point) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_rel, nn_ctid); a row is its partition and ctid';
COMMENT ON FUNCTION kd_box_parts(regclass, float8[], float8[]) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_rel, nn_ctid); a row is its partition and ctid';
COMMENT ON FUNCTION kd_box_parts(regclass, name, float8[], float8[]) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_rel, nn_ctid); a row is its partition and ctid';
COMMENT ON FUNCTION kd_box_parts(regclass, box) IS
	'the rows of rel inside box b, bounds included (points of rel''s only point column); returns (nn_rel, nn_ctid); a row is its partition and ctid';
COMMENT ON FUNCTION kd_box_parts(regclass, name, box) IS
	'the rows of rel inside box b, bounds included (points of column col); returns (nn_rel, nn_ctid); a row is its partition and ctid';
COMMENT ON FUNCTION kd_all_knn_chunks(regclass, name, integer, name, boolean) IS
	'a shard''s points and their k nearest rows of rel, for a coordinator of postgres_fdw partitions; returns binary chunks';
COMMENT ON FUNCTION kd_knn_join_chunks(regclass, name, anyarray, integer, name) IS
	'the k rows of a shard''s rel nearest to each point of queries, for a coordinator of postgres_fdw partitions; returns binary chunks';
COMMENT ON FUNCTION kd_status() IS
	'one row: the kdgpu.device setting, what work runs on, whether a GPU is usable (and why not), the GPU library, CPU threads, trees cached, the GPU service and where the last batched work ran';
COMMENT ON FUNCTION kd_devices() IS
	'one row per usable GPU: name, compute capability, memory total and free (MB), multiprocessors, driver and runtime versions';
COMMENT ON FUNCTION kd_load(regclass) IS
	'keeps the tree of rel''s kdgpu index on the GPU, or builds one over rel''s only point column; returns (points, dimensions, device, build_ms, cached, index)';
COMMENT ON FUNCTION kd_load(regclass, name) IS
	'keeps the tree of rel''s kdgpu index on column col on the GPU, or builds one; returns (points, dimensions, device, build_ms, cached, index)';
COMMENT ON FUNCTION kd_unload(regclass) IS
	'frees the GPU copies of rel''s trees that kd_load kept; returns whether there was one';
COMMENT ON FUNCTION kd_resident_copies() IS
	'the device copies the GPU service holds, one row per copy and device, by database and index oid (the kd_resident view names them)';
COMMENT ON VIEW kd_resident IS
	'the device copies the GPU service holds: an index''s for every session (owner_pid NULL), or one backend''s tree built for a query';
COMMENT ON TYPE kd_ball IS
	'a ball query region (center, radius): p <@ kd_ball(c, r) is p <-> c <= r';
COMMENT ON TYPE kd_rect IS
	'a box query region (low, high corners): p <@ kd_rect(lo, hi) is lo <= p <= hi, bounds included';
COMMENT ON FUNCTION kd_ball(float8[], float8) IS
	'the ball of center and radius, for p <@ kd_ball(center, radius); returns kd_ball';
COMMENT ON FUNCTION kd_ball(point, float8) IS
	'the ball of a point center and radius, for p <@ kd_ball(center, radius); returns kd_ball';
COMMENT ON FUNCTION kd_rect(float8[], float8[]) IS
	'the box from low to high, for p <@ kd_rect(low, high); returns kd_rect';
COMMENT ON FUNCTION kd_within(float8[], kd_ball) IS
	'true when p <-> center <= radius: the <@ operator';
COMMENT ON FUNCTION kd_within(point, kd_ball) IS
	'true when p <-> center <= radius: the <@ operator';
COMMENT ON FUNCTION kd_within(float8[], kd_rect) IS
	'true when low <= p <= high in every dimension: the <@ operator';
COMMENT ON OPERATOR <@ (float8[], kd_ball) IS
	'p <@ kd_ball(c, r): p within r of c (kd_within); an index condition of kdgpu indexes';
COMMENT ON OPERATOR <@ (point, kd_ball) IS
	'p <@ kd_ball(c, r): p within r of c (kd_within); an index condition of kdgpu indexes';
COMMENT ON OPERATOR <@ (float8[], kd_rect) IS
	'p <@ kd_rect(lo, hi): lo <= p <= hi, bounds included (kd_within); an index condition of kdgpu indexes';
COMMENT ON FUNCTION kdam_handler(internal) IS
	'the handler of the kdgpu index access method';
COMMENT ON OPERATOR CLASS kd_point_ops USING kdgpu IS
	'kdgpu index on point (default): box, circle, polygon, ball and position searches, and ORDER BY <->';
COMMENT ON OPERATOR CLASS kd_float8_ops USING kdgpu IS
	'kdgpu index on float8[] points (default): ball and box searches, and ORDER BY <->';
