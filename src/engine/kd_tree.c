/*
 * kd_tree.c
 *	  Tree memory, the shape of a left-balanced tree, argument checks, error
 *	  reporting and the structural check of a built tree.
 *
 * The shape of a left-balanced tree depends on n alone: node i's subtree is
 * the set of array positions reachable through 2i+1 and 2i+2, a complete
 * binary tree filled from the left.  kde_subtree_size walks it level by level
 * in O(log n) without building anything.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_internal.h"

/* Defaults: automatic device choice, the calling thread only. */
void
kde_exec_init(KdExec *exec)
{
	memset(exec, 0, sizeof(*exec));
	exec->device = KD_DEVICE_AUTO;
	exec->threads = 1;
	exec->gpu_min_work = 100000;
}

/* Allocate the arrays of a tree of n points in dim dimensions. */
KdStatus
kde_tree_alloc(KdTree *tree, int64_t n, int dim, KdError *err)
{
	memset(tree, 0, sizeof(*tree));
	if (dim < 1 || dim > KD_MAX_DIM)
		return kde_set_error(err, KD_ERR_ARG, -1,
							"dimension %d is out of range 1..%d", dim, KD_MAX_DIM);
	if (n < 0)
		return kde_set_error(err, KD_ERR_ARG, -1, "negative point count");
	tree->n = n;
	tree->dim = dim;
	tree->nbounds = kde_tree_nbounds(n);
	tree->owned = true;
	tree->coords = malloc(sizeof(double) * (size_t) (n * dim) + 1);
	tree->refs = malloc(sizeof(uint64_t) * (size_t) n + 1);
	tree->split = malloc((size_t) n + 1);
	tree->bounds = malloc(sizeof(double) * 2 * dim * (size_t) tree->nbounds + 1);
	if (!tree->coords || !tree->refs || !tree->split || !tree->bounds)
	{
		kde_tree_free(tree);
		return kde_set_error(err, KD_ERR_NOMEM, -1,
							"out of memory for a tree of %lld points",
							(long long) n);
	}
	return KD_OK;
}

/* Free what kde_tree_alloc allocated, and the tree's device copy. */
void
kde_tree_free(KdTree *tree)
{
	kde_gpu_release(tree);
	if (tree->owned)
	{
		free(tree->coords);
		free(tree->refs);
		free(tree->split);
		free(tree->bounds);
	}
	tree->coords = NULL;
	tree->refs = NULL;
	tree->split = NULL;
	tree->bounds = NULL;
	tree->owned = false;
}

/*
 * Compute the boxes of nodes from .. nbounds-1 from the points, keeping
 * those below from: each the tight box of its subtree's points, as the build
 * makes them.  A stored tree that keeps boxes only for its top levels gets
 * the others back this way.  Bottom-up, so a child's box is ready before
 * its parent's; children without a box have their few points walked.
 */
void
kde_tree_fill_bounds(KdTree *tree, int64_t from)
{
	int			dim = tree->dim;

	for (int64_t i = tree->nbounds - 1; i >= from; i--)
	{
		double	   *box = tree->bounds + i * 2 * dim;

		memcpy(box, tree->coords + i * dim, sizeof(double) * dim);
		memcpy(box + dim, tree->coords + i * dim, sizeof(double) * dim);
		for (int64_t c = 2 * i + 1; c <= 2 * i + 2 && c < tree->n; c++)
		{
			if (c < tree->nbounds)
			{
				kde_box_take(box, tree->bounds + c * 2 * dim, dim);
				kde_box_take(box, tree->bounds + c * 2 * dim + dim, dim);
				continue;
			}
			for (int64_t lo = c, hi = c; lo < tree->n; lo = 2 * lo + 1, hi = 2 * hi + 2)
				for (int64_t j = lo; j <= hi && j < tree->n; j++)
					kde_box_take(box, tree->coords + j * dim, dim);
		}
	}
}

/* Reject NaN and infinite coordinates, naming the first bad point. */
KdStatus
kde_check_points(const double *points, int64_t n, int dim, KdError *err)
{
	if (dim < 1 || dim > KD_MAX_DIM)
		return kde_set_error(err, KD_ERR_ARG, -1,
							"dimension %d is out of range 1..%d", dim, KD_MAX_DIM);
	for (int64_t i = 0; i < n * dim; i++)
		if (!isfinite(points[i]))
			return kde_set_error(err, KD_ERR_NONFINITE, i / dim,
								"point %lld has a %s coordinate",
								(long long) (i / dim),
								isnan(points[i]) ? "NaN" : "infinite");
	return KD_OK;
}

/* Reject k outside 1..KD_MAX_K. */
KdStatus
kde_check_k(int k, KdError *err)
{
	if (k < 1 || k > KD_MAX_K)
		return kde_set_error(err, KD_ERR_ARG, -1,
							"k = %d is out of range 1..%d", k, KD_MAX_K);
	return KD_OK;
}

/* Allocate offsets for nq queries; hits come later. */
KdStatus
kde_range_result_alloc(KdRangeResult *res, int64_t nq, KdError *err)
{
	res->nq = nq;
	res->hits = NULL;
	res->offsets = calloc((size_t) nq + 1, sizeof(int64_t));
	if (!res->offsets)
		return kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
	return KD_OK;
}

/*
 * Turn per-query counts stored in offsets[1..nq] into offsets and allocate
 * the hits.
 */
