/*
 * range.cu
 *	  Radius and box queries against a device tree.
 *
 * Design.  One thread per query walks the tree (kdc_range_search,
 * range_walk.cuh).  Results have a variable size, so each chunk of queries
 * runs twice: a count pass, a CUB exclusive scan of the counts into
 * offsets, then fill passes, batched so that the hits of a batch fit in device memory, each
 * followed by a CUB segmented sort of every query's hits (by ref then,
 * stably, by d2 for radius queries; by ref for box queries) and a copy into
 * the host result, which grows with each chunk.
 */
#include <stdlib.h>

#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include "range_walk.cuh"

/*
 * Count (FILL false: offs[qi] = hits) or write (FILL true) the hits of
 * queries perm[start .. start + count) of a chunk.  Fill writes only queries
 * [qlo, qhi), from offs[qi] - base on.  qb holds box highs, or radii (nradii 1 or per query).
 */
template <bool BOX, bool FILL>
static __global__ void __launch_bounds__(KDC_BLOCK)
range_kernel(KdGpuTree t, const double *qa, const double *qb, bool shared_radius,
			 const uint32_t *perm, int64_t start, int64_t count,
			 int64_t *offs, int64_t qlo, int64_t qhi, int64_t base,
			 uint64_t *hit_ref, double *hit_d2)
{
	int64_t		i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	double		a[KD_MAX_DIM];
	double		b[KD_MAX_DIM];
	int64_t		qi;
	int64_t		c = 0;

	if (i >= count)
		return;
	qi = perm[start + i];
	if (FILL && (qi < qlo || qi >= qhi))
		return;
	kdc_load_point(a, qa + qi * t.dim, t.dim);
	if (BOX)
		kdc_load_point(b, qb + qi * t.dim, t.dim);
	else
		b[0] = qb[shared_radius ? 0 : qi];
	if (FILL)
	{
		int64_t		pos = offs[qi] - base;

		kdc_range_search<BOX>(t, a, b, [&](double d2, int64_t node)
							  {
								  hit_ref[pos + c] = t.refs[node];
								  hit_d2[pos + c] = d2;
								  c++;
							  });
	}
	else
	{
		kdc_range_search<BOX>(t, a, b, [&](double, int64_t) { c++; });
		offs[qi] = c;
	}
}

/* Offsets of the segments of a batch, relative to its first hit. */
static __global__ void
rebase_kernel(const int64_t *offsets, int64_t m, int64_t base, int64_t *out)
{
	int64_t		i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;

	if (i <= m)
		out[i] = offsets[i] - base;
}

/* Interleave sorted hits into KdNeighbor. */
static __global__ void
interleave_kernel(const uint64_t *ref, const double *d2, int64_t m,
				  KdNeighbor *out)
{
	int64_t		i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;

	if (i < m)
	{
		out[i].d2 = d2[i];
		out[i].ref = ref[i];
	}
}

/* Arguments of one range call. */
typedef struct RangeCall
{
	const KdGpuTree *g;
	bool		box;
	const double *qa;			/* centres or lows, host */
	const double *qb;			/* radii or highs, host */
	int64_t		nradii;
	const KdExec *exec;
	KdError    *err;
	int64_t		slice;			/* pacing state */
} RangeCall;

/* Enqueue the count or fill kernel for one slice. */
static void
range_launch(RangeCall *rc, bool fill, const double *d_qa, const double *d_qb,
			 const uint32_t *perm, int64_t start, int64_t count,
			 int64_t *counts, int64_t qlo, int64_t qhi, int64_t base,
			 uint64_t *hit_ref, double *hit_d2)
{
	unsigned int nb = kdc_blocks(count);
	bool		shared = rc->nradii == 1;

	if (rc->box && fill)
		range_kernel<true, true> <<< nb, KDC_BLOCK >>> (*rc->g, d_qa, d_qb, shared, perm, start, count, counts, qlo, qhi, base, hit_ref, hit_d2);
	else if (rc->box)
		range_kernel<true, false> <<< nb, KDC_BLOCK >>> (*rc->g, d_qa, d_qb, shared, perm, start, count, counts, qlo, qhi, base, hit_ref, hit_d2);
	else if (fill)
		range_kernel<false, true> <<< nb, KDC_BLOCK >>> (*rc->g, d_qa, d_qb, shared, perm, start, count, counts, qlo, qhi, base, hit_ref, hit_d2);
	else
		range_kernel<false, false> <<< nb, KDC_BLOCK >>> (*rc->g, d_qa, d_qb, shared, perm, start, count, counts, qlo, qhi, base, hit_ref, hit_d2);
}

