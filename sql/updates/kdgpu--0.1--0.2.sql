/*
 * kdgpu--0.1--0.2.sql
 *	  ALTER EXTENSION kdgpu UPDATE from 0.1: the key and _parts forms of
 *	  the kd_* functions (key columns, partitioned tables, postgres_fdw
 *	  shards), and kd_index_stats's count of trees.
 *
 * The index's on-disk format changed too (format 8): an index built by
 * 0.1 asks for REINDEX on first use.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION kdgpu UPDATE TO '0.2'" to load this file. \quit

DROP FUNCTION kd_index_stats(regclass);
CREATE FUNCTION kd_index_stats(index regclass,
	OUT tree_rows bigint, OUT pending_rows bigint, OUT dead_rows bigint,
	OUT dimension integer, OUT generation bigint, OUT pages bigint,
	OUT free_pages bigint, OUT orphan_pages bigint, OUT null_rows bigint,
	OUT outside_rows bigint, OUT trees integer)
	AS 'MODULE_PATHNAME', 'kd_index_stats'
	LANGUAGE C STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION kd_index_stats(regclass) IS 'rows in the trees, pending and dead, dimension, generation, pages, free pages, orphaned pages (left by an interrupted build, flush or merge, freed by the next VACUUM), NULL rows, rows kept outside the trees (empty, not points, not finite, or another kind of point), and live trees of a kdgpu index';

-- Key forms: each function above with key_col, the name of an integer
-- column (smallint, integer or bigint) that identifies the row: results
-- return it (nn_key, query_key, nn_keys) in place of the ctid, and rank
-- ties by it.  They read plain and partitioned tables.

CREATE FUNCTION kd_knn(rel regclass, query point, k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn(rel regclass, col name, query point, k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn(rel regclass, query float8[], k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn(rel regclass, col name, query float8[], k integer, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join(rel regclass, queries point[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join(rel regclass, col name, queries point[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join(rel regclass, queries float8[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join(rel regclass, col name, queries float8[], k integer, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join(rel regclass, query_rel regclass, k integer, key_col name, query_key_col name)
	RETURNS TABLE(query_key bigint, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join(rel regclass, col name, query_rel regclass, query_col name, k integer, key_col name, query_key_col name)
	RETURNS TABLE(query_key bigint, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_all_knn(rel regclass, k integer, key_col name, include_self boolean DEFAULT false)
	RETURNS TABLE(query_key bigint, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_all_knn(rel regclass, col name, k integer, key_col name, include_self boolean DEFAULT false)
	RETURNS TABLE(query_key bigint, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_all_knn_arrays(rel regclass, k integer, key_col name, include_self boolean DEFAULT false)
	RETURNS TABLE(query_key bigint, nn_keys bigint[], distances float8[])
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_arrays'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_all_knn_arrays(rel regclass, col name, k integer, key_col name, include_self boolean DEFAULT false)
	RETURNS TABLE(query_key bigint, nn_keys bigint[], distances float8[])
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_arrays'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range(rel regclass, center point, radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range(rel regclass, col name, center point, radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range(rel regclass, center float8[], radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range(rel regclass, col name, center float8[], radius float8, key_col name)
	RETURNS TABLE(nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, centers point[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, col name, centers point[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, centers point[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, col name, centers point[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, centers float8[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, col name, centers float8[], radius float8, key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, centers float8[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join(rel regclass, col name, centers float8[], radii float8[], key_col name)
	RETURNS TABLE(query_ord integer, nn_key bigint, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box(rel regclass, low point, high point, key_col name)
	RETURNS TABLE(nn_key bigint)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box(rel regclass, col name, low point, high point, key_col name)
	RETURNS TABLE(nn_key bigint)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box(rel regclass, low float8[], high float8[], key_col name)
	RETURNS TABLE(nn_key bigint)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box(rel regclass, col name, low float8[], high float8[], key_col name)
	RETURNS TABLE(nn_key bigint)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box(rel regclass, b box, key_col name)
	RETURNS TABLE(nn_key bigint)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box(rel regclass, col name, b box, key_col name)
	RETURNS TABLE(nn_key bigint)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

-- _parts forms: each function above for partitioned tables (plain ones
-- too): a row is its partition and ctid (nn_rel and nn_ctid, query_rel and
-- query_ctid, nn_rels and nn_ctids), ties ranked by tableoid, then ctid.

CREATE FUNCTION kd_knn_parts(rel regclass, query point, k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_parts(rel regclass, col name, query point, k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_parts(rel regclass, query float8[], k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_parts(rel regclass, col name, query float8[], k integer)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join_parts(rel regclass, queries point[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join_parts(rel regclass, col name, queries point[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join_parts(rel regclass, queries float8[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join_parts(rel regclass, col name, queries float8[], k integer)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join_parts(rel regclass, query_rel regclass, k integer)
	RETURNS TABLE(query_rel regclass, query_ctid tid, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_knn_join_parts(rel regclass, col name, query_rel regclass, query_col name, k integer)
	RETURNS TABLE(query_rel regclass, query_ctid tid, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_knn_join_table'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_all_knn_parts(rel regclass, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_rel regclass, query_ctid tid, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_all_knn_parts(rel regclass, col name, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_rel regclass, query_ctid tid, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_all_knn_arrays_parts(rel regclass, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_rel regclass, query_ctid tid, nn_rels regclass[], nn_ctids tid[], distances float8[])
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_arrays'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_all_knn_arrays_parts(rel regclass, col name, k integer, include_self boolean DEFAULT false)
	RETURNS TABLE(query_rel regclass, query_ctid tid, nn_rels regclass[], nn_ctids tid[], distances float8[])
	AS 'MODULE_PATHNAME', 'kdgpu_all_knn_arrays'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_parts(rel regclass, center point, radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_parts(rel regclass, col name, center point, radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_parts(rel regclass, center float8[], radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_parts(rel regclass, col name, center float8[], radius float8)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join_parts(rel regclass, centers point[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join_parts(rel regclass, col name, centers point[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join_parts(rel regclass, centers point[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join_parts(rel regclass, col name, centers point[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join_parts(rel regclass, centers float8[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join_parts(rel regclass, col name, centers float8[], radius float8)
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join_parts(rel regclass, centers float8[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_range_join_parts(rel regclass, col name, centers float8[], radii float8[])
	RETURNS TABLE(query_ord integer, nn_rel regclass, nn_ctid tid, distance float8, rank integer)
	AS 'MODULE_PATHNAME', 'kdgpu_range_join'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box_parts(rel regclass, low point, high point)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box_parts(rel regclass, col name, low point, high point)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box_parts(rel regclass, low float8[], high float8[])
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box_parts(rel regclass, col name, low float8[], high float8[])
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box_parts(rel regclass, b box)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

CREATE FUNCTION kd_box_parts(rel regclass, col name, b box)
	RETURNS TABLE(nn_rel regclass, nn_ctid tid)
	AS 'MODULE_PATHNAME', 'kdgpu_box'
	LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;

