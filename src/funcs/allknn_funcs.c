/*
 * allknn_funcs.c
 *	  kd_all_knn and kd_all_knn_arrays: every row's k nearest rows in the
 *	  same table.
 *
 * The table's visible points are read once, a tree is built over them and
 * the engine answers every point's query in one batch (on the GPU when one
 * is usable and the table is large enough); an answer too large to hold is
 * made in slices of points as its rows are read.  A point is not its own
 * neighbour unless include_self; other rows at the same place are.  Rows
 * come out in the order of the query rows (partition by partition, each in
 * ctid order): one row per pair, or one row per point with arrays of
 * neighbours and distances.  Rows are identified by ctid, by partition and
 * ctid, or by key (table.c).
 */
#include "postgres.h"

#include "fmgr.h"

#include "funcs/funcs.h"


/* What a streamed All-kNN's slices need: the table, its tree, k. */
typedef struct KdAllKnnSlices
{
	KdTable    *t;
	const KdgTree *tree;
	int			k;
	bool		include_self;
	int64		per_slice;		/* queries a slice holds */
} KdAllKnnSlices;

/* KdRowsSliceFn: the answer of the points from ordinal from on. */
static KdAnswer *
all_knn_slice(void *arg, int64 from)
{
	KdAllKnnSlices *s = arg;

	return kdg_search_all_knn_slice(&s->t->head, s->tree, s->k, s->include_self,
									from, Min(s->per_slice, s->t->head.n - from));
}

/*
 * Read rel [, col], k [, key_col], include_self and make the rows of every
 * point's query, one per pair or (arrays) one per point.  An answer larger
 * than kdgpu.answer_memory_limit (of a table that is not partitioned) is
 * made in slices of points as the rows are read, so that the call's memory
 * stays bounded (kdg_answer_slice_queries); any other in one batch.
 */
static KdRows *
all_knn_rows(FunctionCallInfo fcinfo, bool arrays)
{
	KdTable    *t = palloc0(sizeof(KdTable));
	KdArgs		args;
	int			k;
	bool		include_self;
	KdAnswer   *ans;

	kdg_args(fcinfo, &args, t);
	k = PG_GETARG_INT32(kdg_argno(&args, "k"));
	include_self = PG_GETARG_BOOL(kdg_argno(&args, "include_self"));
	kdg_check_k(k);
	kdg_table_read(t);
	if (!t->partitioned && !kdg_answer_fits(t->head.n, Min(k + 1, KD_MAX_K)))
	{
		KdAllKnnSlices *s = palloc0(sizeof(KdAllKnnSlices));

		s->t = t;
		s->k = k;
		s->include_self = include_self;
		s->per_slice = kdg_answer_slice_queries(Min(k + 2, KD_MAX_K));
		s->tree = kdg_source_search_tree(&t->head, Min(s->per_slice, t->head.n), false);
		return kdg_rows_sliced(t, KD_KEY_ROW, t, kdg_table_refs(t), arrays,
							   t->head.n, all_knn_slice, s);
	}
	ans = kdg_table_all_knn(t, k, include_self);
	return arrays ? kdg_rows_arrays(t, ans) : kdg_rows_pairs(t, ans, KD_KEY_ROW, t);
}

/* kd_all_knn(rel [, col], k [, key_col], include_self): one row per pair. */
KdRows *
kdg_all_knn_rows(FunctionCallInfo fcinfo)
{
	return all_knn_rows(fcinfo, false);
}

/*
 * kd_all_knn_arrays(rel [, col], k [, key_col], include_self): one row per
 * point, its neighbours' identities and distances as arrays in rank order.
 */
KdRows *
kdg_all_knn_arrays_rows(FunctionCallInfo fcinfo)
{
	return all_knn_rows(fcinfo, true);
}