/*
 * Fill, sort and copy out the hits of chunk queries [qlo, qhi), whose
 * offsets (chunk-relative, on the device) start at base and whose hits go
 * to host dst.
 */
static KdStatus
range_batch(RangeCall *rc, const double *d_qa, const double *d_qb,
			const uint32_t *d_perm, int64_t m, const int64_t *d_offs,
			int64_t qlo, int64_t qhi, int64_t base, int64_t nhits,
			KdNeighbor *dst)
{
	KdcAllocs	a = {0};
	uint64_t   *ref[2];
	double	   *d2[2];
	int64_t    *seg;
	KdNeighbor *d_out;
	void	   *temp = NULL;
	size_t		temp_bytes = 0;
	size_t		tb;
	int64_t		nseg = qhi - qlo;
	KdStatus	st;
	cudaError_t e = cudaSuccess;

	if (rc->box)
		cub::DeviceSegmentedSort::SortKeys(NULL, temp_bytes, (uint64_t *) NULL,
										   (uint64_t *) NULL, nhits, nseg,
										   (int64_t *) NULL, (int64_t *) NULL);
	else
	{
		cub::DeviceSegmentedSort::StableSortPairs(NULL, temp_bytes, (uint64_t *) NULL,
												  (uint64_t *) NULL, (double *) NULL,
												  (double *) NULL, nhits, nseg,
												  (int64_t *) NULL, (int64_t *) NULL);
		cub::DeviceSegmentedSort::StableSortPairs(NULL, tb, (double *) NULL,
												  (double *) NULL, (uint64_t *) NULL,
												  (uint64_t *) NULL, nhits, nseg,
												  (int64_t *) NULL, (int64_t *) NULL);
		temp_bytes = tb > temp_bytes ? tb : temp_bytes;
	}
	if ((st = kdc_alloc(&a, (void **) &ref[0], sizeof(uint64_t) * nhits, "hits", rc->err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &ref[1], sizeof(uint64_t) * nhits, "hits", rc->err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d2[0], sizeof(double) * nhits, "hits", rc->err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d2[1], sizeof(double) * nhits, "hits", rc->err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d_out, sizeof(KdNeighbor) * nhits, "hits", rc->err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &seg, sizeof(int64_t) * (nseg + 1), "hit offsets", rc->err)) != KD_OK ||
		(st = kdc_alloc(&a, &temp, temp_bytes, "sort space", rc->err)) != KD_OK)
		goto done;
	st = kdc_run_paced(rc->exec, m, &rc->slice, "a range query", rc->err,
					   [&](int64_t start, int64_t len)
					   {
						   range_launch(rc, true, d_qa, d_qb, d_perm, start, len,
										(int64_t *) d_offs, qlo, qhi, base,
										ref[0], d2[0]);
					   });
	if (st != KD_OK)
		goto done;
	rebase_kernel <<< kdc_blocks(nseg + 1), KDC_BLOCK >>> (d_offs + qlo, nseg, base, seg);
	tb = temp_bytes;
	if (rc->box)
	{
		e = cub::DeviceSegmentedSort::SortKeys(temp, tb, ref[0], ref[1], nhits,
											   nseg, seg, seg + 1);
		cudaMemsetAsync(d2[1], 0, sizeof(double) * nhits);
	}
	else
	{
		e = cub::DeviceSegmentedSort::StableSortPairs(temp, tb, ref[0], ref[1],
													  d2[0], d2[1], nhits, nseg,
													  seg, seg + 1);
		tb = temp_bytes;
		if (e == cudaSuccess)
			e = cub::DeviceSegmentedSort::StableSortPairs(temp, tb, d2[1], d2[0],
														  ref[1], ref[0], nhits,
														  nseg, seg, seg + 1);
	}
	if (e != cudaSuccess)
	{
		st = kdc_cuda_error(rc->err, e, "sorting range hits");
		goto done;
	}
	if (rc->box)
		interleave_kernel <<< kdc_blocks(nhits), KDC_BLOCK >>> (ref[1], d2[1], nhits, d_out);
	else
		interleave_kernel <<< kdc_blocks(nhits), KDC_BLOCK >>> (ref[0], d2[0], nhits, d_out);
	if ((st = kdc_sync(rc->exec, "sorting range hits", rc->err)) != KD_OK)
		goto done;
	e = kdc_to_host(dst, d_out, sizeof(KdNeighbor) * nhits, rc->exec);
	if (e != cudaSuccess)
		st = kdc_cuda_error(rc->err, e, "copying range hits to the host");
done:
	kdc_free_all(&a);
	return st;
}

