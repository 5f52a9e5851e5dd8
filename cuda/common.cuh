/*
 * common.cuh
 *	  Shared declarations of the GPU side of the kdgpu engine.
 *
 * Design.  Every entry point of kdgpu_cuda.so follows one pattern: check the
 * arguments like the CPU does, size the device memory it needs against
 * cudaMemGetInfo and exec->gpu_memory_limit, allocate everything through a
 * KdcAllocs list (so that every exit path frees every allocation with one
 * call), and run long work as a sequence of kernel launches whose sizes are
 * paced to stay short (kdc_run_overlapped's target time), polling the
 * caller's interrupt callback between them.
 *
 * The device helpers here (distances, bounding-box distances, tree shape,
 * the bounded max-heap of neighbours) are inline because each .cu file is a
 * separate translation unit without relocatable device code.  The floating
 * point helpers reproduce the CPU's arithmetic exactly: the same terms, in
 * dimension order, with no fused multiply-add (the .so is built with
 * --fmad=false, and the helpers use __dmul_rn/__dadd_rn besides).
 */
#ifndef KDGPU_COMMON_CUH
#define KDGPU_COMMON_CUH

#include <stdint.h>
#include <cuda_runtime.h>

#include "../src/engine/kd_gpu_abi.h"
#include "../src/engine/kd_error.h"

/* Device-resident copy of a tree, in the host tree's format. */
struct KdGpuTree
{
	int64_t		n;
	int			dim;
	int64_t		nbounds;
	double	   *coords;			/* n * dim, node order */
	float	   *coords_f;		/* the same as float, where that is exact
								 * (compact.cu), else NULL; for 3-D trees
								 * a record of 4 floats per node, the
								 * split dimension's bits last */
	uint64_t   *refs;			/* n */
	uint8_t    *split;			/* n split bytes (KDC_SPLIT_DIM) */
	double	   *bounds;			/* nbounds * 2 * dim */
	bool		ref_order;		/* as KdTree.ref_order */
	int			device;			/* the device it lives on */
};

/*
 * Floats per node of a tree's float copy: 3-D trees keep (x, y, z, split)
 * records, the others their coordinates alone (compact.cu).
 */
static inline __host__ __device__ int
kdc_float_stride(int dim)
{
	return dim == 3 ? 4 : dim;
}

/*
 * A device tree's split byte: the split dimension in its low bits, and
 * KDC_LOOSE_LEFT or KDC_LOOSE_RIGHT where that child's bounding box is
 * hardly tighter than its cell, so that a kNN walk entering the child does
 * not test it (box_flags.cu).  The host tree's bytes hold the dimension
 * alone.
 */
#define KDC_SPLIT_DIM 0x07
#define KDC_LOOSE_LEFT 0x08
#define KDC_LOOSE_RIGHT 0x10

/* The most stack entries a traversal needs: one per level. */
#define KDC_STACK 64

/* Device allocations of one call, freed together. */
#define KDC_MAX_ALLOCS 40
typedef struct KdcAllocs
{
	int			count;
	void	   *ptr[KDC_MAX_ALLOCS];
} KdcAllocs;

/* api.cu: errors, memory, pacing, query ordering */
extern KdStatus kdc_cuda_error(KdError *err, cudaError_t e, const char *what);
extern thread_local int kdc_device;
extern KdStatus kdc_begin(int device, KdError *err);
extern KdStatus kdc_alloc(KdcAllocs *a, void **ptr, size_t bytes,
						  const char *what, KdError *err);
extern void kdc_free_all(KdcAllocs *a);
extern KdStatus kdc_budget(const KdExec *exec, size_t reserved,
						   size_t *budget, KdError *err);
extern KdStatus kdc_sync(const KdExec *exec, const char *what, KdError *err);
extern KdStatus kdc_poll(const KdExec *exec, KdError *err);
extern KdStatus kdc_check_finite(const double *d_pts, int64_t n, int dim,
								 int64_t base, const char *what,
								 KdcAllocs *a, KdError *err);
