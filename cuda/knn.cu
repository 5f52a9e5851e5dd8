/*
 * knn.cu
 *	  k-nearest-neighbour queries against a device tree, and All-kNN.
 *
 * Design.  One thread per query, a depth-first traversal with an explicit
 * stack of (node, lower bound).  At each node the thread offers the node's
 * point to the k best (d2, ref) pairs found so far, descends into the near
 * child and pushes the far child with the lower bound max(parent bound,
 * (q[s] - p[s])^2), or for queries other than the tree's points the
 * distance to the closest point of its cell (closest-point bounds,
 * knn_walk); nodes that carry a bounding box tighten the bound with the
 * box distance.  A subtree is skipped only when its bound is strictly
 * greater than the current k-th distance, because an equal distance may
 * still win on the reference.  All these bounds are rounded sums of a
 * subset of the terms of the exact distance, so they never exceed it and
 * the result is exactly the CPU's.
 *
 * Two kernels share that walk (knn_walk), each with its own record of the
 * best found.  For k <= 32 on trees of fewer than 2^30 points (the common
 * case) knn_list_kernel is instantiated per dimension and per list
 * capacity K, the query, the point and the k best in registers (KdcList);
 * k = 10, the usual k, has a capacity of its own.  The walk reads the
 * tree's float copy of its coordinates where that is exact (compact.cu).
 * Other k and larger trees use knn_heap_kernel: a bounded max-heap in
 * local memory for k <= 64, in the query's result slots in global memory
 * above that, with the dimension known at run time.
 *
 * Queries are uploaded in chunks that fit the memory budget and run in
 * Morton order (kdc_spatial_order), in paced launches; every result goes to
 * its query's own slots on the device and is copied to the host in input
 * order (transfer.cu).  All-kNN runs the same kernels with the tree's own
 * points as queries, excluding each query's own node unless include_self,
 * in KNN_SEGMENTS segments of consecutive nodes, each in Morton order: a
 * segment's results (one contiguous range) go to the host while the next
 * kernels run.  A segment of nodes is a few compact regions (each level of
 * a left-balanced tree is in in-order), so this costs the kernels little
 * coherence; user queries come in any order, and segments of them would
 * cost much more.  Where a sample of adjacent queries suggests many
 * repeated points, each run of equal points is walked once and its answer
 * copied to its members (query_runs.cu).
 */
#include <functional>

#include "common.cuh"

/*
 * All-kNN runs a chunk's queries in about this many segments of consecutive
 * node numbers, each of at least KNN_SEGMENT_MIN queries.  Fewer segments
 * make more coherent launches; more let the results of a segment go to the
 * host sooner, while the next one runs; with fewer, the last segment's
 * copy, after every kernel, costs more than the kernels gain.
 */
#define KNN_SEGMENTS 5
#define KNN_SEGMENT_MIN ((int64_t) 1 << 16)

/*
 * The first launch of a kNN batch, in queries for k <= 8 (fewer in
 * proportion above), before the pacing adapts it to its target time.
 * In up to three dimensions it is KNN_FIRST_SLICE, for All-kNN its first
 * segment (whose results then go down while the next launch runs) up to
 * twice that; elsewhere, where a walk may cost many times more,
 * KNN_PROBE_SLICE.  A smaller first launch fills only part of the device
 * and ramps up over several launches.
 */
#define KNN_FIRST_SLICE ((int64_t) 1 << 20)
#define KNN_PROBE_SLICE ((int64_t) 1 << 16)

/* How many times fewer queries a launch takes for k than for k <= 8. */
static inline int
knn_slice_scale(int k)
{
	return k > 8 ? k / 8 : 1;
}

/*
 * Blocks of KDC_BLOCK threads a multiprocessor should hold at once for the
 * list kernel of dimension DIM and capacity K, with closest-point bounds
 * where CCT: as many as ptxas fits without spilling (sm_80 and sm_90),
 * else as many as its registers allow: more resident blocks hide more of
 * the walk's memory latency, and a spill costs more than they gain.  The
 * 2-D kernels with closest-point bounds spill at 56 registers, so only
 * those without get 9 blocks; higher dimensions and capacities spill at
 * 64.
 */
#define KNN_LIST_MIN_BLOCKS(DIM, K, CCT) \
	((DIM) <= 2 && (K) <= 10 && !(CCT) ? 9 : (DIM) <= 3 && (K) <= 10 ? 8 : 1)

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

/*
 * Queries order[start .. start + count) of a chunk, the dimension known at
 * run time; query qi leaves its neighbours in res[qi * k ...].  self_base
 * >= 0 excludes node self_base + qi (All-kNN).  K is the heap capacity in
 * local memory, 0 for the heap in res.
 */
