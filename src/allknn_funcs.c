/*
 * allknn_funcs.c
 *	  kd_all_knn and kd_all_knn_arrays: every row's k nearest rows in the
 *	  same table.
 *
 * The table's visible points are read once, a tree is built over them and
 * the engine answers every point's query in one batch (on the GPU when one
 * is usable and the table is large enough).  A point is not its own
 * neighbour unless include_self; other rows at the same place are.  Rows
 * come out in the ctid order of the query rows: one row per pair, or one
 * row per point with arrays of neighbours and distances.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "kdgpu.h"

PG_FUNCTION_INFO_V1(kdgpu_all_knn);
PG_FUNCTION_INFO_V1(kdgpu_all_knn_arrays);

/* Read rel [, col], k, include_self and answer every point's query. */
static KdAnswer *
kdg_all_knn_answer(FunctionCallInfo fcinfo, KdSource *src)
{
	KdArgs		args;
	int			k;
	bool		include_self;

	kdg_args(fcinfo, &args, src);
	k = PG_GETARG_INT32(args.next);
	include_self = PG_GETARG_BOOL(args.next + 1);
	kdg_check_k(k);
	kdg_source_read(src);
	return kdg_search_all_knn(src, kdg_source_tree(src), k, include_self);
}

/* kd_all_knn(rel [, col], k, include_self): one row per pair. */
Datum
kdgpu_all_knn(PG_FUNCTION_ARGS)
{
	KdSource	src;
	KdAnswer   *ans = kdg_all_knn_answer(fcinfo, &src);

	kdg_emit(fcinfo, &src, ans, KD_KEY_CTID, &src);
	return (Datum) 0;
}

/*
 * kd_all_knn_arrays(rel [, col], k, include_self): one row per point, its
 * neighbours' ctids and distances as arrays in rank order.
 */
Datum
kdgpu_all_knn_arrays(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KdSource	src;
	KdAnswer   *ans = kdg_all_knn_answer(fcinfo, &src);
	MemoryContext rowcxt;
	MemoryContext oldcxt;
	ItemPointerData qtid;

	InitMaterializedSRF(fcinfo, 0);
	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "kd_all_knn_arrays row",
								   ALLOCSET_DEFAULT_SIZES);
	for (int64 i = 0; i < ans->nq; i++)
	{
		int64		q = ans->order[i];
		int64		off = ans->offsets[q];
		int			n = (int) (ans->offsets[q + 1] - off);
		ItemPointer tids;
		Datum	   *tidvals;
		Datum	   *distvals;
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		oldcxt = MemoryContextSwitchTo(rowcxt);
		tids = palloc(sizeof(ItemPointerData) * Max(n, 1));
		tidvals = palloc(sizeof(Datum) * Max(n, 1));
		distvals = palloc(sizeof(Datum) * Max(n, 1));
		for (int j = 0; j < n; j++)
		{
			kdg_ref_to_tid(ans->hits[off + j].ref, &tids[j]);
			tidvals[j] = PointerGetDatum(&tids[j]);
			distvals[j] = Float8GetDatum(ans->hits[off + j].dist);
		}
		kdg_ref_to_tid(kdg_row_tid(&src, i), &qtid);
		values[0] = PointerGetDatum(&qtid);
		values[1] = PointerGetDatum(construct_array(tidvals, n, TIDOID,
													sizeof(ItemPointerData), false,
													TYPALIGN_SHORT));
		values[2] = PointerGetDatum(construct_array(distvals, n, FLOAT8OID,
													sizeof(float8), FLOAT8PASSBYVAL,
													TYPALIGN_DOUBLE));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(rowcxt);
		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	MemoryContextDelete(rowcxt);
	return (Datum) 0;
}
