/*
 * kd_shape.h
 *	  Inline helpers shared by the engine (C), the index access method and
 *	  the CUDA kernels: the shape of a left-balanced tree, the squared
 *	  distances every query kind rounds identically, and the radius bound.
 *
 * Compiled by nvcc they are __host__ __device__; the kernels keep their own
 * unrolled distance loops over register-resident queries, which sum the same
 * terms in the same order.
 */
#ifndef KD_SHAPE_H
#define KD_SHAPE_H

#include <stdint.h>

#ifdef __CUDACC__
#define KD_SHARED static __host__ __device__ __forceinline__
#else
#define KD_SHARED static inline
#endif

/* subtrees smaller than this get no stored bounding box */
#define KD_BOUNDS_MIN_SUBTREE 8

/* Number of nodes in the subtree rooted at node of a tree of n nodes. */
KD_SHARED int64_t
kde_subtree_size(int64_t node, int64_t n)
{
	int64_t		lo = node;
	int64_t		hi = node;
	int64_t		size = 0;

	while (lo < n)
	{
		size += (hi < n ? hi : n - 1) - lo + 1;
		if (lo > (INT64_MAX - 2) / 2)
			break;
		lo = 2 * lo + 1;
		hi = 2 * hi + 2;
	}
	return size;
}

/* Depth (levels) of a left-balanced tree of n nodes: ceil(log2(n + 1)). */
KD_SHARED int
kde_tree_depth(int64_t n)
{
	int			depth = 0;

	while (n > 0)
	{
		depth++;
		n >>= 1;
	}
	return depth;
}

/*
 * Number of leading nodes of a tree of n nodes that are the full top levels
 * in which every subtree holds at least min_subtree points.  The smallest
 * subtree of a level is its rightmost node's.
 */
KD_SHARED int64_t
kde_tree_nbounds_min(int64_t n, int64_t min_subtree)
{
	int64_t		levels_nodes = 0;	/* 2^L - 1 */

	for (;;)
	{
		int64_t		rightmost = 2 * levels_nodes;	/* last node of level L */

		if (rightmost >= n ||
			kde_subtree_size(rightmost, n) < min_subtree)
			break;
		levels_nodes = 2 * levels_nodes + 1;
	}
	return levels_nodes;
}

/* Number of leading nodes that store a bounding box in the engine's tree. */
KD_SHARED int64_t
kde_tree_nbounds(int64_t n)
{
	return kde_tree_nbounds_min(n, KD_BOUNDS_MIN_SUBTREE);
}

/*
 * Bytes of a tree's arrays (coordinates, references, split dimensions and
 * bounds), in memory and in a device copy alike.
 */
KD_SHARED int64_t
kde_tree_bytes(int64_t n, int dim, int64_t nbounds)
{
	return n * (dim * (int64_t) sizeof(double) + (int64_t) sizeof(uint64_t) + 1) +
		nbounds * 2 * dim * (int64_t) sizeof(double);
}

/* Squared distance, summed in dimension order. */
KD_SHARED double
kde_dist2(const double *a, const double *b, int dim)
{
	double		s = 0.0;

	for (int j = 0; j < dim; j++)
	{
		double		d = a[j] - b[j];

		s += d * d;
	}
	return s;
}

/*
 * Squared distance from q to an axis-aligned box (lo[dim] then hi[dim]);
 * never more than kde_dist2 of q and any point inside the box.
 */
KD_SHARED double
kde_box_dist2(const double *q, const double *box, int dim)
{
	double		s = 0.0;

	for (int j = 0; j < dim; j++)
	{
		double		d = 0.0;

		if (q[j] < box[j])
			d = q[j] - box[j];
		else if (q[j] > box[dim + j])
			d = q[j] - box[dim + j];
		s += d * d;
	}
	return s;
}

/*
 * The cheap squared-radius prefilter of range queries: r^2 widened by a
 * relative slack, and never below the normal range, where r^2 loses
 * relative precision; it never rejects a point with sqrt(d2) <= r.
 */
KD_SHARED double
kde_radius_bound(double r)
{
	double		r2 = r * r * (1.0 + 1e-12);

	return r2 > 4.0 * 2.2250738585072014e-308 ? r2 : 4.0 * 2.2250738585072014e-308;
}

#endif							/* KD_SHAPE_H */
