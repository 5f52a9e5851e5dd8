/*
 * knn_refine.c
 *	  Making the engine's kNN candidates exact (search.c's kNN rule) and
 *	  packaging them as answers.
 *
 * The engine returns kk candidates a query, ordered by its rounded d2.
 * Pass 1 (on the engine's threads) takes a query's first k as its answer
 * when every eligible point is a candidate or a clear gap (kdg_slack)
 * follows the k-th; each answer is then ranked by the operator's distance
 * and the rows' refs (kdg_rank).  Pass 2 fetches every point within the
 * slack radius of the others' k-th candidate with a radius search, in
 * groups, and ranks them on the threads too.  A query's own point may be
 * excluded (a slice of All-kNN); a query left short of k by it asks again
 * with the radius doubled.  The threads call nothing of PostgreSQL: the
 * heap pages their refs need (HOT chains) are read before them.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"

#include "local/local.h"

/* radius fallbacks run in groups of this many queries */
#define KD_FALLBACK_GROUP 1024

/* What pass 1 of kdg_refine_knn shares with its threads. */
typedef struct KdRefine
{
	const KdSource *src;
	KdNeighbor *raw;
	int32	   *count;
	int			k;
	int			kk;
	const double *queries;
	const uint64 *exclude;
	int64		avail;
} KdRefine;

/*
 * Pass 1 of kdg_refine_knn over queries [begin, end), on any thread: an
 * answer complete as found is re-ranked in place; one that needs pass 2 is
 * marked with count -1.  Only pure functions are called here.
 */
static void
kdg_refine_range(void *arg, int64_t begin, int64_t end)
{
	const KdRefine *r = arg;
	const KdSource *src = r->src;
	int			full = src->dim + src->extra;
	KdHit		scratch[KD_MAX_K + 1];

	for (int64 q = begin; q < end; q++)
	{
		KdNeighbor *cand = r->raw + q * r->kk;
		int			c = r->count[q];
		int64		ncand;
		int64		n;

		/*
		 * The candidates' rows lie anywhere in the source: ask for the next
		 * query's while this one is ranked, so that their cache misses
		 * overlap its work rather than stall it.
		 */
		if (q + 1 < end)
			for (int i = 0; i < r->count[q + 1]; i++)
				__builtin_prefetch(kdg_row_coords(src, cand[r->kk + i].ref));
		/* the query's own point is no candidate where it is excluded */
		if (r->exclude)
		{
			int			kept = 0;

			for (int i = 0; i < c; i++)
				if (cand[i].ref != r->exclude[q])
					cand[kept++] = cand[i];
			c = kept;
		}
		if (c == r->avail)
			ncand = c;			/* every eligible point is a candidate */
		else if (c > r->k &&
				 sqrt(cand[r->k].d2) > kdg_slack(src->type, sqrt(cand[r->k - 1].d2)))
			ncand = r->k;		/* a clear gap after the k-th */
		else
		{
			/* pass 2's radius starts at the k-th, or the farthest known */
			if (c < r->k)
				cand[r->k - 1].d2 = c > 0 ? cand[c - 1].d2 : 0.0;
			r->count[q] = -1;
			continue;
		}
		n = Min(kdg_rank(src, r->queries + q * full, cand, ncand, -1, scratch), r->k);
		memcpy(r->raw + q * r->kk, scratch, sizeof(KdHit) * n);
		r->count[q] = (int32) n;
	}
}

/* What pass 2 of kdg_refine_knn shares with its threads: one group. */
typedef struct KdRefineGroup
{
	const KdSource *src;
	const double *queries;
	const uint64 *exclude;
	const int64 *pending;		/* the group's queries */
	const KdRangeResult *res;	/* their candidates */
	KdHit	   *ranked;			/* per query, at its candidates' offset */
	int64	   *n;				/* per query: how many ranked */
	int			k;
} KdRefineGroup;

/*
 * Pass 2 of kdg_refine_knn over queries [begin, end) of a group, on any
 * thread: rank each query's candidates of its radius search.  Only pure
 * functions are called here.
 */
