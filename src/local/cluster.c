/*
 * cluster.c
 *	  Density clusters (DBSCAN) and distance components of a source's
 *	  points, exact in the metric of the type's distance operator.
 *
 * The definitions, deterministic where PostGIS's ST_ClusterDBSCAN is not:
 * a point is a core point when at least minpoints points (itself included)
 * lie within eps; core points within eps of each other share a cluster
 * (union-find); any other point within eps of a core point is a border
 * point and joins the cluster of its nearest core point, ties going to the
 * lower ordinal; the rest are noise (-1).  Clusters are numbered from 0 in
 * the order of their first point by ordinal, so the labels depend only on
 * the points and their order.  With minpoints 1 every point is a core
 * point, and the clusters are the components of the within-eps graph
 * (ST_ClusterWithin).
 *
 * Two ways to the same labels:
 *
 *	the engine's DBSCAN (kde_dbscan: on the GPU, or the engine's threads),
 *	in engine distances, which differ from the operator's by a rounding:
 *	its pairs are those surely within eps (kdg_engine_radius_sure), and it
 *	counts the pairs that are only perhaps within, and the border points
 *	whose nearest core points of two clusters are as near as rounding can
 *	tell apart (kdg_engine_tie_margins).  When it counts none, its labels
 *	are the operator's; only labels cross from the GPU.
 *
 *	Where no tree exists yet (the window functions' rows) and the work runs
 *	on the CPU, the engine's DBSCAN runs over a uniform grid of the points
 *	(kde_dbscan_grid, dimensions 1 to 3), which costs a sort where a tree
 *	costs a build, with the same passes and the same labels.
 *
 *	else the exact pairs: the pairs within eps come slice by slice from
 *	kdg_pairs_within (pairs_within.c), each decided by the operator's
 *	distance; they are held as ordinals (int32) per point, in the search
 *	order, at most kdgpu.answer_memory_limit of them, and clustered here
 *	with the same union-find (engine/kd_sets.h).
 */
#include "postgres.h"

#include "miscadmin.h"

#include "engine/kd_sets.h"
#include "local/local.h"

/*
 * The pairs within eps, by search order: the point at position u is
 * ordinal ord[u], its neighbours' ordinals are nbr[off[u] .. off[u + 1]),
 * and pos[i] is the position of ordinal i.
 */
typedef struct KdgPairs
{
	int64	   *off;
	int32	   *nbr;
	int64		cap;
	int32	   *ord;
	int32	   *pos;
	const char *what;
} KdgPairs;

/* What the threads of copy_range share: a slice's pairs and where they go. */
typedef struct KdgCopyKept
{
	const KdgPairSlice *slice;
	KdgPairs   *pairs;
} KdgCopyKept;

/* kdg_parallel_for body: copy queries [begin, end)'s pairs in place. */
static void
copy_range(void *arg, int64 begin, int64 end)
{
	KdgCopyKept *c = arg;
	const KdgPairSlice *slice = c->slice;

	for (int64 q = begin; q < end; q++)
	{
		const KdNeighbor *hit = slice->hits + slice->offsets[q];
		int32	   *to = c->pairs->nbr + c->pairs->off[slice->first + q];

		for (int32 k = 0; k < slice->kept[q]; k++)
			to[k] = (int32) hit[k].ref;
	}
}

/*
 * kdg_pairs_within consumer: append a slice's pairs to the KdgPairs at
 * arg, within the memory limit.
 */
static void
pairs_append(void *arg, const KdgPairSlice *slice)
{
	KdgPairs   *pairs = arg;
	KdgCopyKept c = {slice, pairs};
	int64		total = pairs->off[slice->first];

	if (slice->first == 0)
		for (int32 u = 0; u < slice->n; u++)
		{
			pairs->ord[u] = (int32) slice->ords[u];
			pairs->pos[pairs->ord[u]] = u;
		}
	for (int64 q = 0; q < slice->len; q++)
	{
		total += slice->kept[q];
		pairs->off[slice->first + q + 1] = total;
	}
	if (total > pairs->cap)
	{
		int64		cap = Max(pairs->cap * 2, total);

		if ((double) cap * sizeof(int32) > kdg_answer_memory_limit())
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("%s needs more than kdgpu.answer_memory_limit (%.0f MB) for the pairs of points within its distance",
							pairs->what, kdg_answer_memory_limit() / (1024 * 1024)),
					 errhint("Lower the distance, or raise kdgpu.answer_memory_limit.")));
		pairs->nbr = repalloc_huge(pairs->nbr, sizeof(int32) * cap);
		pairs->cap = cap;
	}
	kdg_parallel_for(slice->len, 4096, copy_range, &c);
}

/*
 * Every point's neighbours within operator distance eps, itself included,
 * from a search of tree.
 */
