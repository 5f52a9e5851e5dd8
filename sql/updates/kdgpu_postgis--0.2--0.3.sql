/*
 * kdgpu_postgis--0.2--0.3.sql
 *	  ALTER EXTENSION kdgpu_postgis UPDATE from 0.2: kdgpu's planner support
 *	  function (kdgpu 0.3) for the kd_* functions on geometry and geography
 *	  that return rows, as kdgpu 0.3 gives its own, and a description
 *	  (COMMENT ON) of every function, operator and operator class, as
 *	  sql/install/kdgpu_postgis.sql gives them.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kdgpu_postgis UPDATE TO '0.3'" to load this file. \quit

DO $$
DECLARE
	f regprocedure;
	support text;
BEGIN
	SELECT pg_catalog.format('%I.kdgpu_rows_support', n.nspname) INTO support
	  FROM pg_catalog.pg_extension e
	  JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
	 WHERE e.extname = 'kdgpu'
	   AND pg_catalog.to_regprocedure(pg_catalog.format('%I.kdgpu_rows_support(internal)',
	                                                    n.nspname)) IS NOT NULL;
	IF support IS NULL THEN
		RAISE EXCEPTION 'kdgpu_postgis 0.3 needs kdgpu 0.3'
			USING HINT = 'Run ALTER EXTENSION kdgpu UPDATE first.';
	END IF;
	FOR f IN
		SELECT p.oid::regprocedure
		  FROM pg_catalog.pg_proc p
		  JOIN pg_catalog.pg_depend d
		    ON d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
		  JOIN pg_catalog.pg_extension e
		    ON d.refclassid = 'pg_catalog.pg_extension'::regclass AND d.refobjid = e.oid
		 WHERE e.extname = 'kdgpu_postgis' AND p.proretset
		   AND p.prosrc IN ('kdgpu_knn', 'kdgpu_knn_join', 'kdgpu_knn_join_table',
		                    'kdgpu_all_knn', 'kdgpu_all_knn_arrays', 'kdgpu_range',
		                    'kdgpu_range_join', 'kdgpu_box')
	LOOP
		EXECUTE pg_catalog.format('ALTER FUNCTION %s SUPPORT %s', f, support);
	END LOOP;
END
$$;

-- descriptions, as the install script gives them, its names looked up as
-- there: pg_catalog, PostGIS's and kdgpu's schemas, then this extension's
SELECT pg_catalog.set_config('search_path', pg_catalog.format('pg_catalog, %I, %I, %I',
	(SELECT n.nspname FROM pg_catalog.pg_extension e
	   JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'postgis'),
	(SELECT n.nspname FROM pg_catalog.pg_extension e
	   JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'kdgpu'),
	'@extschema@'), true);
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, geometry, integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, name, geometry, integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, geometry[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, name, geometry[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_range(regclass, geometry, float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_range(regclass, name, geometry, float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geometry[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geometry[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geometry[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geometry[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, geography, integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, name, geography, integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, geography[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, name, geography[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_range(regclass, geography, float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_range(regclass, name, geography, float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geography[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geography[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geography[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geography[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_ctid, distance, rank)';
COMMENT ON FUNCTION @extschema@.kd_box(regclass, geometry, geometry) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_ctid)';
COMMENT ON FUNCTION @extschema@.kd_box(regclass, name, geometry, geometry) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_ctid)';
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, geometry, integer, name) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, name, geometry, integer, name) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, geometry[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, name, geometry[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_range(regclass, geometry, float8, name) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_range(regclass, name, geometry, float8, name) IS
	'the rows of rel within radius of center (points of column col); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geometry[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geometry[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geometry[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geometry[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, geography, integer, name) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_knn(regclass, name, geography, integer, name) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, geography[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_knn_join(regclass, name, geography[], integer, name) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_range(regclass, geography, float8, name) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_range(regclass, name, geography, float8, name) IS
	'the rows of rel within radius of center (points of column col); returns (nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geography[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geography[], float8, name) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, geography[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_range_join(regclass, name, geography[], float8[], name) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_key, distance, rank); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_box(regclass, geometry, geometry, name) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_key); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_box(regclass, name, geometry, geometry, name) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_key); key_col names the rows';
COMMENT ON FUNCTION @extschema@.kd_knn_parts(regclass, geometry, integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_knn_parts(regclass, name, geometry, integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_knn_join_parts(regclass, geometry[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_knn_join_parts(regclass, name, geometry[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_range_parts(regclass, geometry, float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_range_parts(regclass, name, geometry, float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, geometry[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, name, geometry[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, geometry[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, name, geometry[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_knn_parts(regclass, geography, integer) IS
	'the k rows of rel nearest to query (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_knn_parts(regclass, name, geography, integer) IS
	'the k rows of rel nearest to query (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_knn_join_parts(regclass, geography[], integer) IS
	'the k rows of rel nearest to each point of queries (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_knn_join_parts(regclass, name, geography[], integer) IS
	'the k rows of rel nearest to each point of queries (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_range_parts(regclass, geography, float8) IS
	'the rows of rel within radius of center (points of rel''s only point column); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_range_parts(regclass, name, geography, float8) IS
	'the rows of rel within radius of center (points of column col); returns (nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, geography[], float8) IS
	'the rows of rel within radius of each point of centers (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, name, geography[], float8) IS
	'the rows of rel within radius of each point of centers (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, geography[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of rel''s only point column); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_range_join_parts(regclass, name, geography[], float8[]) IS
	'the rows of rel within radii[i] of each centers[i] (points of column col); returns (query_ord, nn_rel, nn_ctid, distance, rank); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_box_parts(regclass, geometry, geometry) IS
	'the rows of rel from low to high in every dimension, bounds included (points of rel''s only point column); returns (nn_rel, nn_ctid); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_box_parts(regclass, name, geometry, geometry) IS
	'the rows of rel from low to high in every dimension, bounds included (points of column col); returns (nn_rel, nn_ctid); a row is its partition and ctid';
COMMENT ON FUNCTION @extschema@.kd_ball(geometry, float8) IS
	'the ball of a geometry point''s x and y and radius, for geom <@ kd_ball(center, radius); returns kd_ball';
COMMENT ON FUNCTION @extschema@.kd_within(geometry, kd_ball) IS
	'true when the x and y of point p are within radius of center: the <@ operator';
COMMENT ON OPERATOR @extschema@.<@ (geometry, kd_ball) IS
	'geom <@ kd_ball(c, r): x and y within r of c (kd_within); the radius search of kd_geometry_ops';
COMMENT ON FUNCTION @extschema@.kd_dwithin_support(internal) IS
	'planner support of kd_dwithin: its index condition on a kdgpu index';
COMMENT ON FUNCTION @extschema@.kd_dwithin(geometry, geometry, float8) IS
	'true when a and b are within radius of each other in 2-D, as ST_DWithin; an index condition on a kdgpu index';
COMMENT ON FUNCTION @extschema@.kd_dwithin(geography, geography, float8) IS
	'true when a and b are within radius metres on the sphere, as ST_DWithin(a, b, radius, false); an index condition on a kdgpu index';
COMMENT ON OPERATOR CLASS @extschema@.kd_geometry_ops USING kdgpu IS
	'kdgpu index on geometry points by x and y (default): ORDER BY <->, kd_ball and kd_dwithin radius searches, and the operators of PostGIS''s 2-D GiST';
COMMENT ON OPERATOR CLASS @extschema@.kd_geometry_nd_ops USING kdgpu IS
	'kdgpu index on geometry points by every coordinate: ORDER BY <<->> and the n-D box operators';
COMMENT ON OPERATOR CLASS @extschema@.kd_geography_ops USING kdgpu IS
	'kdgpu index on geography points (default): ORDER BY <-> and && boxes';
