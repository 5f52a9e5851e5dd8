/*
 * kd_vptree.c
 *	  The vantage-point tree of vectors of any dimension under a metric
 *	  (L2, L1 or L-infinity): its build and the lower bounds its searches
 *	  walk by.
 *
 * Each inner node picks a vantage point among its rows, orders its rows
 * by (distance to it, row) and gives the lesser half, rounded up to a
 * multiple of leaf_rows so that leaves come out full, to its inside child
 * and the rest to its outside child; mu_in is the largest distance inside and
 * mu_out the least outside, so by the triangle inequality a query q at
 * distance dq from the vantage point is at least dq - mu_in from every row
 * inside and mu_out - dq from every row outside.  A node of at most
 * leaf_rows rows is a leaf.  Nodes are numbered in preorder, inside child
 * first, so a leaf's rows are a run of the order array.
 *
 * The vantage point is the row farthest from the node's first row, a
 * corner of its rows, which splits them by a spread of distances.
 * kde_vp_probe measures how well the tree prunes: the share of rows a
 * best-first kNN search of some of its own rows compares, near 1 where
 * the vectors have no structure a vantage point can use (uniform in many
 * dimensions), which a planner needs to know.  The
 * build is deterministic: its ties go by row number.  Cosine distance
 * breaks the triangle inequality, so the tree refuses it.
 */
#include <stdlib.h>
#include <string.h>

#include "kd_internal.h"
#include "kd_metric.h"

/*
 * Relative margin of the bounds: each distance is a rounded sum of at
 * most KD_FLAT_MAX_DIM terms, off by far less than this share of it.
 */
#define VP_BOUND_REL 1e-10

/* A node still to build: its rows, and where its number goes. */
typedef struct VpTask
{
	int64_t		start;
	int64_t		count;
	int64_t		parent;			/* the parent node, or -1 at the root */
	int			side;			/* 0: inside, 1: outside */
} VpTask;

/* (d, row) of position i is less than (d, row) of position j. */
KD_INLINE bool
vp_less(const double *d, const int64_t *order, int64_t i, int64_t j)
{
	return d[i] < d[j] || (d[i] == d[j] && order[i] < order[j]);
}

/* Swap positions i and j of d and order. */
KD_INLINE void
vp_swap(double *d, int64_t *order, int64_t i, int64_t j)
{
	double		td = d[i];
	int64_t		to = order[i];

	d[i] = d[j];
	order[i] = order[j];
	d[j] = td;
	order[j] = to;
}

/*
 * Reorder positions [lo, hi) of d and order so that position nth holds the
 * (d, row) that sorts there, the lesser before it and the greater after:
 * quickselect with a median-of-three pivot.
 */
static void
vp_select(double *d, int64_t *order, int64_t lo, int64_t hi, int64_t nth)
{
	while (hi - lo > 1)
	{
		int64_t		mid = lo + (hi - lo) / 2;
		int64_t		last = hi - 1;
		int64_t		store = lo;

		/* median of lo, mid, last to last */
		if (vp_less(d, order, mid, lo))
			vp_swap(d, order, mid, lo);
		if (vp_less(d, order, last, lo))
			vp_swap(d, order, last, lo);
		if (vp_less(d, order, mid, last))
			vp_swap(d, order, mid, last);
		for (int64_t i = lo; i < last; i++)
			if (vp_less(d, order, i, last))
				vp_swap(d, order, i, store++);
		vp_swap(d, order, store, last);
		if (store == nth)
			return;
		if (nth < store)
			hi = store;
		else
			lo = store + 1;
	}
}

/* Set d[i] to the distance from row vp to the row at position i, for [lo, hi). */
static void
vp_distances(const KdVectors *set, KdMetric metric, int64_t vp,
			 const int64_t *order, double *d, int64_t lo, int64_t hi)
{
	const double *v = set->coords + vp * set->stride;

	for (int64_t i = lo; i < hi; i++)
		d[i] = kde_vector_distance(metric, v, set->coords + order[i] * set->stride,
								   set->dim);
}

/* Append a node to tree, growing its array; its number, or -1 out of memory. */
static int64_t
vp_new_node(KdVpTree *tree, int64_t *cap)
{
	if (tree->nnodes == *cap)
	{
		int64_t		grown = *cap ? *cap * 2 : 64;
		KdVpNode   *nodes = realloc(tree->nodes, sizeof(KdVpNode) * grown);

		if (nodes == NULL)
			return -1;
		tree->nodes = nodes;
		*cap = grown;
	}
	return tree->nnodes++;
}

