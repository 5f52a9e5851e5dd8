/*
 * output.c
 *	  Returning answers as rows: one emitter for every function that returns
 *	  pairs of query and neighbour.
 *
 * Rows are materialized into a tuplestore (InitMaterializedSRF), one per
 * hit, in the order of the queries and then of the hits.  The columns are
 * those of the function's declared result: an optional query key
 * (query_ord or query_ctid), then nn_ctid, and when declared, distance and
 * rank.
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/tuplestore.h"

#include "kdgpu.h"

/*
 * Emit ans as rows.  For KD_KEY_CTID, query q is the point of ordinal q of
 * query_src.
 */
void
kdg_emit(FunctionCallInfo fcinfo, const KdSource *src, const KdAnswer *ans,
		KdQueryKey key, const KdSource *query_src)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TupleDesc	desc;
	int			first = key == KD_KEY_NONE ? 0 : 1;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};
	ItemPointerData qtid;
	ItemPointerData tid;

	/* the expected descriptor also serves a single-column (scalar) result */
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	desc = rsinfo->setDesc;
	Assert(desc->natts <= 4);

	for (int64 i = 0; i < ans->nq; i++)
	{
		int64		q = ans->order ? ans->order[i] : i;

		if (key == KD_KEY_ORD)
			values[0] = Int32GetDatum((int32) (i + 1));
		else if (key == KD_KEY_CTID)
		{
			kdg_ref_to_tid(kdg_row_tid(query_src, i), &qtid);
			values[0] = PointerGetDatum(&qtid);
		}
		for (int64 j = ans->offsets[q]; j < ans->offsets[q + 1]; j++)
		{
			const KdHit *hit = &ans->hits[j];

			kdg_ref_to_tid(hit->ref, &tid);
			values[first] = PointerGetDatum(&tid);
			if (desc->natts > first + 1)
			{
				values[first + 1] = Float8GetDatum(hit->dist);
				values[first + 2] = Int32GetDatum((int32) (j - ans->offsets[q] + 1));
			}
			tuplestore_putvalues(rsinfo->setResult, desc, values, nulls);
		}
		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
	}
}
