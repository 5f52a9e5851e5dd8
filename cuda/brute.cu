/*
 * brute.cu
 *	  Brute-force kNN over unindexed points (the engine's kd_brute_knn).
 *
 * Design.  One thread per query; each block stages tiles of KDC_BLOCK points
 * (coordinates and references) in shared memory and every thread offers
 * each point of the tile to its bounded max-heap (the same KdcHeap as the
 * tree search, so ties fall on the reference in the same way).  Long scans
 * are cut into point ranges of BRUTE_POINTS: between ranges the heap is
 * parked in the query's output slot and picked up by the next launch, so
 * each launch stays short and the interrupt callback is polled between
 * them.  The last range sorts the heap into (d2, ref) order.
 */
#include "common.cuh"

/* points scanned by one launch */
#define BRUTE_POINTS ((int64_t) 1 << 20)

/*
 * Offer points [p0, p1) of n to queries [qstart, qstart + count); heaps
 * with K slots live in local memory (K = 0: in out), and are parked in out
 * between launches.
 */
template <int K>
static __global__ void __launch_bounds__(KDC_BLOCK)
brute_kernel(const double *pts, const uint64_t *refs, int64_t n, int dim,
			 int64_t p0, int64_t p1, const double *queries, int64_t qstart,
			 int64_t count, int k, KdNeighbor *out)
{
	__shared__ double tile[KDC_BLOCK * KD_MAX_DIM];
	__shared__ uint64_t tile_ref[KDC_BLOCK];
	KdNeighbor	local[K > 0 ? K : 1];
	int64_t		qi = qstart + blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	bool		active = qi < qstart + count;
	double		q[KD_MAX_DIM];
	KdcHeap		h;

	h.h = K > 0 ? local : out + qi * k;
	h.k = k;
	h.size = (int) (p0 < k ? p0 : k);
	if (active)
	{
		kdc_load_point(q, queries + qi * dim, dim);
		if (K > 0)
			for (int c = 0; c < h.size; c++)
				local[c] = out[qi * k + c];
	}
	for (int64_t t0 = p0; t0 < p1; t0 += KDC_BLOCK)
	{
		int			m = p1 - t0 < KDC_BLOCK ? (int) (p1 - t0) : KDC_BLOCK;

		__syncthreads();
		if (threadIdx.x < m)
		{
			for (int j = 0; j < dim; j++)
				tile[threadIdx.x * KD_MAX_DIM + j] = pts[(t0 + threadIdx.x) * dim + j];
			tile_ref[threadIdx.x] = refs[t0 + threadIdx.x];
		}
		__syncthreads();
		if (active)
			for (int c = 0; c < m; c++)
			{
				double		d2 = kdc_dist2(q, tile + c * KD_MAX_DIM, dim);

				if (d2 <= h.worst())
					h.push(d2, tile_ref[c]);
			}
	}
	if (!active)
		return;
	if (p1 == n)
		h.sort();
	if (K > 0)
		for (int c = 0; c < h.size; c++)
			out[qi * k + c] = local[c];
}

/* Launch the kernel instance for k on one slice. */
static void
brute_launch(const double *pts, const uint64_t *refs, int64_t n, int dim,
			 int64_t p0, int64_t p1, const double *queries, int64_t start,
			 int64_t count, int k, KdNeighbor *out)
{
	unsigned int nb = kdc_blocks(count);

	if (k <= 8)
		brute_kernel<8> <<< nb, KDC_BLOCK >>> (pts, refs, n, dim, p0, p1, queries, start, count, k, out);
	else if (k <= 16)
		brute_kernel<16> <<< nb, KDC_BLOCK >>> (pts, refs, n, dim, p0, p1, queries, start, count, k, out);
	else if (k <= 32)
		brute_kernel<32> <<< nb, KDC_BLOCK >>> (pts, refs, n, dim, p0, p1, queries, start, count, k, out);
	else if (k <= 64)
		brute_kernel<64> <<< nb, KDC_BLOCK >>> (pts, refs, n, dim, p0, p1, queries, start, count, k, out);
	else
		brute_kernel<0> <<< nb, KDC_BLOCK >>> (pts, refs, n, dim, p0, p1, queries, start, count, k, out);
}

