/*
 * kd_knn.c
 *	  k-nearest-neighbour search on the CPU (one query, batches, All-kNN)
 *	  and the dispatch of batches to the GPU.
 *
 * The search is depth-first with an explicit stack.  It descends to the
 * bottom on the query's side of each split, leaving every node it passes on
 * the stack, and on the way back up offers each node's point to a sorted
 * list of the k best (d2, ref) pairs and then searches its far subtree.
 * Each pending node carries a lower bound on the distance of its point and
 * its far subtree: q's distance to the far subtree's cell, which the node's
 * point borders, raised to the node's bounding box where the tree stores
 * one.  By the time the bound is tested the nearer points have been found,
 * so most nodes high above the query are skipped, point and subtree alike.
 * The bottom levels are searched as buckets of up to 15 points, every point
 * offered, which costs fewer mispredicted branches than walking their
 * splits.  A subtree is skipped only when its bound exceeds the k-th
 * distance found so far (equal distances may still win on ref), so the
 * answer equals brute force exactly.  The stack holds at most one node per
 * level.  A batch processes its queries in spatial order (kd_order.c) and
 * fetches the memory of the queries a few places ahead.
 *
 * The search is written once and instantiated for each dimension count so
 * that the per-dimension loops unroll.
 */
#include <stdlib.h>

#include "kd_internal.h"

/* queries ahead whose memory a batch fetches early */
#define KNN_PREFETCH_AHEAD 4

/*
 * Subtrees of at most four levels (15 points) are searched as buckets:
 * every point, with no splits tested.  Node heads one when its first
 * descendant four levels down, KNN_BUCKET_SPAN * node + 15, would lie
 * beyond the tree: from node n / KNN_BUCKET_SPAN on.
 */
#define KNN_BUCKET_SPAN 16

typedef struct KnnPending
{
	int64_t		node;
	double		lb;				/* bound on d2 of its point and far subtree */
	double		off[KD_MAX_DIM];	/* q's distance to that cell, per dim */
} KnnPending;

/*
 * (d2, node a) before (d2, node b) in the (d2, ref) order of results; the
 * nodes' references are read only on equal distances.
 */
KD_INLINE bool
node_less(const KdTree *t, double d2a, int64_t a, double d2b, uint64_t b)
{
	return d2a < d2b || (d2a == d2b && t->refs[a] < t->refs[b]);
}

/*
 * Offer node at d2 (no more than *worst) to the sorted list of count
 * nodes; *worst becomes the k-th distance once the list is full.
 */
KD_INLINE void
knn_offer(const KdTree *t, KdNeighbor *list, int *count, int k, double d2,
		  int64_t node, double *worst)
{
	int			i;

	if (*count == k && !node_less(t, d2, node, list[k - 1].d2, list[k - 1].ref))
		return;
	i = *count < k ? (*count)++ : k - 1;
	while (i > 0 && node_less(t, d2, node, list[i - 1].d2, list[i - 1].ref))
	{
		list[i] = list[i - 1];
		i--;
	}
	list[i].d2 = d2;
	list[i].ref = (uint64_t) node;
	if (*count == k)
		*worst = list[k - 1].d2;
}

/*
 * Offer every point of the bucket headed by node, level by level (each
 * level's nodes are contiguous), skipping node exclude.
 */
KD_INLINE void
knn_bucket(const KdTree *t, const double *q, int k, int64_t exclude,
		   int64_t node, KdNeighbor *list, int *count, double *worst,
		   const int dim)
{
	int64_t		width = 1;

	for (int64_t first = node; first < t->n; first = 2 * first + 1, width *= 2)
	{
		int64_t		last = first + width < t->n ? first + width : t->n;

		for (int64_t m = first; m < last; m++)
		{
			double		d2 = kde_dist2(q, t->coords + m * dim, dim);

			if (d2 <= *worst && m != exclude)
				knn_offer(t, list, count, k, d2, m, worst);
		}
	}
}

/*
 * The search, for a dimension count known at compile time.
 *
 * A cell (the region a subtree's splits bound) is tracked as q's distance
 * to it in each dimension: a child on the query's side of a split keeps
 * its parent's, the far child's distance in the split dimension becomes
 * that to the splitting plane.  The cell's bound is the sum of their
 * squares in dimension order, a rounded sum of terms no larger than those
 * of any point inside, so it never exceeds a point's kde_dist2.  The list
 * holds nodes while the search runs; their row references are read on
 * equal distances and at the end, so a visit touches the node's
 * coordinates and split alone.
 */