KdStatus
kde_range_result_fill_offsets(KdRangeResult *res, KdError *err)
{
	for (int64_t q = 0; q < res->nq; q++)
		res->offsets[q + 1] += res->offsets[q];
	res->hits = malloc(sizeof(KdNeighbor) * (size_t) res->offsets[res->nq] + 1);
	if (!res->hits)
		return kde_set_error(err, KD_ERR_NOMEM, -1,
							"out of memory for %lld range hits",
							(long long) res->offsets[res->nq]);
	return KD_OK;
}

/* Free a range result's arrays. */
void
kde_range_result_free(KdRangeResult *res)
{
	free(res->offsets);
	free(res->hits);
	res->offsets = NULL;
	res->hits = NULL;
	res->nq = 0;
}

/* a before b in the order kde_sort_neighbors sorts by */
KD_INLINE bool
sorts_before(const KdNeighbor *a, const KdNeighbor *b, bool by_ref)
{
	return by_ref ? a->ref < b->ref
		: kde_neighbor_less(a->d2, a->ref, b->d2, b->ref);
}

/*
 * Sort hits by (d2, ref), or by ref alone: quicksort with a median-of-three
 * pivot over ranges longer than 16, insertion sort below, recursing into the
 * shorter side only (so the stack stays O(log n)).
 */
void
kde_sort_neighbors(KdNeighbor *hits, int64_t n, bool by_ref)
{
	while (n > 16)
	{
		int64_t		mid = n / 2;
		int64_t		i = 0,
					j = n - 1;
		KdNeighbor	pivot,
					t;

		if (sorts_before(&hits[mid], &hits[0], by_ref))
			t = hits[mid], hits[mid] = hits[0], hits[0] = t;
		if (sorts_before(&hits[n - 1], &hits[mid], by_ref))
		{
			t = hits[mid], hits[mid] = hits[n - 1], hits[n - 1] = t;
			if (sorts_before(&hits[mid], &hits[0], by_ref))
				t = hits[mid], hits[mid] = hits[0], hits[0] = t;
		}
		pivot = hits[mid];
		while (i <= j)
		{
			while (sorts_before(&hits[i], &pivot, by_ref))
				i++;
			while (sorts_before(&pivot, &hits[j], by_ref))
				j--;
			if (i <= j)
			{
				t = hits[i], hits[i] = hits[j], hits[j] = t;
				i++;
				j--;
			}
		}
		/* [0, j] and [i, n) remain */
		if (j + 1 < n - i)
		{
			kde_sort_neighbors(hits, j + 1, by_ref);
			hits += i;
			n -= i;
		}
		else
		{
			kde_sort_neighbors(hits + i, n - i, by_ref);
			n = j + 1;
		}
	}
	for (int64_t a = 1; a < n; a++)
	{
		KdNeighbor	t = hits[a];
		int64_t		b = a;

		for (; b > 0 && sorts_before(&t, &hits[b - 1], by_ref); b--)
			hits[b] = hits[b - 1];
		hits[b] = t;
	}
}

/* Whether point p lies in the box stored as lo[dim], hi[dim]. */
static bool
point_in_box(const double *p, const double *box, int dim)
{
	for (int j = 0; j < dim; j++)
		if (p[j] < box[j] || p[j] > box[dim + j])
			return false;
	return true;
}

/*
 * Verify a tree: split dimensions in range, finite coordinates, every node
 * on the correct side of each ancestor's split, and each stored bounding box
 * containing its subtree.  O(n log n).
 */
KdStatus
kde_tree_check(const KdTree *tree, KdError *err)
{
	int			dim = tree->dim;
	KdStatus	st;

	if (dim < 1 || dim > KD_MAX_DIM || tree->n < 0)
		return kde_set_error(err, KD_ERR_ARG, -1, "bad tree header");
	if (tree->nbounds != kde_tree_nbounds(tree->n))
		return kde_set_error(err, KD_ERR_ARG, -1,
							"tree has %lld bounding boxes, expected %lld",
							(long long) tree->nbounds,
							(long long) kde_tree_nbounds(tree->n));
	st = kde_check_points(tree->coords, tree->n, dim, err);
	if (st != KD_OK)
		return st;
	for (int64_t i = 0; i < tree->n; i++)
	{
		const double *p = tree->coords + i * dim;

		if (tree->split[i] >= dim)
			return kde_set_error(err, KD_ERR_ARG, i,
								"node %lld has split dimension %d",
								(long long) i, tree->split[i]);
		/* walk up: p must be on its side of every ancestor's plane */
		for (int64_t c = i; c > 0; c = (c - 1) / 2)
		{
			int64_t		a = (c - 1) / 2;
			int			s = tree->split[a];
			double		v = tree->coords[a * dim + s];

			if ((c == 2 * a + 1 && p[s] > v) || (c == 2 * a + 2 && p[s] < v))
				return kde_set_error(err, KD_ERR_ARG, i,
									"node %lld is on the wrong side of node %lld",
									(long long) i, (long long) a);
			if (a < tree->nbounds &&
				!point_in_box(p, tree->bounds + a * 2 * dim, dim))
				return kde_set_error(err, KD_ERR_ARG, i,
									"node %lld lies outside the box of node %lld",
									(long long) i, (long long) a);
		}
		if (i < tree->nbounds &&
			!point_in_box(p, tree->bounds + i * 2 * dim, dim))
			return kde_set_error(err, KD_ERR_ARG, i,
								"node %lld lies outside its own box",
								(long long) i);
	}
	return KD_OK;
}