template <int K>
static __global__ void __launch_bounds__(KDC_BLOCK)
knn_heap_kernel(KdGpuTree t, const double *queries, const uint32_t *order,
				int64_t start, int64_t count, int k, int64_t self_base,
				KdNeighbor *res)
{
	int64_t		pos = start + blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	KdNeighbor	local[K > 0 ? K : 1];
	double		q[KD_MAX_DIM];
	int64_t		qi;
	KdcHeap		h;
	KdcHeapVisit visit;

	if (pos >= start + count)
		return;
	qi = order[pos];
	kdc_load_point(q, queries + qi * t.dim, t.dim);
	h.h = K > 0 ? local : res + qi * k;
	h.k = k;
	h.size = 0;
	visit.h = &h;
	visit.refs = t.refs;
	knn_walk<KD_MAX_DIM, false, false, int64_t, KDC_STACK>(t, t.coords, q,
												   self_base >= 0 ? self_base + qi : -1,
												   visit);
	h.sort();
	if (K > 0)
		for (int c = 0; c < h.size; c++)
			res[qi * k + c] = local[c];
}

/*
 * knn_heap_kernel's contract for trees of fewer than 2^30 points and
 * k <= K, with the dimension DIM and the list capacity K fixed, the tree's
 * coordinates read from coords (of type C).
 */
template <int DIM, int K, typename C, bool CCT>
static __global__ void __launch_bounds__(KDC_BLOCK, KNN_LIST_MIN_BLOCKS(DIM, K, CCT))
knn_list_kernel(KdGpuTree t, const C *coords, const double *queries,
				const uint32_t *order, int64_t start, int64_t count, int k,
				int64_t self_base, KdNeighbor *res)
{
	int64_t		pos = start + blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	double		q[DIM];
	KdcList<K>	best;
	int32_t		exclude = -1;
	int64_t		qi;

	if (pos >= start + count)
		return;
	qi = order[pos];
	if (self_base >= 0)
		exclude = (int32_t) (self_base + qi);
	knn_load<DIM, true>(q, queries + qi * DIM, DIM);
	best.init(k, t.refs);
	knn_walk<DIM, true, CCT, int32_t, 32>(t, coords, q, exclude, best);
#pragma unroll
	for (int c = 0; c < K; c++)
	{
		int			slot = c - (K - k);

		if (slot >= 0 && best.node[c] >= 0)
		{
			res[qi * k + slot].d2 = knn_dist2<DIM, true>(t, coords, q, best.node[c], DIM);
			res[qi * k + slot].ref = t.refs[best.node[c]];
		}
	}
}

/*
 * The list kernel of one dimension and coordinate type for k, with
 * closest-point bounds where cct is set (and DIM > 1); false if k is above
 * every capacity.
 */
template <int DIM, typename C>
static bool
knn_launch_list(const KdGpuTree &t, const C *coords, const double *queries,
				const uint32_t *order, int64_t start, int64_t count, int k,
				int64_t self_base, bool cct, KdNeighbor *res)
{
	unsigned int nb = kdc_blocks(count);

	/*
	 * In one dimension the closest point of a cell is on its splitting
	 * plane, so DIM 1 has no kernel with closest-point bounds.
	 */
#define KNN_LIST(K) do { \
		if (DIM > 1 && cct) \
			knn_list_kernel<DIM, K, C, (DIM > 1)> <<< nb, KDC_BLOCK >>> \
				(t, coords, queries, order, start, count, k, self_base, res); \
		else \
			knn_list_kernel<DIM, K, C, false> <<< nb, KDC_BLOCK >>> \
				(t, coords, queries, order, start, count, k, self_base, res); \
	} while (0)
	if (k <= 1)
		KNN_LIST(1);
	else if (k <= 4)
		KNN_LIST(4);
	else if (k <= 8)
		KNN_LIST(8);
	else if (k <= 10)
		KNN_LIST(10);
	else if (k <= 16)
		KNN_LIST(16);
	else if (k <= 32)
		KNN_LIST(32);
	else
		return false;
#undef KNN_LIST
	return true;
}

/* knn_launch_list for the tree's dimension, DIM or above. */
template <int DIM>
static bool
knn_launch_dim(const KdGpuTree &t, const double *queries, const uint32_t *order,
			   int64_t start, int64_t count, int k, int64_t self_base,
			   bool cct, KdNeighbor *res)
{
	if constexpr (DIM == 3)
	{
		if (t.dim == DIM && t.coords_f)
			return knn_launch_list<DIM>(t, (const float4 *) t.coords_f, queries,
										order, start, count, k, self_base, cct, res);
	}
	else if (t.dim == DIM && t.coords_f)
		return knn_launch_list<DIM>(t, (const float *) t.coords_f, queries, order, start,
									count, k, self_base, cct, res);
	if (t.dim == DIM)
		return knn_launch_list<DIM>(t, (const double *) t.coords, queries, order, start,
									count, k, self_base, cct, res);
	if constexpr (DIM < KD_MAX_DIM)
		return knn_launch_dim<DIM + 1>(t, queries, order, start, count, k, self_base,
									   cct, res);
	return false;
}

