/*
 * kdgpu--0.4--0.5.sql
 *	  ALTER EXTENSION kdgpu UPDATE from 0.4: the GPU service.
 *
 * kd_status() gains two columns: the GPU service's state (service) and
 * where this backend's last batched work ran and why (last_run).  The view
 * kd_resident lists the device copies the service holds for all sessions.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kdgpu UPDATE TO '0.5'" to load this file. \quit

DROP FUNCTION kd_status();
CREATE FUNCTION kd_status(OUT device text, OUT runs_on text, OUT gpu_usable boolean,
						  OUT gpu text, OUT gpu_library text, OUT cpu_threads integer,
						  OUT trees_cached integer, OUT note text,
						  OUT service text, OUT last_run text)
	AS 'MODULE_PATHNAME', 'kdgpu_status'
	LANGUAGE C VOLATILE PARALLEL RESTRICTED;

CREATE FUNCTION kd_resident_copies()
	RETURNS TABLE(device integer, database oid, index_oid oid, relfilenode oid,
				  generation bigint, flavour text, owner_pid integer,
				  points bigint, dimensions integer, bytes bigint, hits bigint,
				  loaded_at timestamptz, last_use timestamptz)
	AS 'MODULE_PATHNAME', 'kdgpu_resident_copies'
	LANGUAGE C VOLATILE PARALLEL RESTRICTED;

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