static KdgPairs
pairs_within(const KdSource *src, const KdgTree *tree, double eps,
			 const char *what)
{
	KdgPairs	pairs;

	pairs.off = palloc_extended(sizeof(int64) * (src->n + 1), MCXT_ALLOC_HUGE);
	pairs.off[0] = 0;
	pairs.cap = Max(src->n, 1024);
	pairs.nbr = palloc_extended(sizeof(int32) * pairs.cap, MCXT_ALLOC_HUGE);
	pairs.ord = palloc_extended(sizeof(int32) * src->n, MCXT_ALLOC_HUGE);
	pairs.pos = palloc_extended(sizeof(int32) * src->n, MCXT_ALLOC_HUGE);
	pairs.what = what;
	kdg_pairs_within(src, tree, eps, false, what, pairs_append, &pairs);
	return pairs;
}

/* What the threads of the clustering passes share. */
typedef struct KdgClustering
{
	const KdSource *src;
	const KdgPairs *pairs;
	int			minpoints;
	bool	   *core;
	int32	   *parent;
	int32	   *anchor;			/* a point's core point, or -1 */
	int32	   *root;			/* then its set's root, or -1 */
	int32	   *first;			/* a root's set's first point */
	int32	   *number;			/* a root's set's label */
	int32	   *label;
} KdgClustering;

/* kdg_parallel_for body: mark positions [begin, end)'s core points. */
static void
core_range(void *arg, int64 begin, int64 end)
{
	KdgClustering *c = arg;

	for (int64 u = begin; u < end; u++)
		c->core[c->pairs->ord[u]] =
			c->pairs->off[u + 1] - c->pairs->off[u] >= c->minpoints;
}

/* kdg_parallel_for body: join positions [begin, end)'s core pairs. */
static void
union_range(void *arg, int64 begin, int64 end)
{
	KdgClustering *c = arg;
	const KdgPairs *pairs = c->pairs;

	for (int64 u = begin; u < end; u++)
	{
		int32		i = pairs->ord[u];

		if (!c->core[i])
			continue;
		for (int64 h = pairs->off[u]; h < pairs->off[u + 1]; h++)
		{
			int32		j = pairs->nbr[h];

			if (j > i && c->core[j])
				kde_set_union(c->parent, i, j);
		}
	}
}

/*
 * The nearest core point within eps of the non-core point i (ties to the
 * lower ordinal), or -1.
 */
static int32
nearest_core(const KdSource *src, const KdgPairs *pairs, const bool *core,
			 int32 i)
{
	const double *p = kdg_row_coords(src, i);
	int32		best = -1;
	double		bestd = 0.0;
	int32		u = pairs->pos[i];

	for (int64 h = pairs->off[u]; h < pairs->off[u + 1]; h++)
	{
		int32		j = pairs->nbr[h];
		double		d;

		if (!core[j])
			continue;
		d = kdg_metric(src->type, p, kdg_row_coords(src, j), src->dim);
		if (best < 0 || d < bestd || (d == bestd && j < best))
		{
			best = j;
			bestd = d;
		}
	}
	return best;
}

/* kdg_parallel_for body: the anchors of ordinals [begin, end). */
static void
anchor_range(void *arg, int64 begin, int64 end)
{
	KdgClustering *c = arg;

	for (int64 i = begin; i < end; i++)
		c->anchor[i] = c->core[i] ? (int32) i :
			nearest_core(c->src, c->pairs, c->core, (int32) i);
}

/*
 * kdg_parallel_for body: the roots of ordinals [begin, end)'s sets, and
 * each set's first point.
 */
static void
root_range(void *arg, int64 begin, int64 end)
{
	KdgClustering *c = arg;

	for (int64 i = begin; i < end; i++)
	{
		int32		r = c->anchor[i] < 0 ? -1 : kde_set_find(c->parent, c->anchor[i]);

		c->root[i] = r;
		if (r >= 0)
			kde_atomic_min(&c->first[r], (int32) i);
	}
}

/* kdg_parallel_for body: the labels of ordinals [begin, end). */
static void
label_range(void *arg, int64 begin, int64 end)
{
	KdgClustering *c = arg;

	for (int64 i = begin; i < end; i++)
		c->label[i] = c->root[i] < 0 ? -1 : c->number[c->root[i]];
}

/* The engine's reach and margins for DBSCAN at eps in src's metric. */
static void
engine_args(const KdSource *src, double eps, int minpoints, KdDbscan *args)
{
	args->within = kdg_engine_radius_sure(src->type, eps);
	args->beyond = kdg_engine_radius(src->type, eps);
	kdg_engine_tie_margins(src->type, &args->tie_rel, &args->tie_abs);
	args->minpoints = minpoints;
}

/*
 * The engine's DBSCAN of tree (the source's points by ordinal) into label;
 * false when it could not tell the operator's answer, or has no GPU where
 * it was asked for one (the exact pairs decide then).
 */