KD_INLINE int
knn_search(const KdTree *t, const double *q, int k, int64_t exclude,
		   KdNeighbor *out, const int dim)
{
	KnnPending	stack[KD_STACK_DEPTH];
	KdNeighbor	list[KD_MAX_K];	/* hot in cache, unlike out */
	const double *coords = t->coords;
	const uint8_t *split = t->split;
	int64_t		n = t->n;
	int64_t		nbounds = t->nbounds;
	int64_t		bucket_from = n / KNN_BUCKET_SPAN;	/* first bucket head */
	int			sp = 0;
	int			count = 0;
	double		worst = INFINITY;
	int64_t		node = 0;
	double		lb = 0.0;
	double		off[KD_MAX_DIM];

	for (int j = 0; j < dim; j++)
		off[j] = 0.0;
	for (;;)
	{
		/* descend from node (cell bound lb, offsets off) to the bottom */
		while (node < n)
		{
			const double *p = coords + node * dim;
			KnnPending *e = &stack[sp];
			double		flb = 0.0;
			double		diff,
						ad;
			int			s;

			if (node < nbounds)
			{
				double		b = kde_box_dist2(q, t->bounds + node * 2 * dim, dim);

				if (b > lb)
					lb = b;
			}
			if (lb > worst)
				break;
			if (node >= bucket_from)
			{
				knn_bucket(t, q, k, exclude, node, list, &count, &worst, dim);
				break;
			}
			s = split[node];
			diff = q[s] - p[s];
			ad = diff < 0 ? -diff : diff;
			for (int j = 0; j < dim; j++)
			{
				double		o = (j == s && ad > off[j]) ? ad : off[j];

				e->off[j] = o;
				flb += o * o;
			}
			if (flb < lb)
				flb = lb;
			if (flb <= worst)
			{
				e->node = node;
				e->lb = flb;
				sp++;
			}
			node = 2 * node + (diff < 0 ? 1 : 2);
		}

		/* back up: the next pending node still in reach */
		for (;;)
		{
			KnnPending *e;

			if (sp == 0)
			{
				for (int i = 0; i < count; i++)
				{
					out[i].d2 = list[i].d2;
					out[i].ref = t->refs[list[i].ref];
				}
				return count;
			}
			e = &stack[--sp];
			if (e->lb > worst)
				continue;
			node = e->node;
			if (node != exclude)
			{
				double		d2 = kde_dist2(q, coords + node * dim, dim);

				if (d2 <= worst)
					knn_offer(t, list, &count, k, d2, node, &worst);
			}
			/* then its far subtree, in the cell the entry describes */
			node = 2 * node + (q[split[node]] < coords[node * dim + split[node]] ? 2 : 1);
			lb = e->lb;
			for (int j = 0; j < dim; j++)
				off[j] = e->off[j];
			break;
		}
	}
}

/*
 * The k nearest tree points to query, skipping node exclude (-1: none),
 * into out[0..count); returns count = min(k, points searched).  Runs
 * knn_search for the tree's dimension count, with no argument checks (k
 * must be 1..KD_MAX_K): the lean path of batches.
 */
static int
knn_dispatch(const KdTree *tree, const double *query, int k,
			 int64_t exclude_node, KdNeighbor *out)
{
	switch (tree->dim)
	{
		case 1:
			return knn_search(tree, query, k, exclude_node, out, 1);
		case 2:
			return knn_search(tree, query, k, exclude_node, out, 2);
		case 3:
			return knn_search(tree, query, k, exclude_node, out, 3);
		case 4:
			return knn_search(tree, query, k, exclude_node, out, 4);
		case 5:
			return knn_search(tree, query, k, exclude_node, out, 5);
		case 6:
			return knn_search(tree, query, k, exclude_node, out, 6);
		case 7:
			return knn_search(tree, query, k, exclude_node, out, 7);
		default:
			return knn_search(tree, query, k, exclude_node, out, 8);
	}
}

typedef struct KnnBatch
{
	const KdTree *tree;
	const double *queries;		/* NULL: All-kNN over the tree's points */
	int64_t		count_queries;
	int			k;
	bool		include_self;
	KdNeighbor *out;
	int32_t    *count;
	const int64_t *order;		/* processing order of the queries */
} KnnBatch;

