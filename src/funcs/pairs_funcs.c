/*
 * pairs_funcs.c
 *	  kd_pairs_within: every pair of a table's rows within a distance of
 *	  each other, once, as PostGIS's ST_DWithin self-join gives them.
 *
 * The pairs come slice by slice (local/pairs_within.c), exact, each with
 * its distance and under its row whose ctid (or key) is lower, and are
 * gathered on the engine's threads into one answer: its queries are the
 * rows in the search's order, and its order maps each row to its query,
 * so that the rows come out in ctid (or key) order, a row's pairs ordered
 * by (distance, identity).  The answer is returned as rows (output.c), so
 * that in FROM the streaming scan hands them up the plan without a
 * tuplestore; it is held in memory at 16 bytes a pair and 16 a row,
 * within kdgpu.answer_memory_limit.
 * A row is not paired with itself, and rows at the same place are pairs at
 * distance 0.  The distance is query <-> nn (for geography, whose sphere
 * distance is not symmetric to the last bit, a pair is returned when that
 * order's distance is within).
 */
#include "postgres.h"

#include "funcs/funcs.h"

/*
 * The pairs gathered from the slices, as the answer they make: query g is
 * the g-th point of the search order, the point of ordinal ords[g], and
 * order maps an ordinal to its query.
 */
typedef struct KdgPairList
{
	int64		n;				/* pairs */
	int64		cap;
	KdHit	   *hits;			/* the other row's identity and the distance */
	int64	   *offsets;		/* per query, in the search order */
	int64	   *order;			/* per ordinal: its query */
} KdgPairList;

/* What the threads of gather_range share: one slice. */
typedef struct KdgGather
{
	const KdgPairSlice *slice;
	KdgPairList *list;
} KdgGather;

/* Make room for more pairs than the list has, within the memory limit. */
static void
pairs_grow(KdgPairList *list, int64 nq, int64 more)
{
	int64		cap = Max(list->cap * 2, list->n + more);
	double		bytes = (double) cap * sizeof(KdHit) + (double) nq * 2 * sizeof(int64);

	if (bytes > kdg_answer_memory_limit())
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("kd_pairs_within needs more than kdgpu.answer_memory_limit (%.0f MB) for its pairs",
						kdg_answer_memory_limit() / (1024 * 1024)),
				 errhint("Lower the distance, or raise kdgpu.answer_memory_limit.")));
	list->hits = list->cap ? repalloc_huge(list->hits, sizeof(KdHit) * cap) :
		palloc_extended(sizeof(KdHit) * cap, MCXT_ALLOC_HUGE);
	list->cap = cap;
}

/*
 * kdg_parallel_for body: copy the pairs of a slice's queries [begin, end)
 * to their places in the list, each neighbour as its row's identity.
 */
static void
gather_range(void *arg, int64 begin, int64 end)
{
	const KdgGather *g = arg;
	const KdgPairSlice *slice = g->slice;
	KdgPairList *list = g->list;

	for (int64 q = begin; q < end; q++)
	{
		const KdNeighbor *hit = slice->hits + slice->offsets[q];
		KdHit	   *out = list->hits + list->offsets[slice->first + q];

		for (int32 k = 0; k < slice->kept[q]; k++)
		{
			out[k].ref = slice->refs[hit[k].ref];
			out[k].dist = hit[k].d2;
		}
	}
}

/*
 * kdg_pairs_within consumer: append the slice's pairs, which are each
 * query's (the lower row of each pair), query after query.
 */
static void
pairs_gather(void *arg, const KdgPairSlice *slice)
{
	KdgPairList *list = arg;
	KdgGather	g = {slice, list};
	int64		kept = 0;

	for (int64 q = 0; q < slice->len; q++)
	{
		list->offsets[slice->first + q] = list->n + kept;
		list->order[slice->ords[slice->first + q]] = slice->first + q;
		kept += slice->kept[q];
	}
	list->offsets[slice->first + slice->len] = list->n + kept;
	if (list->n + kept > list->cap)
		pairs_grow(list, slice->n, kept);
	kdg_parallel_for(slice->len, 1024, gather_range, &g);
	list->n += kept;
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
	KdAnswer   *ans = palloc0(sizeof(KdAnswer));
	double		distance;
	int64		n;

	kdg_args(fcinfo, &args, t);
	distance = PG_GETARG_FLOAT8(args.next);
	kdg_check_radius(distance, "distance", 0);
	kdg_table_read(t);
	n = t->head.n;
	memset(&list, 0, sizeof(list));
	list.offsets = palloc_extended(sizeof(int64) * (n + 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	list.order = palloc_extended(sizeof(int64) * Max(n, 1), MCXT_ALLOC_HUGE);
	kdg_pairs_within(&t->head, kdg_pairs_tree(&t->head), distance, true,
					 "kd_pairs_within", pairs_gather, &list);
	ans->nq = n;
	ans->offsets = list.offsets;
	ans->hits = list.cap ? list.hits : palloc(sizeof(KdHit));
	ans->order = list.order;
	kdg_parallel_for(n, 4096, sort_range, ans);
	return kdg_rows_pairs(t, ans, KD_KEY_ROW, t);
}
