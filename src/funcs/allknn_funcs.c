/*
 * allknn_funcs.c
 *	  kd_all_knn and kd_all_knn_arrays: every row's k nearest rows in the
 *	  same table.
 *
 * The table's visible points are read once, a tree is built over them and
 * the engine answers every point's query in one batch (on the GPU when one
 * is usable and the table is large enough).  A point is not its own
 * neighbour unless include_self; other rows at the same place are.  Rows
 * come out in the order of the query rows (partition by partition, each in
 * ctid order): one row per pair, or one row per point with arrays of
 * neighbours and distances.  Rows are identified by ctid, by partition and
 * ctid, or by key (table.c).
 */
#include "postgres.h"

#include "fmgr.h"

#include "funcs/funcs.h"


/*
 * Read rel [, col], k [, key_col], include_self and answer every point's
 * query.
 */
static KdAnswer *
kdg_all_knn_answer(FunctionCallInfo fcinfo, KdTable *t)
{
	KdArgs		args;
	int			k;
	bool		include_self;

	kdg_args(fcinfo, &args, t);
	k = PG_GETARG_INT32(kdg_argno(&args, "k"));
	include_self = PG_GETARG_BOOL(kdg_argno(&args, "include_self"));
	kdg_check_k(k);
	kdg_table_read(t);
	return kdg_table_all_knn(t, k, include_self);
}

/* kd_all_knn(rel [, col], k [, key_col], include_self): one row per pair. */
KdRows *
kdg_all_knn_rows(FunctionCallInfo fcinfo)
{
	KdTable    *t = palloc0(sizeof(KdTable));

	return kdg_rows_pairs(t, kdg_all_knn_answer(fcinfo, t), KD_KEY_ROW, t);
}

/*
 * kd_all_knn_arrays(rel [, col], k [, key_col], include_self): one row per
 * point, its neighbours' identities and distances as arrays in rank order.
 */
KdRows *
kdg_all_knn_arrays_rows(FunctionCallInfo fcinfo)
{
	KdTable    *t = palloc0(sizeof(KdTable));

	return kdg_rows_arrays(t, kdg_all_knn_answer(fcinfo, t));
}
