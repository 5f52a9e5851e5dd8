/*
 * knn_walk.cuh
 *	  The kNN walk of a device tree and the records of the best found that
 *	  it fills: the register list (KdcList) and the bounded heap
 *	  (KdcHeapVisit).
 *
 * knn_walk is one thread's depth-first traversal for one query: it offers
 * each node's point to its record of the best, descends into the near
 * child and pushes the far one with a lower bound of every distance in
 * its subtree, and skips a subtree only when that bound is strictly above
 * the k-th distance, since an equal distance may still win on the
 * reference.  Every bound is a rounded sum of a subset of the terms of the
 * exact distance, so it never exceeds it, and the answer is exactly the
 * CPU's.  The kernels, their launches and the host side are in knn.cu.
 */
#ifndef KDGPU_KNN_WALK_CUH
#define KDGPU_KNN_WALK_CUH

#include "common.cuh"

/*
 * The k best (d2, node) pairs in registers, ascending by (d2, the node's
 * row reference), each kept as the high word of its float8 d2 (hi) and its
 * node: for d2 >= 0 that word orders as d2 does, so an entry whose word
 * differs from a candidate's is ordered by the words alone, and only equal
 * words need the float8 distances, recomputed from the nodes' points by
 * the offer's exact(), and on equal distances the references.  The first
 * K - k entries are padding that sorts before every real candidate (hi =
 * INT_MIN, node -2), empty entries sort after every one (hi of +inf, node
 * -1), so entry K - 1 is always the k-th best.  worst_d is the least
 * float8 above every d2 of the k-th best's word, a bound the walk's
 * pruning may use in place of the k-th distance; worst_f is worst_d
 * rounded up to a float, for the test of the float bounds on the stack;
 * zeros counts the entries at distance exactly 0, padding included.
 *
 * Against a list of float8 distances this holds one register fewer per
 * entry and moves one fewer per entry on an insertion, and compares
 * integers; the walk prunes by a bound at most 2^-20 relatively above the
 * k-th distance, and the kernel recomputes each answer's distance at the
 * end, so that the 2-D All-kNN kernel fits its 56 registers without a
 * spill.
 */
template <int K>
struct KdcList
{
	int32_t		hi[K];
	int32_t		node[K];
	const uint64_t *refs;
	double		worst_d;
	float		worst_f;
	int			zeros;

	__device__ __forceinline__ void init(int k, const uint64_t *r)
	{
		refs = r;
#pragma unroll
		for (int i = 0; i < K; i++)
		{
			bool		pad = i < K - k;

			hi[i] = pad ? INT32_MIN : 0x7ff00000;
			node[i] = pad ? -2 : -1;
		}
		worst_d = __longlong_as_double(0x7ff0000000000000LL);
		worst_f = __int_as_float(0x7f800000);
		zeros = K - k;
	}

	/* at or above the k-th best distance, +inf while fewer were found */
	__device__ __forceinline__ double worst() const
	{
		return worst_d;
	}

	/* worst() rounded up to a float */
	__device__ __forceinline__ float worst_up() const
	{
		return worst_f;
	}

	/* whether the k-th best distance is 0 */
	__device__ __forceinline__ bool worst_is_zero() const
	{
		return zeros == K;
	}

	/* the k-th best's row reference, once k were found */
	__device__ __forceinline__ uint64_t kth_ref() const
	{
		return __ldg(refs + node[K - 1]);
	}

	/*
	 * Move the entries that the candidate (h, nd, at d2) sorts before one
	 * place down and put it in the hole; b[i] says it sorts before entry i
	 * (b[K - 1] is set).
	 */
	__device__ __forceinline__ void place(double d2, int32_t h, int32_t nd,
										  const bool *b)
	{
#pragma unroll
		for (int i = K - 1; i > 0; i--)
		{
			if (b[i - 1])
			{
				hi[i] = hi[i - 1];
				node[i] = node[i - 1];
			}
			else if (b[i])
			{
				hi[i] = h;
				node[i] = nd;
			}
		}
		if (b[0])
		{
			hi[0] = h;
			node[0] = nd;
		}
		worst_d = hi[K - 1] >= 0x7ff00000 ? __longlong_as_double(0x7ff0000000000000LL) :
			__hiloint2double(hi[K - 1] + 1, 0);
		worst_f = __double2float_ru(worst_d);
		if (d2 == 0.0 && zeros < K)
			zeros++;
	}