/*
 * Launch the kernel instance for the tree and k on one slice; all_knn says
 * the queries are the tree's own points.
 */
static void
knn_launch(const KdGpuTree &t, const double *queries, const uint32_t *order,
		   int64_t start, int64_t count, int k, int64_t self_base,
		   bool all_knn, KdNeighbor *res)
{
	unsigned int nb = kdc_blocks(count);

	if (t.n < ((int64_t) 1 << 30) &&
		knn_launch_dim<1>(t, queries, order, start, count, k, self_base,
						  !all_knn, res))
		return;
	if (k <= 64)
		knn_heap_kernel<64> <<< nb, KDC_BLOCK >>> (t, queries, order, start, count, k, self_base, res);
	else
		knn_heap_kernel<0> <<< nb, KDC_BLOCK >>> (t, queries, order, start, count, k, self_base, res);
}

/*
 * order[i] = i for i < n: the runs' heads walked in their own order.  The
 * kernels read every query through an order; an order that may be missing
 * cost the 3-D kernel with closest-point bounds a spilled register, and
 * every kernel a little time.
 */
static __global__ void
knn_identity_kernel(uint32_t *order, int64_t n)
{
	int64_t		i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;

	if (i < n)
		order[i] = (uint32_t) i;
}

/*
 * kNN of nq queries (host array), or All-kNN when queries is NULL (the
 * queries are the tree's points, nq = n).
 */
