/*
 * flat_filter.cu
 *	  Exact L2 kNN of vectors through a float8 matrix-form filter: the
 *	  distances |x|^2 + |y|^2 - 2 x.y on the FP64 tensor cores pick each
 *	  query's candidates, and the exact distances (kd_metric.h's, the CPU's
 *	  bits) of those candidates alone decide the answer.
 *
 * The filter's distance is never an answer.  Vectors and queries are first
 * shifted by a centre (the mean of a sample of the vectors, so that the
 * matrix form does not cancel away the digits of data far from the origin),
 * and a block of 128 queries takes the vectors in tiles of 128, its 16
 * warps each multiplying 32 x 32 of the tile through PTX's float8 mma
 * (filter_mma).  For every query a bounded heap keeps the 2k + 16
 * smallest filter values (ties by vector index).  Rounding bounds tie a
 * filter value a to the exact distance D of the same pair, for any pair of
 * the query:
 *
 *   lo(a) <= D <= hi(a),  lo and hi non-decreasing in a,
 *
 * from the dot product's and norms' error (eps, relative to the query's and
 * the largest vector's squared norms), the shift's rounding (eta), the
 * exact sum's own rounding (gam) and underflow (FILTER_TAU); they are
 * evaluated with directed rounding.  So the k-th exact distance is at most
 * T = hi(k-th smallest a), every row of the answer has lo(a) <= T, and when
 * lo of the heap's largest a exceeds T no vector outside the heap can be in
 * the answer.  The re-rank then sums the exact distance of each heap entry
 * with lo(a) <= T and keeps the k best by (distance, ref).  A query whose
 * heap does not reach past T (many vectors at nearly its k-th distance),
 * or whose norms come near overflow, is flagged for the exact tiles
 * (flat.cu), which search it again from scratch; so is every query on a
 * chip whose blocks cannot have the filter's shared memory.
 */
#include "flat.cuh"

#define FILTER_BQ 128			/* queries of a block */
#define FILTER_BP 128			/* vectors of a tile */
#define FILTER_WQ 4				/* warps across the queries */
#define FILTER_WP 4				/* warps across the vectors */
#define FILTER_DK 16			/* coordinates of a tile slice */
#define FILTER_LD (FILTER_DK + 2)	/* a slice's row pitch: 2-way banks */
#define FILTER_LDD (FILTER_BP + 4)	/* the distance tile's row pitch */
#define FILTER_THREADS (32 * FILTER_WQ * FILTER_WP)
#define FILTER_TQ (FILTER_BQ / 16 / FILTER_WQ)	/* a warp's 16 x 8 products */
#define FILTER_TP (FILTER_BP / 8 / FILTER_WP)
#define FILTER_FETCH_Q (FILTER_BQ * FILTER_DK / FILTER_THREADS)	/* a thread's */
#define FILTER_FETCH_P (FILTER_BP * FILTER_DK / FILTER_THREADS)	/* loads */
#define FILTER_SCAN (FILTER_THREADS / FILTER_BQ)	/* threads scanning a query */
#define FILTER_SAMPLE 4096		/* vectors averaged for the centre */
#define FILTER_TAU 1e-150		/* bounds' margin for underflow */
#define FILTER_EPS_ABS 1e-290	/* the dot product's margin for underflow */
#define FILTER_NORM_MAX 1e300	/* larger squared norms are rechecked */

/* What the filter's kernels read besides d. */
typedef struct FilterDev
{
	FlatDev		d;
	double	   *center;			/* dim */
	double	   *pnorm;			/* n: shifted vectors' squared norms */
	double	   *qnorm;			/* nq: shifted queries' squared norms */
	unsigned long long *pmax;	/* the largest pnorm's bits */
	KdNeighbor *heap;			/* nq * kk: (a, vector index) */
	int32_t    *hsize;			/* nq */
	int			kk;
	uint8_t    *recheck;		/* nq */
} FilterDev;

/* The heap's size for k neighbours: room past the k-th for near ties. */
static int
filter_heap_size(int k)
{
	return 2 * k + 16;
}

/*
 * The centre: the mean of up to FILTER_SAMPLE vectors evenly spread over
 * the set, one thread a coordinate, summed in a fixed order so that every
 * run shifts by the same bits.
 */
__global__ void
filter_center(const double *pts, int64_t n, int dim, double *center)
{
	int			c = blockIdx.x * blockDim.x + threadIdx.x;
	int64_t		m = n < FILTER_SAMPLE ? n : FILTER_SAMPLE;
	double		s = 0.0;

	if (c >= dim)
		return;
	for (int64_t i = 0; i < m; i++)
		s += pts[(i * n / m) * dim + c];
	center[c] = s / (double) m;
}

