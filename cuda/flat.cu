/*
 * flat.cu
 *	  Exact kNN and radius searches of vectors of any dimension on the GPU
 *	  (kde_flat_knn's and kde_flat_radius's contracts, kdtree.h): every
 *	  query compared with every vector, in float8, with the CPU's bits.
 *
 * A block takes FLAT_BQ queries and sweeps all the vectors in tiles of
 * FLAT_BP; its threads each sum a 4 x 4 patch of the tile's distances,
 * reading a slice of FLAT_DK coordinates of the queries and vectors from
 * shared memory at a time, term by term in dimension order through
 * kd_metric.h's helpers (so the sums are the CPU's, built with
 * --fmad=false); cosine's norms are summed once a vector beforehand.  One thread per query then takes the tile's distances:
 * for kNN into the query's k best (distance, ref) pairs, a bounded
 * max-heap in its output slot (but the vector it is to skip), sorted at the
 * end; for a radius search, a count of those within the radius, and in a
 * second launch the hits written at the query's offset.  Each launch
 * takes every query against a chunk of the vectors, so that the grid fills
 * the device whatever the vectors' count, and a query's state (its heap's
 * size, its count, its next hit's place) is kept in device memory from one
 * chunk to the next; the chunks are paced (kdc_run_paced), polling for a
 * cancel between them.  The vectors (packed on the host first when their rows carry more
 * than their coordinates) and queries are copied to the device for the
 * call, and all of them must fit in its memory budget (else
 * KD_ERR_GPU_NOMEM, which AUTO answers on the CPU).
 *
 * A kNN batch large enough (kd_metric.h's KD_VP_GPU_* rule) may go
 * instead through a vantage-point tree of the vectors built on the device
 * (vp_build.cu, vp_knn.cu): a pilot tree of some of the rows first, then
 * the whole tree for a sample of the queries, and the rest of them where
 * the sample compared few enough rows; the queries the tree does not take
 * go through the tiles, from the first one it left.  The tree's memory
 * is its own, beside the call's budget: where it does not fit, the tiles
 * take every query.
 */
#include <string.h>

#include "vptree.cuh"

#define FLAT_BQ 64				/* queries of a block */
#define FLAT_BP 64				/* vectors of a tile */
#define FLAT_DK 8				/* coordinates read into shared memory at once */
#define FLAT_THREADS 256		/* 16 x 16, each a 4 x 4 patch */

/* What a launch does with each distance (flat_kernel's MODE). */
#define FLAT_KNN 0				/* offer it to the query's heap */
#define FLAT_COUNT 1			/* count it when within the radius */
#define FLAT_FILL 2				/* write it out when within the radius */

/* The squared norms of n vectors of dim at v into out. */
__global__ void
flat_norms(const double *v, int64_t n, int dim, double *out)
{
	int64_t		i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = kde_metric_norm2(v + i * dim, dim);
}

/*
 * Every query of d against vectors [v0, v1), by blocks of queries, under
 * metric M, doing MODE with each distance; last: v1 is the last vector.
 */
