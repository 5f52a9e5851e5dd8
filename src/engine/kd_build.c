/*
 * kd_build.c
 *	  Building a left-balanced kd-tree on the CPU, and the build dispatcher.
 *
 * The builder works on a copy of the points in a scratch array (or, for
 * kde_build_in_place, on the caller's arrays themselves) and keeps
 * every subtree's points in one contiguous range: node i owns [begin, end),
 * its left subtree the first leftsize points, itself the next one, its right
 * subtree the rest (an in-order layout).  For each node it takes the tight
 * bounding box of its range, splits on the widest dimension (the lowest one
 * on ties) and selects the point of rank leftsize by (coordinate, ref) with
 * quickselect, so a build is O(n log n) expected whatever the data:
 * duplicates and degenerate sets split evenly because the shape, not the
 * values, fixes the ranks.  The top levels are built a level at a time,
 * the nodes of each in parallel; the subtrees below are built in parallel
 * as tasks.
 */
#include <stdlib.h>
#include <string.h>

#include "kd_internal.h"

typedef struct BuildCtx
{
	int			dim;
	double	   *pts;			/* the points, moved around */
	uint64_t   *refs;			/* the refs, moved alongside */
	bool		copied;			/* pts and refs are the build's own copies */
	KdTree	   *tree;
	int64_t    *task_node;		/* roots of the subtrees built in parallel */
	int64_t    *task_begin;
	int64_t		ntasks;
	int64_t    *level_node;		/* build_top's other level arrays */
	int64_t    *level_begin;
	KdExec	   *exec;			/* polled for interrupts by kde_parallel_for */
	bool		owned;			/* tree was allocated by build_begin */
} BuildCtx;

/*
 * Subtrees built as one task hold at most this many points, whatever the
 * thread count: the interrupt is polled between tasks (and between the
 * nodes above them), so a cancel takes effect within one task's time.
 */
#define KD_BUILD_TASK_POINTS 32768

/* (coordinate in dimension s, ref) order of scratch entries a and b */
KD_INLINE bool
entry_less(const BuildCtx *c, int64_t a, int64_t b, int s, const int dim)
{
	double		x = c->pts[a * dim + s];
	double		y = c->pts[b * dim + s];

	return x < y || (x == y && c->refs[a] < c->refs[b]);
}

/* Swap scratch entries a and b. */
KD_INLINE void
entry_swap(BuildCtx *c, int64_t a, int64_t b, const int dim)
{
	double	   *pa = c->pts + a * dim;
	double	   *pb = c->pts + b * dim;
	uint64_t	r = c->refs[a];

	for (int j = 0; j < dim; j++)
	{
		double		t = pa[j];

		pa[j] = pb[j];
		pb[j] = t;
	}
	c->refs[a] = c->refs[b];
	c->refs[b] = r;
}

/*
 * Partially sort [lo, hi] so that rank target sits at its sorted place.
 * Hoare's partition around the median of three, whose (coordinate, ref)
 * is held in registers; refs are unique, so the order is total and the
 * points on each side of the rank, the sets a subtree is built of, are the
 * same whatever the partitioning did.
 */
KD_INLINE void
select_rank(BuildCtx *c, int64_t lo, int64_t hi, int64_t target, int s,
			const int dim)
{
	const double *pts = c->pts;
	const uint64_t *refs = c->refs;

	while (hi - lo > 16)
	{
		int64_t		mid = lo + (hi - lo) / 2;
		int64_t		i = lo,
					j = hi;
		double		pv;
		uint64_t	pr;

		/* median of three at mid, with lo and hi as sentinels around it */
		if (entry_less(c, mid, lo, s, dim))
			entry_swap(c, mid, lo, dim);
		if (entry_less(c, hi, mid, s, dim))
		{
			entry_swap(c, hi, mid, dim);
			if (entry_less(c, mid, lo, s, dim))
				entry_swap(c, mid, lo, dim);
		}
		pv = pts[mid * dim + s];
		pr = refs[mid];
		while (i <= j)
		{
			while (pts[i * dim + s] < pv ||
				   (pts[i * dim + s] == pv && refs[i] < pr))
				i++;
			while (pv < pts[j * dim + s] ||
				   (pts[j * dim + s] == pv && pr < refs[j]))
				j--;
			if (i <= j)
			{
				entry_swap(c, i, j, dim);
				i++;
				j--;
			}
		}
		if (target <= j)
			hi = j;
		else if (target >= i)
			lo = i;
		else
			return;
	}
	/* insertion sort of a short range */
	for (int64_t a = lo + 1; a <= hi; a++)
		for (int64_t b = a; b > lo && entry_less(c, b, b - 1, s, dim); b--)
			entry_swap(c, b, b - 1, dim);
}

