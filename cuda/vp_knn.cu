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
			const double *v = t.vps ? t.vps + node * d.dim : d.pts + nd.vp * d.dim;
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

/* The levels of tree below its root, counted on the host. */
static int64_t
vp_depth(const KdVpTree *tree)
{
	int64_t    *depth = (int64_t *) malloc(sizeof(int64_t) * tree->nnodes);
	int64_t    *stack = (int64_t *) malloc(sizeof(int64_t) * tree->nnodes);
	int64_t		sp = 0;
	int64_t		deepest = 0;

	if (depth == NULL || stack == NULL)
	{
		free(depth);
		free(stack);
		return -1;
	}
	depth[0] = 0;
	stack[sp++] = 0;
	while (sp > 0)
	{
		int64_t		i = stack[--sp];
		const KdVpNode *nd = &tree->nodes[i];

		if (depth[i] > deepest)
			deepest = depth[i];
		if (nd->vp < 0)
			continue;
		depth[nd->inside] = depth[nd->outside] = depth[i] + 1;
		stack[sp++] = nd->inside;
		stack[sp++] = nd->outside;
	}
	free(depth);
	free(stack);
	return deepest;
}

/*
 * A tree and its vectors kept on a device for the searches that follow
 * (kd_gpu_abi.h's vp_upload): a does own every array.
 */
struct KdVpGpu
{
	KdcAllocs	a;
	FlatDev		d;				/* the vectors and refs; no queries */
	VpDev		t;
	KdMetric	metric;
	int			device;
};

/* Device bytes of tree's nodes, rows and vantage points (dim each). */
static size_t
vp_tree_bytes(const KdVpTree *tree, int dim, int64_t *nrows)
{
	*nrows = 0;
	for (int64_t i = 0; i < tree->nnodes; i++)
		if (tree->nodes[i].vp < 0)
			*nrows += tree->nodes[i].count;
	return sizeof(KdVpNode) * tree->nnodes + sizeof(int64_t) * (*nrows + 1) +
		(tree->vps ? sizeof(double) * dim * tree->nnodes : 0);
}

/* Copy tree (of nrows rows, vectors of dim) to the device into t, in a. */
static KdStatus
vp_put_tree(const KdVpTree *tree, int dim, int64_t nrows, VpDev *t,
			KdcAllocs *a, const KdExec *exec, KdError *err)
{
	size_t		vpbytes = tree->vps ? sizeof(double) * dim * tree->nnodes : 0;
	int64_t		depth;
	KdStatus	st;
	cudaError_t e = cudaSuccess;

	if ((depth = vp_depth(tree)) < 0)
		return kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
	if (depth + 1 > VP_STACK)
		return kde_set_error(err, KD_ERR_ARG, -1,
							 "a vantage-point tree of %lld levels is too deep to search",
							 (long long) depth + 1);
	t->nnodes = tree->nnodes;
	t->vps = NULL;
	if ((st = kdc_alloc(a, (void **) &t->nodes, sizeof(KdVpNode) * tree->nnodes, "tree nodes", err)) != KD_OK ||
		(st = kdc_alloc(a, (void **) &t->order, sizeof(int64_t) * (nrows + 1), "tree rows", err)) != KD_OK ||
		(vpbytes && (st = kdc_alloc(a, (void **) &t->vps, vpbytes, "vantage points", err)) != KD_OK))
		return st;
	if ((e = kdc_to_device((void *) t->nodes, tree->nodes, sizeof(KdVpNode) * tree->nnodes, exec)) != cudaSuccess ||
		(nrows > 0 && (e = kdc_to_device((void *) t->order, tree->order, sizeof(int64_t) * nrows, exec)) != cudaSuccess) ||
		(vpbytes && (e = kdc_to_device((void *) t->vps, tree->vps, vpbytes, exec)) != cudaSuccess))
		return kdc_cuda_error(err, e, "copying a vantage-point tree to the device");
	return KD_OK;
}

/* See kd_gpu_abi.h: set's vectors and tree kept on the selected device. */
KdStatus
kdc_vp_upload(const KdVectors *set, KdMetric metric, const KdVpTree *tree,
			  KdVpGpu **gpu, const KdExec *exec, KdError *err)
{
	KdVpGpu    *g;
	int64_t		nrows;
	size_t		bytes = vp_tree_bytes(tree, set->dim, &nrows);
	KdStatus	st;

	*gpu = NULL;
	if (metric == KD_METRIC_COSINE)
		return kde_set_error(err, KD_ERR_ARG, -1,
							 "a vantage-point tree does not search cosine distance");
	if ((g = (KdVpGpu *) calloc(1, sizeof(KdVpGpu))) == NULL)
		return kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
	if ((st = kdc_flat_upload(set, metric, NULL, 0, NULL, bytes, &g->d, &g->a,
							  exec, err)) != KD_OK ||
		(st = vp_put_tree(tree, set->dim, nrows, &g->t, &g->a, exec, err)) != KD_OK)
	{
		kdc_free_all(&g->a);
		free(g);
		return st;
	}
	g->metric = metric;
	g->device = kdc_device;
	*gpu = g;
	return KD_OK;
}