/*
 * The squared norms of n shifted vectors at v into out, and (when max is
 * not NULL) the largest of them into *max as bits (non-negative doubles
 * order as their bits do), one atomic a warp.
 */
__global__ void
filter_norms(const double *v, int64_t n, int dim, const double *center,
			 double *out, unsigned long long *max)
{
	int64_t		i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	double		s = 0.0;
	unsigned long long bits;

	for (int c = 0; i < n && c < dim; c++)
	{
		double		x = v[i * dim + c] - center[c];

		s += x * x;
	}
	if (i < n)
		out[i] = s;
	if (max == NULL)
		return;
	bits = (unsigned long long) __double_as_longlong(s);
	for (int o = 16; o > 0; o /= 2)
	{
		unsigned long long other = __shfl_down_sync(0xffffffffu, bits, o);

		bits = other > bits ? other : bits;
	}
	if (threadIdx.x % 32 == 0)
		atomicMax(max, bits);
}

/* The filter's value of a pair: its dot product with both squared norms. */
__device__ __forceinline__ double
filter_value(double qn, double pn, double dot)
{
	return (qn + pn) - 2.0 * dot;
}

/*
 * d += a b for a warp's 16 x 8 product over 16 coordinates, in the
 * fragments of PTX's mma.m16n8k16 (lane l: g = l / 4, t = l % 4; a[i] is
 * row g + 8 (i % 2), column t + 4 (i / 2); b[i] is row t + 4 i, column g;
 * d[i] row g + 8 (i / 2), column 2 t + i % 2).  Hopper runs it as one
 * float8 tensor-core product; older chips as eight 8 x 8 x 4 ones, whose
 * fragments are the same elements.
 */
__device__ __forceinline__ void
filter_mma(double d[4], const double a[8], const double b[4])
{
#if __CUDA_ARCH__ >= 900
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 "
				 "{%0, %1, %2, %3}, {%4, %5, %6, %7, %8, %9, %10, %11}, "
				 "{%12, %13, %14, %15}, {%0, %1, %2, %3};\n"
				 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
				 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]),
				   "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
				   "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
#else
#pragma unroll
	for (int j = 0; j < 4; j++)
#pragma unroll
		for (int h = 0; h < 2; h++)
			asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 "
						 "{%0, %1}, {%2}, {%3}, {%0, %1};\n"
						 : "+d"(d[2 * h]), "+d"(d[2 * h + 1])
						 : "d"(a[h + 2 * j]), "d"(b[j]));
#endif
}

/*
 * Read a thread's share of the shifted slice [c0, c0 + FILTER_DK) of the
 * block's queries and of vectors [p0, p0 + FILTER_BP) into nq and np,
 * zero past the dimension, the queries or v1; read into registers one
 * slice ahead, so the loads overlap the products.
 */
__device__ __forceinline__ void
filter_fetch(const FilterDev &f, int64_t qb, int64_t p0, int64_t v1, int c0,
			 double nq[FILTER_FETCH_Q], double np[FILTER_FETCH_P])
{
	const FlatDev &d = f.d;

#pragma unroll
	for (int e = 0; e < FILTER_FETCH_Q; e++)
	{
		int			l = threadIdx.x + e * FILTER_THREADS;
		int			r = l / FILTER_DK;
		int			c = c0 + l % FILTER_DK;

		nq[e] = c < d.dim && qb + r < d.nq ?
			d.qs[(qb + r) * d.dim + c] - f.center[c] : 0.0;
	}
#pragma unroll
	for (int e = 0; e < FILTER_FETCH_P; e++)
	{
		int			l = threadIdx.x + e * FILTER_THREADS;
		int			r = l / FILTER_DK;
		int			c = c0 + l % FILTER_DK;

		np[e] = c < d.dim && p0 + r < v1 ?
			d.pts[(p0 + r) * d.dim + c] - f.center[c] : 0.0;
	}
}

/* The shared memory of filter_kernel. */
typedef struct FilterShared
{
	union
	{
		struct
		{
			double		q[FILTER_BQ][FILTER_LD];
			double		p[FILTER_BP][FILTER_LD];
		}			in;
		double		dot[FILTER_BQ][FILTER_LDD];
	}			t;
	double		top[FILTER_BQ];
	double		qn[FILTER_BQ];
	double		pn[FILTER_BP];
	int			ncand[FILTER_BQ];
	uint8_t		cand[FILTER_BQ][FILTER_BP];
} FilterShared;