	/*
	 * Insert node nd at distance d2 if it beats the k-th best; exact(m)
	 * gives node m's float8 distance.  A candidate whose word equals none
	 * in the list (the usual case) is placed by the words alone.  The test
	 * for an equal word comes first and the comparisons that place the
	 * candidate after it: made together before the test, their predicates
	 * were live across its branch, and the compiler packed them into a
	 * register and out again on every insertion.
	 */
	template <typename Exact>
	__device__ __forceinline__ void offer(double d2, int32_t nd, Exact exact)
	{
		int32_t		h = __double2hiint(d2);
		bool		b[K];
		bool		tie = false;

		if (h > hi[K - 1])
			return;
#pragma unroll
		for (int i = 0; i < K; i++)
			tie |= h == hi[i];
		if (tie)
		{
			auto		before = [&](int i)
			{
				double		di;

				if (h != hi[i])
					return h < hi[i];
				if (node[i] < 0)
					return true;	/* an empty entry */
				di = i < zeros ? 0.0 : exact(node[i]);
				if (d2 != di)
					return d2 < di;
				return __ldg(refs + nd) < __ldg(refs + node[i]);
			};

			if (!before(K - 1))
				return;
#pragma unroll
			for (int i = 0; i < K - 1; i++)
				b[i] = before(i);
			b[K - 1] = true;
			place(d2, h, nd, b);
			return;
		}
#pragma unroll
		for (int i = 0; i < K; i++)
			b[i] = h < hi[i];
		place(d2, h, nd, b);
	}
};

/* The vector type of two coordinates of type C. */
template <typename C> struct KdcPair;
template <> struct KdcPair<double>
{
	using T = double2;
};
template <> struct KdcPair<float>
{
	using T = float2;
};

/*
 * Load a point of coordinates of type C (float8, or float where the tree's
 * float copy is exact) into float8 registers: DIM coordinates, in pairs
 * where DIM is even, or with FIXED false the first dim of up to DIM.
 */
template <int DIM, bool FIXED, typename C>
static __device__ __forceinline__ void
knn_load(double *dst, const C *src, int dim)
{
	if (!FIXED)
		kdc_load_point<DIM>(dst, src, dim);
	else if (DIM % 2 == 0)
	{
#pragma unroll
		for (int j = 0; j < DIM; j += 2)
		{
			typename KdcPair<C>::T v = __ldg((const typename KdcPair<C>::T *) (src + j));

			dst[j] = v.x;
			dst[j + 1] = v.y;
		}
	}
	else
	{
#pragma unroll
		for (int j = 0; j < DIM; j++)
			dst[j] = __ldg(src + j);
	}
}

/*
 * Load node's point into p (as knn_load) and return its split byte
 * (common.cuh), from the tree's coordinates of type C and its split array.
 */
template <int DIM, bool FIXED, typename C>
static __device__ __forceinline__ int
knn_node(const KdGpuTree &t, const C *coords, int64_t node, int dim, double *p)
{
	knn_load<DIM, FIXED>(p, coords + node * dim, dim);
	return __ldg(t.split + node);
}

/* knn_node from a 3-D float copy's (x, y, z, split) records: one load. */
template <int DIM, bool FIXED>
static __device__ __forceinline__ int
knn_node(const KdGpuTree &t, const float4 *recs, int64_t node, int dim, double *p)
{
	float4		v = __ldg(recs + node);

	p[0] = v.x;
	p[1] = v.y;
	p[2] = v.z;
	return __float_as_int(v.w);
}

/*
 * The squared gaps between q and the box [lo, hi] in each dimension, each
 * rounded down to a float, into gap; returns their sum in dimension order,
 * a lower bound of kdc_dist2 for every point of the box (as kdc_box_dist2).
 */