template <int M, int MODE>
__global__ void
__launch_bounds__(FLAT_THREADS)
flat_kernel(FlatDev d, int64_t v0, int64_t v1, bool last)
{
	const int64_t q0 = 0;
	const int64_t nslice = d.nq;
	__shared__ double qtile[FLAT_DK][FLAT_BQ];
	__shared__ double ptile[FLAT_DK][FLAT_BP];
	__shared__ double dist[FLAT_BQ][FLAT_BP + 1];
	const int	tx = threadIdx.x % 16;
	const int	ty = threadIdx.x / 16;
	const int64_t qb = q0 + (int64_t) blockIdx.x * FLAT_BQ;
	const int64_t q = qb + threadIdx.x;		/* the query this thread keeps */
	const bool	keeper = threadIdx.x < FLAT_BQ && q < q0 + nslice;
	const int	dim = d.dim;
	KdcHeap		heap;
	int64_t		found = 0;
	double		r = 0.0;

	if (qb >= q0 + nslice)
		return;
	if (keeper && MODE == FLAT_KNN)
	{
		heap.h = d.res + q * d.k;
		heap.k = d.k;
		heap.size = v0 == 0 ? 0 : d.count[q];
	}
	if (keeper && MODE != FLAT_KNN)
	{
		r = d.radii[d.nradii == 1 ? 0 : q];
		found = MODE == FLAT_FILL ? d.cursor[q] : (v0 == 0 ? 0 : d.offsets[q + 1]);
	}
	for (int64_t p0 = v0; p0 < v1; p0 += FLAT_BP)
	{
		KdMetricSum acc[4][4];

		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 4; j++)
				acc[i][j] = kde_metric_zero();
		for (int c0 = 0; c0 < dim; c0 += FLAT_DK)
		{
			/* each thread loads two coordinates of each tile */
			for (int l = threadIdx.x; l < FLAT_DK * FLAT_BQ; l += FLAT_THREADS)
			{
				int			c = l / FLAT_BQ;
				int			row = l % FLAT_BQ;
				int64_t		tq = qb + row;
				int64_t		tp = p0 + row;

				qtile[c][row] = (c0 + c < dim && tq < q0 + nslice) ?
					d.qs[tq * dim + c0 + c] : 0.0;
				ptile[c][row] = (c0 + c < dim && tp < v1) ?
					d.pts[tp * dim + c0 + c] : 0.0;
			}
			__syncthreads();
			for (int c = 0; c < FLAT_DK && c0 + c < dim; c++)
				for (int i = 0; i < 4; i++)
				{
					double		x = qtile[c][ty + 16 * i];

					for (int j = 0; j < 4; j++)
						kde_metric_term(M, &acc[i][j], x, ptile[c][tx + 16 * j]);
				}
			__syncthreads();
		}
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 4; j++)
			{
				int64_t		qi = qb + ty + 16 * i;
				int64_t		pj = p0 + tx + 16 * j;

				if (M == KD_METRIC_COSINE && qi < q0 + nslice && pj < v1)
				{
					acc[i][j].na = d.qnorm[qi];
					acc[i][j].nb = d.pnorm[pj];
				}
				dist[ty + 16 * i][tx + 16 * j] = kde_metric_finish(M, &acc[i][j]);
			}
		__syncthreads();
		if (keeper)
		{
			int64_t		end = v1 - p0 < FLAT_BP ? v1 - p0 : FLAT_BP;
			uint64_t	skip = d.skip ? d.skip[q] : 0;

			for (int j = 0; j < end; j++)
			{
				double		x = dist[threadIdx.x][j];

				if (MODE == FLAT_KNN)
				{
					if (d.skip == NULL || d.refs[p0 + j] != skip)
						heap.push(x, d.refs[p0 + j]);
				}
				else if (x <= r)
				{
					if (MODE == FLAT_FILL)
					{
						d.hits[found].d2 = x;
						d.hits[found].ref = d.refs[p0 + j];
					}
					found++;
				}
			}
		}
		__syncthreads();
	}
	if (keeper && MODE == FLAT_KNN && last)
		heap.sort();
	if (keeper && MODE == FLAT_KNN)
		d.count[q] = heap.size;
	if (keeper && MODE == FLAT_COUNT)
		d.offsets[q + 1] = found;
	if (keeper && MODE == FLAT_FILL)
		d.cursor[q] = found;
}

/*
 * Launch the kernel of metric for every query against vectors [v0, v0 +
 * count), in a mode.
 */
