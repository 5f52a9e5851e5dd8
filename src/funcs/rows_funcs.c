/*
 * rows_funcs.c
 *	  The SQL entry points of the functions that return neighbours as rows,
 *	  and their table for the streaming scan.
 *
 * Each function is written once, as kdg_<name>_rows: it reads its
 * arguments from fcinfo, answers the queries and returns a KdRows
 * (output.c).  Called the usual way, the SQL function materializes those
 * rows into a tuplestore; in a query's FROM list the streaming scan
 * (stream_scan.c) finds the same kdg_<name>_rows through kdg_rows_function
 * and hands the rows to the executor one by one.  kdgpu_rows_support is
 * their planner support function.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_proc.h"
#include "fmgr.h"
#include "funcapi.h"
#include "nodes/supportnodes.h"
#include "utils/syscache.h"

#include "funcs/funcs.h"

/* Define the SQL-callable function fn, which materializes rowsfn's rows. */
#define KDG_ROWS_SRF(fn, rowsfn) \
	PG_FUNCTION_INFO_V1(fn); \
	Datum \
	fn(PG_FUNCTION_ARGS) \
	{ \
		kdg_rows_materialize(fcinfo, rowsfn(fcinfo)); \
		return (Datum) 0; \
	}

KDG_ROWS_SRF(kdgpu_knn, kdg_knn_rows)
KDG_ROWS_SRF(kdgpu_knn_join, kdg_knn_join_rows)
KDG_ROWS_SRF(kdgpu_knn_join_table, kdg_knn_join_table_rows)
KDG_ROWS_SRF(kdgpu_all_knn, kdg_all_knn_rows)
KDG_ROWS_SRF(kdgpu_all_knn_arrays, kdg_all_knn_arrays_rows)
KDG_ROWS_SRF(kdgpu_range, kdg_range_rows)
KDG_ROWS_SRF(kdgpu_range_join, kdg_range_join_rows)
KDG_ROWS_SRF(kdgpu_range_join_table, kdg_range_join_table_rows)
KDG_ROWS_SRF(kdgpu_box, kdg_box_rows)
KDG_ROWS_SRF(kdgpu_pairs_within, kdg_pairs_within_rows)

/* Each SQL entry point, and the function that makes its rows. */
static const struct
{
	PGFunction	fn;
	KdRowsFn	rowsfn;
}			kdg_rows_table[] =
{
	{kdgpu_knn, kdg_knn_rows},
	{kdgpu_knn_join, kdg_knn_join_rows},
	{kdgpu_knn_join_table, kdg_knn_join_table_rows},
	{kdgpu_all_knn, kdg_all_knn_rows},
	{kdgpu_all_knn_arrays, kdg_all_knn_arrays_rows},
	{kdgpu_range, kdg_range_rows},
	{kdgpu_range_join, kdg_range_join_rows},
	{kdgpu_range_join_table, kdg_range_join_table_rows},
	{kdgpu_box, kdg_box_rows},
	{kdgpu_pairs_within, kdg_pairs_within_rows},
};

/*
 * The function that makes the rows of the SQL function funcoid, or NULL when
 * it is not one of these.
 */
KdRowsFn
kdg_rows_function(Oid funcoid)
{
	FmgrInfo	finfo;

	fmgr_info(funcoid, &finfo);
	for (int i = 0; i < lengthof(kdg_rows_table); i++)
		if (finfo.fn_addr == kdg_rows_table[i].fn)
			return kdg_rows_table[i].rowsfn;
	return NULL;
}

/* The argument called name of call's function, or NULL. */
static Node *
kdg_call_arg(FuncExpr *call, const char *name)
{
	Oid		   *types;
	char	  **names;
	char	   *modes;
	HeapTuple	proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(call->funcid));
	int			n;
	int			in = 0;
	Node	   *arg = NULL;

	if (!HeapTupleIsValid(proc))
		return NULL;
	n = get_func_arg_info(proc, &types, &names, &modes);
	for (int i = 0; names && i < n; i++)
	{
		if (modes && modes[i] != PROARGMODE_IN && modes[i] != PROARGMODE_INOUT &&
			modes[i] != PROARGMODE_VARIADIC)
			continue;
		if (strcmp(names[i], name) == 0 && in < list_length(call->args))
			arg = list_nth(call->args, in);
		in++;
	}
	ReleaseSysCache(proc);
	return arg;
}