template <int DIM>
static __device__ __forceinline__ double
knn_box_gaps(const double *q, const double *box, float *gap)
{
	double		d2 = 0.0;

#pragma unroll
	for (int j = 0; j < DIM; j++)
	{
		double		t = kdc_axis_gap(q[j], box[j], box[DIM + j]);

		gap[j] = __double2float_rd(__dmul_rn(t, t));
		d2 = __dadd_rn(d2, gap[j]);
	}
	return d2;
}

/* The float8 distance from q to node's point. */
template <int DIM, bool FIXED, typename C>
static __device__ __forceinline__ double
knn_dist2(const KdGpuTree &t, const C *coords, const double *q, int64_t node,
		  int dim)
{
	double		p[DIM];

	knn_node<DIM, FIXED>(t, coords, node, dim, p);
	return kdc_dist2<DIM>(q, p, dim);
}

/*
 * Load node's point into p and offer it to best unless it is node exclude
 * (the walk's visit of a node); returns the node's split byte.
 */
template <int DIM, bool FIXED, typename C, typename Index, typename Best>
static __device__ __forceinline__ int
knn_offer_node(const KdGpuTree &t, const C *coords, const double *q, Index node,
			   Index exclude, int dim, double *p, Best &best)
{
	int			s = knn_node<DIM, FIXED>(t, coords, (int64_t) node, dim, p);
	double		d2 = kdc_dist2<DIM>(q, p, dim);

	if (node != exclude)
		best.offer(d2, node, [&](Index m)
				   {
					   return knn_dist2<DIM, FIXED>(t, coords, q, m, dim);
				   });
	return s;
}

/* What a visit does in knn_heap_kernel: the heap of (d2, ref). */
struct KdcHeapVisit
{
	KdcHeap    *h;
	const uint64_t *refs;

	__device__ __forceinline__ double worst() const
	{
		return h->worst();
	}

	/* worst() rounded up to a float */
	__device__ __forceinline__ float worst_up() const
	{
		return __double2float_ru(h->worst());
	}

	/* whether the k-th best distance is 0 */
	__device__ __forceinline__ bool worst_is_zero() const
	{
		return h->worst() == 0.0;
	}

	/* the k-th best's row reference, once k were found */
	__device__ __forceinline__ uint64_t kth_ref() const
	{
		return h->h[0].ref;
	}

	/* offer node at distance d2 (the heap compares references, not exact()) */
	template <typename Exact>
	__device__ __forceinline__ void offer(double d2, int64_t node, Exact)
	{
		if (d2 <= h->worst())
			h->push(d2, refs[node]);
	}
};

