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
 * and kd_range_join takes its centres from another table too.  The kNN
 * functions search float8[] vectors of up to 16000 coordinates, under the
 * metric a kd_metric argument names (l2, l1, linf, cosine), with the
 * distance functions and operators (<+>, <=>) that rank them.
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

COMMENT ON FUNCTION kd_distance(float8[], float8[]) IS
	'Euclidean distance between two float8[] points or vectors (up to 16000 coordinates), bit for bit the engine''s; NULL when either is empty';

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
