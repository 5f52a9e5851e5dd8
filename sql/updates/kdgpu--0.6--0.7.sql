/*
 * kdgpu--0.6--0.7.sql
 *	  ALTER EXTENSION kdgpu UPDATE from 0.6: clustering and the pairs of
 *	  rows within a distance.
 *
 * kd_cluster_dbscan and kd_cluster_within label each row of a window
 * partition with its DBSCAN cluster or its component of the rows within a
 * distance of each other (src/local/cluster.c); kd_dbscan and
 * kd_components give the same labels for every row of a table;
 * kd_pairs_within returns every pair of a table's rows within a distance,
 * and kd_range_join takes its centres from another table too.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kdgpu UPDATE TO '0.7'" to load this file. \quit

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
