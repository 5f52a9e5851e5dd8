/*
 * vp_knn.cu
 *	  Exact kNN of vectors through a vantage-point tree on the GPU
 *	  (kde_vp_knn's answers, bit for bit): a warp per query.
 *
 * The warp walks the tree depth first, the nearer child first, with a
 * stack of (node, bound) in shared memory; a node is left only when its
 * bound exceeds the query's k-th distance, so that a row tying the k-th
 * with a lesser ref is still found.  At an inner node the lanes sum the
 * distance to the vantage point over their share of the coordinates and
 * add the sums across the warp: a rounding of its own, which
 * kde_vp_bound's margins cover, as they cover any order of the terms, so
 * the bound is still never above any row of the child.  At a leaf each
 * lane takes a row and sums its exact distance in dimension order
 * (vp_warp_rows), and lane 0 offers those that may enter the query's k
 * best to its bounded heap in the output slot (common.cuh's KdcHeap,
 * sorted at the end), as the flat tiles do.  The stack holds at most one
 * node a level and the tree's depth is checked against it at the build.
 */
#include "vptree.cuh"

#define VP_KNN_WARPS 4			/* queries of a block */

/*
 * Queries [q0, q0 + nq) of d through tree t under metric M, into their
 * output slots; compared, if not NULL, gets each query's count of
 * distances computed added.
 */
template <int M>
__global__ void
__launch_bounds__(VP_KNN_WARPS * 32)
vp_knn_kernel(FlatDev d, VpDev t, int64_t q0, int64_t nq,
			  unsigned long long *compared)
{
	__shared__ VpTile tiles[VP_KNN_WARPS];
	__shared__ int64_t stack_node[VP_KNN_WARPS][VP_STACK];
	__shared__ double stack_bound[VP_KNN_WARPS][VP_STACK];
	const int	w = threadIdx.x / 32;
	const int	lane = threadIdx.x & 31;
	const int64_t q = q0 + (int64_t) blockIdx.x * VP_KNN_WARPS + w;
	const double *x = d.qs + q * d.dim;
	KdcHeap		heap;
	unsigned long long ncmp = 0;
	int			sp = 1;

	if (q >= q0 + nq)
		return;
	heap.h = d.res + q * d.k;
	heap.k = d.k;
	heap.size = 0;
	if (lane == 0)
	{
		stack_node[w][0] = 0;
		stack_bound[w][0] = 0.0;
	}
	__syncwarp();
	while (sp > 0)
	{
		int64_t		node = stack_node[w][--sp];
		double		bound = stack_bound[w][sp];
		double		worst = __shfl_sync(VP_FULL, heap.worst(), 0);
		KdVpNode	nd;

		__syncwarp();
		if (bound > worst)
			continue;
		nd = t.nodes[node];
		if (nd.vp < 0)
		{
			for (int64_t r0 = 0; r0 < nd.count; r0 += 32)
			{
				int64_t		row = r0 + lane < nd.count ? t.order[nd.start + r0 + lane] : -1;
				uint64_t	ref = row >= 0 ? d.refs[row] : 0;
				double		dist;
				unsigned int take;

				if (row >= 0 && d.skip && ref == d.skip[q])
					row = -1;
				dist = vp_warp_rows<M>(d.pts, d.dim, x, row, tiles[w]);
				ncmp += __popc(__ballot_sync(VP_FULL, row >= 0));
				take = __ballot_sync(VP_FULL, row >= 0 && !(dist > worst));
				while (take)
				{
					int			b = __ffs(take) - 1;
					double		db = __shfl_sync(VP_FULL, dist, b);
					uint64_t	rb = __shfl_sync(VP_FULL, ref, b);

					take &= take - 1;
					if (lane == 0)
						heap.push(db, rb);
				}
				worst = __shfl_sync(VP_FULL, heap.worst(), 0);
			}
		}
		else
		{
			const double *v = d.pts + nd.vp * d.dim;
			KdMetricSum s = kde_metric_zero();
			double		dq,
						b_in,
						b_out;

			for (int c = lane; c < d.dim; c += 32)
				kde_metric_term(M, &s, x[c], v[c]);
			for (int off = 16; off > 0; off /= 2)
			{
				double		o = __shfl_xor_sync(VP_FULL, s.s, off);

				s.s = M == 2 ? fmax(s.s, o) : s.s + o;
			}
			dq = kde_metric_finish(M, &s);
			ncmp++;
			b_in = fmax(bound, kde_vp_bound(dq, nd.mu_in, 0));
			b_out = fmax(bound, kde_vp_bound(dq, nd.mu_out, 1));
			/* the nearer child on top */
			if (lane == 0)
			{
				int			top = sp;

				if (!(fmax(b_in, b_out) > worst))
				{
					stack_node[w][top] = b_in <= b_out ? nd.outside : nd.inside;
					stack_bound[w][top++] = fmax(b_in, b_out);
				}
				if (!(fmin(b_in, b_out) > worst))
				{
					stack_node[w][top] = b_in <= b_out ? nd.inside : nd.outside;
					stack_bound[w][top++] = fmin(b_in, b_out);
				}
			}
			sp += !(fmax(b_in, b_out) > worst) + !(fmin(b_in, b_out) > worst);
			__syncwarp();
		}
	}
	if (lane == 0)
	{
		heap.sort();
		d.count[q] = heap.size;
		if (compared)
			atomicAdd(compared, ncmp);
	}
}

/* See vptree.cuh. */
KdStatus
kdc_vp_knn_dev(const FlatDev *d, const VpDev *t, KdMetric metric,
			   int64_t *compared, KdcAllocs *a, const KdExec *exec,
			   KdError *err)
{
	unsigned long long *d_cmp = NULL;
	unsigned long long ncmp = 0;
	int64_t		slice = 4096;
	KdStatus	st;
	cudaError_t e;

	if (compared)
	{
		if ((st = kdc_alloc(a, (void **) &d_cmp, sizeof(*d_cmp), "a count", err)) != KD_OK)
			return st;
		if ((e = cudaMemset(d_cmp, 0, sizeof(*d_cmp))) != cudaSuccess)
			return kdc_cuda_error(err, e, "clearing a count");
	}
	st = kdc_run_paced(exec, d->nq, &slice, "vantage-point tree kNN", err,
					   [&](int64_t start, int64_t n) {
						   unsigned int blocks = (unsigned int) ((n + VP_KNN_WARPS - 1) / VP_KNN_WARPS);

						   switch (metric)
						   {
							   case KD_METRIC_L2:
								   vp_knn_kernel<0> <<< blocks, VP_KNN_WARPS * 32 >>> (*d, *t, start, n, d_cmp);
								   break;
							   case KD_METRIC_L1:
								   vp_knn_kernel<1> <<< blocks, VP_KNN_WARPS * 32 >>> (*d, *t, start, n, d_cmp);
								   break;
							   default:
								   vp_knn_kernel<2> <<< blocks, VP_KNN_WARPS * 32 >>> (*d, *t, start, n, d_cmp);
								   break;
						   }
					   });
	if (st == KD_OK && compared)
	{
		if ((e = cudaMemcpy(&ncmp, d_cmp, sizeof(ncmp), cudaMemcpyDeviceToHost)) != cudaSuccess)
			return kdc_cuda_error(err, e, "copying a count");
		*compared = (int64_t) ncmp;
	}
	return st;
}
