/*
 * kd_dbscan.c
 *	  Density clusters (DBSCAN) of a tree's points on the CPU, and their
 *	  dispatch to the GPU (cuda/dbscan.cu), which follows the same passes.
 *
 * The passes, each over every point in the tree's in-order (neighbouring
 * points walk the same nodes), each walk being range_walk's:
 *
 *	count	 the points within reach (sqrt(d2) <= within, the point itself
 *			 always), and the undecided pairs (within < sqrt(d2) <= beyond);
 *			 a point is a core point when it has minpoints within reach.  The
 *			 first KD_DBSCAN_LIST of them are kept, so that the next passes
 *			 walk again only for points with more.
 *	join	 every core point's set with those of the core points within its
 *			 reach (kd_sets.h's lock-free union-find, by node).
 *	attach	 every other point to its nearest core point within reach, by
 *			 (d2, ref); the choice is undecided when a core point of
 *			 another set lies closer than tie_rel * d + tie_abs beyond the
 *			 nearest one's distance d.
 *	number	 each set's lowest ref, then the sets numbered in that order.
 *
 * Undecided pairs and choices are only counted: the caller, whose metric
 * differs from the engine's by a rounding, decides them itself (with the
 * margins zero and within == beyond there are none).  Once one is found
 * the passes stop, and the labels are not defined.
 *
 * The same passes run over a uniform grid instead of a tree
 * (kde_dbscan_grid, kd_grid.h): points of one to three dimensions given
 * as an array, sorted by cell, each walk visiting its cell and the
 * neighbouring ones.  Building the grid costs a radix sort where a tree
 * costs a build, and the walks find the same points, so the labels are
 * the same.  On a grid, the count pass and the join pass's walks (a
 * core point's join needs only the later slots) count or gather the
 * points surely within reach, well inside the reach's rounding, without
 * a branch, and test only the few near its edge one by one: whether a
 * candidate lies within reach is near a coin toss, which a branch per
 * candidate mispredicts.
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "kd_dbscan_args.h"
#include "kd_grid.h"
#include "kd_range_walk.h"
#include "kd_sets.h"

/* Neighbours within reach kept per point by the count pass. */
#define KD_DBSCAN_LIST 16

/* What the passes' threads share. */
typedef struct DbscanRun
{
	const KdTree *tree;			/* the points and refs, by node or slot */
	const KdGrid *grid;			/* the grid whose slots they are, or NULL */
	const KdDbscan *args;
	const int64_t *order;		/* the nodes in in-order; NULL: the grid's
								 * slots in order */
	uint8_t    *core;			/* by node */
	int32_t    *nbr;			/* by node: KD_DBSCAN_LIST neighbours */
	int32_t    *nnbr;			/* by node: its neighbours within reach */
	int32_t    *parent;			/* by node: the union-find */
	int32_t    *root;			/* by node: its set's root, or -1 */
	int32_t    *first;			/* by root: the set's lowest ref */
	int32_t    *number;			/* by ref: the set it is the first of */
	int32_t    *labels;			/* by ref */
	int64_t		undecided;		/* updated atomically */
} DbscanRun;

/* One point's walk over its reach: the ball of radius r around node. */
KD_INLINE void
dbscan_walk(const DbscanRun *run, int64_t node, double r, KdHitVisit visit,
			void *ctx)
{
	const KdTree *t = run->tree;
	RangeRegion g;

	if (run->grid)
	{
		grid_walk(run->grid, node, r, visit, ctx);
		return;
	}
	g.a = t->coords + node * t->dim;
	g.b = NULL;
	g.r = r;
	g.r2max = kde_radius_bound(r);
	switch (t->dim)
	{
		case 2:
			(void) range_walk(t, g, visit, ctx, false, 2);
			break;
		case 3:
			(void) range_walk(t, g, visit, ctx, false, 3);
			break;
		default:
			(void) range_walk(t, g, visit, ctx, false, t->dim);
			break;
	}
}

/* The count pass's view of one point's walk. */
typedef struct CountHits
{
	int64_t		self;
	double		within;
	int32_t    *list;			/* KD_DBSCAN_LIST places, and one spare */
	int32_t		n;				/* within reach, but itself */
	int64_t		undecided;
} CountHits;

