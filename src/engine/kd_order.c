/*
 * kd_order.c
 *	  Spatial order for batches of queries on the CPU.
 *
 * Queries that are processed one after the other should walk the same
 * parts of the tree, so that those parts stay in cache.  A batch is
 * therefore processed in the in-order rank of the leaf each query reaches
 * by following the splits: the in-order walk of a kd-tree visits space
 * region by region, so neighbouring ranks are neighbouring places.
 * All-kNN queries are tree points, processed in the in-order walk itself.
 */
#include <stdlib.h>

#include "kd_internal.h"

/* In-order rank of the leaf that q reaches by following the splits. */
static int64_t
leaf_rank(const KdTree *t, const double *q)
{
	int64_t		node = 0;
	int64_t		begin = 0;		/* in-order rank of node's first point */

	for (;;)
	{
		int64_t		left = kd_subtree_size(2 * node + 1, t->n);
		int			s = t->split[node];
		int64_t		child;

		child = (q[s] < t->coords[node * t->dim + s]) ? 2 * node + 1 : 2 * node + 2;
		if (child >= t->n)
			return begin + left;
		if (child == 2 * node + 2)
			begin += left + 1;
		node = child;
	}
}

/*
 * The order in which to process nq queries (a permutation of 0..nq-1),
 * allocated here; NULL with *st set on failure.
 */
int64_t *
kd_query_order(const KdTree *tree, const double *queries, int64_t nq,
			   KdError *err, KdStatus *st)
{
	KdNeighbor *keys = malloc(sizeof(KdNeighbor) * (size_t) nq + 1);
	int64_t    *order = malloc(sizeof(int64_t) * (size_t) nq + 1);

	*st = KD_OK;
	if (!keys || !order)
	{
		free(keys);
		free(order);
		*st = kd_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
		return NULL;
	}
	for (int64_t q = 0; q < nq; q++)
	{
		keys[q].d2 = tree->n > 0 ? (double) leaf_rank(tree, queries + q * tree->dim) : 0.0;
		keys[q].ref = (uint64_t) q;
	}
	kd_sort_neighbors(keys, nq, false);
	for (int64_t q = 0; q < nq; q++)
		order[q] = (int64_t) keys[q].ref;
	free(keys);
	return order;
}

/* Append the nodes of node's subtree to order in in-order. */
static void
inorder_walk(int64_t node, int64_t n, int64_t *order, int64_t *at)
{
	while (node < n)
	{
		inorder_walk(2 * node + 1, n, order, at);
		order[(*at)++] = node;
		node = 2 * node + 2;
	}
}

/*
 * The tree's nodes in in-order (a permutation of 0..n-1), allocated here;
 * NULL with *st set on failure.
 */
int64_t *
kd_inorder_nodes(const KdTree *tree, KdError *err, KdStatus *st)
{
	int64_t    *order = malloc(sizeof(int64_t) * (size_t) tree->n + 1);
	int64_t		at = 0;

	*st = KD_OK;
	if (!order)
	{
		*st = kd_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
		return NULL;
	}
	inorder_walk(0, tree->n, order, &at);
	return order;
}
