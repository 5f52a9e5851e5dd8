/*
 * knn.cu
 *	  k-nearest-neighbour queries against a device tree, and All-kNN.
 *
 * Design.  One thread per query, a depth-first traversal with an explicit
 * stack of (node, lower bound).  At each node the thread offers the node's
 * point to a bounded max-heap of the k best (d2, ref) pairs, descends into
 * the near child and pushes the far child with the lower bound
 * max(parent bound, (q[s] - p[s])^2); nodes that carry a bounding box
 * tighten the bound with the box distance.  A subtree is skipped only when
 * its bound is strictly greater than the current k-th distance, because an
 * equal distance may still win on the reference.  All these bounds are
 * rounded sums of a subset of the terms of the exact distance, so they never
 * exceed it and the result is exactly the CPU's.
 *
 * The heap lives in local memory for k <= 64 (the kernel is instantiated
 * for capacities 8, 16, 32 and 64) and in the query's slot of the output
 * array in global memory above that.  Queries are uploaded in chunks that
 * fit the memory budget, ordered by Morton code inside each chunk, and run
 * in paced launches; results go back in the original order.  All-kNN runs
 * the same kernel with the tree's own points as queries, excluding each
 * query's own node unless include_self.
 */
#include "common.cuh"

/*
 * Offer every point of the tree that can beat the heap's k-th neighbour,
 * except node exclude.
 */
static __device__ __forceinline__ void
knn_search(const KdGpuTree &t, const double *q, int64_t exclude, KdcHeap &h)
{
	int64_t		stack_node[KDC_STACK];
	double		stack_lb[KDC_STACK];
	int			sp = 0;
	int64_t		node = 0;
	double		lb = 0.0;
	int			dim = t.dim;

	for (;;)
	{
		while (node < t.n)
		{
			const double *p = t.coords + node * dim;
			double		worst = h.worst();
			double		d2;
			double		diff;
			double		far_lb;
			int64_t		near;
			int			s;

			if (lb > worst)
				break;
			if (node < t.nbounds)
			{
				double		bd = kdc_box_dist2(q, t.bounds + node * 2 * dim, dim);

				if (bd > worst)
					break;
				lb = bd > lb ? bd : lb;
			}
			d2 = kdc_dist2(q, p, dim);
			if (node != exclude)
				h.push(d2, t.refs[node]);
			s = t.split[node];
			diff = __dadd_rn(kdc_coord(q, s), -p[s]);
			near = 2 * node + (diff >= 0 ? 2 : 1);
			far_lb = __dmul_rn(diff, diff);
			far_lb = far_lb > lb ? far_lb : lb;
			if (far_lb <= h.worst())
			{
				int64_t		far = 4 * node + 3 - near;

				if (far < t.n)
				{
					stack_node[sp] = far;
					stack_lb[sp] = far_lb;
					sp++;
				}
			}
			node = near;
		}
		/* resume at the deepest pending subtree that can still win */
		for (;;)
		{
			if (sp == 0)
				return;
			sp--;
			if (stack_lb[sp] <= h.worst())
			{
				node = stack_node[sp];
				lb = stack_lb[sp];
				break;
			}
		}
	}
}

/*
 * Queries perm[start .. start + count) of a chunk; query qi's neighbours go
 * to out[qi * k ...].  self_base >= 0 excludes node self_base + qi (All-kNN).
 * K is the heap capacity in local memory, 0 for the heap in out.
 */
template <int K>
static __global__ void __launch_bounds__(KDC_BLOCK)
knn_kernel(KdGpuTree t, const double *queries, const uint32_t *perm,
		   int64_t start, int64_t count, int k, int64_t self_base,
		   KdNeighbor *out)
{
	int64_t		i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	KdNeighbor	local[K > 0 ? K : 1];
	double		q[KD_MAX_DIM];
	int64_t		qi;
	KdcHeap		h;

	if (i >= count)
		return;
	qi = perm[start + i];
	kdc_load_point(q, queries + qi * t.dim, t.dim);
	h.h = K > 0 ? local : out + qi * k;
	h.k = k;
	h.size = 0;
	knn_search(t, q, self_base >= 0 ? self_base + qi : -1, h);
	h.sort();
	if (K > 0)
		for (int c = 0; c < h.size; c++)
			out[qi * k + c] = local[c];
}

