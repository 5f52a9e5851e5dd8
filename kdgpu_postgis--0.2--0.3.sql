/*
 * kdgpu_postgis--0.2--0.3.sql
 *	  ALTER EXTENSION kdgpu_postgis UPDATE from 0.2: kdgpu's planner support
 *	  function (kdgpu 0.3) for the kd_* functions on geometry and geography
 *	  that return rows, as kdgpu 0.3 gives its own.
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
