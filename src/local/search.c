/*
 * search.c
 *	  Running the engine on a table's points and making its answers exact in
 *	  the metric of the SQL operator they stand in for.
 *
 * The engine orders neighbours by (d2, ref), d2 being the rounded sum of
 * squared differences.  SQL orders them by (p <-> q, ctid): pg_hypot(dx, dy)
 * for point, sqrt(d2) for float8[].  The two orders agree except where
 * distances are within a few units in the last place of each other, so
 * every answer is re-ranked here:
 *
 *	kNN: the engine is asked for k + 1 neighbours.  Let r = D_k (1 + 1e-12) +
 *	1e-150, D_k being the k-th neighbour's sqrt(d2).  If the (k + 1)-th
 *	neighbour's sqrt(d2) exceeds r, every other point is farther than the k
 *	found in any metric within 1e-12 of sqrt(d2), so those k are the answer.
 *	Otherwise every point with sqrt(d2) <= r is fetched with a radius query.
 *	Either way the candidates' distances are computed with the operator's
 *	own formula (kdg_metric), sorted by (distance, ref), and the first k kept.
 *	The absolute 1e-150 covers squares that underflow; an overflowing d2
 *	makes r infinite and the radius query fetch every point, still exact.
 *
 *	radius: the engine runs with r (1 + 1e-12) + 1e-150, and hits are kept
 *	when their operator distance is <= r.
 *
 * Geography points are unit vectors to the engine and the operator's
 * distance is the sphere distance computed from longitude and latitude, a
 * monotone function of the chord up to rounding errors of a few 1e-16 on
 * the unit sphere.  Their slack is wider: r (1 + 1e-9) + 1e-13, and a
 * radius in metres becomes the chord of that arc before the slack.  The
 * margins are KD_SLACK_* and KD_GEO_SLACK_* of exactness.h.
 *
 * Query points are given with their full coordinates (the engine's, then
 * the type's extra ones: kdg_type_extra), the rows of a source likewise.
 *
 * Row references given to the engine are ordinals into the source's arrays,
 * which are in ctid order; answers carry the rows' refs (kdgpu.h), and a tie
 * on distance is broken by ref: every candidate the engine's own tie-break
 * might have cut (the ctid order) lies within the kNN slack radius, so the
 * re-ranking above also ranks ties by a key exactly.
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/lsyscache.h"

#include "local/local.h"

/* The engine radius that holds every point within operator distance r. */
double
kdg_engine_radius(KdPointType type, double r)
{
	if (type == KD_TYPE_GEOGRAPHY)
		return kdg_slack(type, kdg_geography_chord(r));
	return kdg_slack(type, r);
}

/*
 * The engine radius within which every point lies within operator distance
 * r: kdg_slack's margins taken off, since they bound the difference of the
 * two distances either way (below 0 when r is within them).
 */
double
kdg_engine_radius_sure(KdPointType type, double r)
{
	if (type == KD_TYPE_GEOGRAPHY)
		return kdg_geography_chord(r) * (1.0 - KD_GEO_SLACK_REL) - KD_GEO_SLACK_ABS;
	return r * (1.0 - KD_SLACK_REL) - KD_SLACK_ABS;
}

/*
 * The margins (relative, absolute) beyond which two engine distances rank
 * as the operator ranks them: each distance is within kdg_slack's margins
 * of the operator's, so three times them is more than enough.
 */
void
kdg_engine_tie_margins(KdPointType type, double *rel, double *abs)
{
	*rel = 3.0 * (type == KD_TYPE_GEOGRAPHY ? KD_GEO_SLACK_REL : KD_SLACK_REL);
	*abs = 3.0 * (type == KD_TYPE_GEOGRAPHY ? KD_GEO_SLACK_ABS : KD_SLACK_ABS);
}

/*
 * The engine coordinates of nq points given with their full coordinates:
 * the array itself when the type has no extra coordinates, else a copy.
 */
static const double *
kdg_engine_points(const KdSource *src, const double *points, int64 nq)
{
	int			full = src->dim + src->extra;
	double	   *out;

	if (src->extra == 0)
		return points;
	out = palloc_extended(sizeof(double) * src->dim * Max(nq, 1), MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < nq; i++)
		memcpy(out + i * src->dim, points + i * full, sizeof(double) * src->dim);
	return out;
}

/* qsort comparator of hits by (distance, ref). */
static int
kdg_hit_cmp(const void *a, const void *b)
{
	const KdHit *x = a;
	const KdHit *y = b;

	if (x->dist != y->dist)
		return x->dist < y->dist ? -1 : 1;
	return (x->ref > y->ref) - (x->ref < y->ref);
}

