/*
 * kdgpu_postgis--0.1--0.2.sql
 *	  ALTER EXTENSION kdgpu_postgis UPDATE from 0.1: the key and _parts
 *	  forms of the kd_* functions for geometry and geography.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kdgpu_postgis UPDATE TO '0.2'" to load this file. \quit

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

-- key forms of the functions above (kdgpu--0.2.sql)

CREATE FUNCTION @extschema@.kd_knn(rel regclass, query geometry, k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn(rel regclass, col name, query geometry, k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, queries geometry[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, col name, queries geometry[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range(rel regclass, center geometry, radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range(rel regclass, col name, center geometry, radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geometry[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geometry[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geometry[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geometry[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn(rel regclass, query geography, k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn(rel regclass, col name, query geography, k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, queries geography[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, col name, queries geography[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range(rel regclass, center geography, radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range(rel regclass, col name, center geography, radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geography[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geography[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geography[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geography[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_box(rel regclass, low geometry, high geometry, key_col name)
	RETURNS TABLE(nn_key bigint)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_box(rel regclass, col name, low geometry, high geometry, key_col name)
	RETURNS TABLE(nn_key bigint)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

-- _parts forms of the functions above (kdgpu--0.2.sql)

CREATE FUNCTION @extschema@.kd_knn_parts(rel regclass, query geometry, k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn_parts(rel regclass, col name, query geometry, k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn_join_parts(rel regclass, queries geometry[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn_join_parts(rel regclass, col name, queries geometry[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_parts(rel regclass, center geometry, radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_parts(rel regclass, col name, center geometry, radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, centers geometry[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, col name, centers geometry[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, centers geometry[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, col name, centers geometry[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn_parts(rel regclass, query geography, k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn_parts(rel regclass, col name, query geography, k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn_join_parts(rel regclass, queries geography[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn_join_parts(rel regclass, col name, queries geography[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_parts(rel regclass, center geography, radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_parts(rel regclass, col name, center geography, radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, centers geography[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, col name, centers geography[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, centers geography[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join_parts(rel regclass, col name, centers geography[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_box_parts(rel regclass, low geometry, high geometry)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_box_parts(rel regclass, col name, low geometry, high geometry)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

