/*
 * knn_funcs.c
 *	  kd_knn and kd_knn_join: the k nearest rows of one query point, of many
 *	  (an array), or of every row of another table.
 *
 * Each call reads the table's visible points (of every leaf of a
 * partitioned table), searches a kdgpu index's tree or one built for this
 * call, and answers through the exact search of search.c, merged over the
 * leaves by table_search.c; kd_knn of one point on a plain table runs an
 * ordered scan of a kdgpu index instead where that is its answer
 * (index_knn.c).  The array form numbers its queries by array
 * position (query_ord, from 1); the table form identifies each query row as
 * it identifies neighbours: by ctid (query_ctid), partition and ctid
 * (query_rel, query_ctid), or key (query_key).
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/lsyscache.h"

#include "funcs/funcs.h"


/* kd_knn(rel [, col], query, k): the k nearest rows to one point. */
KdRows *
kdg_knn_rows(FunctionCallInfo fcinfo)
{
	KdArgs		args;
	KdTable    *t = palloc0(sizeof(KdTable));
	double	   *query;
	KdPointInfo qinfo;
	int			qdim;
	int			k;
	Oid			qtype;
	KdAnswer   *ans;

	kdg_args(fcinfo, &args, t);
	qtype = args.argtypes[args.next];
	kdg_source_check_query(&t->head, kdg_point_type(qtype), qtype, "query");
	k = PG_GETARG_INT32(args.next + 1);
	kdg_check_k(k);
	query = kdg_query_read_any(t->head.type, PG_GETARG_DATUM(args.next), "query",
							   &qinfo, &qdim);
	ans = kdg_index_knn(t, PG_GETARG_DATUM(args.next), qtype, qdim, &qinfo, k,
						fcinfo->flinfo->fn_oid);
	if (ans == NULL)
	{
		kdg_table_read(t);
		kdg_query_check(qdim, &qinfo, t->head.dim, "query", &t->head);
		if (t->head.metric == KD_METRIC_COSINE)
			kdg_check_cosine_queries(query, 1, qdim, "query");
		ans = kdg_table_knn(t, query, 1, k);
	}
	return kdg_rows_pairs(t, ans, KD_KEY_NONE, NULL);
}

/*
 * The k nearest rows of t, opened, to each point of queries, an array of
 * type qtype (point[], float8[] with one point per row, or a PostGIS
 * type's array): kd_knn_join's answer, and kd_knn_join_chunks's.
 */
KdAnswer *
kdg_knn_join_answer(KdTable *t, Datum queries, Oid qtype, int k)
{
	double	   *coords;
	KdPointInfo *qinfos;
	int			qdim;
	int64		nq;

	kdg_source_check_query(&t->head, kdg_array_point_type(qtype),
						  qtype, "queries");
	kdg_check_k(k);
	nq = kdg_array_points(t->head.type, queries, &coords, &qdim, &qinfos, "queries");
	kdg_table_read(t);
	kdg_array_check(nq, qdim, qinfos, t->head.dim, "queries", &t->head);
	if (t->head.metric == KD_METRIC_COSINE)
		kdg_check_cosine_queries(coords, nq, qdim, "queries");
	return kdg_table_knn(t, coords, nq, k);
}

/*
 * kd_knn_join(rel [, col], queries, k): the k nearest rows to each point of
 * an array (point[], or float8[] with one point per row).
 */
KdRows *
kdg_knn_join_rows(FunctionCallInfo fcinfo)
{
	KdArgs		args;
	KdTable    *t = palloc0(sizeof(KdTable));

	kdg_args(fcinfo, &args, t);
	return kdg_rows_pairs(t, kdg_knn_join_answer(t, PG_GETARG_DATUM(args.next),
												 args.argtypes[args.next],
												 PG_GETARG_INT32(args.next + 1)),
						  KD_KEY_ORD, NULL);
}

/*
 * The query table of a table join (query_rel [, query_col] [,
 * query_key_col]), opened for reading; error unless its points have the
 * type of t's.
 */
KdTable *
kdg_query_table(FunctionCallInfo fcinfo, const KdArgs *args, const KdTable *t)
{
	KdTable    *qt = palloc0(sizeof(KdTable));
	const KdSource *src = &t->head;
	KdSource   *qsrc = &qt->head;
	int			qcol = kdg_argno(args, "query_col");
	int			qkey = kdg_argno(args, "query_key_col");

	kdg_table_open(qt, PG_GETARG_OID(kdg_argno(args, "query_rel")),
				   qcol >= 0 ? PG_GETARG_NAME(qcol) : NULL,
				   qkey >= 0 ? PG_GETARG_NAME(qkey) : NULL, args->ident, src->fname);
	if (qsrc->type != src->type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of table \"%s\" is of type %s but column \"%s\" of table \"%s\" is of type %s",
						qsrc->colname, get_rel_name(qsrc->relid), kdg_source_type_name(qsrc),
						src->colname, get_rel_name(src->relid), kdg_source_type_name(src))));
	return qt;
}

/*
 * kd_knn_join(rel [, col], query_rel [, query_col], k [, key_col,
 * query_key_col]): the k nearest rows of rel to each row of query_rel.
 */
KdRows *
kdg_knn_join_table_rows(FunctionCallInfo fcinfo)
{
	KdArgs		args;
	KdTable    *t = palloc0(sizeof(KdTable));
	KdTable    *qt;
	KdSource   *src = &t->head;
	KdSource   *qsrc;
	double	   *queries;
	int			k;

	kdg_args(fcinfo, &args, t);
	qt = kdg_query_table(fcinfo, &args, t);
	qsrc = &qt->head;
	k = PG_GETARG_INT32(kdg_argno(&args, "k"));
	kdg_check_k(k);
	kdg_table_read(t);
	kdg_table_read_all(qt);
	kdg_source_check_dims(src, qsrc);
	queries = kdg_table_queries(qt);
	if (src->metric == KD_METRIC_COSINE)
		kdg_check_cosine_queries(queries, qsrc->n, qsrc->dim, "query_rel");
	/* foreign partitions of rel get the query points as an array */
	if (t->nremote > 0)
	{
		t->rparams.n = 0;
		t->rargs = psprintf("%s, %d", kdg_remote_points(&t->rparams, qsrc, queries, qsrc->n), k);
	}
	return kdg_rows_pairs(t, kdg_table_knn(t, queries, qsrc->n, k), KD_KEY_ROW, qt);
}