/* Sort hits by (distance, ref): insertion sort for the usual short runs. */
void
kdg_sort_hits(KdHit *hits, int64 n)
{
	if (n > 32)
	{
		qsort(hits, n, sizeof(KdHit), kdg_hit_cmp);
		return;
	}
	for (int64 i = 1; i < n; i++)
	{
		KdHit		h = hits[i];
		int64		j = i;

		while (j > 0 && kdg_hit_cmp(&hits[j - 1], &h) > 0)
		{
			hits[j] = hits[j - 1];
			j--;
		}
		hits[j] = h;
	}
}

/*
 * Turn candidates (engine neighbours, ref = ordinal) into hits with the
 * operator's distance from q and the row's ref (kdg_row_ref), dropping the ordinal
 * "exclude" (or none when it is -1), sorted by (distance, ref).  Returns the
 * number of hits; out may overlap cand only when it starts at or before it.
 */
int64
kdg_rank(const KdSource *src, const double *q, const KdNeighbor *cand,
		int64 ncand, int64 exclude, KdHit *out)
{
	int64		n = 0;

	for (int64 i = 0; i < ncand; i++)
	{
		uint64		ref = cand[i].ref;

		if ((int64) ref == exclude)
			continue;
		out[n].dist = kdg_metric(src->type, q, kdg_row_coords(src, ref), src->dim);
		out[n].ref = kdg_row_ref(src, ref);
		n++;
	}
	kdg_sort_hits(out, n);
	return n;
}

/*
 * The tree to search over a source's points for work of that many items, in
 * memory: a kdgpu index's when its rows are those rows or (but for All-kNN)
 * differ from them by a few (index_tree.c), or one built now (its tree NULL
 * when there are no points), which the GPU service keeps for later calls
 * when the table has a kdgpu index and the work goes to the GPU.
 */
static KdgTree *
source_host_tree(const KdSource *src, int64 work, bool all_knn)
{
	Oid			fitting;
	KdgTree    *tree = kdg_index_tree(src, work, all_knn, &fitting);
	KdTree	   *built;
	bool		used_gpu;

	if (tree)
		return tree;
	built = kdg_build_tree(src, &used_gpu);
	kdg_index_keep_built(src, built, work, fitting);
	return kdg_tree_plain(built);
}

/*
 * The tree to search over a source's points for work of that many items
 * (queries, or points for All-kNN): when the work goes to the GPU, the GPU
 * service's copy of an index's tree whose rows are those rows or (but for
 * All-kNN) differ by a few (on the device only, with its references in
 * memory for All-kNN, which reads them); else as source_host_tree.
 */
KdgTree *
kdg_source_tree(const KdSource *src, int64 work, bool all_knn)
{
	KdgTree    *tree = NULL;

	if (src->dim > KD_MAX_DIM)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("points of column \"%s\" of table \"%s\" have %d coordinates, and only the kNN and radius functions search more than %d",
						src->colname, get_rel_name(src->relid), src->dim,
						KD_MAX_DIM),
				 errhint("kd_knn, kd_knn_join, kd_all_knn, kd_range and kd_range_join search vectors of up to %d coordinates.",
						 KD_FLAT_MAX_DIM)));
	if (src->index_rows)
		return kdg_index_source_tree(src, work, all_knn);
	if (kdg_gpu_wanted(work))
		tree = kdg_index_device_tree(src, all_knn);
	return tree ? tree : source_host_tree(src, work, all_knn);
}

/*
 * The tree a kNN or radius search of src walks for work of that many
 * items: kdg_source_tree's, or NULL when its searches run flat
 * (flat_search.c).
 */
KdgTree *
kdg_source_search_tree(const KdSource *src, int64 work, bool all_knn)
{
	if (kdg_source_flat(src))
		return NULL;
	return kdg_source_tree(src, work, all_knn);
}

/*
 * Plan a search of tree: a tree only on the device is searched there
 * whatever the work's size.
 */
void
kdg_exec_for(KdExec *exec, const KdgTree *tree)
{
	kdg_exec_prepare(exec);
	if (tree->tree->coords == NULL)
		exec->gpu_min_work = 0;
}

/*
 * After a search of tree (for All-kNN, or not) failed with st: the source's
 * tree in memory, to search again, when tree was only on the device (the
 * GPU service stopped or failed: the work goes where it would without the
 * copy); NULL when the failure stands.
 */