/*
 * Build the vantage-point tree of set's vectors under metric, leaves of at
 * most leaf_rows (>= 2) rows, into *tree (kde_vp_free frees it).  The
 * vectors must be finite.
 */
KdStatus
kde_vp_build(const KdVectors *set, KdMetric metric, int leaf_rows,
			 KdVpTree *tree, KdError *err)
{
	VpTask	   *stack;
	int64_t		depth = 0;
	int64_t		cap = 0;
	double	   *d;
	KdStatus	st;

	memset(tree, 0, sizeof(*tree));
	if (metric != KD_METRIC_L2 && metric != KD_METRIC_L1 && metric != KD_METRIC_LINF)
		return kde_set_error(err, KD_ERR_ARG, -1,
							 "a vantage-point tree needs a metric: L2, L1 or L-infinity, not %s",
							 kde_metric_name(metric));
	if (leaf_rows < 2 || set->n < 0)
		return kde_set_error(err, KD_ERR_ARG, -1,
							 "a vantage-point tree needs leaves of 2 rows or more");
	st = kde_flat_check(set->coords, set->n, set->dim, set->stride, metric,
						"vector", err);
	if (st != KD_OK)
		return st;
	if (set->n == 0)
		return KD_OK;

	tree->order = malloc(sizeof(int64_t) * set->n);
	d = malloc(sizeof(double) * set->n);
	/* each task splits in two, the inside on top: depth <= log2(n) + 2 */
	stack = malloc(sizeof(VpTask) * 130);
	if (tree->order == NULL || d == NULL || stack == NULL)
	{
		free(d);
		free(stack);
		kde_vp_free(tree);
		return kde_set_error(err, KD_ERR_NOMEM, -1,
							 "out of memory for a vantage-point tree of %lld vectors",
							 (long long) set->n);
	}
	for (int64_t i = 0; i < set->n; i++)
		tree->order[i] = i;
	stack[depth++] = (VpTask) {0, set->n, -1, 0};

	while (depth > 0)
	{
		VpTask		t = stack[--depth];
		int64_t		id = vp_new_node(tree, &cap);
		KdVpNode   *node;
		int64_t		half = (t.count / 2 + leaf_rows - 1) / leaf_rows * leaf_rows;
		int64_t		far = t.start;

		if (id < 0)
		{
			free(d);
			free(stack);
			kde_vp_free(tree);
			return kde_set_error(err, KD_ERR_NOMEM, -1,
								 "out of memory for a vantage-point tree of %lld vectors",
								 (long long) set->n);
		}
		if (t.parent >= 0)
		{
			KdVpNode   *p = &tree->nodes[t.parent];

			if (t.side == 0)
				p->inside = id;
			else
				p->outside = id;
		}
		node = &tree->nodes[id];
		node->start = t.start;
		node->count = t.count;
		node->inside = node->outside = -1;
		node->vp = -1;
		node->mu_in = node->mu_out = 0.0;
		if (t.count <= leaf_rows)
			continue;
		if (half >= t.count)
			half = t.count / 2;

		/* the vantage point: the row farthest from the first row */
		vp_distances(set, metric, tree->order[t.start], tree->order, d,
					 t.start, t.start + t.count);
		for (int64_t i = t.start + 1; i < t.start + t.count; i++)
			if (vp_less(d, tree->order, far, i))
				far = i;
		node->vp = tree->order[far];
		vp_distances(set, metric, node->vp, tree->order, d, t.start,
					 t.start + t.count);
		vp_select(d, tree->order, t.start, t.start + t.count, t.start + half);
		node->mu_out = d[t.start + half];
		node->mu_in = d[t.start];
		for (int64_t i = t.start + 1; i < t.start + half; i++)
			if (d[i] > node->mu_in)
				node->mu_in = d[i];

		stack[depth++] = (VpTask) {t.start + half, t.count - half, id, 1};
		stack[depth++] = (VpTask) {t.start, half, id, 0};
	}
	free(d);
	free(stack);
	return KD_OK;
}

/* Free what kde_vp_build allocated in tree. */
void
kde_vp_free(KdVpTree *tree)
{
	free(tree->nodes);
	free(tree->order);
	memset(tree, 0, sizeof(*tree));
}