template <int MODE>
static void
flat_launch(int metric, const FlatDev &d, int64_t v0, int64_t count)
{
	unsigned	blocks = (unsigned) ((d.nq + FLAT_BQ - 1) / FLAT_BQ);
	bool		last = v0 + count == d.n;

	switch (metric)
	{
		case KD_METRIC_L2:
			flat_kernel<0, MODE> <<< blocks, FLAT_THREADS >>> (d, v0, v0 + count, last);
			break;
		case KD_METRIC_L1:
			flat_kernel<1, MODE> <<< blocks, FLAT_THREADS >>> (d, v0, v0 + count, last);
			break;
		case KD_METRIC_LINF:
			flat_kernel<2, MODE> <<< blocks, FLAT_THREADS >>> (d, v0, v0 + count, last);
			break;
		default:
			flat_kernel<3, MODE> <<< blocks, FLAT_THREADS >>> (d, v0, v0 + count, last);
			break;
	}
}

/*
 * See flat.cuh: check a call's vectors and queries, size its device
 * memory (need, with extra bytes beside the vectors, queries and skips)
 * against the budget, and copy them to the device into d (packed when the
 * vectors' rows carry more than their coordinates; refs left unset when
 * the set has none).
 */
KdStatus
kdc_flat_upload(const KdVectors *set, KdMetric metric, const double *queries,
				int64_t nq, const uint64_t *skip, size_t extra, FlatDev *d,
				KdcAllocs *a, const KdExec *exec, KdError *err)
{
	size_t		budget;
	size_t		need;
	double	   *packed = NULL;
	const double *pts = set->coords;
	KdStatus	st;
	cudaError_t e = cudaSuccess;

	if ((st = kde_flat_check(set->coords, set->n, set->dim, set->stride,
							 metric, "vector", err)) != KD_OK ||
		(st = kde_flat_check(queries, nq, set->dim, set->dim, metric, "query",
							 err)) != KD_OK)
		return st;
	need = sizeof(double) * (set->dim + 1) * (size_t) (set->n + nq) +
		sizeof(uint64_t) * (set->n + (skip ? nq : 0)) + extra;
	if ((st = kdc_begin(kdc_device, err)) != KD_OK ||
		(st = kdc_budget(exec, 0, &budget, err)) != KD_OK)
		return st;
	if (need > budget)
		return kde_set_error(err, KD_ERR_GPU_NOMEM, -1,
							 "a flat search of %lld vectors and %lld queries of %d dimensions needs %zu MB of device memory, %zu MB available",
							 (long long) set->n, (long long) nq, set->dim,
							 need >> 20, budget >> 20);
	memset(d, 0, sizeof(*d));
	d->n = set->n;
	d->dim = set->dim;
	d->nq = nq;
	if ((st = kdc_alloc(a, (void **) &d->pts, sizeof(double) * set->dim * set->n, "vectors", err)) != KD_OK ||
		(st = kdc_alloc(a, (void **) &d->refs, sizeof(uint64_t) * set->n, "refs", err)) != KD_OK ||
		(st = kdc_alloc(a, (void **) &d->qs, sizeof(double) * set->dim * nq, "queries", err)) != KD_OK ||
		(skip && (st = kdc_alloc(a, (void **) &d->skip, sizeof(uint64_t) * nq, "skips", err)) != KD_OK))
		return st;
	if (set->stride != set->dim)
	{
		packed = (double *) malloc(sizeof(double) * set->dim * set->n);
		if (packed == NULL)
			return kde_set_error(err, KD_ERR_NOMEM, -1,
								 "out of memory packing %lld vectors",
								 (long long) set->n);
		for (int64_t i = 0; i < set->n; i++)
			memcpy(packed + i * set->dim, set->coords + i * set->stride,
				   sizeof(double) * set->dim);
		pts = packed;
	}
	if ((e = kdc_to_device((void *) d->pts, pts, sizeof(double) * set->dim * set->n, exec)) != cudaSuccess ||
		(set->refs && (e = kdc_to_device((void *) d->refs, set->refs, sizeof(uint64_t) * set->n, exec)) != cudaSuccess) ||
		(nq > 0 && (e = kdc_to_device((void *) d->qs, queries, sizeof(double) * set->dim * nq, exec)) != cudaSuccess) ||
		(skip && (e = kdc_to_device((void *) d->skip, skip, sizeof(uint64_t) * nq, exec)) != cudaSuccess))
		st = kdc_cuda_error(err, e, "copying vectors to the device");
	free(packed);
	if (st == KD_OK && metric == KD_METRIC_COSINE)
	{
		if ((st = kdc_alloc(a, (void **) &d->pnorm, sizeof(double) * set->n, "norms", err)) != KD_OK ||
			(st = kdc_alloc(a, (void **) &d->qnorm, sizeof(double) * nq, "norms", err)) != KD_OK)
			return st;
		flat_norms <<< kdc_blocks(set->n), KDC_BLOCK >>> (d->pts, set->n, set->dim, d->pnorm);
		flat_norms <<< kdc_blocks(nq), KDC_BLOCK >>> (d->qs, nq, set->dim, d->qnorm);
		if ((e = cudaGetLastError()) != cudaSuccess)
			st = kdc_cuda_error(err, e, "summing the vectors' norms");
	}
	return st;
}