static void
kdg_refine_group_range(void *arg, int64_t begin, int64_t end)
{
	const KdRefineGroup *r = arg;
	int			full = r->src->dim + r->src->extra;

	for (int64 i = begin; i < end; i++)
	{
		int64		q = r->pending[i];
		int64		off = r->res->offsets[i];

		r->n[i] = Min(kdg_rank(r->src, r->queries + q * full, r->res->hits + off,
							   r->res->offsets[i + 1] - off,
							   r->exclude ? (int64) r->exclude[q] : -1,
							   r->ranked + off), r->k);
	}
}

/*
 * Re-rank the engine's kNN answers in place.  raw holds nq runs of kk
 * neighbours (query q's at q * kk, count[q] of them); on return query q's
 * exact hits are at the same place, count[q] of them, as KdHits.  Query q's
 * point is at queries + q * (dim + extra), exclude[q] (if exclude is given)
 * is the ordinal it must not return, and avail is the number of points each
 * query may return.  Pass 1 (the answers complete as found) runs on the
 * engine's CPU threads; pass 2 (radius queries for the others) in groups,
 * each group's ranking on the threads too, again with a wider radius for a
 * query the first radius left short (one whose own excluded point took a
 * place in a list of KD_MAX_K).
 */
void
kdg_refine_knn(const KdSource *src, const KdgTree *tree, KdNeighbor *raw,
			  int32 *count, int64 nq, int k, int kk, const double *queries,
			  const uint64 *exclude, int64 avail)
{
	int			dim = src->dim;
	int			full = src->dim + src->extra;
	KdRefine	r = {src, raw, count, k, kk, queries, exclude, avail};
	KdRefineGroup rg = {src, queries, exclude, NULL, NULL, NULL, NULL, k};
	int64	   *pending = NULL;
	double	   *radius = NULL;		/* pass 2's, per pending query */
	int64		npending = 0;
	KdExec		exec;
	KdExec		rexec;			/* the radius queries': on the CPU for a
								 * tree in memory */
	KdError		err;

	StaticAssertStmt(sizeof(KdHit) == sizeof(KdNeighbor), "KdHit overlays KdNeighbor");

	kdg_exec_prepare(&exec);
	kdg_exec_for(&rexec, tree);
	if (tree->tree->coords)
		rexec.device = KD_DEVICE_CPU;
	/* pass 1's threads read no page: the candidates' are read here */
	if (src->hot && src->keyattnum == InvalidAttrNumber)
		kdg_hot_read_pages(src, raw, count, nq, kk);
	kdg_check_status(kde_parallel_for(&exec, nq, 4096, kdg_refine_range, &r, &err),
					&err, NULL, "kNN refinement");
	if (src->hot && src->keyattnum == InvalidAttrNumber)
		kdg_hot_threads_done(src->hot);
	for (int64 q = 0; q < nq; q++)
		if (count[q] < 0)
		{
			if (pending == NULL)
				pending = palloc_extended(sizeof(int64) * nq, MCXT_ALLOC_HUGE);
			pending[npending++] = q;
		}

	/*
	 * pass 2: every point within the slack radius, in groups of queries; a
	 * query still short of k points (its own point excluded from an engine
	 * list that held no more) asks again with the radius doubled
	 */
	if (npending > 0)
	{
		radius = palloc_extended(sizeof(double) * npending, MCXT_ALLOC_HUGE);
		for (int64 i = 0; i < npending; i++)
			radius[i] = kdg_slack(src->type, sqrt(raw[pending[i] * kk + k - 1].d2));
	}
	while (npending > 0)
	{
		int64		nshort = 0;

		for (int64 g = 0; g < npending; g += KD_FALLBACK_GROUP)
		{
			int64		m = Min(KD_FALLBACK_GROUP, npending - g);
			double	   *centers = palloc(sizeof(double) * dim * m);
			double	   *radii = palloc(sizeof(double) * m);
			KdRangeResult *res = kdg_range_result_new();
			KdHit	   *ranked;
			int64	   *nranked;

			for (int64 i = 0; i < m; i++)
			{
				memcpy(centers + i * dim, queries + pending[g + i] * full, sizeof(double) * dim);
				radii[i] = radius[g + i];
			}
			kdg_check_status(kdg_tree_range(tree, centers, radii, m, NULL, NULL, m,
											res, &rexec, &err),
							&err, NULL, "kNN refinement");
			/* rank on the engine's threads, which read no page */
			ranked = palloc_extended(sizeof(KdHit) * Max(res->offsets[m], 1), MCXT_ALLOC_HUGE);
			nranked = palloc(sizeof(int64) * m);
			rg.pending = pending + g;
			rg.res = res;
			rg.ranked = ranked;
			rg.n = nranked;
			if (src->hot && src->keyattnum == InvalidAttrNumber)
				kdg_hot_read_hits(src, res->hits, res->offsets[m]);
			kdg_check_status(kde_parallel_for(&exec, m, 16, kdg_refine_group_range,
											  &rg, &err),
							 &err, NULL, "kNN refinement");
			if (src->hot && src->keyattnum == InvalidAttrNumber)
				kdg_hot_threads_done(src->hot);
			/* shorts are written back at or before the one being read */
			for (int64 i = 0; i < m; i++)
			{
				int64		q = pending[g + i];
				int64		n = nranked[i];

				if (n < k && n < avail)
				{
					pending[nshort] = q;
					radius[nshort++] = 2 * kdg_slack(src->type, radii[i]);
				}
				else
				{
					memcpy(raw + q * kk, ranked + res->offsets[i], sizeof(KdHit) * n);
					count[q] = (int32) n;
				}
			}
			pfree(ranked);
			pfree(nranked);
			kde_range_result_free(res);
			pfree(radii);
			pfree(centers);
			CHECK_FOR_INTERRUPTS();
		}
		npending = nshort;
	}
}

