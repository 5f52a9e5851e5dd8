/*
 * pairs_funcs.c
 *	  kd_pairs_within: every pair of a table's rows within a distance of
 *	  each other, once, as PostGIS's ST_DWithin self-join gives them.
 *
 * The pairs come slice by slice (local/pairs_within.c), exact, each with
 * its distance, and are gathered into one answer whose queries are the
 * table's rows in ctid (or key) order: a pair belongs to its row whose
 * ctid (or key) is lower, and a row's pairs are ordered by (distance,
 * identity).  The answer is returned as rows (output.c), so that in FROM
 * the streaming scan hands them up the plan without a tuplestore; it is
 * held in memory at 24 bytes a pair, within kdgpu.answer_memory_limit.
 * A row is not paired with itself, and rows at the same place are pairs at
 * distance 0.  The distance is query <-> nn (for geography, whose sphere
 * distance is not symmetric to the last bit, a pair is returned when that
 * order's distance is within).
 */
#include "postgres.h"

#include "miscadmin.h"

#include "funcs/funcs.h"

/* The pairs gathered from the slices, each by its query's ordinal. */
typedef struct KdgPairList
{
	const KdSource *src;
	double		distance;
	int64		n;
	int64		cap;
	int64	   *qord;			/* per pair: its query's ordinal */
	KdHit	   *hit;			/* per pair: the other row and the distance */
} KdgPairList;

/* Make room for more pairs than the list has, within the memory limit. */
static void
pairs_grow(KdgPairList *list, int64 more)
{
	int64		cap = Max(list->cap * 2, list->n + more);
	double		bytes = (double) cap * (sizeof(int64) + 2 * sizeof(KdHit));

	if (bytes > kdg_answer_memory_limit())
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("kd_pairs_within needs more than kdgpu.answer_memory_limit (%.0f MB) for its pairs",
						kdg_answer_memory_limit() / (1024 * 1024)),
				 errhint("Lower the distance, or raise kdgpu.answer_memory_limit.")));
	list->qord = list->cap ? repalloc_huge(list->qord, sizeof(int64) * cap) :
		palloc_extended(sizeof(int64) * cap, MCXT_ALLOC_HUGE);
	list->hit = list->cap ? repalloc_huge(list->hit, sizeof(KdHit) * cap) :
		palloc_extended(sizeof(KdHit) * cap, MCXT_ALLOC_HUGE);
	list->cap = cap;
}

/*
 * kdg_pairs_within consumer: append the slice's pairs, each under its row
 * of lower identity.
 */
static void
pairs_gather(void *arg, const KdgPairSlice *slice)
{
	KdgPairList *list = arg;
	const KdSource *src = list->src;
	int64		kept = 0;

	for (int64 q = 0; q < slice->len; q++)
		kept += slice->kept[q];
	if (list->n + kept > list->cap)
		pairs_grow(list, kept);
	for (int64 q = 0; q < slice->len; q++)
	{
		int64		a = slice->ords[slice->first + q];
		const KdNeighbor *hit = slice->hits + slice->offsets[q];

		for (int32 k = 0; k < slice->kept[q]; k++)
		{
			int64		b = hit[k].ref;
			bool		a_first = kdg_row_ref(src, a) < kdg_row_ref(src, b);
			int64		qo = a_first ? a : b;
			int64		no = a_first ? b : a;
			double		d = hit[k].d2;

			if (src->type == KD_TYPE_GEOGRAPHY)
			{
				/* query <-> nn, as written: kdg_metric(x, y) is y <-> x */
				d = kdg_metric(src->type, kdg_row_coords(src, no),
							   kdg_row_coords(src, qo), src->dim);
				if (!(d <= list->distance))
					continue;
			}
			list->qord[list->n] = qo;
			list->hit[list->n].dist = d;
			list->hit[list->n].ref = kdg_row_ref(src, no);
			list->n++;
		}
		if ((q & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
	}
}

/* kdg_parallel_for body: order queries [begin, end)'s pairs by (distance, ref). */
static void
sort_range(void *arg, int64 begin, int64 end)
{
	KdAnswer   *ans = arg;

	for (int64 q = begin; q < end; q++)
	{
		KdHit	   *h = ans->hits + ans->offsets[q];
		int64		m = ans->offsets[q + 1] - ans->offsets[q];

		/* a row has few pairs: an insertion sort */
		for (int64 i = 1; i < m; i++)
		{
			KdHit		x = h[i];
			int64		j = i;

			for (; j > 0 && (h[j - 1].dist > x.dist ||
							 (h[j - 1].dist == x.dist && h[j - 1].ref > x.ref)); j--)
				h[j] = h[j - 1];
			h[j] = x;
		}
	}
}

/*
 * The answer of the gathered pairs: a query per row of the source, in
 * ordinal order, holding the pairs it is the lower row of.
 */
static KdAnswer *
pairs_answer(const KdgPairList *list)
{
	int64		n = list->src->n;
	KdAnswer   *ans = palloc0(sizeof(KdAnswer));
	int64	   *next;

	ans->nq = n;
	ans->offsets = palloc_extended(sizeof(int64) * (n + 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	ans->hits = palloc_extended(sizeof(KdHit) * Max(list->n, 1), MCXT_ALLOC_HUGE);
	for (int64 p = 0; p < list->n; p++)
		ans->offsets[list->qord[p] + 1]++;
	for (int64 q = 0; q < n; q++)
		ans->offsets[q + 1] += ans->offsets[q];
	next = palloc_extended(sizeof(int64) * Max(n, 1), MCXT_ALLOC_HUGE);
	memcpy(next, ans->offsets, sizeof(int64) * n);
	for (int64 p = 0; p < list->n; p++)
		ans->hits[next[list->qord[p]]++] = list->hit[p];
	pfree(next);
	kdg_parallel_for(n, 4096, sort_range, ans);
	return ans;
}

/*
 * kd_pairs_within(rel [, col], distance [, key_col]): every pair of rows
 * within distance, once, as (query_ctid, nn_ctid, distance) or (query_key,
 * nn_key, distance).
 */
KdRows *
kdg_pairs_within_rows(FunctionCallInfo fcinfo)
{
	KdArgs		args;
	KdTable    *t = palloc0(sizeof(KdTable));
	KdgPairList list;
	KdAnswer   *ans;

	kdg_args(fcinfo, &args, t);
	memset(&list, 0, sizeof(list));
	list.distance = PG_GETARG_FLOAT8(args.next);
	kdg_check_radius(list.distance, "distance", 0);
	kdg_table_read(t);
	list.src = &t->head;
	kdg_pairs_within(&t->head, kdg_pairs_tree(&t->head), list.distance, true,
					 "kd_pairs_within", pairs_gather, &list);
	ans = pairs_answer(&list);
	if (list.cap)
	{
		pfree(list.qord);
		pfree(list.hit);
	}
	return kdg_rows_pairs(t, ans, KD_KEY_ROW, t);
}