/*
 * Make node the root of the points in [begin, end): choose its split, place
 * its point and, when it has one, store its bounding box.  Returns the size
 * of its left subtree.
 */
KD_INLINE int64_t
build_node(BuildCtx *c, int64_t node, int64_t begin, int64_t end,
		   const int dim)
{
	KdTree	   *t = c->tree;
	double		box[2 * KD_MAX_DIM];
	int64_t		left = kde_subtree_size(2 * node + 1, t->n);
	int			s = 0;

	for (int j = 0; j < dim; j++)
		box[j] = box[dim + j] = c->pts[begin * dim + j];
	for (int64_t i = begin + 1; i < end; i++)
		kde_box_take(box, c->pts + i * dim, dim);
	for (int j = 1; j < dim; j++)
		if (box[dim + j] - box[j] > box[dim + s] - box[s])
			s = j;

	if (end - begin > 1)
		select_rank(c, begin, end - 1, begin + left, s, dim);

	memcpy(t->coords + node * dim, c->pts + (begin + left) * dim,
		   sizeof(double) * dim);
	t->refs[node] = c->refs[begin + left];
	t->split[node] = (uint8_t) s;
	if (node < t->nbounds)
		memcpy(t->bounds + node * 2 * dim, box, sizeof(double) * 2 * dim);
	return left;
}

/*
 * Build the whole subtree of node over [begin, end), depth first with a
 * stack of right subtrees, for a dimension count known at compile time.
 */
KD_INLINE void
build_subtree(BuildCtx *c, int64_t node, int64_t begin, int64_t end,
			  const int dim)
{
	int64_t		stack[KD_STACK_DEPTH][3];
	int			sp = 0;

	for (;;)
	{
		while (end > begin)
		{
			int64_t		left = build_node(c, node, begin, end, dim);

			/* the right subtree later, the left one now */
			stack[sp][0] = 2 * node + 2;
			stack[sp][1] = begin + left + 1;
			stack[sp][2] = end;
			sp++;
			node = 2 * node + 1;
			end = begin + left;
		}
		if (sp == 0)
			return;
		sp--;
		node = stack[sp][0];
		begin = stack[sp][1];
		end = stack[sp][2];
	}
}

/* build_node for the tree's dimension count. */
static int64_t
build_node_dispatch(BuildCtx *c, int64_t node, int64_t begin, int64_t end)
{
	switch (c->dim)
	{
		case 1:
			return build_node(c, node, begin, end, 1);
		case 2:
			return build_node(c, node, begin, end, 2);
		case 3:
			return build_node(c, node, begin, end, 3);
		case 4:
			return build_node(c, node, begin, end, 4);
		default:
			return build_node(c, node, begin, end, c->dim);
	}
}

/* build_subtree for the tree's dimension count. */
static void
build_subtree_dispatch(BuildCtx *c, int64_t node, int64_t begin, int64_t end)
{
	switch (c->dim)
	{
		case 1:
			build_subtree(c, node, begin, end, 1);
			break;
		case 2:
			build_subtree(c, node, begin, end, 2);
			break;
		case 3:
			build_subtree(c, node, begin, end, 3);
			break;
		case 4:
			build_subtree(c, node, begin, end, 4);
			break;
		default:
			build_subtree(c, node, begin, end, c->dim);
			break;
	}
}

/*
 * One level of the nodes above the tasks: nodes node[i] over [begin[i], ...)
 * for i in [first, last), whose children go to next_node[2i], next_node[2i
 * + 1] (and next_begin), left to right.  An empty node has empty children.
 */
typedef struct BuildLevel
{
	BuildCtx   *c;
	const int64_t *node;
	const int64_t *begin;
	int64_t    *next_node;
	int64_t    *next_begin;
} BuildLevel;

/* Parallel body: settle the nodes [first, last) of a level. */
static void
build_level(void *arg, int64_t first, int64_t last)
{
	BuildLevel *l = arg;
	BuildCtx   *c = l->c;

	for (int64_t i = first; i < last; i++)
	{
		int64_t		node = l->node[i];
		int64_t		begin = l->begin[i];
		int64_t		end = begin + kde_subtree_size(node, c->tree->n);
		int64_t		left = end > begin ? build_node_dispatch(c, node, begin, end) : 0;

		l->next_node[2 * i] = 2 * node + 1;
		l->next_begin[2 * i] = begin;
		l->next_node[2 * i + 1] = 2 * node + 2;
		l->next_begin[2 * i + 1] = begin + left + 1;
	}
}

/*
 * Build the levels above task_level and record the non-empty subtrees
 * rooted at task_level as tasks, left to right.  The nodes of a level are
 * settled in parallel (each owns its own range of the scratch arrays), so
 * only the root's own work runs on one thread: with the levels above the
 * tasks built on the calling thread alone, those levels (five at 1M
 * points, each a pass over every point) were a quarter of a build's work
 * left serial.
 */