extern KdStatus kdc_upload_points(const double *points, const uint64_t *refs,
								  int64_t n, int dim, double *d_pts,
								  uint64_t *d_refs, KdcAllocs *a,
								  const KdExec *exec, KdError *err);
extern KdStatus kdc_spatial_order(const double *d_pts, int64_t n, int dim,
								  int64_t segment, uint32_t *d_perm,
								  KdcAllocs *a, KdError *err);
extern KdStatus kdc_check_k(int k, KdError *err);
extern size_t kdc_tree_bytes(int64_t n, int dim, int64_t nbounds);
extern size_t kdc_tree_size(const KdGpuTree *gtree);

/* transfer.cu: copies between the device and pageable host memory */
typedef struct KdcPrefault KdcPrefault;
extern KdcPrefault *kdc_prefault_begin(void *const *bufs, const size_t *bytes,
									   int nbufs, const KdExec *exec);
extern void kdc_prefault_end(KdcPrefault *pf);
extern cudaError_t kdc_to_host(void *dst, const void *d_src, size_t bytes,
							   const KdExec *exec);
extern cudaError_t kdc_to_device(void *d_dst, const void *src, size_t bytes,
								 const KdExec *exec);
extern KdStatus kdc_results_to_host(const KdNeighbor *d_res, int64_t nq,
									int k, int cnt, KdNeighbor *out,
									const KdExec *exec, KdError *err);
extern KdStatus kdc_answers_to_host(const KdNeighbor *d_res,
									const int32_t *d_count, int64_t nq, int k,
									int cnt, KdNeighbor *out, int32_t *count,
									const KdExec *exec, KdError *err);
extern KdStatus kdc_tree_create(int64_t n, int dim, int64_t nbounds,
								const KdExec *exec, KdGpuTree **out,
								KdError *err);
extern void kdc_release(KdGpuTree *gtree);

/* box_flags.cu: which children's boxes a kNN walk tests */
extern KdStatus kdc_tree_box_flags(KdGpuTree *gtree, const KdExec *exec,
								   KdError *err);

/* compact.cu: a float copy of the coordinates where it is exact */
extern KdStatus kdc_tree_compact(KdGpuTree *gtree, const KdExec *exec,
								 KdError *err);

/* query_runs.cu: kNN queries at one place walked once */
typedef struct KdcRuns
{
	int64_t		nheads;			/* runs found, 0 when not used */
	int			head_k;			/* neighbours a run's walk keeps */
	uint32_t   *run_of;			/* per query: its run, from 1 */
	double	   *heads;			/* per run: its point */
	KdNeighbor *head_res;		/* per run: head_k neighbours */
} KdcRuns;
extern KdStatus kdc_query_runs(const double *qpts, const uint32_t *order,
							   int64_t m, int dim, int64_t segment,
							   int head_k, size_t room,
							   KdcAllocs *a, KdcRuns *runs,
							   const KdExec *exec, KdError *err);
extern void kdc_runs_expand(const KdcRuns *runs, int64_t start,
							int64_t count, int k, int cnt,
							const uint64_t *self_refs, KdNeighbor *res);

/* the entry points, one file each */
extern KdStatus kdc_build(const double *points, const uint64_t *refs,
						  int64_t n, int dim, KdTree *tree, KdGpuTree **out,
						  const KdExec *exec, KdError *err);
extern KdStatus kdc_knn(const KdGpuTree *gtree, const double *queries,
						int64_t nq, int k, KdNeighbor *out, int32_t *count,
						const KdExec *exec, KdError *err);
extern KdStatus kdc_all_knn(const KdGpuTree *gtree, int k, bool include_self,
							KdNeighbor *out, int32_t *count,
							const KdExec *exec, KdError *err);