/* Copy queries idx[0..m) of d (and their skips) into qs and skip. */
__global__ void
flat_gather(FlatDev d, const int64_t *idx, int64_t m, double *qs,
			uint64_t *skip)
{
	int64_t		i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= m)
		return;
	for (int c = 0; c < d.dim; c++)
		qs[i * d.dim + c] = d.qs[idx[i] * d.dim + c];
	if (skip)
		skip[i] = d.skip[idx[i]];
}

/* Put sub's answers for queries idx[0..m) back in d's places. */
__global__ void
flat_scatter(FlatDev d, FlatDev sub, const int64_t *idx, int64_t m)
{
	int64_t		i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= m)
		return;
	for (int j = 0; j < sub.count[i]; j++)
		d.res[idx[i] * d.k + j] = sub.res[i * d.k + j];
	d.count[idx[i]] = sub.count[i];
}

/*
 * The exact tiles' kNN, for every query of d when idx is NULL, else for
 * queries idx[0..m) only (gathered into a call of their own and put back).
 */
static KdStatus
flat_exact_knn(int metric, const FlatDev *d, const int64_t *idx, int64_t m,
			   KdcAllocs *a, const KdExec *exec, KdError *err)
{
	FlatDev		sub = *d;
	int64_t    *d_idx = NULL;
	int64_t		slice = 256;
	KdStatus	st;
	cudaError_t e;

	if (idx != NULL)
	{
		sub.nq = m;
		if ((st = kdc_alloc(a, (void **) &d_idx, sizeof(int64_t) * m, "rechecks", err)) != KD_OK ||
			(st = kdc_alloc(a, (void **) &sub.qs, sizeof(double) * d->dim * m, "rechecks", err)) != KD_OK ||
			(d->skip && (st = kdc_alloc(a, (void **) &sub.skip, sizeof(uint64_t) * m, "rechecks", err)) != KD_OK) ||
			(st = kdc_alloc(a, (void **) &sub.res, sizeof(KdNeighbor) * d->k * m, "rechecks", err)) != KD_OK ||
			(st = kdc_alloc(a, (void **) &sub.count, sizeof(int32_t) * m, "rechecks", err)) != KD_OK)
			return st;
		if ((e = cudaMemcpy(d_idx, idx, sizeof(int64_t) * m, cudaMemcpyHostToDevice)) != cudaSuccess)
			return kdc_cuda_error(err, e, "copying rechecks to the device");
		flat_gather <<< kdc_blocks(m), KDC_BLOCK >>> (*d, d_idx, m,
													  (double *) sub.qs,
													  (uint64_t *) sub.skip);
	}
	st = kdc_run_paced(exec, d->n, &slice, "flat kNN", err,
					   [&](int64_t start, int64_t n) {
						   flat_launch<FLAT_KNN>(metric, sub, start, n);
					   });
	if (st == KD_OK && idx != NULL)
	{
		flat_scatter <<< kdc_blocks(m), KDC_BLOCK >>> (*d, sub, d_idx, m);
		if ((e = cudaGetLastError()) != cudaSuccess)
			st = kdc_cuda_error(err, e, "placing rechecked answers");
	}
	return st;
}

