/*
 * kd_range_walk.h
 *	  The depth-first walk of one radius or box region over a tree, shared
 *	  by the range queries (kd_range.c) and the density clusters
 *	  (kd_dbscan.c), so that both find exactly the same hits.
 *
 * A point is within radius r when sqrt(d2) <= r with the correctly rounded
 * square root, which is what a brute-force `distance <= r` computes; the
 * walk's cheap tests compare squared distances with r^2 widened
 * (kde_radius_bound), so they never reject a point the exact test keeps.
 */
#ifndef KD_RANGE_WALK_H
#define KD_RANGE_WALK_H

#include "kd_internal.h"

/*
 * One radius or box query as the walk sees it: a centre a with radius r
 * (r2max is r^2 widened, kde_radius_bound), or the box [a, b].
 */
typedef struct RangeRegion
{
	const double *a;
	const double *b;
	double		r;
	double		r2max;
} RangeRegion;

/* True when no point of the stored box lo[dim], hi[dim] can be a hit. */
KD_INLINE bool
region_misses(const RangeRegion *g, const double *box, const bool is_box,
			  const int dim)
{
	if (!is_box)
		return kde_box_dist2(g->a, box, dim) > g->r2max;
	for (int j = 0; j < dim; j++)
		if (g->b[j] < box[j] || g->a[j] > box[dim + j])
			return true;
	return false;
}

/* True when p is a hit; *d2 is its squared distance (0 for boxes). */
KD_INLINE bool
region_holds(const RangeRegion *g, const double *p, double *d2,
			 const bool is_box, const int dim)
{
	bool		inside = true;

	if (!is_box)
	{
		*d2 = kde_dist2(g->a, p, dim);
		return kde_within_radius(*d2, g->r2max, g->r);
	}
	for (int j = 0; j < dim; j++)
		inside &= (p[j] >= g->a[j]) & (p[j] <= g->b[j]);
	*d2 = 0.0;
	return inside;
}

/*
 * Which sides of the split plane x[s] = ps the region reaches (the left
 * subtree holds x[s] <= ps, the right one x[s] >= ps): false when neither;
 * else *left says which one to walk first (a ball's centre side) and
 * *both whether the other one too.
 */
KD_INLINE bool
region_sides(const RangeRegion *g, int s, double ps, const bool is_box,
			 bool *left, bool *both)
{
	double		diff;

	if (is_box)
	{
		bool		right = g->b[s] >= ps;

		*left = g->a[s] <= ps;
		*both = *left & right;
		return *left | right;
	}
	diff = g->a[s] - ps;
	*left = diff < 0;
	*both = diff * diff <= g->r2max;
	return true;
}

/*
 * Hits of one query, depth-first: a node's own point, then the sides of
 * its split that the region reaches; nodes below nbounds are skipped when
 * their stored box shows they hold no hit.  Calls visit(ctx, node, d2) for
 * each hit, in traversal order, and returns their number.
 */
typedef void (*KdHitVisit) (void *ctx, int64_t node, double d2);

KD_INLINE int64_t
range_walk(const KdTree *t, RangeRegion g, KdHitVisit visit, void *ctx,
		   const bool is_box, const int dim)
{
	int64_t		stack[KD_STACK_DEPTH];
	int			sp = 0;
	int64_t		hits = 0;

	if (t->n > 0)
		stack[sp++] = 0;
	while (sp > 0)
	{
		int64_t		node = stack[--sp];

		for (;;)
		{
			const double *p = t->coords + node * dim;
			double		d2;
			int64_t		near,
						far;
			int			s;
			bool		left,
						both;

			if (node < t->nbounds &&
				region_misses(&g, t->bounds + node * 2 * dim, is_box, dim))
				break;
			if (region_holds(&g, p, &d2, is_box, dim))
			{
				visit(ctx, node, d2);
				hits++;
			}
			s = t->split[node];
			if (!region_sides(&g, s, p[s], is_box, &left, &both))
				break;
			near = 2 * node + (left ? 1 : 2);
			far = 2 * node + (left ? 2 : 1);
			if (both && far < t->n)
				stack[sp++] = far;
			if (near >= t->n)
				break;
			node = near;
		}
	}
	return hits;
}

#endif							/* KD_RANGE_WALK_H */