/* What the threads of kdg_answer_copy_range share. */
typedef struct KdAnswerCopy
{
	const KdHit *from;			/* runs of kk */
	KdHit	   *to;				/* at the answer's offsets */
	const int32 *count;
	const int64 *offsets;
	int			kk;
} KdAnswerCopy;

/* kdg_parallel_for body: copy queries [begin, end)'s hits to their places. */
static void
kdg_answer_copy_range(void *arg, int64 begin, int64 end)
{
	const KdAnswerCopy *c = arg;

	for (int64 q = begin; q < end; q++)
		memcpy(c->to + c->offsets[q], c->from + q * c->kk, sizeof(KdHit) * c->count[q]);
}

/*
 * Package re-ranked kNN answers (query q's count[q] hits at q * kk, in
 * palloc'd memory) as a KdAnswer: copied on the engine's threads into an
 * array of their own where both arrays fit kdgpu.answer_memory_limit,
 * else compacted in place on this thread.
 */
KdAnswer *
kdg_knn_answer(KdHit *hits, const int32 *count, int64 nq, int kk)
{
	KdAnswer   *ans = palloc0(sizeof(KdAnswer));
	int64		total;

	ans->nq = nq;
	ans->offsets = kdg_alloc_large(CurrentMemoryContext, sizeof(int64) * (nq + 1), false);
	ans->offsets[0] = 0;
	for (int64 q = 0; q < nq; q++)
		ans->offsets[q + 1] = ans->offsets[q] + count[q];
	total = ans->offsets[nq];
	if ((double) (nq * kk + total) * sizeof(KdHit) <= kdg_answer_memory_limit())
	{
		KdAnswerCopy c = {hits, NULL, count, ans->offsets, kk};

		c.to = kdg_alloc_large(CurrentMemoryContext, sizeof(KdHit) * total, false);
		kdg_parallel_for(nq, 4096, kdg_answer_copy_range, &c);
		pfree(hits);
		ans->hits = c.to;
		return ans;
	}
	for (int64 q = 0; q < nq; q++)
		memmove(hits + ans->offsets[q], hits + q * kk, sizeof(KdHit) * count[q]);
	ans->hits = hits;
	return ans;
}
