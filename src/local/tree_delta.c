/*
 * tree_delta.c
 *	  Searching an index tree whose rows differ from the rows a kd_*
 *	  function read by a few: the rows inserted since are searched in a tree
 *	  of their own beside it, and the tree's rows the function does not see
 *	  are dropped from its answers.
 *
 * A function's answers hold exactly the rows it read under its snapshot.
 * An index tree (kdam_ranked.c) references its rows by rank in ctid order,
 * the rows read by ordinal in ctid order; one pass over both TID lists
 * (kdg_rows_diff, core/) finds the tree's rows the function does not hold
 * ("gone") and the function's rows the tree does not hold ("added").  A
 * TID names one point until VACUUM has marked it dead in the tree (which
 * the trees' names follow; trees built from rows read are compared by
 * point too), so every other row's rank maps to its ordinal (rank_ord),
 * preserving order.
 *
 * The searches then run on both trees and merge:
 *
 *	kNN: the tree is asked for kk neighbours.  Dropping gone rows from a
 *	query's list leaves the nearest rows it holds, in (d2, ordinal) order,
 *	up to the last one listed; a query whose full list lost rows is asked
 *	again for four times as many, until it has kk rows that are not gone
 *	(or the tree has no more).  At KD_MAX_K the search gives up, and the
 *	caller builds a tree.  The added tree's rows within the distance of a
 *	full list's kk-th neighbour (a radius query: cheap, since few rows were
 *	added) are merged in by (d2, ordinal), so each query's list is the kk
 *	nearest of exactly the rows read, as one tree over them would give
 *	(ties included).
 *
 *	radius and box: each tree's hits, gone rows dropped, merged in the
 *	engine's order (by (d2, ref) for radius queries, by ref for boxes).
 *
 * Rows VACUUM marked dead rank last, with no TID, and so count as gone.
 * The limits (kdg_delta_max) keep both extra costs small; a larger
 * difference builds a tree.  All-kNN takes only a tree of exactly the rows
 * read (index_tree.c): searching every row beside the added ones costs
 * more than a build (bench/service/delta).
 */
#include "postgres.h"

#include <math.h>

#include "engine/kd_error.h"
#include "local/local.h"

/*
 * The most rows of a source of n rows that a tree searched for it may lack
 * (added), and the most rows it may hold that the source lacks (gone).
 */
int64
kdg_delta_max(int64 n)
{
	return Max(KDG_DELTA_MIN, n / KDG_DELTA_DIVISOR);
}

/* A tree whose references are ordinals, searched as it is. */
KdgTree *
kdg_tree_plain(const KdTree *tree)
{
	KdgTree    *t = palloc0(sizeof(KdgTree));

	t->tree = tree;
	t->n = tree ? tree->n : 0;
	return t;
}

/*
 * The tree to search for a source whose rows differ from tree's (references
 * being ranks) as diff says: ranks mapped to ordinals, and a tree built over
 * the added rows.
 */
KdgTree *
kdg_tree_delta(const KdSource *src, const KdTree *tree, const KdgDiff *diff)
{
	KdgTree    *t = kdg_tree_plain(tree);
	int64		g = 0;
	int64		a = 0;
	int64		o = 0;

	if (diff->ngone == 0 && diff->nadded == 0)
		return t;
	t->n = src->n;
	t->ngone = diff->ngone;
	t->rank_ord = palloc_extended(sizeof(int64) * Max(tree->n, 1), MCXT_ALLOC_HUGE);
	for (int64 r = 0; r < tree->n; r++)
	{
		if (g < diff->ngone && diff->gone[g] == (uint64) r)
		{
			t->rank_ord[r] = -1;
			g++;
			continue;
		}
		while (a < diff->nadded && diff->added[a] == (uint64) o)
		{
			a++;
			o++;
		}
		t->rank_ord[r] = o++;
	}
	if (diff->nadded > 0)
	{
		int			dim = src->dim;
		double	   *coords = palloc_extended(sizeof(double) * dim * diff->nadded,
											 MCXT_ALLOC_HUGE);
		uint64	   *ords = palloc_extended(sizeof(uint64) * diff->nadded, MCXT_ALLOC_HUGE);
		KdExec		exec;
		KdError		err;

		for (int64 i = 0; i < diff->nadded; i++)
		{
			memcpy(coords + i * dim, kdg_row_coords(src, (int64) diff->added[i]),
				   sizeof(double) * dim);
			ords[i] = diff->added[i];
		}
		t->added = kdg_tree_new();
		kdg_exec_prepare(&exec);
		kdg_check_status(kde_build_in_place(coords, ords, diff->nadded, dim,
										   t->added, &exec, &err),
						 &err, &exec, "tree build");
		pfree(ords);
		pfree(coords);
	}
	return t;
}