static const KdgTree *
kdg_tree_to_retry(KdStatus st, const KdgTree *tree, const KdSource *src,
				  bool all_knn)
{
	if (st == KD_OK || st == KD_ERR_CANCELED || tree->tree->coords != NULL)
		return NULL;
	elog(DEBUG1, "kdgpu: the GPU service's copy failed, searching the tree in memory");
	return source_host_tree(src, 0, all_knn);
}

/* An answer with no hits for nq queries. */
KdAnswer *
kdg_empty_answer(int64 nq)
{
	KdAnswer   *ans = palloc0(sizeof(KdAnswer));

	ans->nq = nq;
	ans->offsets = palloc_extended(sizeof(int64) * (nq + 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	return ans;
}

/*
 * kNN search of kk neighbours for nq queries (engine coordinates) on tree,
 * or on the source's tree in memory when a device copy failed, or on a tree
 * built over the source when too many gone rows lie near a query
 * (tree_delta.c); returns the tree searched.
 */
static const KdgTree *
kdg_knn_raw(const KdSource *src, const KdgTree *tree, const double *points,
			int64 nq, int kk, KdNeighbor *raw, int32 *count)
{
	KdExec		exec;
	KdError		err;
	const KdgTree *again;
	bool		complete;
	bool		used_gpu;
	KdStatus	st;

	kdg_exec_for(&exec, tree);
	st = kdg_tree_knn(tree, points, nq, kk, raw, count, &complete, &exec, &err);
	if ((again = kdg_tree_to_retry(st, tree, src, false)) != NULL)
	{
		tree = again;
		kdg_exec_for(&exec, tree);
		st = kdg_tree_knn(tree, points, nq, kk, raw, count, &complete, &exec, &err);
	}
	kdg_check_status(st, &err, &exec, "kNN search");
	if (!complete)
	{
		elog(DEBUG1, "kdgpu: too many rows gone near a query; building a tree");
		tree = kdg_tree_plain(kdg_build_tree(src, &used_gpu));
		kdg_exec_for(&exec, tree);
		st = kdg_tree_knn(tree, points, nq, kk, raw, count, &complete, &exec, &err);
		kdg_check_status(st, &err, &exec, "kNN search");
	}
	return tree;
}

/* The k nearest points of each of nq queries, exact. */
KdAnswer *
kdg_search_knn(const KdSource *src, const KdgTree *tree, const double *queries,
			  int64 nq, int k)
{
	int			kk = Min(k + 1, KD_MAX_K);
	KdNeighbor *raw;
	int32	   *count;

	if (kdg_source_flat(src))
		return kdg_flat_search_knn(src, queries, nq, k);
	if (nq == 0 || src->n == 0)
		return kdg_empty_answer(nq);
	kdg_check_answer_memory(nq, kk, "a kNN search");
	raw = kdg_alloc_large(CurrentMemoryContext, sizeof(KdNeighbor) * nq * kk, false);
	count = kdg_alloc_large(CurrentMemoryContext, sizeof(int32) * nq, false);
	tree = kdg_knn_raw(src, tree, kdg_engine_points(src, queries, nq), nq, kk,
					   raw, count);
	kdg_refine_knn(src, tree, raw, count, nq, k, kk, queries, NULL, src->n);
	return kdg_knn_answer((KdHit *) raw, count, nq, kk);
}

/*
 * A slice of All-kNN: the k nearest points of the points of ordinals from,
 * ..., from + nq - 1, exact, as kdg_search_all_knn gives them (answer q
 * belongs to ordinal from + q).  For an answer too large to hold at once:
 * the queries are the points themselves, each excluded from its own
 * neighbours unless include_self, for which the engine is asked for one
 * more neighbour than k + 1 where it can give it, so that most answers are
 * complete as found.
 */
KdAnswer *
kdg_search_all_knn_slice(const KdSource *src, const KdgTree *tree, int k,
						 bool include_self, int64 from, int64 nq)
{
	int			kk = Min(k + (include_self ? 1 : 2), KD_MAX_K);
	int			full = src->dim + src->extra;
	double	   *queries;
	uint64	   *self = NULL;
	KdNeighbor *raw;
	int32	   *count;

	if (kdg_source_flat(src))
		return kdg_flat_search_all_knn(src, k, include_self, from, nq);
	if (nq == 0)
		return kdg_empty_answer(0);
	queries = palloc_extended(sizeof(double) * full * nq, MCXT_ALLOC_HUGE);
	if (!include_self)
		self = palloc_extended(sizeof(uint64) * nq, MCXT_ALLOC_HUGE);
	for (int64 q = 0; q < nq; q++)
	{
		memcpy(queries + q * full, kdg_row_coords(src, from + q), sizeof(double) * full);
		if (self)
			self[q] = (uint64) (from + q);
	}
	kdg_check_answer_memory(nq, kk, "All-kNN");
	raw = kdg_alloc_large(CurrentMemoryContext, sizeof(KdNeighbor) * nq * kk, false);
	count = kdg_alloc_large(CurrentMemoryContext, sizeof(int32) * nq, false);
	tree = kdg_knn_raw(src, tree, kdg_engine_points(src, queries, nq), nq, kk,
					   raw, count);
	kdg_refine_knn(src, tree, raw, count, nq, k, kk, queries, self,
				   include_self ? src->n : src->n - 1);
	return kdg_knn_answer((KdHit *) raw, count, nq, kk);
}

/* What the per-node passes of kdg_search_all_knn share with the threads. */
typedef struct KdgNodePass
{
	const KdSource *src;
	const uint64 *refs;			/* the tree's references by node */
	double	   *points;			/* node_points_range: by node, full coords */
	int			full;
	int64	   *order;			/* node_order_range: node by ordinal */
} KdgNodePass;

/* The points of nodes [begin, end), with full coordinates; on any thread. */
static void
node_points_range(void *arg, int64 begin, int64 end)
{
	const KdgNodePass *p = arg;

	for (int64 node = begin; node < end; node++)
		memcpy(p->points + node * p->full, kdg_row_coords(p->src, p->refs[node]),
			   sizeof(double) * p->full);
}

/* Each ordinal's node, for nodes [begin, end); on any thread. */
static void
node_order_range(void *arg, int64 begin, int64 end)
{
	const KdgNodePass *p = arg;

	for (int64 node = begin; node < end; node++)
		p->order[p->refs[node]] = node;
}

/*
 * Every point's k nearest points, exact.  Answer q belongs to the point of
 * ordinal q: the engine's node order is undone through ans->order.
 */
KdAnswer *
kdg_search_all_knn(const KdSource *src, const KdgTree *gtree, int k,
				  bool include_self)
{
	int			kk = Min(k + 1, KD_MAX_K);
	int64		n = src->n;
	KdNeighbor *raw;
	int32	   *count;
	KdExec		exec;
	KdError		err;
	KdAnswer   *ans;
	const double *queries;
	const KdgTree *again;
	const KdTree *tree;
	KdgNodePass pass;
	KdStatus	st;

	if (kdg_source_flat(src))
		return kdg_flat_search_all_knn(src, k, include_self, 0, n);
	if (n == 0)
		return kdg_empty_answer(0);
	kdg_check_answer_memory(n, kk, "All-kNN");
	raw = kdg_alloc_large(CurrentMemoryContext, sizeof(KdNeighbor) * n * kk, false);
	count = kdg_alloc_large(CurrentMemoryContext, sizeof(int32) * n, false);
	kdg_exec_for(&exec, gtree);
	st = kde_all_knn(gtree->tree, kk, include_self, raw, count, &exec, &err);
	if ((again = kdg_tree_to_retry(st, gtree, src, true)) != NULL)
	{
		gtree = again;
		kdg_exec_for(&exec, gtree);
		st = kde_all_knn(gtree->tree, kk, include_self, raw, count, &exec, &err);
	}
	kdg_check_status(st, &err, &exec, "All-kNN search");
	tree = gtree->tree;
	queries = tree->coords;
	pass.src = src;
	pass.refs = tree->refs;
	if (src->extra > 0 || queries == NULL)
	{
		/*
		 * the points in node order, with their full coordinates (a tree on
		 * the device only has its references, not its points, in memory)
		 */
		pass.full = src->dim + src->extra;
		pass.points = palloc_extended(sizeof(double) * pass.full * n, MCXT_ALLOC_HUGE);
		kdg_parallel_for(n, 65536, node_points_range, &pass);
		queries = pass.points;
	}
	kdg_refine_knn(src, gtree, raw, count, n, k, kk, queries,
				  include_self ? NULL : tree->refs, include_self ? n : n - 1);
	ans = kdg_knn_answer((KdHit *) raw, count, n, kk);
	ans->order = palloc_extended(sizeof(int64) * n, MCXT_ALLOC_HUGE);
	pass.order = ans->order;
	kdg_parallel_for(n, 65536, node_order_range, &pass);
	return ans;
}

/*
 * Copy a range result into an answer: with centres, hits at operator
 * distance <= their radius, sorted by (distance, ref); without, box hits
 * sorted by ref.
 */
static KdAnswer *
kdg_range_answer(const KdSource *src, const KdRangeResult *res,
				const double *centers, const double *radii, int64 nradii)
{
	KdAnswer   *ans = palloc0(sizeof(KdAnswer));
	int64		total = res->offsets[res->nq];

	ans->nq = res->nq;
	ans->offsets = palloc_extended(sizeof(int64) * (res->nq + 1), MCXT_ALLOC_HUGE);
	ans->hits = palloc_extended(sizeof(KdHit) * Max(total, 1), MCXT_ALLOC_HUGE);
	ans->offsets[0] = 0;
	for (int64 q = 0; q < res->nq; q++)
	{
		const KdNeighbor *cand = res->hits + res->offsets[q];
		int64		nc = res->offsets[q + 1] - res->offsets[q];
		KdHit	   *out = ans->hits + ans->offsets[q];
		int64		n = nc;

		if (centers)
		{
			double		r = radii[nradii == 1 ? 0 : q];

			n = kdg_rank(src, centers + q * (src->dim + src->extra), cand, nc, -1, out);
			while (n > 0 && !(out[n - 1].dist <= r))
				n--;
		}
		else
		{
			for (int64 i = 0; i < nc; i++)
			{
				out[i].dist = 0.0;
				out[i].ref = kdg_row_ref(src, cand[i].ref);
			}
			/* ordinals go in ctid order; keys, and roots' rows, need not */
			if (src->keyattnum != InvalidAttrNumber || src->hot)
				kdg_sort_hits(out, n);
		}
		ans->offsets[q + 1] = ans->offsets[q] + n;
	}
	return ans;
}

/*
 * The points within radii (one, or one per centre) of nq centres, exact,
 * each query's sorted by (distance, ref).
 */
KdAnswer *
kdg_search_radius(const KdSource *src, const KdgTree *tree,
				 const double *centers, int64 nq, const double *radii,
				 int64 nradii)
{
	double	   *slack = palloc(sizeof(double) * Max(nradii, 1));
	KdRangeResult *res;
	KdAnswer   *ans;
	KdExec		exec;
	KdError		err;
	const KdgTree *again;
	const double *points;
	KdStatus	st;

	if (kdg_source_flat(src))
		return kdg_flat_search_radius(src, centers, nq, radii, nradii);
	if (nq == 0 || src->n == 0)
		return kdg_empty_answer(nq);
	for (int64 i = 0; i < nradii; i++)
		slack[i] = kdg_engine_radius(src->type, radii[i]);
	res = kdg_range_result_new();
	points = kdg_engine_points(src, centers, nq);
	kdg_exec_for(&exec, tree);
	st = kdg_tree_range(tree, points, slack, nradii, NULL, NULL, nq, res, &exec, &err);
	if ((again = kdg_tree_to_retry(st, tree, src, false)) != NULL)
	{
		kdg_exec_for(&exec, again);
		st = kdg_tree_range(again, points, slack, nradii, NULL, NULL, nq, res,
							&exec, &err);
	}
	kdg_check_status(st, &err, &exec, "radius search");
	ans = kdg_range_answer(src, res, centers, radii, nradii);
	kde_range_result_free(res);
	pfree(slack);
	return ans;
}

/* The points inside nq boxes (bounds inclusive), each sorted by ref. */
KdAnswer *
kdg_search_box(const KdSource *src, const KdgTree *tree, const double *lows,
			  const double *highs, int64 nq)
{
	KdRangeResult *res;
	KdAnswer   *ans;
	KdExec		exec;
	KdError		err;
	const KdgTree *again;
	KdStatus	st;

	if (nq == 0 || src->n == 0)
		return kdg_empty_answer(nq);
	res = kdg_range_result_new();
	kdg_exec_for(&exec, tree);
	st = kdg_tree_range(tree, NULL, NULL, 0, lows, highs, nq, res, &exec, &err);
	if ((again = kdg_tree_to_retry(st, tree, src, false)) != NULL)
	{
		kdg_exec_for(&exec, again);
		st = kdg_tree_range(again, NULL, NULL, 0, lows, highs, nq, res, &exec, &err);
	}
	kdg_check_status(st, &err, &exec, "box search");
	ans = kdg_range_answer(src, res, NULL, NULL, 0);
	kde_range_result_free(res);
	return ans;
}