/* Parallel body: queries [begin, end). */
static void
knn_batch_range(void *arg, int64_t begin, int64_t end)
{
	KnnBatch   *b = arg;
	int			dim = b->tree->dim;

	for (int64_t i = begin; i < end; i++)
	{
		int64_t		q = b->order[i];
		const double *query = b->queries ? b->queries + q * dim
			: b->tree->coords + q * dim;
		int64_t		exclude = (b->queries || b->include_self) ? -1 : q;

		/*
		 * Queries in spatial order are scattered in memory: fetch a later
		 * one's point and result slots while this one searches.
		 */
		if (i + KNN_PREFETCH_AHEAD < end)
		{
			int64_t		later = b->order[i + KNN_PREFETCH_AHEAD];
			const char *slots = (const char *) (b->out + later * b->k);

			__builtin_prefetch(b->queries ? b->queries + later * dim
							   : b->tree->coords + later * dim);
			for (int64_t at = 0; at < (int64_t) sizeof(KdNeighbor) * b->k && at < 256; at += 64)
				__builtin_prefetch(slots + at, 1);
			__builtin_prefetch(b->count + later, 1);
		}
		b->count[q] = knn_dispatch(b->tree, query, b->k, exclude, b->out + q * b->k);
	}
}

/*
 * Queries per chunk of a parallel kNN loop: 256 for small k, fewer as k
 * grows (a query costs about k heap insertions), so that a chunk stays a
 * few milliseconds and a cancel, polled between chunks, takes effect soon.
 */
static int64_t
knn_chunk(int k)
{
	int64_t		chunk = 4096 / k;

	return chunk > 256 ? 256 : (chunk < 1 ? 1 : chunk);
}

/* kNN for a batch of queries on the CPU threads of exec. */
KdStatus
kde_knn_cpu(const KdTree *tree, const double *queries, int64_t nq, int k,
		   KdNeighbor *out, int32_t *count, KdExec *exec, KdError *err)
{
	KnnBatch	b = {tree, queries, nq, k, false, out, count, NULL};
	KdStatus	st;

	if ((st = kde_check_k(k, err)) != KD_OK ||
		(st = kde_check_points(queries, nq, tree->dim, err)) != KD_OK)
		return st;
	b.order = kde_query_order(tree, queries, nq, err, &st);
	if (st == KD_OK)
		st = kde_parallel_for(exec, nq, knn_chunk(k), knn_batch_range, &b, err);
	free((void *) b.order);
	return st;
}

/* All-kNN over the tree's own points on the CPU threads of exec. */
KdStatus
kde_all_knn_cpu(const KdTree *tree, int k, bool include_self,
			   KdNeighbor *out, int32_t *count, KdExec *exec, KdError *err)
{
	KnnBatch	b = {tree, NULL, tree->n, k, include_self, out, count, NULL};
	KdStatus	st;

	if ((st = kde_check_k(k, err)) != KD_OK)
		return st;
	b.order = kde_inorder_nodes(tree, err, &st);
	if (st == KD_OK)
		st = kde_parallel_for(exec, tree->n, knn_chunk(k), knn_batch_range, &b, err);
	free((void *) b.order);
	return st;
}

/* GPU body of kde_knn and kde_all_knn. */
static KdStatus
knn_batch_gpu(const KdGpuTree *gtree, void *arg, KdExec *exec, KdError *err)
{
	KnnBatch   *b = arg;

	if (b->queries)
		return kde_gpu_knn(gtree, b->queries, b->count_queries, b->k, b->out,
						  b->count, exec, err);
	return kde_gpu_all_knn(gtree, b->k, b->include_self, b->out, b->count,
						  exec, err);
}

/* kNN for a batch of queries, on the device exec chooses. */
KdStatus
kde_knn(const KdTree *tree, const double *queries, int64_t nq, int k,
	   KdNeighbor *out, int32_t *count, KdExec *exec, KdError *err)
{
	KnnBatch	b = {tree, queries, nq, k, false, out, count, NULL};
	KdStatus	st;

	if (kde_gpu_run(tree, nq, knn_batch_gpu, &b, exec, err, &st))
		return st;
	return kde_knn_cpu(tree, queries, nq, k, out, count, exec, err);
}

/* All-kNN, on the device exec chooses. */
KdStatus
kde_all_knn(const KdTree *tree, int k, bool include_self, KdNeighbor *out,
		   int32_t *count, KdExec *exec, KdError *err)
{
	KnnBatch	b = {tree, NULL, tree->n, k, include_self, out, count, NULL};
	KdStatus	st;

	if (kde_gpu_run(tree, tree->n, knn_batch_gpu, &b, exec, err, &st))
		return st;
	return kde_all_knn_cpu(tree, k, include_self, out, count, exec, err);
}