/*
 * Map the references of a kNN list of c neighbours from ranks to ordinals,
 * dropping gone rows, keeping at most keep; returns how many are left.
 */
static int32
list_to_ordinals(const KdgTree *t, KdNeighbor *list, int32 c, int keep)
{
	int32		n = 0;

	for (int32 i = 0; i < c && n < keep; i++)
	{
		int64		o = t->rank_ord[list[i].ref];

		if (o < 0)
			continue;
		list[n].d2 = list[i].d2;
		list[n].ref = (uint64) o;
		n++;
	}
	return n;
}

/* Whether neighbour a comes before b: by (d2, ref), or by ref alone. */
static inline bool
neighbor_before(const KdNeighbor *a, const KdNeighbor *b, bool by_ref)
{
	if (!by_ref && a->d2 != b->d2)
		return a->d2 < b->d2;
	return a->ref < b->ref;
}

/*
 * Merge two sorted runs of neighbours into out, keeping at most limit;
 * returns how many.  out must not overlap b; it may be a when a's run is
 * moved out of the way first (the caller copies it).
 */
static int64
merge_runs(const KdNeighbor *a, int64 na, const KdNeighbor *b, int64 nb,
		   KdNeighbor *out, int64 limit, bool by_ref)
{
	int64		i = 0;
	int64		j = 0;
	int64		n = 0;

	while (n < limit && (i < na || j < nb))
	{
		if (j >= nb || (i < na && neighbor_before(&a[i], &b[j], by_ref)))
			out[n++] = a[i++];
		else
			out[n++] = b[j++];
	}
	return n;
}

/* What the passes over every query's list share with their threads. */
typedef struct KdgListPass
{
	const KdgTree *t;
	KdNeighbor *out;			/* nq lists of kk */
	int32	   *count;
	int			kk;
	uint8	   *short_list;		/* ordinals pass: lists that lost rows */
	double	   *radii;			/* radii pass: each list's reach */
	const KdRangeResult *extra; /* merge pass: the added tree's hits */
} KdgListPass;

/*
 * Map the lists of queries [begin, end) to ordinals, noting those whose
 * full list lost rows; on any thread.
 */
static void
lists_to_ordinals(void *arg, int64_t begin, int64_t end)
{
	const KdgListPass *p = arg;

	for (int64 q = begin; q < end; q++)
	{
		int32		c = p->count[q];

		p->count[q] = list_to_ordinals(p->t, p->out + q * p->kk, c, p->kk);
		p->short_list[q] = c == p->kk && p->count[q] < p->kk;
	}
}

/*
 * The radius within which an added row can enter the lists of queries
 * [begin, end): its kk-th neighbour's distance, or all of space for a list
 * that is not full; on any thread.  A row at the same distance as the kk-th
 * is within it (kd_radius keeps sqrt(d2) <= r, and sqrt is monotone).
 */
static void
lists_radii(void *arg, int64_t begin, int64_t end)
{
	const KdgListPass *p = arg;

	for (int64 q = begin; q < end; q++)
		p->radii[q] = p->count[q] < p->kk ? INFINITY :
			sqrt(p->out[q * p->kk + p->kk - 1].d2);
}

/*
 * Merge the added tree's hits of queries [begin, end) into their lists;
 * on any thread.
 */