extern KdStatus kdc_radius(const KdGpuTree *gtree, const double *centers,
						   int64_t nq, const double *radii, int64_t nradii,
						   KdRangeResult *res, const KdExec *exec,
						   KdError *err);
extern KdStatus kdc_box(const KdGpuTree *gtree, const double *lows,
						const double *highs, int64_t nq, KdRangeResult *res,
						const KdExec *exec, KdError *err);
extern KdStatus kdc_dbscan(const KdGpuTree *gtree, const KdDbscan *args,
						   int32_t *labels, int64_t *undecided,
						   const KdExec *exec, KdError *err);
extern KdStatus kdc_flat_knn(const KdVectors *set, KdMetric metric,
							 const double *queries, int64_t nq, int k,
							 const uint64_t *skip, KdNeighbor *out,
							 int32_t *count, const KdExec *exec,
							 KdError *err);
extern KdStatus kdc_flat_radius(const KdVectors *set, KdMetric metric,
								const double *centers, int64_t nq,
								const double *radii, int64_t nradii,
								KdRangeResult *res, const KdExec *exec,
								KdError *err);
extern KdStatus kdc_vp_build(const KdVectors *set, KdMetric metric,
							 int leaf_rows, KdVpTree *tree,
							 const KdExec *exec, KdError *err);
extern KdStatus kdc_vp_knn(const KdVectors *set, KdMetric metric,
						   const KdVpTree *tree, const double *queries,
						   int64_t nq, int k, const uint64_t *skip,
						   KdNeighbor *out, int32_t *count,
						   const KdExec *exec, KdError *err);
extern KdStatus kdc_vp_upload(const KdVectors *set, KdMetric metric,
							  const KdVpTree *tree, KdVpGpu **gpu,
							  const KdExec *exec, KdError *err);
extern KdStatus kdc_vp_search(const KdVpGpu *gpu, const double *queries,
							  int64_t nq, int k, const uint64_t *skip,
							  KdNeighbor *out, int32_t *count,
							  const KdExec *exec, KdError *err);
extern void kdc_vp_release(KdVpGpu *gpu);

/* device bytes that a spatial ordering of n points needs */
#define KDC_ORDER_BYTES(n) ((size_t) (n) * 40 + ((size_t) 1 << 20))

/* Create the two events ev[0], ev[1] that time device work. */
static inline KdStatus
kdc_event_pair(cudaEvent_t *ev, KdError *err)
{
	if (cudaEventCreate(&ev[0]) != cudaSuccess)
		return kdc_cuda_error(err, cudaGetLastError(), "cudaEventCreate");
	if (cudaEventCreate(&ev[1]) != cudaSuccess)
	{
		cudaEventDestroy(ev[0]);
		return kdc_cuda_error(err, cudaGetLastError(), "cudaEventCreate");
	}
	return KD_OK;
}

/*
 * Run work over items [0, total) in launches of paced size: launch(start,
 * count) enqueues the kernels for one slice on the default stream; while
 * they run, drain(start, count) is called for the slice before it (and once
 * more for the last slice after it), so host work on finished results
 * overlaps the next slice's kernels.  After each slice the device is
 * synchronized, the slice size (*slice, kept by the caller across calls) is
 * adapted to aim at target_ms per slice, and the interrupt callback is
 * polled (before the first slice too).  Kernel time, as the events on the
 * default stream see it, is added to exec->times when that is set.
 * Returns KD_OK, KD_ERR_CANCELED, a CUDA error or drain's error.
 */