/*
 * Every query of f against vectors [v0, v1): each tile's dot products on
 * the tensor cores, then the values below a query's heap top offered to
 * its heap (found by FILTER_SCAN threads a query, pushed by one).
 */
__global__ void
__launch_bounds__(FILTER_THREADS, 1)
filter_kernel(FilterDev f, int64_t v0, int64_t v1)
{
	extern __shared__ __align__(32) unsigned char filter_smem[];
	FilterShared &sm = *(FilterShared *) filter_smem;
	double		nq[FILTER_FETCH_Q];
	double		np[FILTER_FETCH_P];
	const FlatDev &d = f.d;
	const int	t = threadIdx.x;
	const int	wq = t / 32 / FILTER_WP;
	const int	wp = t / 32 % FILTER_WP;
	const int	g = t % 32 / 4;	/* the lane's row in a product */
	const int	lt = t % 4;		/* and its column */
	const int64_t qb = (int64_t) blockIdx.x * FILTER_BQ;
	const bool	keeper = t < FILTER_BQ && qb + t < d.nq;
	const int	row = t / FILTER_SCAN;	/* the query this thread scans for */
	const int	part = t % FILTER_SCAN;
	const bool	scans = qb + row < d.nq;
	const uint64_t skip = scans && d.skip ? d.skip[qb + row] : 0;
	KdcHeap		heap;

	if (qb >= d.nq)
		return;
	if (keeper)
	{
		heap.h = f.heap + (qb + t) * f.kk;
		heap.k = f.kk;
		heap.size = v0 == 0 ? 0 : f.hsize[qb + t];
		sm.top[t] = heap.worst();
	}
	else if (t < FILTER_BQ)
		sm.top[t] = -__longlong_as_double(0x7ff0000000000000LL);
	if (t < FILTER_BQ)
	{
		sm.ncand[t] = 0;
		sm.qn[t] = qb + t < d.nq ? f.qnorm[qb + t] : 0.0;
	}
	for (int64_t p0 = v0; p0 < v1; p0 += FILTER_BP)
	{
		double		acc[FILTER_TQ][FILTER_TP][4];

#pragma unroll
		for (int i = 0; i < FILTER_TQ; i++)
#pragma unroll
			for (int j = 0; j < FILTER_TP; j++)
#pragma unroll
				for (int e = 0; e < 4; e++)
					acc[i][j][e] = 0.0;
		filter_fetch(f, qb, p0, v1, 0, nq, np);
		for (int c0 = 0; c0 < d.dim; c0 += FILTER_DK)
		{
#pragma unroll
			for (int e = 0; e < FILTER_FETCH_Q; e++)
			{
				int			l = t + e * FILTER_THREADS;

				sm.t.in.q[l / FILTER_DK][l % FILTER_DK] = nq[e];
			}
#pragma unroll
			for (int e = 0; e < FILTER_FETCH_P; e++)
			{
				int			l = t + e * FILTER_THREADS;

				sm.t.in.p[l / FILTER_DK][l % FILTER_DK] = np[e];
			}
			__syncthreads();
			if (c0 + FILTER_DK < d.dim)
				filter_fetch(f, qb, p0, v1, c0 + FILTER_DK, nq, np);
#pragma unroll
			for (int kk = 0; kk < FILTER_DK; kk += 16)
			{
				double		a[FILTER_TQ][8];
				double		b[FILTER_TP][4];

				if (c0 + kk >= d.dim)
					break;
#pragma unroll
				for (int i = 0; i < FILTER_TQ; i++)
#pragma unroll
					for (int e = 0; e < 8; e++)
						a[i][e] = sm.t.in.q[16 * (FILTER_TQ * wq + i) + g + 8 * (e % 2)][kk + lt + 4 * (e / 2)];
#pragma unroll
				for (int j = 0; j < FILTER_TP; j++)
#pragma unroll
					for (int e = 0; e < 4; e++)
						b[j][e] = sm.t.in.p[8 * (FILTER_TP * wp + j) + g][kk + lt + 4 * e];
#pragma unroll
				for (int i = 0; i < FILTER_TQ; i++)
#pragma unroll
					for (int j = 0; j < FILTER_TP; j++)
						filter_mma(acc[i][j], a[i], b[j]);
			}
			__syncthreads();
		}
#pragma unroll
		for (int i = 0; i < FILTER_TQ; i++)
#pragma unroll
			for (int j = 0; j < FILTER_TP; j++)
#pragma unroll
				for (int e = 0; e < 4; e++)
					sm.t.dot[16 * (FILTER_TQ * wq + i) + g + 8 * (e / 2)]
						[8 * (FILTER_TP * wp + j) + 2 * lt + e % 2] = acc[i][j][e];
		if (t < FILTER_BP)
			sm.pn[t] = p0 + t < v1 ? f.pnorm[p0 + t] : 0.0;
		__syncthreads();
		if (scans)
		{
			double		limit = sm.top[row];

			for (int j = part; j < FILTER_BP && p0 + j < v1; j += FILTER_SCAN)
			{
				double		a = filter_value(sm.qn[row], sm.pn[j], sm.t.dot[row][j]);

				if (a <= limit && (d.skip == NULL || d.refs[p0 + j] != skip))
					sm.cand[row][atomicAdd(&sm.ncand[row], 1)] = (uint8_t) j;
			}
		}
		__syncthreads();
		if (keeper)
		{
			for (int s = 0; s < sm.ncand[t]; s++)
			{
				int			j = sm.cand[t][s];

				heap.push(filter_value(sm.qn[t], sm.pn[j], sm.t.dot[t][j]),
						  (uint64_t) (p0 + j));
			}
			sm.ncand[t] = 0;
			sm.top[t] = heap.worst();
		}
		__syncthreads();
	}
	if (keeper)
		f.hsize[qb + t] = heap.size;
}

