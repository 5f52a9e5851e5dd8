/*
 * kdgpu--0.1.sql
 *	  Functions and operators of kdgpu 0.1.
 *
 * Every function reads tables with the caller's rights (none is SECURITY
 * DEFINER; row-level security applies).  The table-reading functions are
 * STABLE (they see the calling query's snapshot) and PARALLEL RESTRICTED
 * (a parallel worker cannot read the leader's temporary tables).  Each
 * exists with and without a column name after the table: without it, the
 * table's only point or float8[] column is used.
 */

\echo Use "CREATE EXTENSION kdgpu" to load this file. \quit

-- float8[] points: Euclidean distance, bit for bit the engine's
CREATE FUNCTION kd_distance(a float8[], b float8[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'kdgpu_distance'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR <-> (
	LEFTARG = float8[],
	RIGHTARG = float8[],
	FUNCTION = kd_distance,
	COMMUTATOR = OPERATOR(<->)
);

-- kNN: the k nearest rows to one point

CREATE FUNCTION kd_knn(rel regclass, query point, k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn(rel regclass, col name, query point, k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn(rel regclass, query float8[], k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn(rel regclass, col name, query float8[], k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

-- kNN join: the k nearest rows to each point of an array

CREATE FUNCTION kd_knn_join(rel regclass, queries point[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join(rel regclass, col name, queries point[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join(rel regclass, queries float8[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join(rel regclass, col name, queries float8[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

-- kNN join: the k nearest rows to each row of another table

CREATE FUNCTION kd_knn_join(rel regclass, query_rel regclass, k integer)
	RETURNS TABLE(query_ctid tid, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join(rel regclass, col name, query_rel regclass, query_col name, k integer)
	RETURNS TABLE(query_ctid tid, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

-- All-kNN: every row's k nearest rows in the same table

CREATE FUNCTION kd_all_knn(rel regclass, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_ctid tid, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_all_knn(rel regclass, col name, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_ctid tid, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_all_knn_arrays(rel regclass, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_ctid tid, nn_ctids tid[], distances float8[])
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_arrays'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_all_knn_arrays(rel regclass, col name, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_ctid tid, nn_ctids tid[], distances float8[])
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_arrays'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

-- range: the rows within a radius of one centre, or of many

CREATE FUNCTION kd_range(rel regclass, center point, radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range(rel regclass, col name, center point, radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range(rel regclass, center float8[], radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range(rel regclass, col name, center float8[], radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, centers point[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, col name, centers point[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, centers point[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, col name, centers point[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, centers float8[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, col name, centers float8[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, centers float8[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, col name, centers float8[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

-- box: the rows inside a box, bounds included

CREATE FUNCTION kd_box(rel regclass, low point, high point)
	RETURNS TABLE(nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box(rel regclass, col name, low point, high point)
	RETURNS TABLE(nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box(rel regclass, low float8[], high float8[])
	RETURNS TABLE(nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box(rel regclass, col name, low float8[], high float8[])
	RETURNS TABLE(nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box(rel regclass, b box)
	RETURNS TABLE(nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box(rel regclass, col name, b box)
	RETURNS TABLE(nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

-- observability and residency
CREATE FUNCTION kd_status(OUT device text, OUT runs_on text, OUT gpu_usable boolean,
						  OUT gpu text, OUT gpu_library text, OUT cpu_threads integer,
						  OUT trees_cached integer, OUT note text)
	AS 'MODULE_PATHNAME', 'kdgpu_status'
	LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION kd_devices()
	RETURNS TABLE(device integer, name text, compute_capability text,
				  memory_total_mb bigint, memory_free_mb bigint,
				  multiprocessors integer, driver_version text,
				  runtime_version text)
	AS 'MODULE_PATHNAME', 'kdgpu_devices'
	LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION kd_load(rel regclass, OUT points bigint, OUT dimensions integer,
						OUT device text, OUT build_ms float8, OUT cached boolean,
						OUT index regclass)
	AS 'MODULE_PATHNAME', 'kdgpu_load'
	LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_load(rel regclass, col name, OUT points bigint, OUT dimensions integer,
						OUT device text, OUT build_ms float8, OUT cached boolean,
						OUT index regclass)
	AS 'MODULE_PATHNAME', 'kdgpu_load'
	LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_unload(rel regclass) RETURNS boolean
	AS 'MODULE_PATHNAME', 'kdgpu_unload'
	LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

-- Query regions of the range operators: a ball (center, radius) and a rect
-- (low and high corners).  p <@ kd_ball(c, r) is p <-> c <= r in the metric
-- of p's <-> operator; p <@ kd_rect(lo, hi) is lo <= p <= hi, bounds
-- included.  Both are index conditions on a kdgpu index.

CREATE TYPE kd_ball AS (center float8[], radius float8);
CREATE TYPE kd_rect AS (low float8[], high float8[]);

CREATE FUNCTION kd_ball(center float8[], radius float8) RETURNS kd_ball
	AS 'SELECT ROW(center, radius)::@extschema@.kd_ball'
	LANGUAGE sql IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION kd_ball(center point, radius float8) RETURNS kd_ball
	AS 'SELECT ROW(ARRAY[center[0], center[1]], radius)::@extschema@.kd_ball'
	LANGUAGE sql IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION kd_rect(low float8[], high float8[]) RETURNS kd_rect
	AS 'SELECT ROW(low, high)::@extschema@.kd_rect'
	LANGUAGE sql IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION kd_within(p float8[], region kd_ball) RETURNS boolean
	AS 'MODULE_PATHNAME', 'kdgpu_in_ball'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kd_within(p point, region kd_ball) RETURNS boolean
	AS 'MODULE_PATHNAME', 'kdgpu_in_ball'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION kd_within(p float8[], region kd_rect) RETURNS boolean
	AS 'MODULE_PATHNAME', 'kdgpu_in_rect'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR <@ (
	LEFTARG = float8[],
	RIGHTARG = kd_ball,
	FUNCTION = kd_within,
	RESTRICT = pg_catalog.contsel,
	JOIN = pg_catalog.contjoinsel
);

CREATE OPERATOR <@ (
	LEFTARG = point,
	RIGHTARG = kd_ball,
	FUNCTION = kd_within,
	RESTRICT = pg_catalog.contsel,
	JOIN = pg_catalog.contjoinsel
);

CREATE OPERATOR <@ (
	LEFTARG = float8[],
	RIGHTARG = kd_rect,
	FUNCTION = kd_within,
	RESTRICT = pg_catalog.contsel,
	JOIN = pg_catalog.contjoinsel
);

-- The kdgpu index access method

CREATE FUNCTION kdam_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME', 'kdam_handler'
	LANGUAGE C;

CREATE ACCESS METHOD kdgpu TYPE INDEX HANDLER kdam_handler;
COMMENT ON ACCESS METHOD kdgpu IS 'exact kd-tree index for points, built on the GPU where one is usable';

CREATE OPERATOR CLASS kd_point_ops
	DEFAULT FOR TYPE point USING kdgpu AS
	OPERATOR 1 pg_catalog.<@ (point, box),
	OPERATOR 2 pg_catalog.<@ (point, circle),
	OPERATOR 3 <@ (point, kd_ball),
	OPERATOR 5 pg_catalog.<< (point, point),
	OPERATOR 6 pg_catalog.>> (point, point),
	OPERATOR 7 pg_catalog.<<| (point, point),
	OPERATOR 8 pg_catalog.|>> (point, point),
	OPERATOR 9 pg_catalog.<^ (point, point),
	OPERATOR 10 pg_catalog.>^ (point, point),
	OPERATOR 11 pg_catalog.~= (point, point),
	OPERATOR 12 pg_catalog.<@ (point, polygon),
	OPERATOR 15 pg_catalog.<-> (point, point) FOR ORDER BY pg_catalog.float_ops;

CREATE OPERATOR CLASS kd_float8_ops
	DEFAULT FOR TYPE float8[] USING kdgpu AS
	OPERATOR 3 <@ (float8[], kd_ball),
	OPERATOR 4 <@ (float8[], kd_rect),
	OPERATOR 15 <-> (float8[], float8[]) FOR ORDER BY pg_catalog.float_ops;

CREATE FUNCTION kd_index_check(index regclass) RETURNS boolean
	AS 'MODULE_PATHNAME', 'kd_index_check'
	LANGUAGE C STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_index_check(regclass) IS 'verify a kdgpu index: tree structure, and every live row indexed with its point';

CREATE FUNCTION kd_index_stats(index regclass,
	OUT tree_rows bigint, OUT pending_rows bigint, OUT dead_rows bigint,
	OUT dimension integer, OUT generation bigint, OUT pages bigint,
	OUT free_pages bigint, OUT orphan_pages bigint, OUT null_rows bigint,
	OUT outside_rows bigint)
	AS 'MODULE_PATHNAME', 'kd_index_stats'
	LANGUAGE C STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_index_stats(regclass) IS 'rows in the tree, pending and dead, dimension, generation, pages, free pages, orphaned pages (left by an interrupted fold, freed by the next VACUUM) NULL rows, and rows kept outside the tree (empty, not points, not finite, or another kind of point) of a kdgpu index';