template <typename Launch, typename Drain>
static KdStatus
kdc_run_overlapped(const KdExec *exec, int64_t total, int64_t *slice,
				   double target_ms, const char *what, KdError *err,
				   Launch launch, Drain drain)
{
	int64_t		start = 0;
	int64_t		prev_start = 0;
	int64_t		prev_count = 0;
	cudaEvent_t ev[2];
	KdStatus	st;

	if ((st = kdc_poll(exec, err)) != KD_OK ||
		(st = kdc_event_pair(ev, err)) != KD_OK)
		return st;
	while (start < total)
	{
		int64_t		count = total - start < *slice ? total - start : *slice;
		float		ms = 0;
		KdStatus	dst = KD_OK;

		cudaEventRecord(ev[0]);
		launch(start, count);
		cudaEventRecord(ev[1]);
		if (prev_count > 0)
			dst = drain(prev_start, prev_count);
		if ((st = kdc_sync(exec, what, err)) != KD_OK)
			break;
		if ((st = dst) != KD_OK)
			break;
		cudaEventElapsedTime(&ms, ev[0], ev[1]);
		if (exec && exec->times)
			exec->times->kernel_ms += ms;
		prev_start = start;
		prev_count = count;
		start += count;
		if (count == *slice)
		{
			double		f = ms > 0.01 ? target_ms / ms : 4.0;

			f = f > 4.0 ? 4.0 : (f < 0.25 ? 0.25 : f);
			*slice = (int64_t) (*slice * f);
			if (*slice < 256)
				*slice = 256;
			if (*slice > ((int64_t) 1 << 30))
				*slice = (int64_t) 1 << 30;
		}
	}
	if (st == KD_OK && prev_count > 0)
		st = drain(prev_start, prev_count);
	cudaEventDestroy(ev[0]);
	cudaEventDestroy(ev[1]);
	return st;
}

/* kdc_run_overlapped with nothing to overlap, at a short target per slice. */
template <typename Launch>
static KdStatus
kdc_run_paced(const KdExec *exec, int64_t total, int64_t *slice,
			  const char *what, KdError *err, Launch launch)
{
	return kdc_run_overlapped(exec, total, slice, 40.0, what, err, launch,
							  [](int64_t, int64_t) { return KD_OK; });
}

/* ---- device helpers ------------------------------------------------------ */

/* Threads per block of the query kernels. */
#define KDC_BLOCK 128

/* Blocks for n threads of KDC_BLOCK. */
static inline unsigned int
kdc_blocks(int64_t n)
{
	return (unsigned int) ((n + KDC_BLOCK - 1) / KDC_BLOCK);
}

/* Order-preserving map of a float8 onto uint64 (NaN excluded). */
static __device__ __forceinline__ uint64_t
kdc_ordered_bits(double x)
{
	uint64_t	b = (uint64_t) __double_as_longlong(x);

	return (b & 0x8000000000000000ULL) ? ~b : (b | 0x8000000000000000ULL);
}

/* Inverse of kdc_ordered_bits. */
static __device__ __forceinline__ double
kdc_from_ordered_bits(uint64_t b)
{
	b = (b & 0x8000000000000000ULL) ? (b & ~0x8000000000000000ULL) : ~b;
	return __longlong_as_double((long long) b);
}

/*
 * The point helpers below work on register arrays of D doubles: D is
 * KD_MAX_DIM for kernels that take the dimension at run time (dim <= D), and
 * the dimension itself for kernels instantiated per dimension, where the
 * checks against dim vanish.
 */

/* Load a point into registers, from float8 or float coordinates. */
template <int D = KD_MAX_DIM, typename C = double>
static __device__ __forceinline__ void
kdc_load_point(double *q, const C *src, int dim)
{
#pragma unroll
	for (int j = 0; j < D; j++)
		q[j] = j < dim ? (double) src[j] : 0.0;
}

/* Coordinate s of a register-resident point, without dynamic indexing. */
template <int D = KD_MAX_DIM>
static __device__ __forceinline__ double
kdc_coord(const double *q, int s)
{
	double		v = q[0];

#pragma unroll
	for (int j = 1; j < D; j++)
		if (j == s)
			v = q[j];
	return v;
}

/* Squared distance, summed in dimension order without FMA. */
template <int D = KD_MAX_DIM>
static __device__ __forceinline__ double
kdc_dist2(const double *q, const double *p, int dim)
{
	double		d2 = 0.0;

#pragma unroll
	for (int j = 0; j < D; j++)
		if (j < dim)
		{
			double		t = __dadd_rn(q[j], -p[j]);

			d2 = __dadd_rn(d2, __dmul_rn(t, t));
		}
	return d2;
}

