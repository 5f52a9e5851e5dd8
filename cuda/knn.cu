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
 * Two kernels share that walk (knn_walk.cuh), each with its own record of
 * the best found.  For k <= 32 on trees of fewer than 2^30 points (the common
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
#include "knn_walk.cuh"

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
		return kde_set_error(err, KD_ERR_ARG, -1, "no device tree");
	if (nq < 0)
		return kde_set_error(err, KD_ERR_ARG, -1, "negative query count");
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
		return kde_set_error(err, KD_ERR_GPU_NOMEM, -1,
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
		return kde_set_error(err, KD_ERR_ARG, -1, "no query points");
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