/* range_walk visitor of the count pass. */
KD_INLINE void
count_hit(void *ctx, int64_t node, double d2)
{
	CountHits  *c = ctx;

	if (node == c->self)
		return;
	if (sqrt(d2) <= c->within)
	{
		if (c->n < KD_DBSCAN_LIST)
			c->list[c->n] = (int32_t) node;
		c->n++;
	}
	else
		c->undecided++;
}

/*
 * The squared radius within which sqrt(d2) <= r surely holds: r^2
 * narrowed by far more than its rounding, or -1 (none) where r^2 is not in
 * the normal range.
 */
static double
radius_sure2(double r)
{
	double		r2 = r * r * (1.0 - 1e-12);

	return r > 0 && r2 > 4.0 * DBL_MIN ? r2 : -1.0;
}

/*
 * The count pass's walk of a grid's slot, with grid_walk's test and
 * count_hit's rule: a point within sure2 (radius_sure2 of the reach) is
 * counted without a branch, written to the list's spare place once it is
 * full, and only the rare one between sure2 and the walk's bound goes
 * through count_hit.
 */
KD_INLINE void
grid_count(const KdGrid *g, int64_t slot, double r, double sure2,
		   CountHits *c, const int dim)
{
	const int32_t *rows = g->row_slots + g->slot_cell[slot] * 2 * g->nrows;
	const double *a = g->coords + slot * dim;
	const double r2max = kde_radius_bound(r);

	for (int w = 0; w < g->nrows; w++)
		for (int64_t s = rows[2 * w]; s < rows[2 * w + 1]; s++)
		{
			double		d2 = kde_dist2(a, g->coords + s * dim, dim);
			int			sure = d2 <= sure2;
			int			near = d2 <= r2max;

			c->list[c->n < KD_DBSCAN_LIST ? c->n : KD_DBSCAN_LIST] = (int32_t) s;
			c->n += sure & (s != slot);
			/* sure2 < r2max: near without sure is the band between */
			if (near != sure && sqrt(d2) <= r)
				count_hit(c, s, d2);
		}
}

/* Parallel body: core flags of in-order positions [begin, end). */
static void
count_range(void *arg, int64_t begin, int64_t end)
{
	DbscanRun  *run = arg;
	const double beyond = run->args->beyond;
	const double sure2 = radius_sure2(run->args->within);
	int64_t		undecided = 0;

	for (int64_t u = begin; u < end; u++)
	{
		int64_t		i = run->order ? run->order[u] : u;
		int32_t		list[KD_DBSCAN_LIST + 1];
		CountHits	c = {i, run->args->within, list, 0, 0};

		if (run->grid == NULL)
			dbscan_walk(run, i, beyond, count_hit, &c);
		else if (run->grid->dim == 2)
			grid_count(run->grid, i, beyond, sure2, &c, 2);
		else
			grid_count(run->grid, i, beyond, sure2, &c, run->grid->dim);
		memcpy(run->nbr + i * KD_DBSCAN_LIST, list, sizeof(int32_t) * KD_DBSCAN_LIST);
		run->nnbr[i] = c.n;
		run->core[i] = c.n + 1 >= run->args->minpoints;
		undecided += c.undecided;
	}
	if (undecided > 0)
		__atomic_fetch_add(&run->undecided, undecided, __ATOMIC_RELAXED);
}

/*
 * Call visit for each point within reach of node i (and perhaps i itself,
 * which the visitors pass over): from the count pass's list when it holds
 * them all, with d2 as the walk computes it, else by a walk.
 */
KD_INLINE void
each_within(const DbscanRun *run, int64_t i, KdHitVisit visit, void *ctx)
{
	const KdTree *t = run->tree;
	int32_t		m = run->nnbr[i];

	if (run->args->within < 0)
		return;
	if (m > KD_DBSCAN_LIST)
	{
		dbscan_walk(run, i, run->args->within, visit, ctx);
		return;
	}
	for (int32_t k = 0; k < m; k++)
	{
		int64_t		j = run->nbr[i * KD_DBSCAN_LIST + k];

		visit(ctx, j, kde_dist2(t->coords + i * t->dim, t->coords + j * t->dim, t->dim));
	}
}

