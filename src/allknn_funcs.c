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
Datum
kdgpu_all_knn(PG_FUNCTION_ARGS)
{
	KdTable		t;
	KdAnswer   *ans = kdg_all_knn_answer(fcinfo, &t);

	kdg_emit(fcinfo, &t, ans, KD_KEY_ROW, &t);
	return (Datum) 0;
}

/*
 * The identity of n neighbours as arrays at values (one, or for partitions
 * two: regclass[] and tid[]); returns how many arrays.
 */
static int
kdg_ident_arrays(const KdTable *t, const KdHit *hits, int n, Datum *values)
{
	ItemPointer tids = palloc(sizeof(ItemPointerData) * Max(n, 1));
	Datum	   *first = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *second = palloc(sizeof(Datum) * Max(n, 1));
	Datum		cols[2];

	for (int j = 0; j < n; j++)
	{
		kdg_ident_datums(t, hits[j].ref, cols, &tids[j]);
		first[j] = cols[0];
		second[j] = cols[1];
	}
	switch (t->ident)
	{
		case KD_IDENT_KEY:
			values[0] = PointerGetDatum(construct_array(first, n, INT8OID, sizeof(int64),
														FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
			return 1;
		case KD_IDENT_PART:
			values[0] = PointerGetDatum(construct_array(first, n, REGCLASSOID, sizeof(Oid),
														true, TYPALIGN_INT));
			values[1] = PointerGetDatum(construct_array(second, n, TIDOID,
														sizeof(ItemPointerData), false,
														TYPALIGN_SHORT));
			return 2;
		case KD_IDENT_CTID:
			break;
	}
	values[0] = PointerGetDatum(construct_array(first, n, TIDOID, sizeof(ItemPointerData),
												false, TYPALIGN_SHORT));
	return 1;
}

/*
 * kd_all_knn_arrays(rel [, col], k [, key_col], include_self): one row per
 * point, its neighbours' identities and distances as arrays in rank order.
 */
Datum
kdgpu_all_knn_arrays(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KdTable		t;
	KdAnswer   *ans = kdg_all_knn_answer(fcinfo, &t);
	uint64	   *qrefs = kdg_table_refs(&t);
	MemoryContext rowcxt;
	MemoryContext oldcxt;
	ItemPointerData qtid;

	InitMaterializedSRF(fcinfo, 0);
	rowcxt = AllocSetContextCreate(CurrentMemoryContext, "kd_all_knn_arrays row",
								   ALLOCSET_DEFAULT_SIZES);
	for (int64 i = 0; i < ans->nq; i++)
	{
		int64		q = ans->order ? ans->order[i] : i;
		int64		off = ans->offsets[q];
		int			n = (int) (ans->offsets[q + 1] - off);
		Datum	   *distvals;
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};
		int			col;

		oldcxt = MemoryContextSwitchTo(rowcxt);
		distvals = palloc(sizeof(Datum) * Max(n, 1));
		for (int j = 0; j < n; j++)
			distvals[j] = Float8GetDatum(ans->hits[off + j].dist);
		col = kdg_ident_datums(&t, qrefs[i], values, &qtid);
		col += kdg_ident_arrays(&t, ans->hits + off, n, values + col);
		values[col] = PointerGetDatum(construct_array(distvals, n, FLOAT8OID,
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