/*
 * The matrix-form filter's kNN (flat_filter.cu), and the exact tiles' for
 * the queries it leaves undecided.
 */
static KdStatus
flat_filtered_knn(const FlatDev *d, KdcAllocs *a, const KdExec *exec,
				  KdError *err)
{
	uint8_t    *recheck = (uint8_t *) malloc(d->nq);
	int64_t    *idx = NULL;
	int64_t		m = 0;
	KdStatus	st;

	if (recheck == NULL)
		return kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
	st = kdc_flat_filter_knn(d, recheck, &m, a, exec, err);
	if (st == KD_OK && m > 0)
	{
		idx = (int64_t *) malloc(sizeof(int64_t) * m);
		if (idx == NULL)
			st = kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
		else
		{
			m = 0;
			for (int64_t q = 0; q < d->nq; q++)
				if (recheck[q])
					idx[m++] = q;
			st = flat_exact_knn(KD_METRIC_L2, d, idx, m, a, exec, err);
		}
	}
	if (st == KD_OK && exec->times)
	{
		exec->times->flat_filtered += d->nq;
		exec->times->flat_rechecked += m;
	}
	free(idx);
	free(recheck);
	return st;
}

/* d's queries from the first-th on. */
static FlatDev
flat_tail(const FlatDev *d, int64_t first)
{
	FlatDev		rest = *d;

	rest.qs += first * d->dim;
	rest.nq -= first;
	if (d->skip)
		rest.skip += first;
	rest.res += first * d->k;
	rest.count += first;
	return rest;
}

/*
 * Whether a kNN call of nq queries against n vectors under metric tries a
 * vantage-point tree (kd_metric.h's rule, or exec's choice).
 */
static bool
flat_tree_tried(KdMetric metric, int64_t n, int64_t nq, const KdExec *exec)
{
	KdTreeUse	use = exec ? exec->vector_tree : KD_TREE_AUTO;

	if (metric == KD_METRIC_COSINE || use == KD_TREE_NEVER || n == 0)
		return false;
	return use == KD_TREE_ALWAYS ||
		(n >= KD_VP_GPU_MIN_ROWS && nq >= KD_VP_GPU_MIN_QUERIES);
}

/* Rows i * n / m of d's vectors, i < m, into pts and refs. */
__global__ void
flat_pilot_rows(FlatDev d, int64_t m, double *pts, uint64_t *refs)
{
	int64_t		e = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	int64_t		i = e / d.dim;
	int64_t		src = i * d.n / m;

	if (i >= m)
		return;
	pts[e] = d.pts[src * d.dim + e % d.dim];
	if (e % d.dim == 0)
		refs[i] = d.refs[src];
}

/*
 * The share of the rows that a pilot tree's searches of d's first
 * KD_VP_GPU_PILOT_QUERIES queries compare: a tree of
 * KD_VP_GPU_PILOT_ROWS rows taken evenly from d's, which foretells the
 * whole tree's pruning at a small cost.  Their answers in d are left for
 * the real search to overwrite.
 */