/*
 * A lower bound of the distance from a query to every row of a node's
 * child, the query dq from the node's vantage point: side 0 the inside
 * child (rows within mu = mu_in), 1 the outside (rows from mu = mu_out
 * on).  Lowered by a margin past the rounding of the three distances, and
 * 0 where they overflow, so that no row is ever nearer than its bound.
 */
double
kde_vp_bound(double dq, double mu, int side)
{
	double		b = side == 0 ? dq - mu : mu - dq;

	b -= (dq + mu) * VP_BOUND_REL;
	return b > 0.0 ? b : 0.0;
}

/* A node in the probe's queue, by bound. */
typedef struct VpProbeItem
{
	double		bound;
	int64_t		node;
} VpProbeItem;

/* Push item onto the binary min-heap heap of *n items. */
static void
vp_heap_push(VpProbeItem *heap, int64_t *n, VpProbeItem item)
{
	int64_t		i = (*n)++;

	while (i > 0 && heap[(i - 1) / 2].bound > item.bound)
	{
		heap[i] = heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	heap[i] = item;
}

/* Pop the least item of the binary min-heap heap of *n > 0 items. */
static VpProbeItem
vp_heap_pop(VpProbeItem *heap, int64_t *n)
{
	VpProbeItem top = heap[0];
	VpProbeItem last = heap[--(*n)];
	int64_t		i = 0;

	for (;;)
	{
		int64_t		c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && heap[c + 1].bound < heap[c].bound)
			c++;
		if (heap[c].bound >= last.bound)
			break;
		heap[i] = heap[c];
		i = c;
	}
	if (*n > 0)
		heap[i] = last;
	return top;
}

/*
 * The mean share of set's rows whose distance a best-first kNN search of
 * k rows compares (vantage points counted), over nprobe queries taken
 * evenly from the rows themselves; -1 when memory runs out.  tree is set's
 * (kde_vp_build), under metric.
 */
double
kde_vp_probe(const KdVectors *set, KdMetric metric, const KdVpTree *tree,
			 int k, int nprobe)
{
	VpProbeItem *heap;
	double	   *best;
	double		total = 0.0;

	if (set->n == 0 || tree->nnodes == 0 || nprobe < 1 || k < 1)
		return 0.0;
	heap = malloc(sizeof(VpProbeItem) * tree->nnodes);
	best = malloc(sizeof(double) * k);
	if (heap == NULL || best == NULL)
	{
		free(heap);
		free(best);
		return -1.0;
	}
	for (int p = 0; p < nprobe; p++)
	{
		const double *q = set->coords + (set->n * p / nprobe) * set->stride;
		int64_t		nheap = 0;
		int			nbest = 0;
		int64_t		compared = 0;

		vp_heap_push(heap, &nheap, (VpProbeItem) {0.0, 0});
		while (nheap > 0)
		{
			VpProbeItem it = vp_heap_pop(heap, &nheap);
			const KdVpNode *nd = &tree->nodes[it.node];

			/* best[] keeps the nbest least distances, the greatest last */
			if (nbest == k && it.bound > best[k - 1])
				break;
			if (nd->vp < 0)
			{
				for (int64_t r = nd->start; r < nd->start + nd->count; r++)
				{
					double		d = kde_vector_distance(metric, q,
														set->coords + tree->order[r] * set->stride,
														set->dim);
					int			i;

					compared++;
					if (nbest == k && d >= best[k - 1])
						continue;
					i = nbest < k ? nbest++ : k - 1;
					while (i > 0 && best[i - 1] > d)
					{
						best[i] = best[i - 1];
						i--;
					}
					best[i] = d;
				}
			}
			else
			{
				double		dq = kde_vector_distance(metric, q,
													 set->coords + nd->vp * set->stride,
													 set->dim);

				compared++;
				vp_heap_push(heap, &nheap,
							 (VpProbeItem) {fmax(it.bound, kde_vp_bound(dq, nd->mu_in, 0)),
											nd->inside});
				vp_heap_push(heap, &nheap,
							 (VpProbeItem) {fmax(it.bound, kde_vp_bound(dq, nd->mu_out, 1)),
											nd->outside});
			}
		}
		total += (double) compared / (double) set->n;
	}
	free(heap);
	free(best);
	return total / nprobe;
}
