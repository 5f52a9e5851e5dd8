/*
 * flat.cu
 *	  Exact kNN of vectors of any dimension on the GPU (kde_flat_knn's
 *	  contract, kdtree.h): every query compared with every vector, in
 *	  float8, with the CPU's bits.
 *
 * A block takes FLAT_BQ queries and sweeps all the vectors in tiles of
 * FLAT_BP; its threads each sum a 4 x 4 patch of the tile's distances,
 * reading a slice of FLAT_DK coordinates of the queries and vectors from
 * shared memory at a time, term by term in dimension order through
 * kd_metric.h's helpers (so the sums are the CPU's, built with
 * --fmad=false).  Each query's k best (distance, ref) pairs live in a
 * bounded max-heap in its output slot, which one thread per query offers
 * the tile's distances to (but the vector it is to skip); a last pass sorts
 * each heap.  Launches are paced by query slices (kdc_run_paced), polling
 * for a cancel between them.  The vectors (packed on the host first when
 * their rows carry more than their coordinates) and queries are copied to
 * the device for the call, and all of them must fit in its memory budget
 * (else KD_ERR_GPU_NOMEM, which AUTO answers on the CPU).
 */
#include <string.h>

#include "common.cuh"
#include "../src/engine/kd_metric.h"

#define FLAT_BQ 64				/* queries of a block */
#define FLAT_BP 64				/* vectors of a tile */
#define FLAT_DK 8				/* coordinates read into shared memory at once */
#define FLAT_THREADS 256		/* 16 x 16, each a 4 x 4 patch */

/* What the kernels read. */
typedef struct FlatDev
{
	const double *pts;			/* n * dim */
	const uint64_t *refs;
	int64_t		n;
	int			dim;
	const double *qs;			/* nq * dim */
	int64_t		nq;
	int			k;
	const uint64_t *skip;		/* nq refs not to take, or NULL */
	KdNeighbor *res;			/* nq * k: heaps, then sorted lists */
	int32_t    *count;			/* nq: the neighbours each found */
} FlatDev;

/* Queries [q0, q0 + nslice) of d, each against every vector, by blocks. */
template <int M>
__global__ void
__launch_bounds__(FLAT_THREADS)
flat_kernel(FlatDev d, int64_t q0, int64_t nslice)
{
	__shared__ double qtile[FLAT_DK][FLAT_BQ];
	__shared__ double ptile[FLAT_DK][FLAT_BP];
	__shared__ double dist[FLAT_BQ][FLAT_BP + 1];
	const int	tx = threadIdx.x % 16;
	const int	ty = threadIdx.x / 16;
	const int64_t qb = q0 + (int64_t) blockIdx.x * FLAT_BQ;
	const int	dim = d.dim;
	KdcHeap		heap;

	if (qb >= q0 + nslice)
		return;
	if (threadIdx.x < FLAT_BQ && qb + threadIdx.x < q0 + nslice)
	{
		heap.h = d.res + (qb + threadIdx.x) * d.k;
		heap.k = d.k;
		heap.size = 0;
	}
	for (int64_t p0 = 0; p0 < d.n; p0 += FLAT_BP)
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
				int			r = l % FLAT_BQ;
				int64_t		q = qb + r;
				int64_t		p = p0 + r;

				qtile[c][r] = (c0 + c < dim && q < q0 + nslice) ?
					d.qs[q * dim + c0 + c] : 0.0;
				ptile[c][r] = (c0 + c < dim && p < d.n) ?
					d.pts[p * dim + c0 + c] : 0.0;
			}
			__syncthreads();
			for (int c = 0; c < FLAT_DK && c0 + c < dim; c++)
				for (int i = 0; i < 4; i++)
				{
					double		x = qtile[c][ty + 16 * i];

					for (int j = 0; j < 4; j++)
						kde_metric_add(M, &acc[i][j], x, ptile[c][tx + 16 * j]);
				}
			__syncthreads();
		}
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 4; j++)
				dist[ty + 16 * i][tx + 16 * j] = kde_metric_finish(M, &acc[i][j]);
		__syncthreads();
		if (threadIdx.x < FLAT_BQ && qb + threadIdx.x < q0 + nslice)
		{
			int64_t		end = d.n - p0 < FLAT_BP ? d.n - p0 : FLAT_BP;
			uint64_t	skip = d.skip ? d.skip[qb + threadIdx.x] : 0;

			for (int j = 0; j < end; j++)
				if (d.skip == NULL || d.refs[p0 + j] != skip)
					heap.push(dist[threadIdx.x][j], d.refs[p0 + j]);
		}
		__syncthreads();
	}
	if (threadIdx.x < FLAT_BQ && qb + threadIdx.x < q0 + nslice)
	{
		heap.sort();
		d.count[qb + threadIdx.x] = heap.size;
	}
}