static bool
engine_dbscan(const KdSource *src, const KdgTree *tree, double eps,
			  int minpoints, int32 *label, const char *what)
{
	KdDbscan	args;
	KdExec		exec;
	KdError		err;
	KdStatus	st;
	int64		undecided = 0;

	engine_args(src, eps, minpoints, &args);
	kdg_exec_prepare(&exec);
	st = kde_dbscan(tree->tree, &args, label, &undecided, &exec, &err);
	if (st == KD_ERR_GPU_UNAVAILABLE)
	{
		elog(DEBUG1, "kdgpu %s: the engine's DBSCAN has no GPU (%s): clustering the exact pairs",
			 what, err.message);
		return false;
	}
	kdg_check_status(st, &err, &exec, what);
	if (undecided > 0)
		elog(DEBUG1, "kdgpu %s: " INT64_FORMAT " pairs or choices within rounding of eps: clustering the exact pairs",
			 what, undecided);
	return undecided == 0;
}

/*
 * The engine's DBSCAN of the source's points on a grid (no tree), where
 * it runs on the CPU: 1 when label holds the answer, 0 when no grid is
 * made here (a GPU takes the work, more than three dimensions, or points
 * spread over too many cells), -1 when the engine could not tell the
 * operator's answer.
 */
static int
grid_dbscan(const KdSource *src, double eps, int minpoints, int32 *label,
			const char *what)
{
	KdDbscan	args;
	KdExec		exec;
	KdError		err;
	KdStatus	st;
	int64		undecided = 0;
	bool		gridded;
	double	   *coords;

	kdg_exec_prepare(&exec);
	if (src->dim > 3 ||
		(exec.device == KD_DEVICE_GPU ||
		 (exec.device == KD_DEVICE_AUTO && kdg_gpu_wanted(src->n) &&
		  kde_gpu_available(NULL, NULL, 0))))
		return 0;
	engine_args(src, eps, minpoints, &args);
	coords = kdg_source_coords(src);
	st = kde_dbscan_grid(coords, src->n, src->dim, &args, label, &undecided,
						 &gridded, &exec, &err);
	pfree(coords);
	kdg_check_status(st, &err, &exec, what);
	if (!gridded)
		return 0;
	if (undecided > 0)
		elog(DEBUG1, "kdgpu %s: " INT64_FORMAT " pairs or choices within rounding of eps: clustering the exact pairs",
			 what, undecided);
	return undecided == 0 ? 1 : -1;
}

/*
 * The DBSCAN labels of a source's points by ordinal (header comment):
 * cluster numbers from 0, or -1 for noise.  "what" names the work in
 * messages.
 */
int32 *
kdg_cluster_dbscan(const KdSource *src, double eps, int minpoints,
				   const char *what)
{
	int32	   *label = palloc_extended(sizeof(int32) * Max(src->n, 1), MCXT_ALLOC_HUGE);
	int32	   *number;
	int32		next = 0;
	int			gridded;
	KdgTree    *tree;
	KdgPairs	pairs;
	KdgClustering c;

	if (src->n == 0)
		return label;
	if (src->n > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s takes at most %d points, not " INT64_FORMAT,
						what, PG_INT32_MAX, src->n)));
	gridded = OidIsValid(src->relid) ? 0 : grid_dbscan(src, eps, minpoints, label, what);
	if (gridded == 1)
		return label;
	tree = kdg_pairs_tree(src);
	if (gridded == 0 && engine_dbscan(src, tree, eps, minpoints, label, what))
		return label;
	pairs = pairs_within(src, tree, eps, what);
	c.src = src;
	c.pairs = &pairs;
	c.minpoints = minpoints;
	c.core = palloc_extended(sizeof(bool) * src->n, MCXT_ALLOC_HUGE);
	c.parent = palloc_extended(sizeof(int32) * src->n, MCXT_ALLOC_HUGE);
	c.anchor = palloc_extended(sizeof(int32) * src->n, MCXT_ALLOC_HUGE);
	c.root = palloc_extended(sizeof(int32) * src->n, MCXT_ALLOC_HUGE);
	c.first = palloc_extended(sizeof(int32) * src->n, MCXT_ALLOC_HUGE);
	for (int32 i = 0; i < src->n; i++)
	{
		c.parent[i] = i;
		c.first[i] = PG_INT32_MAX;
	}
	kdg_parallel_for(src->n, 16384, core_range, &c);
	kdg_parallel_for(src->n, 4096, union_range, &c);
	CHECK_FOR_INTERRUPTS();
	kdg_parallel_for(src->n, 4096, anchor_range, &c);

	/*
	 * each point's set (a border point's nearest core point's), numbered
	 * in the order of the sets' first points
	 */
	kdg_parallel_for(src->n, 4096, root_range, &c);
	number = palloc_extended(sizeof(int32) * src->n, MCXT_ALLOC_HUGE);
	for (int32 i = 0; i < src->n; i++)
		if (c.root[i] >= 0 && c.first[c.root[i]] == i)
			number[c.root[i]] = next++;
	c.number = number;
	c.label = label;
	kdg_parallel_for(src->n, 16384, label_range, &c);
	pfree(number);
	pfree(c.root);
	pfree(c.first);
	pfree(c.anchor);
	pfree(c.parent);
	pfree(c.core);
	pfree(pairs.off);
	pfree(pairs.nbr);
	pfree(pairs.ord);
	pfree(pairs.pos);
	return label;
}