/*
 * Offer every point of the tree that can beat best's k-th neighbour, except
 * node exclude: the walk of both kernels.  The register arrays hold DIM
 * coordinates (FIXED: the tree's dimension is DIM; else it is t.dim <=
 * DIM), read from coords (t.coords, or its exact float copy); Index numbers
 * the nodes, STACK bounds the depth, and Best says what a visit does
 * (worst(), worst_up(), worst_is_zero(), kth_ref(), offer(d2, node, exact)).
 *
 * A node's box is tested only where the walk enters a subtree, at the root
 * and at a subtree taken from the stack: on the way down to the near
 * child the query is mostly inside the child's box, and the test's loads
 * cost more than the little it prunes (and, below, not every subtree
 * taken from the stack either).  The stack keeps a bound as a float
 * rounded down, still a lower bound, in half the bytes.
 *
 * With CCT (kNN of queries other than the tree's points) a subtree's bound
 * is the distance to the closest point of its cell rather than to one of
 * its splitting planes: the walk keeps the squared gap to the cell in each
 * dimension (gap, rounded down to floats, on the stack beside the bound),
 * the far child's gaps differ from its parent's in the split dimension
 * only, and an entered node's box replaces them.  Each gap is a rounded
 * term of kdc_dist2 for the cell's closest point, so their sum in
 * dimension order is still a lower bound.  It pays for queries away from
 * the data; All-kNN, where each query is inside its own cell, is slower
 * with it, so it runs without.  The gaps' floats keep the bounds exact but cost them their
 * reach at extreme scales: below about 4e-23 between coordinates a gap
 * rounds down to 0, above about 1.8e19 to the largest float, and a walk
 * over such data prunes less (not measured).
 *
 * Many points at the query's exact place all tie at distance 0, and a
 * subtree whose bound equals the k-th distance must be entered in case one
 * of them wins on its reference.  Where the tree keeps (split coordinate,
 * ref) order (KdTree.ref_order), the walk goes left first where the query
 * lies on a split at v, and marks the right child it pushes with bound 0 by
 * storing -0.0.  Once the k-th distance is 0, a point of that subtree at
 * distance 0 has coordinate v too (another one differs from v by so much,
 * with |v| >= 2^-400, that its square is not 0), so it follows the parent
 * in ref order; when the parent does not precede the k-th neighbour, the
 * subtree is skipped.
 *
 * Every distance and bound here is float8 arithmetic, even over a float
 * copy.  A walk of float distances and bounds for All-kNN over a float
 * copy, computing the float8 distance only where a margin over the float
 * one could not rule the point out (exact too), made the kernels slower:
 * the float8 work of a visit is not what the walk waits on.
 *
 * A subtree taken from the stack is tested by its float bound against the
 * k-th distance rounded up to a float (worst_up): a bound above that is
 * above the k-th distance, and one that passes is tested again in float8
 * when the subtree is entered.  The stack is in local memory, and most of
 * what it holds is pruned by the time it is popped: in the 2-D All-kNN
 * kernel a warp runs several turns of the pop loop per visit, waiting on
 * each entry's load, and a float8 test would add a conversion to each.
 *
 * A far child that is a leaf is offered at once rather than pushed: it has
 * no children, so its visit would be its offer, after a push, a pop and a
 * turn of the loop.  Offering a near child that is a leaf at once as well
 * was slower: the walk descends into it anyway.
 *
 * The walk is one loop whose every turn either visits a node or takes the
 * next subtree from the stack, rather than a descent loop inside a loop of
 * pops: lanes of a warp whose paths differ in length then wait less for one
 * another, which pays wherever the warps diverge (queries away from the
 * data, 3-D) and costs a little where they hardly do (uniform 2-D All-kNN).
 *
 * Without closest-point bounds a turn pops one entry, and the next turn
 * pops again if that one is pruned, rather than popping in a loop until
 * one is not: a lane working through pruned entries then holds back a
 * lane that visits for one turn at a time.  The kernels with closest-point
 * bounds were slower that way, and keep the loop.
 *
 * A stack entry is its node and float bound in one 8-byte record, read and
 * written by one instruction, and the top entry stays in registers, so
 * that a pop tests it at once while the load of the one under it is on
 * its way.  Keeping the least bound under each entry, to end the walk once
 * none can win, cost more than it saved.
 *
 * Without closest-point bounds, a child whose box box_flags.cu found loose
 * is pushed marked (the node's bit loose) and entered without its box
 * test, which pays for All-kNN; marking the children of the walks with
 * closest-point bounds too cost them more than it saved, so those test
 * every box.
 */
template <int DIM, bool FIXED, bool CCT, typename Index, int STACK, typename C,
		  typename Best>
