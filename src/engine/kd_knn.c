/*
 * kd_knn.c
 *	  k-nearest-neighbour search on the CPU (one query, batches, All-kNN)
 *	  and the dispatch of batches to the GPU.
 *
 * The search is depth-first with an explicit stack: descend to the leaf on
 * the query's side of each split, offering every node's point to a sorted
 * list of the k best (d2, ref) pairs, and push the far child with a lower
 * bound on its distance: the squared distance to the splitting plane, raised
 * to the distance to the child's bounding box where the tree stores one.  A
 * subtree is skipped only when its bound exceeds the k-th distance found so
 * far (equal distances may still win on ref), so the answer equals brute
 * force exactly.  The stack never holds more entries than the tree has
 * levels, since each descent pushes deeper nodes than those below it.
 *
 * The search is written once and instantiated for each dimension count so
 * that the per-dimension loops unroll.
 */
#include <stdlib.h>

#include "kd_internal.h"
#include "../../cuda/kdgpu_cuda.h"

typedef struct KnnStackEntry
{
	int64_t		node;
	double		lb;				/* lower bound on d2 of the subtree */
} KnnStackEntry;

/* The search, for a dimension count known at compile time. */
KD_INLINE int
knn_search(const KdTree *t, const double *q, int k, int64_t exclude,
		   KdNeighbor *list, const int dim)
{
	KnnStackEntry stack[KD_STACK_DEPTH];
	int			sp = 0;
	int			count = 0;
	int64_t		n = t->n;

	if (n == 0)
		return 0;
	stack[sp].node = 0;
	stack[sp].lb = 0.0;
	sp++;
	while (sp > 0)
	{
		int64_t		node = stack[--sp].node;
		double		lb = stack[sp].lb;
		double		worst = count < k ? INFINITY : list[k - 1].d2;

		for (;;)
		{
			const double *p = t->coords + node * dim;
			double		diff;
			int64_t		near,
						far;
			int			s;

			if (node < t->nbounds)
			{
				double		b = kd_box_dist2(q, t->bounds + node * 2 * dim, dim);

				if (b > lb)
					lb = b;
			}
			if (lb > worst)
				break;
			if (node != exclude)
			{
				double		d2 = kd_dist2(q, p, dim);
				uint64_t	ref = t->refs[node];

				if (kd_candidate_wanted(list, count, k, d2, ref))
				{
					kd_candidate_insert(list, &count, k, d2, ref);
					if (count == k)
						worst = list[k - 1].d2;
				}
			}
			s = t->split[node];
			diff = q[s] - p[s];
			near = 2 * node + (diff < 0 ? 1 : 2);
			far = 2 * node + (diff < 0 ? 2 : 1);
			if (far < n)
			{
				double		flb = diff * diff;

				if (flb < lb)
					flb = lb;
				if (flb <= worst)
				{
					stack[sp].node = far;
					stack[sp].lb = flb;
					sp++;
				}
			}
			if (near >= n)
				break;
			node = near;
		}
	}
	return count;
}

/* knn_search for the tree's dimension count (see kd_knn_one). */
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

/*
 * The k nearest tree points to query, skipping node exclude (-1: none),
 * into out[0..count); returns count = min(k, points searched).  No argument
 * checks: the lean path of batches.
 */
int
kd_knn_one(const KdTree *tree, const double *query, int k,
		   int64_t exclude_node, KdNeighbor *out)
{
	return knn_dispatch(tree, query, k, exclude_node, out);
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

		b->count[q] = kd_knn_one(b->tree, query, b->k, exclude, b->out + q * b->k);
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
kd_knn_cpu(const KdTree *tree, const double *queries, int64_t nq, int k,
		   KdNeighbor *out, int32_t *count, KdExec *exec, KdError *err)
{
	KnnBatch	b = {tree, queries, nq, k, false, out, count, NULL};
	KdStatus	st;

	if ((st = kd_check_k(k, err)) != KD_OK ||
		(st = kd_check_points(queries, nq, tree->dim, err)) != KD_OK)
		return st;
	b.order = kd_query_order(tree, queries, nq, err, &st);
	if (st == KD_OK)
		st = kd_parallel_for(exec, nq, knn_chunk(k), knn_batch_range, &b, err);
	free((void *) b.order);
	return st;
}

/* All-kNN over the tree's own points on the CPU threads of exec. */
KdStatus
kd_all_knn_cpu(const KdTree *tree, int k, bool include_self,
			   KdNeighbor *out, int32_t *count, KdExec *exec, KdError *err)
{
	KnnBatch	b = {tree, NULL, tree->n, k, include_self, out, count, NULL};
	KdStatus	st;

	if ((st = kd_check_k(k, err)) != KD_OK)
		return st;
	b.order = kd_inorder_nodes(tree, err, &st);
	if (st == KD_OK)
		st = kd_parallel_for(exec, tree->n, knn_chunk(k), knn_batch_range, &b, err);
	free((void *) b.order);
	return st;
}

/* GPU body of kd_knn and kd_all_knn. */
static KdStatus
knn_batch_gpu(const KdGpuTree *gtree, void *arg, KdExec *exec, KdError *err)
{
	KnnBatch   *b = arg;
	const KdCudaApi *api = kd_gpu_api();

	if (b->queries)
		return api->knn(gtree, b->queries, b->count_queries, b->k, b->out,
						b->count, exec, err);
	return api->all_knn(gtree, b->k, b->include_self, b->out, b->count,
						exec, err);
}

/* kNN for a batch of queries, on the device exec chooses. */
KdStatus
kd_knn(const KdTree *tree, const double *queries, int64_t nq, int k,
	   KdNeighbor *out, int32_t *count, KdExec *exec, KdError *err)
{
	KnnBatch	b = {tree, queries, nq, k, false, out, count, NULL};
	KdStatus	st;

	if (kd_gpu_run(tree, nq, knn_batch_gpu, &b, exec, err, &st))
		return st;
	return kd_knn_cpu(tree, queries, nq, k, out, count, exec, err);
}

/* All-kNN, on the device exec chooses. */
KdStatus
kd_all_knn(const KdTree *tree, int k, bool include_self, KdNeighbor *out,
		   int32_t *count, KdExec *exec, KdError *err)
{
	KnnBatch	b = {tree, NULL, tree->n, k, include_self, out, count, NULL};
	KdStatus	st;

	if (kd_gpu_run(tree, tree->n, knn_batch_gpu, &b, exec, err, &st))
		return st;
	return kd_all_knn_cpu(tree, k, include_self, out, count, exec, err);
}