/* Brute-force kNN; see KdCudaApi.brute_knn. */
KdStatus
kdc_brute_knn(const double *points, const uint64_t *refs, int64_t n, int dim,
			  const double *queries, int64_t nq, int k, KdNeighbor *out,
			  int32_t *count, const KdExec *exec, KdError *err)
{
	KdcAllocs	pa = {0};
	double	   *d_pts;
	uint64_t   *d_refs;
	size_t		budget;
	size_t		per_query = sizeof(double) * dim + sizeof(KdNeighbor) * k;
	int64_t		chunk;
	int64_t		slice = 1024;
	int			cnt = n < k ? (int) n : k;
	KdStatus	st;
	cudaError_t e;

	if (dim < 1 || dim > KD_MAX_DIM)
		return kd_set_error(err, KD_ERR_ARG, -1,
						 "dimension %d is out of range 1..%d", dim, KD_MAX_DIM);
	if ((st = kdc_check_k(k, err)) != KD_OK)
		return st;
	if (n < 0 || nq < 0)
		return kd_set_error(err, KD_ERR_ARG, -1, "negative point or query count");
	if ((st = kdc_begin(err)) != KD_OK ||
		(st = kdc_budget(exec, 0, &budget, err)) != KD_OK)
		return st;
	if ((size_t) n * (sizeof(double) * dim + sizeof(uint64_t)) + ((size_t) 4 << 20) > budget)
		return kd_set_error(err, KD_ERR_GPU_NOMEM, -1,
						 "%lld points do not fit in device memory (%zu MB available)",
						 (long long) n, budget >> 20);
	budget -= (size_t) n * (sizeof(double) * dim + sizeof(uint64_t)) + ((size_t) 4 << 20);
	chunk = (int64_t) (budget / per_query);
	if (chunk > ((int64_t) 1 << 30))
		chunk = (int64_t) 1 << 30;
	if (chunk < 1 && nq > 0)
		return kd_set_error(err, KD_ERR_GPU_NOMEM, -1,
						 "not enough device memory for one query");

	if ((st = kdc_alloc(&pa, (void **) &d_pts, sizeof(double) * dim * n, "points", err)) != KD_OK ||
		(st = kdc_alloc(&pa, (void **) &d_refs, sizeof(uint64_t) * n, "references", err)) != KD_OK)
		goto done;
	if ((st = kdc_upload_points(points, refs, n, dim, d_pts, d_refs, &pa, exec, err)) != KD_OK)
		goto done;

	for (int64_t c0 = 0; c0 < nq && st == KD_OK; c0 += chunk)
	{
		KdcAllocs	a = {0};
		int64_t		m = nq - c0 < chunk ? nq - c0 : chunk;
		double	   *d_q;
		KdNeighbor *d_out;

		if ((st = kdc_alloc(&a, (void **) &d_q, sizeof(double) * dim * m, "queries", err)) != KD_OK ||
			(st = kdc_alloc(&a, (void **) &d_out, sizeof(KdNeighbor) * k * m, "results", err)) != KD_OK)
			goto chunk_done;
		e = kdc_to_device(d_q, queries + c0 * dim, sizeof(double) * dim * m, exec);
		if (e != cudaSuccess)
		{
			st = kdc_cuda_error(err, e, "uploading queries");
			goto chunk_done;
		}
		if ((st = kdc_check_finite(d_q, m, dim, c0, "query point", &a, err)) != KD_OK)
			goto chunk_done;
		for (int64_t p0 = 0; p0 < n && st == KD_OK; p0 += BRUTE_POINTS)
		{
			int64_t		p1 = n - p0 < BRUTE_POINTS ? n : p0 + BRUTE_POINTS;

			st = kdc_run_paced(exec, m, &slice, "a brute-force kNN query", err,
							   [&](int64_t start, int64_t len)
							   {
								   brute_launch(d_pts, d_refs, n, dim, p0, p1,
												d_q, start, len, k, d_out);
							   });
		}
		if (st == KD_OK)
		{
			for (int64_t q = 0; q < m; q++)
				count[c0 + q] = cnt;
			st = kdc_results_to_host(d_out, m, k, cnt, out + c0 * k, exec, err);
		}
chunk_done:
		kdc_free_all(&a);
	}
done:
	kdc_free_all(&pa);
	return st;
}
