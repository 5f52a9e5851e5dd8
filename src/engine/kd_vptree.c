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
 * leaf_rows rows is a leaf.  Nodes are numbered level by level, a node's
 * inside child just before its outside child, and each node's rows are a
 * run of the order array, its inside child's first.
 *
 * The vantage point is the row farthest from the node's least row (by
 * row number), a corner of its rows, which splits them by a spread of
 * distances; a leaf keeps its rows in row order.  These rules make the
 * tree a function of the vectors alone, whatever order a build visits
 * them in, so that the GPU's level-by-level build (cuda/vp_build.cu,
 * through kde_vp_build) makes the same tree as the CPU's threads.
 * kde_vp_probe measures how well the tree prunes: the share of rows a
 * best-first kNN search of some of its own rows compares, near 1 where
 * the vectors have no structure a vantage point can use (uniform in many
 * dimensions), which a planner needs to know.  kde_vp_knn answers a batch
 * of kNN queries through the tree, exactly as the flat search does.  The
 * build is deterministic: its ties go by row number.  Cosine distance
 * breaks the triangle inequality, so the tree refuses it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kd_internal.h"
#include "kd_metric.h"

/* What the threads of a build share. */
typedef struct VpBuild
{
	const KdVectors *set;
	KdMetric	metric;
	KdVpTree   *tree;
	double	   *d;				/* a distance per position of order */
	int			leaf_rows;
	int64_t    *half;			/* per node of the level: its inside count */
	int64_t		level;			/* the level's first node */
	KdExec	   *exec;			/* NULL: one thread a node */
	int64_t		from;			/* a distance pass's row (vp_pass's copy) */
} VpBuild;

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

/* Set d[i] to the distance from row b->from to the row at position i, for [lo, hi). */
static void
vp_distances(void *arg, int64_t lo, int64_t hi)
{
	const VpBuild *b = arg;
	const KdVectors *set = b->set;
	const double *v = set->coords + b->from * set->stride;

	for (int64_t i = lo; i < hi; i++)
		b->d[i] = kde_vector_distance(b->metric, v,
									  set->coords + b->tree->order[i] * set->stride,
									  set->dim);
}

/*
 * The distance pass from row from over the positions [lo, hi): on exec's
 * threads when b has an exec, else on this one.
 */
static KdStatus
vp_pass(const VpBuild *b, int64_t from, int64_t lo, int64_t hi, KdError *err)
{
	/* a copy whose arrays start at lo, as the loop counts from 0 */
	VpBuild		pass = *b;
	KdVpTree	view = *b->tree;

	view.order = b->tree->order + lo;
	pass.tree = &view;
	pass.d = b->d + lo;
	pass.from = from;
	if (b->exec == NULL)
	{
		vp_distances(&pass, 0, hi - lo);
		return KD_OK;
	}
	return kde_parallel_for(b->exec, hi - lo, 4096, vp_distances, &pass, err);
}