/*
 * One chunk of queries [c0, c0 + m): upload, count, scan, then fill in
 * batches of at most max_hits hits.  Appends to res (whose offsets up to c0
 * are final).
 */
static KdStatus
range_chunk(RangeCall *rc, int64_t c0, int64_t m, int64_t max_hits,
			KdRangeResult *res)
{
	KdcAllocs	a = {0};
	int			dim = rc->g->dim;
	bool		per_query = !rc->box && rc->nradii != 1;
	int64_t		nb_vals = rc->box ? m * dim : (per_query ? m : 1);
	double	   *d_qa;
	double	   *d_qb;
	uint32_t   *d_perm;
	int64_t    *d_counts;
	int64_t    *d_offs;
	int64_t    *offs = NULL;
	void	   *temp = NULL;
	size_t		temp_bytes = 0;
	int64_t		done0 = res->offsets[c0];
	int64_t		total;
	KdNeighbor *hits;
	KdStatus	st;
	cudaError_t e;

	cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, (int64_t *) NULL,
								  (int64_t *) NULL, m + 1);
	if ((st = kdc_alloc(&a, (void **) &d_qa, sizeof(double) * dim * m, "queries", rc->err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d_qb, sizeof(double) * nb_vals, "queries", rc->err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d_perm, sizeof(uint32_t) * m, "query order", rc->err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d_counts, sizeof(int64_t) * (m + 1), "hit counts", rc->err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d_offs, sizeof(int64_t) * (m + 1), "hit offsets", rc->err)) != KD_OK ||
		(st = kdc_alloc(&a, &temp, temp_bytes, "scan space", rc->err)) != KD_OK)
		goto done;
	e = kdc_to_device(d_qa, rc->qa + c0 * dim, sizeof(double) * dim * m, rc->exec);
	if (e == cudaSuccess)
		e = kdc_to_device(d_qb, rc->qb + (rc->box || per_query ? c0 * (rc->box ? dim : 1) : 0),
						  sizeof(double) * nb_vals, rc->exec);
	if (e != cudaSuccess)
	{
		st = kdc_cuda_error(rc->err, e, "uploading queries");
		goto done;
	}
	if ((st = kdc_check_finite(d_qa, m, dim, c0, rc->box ? "box low corner" : "centre",
							   &a, rc->err)) != KD_OK ||
		(rc->box &&
		 (st = kdc_check_finite(d_qb, m, dim, c0, "box high corner", &a, rc->err)) != KD_OK) ||
		(st = kdc_spatial_order(d_qa, m, dim, 0, d_perm, &a, rc->err)) != KD_OK)
		goto done;

	/* count, then scan the counts into chunk-relative offsets */
	cudaMemset(d_counts + m, 0, sizeof(int64_t));
	st = kdc_run_paced(rc->exec, m, &rc->slice, "a range query", rc->err,
					   [&](int64_t start, int64_t len)
					   {
						   range_launch(rc, false, d_qa, d_qb, d_perm, start, len,
										d_counts, 0, 0, 0, NULL, NULL);
					   });
	if (st != KD_OK)
		goto done;
	e = cub::DeviceScan::ExclusiveSum(temp, temp_bytes, d_counts, d_offs, m + 1);
	offs = (int64_t *) malloc(sizeof(int64_t) * (m + 1));
	if (offs == NULL)
	{
		st = kde_set_error(rc->err, KD_ERR_NOMEM, -1, "out of host memory");
		goto done;
	}
	if (e == cudaSuccess)
		e = cudaMemcpy(offs, d_offs, sizeof(int64_t) * (m + 1), cudaMemcpyDeviceToHost);
	if (e != cudaSuccess)
	{
		st = kdc_cuda_error(rc->err, e, "scanning range hit counts");
		goto done;
	}
	total = offs[m];
	for (int64_t q = 1; q <= m; q++)
		res->offsets[c0 + q] = done0 + offs[q];
	hits = (KdNeighbor *) realloc(res->hits, sizeof(KdNeighbor) * (done0 + total) + 1);
	if (hits == NULL)
	{
		st = kde_set_error(rc->err, KD_ERR_NOMEM, -1,
					   "out of host memory for %lld range hits",
					   (long long) (done0 + total));
		goto done;
	}
	res->hits = hits;

	/* fill in batches of queries whose hits fit */
	for (int64_t qlo = 0; qlo < m;)
	{
		int64_t		qhi = qlo;

		while (qhi < m && offs[qhi + 1] - offs[qlo] <= max_hits)
			qhi++;
		if (qhi == qlo)
		{
			st = kde_set_error(rc->err, KD_ERR_GPU_NOMEM, c0 + qlo,
						   "query %lld has %lld hits, more than fit in device memory",
						   (long long) (c0 + qlo),
						   (long long) (offs[qlo + 1] - offs[qlo]));
			goto done;
		}
		if (offs[qhi] > offs[qlo] &&
			(st = range_batch(rc, d_qa, d_qb, d_perm, m, d_offs, qlo, qhi,
							  offs[qlo], offs[qhi] - offs[qlo],
							  res->hits + done0 + offs[qlo])) != KD_OK)
			goto done;
		qlo = qhi;
	}
