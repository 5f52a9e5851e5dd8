/*
 * knn_funcs.c
 *	  kd_knn and kd_knn_join: the k nearest rows of one query point, of many
 *	  (an array), or of every row of another table.
 *
 * Each call reads the table's visible points, builds a tree over them for
 * this call and answers through the exact search of search.c.  The array
 * form numbers its queries by array position (query_ord, from 1); the table
 * form names each query row by its ctid (query_ctid).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/lsyscache.h"

#include "kdgpu.h"

PG_FUNCTION_INFO_V1(kdgpu_knn);
PG_FUNCTION_INFO_V1(kdgpu_knn_join);
PG_FUNCTION_INFO_V1(kdgpu_knn_join_table);

/* kd_knn(rel [, col], query, k): the k nearest rows to one point. */
Datum
kdgpu_knn(PG_FUNCTION_ARGS)
{
	KdArgs		args;
	KdSource	src;
	double		query[KD_MAX_DIM];
	int			k;
	Oid			qtype;

	kdg_args(fcinfo, &args, &src);
	qtype = args.argtypes[args.next];
	kdg_source_check_query(&src, kdg_point_type(qtype), qtype, "query");
	k = PG_GETARG_INT32(args.next + 1);
	kdg_check_k(k);
	kdg_query_coords(src.type, PG_GETARG_DATUM(args.next), 0, query, "query", NULL);
	kdg_source_read(&src);
	kdg_query_coords(src.type, PG_GETARG_DATUM(args.next), src.dim, query, "query", &src);
	kdg_emit(fcinfo, &src,
			kdg_search_knn(&src, kdg_source_tree(&src), query, 1, k),
			KD_KEY_NONE, NULL);
	return (Datum) 0;
}

/*
 * kd_knn_join(rel [, col], queries, k): the k nearest rows to each point of
 * an array (point[], or float8[] with one point per row).
 */
Datum
kdgpu_knn_join(PG_FUNCTION_ARGS)
{
	KdArgs		args;
	KdSource	src;
	double	   *queries;
	int64		nq;
	int			k;
	Oid			qtype;

	kdg_args(fcinfo, &args, &src);
	qtype = args.argtypes[args.next];
	kdg_source_check_query(&src, kdg_array_point_type(qtype),
						  qtype, "queries");
	k = PG_GETARG_INT32(args.next + 1);
	kdg_check_k(k);
	kdg_array_points(src.type, PG_GETARG_DATUM(args.next), 0, &queries, "queries", NULL);
	kdg_source_read(&src);
	nq = kdg_array_points(src.type, PG_GETARG_DATUM(args.next), src.dim, &queries, "queries", &src);
	kdg_emit(fcinfo, &src,
			kdg_search_knn(&src, kdg_source_tree(&src), queries, nq, k),
			KD_KEY_ORD, NULL);
	return (Datum) 0;
}

/*
 * kd_knn_join(rel, query_rel, k) and kd_knn_join(rel, col, query_rel,
 * query_col, k): the k nearest rows of rel to each row of query_rel.
 */
Datum
kdgpu_knn_join_table(PG_FUNCTION_ARGS)
{
	KdArgs		args;
	KdSource	src;
	KdSource	qsrc;
	int			k;

	kdg_args(fcinfo, &args, &src);
	kdg_source_open(&qsrc, PG_GETARG_OID(args.next),
				   args.nargs == 5 ? PG_GETARG_NAME(args.next + 1) : NULL);
	if (qsrc.type != src.type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of table \"%s\" is of type %s but column \"%s\" of table \"%s\" is of type %s",
						qsrc.colname, get_rel_name(qsrc.relid), kdg_point_type_name(qsrc.type),
						src.colname, get_rel_name(src.relid), kdg_point_type_name(src.type))));
	k = PG_GETARG_INT32(args.nargs - 1);
	kdg_check_k(k);
	kdg_source_read(&src);
	kdg_source_read(&qsrc);
	kdg_source_check_dims(&src, &qsrc);
	kdg_emit(fcinfo, &src,
			kdg_search_knn(&src, kdg_source_tree(&src), kdg_source_queries(&qsrc),
						   qsrc.n, k),
			KD_KEY_CTID, &qsrc);
	return (Datum) 0;
}
