/*
 * kdgpu.sql
 *	  The install script of kdgpu's current version: its functions,
 *	  operators, query region types and the kdgpu index access method.
 *
 * The build installs it as kdgpu--<default_version>.sql (kdgpu.control);
 * sql/updates/ holds the scripts that bring an older install to the same
 * objects, and an update must leave exactly what this script creates
 * (test/tap/008_upgrade.pl).  A change here is a new version: raise
 * default_version and make the same change in a new update script.
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
COMMENT ON FUNCTION kd_distance(float8[], float8[]) IS
	'Euclidean distance between two float8[] points or vectors (up to 16000 coordinates), bit for bit the engine''s; NULL when either is empty';

CREATE OPERATOR <-> (
	LEFTARG = float8[],
	RIGHTARG = float8[],
	FUNCTION = kd_distance,
	COMMUTATOR = OPERATOR(<->)
);
COMMENT ON OPERATOR <-> (float8[], float8[]) IS
	'Euclidean distance between two float8[] points (kd_distance); ORDER BY p <-> q on a kdgpu index';

-- Planner support of the functions that return rows: their row counts
-- where the arguments tell them, and kdgpu's library loaded at planning
-- time, so that their streaming scan in FROM (kdgpu.stream_rows) is offered
-- from a session's first query on.
CREATE FUNCTION kdgpu_rows_support(internal)
	RETURNS internal
	AS 'MODULE_PATHNAME', 'kdgpu_rows_support'
	LANGUAGE C STRICT;
COMMENT ON FUNCTION kdgpu_rows_support(internal) IS
	'planner support of the kd_* functions that return rows: their row counts, and kdgpu loaded at planning time';

-- kNN: the k nearest rows to one point

CREATE FUNCTION kd_knn(rel regclass, query point, k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn(regclass, point, integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_ctid, distance, rank)';

CREATE FUNCTION kd_knn(rel regclass, col name, query point, k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn(regclass, name, point, integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_ctid, distance, rank)';

CREATE FUNCTION kd_knn(rel regclass, query float8[], k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn(regclass, float8[], integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_ctid, distance, rank)';

CREATE FUNCTION kd_knn(rel regclass, col name, query float8[], k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn(regclass, name, float8[], integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_ctid, distance, rank)';

-- kNN join: the k nearest rows to each point of an array

CREATE FUNCTION kd_knn_join(rel regclass, queries point[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, point[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION kd_knn_join(rel regclass, col name, queries point[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, name, point[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION kd_knn_join(rel regclass, queries float8[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, float8[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION kd_knn_join(rel regclass, col name, queries float8[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, name, float8[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_ctid, distance, rank)';

-- kNN join: the k nearest rows to each row of another table

CREATE FUNCTION kd_knn_join(rel regclass, query_rel regclass, k integer)
	RETURNS TABLE(query_ctid tid, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, regclass, integer) IS
	'the k rows of rel nearest to each row of query_rel (points of each table''s only point column); returns (query_ctid, nn_ctid, distance, rank)';

CREATE FUNCTION kd_knn_join(rel regclass, col name, query_rel regclass, query_col name, k integer)
	RETURNS TABLE(query_ctid tid, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, name, regclass, name, integer) IS
	'the k rows of rel nearest to each row of query_rel (points of columns col and query_col); returns (query_ctid, nn_ctid, distance, rank)';

-- All-kNN: every row's k nearest rows in the same table

CREATE FUNCTION kd_all_knn(rel regclass, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_ctid tid, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn(regclass, integer, boolean) IS
	'each row''s k nearest rows of rel (points of rel''s only point column); returns (query_ctid, nn_ctid, distance, rank)';

CREATE FUNCTION kd_all_knn(rel regclass, col name, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_ctid tid, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn(regclass, name, integer, boolean) IS
	'each row''s k nearest rows of rel (points of column col); returns (query_ctid, nn_ctid, distance, rank)';

CREATE FUNCTION kd_all_knn_arrays(rel regclass, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_ctid tid, nn_ctids tid[], distances float8[])
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_arrays'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn_arrays(regclass, integer, boolean) IS
	'each row''s k nearest rows of rel, one row per point with arrays (points of rel''s only point column); returns (query_ctid, nn_ctids, distances)';

CREATE FUNCTION kd_all_knn_arrays(rel regclass, col name, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_ctid tid, nn_ctids tid[], distances float8[])
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_arrays'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn_arrays(regclass, name, integer, boolean) IS
	'each row''s k nearest rows of rel, one row per point with arrays (points of column col); returns (query_ctid, nn_ctids, distances)';

-- range: the rows within a radius of one centre, or of many

CREATE FUNCTION kd_range(rel regclass, center point, radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range(regclass, point, float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_ctid, distance, rank)';

CREATE FUNCTION kd_range(rel regclass, col name, center point, radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range(regclass, name, point, float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_ctid, distance, rank)';

CREATE FUNCTION kd_range(rel regclass, center float8[], radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range(regclass, float8[], float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_ctid, distance, rank)';

CREATE FUNCTION kd_range(rel regclass, col name, center float8[], radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range(regclass, name, float8[], float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_ctid, distance, rank)';

CREATE FUNCTION kd_range_join(rel regclass, centers point[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, point[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION kd_range_join(rel regclass, col name, centers point[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, point[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION kd_range_join(rel regclass, centers point[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, point[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION kd_range_join(rel regclass, col name, centers point[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, point[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION kd_range_join(rel regclass, centers float8[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, float8[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION kd_range_join(rel regclass, col name, centers float8[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, float8[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION kd_range_join(rel regclass, centers float8[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, float8[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION kd_range_join(rel regclass, col name, centers float8[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, float8[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_ctid, distance, rank)';

-- box: the rows inside a box, bounds included

CREATE FUNCTION kd_box(rel regclass, low point, high point)
	RETURNS TABLE(nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box(regclass, point, point) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_ctid)';

CREATE FUNCTION kd_box(rel regclass, col name, low point, high point)
	RETURNS TABLE(nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box(regclass, name, point, point) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_ctid)';

CREATE FUNCTION kd_box(rel regclass, low float8[], high float8[])
	RETURNS TABLE(nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box(regclass, float8[], float8[]) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_ctid)';

CREATE FUNCTION kd_box(rel regclass, col name, low float8[], high float8[])
	RETURNS TABLE(nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box(regclass, name, float8[], float8[]) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_ctid)';

CREATE FUNCTION kd_box(rel regclass, b box)
	RETURNS TABLE(nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box(regclass, box) IS
	'the rows of rel inside box b, bounds included (points of rel''s only point column); returns (nn_ctid)';

CREATE FUNCTION kd_box(rel regclass, col name, b box)
	RETURNS TABLE(nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box(regclass, name, box) IS
	'the rows of rel inside box b, bounds included (points of column col); returns (nn_ctid)';

-- Key forms: each function above with key_col, the name of an integer
-- column (smallint, integer or bigint) that identifies the row: results
-- return it (nn_key, query_key, nn_keys) in place of the ctid, and rank
-- ties by it.  They read plain and partitioned tables.

CREATE FUNCTION kd_knn(rel regclass, query point, k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn(regclass, point, integer, name) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_knn(rel regclass, col name, query point, k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn(regclass, name, point, integer, name) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_knn(rel regclass, query float8[], k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn(regclass, float8[], integer, name) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_knn(rel regclass, col name, query float8[], k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn(regclass, name, float8[], integer, name) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_knn_join(rel regclass, queries point[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, point[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_knn_join(rel regclass, col name, queries point[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, name, point[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_knn_join(rel regclass, queries float8[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, float8[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_knn_join(rel regclass, col name, queries float8[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, name, float8[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_knn_join(rel regclass, query_rel regclass, k integer, key_col name, query_key_col name)
	RETURNS TABLE(query_key bigint, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, regclass, integer, name, name) IS
	'the k rows of rel nearest to each row of query_rel (points of each table''s only point column); returns (query_key, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_knn_join(rel regclass, col name, query_rel regclass, query_col name, k integer, key_col name, query_key_col name)
	RETURNS TABLE(query_key bigint, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, name, regclass, name, integer, name, name) IS
	'the k rows of rel nearest to each row of query_rel (points of columns col and query_col); returns (query_key, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_all_knn(rel regclass, k integer, key_col name, include_self boolean DEFAULT false)
	RETURNS TABLE(query_key bigint, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn(regclass, integer, name, boolean) IS
	'each row''s k nearest rows of rel (points of rel''s only point column); returns (query_key, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_all_knn(rel regclass, col name, k integer, key_col name, include_self boolean DEFAULT false)
	RETURNS TABLE(query_key bigint, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn(regclass, name, integer, name, boolean) IS
	'each row''s k nearest rows of rel (points of column col); returns (query_key, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_all_knn_arrays(rel regclass, k integer, key_col name, include_self boolean DEFAULT false)
	RETURNS TABLE(query_key bigint, nn_keys bigint[], distances float8[])
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_arrays'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn_arrays(regclass, integer, name, boolean) IS
	'each row''s k nearest rows of rel, one row per point with arrays (points of rel''s only point column); returns (query_key, nn_keys, distances); key_col names the rows';

CREATE FUNCTION kd_all_knn_arrays(rel regclass, col name, k integer, key_col name, include_self boolean DEFAULT false)
	RETURNS TABLE(query_key bigint, nn_keys bigint[], distances float8[])
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_arrays'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn_arrays(regclass, name, integer, name, boolean) IS
	'each row''s k nearest rows of rel, one row per point with arrays (points of column col); returns (query_key, nn_keys, distances); key_col names the rows';

CREATE FUNCTION kd_range(rel regclass, center point, radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range(regclass, point, float8, name) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_range(rel regclass, col name, center point, radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range(regclass, name, point, float8, name) IS
	'the rows of rel within radius of center (points of column col); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_range(rel regclass, center float8[], radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range(regclass, float8[], float8, name) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_range(rel regclass, col name, center float8[], radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range(regclass, name, float8[], float8, name) IS
	'the rows of rel within radius of center (points of column col); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_range_join(rel regclass, centers point[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, point[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_range_join(rel regclass, col name, centers point[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, point[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_range_join(rel regclass, centers point[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, point[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_range_join(rel regclass, col name, centers point[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, point[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_range_join(rel regclass, centers float8[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, float8[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_range_join(rel regclass, col name, centers float8[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, float8[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_range_join(rel regclass, centers float8[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, float8[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_range_join(rel regclass, col name, centers float8[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, float8[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_box(rel regclass, low point, high point, key_col name)
	RETURNS TABLE(nn_key bigint)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box(regclass, point, point, name) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_key); key_col names the rows';

CREATE FUNCTION kd_box(rel regclass, col name, low point, high point, key_col name)
	RETURNS TABLE(nn_key bigint)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box(regclass, name, point, point, name) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_key); key_col names the rows';

CREATE FUNCTION kd_box(rel regclass, low float8[], high float8[], key_col name)
	RETURNS TABLE(nn_key bigint)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box(regclass, float8[], float8[], name) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_key); key_col names the rows';

CREATE FUNCTION kd_box(rel regclass, col name, low float8[], high float8[], key_col name)
	RETURNS TABLE(nn_key bigint)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box(regclass, name, float8[], float8[], name) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_key); key_col names the rows';

CREATE FUNCTION kd_box(rel regclass, b box, key_col name)
	RETURNS TABLE(nn_key bigint)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box(regclass, box, name) IS
	'the rows of rel inside box b, bounds included (points of rel''s only point column); returns (nn_key); key_col names the rows';

CREATE FUNCTION kd_box(rel regclass, col name, b box, key_col name)
	RETURNS TABLE(nn_key bigint)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box(regclass, name, box, name) IS
	'the rows of rel inside box b, bounds included (points of column col); returns (nn_key); key_col names the rows';

-- _parts forms: each function above for partitioned tables (plain ones
-- too): a row is its partition and ctid (nn_rel and nn_ctid, query_rel and
-- query_ctid, nn_rels and nn_ctids), ties ranked by tableoid, then ctid.

CREATE FUNCTION kd_knn_parts(rel regclass, query point, k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_parts(regclass, point, integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_knn_parts(rel regclass, col name, query point, k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_parts(regclass, name, point, integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_knn_parts(rel regclass, query float8[], k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_parts(regclass, float8[], integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_knn_parts(rel regclass, col name, query float8[], k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_parts(regclass, name, float8[], integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_knn_join_parts(rel regclass, queries point[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join_parts(regclass, point[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_knn_join_parts(rel regclass, col name, queries point[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join_parts(regclass, name, point[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_knn_join_parts(rel regclass, queries float8[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join_parts(regclass, float8[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_knn_join_parts(rel regclass, col name, queries float8[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join_parts(regclass, name, float8[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_knn_join_parts(rel regclass, query_rel regclass, k integer)
	RETURNS TABLE(query_rel regclass, query_ctid tid, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join_parts(regclass, regclass, integer) IS
	'the k rows of rel nearest to each row of query_rel (points of each table''s only point column); returns (query_rel, query_ctid, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_knn_join_parts(rel regclass, col name, query_rel regclass, query_col name, k integer)
	RETURNS TABLE(query_rel regclass, query_ctid tid, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join_parts(regclass, name, regclass, name, integer) IS
	'the k rows of rel nearest to each row of query_rel (points of columns col and query_col); returns (query_rel, query_ctid, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_all_knn_parts(rel regclass, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_rel regclass, query_ctid tid, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn_parts(regclass, integer, boolean) IS
	'each row''s k nearest rows of rel (points of rel''s only point column); returns (query_rel, query_ctid, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_all_knn_parts(rel regclass, col name, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_rel regclass, query_ctid tid, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn_parts(regclass, name, integer, boolean) IS
	'each row''s k nearest rows of rel (points of column col); returns (query_rel, query_ctid, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_all_knn_arrays_parts(rel regclass, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_rel regclass, query_ctid tid, nn_rels regclass[], nn_ctids tid[], distances float8[])
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_arrays'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn_arrays_parts(regclass, integer, boolean) IS
	'each row''s k nearest rows of rel, one row per point with arrays (points of rel''s only point column); returns (query_rel, query_ctid, nn_rels, nn_ctids, distances); a row is its partition and ctid';

CREATE FUNCTION kd_all_knn_arrays_parts(rel regclass, col name, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_rel regclass, query_ctid tid, nn_rels regclass[], nn_ctids tid[], distances float8[])
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_arrays'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn_arrays_parts(regclass, name, integer, boolean) IS
	'each row''s k nearest rows of rel, one row per point with arrays (points of column col); returns (query_rel, query_ctid, nn_rels, nn_ctids, distances); a row is its partition and ctid';

CREATE FUNCTION kd_range_parts(rel regclass, center point, radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_parts(regclass, point, float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_range_parts(rel regclass, col name, center point, radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_parts(regclass, name, point, float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_range_parts(rel regclass, center float8[], radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_parts(regclass, float8[], float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_range_parts(rel regclass, col name, center float8[], radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_parts(regclass, name, float8[], float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_range_join_parts(rel regclass, centers point[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join_parts(regclass, point[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_range_join_parts(rel regclass, col name, centers point[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join_parts(regclass, name, point[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_range_join_parts(rel regclass, centers point[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join_parts(regclass, point[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_range_join_parts(rel regclass, col name, centers point[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join_parts(regclass, name, point[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_range_join_parts(rel regclass, centers float8[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join_parts(regclass, float8[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_range_join_parts(rel regclass, col name, centers float8[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join_parts(regclass, name, float8[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_range_join_parts(rel regclass, centers float8[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join_parts(regclass, float8[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_range_join_parts(rel regclass, col name, centers float8[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join_parts(regclass, name, float8[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION kd_box_parts(rel regclass, low point, high point)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box_parts(regclass, point, point) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_rel, nn_ctid); a row is its partition and ctid';

CREATE FUNCTION kd_box_parts(rel regclass, col name, low point, high point)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box_parts(regclass, name, point, point) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_rel, nn_ctid); a row is its partition and ctid';

CREATE FUNCTION kd_box_parts(rel regclass, low float8[], high float8[])
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box_parts(regclass, float8[], float8[]) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_rel, nn_ctid); a row is its partition and ctid';

CREATE FUNCTION kd_box_parts(rel regclass, col name, low float8[], high float8[])
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box_parts(regclass, name, float8[], float8[]) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_rel, nn_ctid); a row is its partition and ctid';

CREATE FUNCTION kd_box_parts(rel regclass, b box)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box_parts(regclass, box) IS
	'the rows of rel inside box b, bounds included (points of rel''s only point column); returns (nn_rel, nn_ctid); a row is its partition and ctid';

CREATE FUNCTION kd_box_parts(rel regclass, col name, b box)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_box_parts(regclass, name, box) IS
	'the rows of rel inside box b, bounds included (points of column col); returns (nn_rel, nn_ctid); a row is its partition and ctid';

-- A shard's answers to a coordinator, in binary chunks: what a coordinator
-- runs on each shard of a table whose partitions are postgres_fdw foreign
-- tables (answer_chunks.c), in a SELECT list, where their values are not
-- stored in a tuplestore.

CREATE FUNCTION kd_all_knn_chunks(rel regclass, col name, k integer, key_col name,
								  include_self boolean)
	RETURNS SETOF bytea
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_chunks'
	LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_all_knn_chunks(regclass, name, integer, name, boolean) IS
	'a shard''s points and their k nearest rows of rel, for a coordinator of postgres_fdw partitions; returns binary chunks';

CREATE FUNCTION kd_knn_join_chunks(rel regclass, col name, queries anyarray, k integer,
								   key_col name)
	RETURNS SETOF bytea
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_chunks'
	LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_knn_join_chunks(regclass, name, anyarray, integer, name) IS
	'the k rows of a shard''s rel nearest to each point of queries, for a coordinator of postgres_fdw partitions; returns binary chunks';

-- observability and residency
CREATE FUNCTION kd_status(OUT device text, OUT runs_on text, OUT gpu_usable boolean,
						  OUT gpu text, OUT gpu_library text, OUT cpu_threads integer,
						  OUT trees_cached integer, OUT note text,
						  OUT service text, OUT last_run text)
	AS 'MODULE_PATHNAME', 'kdgpu_status'
	LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_status() IS
	'one row: the kdgpu.device setting, what work runs on, whether a GPU is usable (and why not), the GPU library, CPU threads, trees cached, the GPU service and where the last batched work ran';

CREATE FUNCTION kd_devices()
	RETURNS TABLE(device integer, name text, compute_capability text,
				  memory_total_mb bigint, memory_free_mb bigint,
				  multiprocessors integer, driver_version text,
				  runtime_version text)
	AS 'MODULE_PATHNAME', 'kdgpu_devices'
	LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_devices() IS
	'one row per usable GPU: name, compute capability, memory total and free (MB), multiprocessors, driver and runtime versions';

CREATE FUNCTION kd_load(rel regclass, OUT points bigint, OUT dimensions integer,
						OUT device text, OUT build_ms float8, OUT cached boolean,
						OUT index regclass)
	AS 'MODULE_PATHNAME', 'kdgpu_load'
	LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_load(regclass) IS
	'keeps the tree of rel''s kdgpu index on the GPU, or builds one over rel''s only point column; returns (points, dimensions, device, build_ms, cached, index)';

CREATE FUNCTION kd_load(rel regclass, col name, OUT points bigint, OUT dimensions integer,
						OUT device text, OUT build_ms float8, OUT cached boolean,
						OUT index regclass)
	AS 'MODULE_PATHNAME', 'kdgpu_load'
	LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_load(regclass, name) IS
	'keeps the tree of rel''s kdgpu index on column col on the GPU, or builds one; returns (points, dimensions, device, build_ms, cached, index)';

CREATE FUNCTION kd_unload(rel regclass) RETURNS boolean
	AS 'MODULE_PATHNAME', 'kdgpu_unload'
	LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_unload(regclass) IS
	'frees the GPU copies of rel''s trees that kd_load kept; returns whether there was one';

CREATE FUNCTION kd_resident_copies()
	RETURNS TABLE(device integer, database oid, index_oid oid, relfilenode oid,
				  generation bigint, flavour text, owner_pid integer,
				  points bigint, dimensions integer, bytes bigint, hits bigint,
				  loaded_at timestamptz, last_use timestamptz)
	AS 'MODULE_PATHNAME', 'kdgpu_resident_copies'
	LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_resident_copies() IS
	'the device copies the GPU service holds, one row per copy and device, by database and index oid (the kd_resident view names them)';

-- the device copies the GPU service holds: an index's for every session
-- (owner_pid NULL), or one backend's tree built for a query
CREATE VIEW kd_resident AS
	SELECT r.device, d.datname AS database,
		   CASE WHEN r.database = (SELECT oid FROM pg_database
								   WHERE datname = current_database())
				THEN r.index_oid::regclass END AS index,
		   r.relfilenode, r.generation, r.flavour, r.owner_pid, r.points,
		   r.dimensions, r.bytes, r.hits, r.loaded_at, r.last_use
	FROM kd_resident_copies() r
	LEFT JOIN pg_database d ON d.oid = r.database;
COMMENT ON VIEW kd_resident IS
	'the device copies the GPU service holds: an index''s for every session (owner_pid NULL), or one backend''s tree built for a query';

-- Query regions of the range operators: a ball (center, radius) and a rect
-- (low and high corners).  p <@ kd_ball(c, r) is p <-> c <= r in the metric
-- of p's <-> operator; p <@ kd_rect(lo, hi) is lo <= p <= hi, bounds
-- included.  Both are index conditions on a kdgpu index.

CREATE TYPE kd_ball AS (center float8[], radius float8);
COMMENT ON TYPE kd_ball IS
	'a ball query region (center, radius): p <@ kd_ball(c, r) is p <-> c <= r';
CREATE TYPE kd_rect AS (low float8[], high float8[]);
COMMENT ON TYPE kd_rect IS
	'a box query region (low, high corners): p <@ kd_rect(lo, hi) is lo <= p <= hi, bounds included';

CREATE FUNCTION kd_ball(center float8[], radius float8) RETURNS kd_ball
	AS 'MODULE_PATHNAME', 'kdgpu_region'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION kd_ball(float8[], float8) IS
	'the ball of center and radius, for p <@ kd_ball(center, radius); returns kd_ball';

CREATE FUNCTION kd_ball(center point, radius float8) RETURNS kd_ball
	AS 'MODULE_PATHNAME', 'kdgpu_ball_point'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION kd_ball(point, float8) IS
	'the ball of a point center and radius, for p <@ kd_ball(center, radius); returns kd_ball';

CREATE FUNCTION kd_rect(low float8[], high float8[]) RETURNS kd_rect
	AS 'MODULE_PATHNAME', 'kdgpu_region'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION kd_rect(float8[], float8[]) IS
	'the box from low to high, for p <@ kd_rect(low, high); returns kd_rect';

CREATE FUNCTION kd_within(p float8[], region kd_ball) RETURNS boolean
	AS 'MODULE_PATHNAME', 'kdgpu_in_ball'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION kd_within(float8[], kd_ball) IS
	'true when p <-> center <= radius: the <@ operator';

CREATE FUNCTION kd_within(p point, region kd_ball) RETURNS boolean
	AS 'MODULE_PATHNAME', 'kdgpu_in_ball'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION kd_within(point, kd_ball) IS
	'true when p <-> center <= radius: the <@ operator';

CREATE FUNCTION kd_within(p float8[], region kd_rect) RETURNS boolean
	AS 'MODULE_PATHNAME', 'kdgpu_in_rect'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION kd_within(float8[], kd_rect) IS
	'true when low <= p <= high in every dimension: the <@ operator';

CREATE OPERATOR <@ (
	LEFTARG = float8[],
	RIGHTARG = kd_ball,
	FUNCTION = kd_within,
	RESTRICT = pg_catalog.contsel,
	JOIN = pg_catalog.contjoinsel
);
COMMENT ON OPERATOR <@ (float8[], kd_ball) IS
	'p <@ kd_ball(c, r): p within r of c (kd_within); an index condition of kdgpu indexes';

CREATE OPERATOR <@ (
	LEFTARG = point,
	RIGHTARG = kd_ball,
	FUNCTION = kd_within,
	RESTRICT = pg_catalog.contsel,
	JOIN = pg_catalog.contjoinsel
);
COMMENT ON OPERATOR <@ (point, kd_ball) IS
	'p <@ kd_ball(c, r): p within r of c (kd_within); an index condition of kdgpu indexes';

CREATE OPERATOR <@ (
	LEFTARG = float8[],
	RIGHTARG = kd_rect,
	FUNCTION = kd_within,
	RESTRICT = pg_catalog.contsel,
	JOIN = pg_catalog.contjoinsel
);
COMMENT ON OPERATOR <@ (float8[], kd_rect) IS
	'p <@ kd_rect(lo, hi): lo <= p <= hi, bounds included (kd_within); an index condition of kdgpu indexes';

-- The kdgpu index access method

CREATE FUNCTION kdam_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME', 'kdam_handler'
	LANGUAGE C;
COMMENT ON FUNCTION kdam_handler(internal) IS
	'the handler of the kdgpu index access method';

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
COMMENT ON OPERATOR CLASS kd_point_ops USING kdgpu IS
	'kdgpu index on point (default): box, circle, polygon, ball and position searches, and ORDER BY <->';

CREATE OPERATOR CLASS kd_float8_ops
	DEFAULT FOR TYPE float8[] USING kdgpu AS
	OPERATOR 3 <@ (float8[], kd_ball),
	OPERATOR 4 <@ (float8[], kd_rect),
	OPERATOR 15 <-> (float8[], float8[]) FOR ORDER BY pg_catalog.float_ops;
COMMENT ON OPERATOR CLASS kd_float8_ops USING kdgpu IS
	'kdgpu index on float8[] points (default): ball and box searches, and ORDER BY <->';

CREATE FUNCTION kd_index_check(index regclass) RETURNS boolean
	AS 'MODULE_PATHNAME', 'kd_index_check'
	LANGUAGE C STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_index_check(regclass) IS 'verify a kdgpu index: tree structure, and every live row indexed with its point';

CREATE FUNCTION kd_index_stats(index regclass,
	OUT tree_rows bigint, OUT pending_rows bigint, OUT dead_rows bigint,
	OUT dimension integer, OUT generation bigint, OUT pages bigint,
	OUT free_pages bigint, OUT orphan_pages bigint, OUT null_rows bigint,
	OUT outside_rows bigint, OUT trees integer)
	AS 'MODULE_PATHNAME', 'kd_index_stats'
	LANGUAGE C STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_index_stats(regclass) IS 'rows in the trees, pending and dead, dimension, generation, pages, free pages, orphaned pages (left by an interrupted build, flush or merge, freed by the next VACUUM), NULL rows, rows kept outside the trees (empty, not points, not finite, or another kind of point), and live trees of a kdgpu index';

-- Clustering: window functions that label each row of a partition with
-- its cluster, exactly and deterministically (src/local/cluster.c), for
-- point, float8[], geometry and geography columns
CREATE FUNCTION kd_cluster_dbscan(col anyelement, eps float8, minpoints integer)
	RETURNS integer
	AS 'MODULE_PATHNAME', 'kdgpu_cluster_dbscan'
	LANGUAGE C WINDOW STABLE PARALLEL SAFE;
COMMENT ON FUNCTION kd_cluster_dbscan(anyelement, float8, integer) IS
	'window function: the row''s DBSCAN cluster (from 0, in the order of the clusters'' first rows) among the partition''s points, as ST_ClusterDBSCAN; NULL for noise and rows with no point';

CREATE FUNCTION kd_cluster_within(col anyelement, distance float8)
	RETURNS integer
	AS 'MODULE_PATHNAME', 'kdgpu_cluster_within'
	LANGUAGE C WINDOW STABLE PARALLEL SAFE;
COMMENT ON FUNCTION kd_cluster_within(anyelement, float8) IS
	'window function: the row''s component (from 0, in the order of the components'' first rows) of the partition''s points within distance of each other, as ST_ClusterWithinWin; NULL for rows with no point';

-- The same labels for every row of a table, its rows taken as the other
-- kd_* functions take them (from its kdgpu index where it has one)
CREATE FUNCTION kd_dbscan(rel regclass, eps float8, minpoints integer)
	RETURNS TABLE(nn_ctid tid, cluster integer)
	AS 'MODULE_PATHNAME', 'kdgpu_dbscan'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_dbscan(regclass, float8, integer) IS
	'every row''s DBSCAN cluster among the rows of rel, as kd_cluster_dbscan over the whole table in ctid order; NULL for noise (points of rel''s only point column); returns (nn_ctid, cluster)';

CREATE FUNCTION kd_dbscan(rel regclass, col name, eps float8, minpoints integer)
	RETURNS TABLE(nn_ctid tid, cluster integer)
	AS 'MODULE_PATHNAME', 'kdgpu_dbscan'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_dbscan(regclass, name, float8, integer) IS
	'every row''s DBSCAN cluster among the rows of rel, as kd_cluster_dbscan over the whole table in ctid order; NULL for noise (points of column col); returns (nn_ctid, cluster)';

CREATE FUNCTION kd_dbscan(rel regclass, eps float8, minpoints integer, key_col name)
	RETURNS TABLE(nn_key bigint, cluster integer)
	AS 'MODULE_PATHNAME', 'kdgpu_dbscan'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_dbscan(regclass, float8, integer, name) IS
	'every row''s DBSCAN cluster among the rows of rel, as kd_cluster_dbscan over the whole table in ctid order; NULL for noise (points of rel''s only point column); returns (nn_key, cluster); key_col names the rows';

CREATE FUNCTION kd_dbscan(rel regclass, col name, eps float8, minpoints integer, key_col name)
	RETURNS TABLE(nn_key bigint, cluster integer)
	AS 'MODULE_PATHNAME', 'kdgpu_dbscan'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_dbscan(regclass, name, float8, integer, name) IS
	'every row''s DBSCAN cluster among the rows of rel, as kd_cluster_dbscan over the whole table in ctid order; NULL for noise (points of column col); returns (nn_key, cluster); key_col names the rows';

CREATE FUNCTION kd_components(rel regclass, distance float8)
	RETURNS TABLE(nn_ctid tid, cluster integer)
	AS 'MODULE_PATHNAME', 'kdgpu_components'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_components(regclass, float8) IS
	'every row''s component of the rows of rel within distance of each other, as kd_cluster_within over the whole table in ctid order (points of rel''s only point column); returns (nn_ctid, cluster)';

CREATE FUNCTION kd_components(rel regclass, col name, distance float8)
	RETURNS TABLE(nn_ctid tid, cluster integer)
	AS 'MODULE_PATHNAME', 'kdgpu_components'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_components(regclass, name, float8) IS
	'every row''s component of the rows of rel within distance of each other, as kd_cluster_within over the whole table in ctid order (points of column col); returns (nn_ctid, cluster)';

CREATE FUNCTION kd_components(rel regclass, distance float8, key_col name)
	RETURNS TABLE(nn_key bigint, cluster integer)
	AS 'MODULE_PATHNAME', 'kdgpu_components'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_components(regclass, float8, name) IS
	'every row''s component of the rows of rel within distance of each other, as kd_cluster_within over the whole table in ctid order (points of rel''s only point column); returns (nn_key, cluster); key_col names the rows';

CREATE FUNCTION kd_components(rel regclass, col name, distance float8, key_col name)
	RETURNS TABLE(nn_key bigint, cluster integer)
	AS 'MODULE_PATHNAME', 'kdgpu_components'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_components(regclass, name, float8, name) IS
	'every row''s component of the rows of rel within distance of each other, as kd_cluster_within over the whole table in ctid order (points of column col); returns (nn_key, cluster); key_col names the rows';

-- Distance joins: every pair of a table's rows within a distance, once
CREATE FUNCTION kd_pairs_within(rel regclass, distance float8)
	RETURNS TABLE(query_ctid tid, nn_ctid tid, distance float8)
	AS 'MODULE_PATHNAME', 'kdgpu_pairs_within'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_pairs_within(regclass, float8) IS
	'every pair of rows of rel within distance of each other, once (points of rel''s only point column); returns (query_ctid, nn_ctid, distance), query_ctid < nn_ctid';

CREATE FUNCTION kd_pairs_within(rel regclass, col name, distance float8)
	RETURNS TABLE(query_ctid tid, nn_ctid tid, distance float8)
	AS 'MODULE_PATHNAME', 'kdgpu_pairs_within'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_pairs_within(regclass, name, float8) IS
	'every pair of rows of rel within distance of each other, once (points of column col); returns (query_ctid, nn_ctid, distance), query_ctid < nn_ctid';

CREATE FUNCTION kd_pairs_within(rel regclass, distance float8, key_col name)
	RETURNS TABLE(query_key bigint, nn_key bigint, distance float8)
	AS 'MODULE_PATHNAME', 'kdgpu_pairs_within'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_pairs_within(regclass, float8, name) IS
	'every pair of rows of rel within distance of each other, once (points of rel''s only point column); returns (query_key, nn_key, distance), query_key < nn_key; key_col names the rows';

CREATE FUNCTION kd_pairs_within(rel regclass, col name, distance float8, key_col name)
	RETURNS TABLE(query_key bigint, nn_key bigint, distance float8)
	AS 'MODULE_PATHNAME', 'kdgpu_pairs_within'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_pairs_within(regclass, name, float8, name) IS
	'every pair of rows of rel within distance of each other, once (points of column col); returns (query_key, nn_key, distance), query_key < nn_key; key_col names the rows';

-- Range joins of two tables: every row of query_rel with the rows of rel
-- within a radius of it (no _parts form)
CREATE FUNCTION kd_range_join(rel regclass, query_rel regclass, radius float8)
	RETURNS TABLE(query_ctid tid, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, regclass, float8) IS
	'the rows of rel within radius of each row of query_rel (points of each table''s only point column); returns (query_ctid, nn_ctid, distance, rank)';

CREATE FUNCTION kd_range_join(rel regclass, col name, query_rel regclass, query_col name, radius float8)
	RETURNS TABLE(query_ctid tid, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, regclass, name, float8) IS
	'the rows of rel within radius of each row of query_rel (points of columns col and query_col); returns (query_ctid, nn_ctid, distance, rank)';

CREATE FUNCTION kd_range_join(rel regclass, query_rel regclass, radius float8, key_col name, query_key_col name)
	RETURNS TABLE(query_key bigint, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, regclass, float8, name, name) IS
	'the rows of rel within radius of each row of query_rel (points of each table''s only point column); returns (query_key, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_range_join(rel regclass, col name, query_rel regclass, query_col name, radius float8, key_col name, query_key_col name)
	RETURNS TABLE(query_key bigint, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, regclass, name, float8, name, name) IS
	'the rows of rel within radius of each row of query_rel (points of columns col and query_col); returns (query_key, nn_key, distance, rank); key_col names the rows';

-- Vectors of any dimension: float8[] columns of up to 16000 coordinates,
-- searched by the kNN and radius functions under a metric.  A column of
-- more than 8 coordinates, or a metric other than l2, is searched flat:
-- every query against every row, exactly, on the GPU where one is usable.

CREATE TYPE kd_metric AS ENUM ('l2', 'l1', 'linf', 'cosine');
COMMENT ON TYPE kd_metric IS
	'a distance the kNN functions rank vectors by: l2 (<->), l1 (<+>), linf (kd_linf_distance) or cosine (<=>)';

CREATE FUNCTION kd_l1_distance(a float8[], b float8[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'kdgpu_l1_distance'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION kd_l1_distance(float8[], float8[]) IS
	'L1 (taxicab) distance between two float8[] vectors, bit for bit the flat search''s; NULL when either is empty';

CREATE FUNCTION kd_linf_distance(a float8[], b float8[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'kdgpu_linf_distance'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION kd_linf_distance(float8[], float8[]) IS
	'L-infinity distance (the largest coordinate difference) between two float8[] vectors; NULL when either is empty';

CREATE FUNCTION kd_cosine_distance(a float8[], b float8[]) RETURNS float8
	AS 'MODULE_PATHNAME', 'kdgpu_cosine_distance'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION kd_cosine_distance(float8[], float8[]) IS
	'cosine distance (1 - cosine of the angle) between two float8[] vectors; an error for a zero vector, NULL when either is empty';

CREATE OPERATOR <+> (
	LEFTARG = float8[],
	RIGHTARG = float8[],
	FUNCTION = kd_l1_distance,
	COMMUTATOR = OPERATOR(<+>)
);
COMMENT ON OPERATOR <+> (float8[], float8[]) IS
	'L1 distance between two float8[] vectors (kd_l1_distance)';

CREATE OPERATOR <=> (
	LEFTARG = float8[],
	RIGHTARG = float8[],
	FUNCTION = kd_cosine_distance,
	COMMUTATOR = OPERATOR(<=>)
);
COMMENT ON OPERATOR <=> (float8[], float8[]) IS
	'cosine distance between two float8[] vectors (kd_cosine_distance)';

-- The kdvec index access method: exact ORDER BY over float8[] vectors

CREATE FUNCTION kdvam_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME', 'kdvam_handler'
	LANGUAGE C;
COMMENT ON FUNCTION kdvam_handler(internal) IS
	'the handler of the kdvec index access method';

CREATE ACCESS METHOD kdvec TYPE INDEX HANDLER kdvam_handler;
COMMENT ON ACCESS METHOD kdvec IS 'exact vantage-point tree index for float8[] vectors of any one dimension up to 1000: ORDER BY v <-> q or v <+> q';

CREATE OPERATOR CLASS kd_vector_ops
	DEFAULT FOR TYPE float8[] USING kdvec AS
	OPERATOR 1 <-> (float8[], float8[]) FOR ORDER BY pg_catalog.float_ops;
COMMENT ON OPERATOR CLASS kd_vector_ops USING kdvec IS
	'kdvec index on float8[] vectors (default): ORDER BY <-> (Euclidean distance)';

CREATE OPERATOR CLASS kd_vector_l1_ops
	FOR TYPE float8[] USING kdvec AS
	OPERATOR 2 <+> (float8[], float8[]) FOR ORDER BY pg_catalog.float_ops;
COMMENT ON OPERATOR CLASS kd_vector_l1_ops USING kdvec IS
	'kdvec index on float8[] vectors: ORDER BY <+> (L1 distance)';

CREATE FUNCTION kd_knn(rel regclass, col name, query float8[], k integer, metric kd_metric)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn(regclass, name, float8[], integer, kd_metric) IS
	'the k rows of rel nearest to query under metric (vectors of column col); returns (nn_ctid, distance, rank)';

CREATE FUNCTION kd_knn(rel regclass, col name, query float8[], k integer, metric kd_metric, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn(regclass, name, float8[], integer, kd_metric, name) IS
	'the k rows of rel nearest to query under metric (vectors of column col); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_knn_join(rel regclass, col name, queries float8[], k integer, metric kd_metric)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, name, float8[], integer, kd_metric) IS
	'the k rows of rel nearest to each row of queries under metric (vectors of column col); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION kd_knn_join(rel regclass, col name, queries float8[], k integer, metric kd_metric, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, name, float8[], integer, kd_metric, name) IS
	'the k rows of rel nearest to each row of queries under metric (vectors of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_knn_join(rel regclass, col name, query_rel regclass, query_col name, k integer, metric kd_metric)
	RETURNS TABLE(query_ctid tid, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, name, regclass, name, integer, kd_metric) IS
	'the k rows of rel nearest to each row of query_rel under metric (vectors of columns col and query_col); returns (query_ctid, nn_ctid, distance, rank)';

CREATE FUNCTION kd_knn_join(rel regclass, col name, query_rel regclass, query_col name, k integer, metric kd_metric, key_col name, query_key_col name)
	RETURNS TABLE(query_key bigint, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_knn_join(regclass, name, regclass, name, integer, kd_metric, name, name) IS
	'the k rows of rel nearest to each row of query_rel under metric (vectors of columns col and query_col); returns (query_key, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_all_knn(rel regclass, col name, k integer, metric kd_metric, include_self boolean DEFAULT false)
	RETURNS TABLE(query_ctid tid, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn(regclass, name, integer, kd_metric, boolean) IS
	'each row''s k nearest rows of rel under metric (vectors of column col); returns (query_ctid, nn_ctid, distance, rank)';

CREATE FUNCTION kd_all_knn(rel regclass, col name, k integer, metric kd_metric, key_col name, include_self boolean DEFAULT false)
	RETURNS TABLE(query_key bigint, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn(regclass, name, integer, kd_metric, name, boolean) IS
	'each row''s k nearest rows of rel under metric (vectors of column col); returns (query_key, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_all_knn_arrays(rel regclass, col name, k integer, metric kd_metric, include_self boolean DEFAULT false)
	RETURNS TABLE(query_ctid tid, nn_ctids tid[], distances float8[])
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_arrays'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn_arrays(regclass, name, integer, kd_metric, boolean) IS
	'each row''s k nearest rows of rel under metric, one row per vector with arrays (vectors of column col); returns (query_ctid, nn_ctids, distances)';

CREATE FUNCTION kd_all_knn_arrays(rel regclass, col name, k integer, metric kd_metric, key_col name, include_self boolean DEFAULT false)
	RETURNS TABLE(query_key bigint, nn_keys bigint[], distances float8[])
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_arrays'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_all_knn_arrays(regclass, name, integer, kd_metric, name, boolean) IS
	'each row''s k nearest rows of rel under metric, one row per vector with arrays (vectors of column col); returns (query_key, nn_keys, distances); key_col names the rows';

CREATE FUNCTION kd_range(rel regclass, col name, center float8[], radius float8, metric kd_metric)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range(regclass, name, float8[], float8, kd_metric) IS
	'the rows of rel within radius of center under metric (vectors of column col); returns (nn_ctid, distance, rank)';

CREATE FUNCTION kd_range(rel regclass, col name, center float8[], radius float8, metric kd_metric, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range(regclass, name, float8[], float8, kd_metric, name) IS
	'the rows of rel within radius of center under metric (vectors of column col); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_range_join(rel regclass, col name, centers float8[], radius float8, metric kd_metric)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, float8[], float8, kd_metric) IS
	'the rows of rel within radius of each row of centers under metric (vectors of column col); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION kd_range_join(rel regclass, col name, centers float8[], radius float8, metric kd_metric, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, float8[], float8, kd_metric, name) IS
	'the rows of rel within radius of each row of centers under metric (vectors of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_range_join(rel regclass, col name, centers float8[], radii float8[], metric kd_metric)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, float8[], float8[], kd_metric) IS
	'the rows of rel within the radius of each row of centers, one radius each, under metric (vectors of column col); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION kd_range_join(rel regclass, col name, centers float8[], radii float8[], metric kd_metric, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, float8[], float8[], kd_metric, name) IS
	'the rows of rel within the radius of each row of centers, one radius each, under metric (vectors of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION kd_range_join(rel regclass, col name, query_rel regclass, query_col name, radius float8, metric kd_metric)
	RETURNS TABLE(query_ctid tid, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, regclass, name, float8, kd_metric) IS
	'the rows of rel within radius of each row of query_rel under metric (vectors of columns col and query_col); returns (query_ctid, nn_ctid, distance, rank)';

CREATE FUNCTION kd_range_join(rel regclass, col name, query_rel regclass, query_col name, radius float8, metric kd_metric, key_col name, query_key_col name)
	RETURNS TABLE(query_key bigint, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION kd_range_join(regclass, name, regclass, name, float8, kd_metric, name, name) IS
	'the rows of rel within radius of each row of query_rel under metric (vectors of columns col and query_col); returns (query_key, nn_key, distance, rank); key_col names the rows';
