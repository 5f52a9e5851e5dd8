/*
 * pairs_funcs.c
 *	  kd_pairs_within: every pair of a table's rows within a distance of
 *	  each other, once, as PostGIS's ST_DWithin self-join gives them.
 *
 * The pairs come slice by slice (local/pairs_within.c), exact, each with
 * its distance, and go into the function's tuplestore as they come, which
 * spills to disk past work_mem: the memory a call holds is that of one
 * slice, however many pairs there are.  A pair is returned once, its
 * query row the one whose ctid (or key, for the key form) is lower; a row
 * is not paired with itself, and rows at the same place are pairs at
 * distance 0.  The distance is query <-> nn (for geography, whose sphere
 * distance is not symmetric to the last bit, a pair is returned when that
 * order's distance is within).  The pairs come in no particular order.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "funcs/funcs.h"

PG_FUNCTION_INFO_V1(kdgpu_pairs_within);

/* What the slices' consumer writes to. */
typedef struct KdgPairRows
{
	ReturnSetInfo *rsinfo;
	const KdSource *src;
	bool		keyed;
	double		distance;
} KdgPairRows;

/* A row's identity column: its key or its TID (room for it at tid). */
static Datum
ident_datum(const KdgPairRows *out, uint64 ref, ItemPointer tid)
{
	if (out->keyed)
		return Int64GetDatum(kdg_ref_to_key(ref));
	kdg_ref_to_tid(ref, tid);
	return PointerGetDatum(tid);
}

/* kdg_pairs_within consumer: a row per pair of the slice. */
static void
pairs_rows(void *arg, const KdgPairSlice *slice)
{
	KdgPairRows *out = arg;

	for (int64 q = 0; q < slice->len; q++)
	{
		uint64		a = kdg_row_ref(out->src, slice->ords[slice->first + q]);
		const KdNeighbor *hit = slice->hits + slice->offsets[q];

		for (int32 k = 0; k < slice->kept[q]; k++)
		{
			uint64		b = kdg_row_ref(out->src, hit[k].ref);
			ItemPointerData tids[2];
			Datum		values[3];
			bool		nulls[3] = {false, false, false};
			double		d = hit[k].d2;

			if (out->src->type == KD_TYPE_GEOGRAPHY)
			{
				/* query <-> nn, as written: kdg_metric(x, y) is y <-> x */
				int64		qo = a < b ? slice->ords[slice->first + q] : hit[k].ref;
				int64		no = a < b ? hit[k].ref : slice->ords[slice->first + q];

				d = kdg_metric(out->src->type, kdg_row_coords(out->src, no),
							   kdg_row_coords(out->src, qo), out->src->dim);
				if (!(d <= out->distance))
					continue;
			}
			values[0] = ident_datum(out, Min(a, b), &tids[0]);
			values[1] = ident_datum(out, Max(a, b), &tids[1]);
			values[2] = Float8GetDatum(d);
			tuplestore_putvalues(out->rsinfo->setResult, out->rsinfo->setDesc,
								 values, nulls);
		}
		if ((q & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
	}
}

/*
 * kd_pairs_within(rel [, col], distance [, key_col]): every pair of rows
 * within distance, once, as (query_ctid, nn_ctid, distance) or (query_key,
 * nn_key, distance).
 */
Datum
kdgpu_pairs_within(PG_FUNCTION_ARGS)
{
	KdArgs		args;
	KdTable    *t = palloc0(sizeof(KdTable));
	KdgPairRows out;
	double		distance;

	kdg_args(fcinfo, &args, t);
	distance = PG_GETARG_FLOAT8(args.next);
	kdg_check_radius(distance, "distance", 0);
	kdg_table_read(t);
	InitMaterializedSRF(fcinfo, 0);
	out.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	out.src = &t->head;
	out.keyed = t->ident == KD_IDENT_KEY;
	out.distance = distance;
	kdg_pairs_within(&t->head, kdg_pairs_tree(&t->head), distance, true,
					 "kd_pairs_within", pairs_rows, &out);
	return (Datum) 0;
}
