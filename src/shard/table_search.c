/*
 * table_search.c
 *	  Exact answers over every leaf of a table: each leaf is searched as a
 *	  table of its own (search.c, with its kdgpu index's tree when that
 *	  qualifies), and the leaves' answers are merged.
 *
 * A leaf's answer to a query is exact within the leaf and its hits carry
 * the rows' refs (kdgpu.h), which order rows across the whole table.  So
 * the k nearest rows of the table are the first k, by (distance, ref), of
 * the union of each leaf's k nearest: a row beyond a leaf's first k has k
 * rows of its own leaf before it.  Range and box answers are the union,
 * sorted the same way (a box hit's distance is 0, so box hits sort by ref).
 * A foreign leaf's answers come from its server (remote.c), exact there
 * in the same order, and merge the same way.
 *
 * Each local leaf is searched in a memory context of its own, dropped once
 * its answers are merged, so only one leaf's tree is held at a time.
 * All-kNN over several leaves is table_allknn.c's.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"

#include "shard/shard.h"

/* Whether hit a comes before hit b: by distance, then ref. */
static inline bool
kdg_hit_before(const KdHit *a, const KdHit *b)
{
	return a->dist < b->dist || (a->dist == b->dist && a->ref < b->ref);
}

/* The hits of an answer's query i, as its order maps it; *n their number. */
const KdHit *
kdg_answer_hits(const KdAnswer *ans, int64 i, int64 *n)
{
	int64		q = ans->order ? ans->order[i] : i;

	*n = ans->offsets[q + 1] - ans->offsets[q];
	return ans->hits + ans->offsets[q];
}

/*
 * Merge hits a[0 .. na) and b[0 .. nb), each in order, into out by
 * (distance, ref), keeping at most limit (none when limit < 0); returns the
 * number kept.
 */
int64
kdg_hits_merge(const KdHit *a, int64 na, const KdHit *b, int64 nb,
			   KdHit *out, int limit)
{
	int64		n = na + nb;
	int64		ia = 0;
	int64		ib = 0;

	if (limit >= 0)
		n = Min(n, limit);
	for (int64 j = 0; j < n; j++)
	{
		if (ib >= nb || (ia < na && kdg_hit_before(&a[ia], &b[ib])))
			out[j] = a[ia++];
		else
			out[j] = b[ib++];
	}
	return n;
}

/* What the threads of answer_merge share. */
typedef struct KdAnswerMerge
{
	const KdAnswer *acc;
	const KdAnswer *part;
	int64		first;
	int			limit;
	KdAnswer   *out;
} KdAnswerMerge;

/* Query i's hits in acc (*a, *na) and in part (*b, *nb); none where it has none. */
static inline void
answer_merge_inputs(const KdAnswerMerge *m, int64 i, const KdHit **a, int64 *na,
					const KdHit **b, int64 *nb)
{
	*na = 0;
	*nb = 0;
	*a = m->acc ? kdg_answer_hits(m->acc, i, na) : NULL;
	*b = NULL;
	if (i >= m->first && i < m->first + m->part->nq)
		*b = kdg_answer_hits(m->part, i - m->first, nb);
}

/* kde_parallel_for body of answer_merge: merge queries begin .. end into place. */
static void
answer_merge_range(void *arg, int64_t begin, int64_t end)
{
	KdAnswerMerge *m = arg;

	for (int64 i = begin; i < end; i++)
	{
		const KdHit *a;
		const KdHit *b;
		int64		na;
		int64		nb;

		answer_merge_inputs(m, i, &a, &na, &b, &nb);
		kdg_hits_merge(a, na, b, nb, m->out->hits + m->out->offsets[i], m->limit);
	}
}

/*
 * Merge part, the answers to queries first .. first + part->nq - 1, into
 * acc, the answers to all nq queries (NULL: none yet); keep at most limit
 * hits per query (no limit when limit < 0).  Returns a new answer in the
 * current memory context; the queries are merged on the engine's threads.
 */