/* Launch the kernel of d's metric for a slice of queries. */
static void
flat_launch(int metric, const FlatDev &d, int64_t q0, int64_t count)
{
	unsigned	blocks = (unsigned) ((count + FLAT_BQ - 1) / FLAT_BQ);

	switch (metric)
	{
		case KD_METRIC_L2:
			flat_kernel<0> <<< blocks, FLAT_THREADS >>> (d, q0, count);
			break;
		case KD_METRIC_L1:
			flat_kernel<1> <<< blocks, FLAT_THREADS >>> (d, q0, count);
			break;
		case KD_METRIC_LINF:
			flat_kernel<2> <<< blocks, FLAT_THREADS >>> (d, q0, count);
			break;
		default:
			flat_kernel<3> <<< blocks, FLAT_THREADS >>> (d, q0, count);
			break;
	}
}

/* See kd_gpu_abi.h: kde_flat_knn on the selected device. */
KdStatus
kdc_flat_knn(const KdVectors *set, KdMetric metric, const double *queries,
			 int64_t nq, int k, const uint64_t *skip, KdNeighbor *out,
			 int32_t *count, const KdExec *exec, KdError *err)
{
	KdcAllocs	a = {0};
	FlatDev		d;
	size_t		budget;
	size_t		need;
	int64_t		slice = 256;
	double	   *packed = NULL;
	const double *pts = set->coords;
	int			cnt;
	KdStatus	st;
	cudaError_t e;

	if ((st = kdc_check_k(k, err)) != KD_OK ||
		(st = kde_flat_check(set->coords, set->n, set->dim, set->stride,
							 metric, "vector", err)) != KD_OK ||
		(st = kde_flat_check(queries, nq, set->dim, set->dim, metric, "query",
							 err)) != KD_OK)
		return st;
	cnt = set->n < k ? (int) set->n : k;
	if (nq == 0 || cnt == 0)
	{
		for (int64_t q = 0; q < nq; q++)
			count[q] = 0;
		return KD_OK;
	}
	need = sizeof(double) * set->dim * (size_t) (set->n + nq) +
		sizeof(uint64_t) * (set->n + (skip ? nq : 0)) +
		(sizeof(KdNeighbor) * k + sizeof(int32_t)) * (size_t) nq;
	if ((st = kdc_begin(kdc_device, err)) != KD_OK ||
		(st = kdc_budget(exec, 0, &budget, err)) != KD_OK)
		return st;
	if (need > budget)
		return kde_set_error(err, KD_ERR_GPU_NOMEM, -1,
							 "a flat search of %lld vectors and %lld queries of %d dimensions needs %zu MB of device memory, %zu MB available",
							 (long long) set->n, (long long) nq, set->dim,
							 need >> 20, budget >> 20);
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
	memset(&d, 0, sizeof(d));
	d.n = set->n;
	d.dim = set->dim;
	d.nq = nq;
	d.k = k;
	if ((st = kdc_alloc(&a, (void **) &d.pts, sizeof(double) * set->dim * set->n, "vectors", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.refs, sizeof(uint64_t) * set->n, "refs", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.qs, sizeof(double) * set->dim * nq, "queries", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.res, sizeof(KdNeighbor) * k * nq, "results", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.count, sizeof(int32_t) * nq, "counts", err)) != KD_OK ||
		(skip && (st = kdc_alloc(&a, (void **) &d.skip, sizeof(uint64_t) * nq, "skips", err)) != KD_OK))
		goto done;
	if ((e = kdc_to_device((void *) d.pts, pts, sizeof(double) * set->dim * set->n, exec)) != cudaSuccess ||
		(e = kdc_to_device((void *) d.refs, set->refs, sizeof(uint64_t) * set->n, exec)) != cudaSuccess ||
		(e = kdc_to_device((void *) d.qs, queries, sizeof(double) * set->dim * nq, exec)) != cudaSuccess ||
		(skip && (e = kdc_to_device((void *) d.skip, skip, sizeof(uint64_t) * nq, exec)) != cudaSuccess))
	{
		st = kdc_cuda_error(err, e, "copying vectors to the device");
		goto done;
	}
	st = kdc_run_paced(exec, nq, &slice, "flat kNN", err,
					   [&](int64_t start, int64_t n) {
						   flat_launch(metric, d, start, n);
					   });
	if (st == KD_OK)
		st = kdc_results_to_host(d.res, nq, k, cnt, out, exec, err);
	if (st == KD_OK &&
		(e = cudaMemcpy(count, d.count, sizeof(int32_t) * nq,
						cudaMemcpyDeviceToHost)) != cudaSuccess)
		st = kdc_cuda_error(err, e, "copying counts to the host");
done:
	kdc_free_all(&a);
	free(packed);
	return st;
}