/* pg_class's row count of relid and its kind; -1 when unknown or gone. */
static double
kdg_rel_reltuples(Oid relid, char *relkind)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	double		rows;

	*relkind = '\0';
	if (!HeapTupleIsValid(tup))
		return -1;
	rows = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
	*relkind = ((Form_pg_class) GETSTRUCT(tup))->relkind;
	ReleaseSysCache(tup);
	return rows;
}

/*
 * The planner's row count of the table named by a constant regclass, or
 * -1.  A partitioned table that was never analyzed itself (autovacuum
 * analyzes only its partitions) counts the rows of its partitions that
 * were, so that a large answer over it is planned as one over a plain
 * table.  The partitions are listed without locks: one dropped meanwhile
 * is skipped.
 */
static double
kdg_const_rel_rows(Node *arg)
{
	Oid			relid;
	char		relkind;
	double		rows;
	double		sum = 0;
	bool		known = false;
	List	   *all;
	ListCell   *lc;

	if (arg == NULL || !IsA(arg, Const) || ((Const *) arg)->constisnull)
		return -1;
	relid = DatumGetObjectId(((Const *) arg)->constvalue);
	rows = kdg_rel_reltuples(relid, &relkind);
	if (rows >= 0 || relkind != RELKIND_PARTITIONED_TABLE)
		return rows;
	all = find_all_inheritors(relid, NoLock, NULL);
	foreach(lc, all)
	{
		double		part = kdg_rel_reltuples(lfirst_oid(lc), &relkind);

		if (part >= 0 && relkind != RELKIND_PARTITIONED_TABLE)
		{
			sum += part;
			known = true;
		}
	}
	list_free(all);
	return known ? sum : -1;
}

/* The value of a constant integer argument, or -1. */
static double
kdg_const_int(Node *arg)
{
	if (arg == NULL || !IsA(arg, Const) || ((Const *) arg)->constisnull)
		return -1;
	return DatumGetInt32(((Const *) arg)->constvalue);
}

/*
 * The planner's count of the hits in rows rows of call: one per row, or
 * for kd_all_knn_arrays k per row (one, for a k that is not a constant).
 */
double
kdg_rows_hits(struct FuncExpr *call, double rows)
{
	double		k;

	if (kdg_rows_function(call->funcid) != kdg_all_knn_arrays_rows)
		return rows;
	k = kdg_const_int(kdg_call_arg(call, "k"));
	return k > 0 ? rows * k : rows;
}

/*
 * kdgpu_rows_support(internal): planner support of the functions above.
 * It gives the planner their row counts where the arguments tell them (k
 * per query, the query table's and the table's row counts from the last
 * ANALYZE; for kd_pairs_within, a guess of one pair per row), and, being in this library, makes the planner load it before
 * it plans their scans, so that the streaming scan is offered from a
 * session's first query on.
 */
PG_FUNCTION_INFO_V1(kdgpu_rows_support);
Datum
kdgpu_rows_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);
	SupportRequestRows *req;
	FuncExpr   *call;
	KdRowsFn	rowsfn;
	double		k;
	double		n = -1;

	if (!IsA(rawreq, SupportRequestRows))
		PG_RETURN_POINTER(NULL);
	req = (SupportRequestRows *) rawreq;
	if (!IsA(req->node, FuncExpr))
		PG_RETURN_POINTER(NULL);
	call = (FuncExpr *) req->node;
	rowsfn = kdg_rows_function(call->funcid);
	k = kdg_const_int(kdg_call_arg(call, "k"));
	if (rowsfn == kdg_knn_rows)
		n = 1;
	else if (rowsfn == kdg_knn_join_table_rows)
		n = kdg_const_rel_rows(kdg_call_arg(call, "query_rel"));
	else if (rowsfn == kdg_all_knn_rows || rowsfn == kdg_all_knn_arrays_rows ||
			 rowsfn == kdg_pairs_within_rows)
		n = kdg_const_rel_rows(kdg_call_arg(call, "rel"));
	if ((rowsfn == kdg_all_knn_arrays_rows || rowsfn == kdg_pairs_within_rows) &&
		n >= 0)
		req->rows = Max(n, 1);
	else if (n >= 0 && k > 0)
		req->rows = Max(n * k, 1);
	else
		PG_RETURN_POINTER(NULL);
	PG_RETURN_POINTER(req);
}