/* The join pass's view of one core point's walk. */
typedef struct JoinHits
{
	int32_t		self;
	const uint8_t *core;
	int32_t    *parent;
} JoinHits;

/* range_walk visitor of the join pass: each core pair once. */
KD_INLINE void
join_hit(void *ctx, int64_t node, double d2)
{
	JoinHits   *j = ctx;

	(void) d2;
	if (node > j->self && j->core[node])
		kde_set_union(j->parent, j->self, (int32_t) node);
}

/* Join node i's set with those of the k nodes in hit. */
KD_INLINE void
join_all(const DbscanRun *run, int64_t i, const int32_t *hit, int k)
{
	for (int h = 0; h < k; h++)
		kde_set_union(run->parent, (int32_t) i, hit[h]);
}

/*
 * The join pass's walk of a grid's slot where the count pass's list does
 * not hold its reach, with grid_walk's test and join_hit's rule: the
 * later slots only (the cells' rows are runs of slots), the core points
 * among them surely within reach (radius_sure2) gathered without a branch
 * a list's length at a time, the rare one between sure2 and the walk's
 * bound tested exactly.
 */
KD_INLINE void
grid_join(const DbscanRun *run, int64_t slot, double sure2, const int dim)
{
	const KdGrid *g = run->grid;
	const int32_t *rows = g->row_slots + g->slot_cell[slot] * 2 * g->nrows;
	const double *a = g->coords + slot * dim;
	const double r = run->args->within;
	const double r2max = kde_radius_bound(r);
	int32_t		hit[KD_DBSCAN_LIST];
	int			k = 0;

	for (int w = 0; w < g->nrows; w++)
		for (int64_t s = rows[2 * w] > slot ? rows[2 * w] : slot + 1;
			 s < rows[2 * w + 1]; s++)
		{
			double		d2 = kde_dist2(a, g->coords + s * dim, dim);
			int			sure = d2 <= sure2;

			if ((d2 <= r2max) != sure)
				sure = sqrt(d2) <= r;
			hit[k] = (int32_t) s;
			k += sure & run->core[s];
			if (k == KD_DBSCAN_LIST)
			{
				join_all(run, slot, hit, k);
				k = 0;
			}
		}
	join_all(run, slot, hit, k);
}

/* Parallel body: join the sets of in-order positions [begin, end). */
static void
join_range(void *arg, int64_t begin, int64_t end)
{
	DbscanRun  *run = arg;
	const double sure2 = radius_sure2(run->args->within);

	for (int64_t u = begin; u < end; u++)
	{
		int64_t		i = run->order ? run->order[u] : u;
		JoinHits	j = {(int32_t) i, run->core, run->parent};

		if (!run->core[i])
			continue;
		if (run->grid == NULL || run->nnbr[i] <= KD_DBSCAN_LIST)
			each_within(run, i, join_hit, &j);
		else if (run->grid->dim == 2)
			grid_join(run, i, sure2, 2);
		else
			grid_join(run, i, sure2, run->grid->dim);
	}
}

/*
 * The attach pass's view of one point's walk: the nearest core point by
 * (d2, ref), its set, and the least d2 of a core point of another set.
 */
typedef struct AttachHits
{
	const KdTree *tree;
	const uint8_t *core;
	int32_t    *parent;
	int64_t		best;
	double		best_d2;
	int32_t		best_root;
	double		other_d2;
} AttachHits;

/* range_walk visitor of the attach pass. */
KD_INLINE void
attach_hit(void *ctx, int64_t node, double d2)
{
	AttachHits *a = ctx;
	int32_t		r;

	if (!a->core[node])
		return;
	r = kde_set_find(a->parent, (int32_t) node);
	if (a->best < 0 ||
		kde_neighbor_less(d2, a->tree->refs[node], a->best_d2,
						  a->tree->refs[a->best]))
	{
		/* the old best is the nearest of all before: of another set, S */
		if (a->best >= 0 && r != a->best_root)
			a->other_d2 = a->best_d2;
		a->best = node;
		a->best_d2 = d2;
		a->best_root = r;
	}
	else if (r != a->best_root && d2 < a->other_d2)
		a->other_d2 = d2;
}

