/*
 * kdgpu_postgis--0.1.sql
 *	  kdgpu for PostGIS: the kd_* functions for geometry and geography
 *	  points, kd_dwithin, and operator classes of the kdgpu index access
 *	  method for geometry and geography points.
 *
 * The C code lives in kdgpu.so: it reads PostGIS's serialized values by
 * their documented layout and does not link PostGIS.
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

-- geometry points

CREATE FUNCTION @extschema@.kd_knn(rel regclass, query geometry, k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn(rel regclass, col name, query geometry, k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, queries geometry[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, col name, queries geometry[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range(rel regclass, center geometry, radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range(rel regclass, col name, center geometry, radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geometry[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geometry[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geometry[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geometry[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

-- geography points

CREATE FUNCTION @extschema@.kd_knn(rel regclass, query geography, k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn(rel regclass, col name, query geography, k integer)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, queries geography[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_knn_join(rel regclass, col name, queries geography[], k integer)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range(rel regclass, center geography, radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range(rel regclass, col name, center geography, radius float8)
	RETURNS TABLE(nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geography[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geography[], radius float8)
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, centers geography[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_range_join(rel regclass, col name, centers geography[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_ctid tid, distance float8, rank integer)
	AS '$libdir/kdgpu', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_box(rel regclass, low geometry, high geometry)
	RETURNS TABLE(nn_ctid tid)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION @extschema@.kd_box(rel regclass, col name, low geometry, high geometry)
	RETURNS TABLE(nn_ctid tid)
	AS '$libdir/kdgpu', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

-- geom <@ kd_ball(center, radius): x and y within radius of center, the
-- radius search of a kd_geometry_ops index (PostGIS and kdgpu functions are
-- found through the search path of this extension's creation)
CREATE FUNCTION @extschema@.kd_ball(center geometry, radius float8) RETURNS kd_ball
	AS 'SELECT ROW(ARRAY[ST_X(center), ST_Y(center)], radius)::kd_ball'
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	SET search_path FROM CURRENT;

CREATE FUNCTION @extschema@.kd_within(p geometry, region kd_ball) RETURNS boolean
	AS '$libdir/kdgpu', 'kdgpu_geometry_in_ball'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR @extschema@.<@ (
	LEFTARG = geometry,
	RIGHTARG = kd_ball,
	FUNCTION = kd_within,
	RESTRICT = pg_catalog.contsel,
	JOIN = pg_catalog.contjoinsel
);

-- kd_dwithin: within a radius, with an index condition for kdgpu indexes
CREATE FUNCTION @extschema@.kd_dwithin_support(internal) RETURNS internal
	AS '$libdir/kdgpu', 'kdgpu_dwithin_support'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION @extschema@.kd_dwithin(a geometry, b geometry, radius float8) RETURNS boolean
	AS '$libdir/kdgpu', 'kdgpu_dwithin'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT kd_dwithin_support;

CREATE FUNCTION @extschema@.kd_dwithin(a geography, b geography, radius float8) RETURNS boolean
	AS '$libdir/kdgpu', 'kdgpu_dwithin'
	LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
	SUPPORT kd_dwithin_support;

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

CREATE OPERATOR CLASS @extschema@.kd_geometry_nd_ops
	FOR TYPE geometry USING kdgpu AS
	OPERATOR 15 <<->> (geometry, geometry) FOR ORDER BY float_ops,
	OPERATOR 20 &&& (geometry, geometry),
	OPERATOR 21 ~~ (geometry, geometry),
	OPERATOR 22 @@ (geometry, geometry),
	OPERATOR 23 ~~= (geometry, geometry);

CREATE OPERATOR CLASS @extschema@.kd_geography_ops
	DEFAULT FOR TYPE geography USING kdgpu AS
	OPERATOR 1 && (geography, geography),
	OPERATOR 15 <-> (geography, geography) FOR ORDER BY float_ops;