static __device__ __forceinline__ void
knn_walk(const KdGpuTree &t, const C *coords, const double *q, Index exclude,
		 Best &best)
{
	static_assert(!CCT || FIXED, "closest-point bounds need the dimension fixed");
	struct alignas(2 * sizeof(Index)) Entry
	{
		Index		node;
		float		lb;
	}			stack[STACK];
	Entry		cached;			/* stack[sp - 1], kept in registers */
	float		stack_gap[CCT ? STACK : 1][CCT ? DIM : 1];
	float		gap[CCT ? DIM : 1];
	const Index loose = (Index) 1 << (8 * sizeof(Index) - 2);	/* in a stacked node */
	bool		entering = true;
	Index		n = (Index) t.n;
	Index		nbounds = (Index) t.nbounds;
	Index		node = 0;
	int			dim = FIXED ? DIM : t.dim;
	double		lb = 0.0;
	int			sp = 0;

	if constexpr (CCT)
	{
#pragma unroll
		for (int j = 0; j < DIM; j++)
			gap[j] = 0.0f;
	}
	for (;;)
	{
		double		p[DIM];
		double		worst = best.worst();
		double		diff;
		double		far_gap;
		double		far_lb;
		Index		near;
		Index		far;
		int			sbyte;
		int			s;
		bool		go = node < n && !(lb > worst);

		if (go && entering && node < nbounds)
		{
			const double *box = t.bounds + (int64_t) node * 2 * dim;

			if constexpr (CCT)
			{
				lb = knn_box_gaps<DIM>(q, box, gap);
				go = !(lb > worst);
			}
			else
			{
				double		bd = kdc_box_dist2<DIM>(q, box, dim);

				go = !(bd > worst);
				lb = bd > lb ? bd : lb;
			}
		}
		if (!go)
		{
			Entry		top;
			bool		taken;

			/*
			 * Resume at the deepest pending subtree that can still win: with
			 * closest-point bounds pop until one can, else pop one and let
			 * the next turn pop again if it cannot.
			 */
			do
			{
				if (sp == 0)
					return;
				sp--;
				top = cached;
				if (sp > 0)
					cached = stack[sp - 1];
				taken = top.lb <= best.worst_up() &&
					!(signbit(top.lb) && best.worst_is_zero() &&
					  __ldg(t.refs + ((top.node & ~loose) >> 1) - 1) >= best.kth_ref());
			} while (CCT && !taken);
			if (taken)
			{
				node = top.node & ~loose;
				lb = fabsf(top.lb);
				if constexpr (CCT)
				{
#pragma unroll
					for (int j = 0; j < DIM; j++)
						gap[j] = stack_gap[sp][j];
				}
				entering = !(top.node & loose);
			}
			else
				node = n;
			continue;
		}
		sbyte = knn_offer_node<DIM, FIXED>(t, coords, q, node, exclude, dim, p, best);
		s = sbyte & KDC_SPLIT_DIM;
		diff = __dadd_rn(kdc_coord<DIM>(q, s), -kdc_coord<DIM>(p, s));
		near = 2 * node + (diff > 0 ? 2 : 1);
		far = (near & 1) ? near + 1 : near - 1;
		if constexpr (CCT)
		{
			/* the far child's closest point differs from its parent's in s */
			far_gap = __double2float_rd(__dmul_rn(diff, diff));
			far_lb = 0.0;
#pragma unroll
			for (int j = 0; j < DIM; j++)
				far_lb = __dadd_rn(far_lb, j == s && far_gap > gap[j] ? far_gap : gap[j]);
		}
		else
		{
			far_gap = __dmul_rn(diff, diff);
			far_lb = far_gap > lb ? far_gap : lb;
		}
		if (far < n && far_lb <= best.worst())
		{
			/* a leaf has no children: its visit is its offer, done now */
			if (2 * far + 1 >= n)
			{
				double		fp[DIM];

				knn_offer_node<DIM, FIXED>(t, coords, q, (Index) far, exclude, dim,
										   fp, best);
			}
			else
			{
				Entry		push = {far, __double2float_rd(far_lb)};

				if (!CCT && (sbyte & ((far & 1) ? KDC_LOOSE_LEFT : KDC_LOOSE_RIGHT)))
					push.node |= loose;

				if constexpr (CCT)
				{
#pragma unroll
					for (int j = 0; j < DIM; j++)
						stack_gap[sp][j] = j == s && far_gap > gap[j] ? (float) far_gap : gap[j];
				}
				if (t.ref_order && diff == 0 && far_lb == 0 &&
					fabs(kdc_coord<DIM>(p, s)) >= 0x1p-400)
					push.lb = -0.0f;
				if (sp > 0)
					stack[sp - 1] = cached;
				cached = push;
				sp++;
			}
		}
		node = near;
		entering = false;
	}
}

#endif							/* KDGPU_KNN_WALK_CUH */
