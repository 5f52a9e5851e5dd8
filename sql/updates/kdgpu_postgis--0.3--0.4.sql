/*
 * kdgpu_postgis--0.3--0.4.sql
 *	  ALTER EXTENSION kdgpu_postgis UPDATE from 0.3: kd_box of a geometry
 *	  region (a box2d, ST_MakeEnvelope) and its _parts form,
 *	  kd_dwithin(geography, geography, radius, use_spheroid), and the
 *	  description of kd_dwithin(geometry, ...), which now takes any
 *	  geometry, as sql/install/kdgpu_postgis.sql gives them.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kdgpu_postgis UPDATE TO '0.4'" to load this file. \quit

-- names are looked up as the install script looks them up
SELECT pg_catalog.set_config('search_path', pg_catalog.format('pg_catalog, %I, %I, %I',
	(SELECT n.nspname FROM pg_catalog.pg_extension e
	   JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'postgis'),
	(SELECT n.nspname FROM pg_catalog.pg_extension e
	   JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'kdgpu'),
	'@extschema@'), true);

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

CREATE FUNCTION @extschema@.kd_dwithin(a geography, b geography, radius float8, use_spheroid boolean)
	RETURNS boolean
	AS '$libdir/kdgpu', 'kdgpu_dwithin'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT kd_dwithin_support;
COMMENT ON FUNCTION @extschema@.kd_dwithin(geography, geography, float8, boolean) IS
	'true when a and b are within radius metres on the spheroid (use_spheroid) or the sphere, as ST_DWithin(a, b, radius, use_spheroid); an index condition on a kdgpu index';

COMMENT ON FUNCTION @extschema@.kd_dwithin(geometry, geometry, float8) IS
	'true when a and b are within radius of each other in 2-D, as ST_DWithin (any geometry); an index condition on a kdgpu index';