static KdAnswer *
answer_merge(const KdAnswer *acc, const KdAnswer *part, int64 first,
			 int64 nq, int limit)
{
	KdAnswer   *out = palloc0(sizeof(KdAnswer));
	KdAnswerMerge m = {acc, part, first, limit, out};
	int64		total = 0;

	out->nq = nq;
	out->offsets = kdg_alloc_large(CurrentMemoryContext, sizeof(int64) * (nq + 1), false);
	for (int64 i = 0; i < nq; i++)
	{
		const KdHit *a;
		const KdHit *b;
		int64		na;
		int64		nb;

		answer_merge_inputs(&m, i, &a, &na, &b, &nb);
		out->offsets[i] = total;
		total += limit >= 0 ? Min(na + nb, limit) : na + nb;
	}
	out->offsets[nq] = total;
	out->hits = kdg_alloc_large(CurrentMemoryContext, sizeof(KdHit) * total, false);
	kdg_parallel_for(nq, 4096, answer_merge_range, &m);
	return out;
}

/* Free an answer's arrays and the answer itself. */
static void
answer_free(KdAnswer *ans)
{
	pfree(ans->offsets);
	if (ans->hits)
		pfree(ans->hits);
	if (ans->order)
		pfree(ans->order);
	pfree(ans);
}

/* A search of one leaf whose answers it merges into acc (kdg_each_leaf). */
typedef KdAnswer *(*KdLeafSearch) (const KdTable *t, int leaf,
								   const KdgTree *tree, void *arg,
								   KdAnswer *acc);

/*
 * Run search on each local leaf with points, in a memory context of the
 * leaf's own, and merge the answers to nq queries over every leaf, keeping
 * limit hits per query (no limit when limit < 0).  Foreign leaves run
 * t->rfn on their servers: their calls are sent first and their answers
 * read last, so that every server and the local leaves work at once.
 * A kNN or radius search (flat_ok) is given the tree
 * kdg_source_search_tree picks, none where the leaf is searched flat.
 * Returns NULL when no leaf has points.
 */
static KdAnswer *
kdg_each_leaf(const KdTable *t, KdLeafSearch search, bool flat_ok, void *arg,
			  int64 nq, int limit)
{
	KdAnswer   *acc = NULL;
	instr_time	start;
	instr_time	local_at;		/* the local leaves searched and merged */
	instr_time	read_at;		/* every foreign leaf's answer read */
	instr_time	done_at;

	INSTR_TIME_SET_CURRENT(start);
	for (int p = 0; p < t->nparts; p++)
		if (t->parts[p].remote && kdg_remote_can_send(t, p))
			kdg_remote_send(t, p, t->rfn, t->rargs, &t->rparams, t->rbatched, t->rdistance,
							t->rchunks);
	for (int p = 0; p < t->nparts; p++)
	{
		MemoryContext leafcxt;
		MemoryContext oldcxt;
		KdAnswer   *merged;
		KdAnswer   *prev = acc;

		if (t->parts[p].n == 0)
			continue;
		CHECK_FOR_INTERRUPTS();
		leafcxt = AllocSetContextCreate(CurrentMemoryContext, "kdgpu leaf",
										ALLOCSET_DEFAULT_SIZES);
		oldcxt = MemoryContextSwitchTo(leafcxt);
		merged = search(t, p, flat_ok ? kdg_source_search_tree(&t->parts[p], nq, false) :
						kdg_source_tree(&t->parts[p], nq, false), arg, acc);
		MemoryContextSwitchTo(oldcxt);
		/* the merged answers outlive the leaf's context */
		acc = palloc0(sizeof(KdAnswer));
		acc->nq = merged->nq;
		acc->offsets = palloc_extended(sizeof(int64) * (merged->nq + 1), MCXT_ALLOC_HUGE);
		memcpy(acc->offsets, merged->offsets, sizeof(int64) * (merged->nq + 1));
		acc->hits = palloc_extended(sizeof(KdHit) * Max(merged->offsets[merged->nq], 1),
									MCXT_ALLOC_HUGE);
		memcpy(acc->hits, merged->hits, sizeof(KdHit) * merged->offsets[merged->nq]);
		MemoryContextDelete(leafcxt);
		if (prev)
			answer_free(prev);
	}
	INSTR_TIME_SET_CURRENT(local_at);
	if (t->nremote > 0)
		kdg_remote_drain(t, nq >= KD_LARGE_ANSWER);
	INSTR_TIME_SET_CURRENT(read_at);
	for (int p = 0; p < t->nparts; p++)
	{
		KdAnswer   *part;
		KdAnswer   *merged;

		if (t->parts[p].remote == NULL)
			continue;
		/* a partition whose server was busy with an earlier one's call */
		if (!kdg_remote_in_flight(&t->parts[p]))
			kdg_remote_send(t, p, t->rfn, t->rargs, &t->rparams, t->rbatched, t->rdistance,
							t->rchunks);
		part = kdg_remote_answer(t, p, nq, limit, t->rbatched, t->rdistance);
		merged = answer_merge(acc, part, 0, nq, limit);
		if (acc)
			answer_free(acc);
		answer_free(part);
		acc = merged;
	}
	if (t->nremote > 0)
	{
		INSTR_TIME_SET_CURRENT(done_at);
		INSTR_TIME_SUBTRACT(done_at, read_at);
		INSTR_TIME_SUBTRACT(read_at, local_at);
		INSTR_TIME_SUBTRACT(local_at, start);
		elog(DEBUG1, "kdgpu: %lld queries over %d partitions: sent, and local ones searched, in %.0f ms, "
			 "foreign ones' answers read in %.0f ms, decoded and merged in %.0f ms",
			 (long long) nq, t->nparts, INSTR_TIME_GET_MILLISEC(local_at),
			 INSTR_TIME_GET_MILLISEC(read_at), INSTR_TIME_GET_MILLISEC(done_at));
	}
	return acc;
}