static KdStatus
flat_pilot_share(KdMetric metric, const FlatDev *d, double *share,
				 const KdExec *exec, KdError *err)
{
	FlatDev		pilot = *d;
	KdcAllocs	a = {0};
	VpDev		t;
	int64_t		m = KD_VP_GPU_PILOT_ROWS;
	int64_t		compared = 0;
	KdStatus	st;
	cudaError_t e;

	pilot.n = m;
	pilot.nq = d->nq < KD_VP_GPU_PILOT_QUERIES ? d->nq : KD_VP_GPU_PILOT_QUERIES;
	if ((st = kdc_alloc(&a, (void **) &pilot.pts, sizeof(double) * d->dim * m, "a pilot", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &pilot.refs, sizeof(uint64_t) * m, "a pilot", err)) != KD_OK)
		goto done;
	flat_pilot_rows <<< kdc_blocks(m * d->dim), KDC_BLOCK >>> (*d, m, (double *) pilot.pts,
															   (uint64_t *) pilot.refs);
	if ((e = cudaGetLastError()) != cudaSuccess)
	{
		st = kdc_cuda_error(err, e, "taking a pilot's rows");
		goto done;
	}
	if ((st = kdc_vp_build_dev(pilot.pts, m, d->dim, metric, KD_VP_GPU_LEAF_ROWS,
							   &t, NULL, &a, exec, err)) == KD_OK &&
		(st = kdc_vp_knn_dev(&pilot, &t, metric, &compared, &a, exec, err)) == KD_OK)
		*share = (double) compared / ((double) pilot.nq * (double) m);
done:
	kdc_free_all(&a);
	return st;
}

/*
 * The kNN of d's queries through a vantage-point tree of its vectors built
 * on the device, where a pilot tree prunes (flat_pilot_share): the first
 * KD_VP_GPU_SAMPLE, and the rest too when those compared few enough of
 * the rows (kde_vp_gpu_pays); every query when exec asks for the tree; *done gets the queries answered, which the tiles leave out.  The
 * tree lives in device memory of its own, beside the call's: where there
 * is no room for it, the tiles answer every query (unless exec asks for
 * the tree).
 */
static KdStatus
flat_tree_knn(KdMetric metric, const FlatDev *d, int64_t *done,
			  const KdExec *exec, KdError *err)
{
	bool		always = exec && exec->vector_tree == KD_TREE_ALWAYS;
	FlatDev		head = *d;
	KdcAllocs	a = {0};
	VpDev		t;
	int64_t		compared = 0;
	size_t		held;
	size_t		budget;
	double		share;
	KdStatus	st;

	*done = 0;
	held = sizeof(double) * d->dim * (size_t) (d->n + d->nq) +
		sizeof(uint64_t) * (size_t) d->n +
		(sizeof(KdNeighbor) * d->k + sizeof(int32_t)) * (size_t) d->nq;
	if ((st = kdc_budget(exec, held, &budget, err)) != KD_OK)
		return st;
	if (!always && kdc_vp_bytes(d->n, KD_VP_GPU_LEAF_ROWS) > budget)
		return KD_OK;
	if (!always && d->n >= 2 * KD_VP_GPU_PILOT_ROWS)
	{
		double		pilot;

		st = flat_pilot_share(metric, d, &pilot, exec, err);
		if (st == KD_ERR_GPU_NOMEM)
			return KD_OK;
		if (st != KD_OK)
			return st;
		if (exec && exec->times)
		{
			exec->times->flat_piloted++;
			exec->times->flat_piloted_share += pilot;
		}
		if (pilot > KD_VP_GPU_PILOT_SHARE)
			return KD_OK;
	}
	st = kdc_vp_build_dev(d->pts, d->n, d->dim, metric, KD_VP_GPU_LEAF_ROWS,
						  &t, NULL, &a, exec, err);
	if (st == KD_ERR_GPU_NOMEM && !always)
	{
		/* no room for the tree: the tiles answer, in the call's memory */
		kdc_free_all(&a);
		return KD_OK;
	}
	if (st != KD_OK)
		goto done;
	if (!always && head.nq > KD_VP_GPU_SAMPLE)
		head.nq = KD_VP_GPU_SAMPLE;
	if ((st = kdc_vp_knn_dev(&head, &t, metric, &compared, &a, exec, err)) != KD_OK)
		goto done;
	*done = head.nq;
	share = (double) compared / ((double) head.nq * (double) d->n);
	if (head.nq < d->nq && kde_vp_gpu_pays(share, metric, d->dim))
	{
		FlatDev		rest = flat_tail(d, head.nq);

		if ((st = kdc_vp_knn_dev(&rest, &t, metric, NULL, &a, exec, err)) != KD_OK)
			goto done;
		*done = d->nq;
	}
	if (exec && exec->times)
	{
		exec->times->flat_tree += *done;
		exec->times->flat_sampled += head.nq;
		exec->times->flat_sampled_share += share * head.nq;
	}
done:
	kdc_free_all(&a);
	return st;
}