static void
lists_merge(void *arg, int64_t begin, int64_t end)
{
	const KdgListPass *p = arg;
	const KdRangeResult *res = p->extra;
	KdNeighbor	mine[KD_MAX_K];

	for (int64 q = begin; q < end; q++)
	{
		int64		nh = res->offsets[q + 1] - res->offsets[q];

		if (nh == 0)
			continue;
		memcpy(mine, p->out + q * p->kk, sizeof(KdNeighbor) * p->count[q]);
		p->count[q] = (int32) merge_runs(mine, p->count[q], res->hits + res->offsets[q],
										 nh, p->out + q * p->kk, p->kk, false);
	}
}

/*
 * Search the index tree of t for nq queries' kk neighbours, references
 * mapped to ordinals and gone rows dropped: queries whose full list lost
 * rows are asked again for four times as many, until each has kk or the
 * tree has no more.  *complete is false when some query still lacks rows
 * at KD_MAX_K.
 */
static KdStatus
knn_in_tree(const KdgTree *t, const double *queries, int dim, int64 nq, int kk,
			KdNeighbor *out, int32 *count, bool *complete, KdExec *exec,
			KdError *err)
{
	int			kq = kk;
	int64	   *again;
	int64		nagain = 0;
	KdgListPass pass = {t, out, count, kk};
	KdExec		pexec;
	KdStatus	st;

	*complete = true;
	st = kde_knn(t->tree, queries, nq, kk, out, count, exec, err);
	if (st != KD_OK || t->rank_ord == NULL)
		return st;
	pass.short_list = palloc_extended(Max(nq, 1), MCXT_ALLOC_HUGE);
	kdg_exec_prepare(&pexec);
	if ((st = kde_parallel_for(&pexec, nq, 4096, lists_to_ordinals, &pass, err)) != KD_OK)
		return st;
	again = palloc_extended(sizeof(int64) * Max(nq, 1), MCXT_ALLOC_HUGE);
	for (int64 q = 0; q < nq; q++)
		if (pass.short_list[q])
			again[nagain++] = q;
	pfree(pass.short_list);
	while (st == KD_OK && nagain > 0)
	{
		double	   *points;
		KdNeighbor *raw;
		int32	   *rawcount;
		int64		left = 0;

		if (kq == KD_MAX_K)
		{
			*complete = false;
			break;
		}
		kq = Min(KD_MAX_K, kq * 4);
		points = palloc_extended(sizeof(double) * dim * nagain, MCXT_ALLOC_HUGE);
		raw = palloc_extended(sizeof(KdNeighbor) * kq * nagain, MCXT_ALLOC_HUGE);
		rawcount = palloc_extended(sizeof(int32) * nagain, MCXT_ALLOC_HUGE);
		for (int64 i = 0; i < nagain; i++)
			memcpy(points + i * dim, queries + again[i] * dim, sizeof(double) * dim);
		st = kde_knn(t->tree, points, nagain, kq, raw, rawcount, exec, err);
		for (int64 i = 0; st == KD_OK && i < nagain; i++)
		{
			int64		q = again[i];

			count[q] = list_to_ordinals(t, raw + i * kq, rawcount[i], kk);
			memcpy(out + q * kk, raw + i * kq, sizeof(KdNeighbor) * count[q]);
			if (rawcount[i] == kq && count[q] < kk)
				again[left++] = q;
		}
		nagain = left;
		pfree(rawcount);
		pfree(raw);
		pfree(points);
	}
	pfree(again);
	return st;
}

/*
 * kd_knn on t: nq queries (engine coordinates), kk neighbours each into
 * out (nq * kk), count[q] of them, references being ordinals.  exec is
 * prepared for t->tree.  The added tree is searched, where the engine
 * chooses, by a radius query per list: the rows within its kk-th distance
 * are the only ones that can enter it, which is much less work than a kNN
 * search when few rows were added.  *complete is false when the answers
 * could not be completed (more than KD_MAX_K gone rows near a query): t
 * cannot serve this search.
 */