/* Launch the kernel instance for k on one slice. */
static void
knn_launch(const KdGpuTree &t, const double *queries, const uint32_t *perm,
		   int64_t start, int64_t count, int k, int64_t self_base,
		   KdNeighbor *out)
{
	unsigned int nb = kdc_blocks(count);

	if (k <= 8)
		knn_kernel<8> <<< nb, KDC_BLOCK >>> (t, queries, perm, start, count, k, self_base, out);
	else if (k <= 16)
		knn_kernel<16> <<< nb, KDC_BLOCK >>> (t, queries, perm, start, count, k, self_base, out);
	else if (k <= 32)
		knn_kernel<32> <<< nb, KDC_BLOCK >>> (t, queries, perm, start, count, k, self_base, out);
	else if (k <= 64)
		knn_kernel<64> <<< nb, KDC_BLOCK >>> (t, queries, perm, start, count, k, self_base, out);
	else
		knn_kernel<0> <<< nb, KDC_BLOCK >>> (t, queries, perm, start, count, k, self_base, out);
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
	int64_t		slice = ((int64_t) 1 << 15) / (k > 8 ? k / 8 : 1);
	KdStatus	st;

	if ((st = kdc_check_k(k, err)) != KD_OK)
		return st;
	if (g == NULL)
		return kd_set_error(err, KD_ERR_ARG, -1, "no device tree");
	if (nq < 0)
		return kd_set_error(err, KD_ERR_ARG, -1, "negative query count");
	candidates = queries == NULL && !include_self ? g->n - 1 : g->n;
	cnt = candidates < k ? (int) (candidates > 0 ? candidates : 0) : k;
	if ((st = kdc_begin(err)) != KD_OK)
		return st;
	if ((st = kdc_budget(exec, kdc_tree_bytes(g->n, g->dim, g->nbounds),
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
		int64_t		m = nq - c0 < chunk ? nq - c0 : chunk;
		double	   *d_q = NULL;
		const double *qpts;
		uint32_t   *d_perm;
		KdNeighbor *d_out;
		cudaError_t e;

		if (queries)
		{
			if ((st = kdc_alloc(&a, (void **) &d_q, sizeof(double) * g->dim * m,
								"queries", err)) != KD_OK)
				goto chunk_done;
			e = kdc_memcpy_host(d_q, queries + c0 * g->dim, sizeof(double) * g->dim * m,
						   cudaMemcpyHostToDevice);
			if (e != cudaSuccess)
			{
				st = kdc_cuda_error(err, e, "uploading queries");
				goto chunk_done;
			}
			if ((st = kdc_check_finite(d_q, m, g->dim, c0, "query point", &a, err)) != KD_OK)
				goto chunk_done;
		}
		qpts = queries ? d_q : g->coords + c0 * g->dim;
		if (cnt == 0)
		{
			/* nothing to find: only validate the queries */
			for (int64_t q = 0; q < m; q++)
				count[c0 + q] = 0;
			goto chunk_done;
		}
		if ((st = kdc_alloc(&a, (void **) &d_perm, sizeof(uint32_t) * m, "query order", err)) != KD_OK ||
			(st = kdc_alloc(&a, (void **) &d_out, sizeof(KdNeighbor) * k * m, "results", err)) != KD_OK ||
			(st = kdc_spatial_order(qpts, m, g->dim, d_perm, &a, err)) != KD_OK)
			goto chunk_done;
		st = kdc_run_paced(exec, m, &slice, "a kNN query", err,
						   [&](int64_t start, int64_t len)
						   {
							   knn_launch(*g, qpts, d_perm, start, len, k,
										  queries || include_self ? -1 : c0,
										  d_out);
						   });
		if (st == KD_OK)
			st = kdc_heap_copy_out(d_out, m, k, cnt, out + c0 * k, count + c0, err);
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