done:
	free(offs);
	kdc_free_all(&a);
	return st;
}

/* Radius or box queries: validation, chunking, result allocation. */
static KdStatus
range_run(RangeCall *rc, int64_t nq, KdRangeResult *res)
{
	const KdGpuTree *g = rc->g;
	size_t		budget;
	size_t		per_query;
	int64_t		chunk;
	int64_t		max_hits;
	KdStatus	st;

	res->nq = nq;
	res->offsets = NULL;
	res->hits = NULL;
	if (g == NULL)
		return kde_set_error(rc->err, KD_ERR_ARG, -1, "no device tree");
	if (nq < 0)
		return kde_set_error(rc->err, KD_ERR_ARG, -1, "negative query count");
	if (!rc->box)
	{
		if (rc->nradii != 1 && rc->nradii != nq)
			return kde_set_error(rc->err, KD_ERR_ARG, -1,
							 "%lld radii given for %lld queries",
							 (long long) rc->nradii, (long long) nq);
		for (int64_t i = 0; i < rc->nradii; i++)
			if (!(rc->qb[i] >= 0))
				return kde_set_error(rc->err, KD_ERR_ARG, i,
								 "radius %g is negative or NaN", rc->qb[i]);
	}
	res->offsets = (int64_t *) calloc((size_t) nq + 1, sizeof(int64_t));
	if (res->offsets == NULL)
		return kde_set_error(rc->err, KD_ERR_NOMEM, -1, "out of host memory");
	if ((st = kdc_begin(g->device, rc->err)) != KD_OK ||
		(st = kdc_budget(rc->exec, kdc_tree_size(g),
						 &budget, rc->err)) != KD_OK)
		goto fail;

	/* half the budget for a chunk of queries, half for a batch of hits */
	per_query = sizeof(double) * g->dim * 2 + sizeof(uint32_t) +
		KDC_ORDER_BYTES(1) - ((size_t) 1 << 20) + 3 * sizeof(int64_t);
	chunk = (int64_t) (budget / 2 > ((size_t) 4 << 20) ?
					   (budget / 2 - ((size_t) 4 << 20)) / per_query : 0);
	if (chunk > ((int64_t) 1 << 30))
		chunk = (int64_t) 1 << 30;
	max_hits = (int64_t) (budget / 2 / 64);
	if ((chunk < 1 || max_hits < 1) && nq > 0)
	{
		st = kde_set_error(rc->err, KD_ERR_GPU_NOMEM, -1,
					   "not enough device memory for range queries (%zu MB available)",
					   budget >> 20);
		goto fail;
	}
	for (int64_t c0 = 0; c0 < nq; c0 += chunk)
		if ((st = range_chunk(rc, c0, nq - c0 < chunk ? nq - c0 : chunk,
							  max_hits, res)) != KD_OK)
			goto fail;
	return KD_OK;

fail:
	free(res->offsets);
	free(res->hits);
	res->offsets = NULL;
	res->hits = NULL;
	return st;
}

/* Radius queries; see KdCudaApi.radius. */
KdStatus
kdc_radius(const KdGpuTree *gtree, const double *centers, int64_t nq,
		   const double *radii, int64_t nradii, KdRangeResult *res,
		   const KdExec *exec, KdError *err)
{
	RangeCall	rc = {gtree, false, centers, radii, nradii, exec, err, 1 << 16};

	return range_run(&rc, nq, res);
}

/* Box queries; see KdCudaApi.box. */
KdStatus
kdc_box(const KdGpuTree *gtree, const double *lows, const double *highs,
		int64_t nq, KdRangeResult *res, const KdExec *exec, KdError *err)
{
	RangeCall	rc = {gtree, true, lows, highs, 1, exec, err, 1 << 16};

	return range_run(&rc, nq, res);
}
