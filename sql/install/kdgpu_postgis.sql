/*
 * kdgpu_postgis.sql
 *	  The install script of kdgpu_postgis's current version: the kd_*
 *	  functions for geometry and geography points, kd_dwithin, and operator
 *	  classes of the kdgpu index access method for geometry and geography
 *	  points.
 *
 * The build installs it as kdgpu_postgis--<default_version>.sql
 * (kdgpu_postgis.control); sql/updates/ holds the scripts that bring an
 * older install to the same objects (test/tap/008_upgrade.pl), so that a
 * change here is a new version and a new update script.  The C code
 * lives in kdgpu.so: it reads PostGIS's serialized values by their
 * documented layout and does not link PostGIS.  The functions that return
 * rows take kdgpu's planner support function, as kdgpu's own do.
 */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION kdgpu_postgis" to load this file. \quit

-- Names in this script (PostGIS's types, operators and functions, kdgpu's
-- types) are looked up in pg_catalog, then PostGIS's and kdgpu's schemas,
-- and only then in the schema this extension goes into, so that nothing
-- another role placed there can stand in for them; the extension's own
-- objects are created in @extschema@ by name.  CREATE EXTENSION restores
-- the search_path afterwards; kd_ball(geometry) keeps this one.
SELECT pg_catalog.set_config('search_path', pg_catalog.format('pg_catalog, %I, %I, %I',
	(SELECT n.nspname FROM pg_catalog.pg_extension e
	   JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'postgis'),
	(SELECT n.nspname FROM pg_catalog.pg_extension e
	   JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'kdgpu'),
	'@extschema@'), true);

-- the planner support function of the functions that return rows is
-- kdgpu's (kdgpu 0.3 on)
DO $$
BEGIN
	IF NOT EXISTS (
		SELECT FROM pg_catalog.pg_extension e
		  JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
		 WHERE e.extname = 'kdgpu'
		   AND pg_catalog.to_regprocedure(pg_catalog.format('%I.kdgpu_rows_support(internal)',
		                                                    n.nspname)) IS NOT NULL) THEN
		RAISE EXCEPTION 'kdgpu_postgis 0.3 needs kdgpu 0.3'
			USING HINT = 'Run ALTER EXTENSION kdgpu UPDATE first.';
	END IF;
END
$$;

-- geometry points