/* Parallel body: the sets of in-order positions [begin, end). */
static void
attach_range(void *arg, int64_t begin, int64_t end)
{
	DbscanRun  *run = arg;
	const KdDbscan *args = run->args;
	int64_t		undecided = 0;

	for (int64_t u = begin; u < end; u++)
	{
		int64_t		i = run->order ? run->order[u] : u;
		AttachHits	a = {run->tree, run->core, run->parent, -1, 0.0, -1, INFINITY};

		if (run->core[i])
		{
			run->root[i] = kde_set_find(run->parent, (int32_t) i);
			continue;
		}
		each_within(run, i, attach_hit, &a);
		run->root[i] = a.best_root;
		if (a.best >= 0 && sqrt(a.other_d2) <
			sqrt(a.best_d2) * (1.0 + args->tie_rel) + args->tie_abs)
			undecided++;
	}
	if (undecided > 0)
		__atomic_fetch_add(&run->undecided, undecided, __ATOMIC_RELAXED);
}

/* Parallel body: the lowest ref of each set, over nodes [begin, end). */
static void
first_range(void *arg, int64_t begin, int64_t end)
{
	DbscanRun  *run = arg;

	for (int64_t i = begin; i < end; i++)
		if (run->root[i] >= 0)
			kde_atomic_min(&run->first[run->root[i]], (int32_t) run->tree->refs[i]);
}

/* Parallel body: the labels of nodes [begin, end). */
static void
label_range(void *arg, int64_t begin, int64_t end)
{
	DbscanRun  *run = arg;

	for (int64_t i = begin; i < end; i++)
	{
		int32_t		r = run->root[i];

		run->labels[run->tree->refs[i]] =
			r < 0 ? -1 : run->number[run->first[r]];
	}
}

/* Number the sets in the order of their lowest refs, into run->labels. */
static KdStatus
dbscan_number(DbscanRun *run, KdExec *exec, KdError *err)
{
	const KdTree *t = run->tree;
	int32_t		next = 0;
	KdStatus	st;

	for (int64_t i = 0; i < t->n; i++)
	{
		run->first[i] = INT32_MAX;
		run->number[i] = -1;
	}
	if ((st = kde_parallel_for(exec, t->n, 16384, first_range, run, err)) != KD_OK)
		return st;
	for (int64_t i = 0; i < t->n; i++)
		if (run->root[i] >= 0 && run->first[run->root[i]] == (int32_t) t->refs[i])
			run->number[t->refs[i]] = 0;
	for (int64_t x = 0; x < t->n; x++)
		if (run->number[x] == 0)
			run->number[x] = next++;
	return kde_parallel_for(exec, t->n, 16384, label_range, run, err);
}

/*
 * The passes over run's points (run->tree's n, in run->order), into
 * labels; run->tree, grid and order (NULL with a grid) are set.
 */
static KdStatus
dbscan_passes(DbscanRun *run, int32_t *labels, int64_t *undecided,
			  KdExec *exec, KdError *err)
{
	int64_t		n = run->tree->n;
	KdStatus	st = KD_OK;

	run->labels = labels;
	run->core = malloc(sizeof(uint8_t) * n);
	run->nbr = malloc(sizeof(int32_t) * KD_DBSCAN_LIST * n);
	run->nnbr = malloc(sizeof(int32_t) * n);
	run->parent = malloc(sizeof(int32_t) * n);
	run->root = malloc(sizeof(int32_t) * n);
	run->first = malloc(sizeof(int32_t) * n);
	run->number = malloc(sizeof(int32_t) * n);
	if (run->core == NULL || run->nbr == NULL || run->nnbr == NULL ||
		run->parent == NULL || run->root == NULL || run->first == NULL ||
		run->number == NULL)
	{
		st = kde_set_error(err, KD_ERR_NOMEM, -1,
						   "out of memory for DBSCAN of %lld points",
						   (long long) n);
		goto done;
	}
	for (int64_t i = 0; i < n; i++)
		run->parent[i] = (int32_t) i;
	st = kde_parallel_for(exec, n, 256, count_range, run, err);
	if (st == KD_OK && run->undecided == 0)
		st = kde_parallel_for(exec, n, 256, join_range, run, err);
	if (st == KD_OK && run->undecided == 0)
		st = kde_parallel_for(exec, n, 256, attach_range, run, err);
	if (st == KD_OK && run->undecided == 0)
		st = dbscan_number(run, exec, err);
	*undecided = run->undecided;
done:
	free(run->core);
	free(run->nbr);
	free(run->nnbr);
	free(run->parent);
	free(run->root);
	free(run->first);
	free(run->number);
	return st;
}