/* See kd_gpu_abi.h: kde_flat_knn on the selected device. */
KdStatus
kdc_flat_knn(const KdVectors *set, KdMetric metric, const double *queries,
			 int64_t nq, int k, const uint64_t *skip, KdNeighbor *out,
			 int32_t *count, const KdExec *exec, KdError *err)
{
	KdcAllocs	a = {0};
	FlatDev		d;
	int			cnt = set->n < k ? (int) set->n : k;
	bool		filtered = kde_flat_filtered(metric, set->dim);
	bool		tree = flat_tree_tried(metric, set->n, nq, exec);
	int64_t		answered = 0;
	size_t		extra = (sizeof(KdNeighbor) * k + sizeof(int32_t)) * (size_t) nq;
	KdStatus	st;

	if ((st = kdc_check_k(k, err)) != KD_OK)
		return st;
	if (nq == 0 || cnt == 0)
	{
		for (int64_t q = 0; q < nq; q++)
			count[q] = 0;
		return kde_flat_check(set->coords, set->n, set->dim, set->stride,
							  metric, "vector", err);
	}
	if (filtered)
		extra += kdc_flat_filter_bytes(set->n, nq, set->dim, k);
	if ((st = kdc_flat_upload(set, metric, queries, nq, skip, extra,
						  &d, &a, exec, err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.res, sizeof(KdNeighbor) * k * nq, "results", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.count, sizeof(int32_t) * nq, "counts", err)) != KD_OK)
		goto done;
	d.k = k;
	if (tree && (st = flat_tree_knn(metric, &d, &answered, exec, err)) != KD_OK)
		goto done;
	if (answered < nq)
	{
		FlatDev		rest = flat_tail(&d, answered);

		st = filtered ? flat_filtered_knn(&rest, &a, exec, err) :
			flat_exact_knn(metric, &rest, NULL, 0, &a, exec, err);
	}
	if (st == KD_OK)
		st = kdc_answers_to_host(d.res, d.count, nq, k, cnt, out, count, exec, err);
done:
	kdc_free_all(&a);
	return st;
}

/* Free a radius result's host arrays. */
static void
flat_result_free(KdRangeResult *res)
{
	free(res->offsets);
	free(res->hits);
	res->offsets = NULL;
	res->hits = NULL;
}

/*
 * See kd_gpu_abi.h: kde_flat_radius on the selected device, in two passes
 * (the hits counted, then written at their offsets), each query's hits in
 * the vectors' order.
 */
