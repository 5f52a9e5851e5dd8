/*
 * range_walk.cuh
 *	  The walk of one radius or box region over a device tree, shared by
 *	  the range queries (range.cu) and the density clusters (dbscan.cu).
 *
 * One thread walks the tree depth-first with a stack of nodes.  Radius: a
 * point is a hit when sqrt(d2) <= r; a subtree is skipped when its lower
 * bound lb (the split-plane term, or the box distance of a node below
 * nbounds) satisfies lb > r2x and sqrt(lb) > r, where r2x is a generous
 * bound on r * r used only as a cheap prefilter, so the test is exactly
 * the CPU's (src/engine/kd_range_walk.h).  Box: a point is a hit when lo
 * <= p <= hi in every dimension; a child is visited when the box reaches
 * its side of the split, and nodes below nbounds are skipped when their
 * box misses the query box.
 */
#ifndef KDC_RANGE_WALK_CUH
#define KDC_RANGE_WALK_CUH

#include "common.cuh"

/*
 * One query's walk.  BOX: a = lo, b = hi; else a = centre, b[0] = radius.
 * Calls emit(d2, node) for every hit, in traversal order.  D is the
 * tree's dimension when the caller knows it at compile time (a, b and the
 * helpers then hold D values), else KD_MAX_DIM.
 */
template <bool BOX, int D = KD_MAX_DIM, typename Emit>
static __device__ __forceinline__ void
kdc_range_search(const KdGpuTree &t, const double *a, const double *b, Emit emit)
{
	int64_t		stack[KDC_STACK];
	int			sp = 0;
	int64_t		node = 0;
	const int	dim = D == KD_MAX_DIM ? t.dim : D;
	double		r = b[0];
	double		r2x = BOX ? 0.0 : kde_radius_bound(r);

	for (;;)
	{
		while (node < t.n)
		{
			const double *p = t.coords + node * dim;
			double		ps;
			int			s;

			if (node < t.nbounds)
			{
				const double *box = t.bounds + node * 2 * dim;
				bool		skip = false;

				if (BOX)
				{
#pragma unroll
					for (int j = 0; j < D; j++)
						if (j < dim && (box[dim + j] < a[j] || box[j] > b[j]))
							skip = true;
				}
				else
				{
					double		lb = kdc_box_dist2<D>(a, box, dim);

					skip = lb > r2x && sqrt(lb) > r;
				}
				if (skip)
					break;
			}
			if (BOX)
			{
				bool		in = true;

#pragma unroll
				for (int j = 0; j < D; j++)
					if (j < dim && !(a[j] <= p[j] && p[j] <= b[j]))
						in = false;
				if (in)
					emit(0.0, node);
			}
			else
			{
				double		d2 = kdc_dist2<D>(a, p, dim);

				if (d2 <= r2x && sqrt(d2) <= r)
					emit(d2, node);
			}
			s = t.split[node] & KDC_SPLIT_DIM;
			ps = p[s];
			if (BOX)
			{
				bool		go_left = kdc_coord<D>(a, s) <= ps;
				bool		go_right = kdc_coord<D>(b, s) >= ps;

				if (go_left && go_right && 2 * node + 2 < t.n)
					stack[sp++] = 2 * node + 2;
				node = go_left ? 2 * node + 1 : (go_right ? 2 * node + 2 : t.n);
			}
			else
			{
				double		diff = __dadd_rn(kdc_coord<D>(a, s), -ps);
				double		dd = __dmul_rn(diff, diff);
				int64_t		near = 2 * node + (diff >= 0 ? 2 : 1);
				int64_t		far = 4 * node + 3 - near;

				if (far < t.n && !(dd > r2x && sqrt(dd) > r))
					stack[sp++] = far;
				node = near;
			}
		}
		if (sp == 0)
			return;
		node = stack[--sp];
	}
}

#endif							/* KDC_RANGE_WALK_CUH */