KdStatus
kdg_tree_knn(const KdgTree *t, const double *queries, int64 nq, int kk,
			 KdNeighbor *out, int32 *count, bool *complete, KdExec *exec,
			 KdError *err)
{
	int			dim = t->tree->dim;
	KdRangeResult extra = {0};
	KdgListPass pass = {t, out, count, kk};
	KdExec		aexec;
	KdStatus	st;

	st = knn_in_tree(t, queries, dim, nq, kk, out, count, complete, exec, err);
	if (st != KD_OK || !*complete || t->added == NULL)
		return st;
	kdg_exec_prepare(&aexec);
	pass.radii = palloc_extended(sizeof(double) * Max(nq, 1), MCXT_ALLOC_HUGE);
	pass.extra = &extra;
	st = kde_parallel_for(&aexec, nq, 4096, lists_radii, &pass, err);
	if (st == KD_OK)
		st = kde_radius(t->added, queries, nq, pass.radii, nq, &extra, &aexec, err);
	if (st == KD_OK)
		st = kde_parallel_for(&aexec, nq, 4096, lists_merge, &pass, err);
	kde_range_result_free(&extra);
	pfree(pass.radii);
	return st;
}

/*
 * A range search's result on the index tree of t, references mapped to
 * ordinals and gone rows dropped, compacted in place.
 */
static void
range_to_ordinals(const KdgTree *t, KdRangeResult *res)
{
	int64		n = 0;
	int64		from = 0;

	for (int64 q = 0; q < res->nq; q++)
	{
		int64		to = res->offsets[q + 1];

		for (int64 i = from; i < to; i++)
		{
			int64		o = t->rank_ord[res->hits[i].ref];

			if (o < 0)
				continue;
			res->hits[n].d2 = res->hits[i].d2;
			res->hits[n].ref = (uint64) o;
			n++;
		}
		from = to;
		res->offsets[q + 1] = n;
	}
}

/*
 * Merge the added tree's range result b into a (both per query, sorted as
 * the engine sorts them), into freshly allocated arrays of a.
 */
static KdStatus
range_merge(KdRangeResult *a, const KdRangeResult *b, bool by_ref, KdError *err)
{
	int64		total = a->offsets[a->nq] + b->offsets[b->nq];
	int64	   *offsets = malloc(sizeof(int64) * (a->nq + 1));
	KdNeighbor *hits = malloc(sizeof(KdNeighbor) * Max(total, 1));

	if (offsets == NULL || hits == NULL)
	{
		free(offsets);
		free(hits);
		return kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory merging range hits");
	}
	offsets[0] = 0;
	for (int64 q = 0; q < a->nq; q++)
	{
		int64		na = a->offsets[q + 1] - a->offsets[q];
		int64		nb = b->offsets[q + 1] - b->offsets[q];

		offsets[q + 1] = offsets[q] +
			merge_runs(a->hits + a->offsets[q], na, b->hits + b->offsets[q], nb,
					   hits + offsets[q], na + nb, by_ref);
	}
	free(a->offsets);
	free(a->hits);
	a->offsets = offsets;
	a->hits = hits;
	return KD_OK;
}

/*
 * kd_radius (centers given) or kd_box (lows and highs) on t, references
 * being ordinals, into res; exec is prepared for t->tree.
 */
KdStatus
kdg_tree_range(const KdgTree *t, const double *centers, const double *radii,
			   int64 nradii, const double *lows, const double *highs, int64 nq,
			   KdRangeResult *res, KdExec *exec, KdError *err)
{
	KdRangeResult extra = {0};
	KdExec		aexec;
	KdStatus	st;

	st = centers ? kde_radius(t->tree, centers, nq, radii, nradii, res, exec, err) :
		kde_box(t->tree, lows, highs, nq, res, exec, err);
	if (st != KD_OK)
		return st;
	if (t->rank_ord)
		range_to_ordinals(t, res);
	if (t->added == NULL)
		return KD_OK;
	kdg_exec_prepare(&aexec);
	st = centers ? kde_radius(t->added, centers, nq, radii, nradii, &extra, &aexec, err) :
		kde_box(t->added, lows, highs, nq, &extra, &aexec, err);
	if (st == KD_OK)
		st = range_merge(res, &extra, centers == NULL, err);
	kde_range_result_free(&extra);
	if (st != KD_OK)
		kde_range_result_free(res);
	return st;
}