static KdStatus
build_top(BuildCtx *c, int task_level, KdError *err)
{
	int64_t    *node = c->task_node;
	int64_t    *begin = c->task_begin;
	int64_t    *next_node = c->level_node;
	int64_t    *next_begin = c->level_begin;
	int64_t		count = 1;
	int64_t		ntasks = 0;

	node[0] = 0;
	begin[0] = 0;
	for (int level = 0; level < task_level; level++)
	{
		BuildLevel	l = {c, node, begin, next_node, next_begin};
		int64_t    *t;
		KdStatus	st;

		if ((st = kde_parallel_for(c->exec, count, 1, build_level, &l, err)) != KD_OK)
			return st;
		t = node;
		node = next_node;
		next_node = t;
		t = begin;
		begin = next_begin;
		next_begin = t;
		count *= 2;
	}
	if (kde_interrupted(c->exec))
		return kde_set_error(err, KD_ERR_CANCELED, -1, "canceled");
	/* in place when the last level is in the task arrays: ntasks <= i */
	for (int64_t i = 0; i < count; i++)
		if (kde_subtree_size(node[i], c->tree->n) > 0)
		{
			c->task_node[ntasks] = node[i];
			c->task_begin[ntasks] = begin[i];
			ntasks++;
		}
	c->ntasks = ntasks;
	return KD_OK;
}

/* Parallel body: build recorded subtrees [first, last). */
static void
build_tasks(void *arg, int64_t first, int64_t last)
{
	BuildCtx   *c = arg;

	for (int64_t i = first; i < last; i++)
	{
		int64_t		node = c->task_node[i];
		int64_t		begin = c->task_begin[i];

		build_subtree_dispatch(c, node, begin,
							   begin + kde_subtree_size(node, c->tree->n));
	}
}

/*
 * Check the points, allocate tree (unless the caller did: !alloc), take
 * the arrays to sort (the caller's scratch when given, else copies of
 * points and refs), and build the levels above task_level, recording the
 * subtrees below as tasks.  c's arrays are freed by build_end, whatever
 * happened.
 */
static KdStatus
build_begin(BuildCtx *c, const double *points, const uint64_t *refs,
			double *scratch_pts, uint64_t *scratch_refs,
			int64_t n, int dim, int task_level, KdTree *tree, bool alloc,
			KdExec *exec, KdError *err)
{
	KdStatus	st;

	memset(c, 0, sizeof(*c));
	st = kde_check_points(points, n, dim, err);
	if (st == KD_OK && alloc)
		st = kde_tree_alloc(tree, n, dim, err);
	if (st != KD_OK)
		return st;
	c->dim = dim;
	c->tree = tree;
	c->owned = alloc;
	c->exec = exec;
	c->copied = scratch_pts == NULL;
	c->pts = scratch_pts ? scratch_pts :
		malloc(sizeof(double) * (size_t) (n * dim) + 1);
	c->refs = scratch_refs ? scratch_refs :
		malloc(sizeof(uint64_t) * (size_t) n + 1);
	c->task_node = malloc(sizeof(int64_t) << task_level);
	c->task_begin = malloc(sizeof(int64_t) << task_level);
	c->level_node = malloc(sizeof(int64_t) << task_level);
	c->level_begin = malloc(sizeof(int64_t) << task_level);
	if (!c->pts || !c->refs || !c->task_node || !c->task_begin ||
		!c->level_node || !c->level_begin)
		return kde_set_error(err, KD_ERR_NOMEM, -1,
							"out of memory building a tree of %lld points",
							(long long) n);
	if (c->copied)
	{
		memcpy(c->pts, points, sizeof(double) * (size_t) (n * dim));
		memcpy(c->refs, refs, sizeof(uint64_t) * (size_t) n);
	}
	return build_top(c, task_level, err);
}

/*
 * Free c's arrays, and the tree if build_begin allocated it and the build
 * failed (st).
 */
static void
build_end(BuildCtx *c, KdStatus st)
{
	if (c->copied)
	{
		free(c->pts);
		free(c->refs);
	}
	free(c->task_node);
	free(c->task_begin);
	free(c->level_node);
	free(c->level_begin);
	if (st != KD_OK && c->tree && c->owned)
		kde_tree_free(c->tree);
	else if (st == KD_OK && c->tree)
		c->tree->ref_order = true;
}

/*
 * Build a tree over n points (n * dim, input order) with their refs on the
 * CPU, sorting scratch_pts and scratch_refs (the same points and refs) in
 * place when given, else copies.  tree is allocated here.
 */