/* DBSCAN on the CPU threads of exec; see kdtree.h. */
KdStatus
kde_dbscan_cpu(const KdTree *tree, const KdDbscan *args, int32_t *labels,
			   int64_t *undecided, KdExec *exec, KdError *err)
{
	DbscanRun	run = {tree, NULL, args};
	int64_t		n = tree->n;
	KdStatus	st;

	*undecided = 0;
	if ((st = kde_dbscan_check(tree->n, args, err)) != KD_OK)
		return st;
	for (int64_t i = 0; i < n; i++)
		if (tree->refs[i] >= (uint64_t) n)
			return kde_set_error(err, KD_ERR_ARG, i,
								"DBSCAN needs refs 0 .. n - 1, and node %lld has %llu",
								(long long) i, (unsigned long long) tree->refs[i]);
	if (n == 0)
		return KD_OK;
	run.order = kde_inorder_nodes(tree, err, &st);
	if (run.order == NULL)
		return st;
	st = dbscan_passes(&run, labels, undecided, exec, err);
	free((void *) run.order);
	return st;
}

/* DBSCAN of an array of points on a grid, on the CPU; see kdtree.h. */
KdStatus
kde_dbscan_grid(const double *coords, int64_t n, int dim, const KdDbscan *args,
				int32_t *labels, int64_t *undecided, bool *gridded,
				KdExec *exec, KdError *err)
{
	KdGrid		grid;
	KdTree		slots;
	DbscanRun	run = {&slots, &grid, args};
	KdStatus	st;

	*undecided = 0;
	*gridded = false;
	if ((st = kde_dbscan_check(n, args, err)) != KD_OK)
		return st;
	/* a side a little above the reach: kd_grid.c */
	st = kde_grid_build(coords, n, dim, args->beyond * (1.0 + 1e-5), &grid,
						gridded, exec, err);
	if (st != KD_OK || !*gridded)
		return st;
	memset(&slots, 0, sizeof(slots));
	slots.n = n;
	slots.dim = dim;
	slots.coords = grid.coords;
	slots.refs = grid.refs;
	st = dbscan_passes(&run, labels, undecided, exec, err);
	kde_grid_free(&grid);
	return st;
}

/* What the GPU body passes on. */
typedef struct DbscanGpu
{
	const KdDbscan *args;
	int32_t    *labels;
	int64_t    *undecided;
} DbscanGpu;

/* GPU body of kde_dbscan. */
static KdStatus
dbscan_gpu(const KdGpuTree *gtree, void *arg, KdExec *exec, KdError *err)
{
	DbscanGpu  *g = arg;

	return kde_gpu_dbscan(gtree, g->args, g->labels, g->undecided, exec, err);
}

/* DBSCAN, on the device exec chooses; see kdtree.h. */
KdStatus
kde_dbscan(const KdTree *tree, const KdDbscan *args, int32_t *labels,
		   int64_t *undecided, KdExec *exec, KdError *err)
{
	DbscanGpu	g = {args, labels, undecided};
	KdStatus	st;

	if ((st = kde_dbscan_check(tree->n, args, err)) != KD_OK)
		return st;
	if (kde_gpu_run(tree, tree->n, dbscan_gpu, &g, exec, err, &st))
		return st;
	return kde_dbscan_cpu(tree, args, labels, undecided, exec, err);
}
