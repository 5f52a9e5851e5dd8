/*
 * kdgpu--0.5--0.6.sql
 *	  ALTER EXTENSION kdgpu UPDATE from 0.5: a shard's answers to a
 *	  coordinator in binary chunks.
 *
 * kd_all_knn_chunks and kd_knn_join_chunks are what a coordinator runs on
 * each shard of a table whose partitions are postgres_fdw foreign tables
 * (answer_chunks.c): the shard's points and their All-kNN, or a kNN join's
 * answers, in binary chunks.  They are called in a SELECT list, where
 * their values are not stored in a tuplestore.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kdgpu UPDATE TO '0.6'" to load this file. \quit

CREATE FUNCTION kd_all_knn_chunks(rel regclass, col name, k integer, key_col name,
								  include_self boolean)
	RETURNS SETOF bytea
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_chunks'
	LANGUAGE C STABLE PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join_chunks(rel regclass, col name, queries anyarray, k integer,
								   key_col name)
	RETURNS SETOF bytea
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_chunks'
	LANGUAGE C STABLE PARALLEL RESTRICTED;