static KdStatus
knn_run(const KdGpuTree *g, const double *queries, int64_t nq, int k,
		bool include_self, KdNeighbor *out, int32_t *count,
		const KdExec *exec, KdError *err)
{
	int64_t		candidates;
	int			cnt;
	size_t		budget;
	size_t		per_query;
	int64_t		chunk;
	int64_t		slice;
	int64_t		expand_slice = (int64_t) 1 << 20;
	KdStatus	st;

	if ((st = kdc_check_k(k, err)) != KD_OK)
		return st;
	if (g == NULL)
		return kd_set_error(err, KD_ERR_ARG, -1, "no device tree");
	if (nq < 0)
		return kd_set_error(err, KD_ERR_ARG, -1, "negative query count");
	/* the first launch: a probe above three dimensions, All-kNN's per chunk */
	slice = g->dim > 3 ? KNN_PROBE_SLICE / knn_slice_scale(k) :
		queries ? KNN_FIRST_SLICE / knn_slice_scale(k) : 0;
	candidates = queries == NULL && !include_self ? g->n - 1 : g->n;
	cnt = candidates < k ? (int) (candidates > 0 ? candidates : 0) : k;
	if ((st = kdc_begin(g->device, err)) != KD_OK)
		return st;
	if ((st = kdc_budget(exec, kdc_tree_size(g),
						 &budget, err)) != KD_OK)
		return st;
	per_query = (queries ? sizeof(double) * g->dim : 0) + sizeof(uint32_t) +
		KDC_ORDER_BYTES(1) - ((size_t) 1 << 20) + sizeof(KdNeighbor) * k;
	chunk = budget > ((size_t) 4 << 20) ?
		(int64_t) ((budget - ((size_t) 4 << 20)) / per_query) : 0;
	if (chunk > ((int64_t) 1 << 30))
		chunk = (int64_t) 1 << 30;
	if (chunk < 1 && nq > 0)
		return kd_set_error(err, KD_ERR_GPU_NOMEM, -1,
						 "not enough device memory for one query (%zu MB available)",
						 budget >> 20);

	for (int64_t c0 = 0; c0 < nq; c0 += chunk)
	{
		KdcAllocs	a = {0};
		KdcRuns		runs = {0};
		int64_t		m = nq - c0 < chunk ? nq - c0 : chunk;
		int64_t		segment = queries ? 0 : m / KNN_SEGMENTS + 1;
		int64_t		copied = 0;
		double	   *d_q = NULL;
		const double *qpts;
		uint32_t   *d_order;
		KdNeighbor *d_res;
		int			head_k;
		size_t		used;
		std::function<KdStatus(int64_t, int64_t)> copy_done;
		cudaError_t e;

		if (segment > 0 && segment < KNN_SEGMENT_MIN)
			segment = KNN_SEGMENT_MIN;
		if (slice == 0)
			slice = (segment < 2 * KNN_FIRST_SLICE ? segment : 2 * KNN_FIRST_SLICE) /
				knn_slice_scale(k);
		if (queries)
		{
			if ((st = kdc_alloc(&a, (void **) &d_q, sizeof(double) * g->dim * m,
								"queries", err)) != KD_OK)
				goto chunk_done;
			e = kdc_to_device(d_q, queries + c0 * g->dim, sizeof(double) * g->dim * m, exec);
			if (e != cudaSuccess)
			{
				st = kdc_cuda_error(err, e, "uploading queries");
				goto chunk_done;
			}
			if ((st = kdc_check_finite(d_q, m, g->dim, c0, "query point", &a, err)) != KD_OK)
				goto chunk_done;
		}
		qpts = queries ? d_q : g->coords + c0 * g->dim;
		for (int64_t q = 0; q < m; q++)
			count[c0 + q] = cnt;
		if (cnt == 0)
			goto chunk_done;	/* nothing to find: the queries are checked */
		if ((st = kdc_alloc(&a, (void **) &d_order, sizeof(uint32_t) * m, "query order", err)) != KD_OK ||
			(st = kdc_alloc(&a, (void **) &d_res, sizeof(KdNeighbor) * k * m, "results", err)) != KD_OK ||
			(st = kdc_spatial_order(qpts, m, g->dim, segment, d_order, &a, err)) != KD_OK)
			goto chunk_done;
		copy_done = [&](int64_t start, int64_t len)
		{
			/* the segments every query of which has its answer */
			int64_t		done = start + len;

			if (done < m)
				done = segment > 0 ? done - done % segment : 0;
			if (done <= copied)
				return KD_OK;
			done = done - copied;
			copied += done;
			return kdc_results_to_host(d_res + (copied - done) * k, done, k, cnt,
									   out + (c0 + copied - done) * k, exec, err);
		};
		head_k = queries || include_self ? k : k + 1;
		used = (size_t) m * per_query + ((size_t) 4 << 20);
		if (head_k <= KD_MAX_K &&
			(st = kdc_query_runs(qpts, d_order, m, g->dim, segment, head_k,
								 budget > used ? budget - used : 0, &a, &runs,
								 exec, err)) != KD_OK)
			goto chunk_done;
		if (runs.nheads == 0)
			st = kdc_run_overlapped(exec, m, &slice, 10.0, "a kNN query", err,
									[&](int64_t start, int64_t len)
									{
										knn_launch(*g, qpts, d_order, start, len, k,
												   queries || include_self ? -1 : c0,
												   queries == NULL, d_res);
									},
									copy_done);
		else
		{
			/*
			 * One walk a run of equal queries, then each query's answer.  The
			 * runs' walks are few and long (every copy of a place ties), so
			 * they go in as few launches as the pacing allows: a launch costs
			 * its longest walk.  Above three dimensions they start as a probe.
			 */
			int64_t		first = g->dim > 3 ? KNN_PROBE_SLICE : KNN_FIRST_SLICE;
			int64_t		run_slice = (runs.nheads < first ? runs.nheads : first) /
				knn_slice_scale(head_k) + 1;

			/* the queries' order has done its work: it now orders the heads */
			knn_identity_kernel <<< kdc_blocks(runs.nheads), KDC_BLOCK >>> (d_order,
																		   runs.nheads);

			st = kdc_run_paced(exec, runs.nheads, &run_slice, "a kNN query", err,
							   [&](int64_t start, int64_t len)
							   {
								   knn_launch(*g, runs.heads, d_order, start, len,
											  head_k, -1, queries == NULL,
											  runs.head_res);
							   });
			if (st == KD_OK)
				st = kdc_run_overlapped(exec, m, &expand_slice, 10.0, "a kNN query", err,
										[&](int64_t start, int64_t len)
										{
											/* a segment's positions are its queries */
											kdc_runs_expand(&runs, start, len, k, cnt,
															head_k > k ? g->refs + c0 : NULL,
															d_res);
										},
										copy_done);
		}
chunk_done:
		kdc_free_all(&a);
		if (st != KD_OK)
			return st;
	}
	return KD_OK;
}

/* kNN of host queries; see KdCudaApi.knn. */
KdStatus
kdc_knn(const KdGpuTree *gtree, const double *queries, int64_t nq, int k,
		KdNeighbor *out, int32_t *count, const KdExec *exec, KdError *err)
{
	if (queries == NULL && nq > 0)
		return kd_set_error(err, KD_ERR_ARG, -1, "no query points");
	return knn_run(gtree, queries, nq, k, false, out, count, exec, err);
}

/* All-kNN in node order; see KdCudaApi.all_knn. */
KdStatus
kdc_all_knn(const KdGpuTree *gtree, int k, bool include_self,
			KdNeighbor *out, int32_t *count, const KdExec *exec, KdError *err)
{
	return knn_run(gtree, NULL, gtree ? gtree->n : 0, k, include_self, out,
				   count, exec, err);
}
