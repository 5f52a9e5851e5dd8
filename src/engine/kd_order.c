/*
 * kd_order.c
 *	  Spatial order for batches of queries on the CPU.
 *
 * Queries that are processed one after the other should walk the same
 * parts of the tree, so that those parts stay in cache.  A batch is
 * therefore processed in the in-order of the slot each query reaches by
 * following the splits of the top levels: the in-order walk of a kd-tree
 * visits space region by region, so neighbouring slots are neighbouring
 * places.
 * All-kNN queries are tree points, processed in the in-order walk itself.
 */
#include <stdlib.h>

#include "kd_internal.h"

/*
 * Levels of the tree that order queries: their 32767 nodes stay in cache
 * while a batch is ordered, where a walk to the bottom for each query in
 * input order would miss it at nearly every level below.  Queries that
 * share a subtree below them are neighbours already.
 */
#define KD_ORDER_LEVELS 15

/*
 * A key whose order is the in-order of the slot that q reaches by following
 * the splits down KD_ORDER_LEVELS levels at most: the path's turns as bits
 * (0 left, 1 right) followed by a 1 and zeros, so a slot sorts after
 * everything left of it and before everything right of it.
 */
static uint64_t
slot_key(const KdTree *t, const double *q)
{
	int64_t		node = 0;
	uint64_t	path = 0;
	int			depth = 0;

	while (node < t->n && depth < KD_ORDER_LEVELS)
	{
		int			right = !(q[t->split[node]] < t->coords[node * t->dim + t->split[node]]);

		path = (path << 1) | (uint64_t) right;
		depth++;
		node = 2 * node + 1 + right;
	}
	return ((path << 1) | 1) << (KD_ORDER_LEVELS - depth);
}

/*
 * The order in which to process nq queries (a permutation of 0..nq-1),
 * allocated here; NULL with *st set on failure.
 */
int64_t *
kde_query_order(const KdTree *tree, const double *queries, int64_t nq,
			   KdError *err, KdStatus *st)
{
	KdNeighbor *keys = malloc(sizeof(KdNeighbor) * (size_t) nq + 1);
	int64_t    *order = malloc(sizeof(int64_t) * (size_t) nq + 1);

	*st = KD_OK;
	if (!keys || !order)
	{
		free(keys);
		free(order);
		*st = kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
		return NULL;
	}
	for (int64_t q = 0; q < nq; q++)
	{
		keys[q].ref = slot_key(tree, queries + q * tree->dim);
		keys[q].d2 = (double) q;
	}
	kde_sort_neighbors(keys, nq, true);
	for (int64_t q = 0; q < nq; q++)
		order[q] = (int64_t) keys[q].d2;
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
kde_inorder_nodes(const KdTree *tree, KdError *err, KdStatus *st)
{
	int64_t    *order = malloc(sizeof(int64_t) * (size_t) tree->n + 1);
	int64_t		at = 0;

	*st = KD_OK;
	if (!order)
	{
		*st = kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
		return NULL;
	}
	inorder_walk(0, tree->n, order, &at);
	return order;
}