KdStatus
kdc_flat_radius(const KdVectors *set, KdMetric metric, const double *centers,
				int64_t nq, const double *radii, int64_t nradii,
				KdRangeResult *res, const KdExec *exec, KdError *err)
{
	KdcAllocs	a = {0};
	FlatDev		d;
	int64_t		slice = 256;
	size_t		budget;
	KdStatus	st;
	cudaError_t e;

	memset(res, 0, sizeof(*res));
	if (nradii != 1 && nradii != nq)
		return kde_set_error(err, KD_ERR_ARG, -1, "%lld radii for %lld queries",
							 (long long) nradii, (long long) nq);
	for (int64_t i = 0; i < nradii; i++)
		if (!(radii[i] >= 0))
			return kde_set_error(err, KD_ERR_ARG, i,
								 "radius %lld is not a number >= 0", (long long) i);
	res->nq = nq;
	res->offsets = (int64_t *) calloc((size_t) nq + 1, sizeof(int64_t));
	if (res->offsets == NULL)
		return kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
	if (nq == 0 || set->n == 0)
	{
		res->hits = (KdNeighbor *) malloc(1);
		if ((st = kde_flat_check(set->coords, set->n, set->dim, set->stride,
								 metric, "vector", err)) != KD_OK)
			flat_result_free(res);
		return st;
	}
	if ((st = kdc_flat_upload(set, metric, centers, nq, NULL,
						  sizeof(double) * nradii + sizeof(int64_t) * (2 * nq + 1),
						  &d, &a, exec, err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.radii, sizeof(double) * nradii, "radii", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.offsets, sizeof(int64_t) * (nq + 1), "offsets", err)) != KD_OK)
		goto done;
	d.nradii = nradii;
	if ((e = cudaMemcpy((void *) d.radii, radii, sizeof(double) * nradii,
						cudaMemcpyHostToDevice)) != cudaSuccess ||
		(e = cudaMemset(d.offsets, 0, sizeof(int64_t) * (nq + 1))) != cudaSuccess)
	{
		st = kdc_cuda_error(err, e, "copying radii to the device");
		goto done;
	}
	st = kdc_run_paced(exec, set->n, &slice, "flat radius count", err,
					   [&](int64_t start, int64_t n) {
						   flat_launch<FLAT_COUNT>(metric, d, start, n);
					   });
	if (st != KD_OK)
		goto done;
	if ((e = cudaMemcpy(res->offsets, d.offsets, sizeof(int64_t) * (nq + 1),
						cudaMemcpyDeviceToHost)) != cudaSuccess)
	{
		st = kdc_cuda_error(err, e, "copying counts to the host");
		goto done;
	}
	for (int64_t q = 0; q < nq; q++)
		res->offsets[q + 1] += res->offsets[q];
	if ((st = kdc_budget(exec, 0, &budget, err)) != KD_OK)
		goto done;
	if (sizeof(KdNeighbor) * (size_t) res->offsets[nq] > budget)
	{
		st = kde_set_error(err, KD_ERR_GPU_NOMEM, -1,
						   "%lld flat radius hits need %zu MB of device memory, %zu MB available",
						   (long long) res->offsets[nq],
						   (sizeof(KdNeighbor) * (size_t) res->offsets[nq]) >> 20,
						   budget >> 20);
		goto done;
	}
	res->hits = (KdNeighbor *) malloc(sizeof(KdNeighbor) * (size_t) res->offsets[nq] + 1);
	if (res->hits == NULL)
	{
		st = kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory for %lld radius hits",
						   (long long) res->offsets[nq]);
		goto done;
	}
	if ((st = kdc_alloc(&a, (void **) &d.hits, sizeof(KdNeighbor) * res->offsets[nq] + 1,
						"radius hits", err)) != KD_OK)
		goto done;
	if ((e = cudaMemcpy(d.offsets, res->offsets, sizeof(int64_t) * (nq + 1),
						cudaMemcpyHostToDevice)) != cudaSuccess)
	{
		st = kdc_cuda_error(err, e, "copying offsets to the device");
		goto done;
	}
	if ((st = kdc_alloc(&a, (void **) &d.cursor, sizeof(int64_t) * nq, "cursors", err)) != KD_OK)
		goto done;
	if ((e = cudaMemcpy(d.cursor, d.offsets, sizeof(int64_t) * nq,
						cudaMemcpyDeviceToDevice)) != cudaSuccess)
	{
		st = kdc_cuda_error(err, e, "placing the radius hits");
		goto done;
	}
	slice = 256;
	st = kdc_run_paced(exec, set->n, &slice, "flat radius fill", err,
					   [&](int64_t start, int64_t n) {
						   flat_launch<FLAT_FILL>(metric, d, start, n);
					   });
	if (st == KD_OK &&
		(e = kdc_to_host(res->hits, d.hits, sizeof(KdNeighbor) * res->offsets[nq],
						 exec)) != cudaSuccess)
		st = kdc_cuda_error(err, e, "copying radius hits to the host");
done:
	kdc_free_all(&a);
	if (st != KD_OK)
		flat_result_free(res);
	return st;
}