/*
 * The rounded gap between a coordinate q and the interval [lo, hi] (0
 * inside it): at most |q - x| rounded, for every x of the interval.
 * Without branches (fmax takes the number over a NaN, so a NaN q, or
 * infinities of one sign, give 0 as the comparisons did), since the
 * kernels test a box wherever they enter a subtree.
 */
static __device__ __forceinline__ double
kdc_axis_gap(double q, double lo, double hi)
{
	return fmax(fmax(__dadd_rn(lo, -q), __dadd_rn(q, -hi)), 0.0);
}

/*
 * Squared distance from q to the box [lo, hi], term by term in dimension
 * order: a lower bound of kdc_dist2 for every point of the box.
 */
template <int D = KD_MAX_DIM>
static __device__ __forceinline__ double
kdc_box_dist2(const double *q, const double *box, int dim)
{
	double		d2 = 0.0;

#pragma unroll
	for (int j = 0; j < D; j++)
		if (j < dim)
		{
			double		t = kdc_axis_gap(q[j], box[j], box[dim + j]);

			d2 = __dadd_rn(d2, __dmul_rn(t, t));
		}
	return d2;
}

/* (d2, ref) order of results. */
static __device__ __forceinline__ bool
kdc_less(double d2a, uint64_t refa, double d2b, uint64_t refb)
{
	return d2a < d2b || (d2a == d2b && refa < refb);
}

/*
 * Bounded max-heap of the k best (d2, ref) pairs, stored at h (local memory
 * for small k, the query's output slot in global memory for large k).
 */
struct KdcHeap
{
	KdNeighbor *h;
	int			k;
	int			size;

	/* d2 of the current k-th neighbour, +inf while fewer than k */
	__device__ __forceinline__ double worst() const
	{
		return size < k ? __longlong_as_double(0x7ff0000000000000LL) : h[0].d2;
	}

	/* offer a candidate */
	__device__ __forceinline__ void push(double d2, uint64_t ref)
	{
		int			i;

		if (size < k)
		{
			/* sift up */
			i = size++;
			while (i > 0)
			{
				int			parent = (i - 1) >> 1;

				if (!kdc_less(h[parent].d2, h[parent].ref, d2, ref))
					break;
				h[i] = h[parent];
				i = parent;
			}
		}
		else
		{
			if (!kdc_less(d2, ref, h[0].d2, h[0].ref))
				return;
			/* replace the top and sift down */
			i = 0;
			for (;;)
			{
				int			c = 2 * i + 1;

				if (c >= size)
					break;
				if (c + 1 < size &&
					kdc_less(h[c].d2, h[c].ref, h[c + 1].d2, h[c + 1].ref))
					c++;
				if (!kdc_less(d2, ref, h[c].d2, h[c].ref))
					break;
				h[i] = h[c];
				i = c;
			}
		}
		h[i].d2 = d2;
		h[i].ref = ref;
	}

	/* heapsort in place into ascending (d2, ref) order */
	__device__ __forceinline__ void sort()
	{
		for (int end = size - 1; end > 0; end--)
		{
			KdNeighbor	top = h[0];
			KdNeighbor	x = h[end];
			int			i = 0;

			for (;;)
			{
				int			c = 2 * i + 1;

				if (c >= end)
					break;
				if (c + 1 < end &&
					kdc_less(h[c].d2, h[c].ref, h[c + 1].d2, h[c + 1].ref))
					c++;
				if (!kdc_less(x.d2, x.ref, h[c].d2, h[c].ref))
					break;
				h[i] = h[c];
				i = c;
			}
			h[i] = x;
			h[end] = top;
		}
	}
};

#endif							/* KDGPU_COMMON_CUH */