/* What bounds a query's exact distances from its filter values. */
typedef struct FilterBounds
{
	double		eps;			/* |a - (shifted distance)^2| at most */
	double		eta;			/* |distance - shifted distance| at most */
	double		gam;			/* the exact sum's relative error at most */
} FilterBounds;

/*
 * The bounds of a query of squared norm qn against vectors of squared norm
 * at most pmax, in dim dimensions: eps from the dot product's and norms'
 * rounding (each within about dim units of the last place of the norms),
 * eta from the shift's (a unit of each vector's length), gam from the exact
 * sum's (half a unit a term); each taken at twice or more its size.
 */
__device__ FilterBounds
filter_bounds(double qn, double pmax, int dim)
{
	FilterBounds b;
	double		units = (double) (dim + 8) * 0x1p-52;

	b.eps = __dadd_ru(__dmul_ru(units, __dadd_ru(qn, pmax)), FILTER_EPS_ABS);
	b.eta = __dmul_ru(0x1p-51, __dadd_ru(__dsqrt_ru(qn), __dsqrt_ru(pmax)));
	b.gam = units;
	return b;
}

/* A lower bound of the exact distance of a pair of filter value a. */
__device__ __forceinline__ double
filter_lo(const FilterBounds *b, double a)
{
	double		r = __dsqrt_rd(fmax(__dsub_rd(a, b->eps), 0.0));

	return __dsub_rd(__dmul_rd(__dsub_rd(r, b->eta), __dsub_rd(1.0, b->gam)),
					 FILTER_TAU);
}

/* An upper bound of the exact distance of a pair of filter value a. */
__device__ __forceinline__ double
filter_hi(const FilterBounds *b, double a)
{
	double		r = __dsqrt_ru(fmax(__dadd_ru(a, b->eps), 0.0));

	return __dadd_ru(__dmul_ru(__dadd_ru(r, b->eta), __dadd_ru(1.0, b->gam)),
					 FILTER_TAU);
}

/*
 * One thread a query: sort its heap, decide whether the heap holds every
 * possible answer, and if it does, sum the candidates' exact distances into
 * the query's k best; else flag it for the exact tiles.
 */
__global__ void
filter_rerank(FilterDev f)
{
	const FlatDev &d = f.d;
	int64_t		q = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	KdcHeap		cand;
	KdcHeap		best;
	FilterBounds b;
	double		pmax;
	double		limit;

	if (q >= d.nq)
		return;
	pmax = __longlong_as_double((long long) *f.pmax);
	d.count[q] = 0;
	f.recheck[q] = 1;
	if (!(f.qnorm[q] < FILTER_NORM_MAX && pmax < FILTER_NORM_MAX))
		return;
	cand.h = f.heap + q * f.kk;
	cand.k = f.kk;
	cand.size = f.hsize[q];
	cand.sort();
	b = filter_bounds(f.qnorm[q], pmax, d.dim);
	limit = cand.size < d.k ? __longlong_as_double(0x7ff0000000000000LL) :
		filter_hi(&b, cand.h[d.k - 1].d2);
	if (isnan(limit) ||
		(cand.size == f.kk && !(filter_lo(&b, cand.h[f.kk - 1].d2) > limit)))
		return;
	best.h = d.res + q * d.k;
	best.k = d.k;
	best.size = 0;
	for (int i = 0; i < cand.size && filter_lo(&b, cand.h[i].d2) <= limit; i++)
	{
		int64_t		j = (int64_t) cand.h[i].ref;
		const double *x = d.qs + q * d.dim;
		const double *y = d.pts + j * d.dim;
		KdMetricSum s = kde_metric_zero();

		for (int c = 0; c < d.dim; c++)
			kde_metric_term(KD_METRIC_L2, &s, x[c], y[c]);
		best.push(kde_metric_finish(KD_METRIC_L2, &s), d.refs[j]);
	}
	best.sort();
	d.count[q] = best.size;
	f.recheck[q] = 0;
}

