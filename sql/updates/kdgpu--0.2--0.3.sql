/*
 * kdgpu--0.2--0.3.sql
 *	  ALTER EXTENSION kdgpu UPDATE from 0.2: a planner support function for
 *	  the kd_* functions that return rows.
 *
 * kdgpu_rows_support gives the planner their row counts where the
 * arguments tell them, and loads kdgpu's library at planning time, so that
 * the streaming scan of these functions in FROM (kdgpu.stream_rows) is
 * offered from a session's first query on.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kdgpu UPDATE TO '0.3'" to load this file. \quit

CREATE FUNCTION kdgpu_rows_support(internal)
	RETURNS internal
	AS 'MODULE_PATHNAME', 'kdgpu_rows_support'
	LANGUAGE C STRICT;

-- every function of the extension whose rows the library makes
DO $$
DECLARE
	f regprocedure;
BEGIN
	FOR f IN
		SELECT p.oid::regprocedure
		  FROM pg_catalog.pg_proc p
		  JOIN pg_catalog.pg_depend d
		    ON d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
		  JOIN pg_catalog.pg_extension e
		    ON d.refclassid = 'pg_catalog.pg_extension'::regclass AND d.refobjid = e.oid
		 WHERE e.extname = 'kdgpu' AND p.proretset
		   AND p.prosrc IN ('kdgpu_knn', 'kdgpu_knn_join', 'kdgpu_knn_join_table',
		                    'kdgpu_all_knn', 'kdgpu_all_knn_arrays', 'kdgpu_range',
		                    'kdgpu_range_join', 'kdgpu_box')
	LOOP
		EXECUTE pg_catalog.format('ALTER FUNCTION %s SUPPORT kdgpu_rows_support', f);
	END LOOP;
END
$$;