/* Queries and their limit, for the leaf searches below. */
typedef struct KdQueries
{
	const double *points;		/* full coordinates, or box corners */
	const double *highs;		/* box high corners */
	int64		nq;
	int			k;				/* kNN */
	const double *radii;		/* radius */
	int64		nradii;
} KdQueries;

/* One leaf's kNN answers, merged into acc. */
static KdAnswer *
kdg_leaf_knn(const KdTable *t, int leaf, const KdgTree *tree, void *arg,
			 KdAnswer *acc)
{
	KdQueries  *q = arg;

	return answer_merge(acc, kdg_search_knn(&t->parts[leaf], tree, q->points, q->nq, q->k),
							0, q->nq, q->k);
}

/* The k nearest rows of the table to each of nq queries, exact. */
KdAnswer *
kdg_table_knn(const KdTable *t, const double *queries, int64 nq, int k)
{
	KdQueries	q = {queries, NULL, nq, k};
	KdAnswer   *ans;

	if (!t->partitioned)
		return kdg_search_knn(&t->head, kdg_source_search_tree(&t->head, nq, false), queries, nq, k);
	ans = kdg_each_leaf(t, kdg_leaf_knn, true, &q, nq, k);
	return ans ? ans : kdg_empty_answer(nq);
}

/* One leaf's radius answers, merged into acc. */
static KdAnswer *
kdg_leaf_radius(const KdTable *t, int leaf, const KdgTree *tree, void *arg,
				KdAnswer *acc)
{
	KdQueries  *q = arg;

	return answer_merge(acc, kdg_search_radius(&t->parts[leaf], tree, q->points, q->nq,
												   q->radii, q->nradii),
							0, q->nq, -1);
}

/* The rows within radii of nq centres, exact, by (distance, ref). */
KdAnswer *
kdg_table_radius(const KdTable *t, const double *centers, int64 nq,
				 const double *radii, int64 nradii)
{
	KdQueries	q = {centers, NULL, nq, 0, radii, nradii};
	KdAnswer   *ans;

	if (!t->partitioned)
		return kdg_search_radius(&t->head, kdg_source_search_tree(&t->head, nq, false), centers, nq,
								 radii, nradii);
	ans = kdg_each_leaf(t, kdg_leaf_radius, true, &q, nq, -1);
	return ans ? ans : kdg_empty_answer(nq);
}

/* One leaf's box answers, merged into acc. */
static KdAnswer *
kdg_leaf_box(const KdTable *t, int leaf, const KdgTree *tree, void *arg,
			 KdAnswer *acc)
{
	KdQueries  *q = arg;

	return answer_merge(acc, kdg_search_box(&t->parts[leaf], tree, q->points, q->highs,
												q->nq),
							0, q->nq, -1);
}

/* The rows inside nq boxes, by ref. */
KdAnswer *
kdg_table_box(const KdTable *t, const double *lows, const double *highs,
			  int64 nq)
{
	KdQueries	q = {lows, highs, nq};
	KdAnswer   *ans;

	if (!t->partitioned)
		return kdg_search_box(&t->head, kdg_source_tree(&t->head, nq, false), lows, highs, nq);
	ans = kdg_each_leaf(t, kdg_leaf_box, false, &q, nq, -1);
	return ans ? ans : kdg_empty_answer(nq);
}