/* See flat.cuh. */
size_t
kdc_flat_filter_bytes(int64_t n, int64_t nq, int dim, int k)
{
	return sizeof(double) * (dim + n + nq + 1) +
		(sizeof(KdNeighbor) * filter_heap_size(k) + sizeof(int32_t) + 1) * (size_t) nq;
}

/* See flat.cuh. */
KdStatus
kdc_flat_filter_knn(const FlatDev *d, uint8_t *recheck, int64_t *nrecheck,
					KdcAllocs *a, const KdExec *exec, KdError *err)
{
	FilterDev	f;
	int64_t		slice = 256;
	int			smem = 0;
	KdStatus	st;
	cudaError_t e;

	memset(&f, 0, sizeof(f));
	f.d = *d;
	f.kk = filter_heap_size(d->k);
	*nrecheck = 0;
	/* a chip without the shared memory of a block leaves all to the tiles */
	if ((e = cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin,
									kdc_device)) != cudaSuccess)
		return kdc_cuda_error(err, e, "reading the device's shared memory");
	if ((size_t) smem < sizeof(FilterShared))
	{
		memset(recheck, 1, d->nq);
		*nrecheck = d->nq;
		return KD_OK;
	}
	if ((st = kdc_alloc(a, (void **) &f.center, sizeof(double) * d->dim, "centre", err)) != KD_OK ||
		(st = kdc_alloc(a, (void **) &f.pnorm, sizeof(double) * d->n, "norms", err)) != KD_OK ||
		(st = kdc_alloc(a, (void **) &f.qnorm, sizeof(double) * d->nq, "norms", err)) != KD_OK ||
		(st = kdc_alloc(a, (void **) &f.pmax, sizeof(unsigned long long), "norms", err)) != KD_OK ||
		(st = kdc_alloc(a, (void **) &f.heap, sizeof(KdNeighbor) * f.kk * d->nq, "filter heaps", err)) != KD_OK ||
		(st = kdc_alloc(a, (void **) &f.hsize, sizeof(int32_t) * d->nq, "filter heaps", err)) != KD_OK ||
		(st = kdc_alloc(a, (void **) &f.recheck, d->nq, "rechecks", err)) != KD_OK)
		return st;
	if ((e = cudaMemset(f.pmax, 0, sizeof(unsigned long long))) != cudaSuccess)
		return kdc_cuda_error(err, e, "starting the filter");
	filter_center <<< (d->dim + KDC_BLOCK - 1) / KDC_BLOCK, KDC_BLOCK >>> (d->pts, d->n, d->dim, f.center);
	filter_norms <<< kdc_blocks(d->n), KDC_BLOCK >>> (d->pts, d->n, d->dim, f.center, f.pnorm, f.pmax);
	filter_norms <<< kdc_blocks(d->nq), KDC_BLOCK >>> (d->qs, d->nq, d->dim, f.center, f.qnorm, NULL);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return kdc_cuda_error(err, e, "summing the filter's norms");
	if ((e = cudaFuncSetAttribute(filter_kernel,
								  cudaFuncAttributeMaxDynamicSharedMemorySize,
								  sizeof(FilterShared))) != cudaSuccess)
		return kdc_cuda_error(err, e, "sizing the filter's shared memory");
	st = kdc_run_paced(exec, d->n, &slice, "flat kNN filter", err,
					   [&](int64_t start, int64_t n) {
						   filter_kernel <<< (unsigned) ((d->nq + FILTER_BQ - 1) / FILTER_BQ),
						   FILTER_THREADS, sizeof(FilterShared) >>> (f, start, start + n);
					   });
	if (st != KD_OK)
		return st;
	filter_rerank <<< kdc_blocks(d->nq), KDC_BLOCK >>> (f);
	if ((e = cudaGetLastError()) != cudaSuccess ||
		(e = cudaMemcpy(recheck, f.recheck, d->nq, cudaMemcpyDeviceToHost)) != cudaSuccess)
		return kdc_cuda_error(err, e, "re-ranking the filter's candidates");
	for (int64_t q = 0; q < d->nq; q++)
		*nrecheck += recheck[q];
	return KD_OK;
}