static KdStatus
build_cpu(const double *points, const uint64_t *refs,
		  double *scratch_pts, uint64_t *scratch_refs, int64_t n, int dim,
		  KdTree *tree, KdExec *exec, KdError *err)
{
	BuildCtx	c;
	int			task_level = 0;
	KdStatus	st;

	/*
	 * Subtrees small enough to poll between, and enough of them for the
	 * threads to balance, each of useful size.
	 */
	while ((n >> task_level) > KD_BUILD_TASK_POINTS ||
		   (exec && exec->threads > 1 &&
			((int64_t) 1 << task_level) < 8 * (int64_t) exec->threads &&
			(n >> task_level) > 4096))
		task_level++;

	st = build_begin(&c, points, refs, scratch_pts, scratch_refs, n, dim,
					 task_level, tree, true, exec, err);
	if (st == KD_OK)
		st = kde_parallel_for(exec, c.ntasks, 1, build_tasks, &c, err);
	build_end(&c, st);
	return st;
}

/*
 * Build a tree over n points (n * dim, input order) with their refs on the
 * CPU.  tree is allocated here; free it with kde_tree_free.
 */
KdStatus
kde_build_cpu(const double *points, const uint64_t *refs, int64_t n, int dim,
			 KdTree *tree, KdExec *exec, KdError *err)
{
	return build_cpu(points, refs, NULL, NULL, n, dim, tree, exec, err);
}

/*
 * The top `levels` levels of a tree over n points, built on the CPU into
 * tree (allocated by the caller, kde_tree_alloc), and the points of the 2^levels subtrees below
 * them, left to right: subtree i's kde_subtree_size points (and refs) start
 * at sub_begin[i] of *pts and *prefs, which the caller frees.  The caller
 * builds the subtrees (kde_split_build) and puts them in place; every
 * subtree must be non-empty (n >= 2^(levels + 1) - 1).
 */
KdStatus
kde_build_top(const double *points, const uint64_t *refs, int64_t n, int dim,
			 int levels, KdTree *tree, double **pts, uint64_t **prefs,
			 int64_t *sub_begin, KdExec *exec, KdError *err)
{
	BuildCtx	c;
	KdStatus	st;

	*pts = NULL;
	*prefs = NULL;
	if (n < ((int64_t) 2 << levels) - 1)
		return kde_set_error(err, KD_ERR_ARG, -1,
							"%lld points are too few for %d top levels",
							(long long) n, levels);
	st = build_begin(&c, points, refs, NULL, NULL, n, dim, levels, tree, false,
					 exec, err);
	if (st == KD_OK)
	{
		memcpy(sub_begin, c.task_begin, sizeof(int64_t) * (size_t) c.ntasks);
		*pts = c.pts;
		*prefs = c.refs;
		c.pts = NULL;
		c.refs = NULL;
	}
	build_end(&c, st);
	return st;
}

/*
 * Build a tree on the device chosen by exec (see kde_gpu_chosen), a CPU
 * build sorting scratch_pts and scratch_refs in place when given.  A GPU
 * build keeps the tree's device copy in tree->gpu for the queries that
 * follow.
 */
static KdStatus
build_chosen(const double *points, const uint64_t *refs,
			 double *scratch_pts, uint64_t *scratch_refs, int64_t n, int dim,
			 KdTree *tree, KdExec *exec, KdError *err)
{
	KdStatus	st;

	if (kde_gpu_chosen(exec, n, err, &st))
	{
		/* the device checks the points, with the CPU's error */
		st = kde_tree_alloc(tree, n, dim, err);
		if (st != KD_OK)
			return st;
		st = kde_gpu_build(points, refs, n, dim, tree, &tree->gpu, exec, err);
		if (st == KD_OK)
		{
			tree->ref_order = true;
			return KD_OK;
		}
		kde_tree_free(tree);
		if (!kde_gpu_fallback(exec, st, err))
			return st;
	}
	else if (st != KD_OK)
		return st;
	return build_cpu(points, refs, scratch_pts, scratch_refs, n, dim, tree,
					 exec, err);
}

/* Build a tree over n points with their refs (kdtree.h). */
KdStatus
kde_build(const double *points, const uint64_t *refs, int64_t n, int dim,
		 KdTree *tree, KdExec *exec, KdError *err)
{
	return build_chosen(points, refs, NULL, NULL, n, dim, tree, exec, err);
}

/*
 * kde_build, using points and refs as the CPU build's scratch: it leaves
 * them in another order, saving a copy of them.
 */
KdStatus
kde_build_in_place(double *points, uint64_t *refs, int64_t n, int dim,
				  KdTree *tree, KdExec *exec, KdError *err)
{
	return build_chosen(points, refs, points, refs, n, dim, tree, exec, err);
}