/* qsort's order of row numbers. */
static int
vp_row_cmp(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a;
	int64_t		y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

/*
 * Split node id of a level, if it has more than leaf_rows rows: choose its
 * vantage point, order its rows by distance to it, set vp, mu_in and
 * mu_out, and its inside count in b->half; else put its rows in row order.
 */
static KdStatus
vp_split(VpBuild *b, int64_t id, KdError *err)
{
	KdVpNode   *nd = &b->tree->nodes[id];
	int64_t    *order = b->tree->order;
	int64_t		lo = nd->start;
	int64_t		hi = nd->start + nd->count;
	int64_t		half = (nd->count / 2 + b->leaf_rows - 1) / b->leaf_rows * b->leaf_rows;
	int64_t		far = lo;
	int64_t		first = lo;
	KdStatus	st;

	b->half[id - b->level] = 0;
	if (nd->count <= b->leaf_rows)
	{
		qsort(order + lo, nd->count, sizeof(int64_t), vp_row_cmp);
		return KD_OK;
	}
	if (half >= nd->count)
		half = nd->count / 2;

	/* the vantage point: the row farthest from the least row */
	for (int64_t i = lo + 1; i < hi; i++)
		if (order[i] < order[first])
			first = i;
	if ((st = vp_pass(b, order[first], lo, hi, err)) != KD_OK)
		return st;
	for (int64_t i = lo + 1; i < hi; i++)
		if (vp_less(b->d, order, far, i))
			far = i;
	nd->vp = order[far];
	if ((st = vp_pass(b, nd->vp, lo, hi, err)) != KD_OK)
		return st;
	vp_select(b->d, order, lo, hi, lo + half);
	nd->mu_out = b->d[lo + half];
	nd->mu_in = b->d[lo];
	for (int64_t i = lo + 1; i < lo + half; i++)
		if (b->d[i] > nd->mu_in)
			nd->mu_in = b->d[i];
	b->half[id - b->level] = half;
	return KD_OK;
}

/* kde_parallel_for's body: split the level's nodes [lo, hi), one thread each. */
static void
vp_split_nodes(void *arg, int64_t lo, int64_t hi)
{
	VpBuild    *b = arg;

	for (int64_t i = lo; i < hi; i++)
		(void) vp_split(b, b->level + i, NULL);
}

/* Append a node of rows [start, start + count) to tree; false out of memory. */
static bool
vp_new_node(KdVpTree *tree, int64_t *cap, int64_t start, int64_t count)
{
	KdVpNode   *nd;

	if (tree->nnodes == *cap)
	{
		int64_t		grown = *cap ? *cap * 2 : 64;
		KdVpNode   *nodes = realloc(tree->nodes, sizeof(KdVpNode) * grown);

		if (nodes == NULL)
			return false;
		tree->nodes = nodes;
		*cap = grown;
	}
	nd = &tree->nodes[tree->nnodes++];
	nd->vp = -1;
	nd->mu_in = nd->mu_out = 0.0;
	nd->start = start;
	nd->count = count;
	nd->inside = nd->outside = -1;
	return true;
}

/* KD_OK, or the error for a build's metric, leaf size or vectors. */
static KdStatus
vp_check(const KdVectors *set, KdMetric metric, int leaf_rows, KdError *err)
{
	if (metric != KD_METRIC_L2 && metric != KD_METRIC_L1 && metric != KD_METRIC_LINF)
		return kde_set_error(err, KD_ERR_ARG, -1,
							 "a vantage-point tree needs a metric: L2, L1 or L-infinity, not %s",
							 kde_metric_name(metric));
	if (leaf_rows < 2 || set->n < 0)
		return kde_set_error(err, KD_ERR_ARG, -1,
							 "a vantage-point tree needs leaves of 2 rows or more");
	return kde_flat_check(set->coords, set->n, set->dim, set->stride, metric,
						  "vector", err);
}

/*
 * Build the vantage-point tree of set's n > 0 vectors, checked
 * (vp_check), under metric, leaves of at most leaf_rows rows, into *tree,
 * a level at a time on exec's CPU threads: the nodes of a level at once
 * where they are many, else each node's distances.
 */
static KdStatus
vp_build_checked(const KdVectors *set, KdMetric metric, int leaf_rows,
				 KdVpTree *tree, KdExec *exec, KdError *err)
{
	VpBuild		b;
	int64_t		cap = 0;
	int			threads = exec && exec->threads > 1 ? exec->threads : 1;
	KdStatus	st = KD_OK;

	memset(&b, 0, sizeof(b));
	b.set = set;
	b.metric = metric;
	b.tree = tree;
	b.leaf_rows = leaf_rows;
	tree->order = malloc(sizeof(int64_t) * set->n);
	b.d = malloc(sizeof(double) * set->n);
	if (tree->order == NULL || b.d == NULL || !vp_new_node(tree, &cap, 0, set->n))
		goto nomem;
	for (int64_t i = 0; i < set->n; i++)
		tree->order[i] = i;

	for (int64_t lo = 0, hi = 1; lo < hi; lo = hi, hi = tree->nnodes)
	{
		b.level = lo;
		b.half = malloc(sizeof(int64_t) * (hi - lo));
		if (b.half == NULL)
			goto nomem;
		if (hi - lo >= 2 * threads || threads == 1)
		{
			b.exec = NULL;
			st = kde_parallel_for(exec, hi - lo, 1, vp_split_nodes, &b, err);
		}
		else
		{
			b.exec = exec;
			for (int64_t id = lo; id < hi && st == KD_OK; id++)
				st = vp_split(&b, id, err);
		}
		for (int64_t id = lo; id < hi && st == KD_OK; id++)
		{
			int64_t		half = b.half[id - lo];
			int64_t		start = tree->nodes[id].start;
			int64_t		count = tree->nodes[id].count;

			if (half == 0)
				continue;
			tree->nodes[id].inside = tree->nnodes;
			tree->nodes[id].outside = tree->nnodes + 1;
			if (!vp_new_node(tree, &cap, start, half) ||
				!vp_new_node(tree, &cap, start + half, count - half))
			{
				free(b.half);
				goto nomem;
			}
		}
		free(b.half);
		if (st != KD_OK)
		{
			free(b.d);
			kde_vp_free(tree);
			return st;
		}
	}
	free(b.d);
	return KD_OK;

nomem:
	free(b.d);
	kde_vp_free(tree);
	return kde_set_error(err, KD_ERR_NOMEM, -1,
						 "out of memory for a vantage-point tree of %lld vectors",
						 (long long) set->n);
}

/*
 * Build the vantage-point tree of set's vectors under metric, leaves of at
 * most leaf_rows (>= 2) rows, into *tree (kde_vp_free frees it), on
 * exec's CPU threads.  The vectors must be finite.
 */
KdStatus
kde_vp_build_cpu(const KdVectors *set, KdMetric metric, int leaf_rows,
				 KdVpTree *tree, KdExec *exec, KdError *err)
{
	KdStatus	st;

	memset(tree, 0, sizeof(*tree));
	if ((st = vp_check(set, metric, leaf_rows, err)) != KD_OK || set->n == 0)
		return st;
	return vp_build_checked(set, metric, leaf_rows, tree, exec, err);
}

/*
 * The GPU's work of a build: a tree level's two distance passes count a
 * row against 64k coordinates as one item, as the flat search does.
 */
static int64_t
vp_build_work(const KdVectors *set, int leaf_rows)
{
	double		levels = ceil(log2((double) set->n / leaf_rows + 1.0)) + 1.0;
	double		work = 2.0 * levels * ceil((double) set->n * set->dim / 65536.0);

	return work > 1e18 ? INT64_MAX : (int64_t) work;
}

/*
 * kde_vp_build_cpu's tree, built on the device exec chooses: the GPU's
 * (kd_gpu_abi.h's vp_build) is the same tree, node for node and row for
 * row.  Where the GPU provider builds no such trees (none is loaded, or
 * the GPU service's table stands in for it) or exec is NULL, the CPU's
 * threads build it, whatever the device asked for, as they always did.
 */
KdStatus
kde_vp_build(const KdVectors *set, KdMetric metric, int leaf_rows,
			 KdVpTree *tree, KdExec *exec, KdError *err)
{
	KdStatus	st;

	memset(tree, 0, sizeof(*tree));
	if ((st = vp_check(set, metric, leaf_rows, err)) != KD_OK || set->n == 0)
		return st;
	if (exec != NULL && kde_gpu_builds_vp_trees() &&
		kde_gpu_chosen(exec, vp_build_work(set, leaf_rows), err, &st))
	{
		st = kde_gpu_vp_build(set, metric, leaf_rows, tree, exec, err);
		if (st == KD_OK || !kde_gpu_fallback(exec, st, err))
			return st;
	}
	else if (st != KD_OK)
		return st;
	return vp_build_checked(set, metric, leaf_rows, tree, exec, err);
}

/* Free what kde_vp_build allocated in tree. */
void
kde_vp_free(KdVpTree *tree)
{
	kde_gpu_vp_release(tree);
	free(tree->nodes);
	free(tree->order);
	memset(tree, 0, sizeof(*tree));
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
 * Push inner node number node's children onto the heap of *nheap items
 * for query x, each with the bound of its side (at least bound, its
 * parent's), from x's distance to the vantage point.
 */
static void
vp_push_children(const KdVectors *set, KdMetric metric, const KdVpTree *tree,
				 int64_t node, const double *x, double bound,
				 VpProbeItem *heap, int64_t *nheap)
{
	const KdVpNode *nd = &tree->nodes[node];
	const double *vp = tree->vps ? tree->vps + node * set->dim :
		set->coords + nd->vp * set->stride;
	double		dq = kde_vector_distance(metric, x, vp, set->dim);

	vp_heap_push(heap, nheap,
				 (VpProbeItem) {fmax(bound, kde_vp_bound(dq, nd->mu_in, 0)),
								nd->inside});
	vp_heap_push(heap, nheap,
				 (VpProbeItem) {fmax(bound, kde_vp_bound(dq, nd->mu_out, 1)),
								nd->outside});
}

/* What the probe's threads share: a share per probe, -1 out of memory. */
typedef struct VpProbe
{
	const KdVectors *set;
	KdMetric	metric;
	const KdVpTree *tree;
	int			k;
	int			nprobe;
	double	   *share;
} VpProbe;

/*
 * The share of the rows a best-first kNN search of k rows for q compares
 * (vantage points counted), with heap room for every node and best for k.
 */
static double
vp_probe_one(const VpProbe *p, const double *q, VpProbeItem *heap, double *best)
{
	const KdVectors *set = p->set;
	const KdVpTree *tree = p->tree;
	int64_t		nheap = 0;
	int			nbest = 0;
	int			k = p->k;
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
				double		d = kde_vector_distance(p->metric, q,
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
			compared++;
			vp_push_children(set, p->metric, tree, it.node, q, it.bound, heap, &nheap);
		}
	}
	return (double) compared / (double) set->n;
}

/* kde_parallel_for's body: the probes [lo, hi). */
static void
vp_probe_range(void *arg, int64_t lo, int64_t hi)
{
	const VpProbe *p = arg;
	VpProbeItem *heap = malloc(sizeof(VpProbeItem) * p->tree->nnodes);
	double	   *best = malloc(sizeof(double) * p->k);

	for (int64_t i = lo; i < hi; i++)
		p->share[i] = heap && best ?
			vp_probe_one(p, p->set->coords + (p->set->n * i / p->nprobe) * p->set->stride,
						 heap, best) : -1.0;
	free(heap);
	free(best);
}

/*
 * The mean share of set's rows whose distance a best-first kNN search of
 * k rows compares (vantage points counted), over nprobe queries taken
 * evenly from the rows themselves, on exec's threads; -1 when memory runs
 * out or exec's interrupt asks to stop.  tree is set's (kde_vp_build),
 * under metric.
 */
double
kde_vp_probe(const KdVectors *set, KdMetric metric, const KdVpTree *tree,
			 int k, int nprobe, KdExec *exec)
{
	VpProbe		p = {set, metric, tree, k, nprobe, NULL};
	KdError		err;
	double		total = 0.0;

	if (set->n == 0 || tree->nnodes == 0 || nprobe < 1 || k < 1)
		return 0.0;
	p.share = malloc(sizeof(double) * nprobe);
	if (p.share == NULL ||
		kde_parallel_for(exec, nprobe, 1, vp_probe_range, &p, &err) != KD_OK)
	{
		free(p.share);
		return -1.0;
	}
	for (int i = 0; i < nprobe && total >= 0.0; i++)
		total = p.share[i] < 0.0 ? -1.0 : total + p.share[i];
	free(p.share);
	return total < 0.0 ? -1.0 : total / nprobe;
}

/* What the threads of a kNN batch through the tree share. */
typedef struct VpKnn
{
	const KdVectors *set;
	KdMetric	metric;
	const KdVpTree *tree;
	const double *queries;
	int			k;
	const uint64_t *skip;
	KdNeighbor *out;
	int32_t    *count;
	int64_t    *compared;		/* per query, or NULL */
	bool		nomem;
} VpKnn;

/*
 * Query q's k nearest rows by (distance, ref), all but the row of its
 * skip ref, into its out and count slots, by a best-first walk with heap
 * room for every node; returns the distances it computed.  A node is left
 * only when its bound exceeds the k-th distance, so a row that ties the
 * k-th with a lesser ref is still found.
 */
static int64_t
vp_knn_one(const VpKnn *p, int64_t q, VpProbeItem *heap)
{
	const KdVectors *set = p->set;
	const KdVpTree *tree = p->tree;
	const double *x = p->queries + q * set->dim;
	KdNeighbor *best = p->out + q * p->k;
	int32_t    *count = &p->count[q];
	int64_t		nheap = 0;
	int64_t		compared = 0;

	*count = 0;
	vp_heap_push(heap, &nheap, (VpProbeItem) {0.0, 0});
	while (nheap > 0)
	{
		VpProbeItem it = vp_heap_pop(heap, &nheap);
		const KdVpNode *nd = &tree->nodes[it.node];

		if (*count == p->k && it.bound > best[p->k - 1].d2)
			break;
		if (nd->vp < 0)
		{
			for (int64_t r = nd->start; r < nd->start + nd->count; r++)
			{
				int64_t		row = tree->order[r];

				if (p->skip && set->refs[row] == p->skip[q])
					continue;
				compared++;
				kde_list_offer(best, count, p->k,
							   kde_vector_distance(p->metric, x,
												   set->coords + row * set->stride,
												   set->dim),
							   set->refs[row]);
			}
		}
		else
		{
			compared++;
			vp_push_children(set, p->metric, tree, it.node, x, it.bound, heap, &nheap);
		}
	}
	return compared;
}

/* kde_parallel_for's body: the queries [lo, hi). */
static void
vp_knn_range(void *arg, int64_t lo, int64_t hi)
{
	VpKnn	   *p = arg;
	VpProbeItem *heap = malloc(sizeof(VpProbeItem) * (p->tree->nnodes + 1));

	if (heap == NULL)
	{
		p->nomem = true;
		return;
	}
	for (int64_t q = lo; q < hi; q++)
	{
		int64_t		c = vp_knn_one(p, q, heap);

		if (p->compared)
			p->compared[q] = c;
	}
	free(heap);
}

/*
 * The k nearest rows of set by (distance, ref) under metric for each of
 * nq queries, through set's tree (kde_vp_build), all but the row of each
 * query's skip ref when skip is given; kde_flat_knn's answers, bit for
 * bit.  compared, if not NULL, gets each query's count of distances
 * computed (vantage points counted).
 */
KdStatus
kde_vp_knn(const KdVectors *set, KdMetric metric, const KdVpTree *tree,
		   const double *queries, int64_t nq, int k, const uint64_t *skip,
		   KdNeighbor *out, int32_t *count, int64_t *compared, KdExec *exec,
		   KdError *err)
{
	VpKnn		p = {set, metric, tree, queries, k, skip, out, count, compared, false};
	KdStatus	st;

	if (set->n == 0 || tree->nnodes == 0)
	{
		for (int64_t q = 0; q < nq; q++)
		{
			count[q] = 0;
			if (compared)
				compared[q] = 0;
		}
		return KD_OK;
	}
	if ((st = kde_parallel_for(exec, nq, 16, vp_knn_range, &p, err)) != KD_OK)
		return st;
	if (p.nomem)
		return kde_set_error(err, KD_ERR_NOMEM, -1,
							 "out of memory for a vantage-point tree search of %lld nodes",
							 (long long) tree->nnodes);
	return KD_OK;
}