CREATE FUNCTION @extschema@.kd_knn(rel regclass, query geometry, k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, geometry, integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_knn(rel regclass, col name, query geometry, k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, name, geometry, integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, queries geometry[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, geometry[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, col name, queries geometry[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, name, geometry[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_range(rel regclass, center geometry, radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range(regclass, geometry, float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_range(rel regclass, col name, center geometry, radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range(regclass, name, geometry, float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geometry[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geometry[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geometry[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geometry[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geometry[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geometry[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geometry[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geometry[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_ctid, distance, rank)';

-- geography points

CREATE FUNCTION @extschema@.kd_knn(rel regclass, query geography, k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, geography, integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_knn(rel regclass, col name, query geography, k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, name, geography, integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, queries geography[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, geography[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, col name, queries geography[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, name, geography[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_range(rel regclass, center geography, radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range(regclass, geography, float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_range(rel regclass, col name, center geography, radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range(regclass, name, geography, float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geography[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geography[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geography[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geography[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geography[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geography[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geography[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geography[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_ctid, distance, rank)';

CREATE FUNCTION @extschema@.kd_box(rel regclass, low geometry, high geometry)
	RETURNS TABLE(nn_ctid tid)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_box(regclass, geometry, geometry) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_ctid)';

CREATE FUNCTION @extschema@.kd_box(rel regclass, col name, low geometry, high geometry)
	RETURNS TABLE(nn_ctid tid)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_box(regclass, name, geometry, geometry) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_ctid)';

CREATE FUNCTION @extschema@.kd_box(rel regclass, region geometry)
	RETURNS TABLE(nn_ctid tid)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_box(regclass, geometry) IS
	'the rows of rel whose x and y lie in region''s box, bounds included, as && (points of rel''s only point column; a box2d or ST_MakeEnvelope); returns (nn_ctid)';

CREATE FUNCTION @extschema@.kd_box(rel regclass, col name, region geometry)
	RETURNS TABLE(nn_ctid tid)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_box(regclass, name, geometry) IS
	'the rows of rel whose x and y lie in region''s box, bounds included, as && (points of column col; a box2d or ST_MakeEnvelope); returns (nn_ctid)';

-- key forms of the functions above (sql/install/kdgpu.sql)

CREATE FUNCTION @extschema@.kd_knn(rel regclass, query geometry, k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, geometry, integer, name) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_knn(rel regclass, col name, query geometry, k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, name, geometry, integer, name) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, queries geometry[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, geometry[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, col name, queries geometry[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, name, geometry[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_range(rel regclass, center geometry, radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range(regclass, geometry, float8, name) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_range(rel regclass, col name, center geometry, radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range(regclass, name, geometry, float8, name) IS
	'the rows of rel within radius of center (points of column col); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geometry[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geometry[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geometry[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geometry[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geometry[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geometry[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geometry[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geometry[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_knn(rel regclass, query geography, k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, geography, integer, name) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_knn(rel regclass, col name, query geography, k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, name, geography, integer, name) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, queries geography[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, geography[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, col name, queries geography[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, name, geography[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_range(rel regclass, center geography, radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range(regclass, geography, float8, name) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_range(rel regclass, col name, center geography, radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range(regclass, name, geography, float8, name) IS
	'the rows of rel within radius of center (points of column col); returns (nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geography[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geography[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geography[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geography[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geography[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geography[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geography[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geography[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';

CREATE FUNCTION @extschema@.kd_box(rel regclass, low geometry, high geometry, key_col name)
	RETURNS TABLE(nn_key bigint)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_box(regclass, geometry, geometry, name) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_key); key_col names the rows';

CREATE FUNCTION @extschema@.kd_box(rel regclass, col name, low geometry, high geometry, key_col name)
	RETURNS TABLE(nn_key bigint)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_box(regclass, name, geometry, geometry, name) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_key); key_col names the rows';

-- _parts forms of the functions above (sql/install/kdgpu.sql)

CREATE FUNCTION @extschema@.kd_knn_parts(rel regclass, query geometry, k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_parts(regclass, geometry, integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_knn_parts(rel regclass, col name, query geometry, k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_parts(regclass, name, geometry, integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_knn_join_parts(rel regclass, queries geometry[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_join_parts(regclass, geometry[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_knn_join_parts(rel regclass, col name, queries geometry[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_join_parts(regclass, name, geometry[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_range_parts(rel regclass, center geometry, radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_parts(regclass, geometry, float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_range_parts(rel regclass, col name, center geometry, radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_parts(regclass, name, geometry, float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, centers geometry[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, geometry[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, col name, centers geometry[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, name, geometry[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, centers geometry[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, geometry[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, col name, centers geometry[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, name, geometry[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_knn_parts(rel regclass, query geography, k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_parts(regclass, geography, integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_knn_parts(rel regclass, col name, query geography, k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_parts(regclass, name, geography, integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_knn_join_parts(rel regclass, queries geography[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_join_parts(regclass, geography[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_knn_join_parts(rel regclass, col name, queries geography[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_knn_join_parts(regclass, name, geography[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_range_parts(rel regclass, center geography, radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_parts(regclass, geography, float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_range_parts(rel regclass, col name, center geography, radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_parts(regclass, name, geography, float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, centers geography[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, geography[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, col name, centers geography[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, name, geography[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, centers geography[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, geography[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, col name, centers geography[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, name, geography[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_box_parts(rel regclass, low geometry, high geometry)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_box_parts(regclass, geometry, geometry) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_rel, nn_ctid); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_box_parts(rel regclass, col name, low geometry, high geometry)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_box_parts(regclass, name, geometry, geometry) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_rel, nn_ctid); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_box_parts(rel regclass, region geometry)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_box_parts(regclass, geometry) IS
	'the rows of rel whose x and y lie in region''s box, bounds included, as && (points of rel''s only point column; a box2d or ST_MakeEnvelope); returns (nn_rel, nn_ctid); a row is its partition and ctid';

CREATE FUNCTION @extschema@.kd_box_parts(rel regclass, col name, region geometry)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
	SUPPORT kdgpu_rows_support;
COMMENT ON FUNCTION @extschema@.kd_box_parts(regclass, name, geometry) IS
	'the rows of rel whose x and y lie in region''s box, bounds included, as && (points of column col; a box2d or ST_MakeEnvelope); returns (nn_rel, nn_ctid); a row is its partition and ctid';

-- geom <@ kd_ball(center, radius): x and y within radius of center, the
-- radius search of a kd_geometry_ops index (PostGIS and kdgpu functions are
-- found through the search path of this extension's creation)
CREATE FUNCTION @extschema@.kd_ball(center geometry, radius float8) RETURNS kd_ball
	AS 'SELECT ROW(ARRAY[ST_X(center), ST_Y(center)], radius)::kd_ball'
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	SET search_path FROM CURRENT;
COMMENT ON FUNCTION @extschema@.kd_ball(geometry, float8) IS
	'the ball of a geometry point''s x and y and radius, for geom <@ kd_ball(center, radius); returns kd_ball';

CREATE FUNCTION @extschema@.kd_within(p geometry, region kd_ball) RETURNS boolean
	AS '$libdir/kdgpu', 'kdgpu_geometry_in_ball'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.kd_within(geometry, kd_ball) IS
	'true when the x and y of point p are within radius of center: the <@ operator';

CREATE OPERATOR @extschema@.<@ (
	LEFTARG = geometry,
	RIGHTARG = kd_ball,
	FUNCTION = kd_within,
	RESTRICT = pg_catalog.contsel,
	JOIN = pg_catalog.contjoinsel
);
COMMENT ON OPERATOR @extschema@.<@ (geometry, kd_ball) IS
	'geom <@ kd_ball(c, r): x and y within r of c (kd_within); the radius search of kd_geometry_ops';

-- kd_dwithin: within a radius, with an index condition for kdgpu indexes
CREATE FUNCTION @extschema@.kd_dwithin_support(internal) RETURNS internal
	AS '$libdir/kdgpu', 'kdgpu_dwithin_support'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.kd_dwithin_support(internal) IS
	'planner support of kd_dwithin: its index condition on a kdgpu index';

CREATE FUNCTION @extschema@.kd_dwithin(a geometry, b geometry, radius float8) RETURNS boolean
	AS '$libdir/kdgpu', 'kdgpu_dwithin'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT kd_dwithin_support;
COMMENT ON FUNCTION @extschema@.kd_dwithin(geometry, geometry, float8) IS
	'true when a and b are within radius of each other in 2-D, as ST_DWithin (any geometry); an index condition on a kdgpu index';

CREATE FUNCTION @extschema@.kd_dwithin(a geography, b geography, radius float8) RETURNS boolean
	AS '$libdir/kdgpu', 'kdgpu_dwithin'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT kd_dwithin_support;
COMMENT ON FUNCTION @extschema@.kd_dwithin(geography, geography, float8) IS
	'true when a and b are within radius metres on the sphere, as ST_DWithin(a, b, radius, false); an index condition on a kdgpu index';

CREATE FUNCTION @extschema@.kd_dwithin(a geography, b geography, radius float8, use_spheroid boolean)
	RETURNS boolean
	AS '$libdir/kdgpu', 'kdgpu_dwithin'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT kd_dwithin_support;
COMMENT ON FUNCTION @extschema@.kd_dwithin(geography, geography, float8, boolean) IS
	'true when a and b are within radius metres on the spheroid (use_spheroid) or the sphere, as ST_DWithin(a, b, radius, use_spheroid); an index condition on a kdgpu index';

-- operator classes of the kdgpu access method
CREATE OPERATOR CLASS @extschema@.kd_geometry_ops
	DEFAULT FOR TYPE geometry USING kdgpu AS
	OPERATOR 1 && (geometry, geometry),
	OPERATOR 3 <@ (geometry, kd_ball),
	OPERATOR 5 << (geometry, geometry),
	OPERATOR 6 >> (geometry, geometry),
	OPERATOR 7 <<| (geometry, geometry),
	OPERATOR 8 |>> (geometry, geometry),
	OPERATOR 11 ~= (geometry, geometry),
	OPERATOR 13 ~ (geometry, geometry),
	OPERATOR 14 @ (geometry, geometry),
	OPERATOR 15 <-> (geometry, geometry) FOR ORDER BY float_ops,
	OPERATOR 16 &< (geometry, geometry),
	OPERATOR 17 &> (geometry, geometry),
	OPERATOR 18 &<| (geometry, geometry),
	OPERATOR 19 |&> (geometry, geometry);
COMMENT ON OPERATOR CLASS @extschema@.kd_geometry_ops USING kdgpu IS
	'kdgpu index on geometry points by x and y (default): ORDER BY <->, kd_ball and kd_dwithin radius searches, and the operators of PostGIS''s 2-D GiST';

CREATE OPERATOR CLASS @extschema@.kd_geometry_nd_ops
	FOR TYPE geometry USING kdgpu AS
	OPERATOR 15 <<->> (geometry, geometry) FOR ORDER BY float_ops,
	OPERATOR 20 &&& (geometry, geometry),
	OPERATOR 21 ~~ (geometry, geometry),
	OPERATOR 22 @@ (geometry, geometry),
	OPERATOR 23 ~~= (geometry, geometry);
COMMENT ON OPERATOR CLASS @extschema@.kd_geometry_nd_ops USING kdgpu IS
	'kdgpu index on geometry points by every coordinate: ORDER BY <<->> and the n-D box operators';

CREATE OPERATOR CLASS @extschema@.kd_geography_ops
	DEFAULT FOR TYPE geography USING kdgpu AS
	OPERATOR 1 && (geography, geography),
	OPERATOR 15 <-> (geography, geography) FOR ORDER BY float_ops;
COMMENT ON OPERATOR CLASS @extschema@.kd_geography_ops USING kdgpu IS
	'kdgpu index on geography points (default): ORDER BY <-> and && boxes';