/* See kd_gpu_abi.h: kde_vp_knn's answers through a kept tree. */
KdStatus
kdc_vp_search(const KdVpGpu *g, const double *queries, int64_t nq, int k,
			  const uint64_t *skip, KdNeighbor *out, int32_t *count,
			  const KdExec *exec, KdError *err)
{
	KdcAllocs	a = {0};
	FlatDev		d = g->d;
	int			cnt = d.n < k ? (int) d.n : k;
	size_t		need;
	size_t		budget;
	KdStatus	st;
	cudaError_t e = cudaSuccess;

	if ((st = kdc_check_k(k, err)) != KD_OK ||
		(st = kde_flat_check(queries, nq, d.dim, d.dim, g->metric, "query", err)) != KD_OK)
		return st;
	if (nq == 0 || cnt == 0 || g->t.nnodes == 0)
	{
		for (int64_t q = 0; q < nq; q++)
			count[q] = 0;
		return KD_OK;
	}
	need = (sizeof(double) * d.dim + (skip ? sizeof(uint64_t) : 0) +
			sizeof(KdNeighbor) * k + sizeof(int32_t)) * (size_t) nq;
	if ((st = kdc_begin(g->device, err)) != KD_OK ||
		(st = kdc_budget(exec, 0, &budget, err)) != KD_OK)
		return st;
	if (need > budget)
		return kde_set_error(err, KD_ERR_GPU_NOMEM, -1,
							 "a search of %lld queries needs %zu MB of device memory, %zu MB available",
							 (long long) nq, need >> 20, budget >> 20);
	d.nq = nq;
	d.k = k;
	d.skip = NULL;
	if ((st = kdc_alloc(&a, (void **) &d.qs, sizeof(double) * d.dim * nq, "queries", err)) != KD_OK ||
		(skip && (st = kdc_alloc(&a, (void **) &d.skip, sizeof(uint64_t) * nq, "skips", err)) != KD_OK) ||
		(st = kdc_alloc(&a, (void **) &d.res, sizeof(KdNeighbor) * k * nq, "results", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.count, sizeof(int32_t) * nq, "counts", err)) != KD_OK)
		goto done;
	if ((e = kdc_to_device((void *) d.qs, queries, sizeof(double) * d.dim * nq, exec)) != cudaSuccess ||
		(skip && (e = kdc_to_device((void *) d.skip, skip, sizeof(uint64_t) * nq, exec)) != cudaSuccess))
	{
		st = kdc_cuda_error(err, e, "copying queries to the device");
		goto done;
	}
	if ((st = kdc_vp_knn_dev(&d, &g->t, g->metric, NULL, &a, exec, err)) == KD_OK)
		st = kdc_answers_to_host(d.res, d.count, nq, k, cnt, out, count, exec, err);
done:
	kdc_free_all(&a);
	return st;
}

/* See kd_gpu_abi.h: free a kept tree's device memory. */
void
kdc_vp_release(KdVpGpu *g)
{
	KdError		err;

	if (g == NULL)
		return;
	if (kdc_begin(g->device, &err) == KD_OK)
		kdc_free_all(&g->a);
	free(g);
}

/*
 * See kd_gpu_abi.h: kde_vp_knn's answers, through a tree given on the
 * host, kept on the device for the call alone.
 */
KdStatus
kdc_vp_knn(const KdVectors *set, KdMetric metric, const KdVpTree *tree,
		   const double *queries, int64_t nq, int k, const uint64_t *skip,
		   KdNeighbor *out, int32_t *count, const KdExec *exec, KdError *err)
{
	KdVpGpu    *g;
	KdStatus	st;

	if ((st = kdc_check_k(k, err)) != KD_OK)
		return st;
	if (nq == 0 || set->n == 0 || tree->nnodes == 0)
	{
		for (int64_t q = 0; q < nq; q++)
			count[q] = 0;
		return KD_OK;
	}
	if ((st = kdc_vp_upload(set, metric, tree, &g, exec, err)) != KD_OK)
		return st;
	st = kdc_vp_search(g, queries, nq, k, skip, out, count, exec, err);
	kdc_vp_release(g);
	return st;
}
