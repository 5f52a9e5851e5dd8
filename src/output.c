/*
 * output.c
 *	  Returning answers as rows: one emitter for every function that returns
 *	  pairs of query and neighbour, and the columns that identify a row.
 *
 * Rows are materialized into a tuplestore (InitMaterializedSRF), one per
 * hit, in the order of the queries and then of the hits.  The columns are
 * those of the function's declared result: an optional query key
 * (query_ord, or the query row's identity), then the neighbour's identity,
 * and when declared, distance and rank.  A row's identity is one column,
 * its ctid or its key, or two, its partition and ctid (table.c).
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/tuplestore.h"

#include "kdgpu.h"

/*
 * Set the identity columns of the row of t whose ref is ref at values; tid
 * is room for its TID.  Returns the number of columns set.
 */
int
kdg_ident_datums(const KdTable *t, uint64 ref, Datum *values, ItemPointer tid)
{
	switch (t->ident)
	{
		case KD_IDENT_KEY:
			values[0] = Int64GetDatum(kdg_ref_to_key(ref));
			return 1;
		case KD_IDENT_PART:
			values[0] = ObjectIdGetDatum(t->partoids[ref >> KD_PART_SHIFT]);
			kdg_ref_to_tid(ref & ((UINT64CONST(1) << KD_PART_SHIFT) - 1), tid);
			values[1] = PointerGetDatum(tid);
			return 2;
		case KD_IDENT_CTID:
			break;
	}
	kdg_ref_to_tid(ref, tid);
	values[0] = PointerGetDatum(tid);
	return 1;
}

/*
 * Emit ans as rows of neighbours of t.  For KD_KEY_ROW, query i is the i-th
 * point of query_t.
 */
void
kdg_emit(FunctionCallInfo fcinfo, const KdTable *t, const KdAnswer *ans,
		KdQueryKey key, const KdTable *query_t)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TupleDesc	desc;
	int			first = 0;
	Datum		values[6];
	bool		nulls[6] = {false, false, false, false, false, false};
	ItemPointerData qtid;
	ItemPointerData tid;
	uint64	   *qrefs = key == KD_KEY_ROW ? kdg_table_refs(query_t) : NULL;

	/* the expected descriptor also serves a single-column (scalar) result */
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	desc = rsinfo->setDesc;
	Assert(desc->natts <= 6);

	for (int64 i = 0; i < ans->nq; i++)
	{
		int64		q = ans->order ? ans->order[i] : i;

		if (key == KD_KEY_ORD)
		{
			values[0] = Int32GetDatum((int32) (i + 1));
			first = 1;
		}
		else if (key == KD_KEY_ROW)
			first = kdg_ident_datums(query_t, qrefs[i], values, &qtid);
		for (int64 j = ans->offsets[q]; j < ans->offsets[q + 1]; j++)
		{
			const KdHit *hit = &ans->hits[j];
			int			col = first + kdg_ident_datums(t, hit->ref, values + first, &tid);

			if (desc->natts > col)
			{
				values[col] = Float8GetDatum(hit->dist);
				values[col + 1] = Int32GetDatum((int32) (j - ans->offsets[q] + 1));
			}
			tuplestore_putvalues(rsinfo->setResult, desc, values, nulls);
		}
		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
	}
}
