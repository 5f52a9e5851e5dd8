/*
 * kdgpu--0.3--0.4.sql
 *	  ALTER EXTENSION kdgpu UPDATE from 0.3: kd_ball() and kd_rect() in C.
 *
 * As SQL functions they were inlined into each query that called them,
 * their body parsed again while planning; in C they are evaluated once, as
 * any immutable function of constants is.  Their results are unchanged,
 * NULL arguments included (region.c).
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kdgpu UPDATE TO '0.4'" to load this file. \quit

CREATE OR REPLACE FUNCTION kd_ball(center float8[], radius float8) RETURNS kd_ball
	AS 'MODULE_PATHNAME', 'kdgpu_region'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE OR REPLACE FUNCTION kd_ball(center point, radius float8) RETURNS kd_ball
	AS 'MODULE_PATHNAME', 'kdgpu_ball_point'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE OR REPLACE FUNCTION kd_rect(low float8[], high float8[]) RETURNS kd_rect
	AS 'MODULE_PATHNAME', 'kdgpu_region'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;
