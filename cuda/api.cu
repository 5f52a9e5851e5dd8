/*
 * api.cu
 *	  The exported entry table of kdgpu_cuda.so, device probing, tree upload
 *	  and release, and the host helpers shared by the other files: errors,
 *	  device allocation lists, memory budgets, synchronization with interrupt
 *	  polling, finiteness checks and the spatial ordering of query points.
 *
 * Design.  The library uses one device at a time (device 0 unless
 * select_device() chose another; a tree's calls run on its own device) and
 * the default stream.  Nothing here
 * prints or exits; every failure is reported through KdError.  A CUDA error
 * caused by a failed kernel is sticky for the context, which the caller will
 * see on its next call; allocation failures are not, and become
 * KD_ERR_GPU_NOMEM.
 *
 * Queries are ordered spatially by a Morton code of their coordinates,
 * quantized inside the bounding box of the batch (bits per dimension shrink
 * with the dimension so the code fits 63 bits), and sorted with CUB's radix
 * sort; threads of a warp then walk neighbouring paths of the tree.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <new>

#include <cub/device/device_radix_sort.cuh>

#include "common.cuh"

/*
 * Test-only fault injection, from the environment variable KDGPU_FAULT,
 * read once per process (test/gpu/faults.sh drives it):
 *	 nomem:N	the N-th device allocation of the process fails as out of
 *				memory (counted from 1 over kdc_alloc and device trees)
 *	 kernel:N	the N-th synchronization after kernels reports a failed
 *				launch (cudaErrorLaunchFailure), the context stays usable
 *	 trap:N		the N-th synchronization first runs a kernel that traps:
 *				a real launch failure, sticky for the process's context
 * ("absent", a GPU library that cannot be loaded, is the engine's:
 * src/engine/kd_gpu.c.)  Every path must then free what it allocated and
 * report the error; the engine falls back to the CPU or fails cleanly.
 */
typedef enum KdcFault
{
	KDC_FAULT_NONE,
	KDC_FAULT_NOMEM,
	KDC_FAULT_KERNEL,
	KDC_FAULT_TRAP
} KdcFault;

static KdcFault kdc_fault = KDC_FAULT_NONE;
static long kdc_fault_at = 0;
static bool kdc_fault_read = false;
static long kdc_fault_allocs = 0;
static long kdc_fault_syncs = 0;

/* Read KDGPU_FAULT once. */
static void
kdc_fault_init(void)
{
	const char *v = getenv("KDGPU_FAULT");
	const char *colon;

	if (kdc_fault_read)
		return;
	kdc_fault_read = true;
	if (v == NULL || (colon = strchr(v, ':')) == NULL)
		return;
	kdc_fault_at = strtol(colon + 1, NULL, 10);
	if (strncmp(v, "nomem:", 6) == 0)
		kdc_fault = KDC_FAULT_NOMEM;
	else if (strncmp(v, "kernel:", 7) == 0)
		kdc_fault = KDC_FAULT_KERNEL;
	else if (strncmp(v, "trap:", 5) == 0)
		kdc_fault = KDC_FAULT_TRAP;
}

/* A kernel that traps: the sticky error of KDGPU_FAULT=trap. */
static __global__ void
kdc_trap_kernel(void)
{
	__trap();
}

/* cudaMalloc, failing as out of memory where KDGPU_FAULT says so. */
static cudaError_t
kdc_malloc(void **ptr, size_t bytes)
{
	kdc_fault_init();
	if (kdc_fault == KDC_FAULT_NOMEM && ++kdc_fault_allocs == kdc_fault_at)
	{
		*ptr = NULL;
		return cudaErrorMemoryAllocation;
	}
	return cudaMalloc(ptr, bytes);
}

/* cudaDeviceSynchronize, failing where KDGPU_FAULT says so. */
static cudaError_t
kdc_device_sync(void)
{
	kdc_fault_init();
	if (kdc_fault == KDC_FAULT_KERNEL || kdc_fault == KDC_FAULT_TRAP)
	{
		if (++kdc_fault_syncs == kdc_fault_at)
		{
			if (kdc_fault == KDC_FAULT_KERNEL)
			{
				cudaDeviceSynchronize();
				return cudaErrorLaunchFailure;
			}
			kdc_trap_kernel <<< 1, 1 >>> ();
		}
	}
	return cudaDeviceSynchronize();
}

/* Report a failed CUDA call; allocation failures become KD_ERR_GPU_NOMEM. */
KdStatus
kdc_cuda_error(KdError *err, cudaError_t e, const char *what)
{
	KdStatus	code = KD_ERR_GPU;

	if (e == cudaErrorMemoryAllocation)
	{
		code = KD_ERR_GPU_NOMEM;
		cudaGetLastError();		/* not sticky: clear it */
	}
	else if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
			 e == cudaErrorInitializationError ||
			 e == cudaErrorCompatNotSupportedOnDevice ||
			 e == cudaErrorSystemDriverMismatch ||
			 e == cudaErrorNoKernelImageForDevice)
		code = KD_ERR_GPU_UNAVAILABLE;
	return kde_set_error(err, code, -1, "CUDA error in %s: %s (%s)", what,
					 cudaGetErrorString(e), cudaGetErrorName(e));
}

/*
 * The device new trees go to and probe() describes, for the calling
 * thread: 0 unless select_device() chose another (the GPU service places
 * trees on every device of the host, and a split copy drives each device
 * from a thread of its own).
 */
thread_local int kdc_device = 0;

/* Make device current; KD_ERR_GPU_UNAVAILABLE if there is none. */
KdStatus
kdc_begin(int device, KdError *err)
{
	int			count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);

	if (e != cudaSuccess)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
						 "no usable CUDA device: %s", cudaGetErrorString(e));
	if (count < 1)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1, "no CUDA device");
	if (device < 0 || device >= count)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
						 "no CUDA device %d (%d present)", device, count);
	e = cudaSetDevice(device);
	if (e != cudaSuccess)
		return kdc_cuda_error(err, e, "cudaSetDevice");
	return KD_OK;
}

/* Allocate device memory and record it in a; the list frees it later. */
KdStatus
kdc_alloc(KdcAllocs *a, void **ptr, size_t bytes, const char *what,
		  KdError *err)
{
	cudaError_t e;

	*ptr = NULL;
	if (a->count >= KDC_MAX_ALLOCS)
		return kde_set_error(err, KD_ERR_GPU, -1,
						 "too many device allocations (%s)", what);
	e = kdc_malloc(ptr, bytes ? bytes : 1);
	if (e != cudaSuccess)
	{
		*ptr = NULL;
		cudaGetLastError();
		if (e == cudaErrorMemoryAllocation)
			return kde_set_error(err, KD_ERR_GPU_NOMEM, -1,
							 "out of device memory allocating %zu bytes for %s",
							 bytes, what);
		return kdc_cuda_error(err, e, what);
	}
	a->ptr[a->count++] = *ptr;
	return KD_OK;
}

/* Free every allocation recorded in a (waits for pending work first). */
void
kdc_free_all(KdcAllocs *a)
{
	cudaDeviceSynchronize();
	while (a->count > 0)
		cudaFree(a->ptr[--a->count]);
}

/*
 * Device memory this call may allocate: the free memory less a safety
 * margin, capped by exec->gpu_memory_limit less the reserved bytes (the
 * resident tree the call works on).
 */
KdStatus
kdc_budget(const KdExec *exec, size_t reserved, size_t *budget, KdError *err)
{
	size_t		freemem = 0;
	size_t		total = 0;
	size_t		margin;
	cudaError_t e = cudaMemGetInfo(&freemem, &total);

	if (e != cudaSuccess)
		return kdc_cuda_error(err, e, "cudaMemGetInfo");
	margin = total / 50 + ((size_t) 64 << 20);
	*budget = freemem > margin ? freemem - margin : 0;
	if (exec && exec->gpu_memory_limit > 0)
	{
		size_t		limit = (size_t) exec->gpu_memory_limit;

		limit = limit > reserved ? limit - reserved : 0;
		if (limit < *budget)
			*budget = limit;
	}
	return KD_OK;
}

/* Wait for the device, report kernel errors, then poll the interrupt. */
KdStatus
kdc_sync(const KdExec *exec, const char *what, KdError *err)
{
	cudaError_t e = kdc_device_sync();

	if (e == cudaSuccess)
		e = cudaGetLastError();
	if (e != cudaSuccess)
		return kdc_cuda_error(err, e, what);
	return kdc_poll(exec, err);
}

/* KD_ERR_CANCELED if the interrupt callback asks to stop. */
KdStatus
kdc_poll(const KdExec *exec, KdError *err)
{
	if (exec && exec->interrupt && exec->interrupt(exec->interrupt_arg))
		return kde_set_error(err, KD_ERR_CANCELED, -1, "canceled");
	return KD_OK;
}

/* Record the lowest point index with a non-finite coordinate. */
static __global__ void
find_nonfinite_kernel(const double *pts, int64_t count, unsigned long long *first)
{
	int64_t		i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;

	if (i < count && !isfinite(pts[i]))
		atomicMin(first, (unsigned long long) i);
}

/*
 * Copy n points and their refs (host) to d_pts and d_refs (device), then
 * reject NaN and infinite coordinates.
 */
KdStatus
kdc_upload_points(const double *points, const uint64_t *refs, int64_t n,
				  int dim, double *d_pts, uint64_t *d_refs, KdcAllocs *a,
				  const KdExec *exec, KdError *err)
{
	cudaError_t e;

	e = kdc_to_device(d_pts, points, sizeof(double) * dim * n, exec);
	if (e == cudaSuccess)
		e = kdc_to_device(d_refs, refs, sizeof(uint64_t) * n, exec);
	if (e != cudaSuccess)
		return kdc_cuda_error(err, e, "uploading points");
	return kdc_check_finite(d_pts, n, dim, 0, "point", a, err);
}

/*
 * KD_ERR_NONFINITE (item = base + point) if a point of d_pts has a NaN or
 * infinite coordinate; what names the points in the message.
 */
KdStatus
kdc_check_finite(const double *d_pts, int64_t n, int dim, int64_t base,
				 const char *what, KdcAllocs *a, KdError *err)
{
	unsigned long long *d_first;
	unsigned long long first = ~0ULL;
	double		bad = 0;
	KdStatus	st;
	cudaError_t e;

	if (n == 0)
		return KD_OK;
	st = kdc_alloc(a, (void **) &d_first, sizeof(first), "a finiteness check", err);
	if (st != KD_OK)
		return st;
	cudaMemcpy(d_first, &first, sizeof(first), cudaMemcpyHostToDevice);
	find_nonfinite_kernel <<< kdc_blocks(n * dim), KDC_BLOCK >>> (d_pts, n * dim, d_first);
	e = cudaMemcpy(&first, d_first, sizeof(first), cudaMemcpyDeviceToHost);
	if (e == cudaSuccess)
		e = cudaGetLastError();
	if (e != cudaSuccess)
		return kdc_cuda_error(err, e, "the finiteness check");
	if (first == ~0ULL)
		return KD_OK;
	cudaMemcpy(&bad, d_pts + first, sizeof(bad), cudaMemcpyDeviceToHost);
	return kde_set_error(err, KD_ERR_NONFINITE, base + (int64_t) (first / dim),
					 "%s %lld has a %s coordinate", what,
					 (long long) (base + (int64_t) (first / dim)),
					 bad != bad ? "NaN" : "infinite");
}

/* Blocks of the bounding-box kernel (a grid-stride loop). */
#define BBOX_BLOCKS 1024

/*
 * Per-dimension bounding box of the points, as ordered bits: each thread
 * reduces a strided share, each warp its threads, then one atomic per warp.
 */
static __global__ void
bbox_kernel(const double *pts, int64_t n, int dim, unsigned long long *box)
{
	unsigned long long lo[KD_MAX_DIM];
	unsigned long long hi[KD_MAX_DIM];

#pragma unroll
	for (int j = 0; j < KD_MAX_DIM; j++)
	{
		lo[j] = ~0ULL;
		hi[j] = 0;
	}
	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n;
		 i += (int64_t) gridDim.x * blockDim.x)
	{
#pragma unroll
		for (int j = 0; j < KD_MAX_DIM; j++)
			if (j < dim)
			{
				unsigned long long b = kdc_ordered_bits(pts[i * dim + j]);

				lo[j] = b < lo[j] ? b : lo[j];
				hi[j] = b > hi[j] ? b : hi[j];
			}
	}
#pragma unroll
	for (int j = 0; j < KD_MAX_DIM; j++)
		if (j < dim)
		{
			for (int off = 16; off > 0; off >>= 1)
			{
				unsigned long long l = __shfl_xor_sync(0xffffffffu, lo[j], off);
				unsigned long long h = __shfl_xor_sync(0xffffffffu, hi[j], off);

				lo[j] = l < lo[j] ? l : lo[j];
				hi[j] = h > hi[j] ? h : hi[j];
			}
			if ((threadIdx.x & 31) == 0)
			{
				atomicMin(&box[j], lo[j]);
				atomicMax(&box[KD_MAX_DIM + j], hi[j]);
			}
		}
}

/* Bits per dimension of the Morton code, 30 bits at most in all. */
static __host__ __device__ __forceinline__ int
morton_bits(int dim)
{
	return 30 / dim;
}

/*
 * Morton code of each point inside the box, above it the point's segment
 * (index / segment, when segment > 0), and the identity permutation.
 */
static __global__ void
morton_kernel(const double *pts, int64_t n, int dim, int64_t segment,
			  const unsigned long long *box, uint64_t *codes, uint32_t *idx)
{
	int64_t		i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	int			bits = morton_bits(dim);
	double		top = (double) ((1u << bits) - 1);
	uint32_t	cell[KD_MAX_DIM];
	uint64_t	code = segment > 0 ? (uint64_t) (i / segment) : 0;

	if (i >= n)
		return;
	for (int j = 0; j < dim; j++)
	{
		double		lo = kdc_from_ordered_bits(box[j]);
		double		hi = kdc_from_ordered_bits(box[KD_MAX_DIM + j]);
		double		w = hi - lo;
		double		f = w > 0 && w < 1e308 ? (pts[i * dim + j] - lo) / w : 0.0;

		f = f < 0 ? 0 : (f > 1 ? 1 : f);
		cell[j] = (uint32_t) (f * top);
	}
	for (int b = bits - 1; b >= 0; b--)
		for (int j = 0; j < dim; j++)
			code = (code << 1) | ((cell[j] >> b) & 1u);
	code <<= 30 - bits * dim;
	codes[i] = code;
	idx[i] = (uint32_t) i;
}

/*
 * Fill d_perm with the indexes 0..n-1 of d_pts in Morton order, or, with
 * segment > 0, in segments of that many consecutive indexes, each in Morton
 * order: positions [j * segment, (j + 1) * segment) of d_perm then hold the
 * indexes of that same range.  Needs KDC_ORDER_BYTES(n) of device memory
 * (released when a is freed).
 */
KdStatus
kdc_spatial_order(const double *d_pts, int64_t n, int dim, int64_t segment,
				  uint32_t *d_perm, KdcAllocs *a, KdError *err)
{
	unsigned long long box[2 * KD_MAX_DIM];
	unsigned long long *d_box;
	uint64_t   *d_codes;
	uint32_t   *d_idx;
	void	   *d_temp = NULL;
	size_t		temp_bytes = 0;
	int			bits = 30;
	int64_t		blocks = n / KDC_BLOCK + 1;
	KdStatus	st;
	cudaError_t e;

	if (n == 0)
		return KD_OK;
	if (segment > 0)
		for (int64_t s = (n - 1) / segment; s > 0; s >>= 1)
			bits++;
	for (int j = 0; j < KD_MAX_DIM; j++)
	{
		box[j] = ~0ULL;
		box[KD_MAX_DIM + j] = 0;
	}
	cub::DeviceRadixSort::SortPairs(NULL, temp_bytes, (uint64_t *) NULL,
									(uint64_t *) NULL, (uint32_t *) NULL,
									(uint32_t *) NULL, n, 0, bits);
	if ((st = kdc_alloc(a, (void **) &d_box, sizeof(box), "a bounding box", err)) != KD_OK ||
		(st = kdc_alloc(a, (void **) &d_codes, sizeof(uint64_t) * 2 * n, "Morton codes", err)) != KD_OK ||
		(st = kdc_alloc(a, (void **) &d_idx, sizeof(uint32_t) * n, "query order", err)) != KD_OK ||
		(st = kdc_alloc(a, &d_temp, temp_bytes, "sort space", err)) != KD_OK)
		return st;
	cudaMemcpy(d_box, box, sizeof(box), cudaMemcpyHostToDevice);
	bbox_kernel <<< (unsigned int) (blocks < BBOX_BLOCKS ? blocks : BBOX_BLOCKS), KDC_BLOCK >>>
		(d_pts, n, dim, d_box);
	morton_kernel <<< kdc_blocks(n), KDC_BLOCK >>> (d_pts, n, dim, segment, d_box, d_codes, d_idx);
	e = cub::DeviceRadixSort::SortPairs(d_temp, temp_bytes, d_codes, d_codes + n,
										d_idx, d_perm, n, 0, bits);
	if (e == cudaSuccess)
		e = cudaGetLastError();
	if (e != cudaSuccess)
		return kdc_cuda_error(err, e, "the query ordering");
	return KD_OK;
}

/* Reject k outside 1..KD_MAX_K. */
KdStatus
kdc_check_k(int k, KdError *err)
{
	if (k < 1 || k > KD_MAX_K)
		return kde_set_error(err, KD_ERR_ARG, -1,
						 "k = %d is out of range 1..%d", k, KD_MAX_K);
	return KD_OK;
}

/* Describe the device select_device() chose (device 0 unless it chose another). */
static KdStatus
kdc_probe(KdGpuInfo *info, KdError *err)
{
	int			driver = 0;
	int			runtime = 0;
	int			count = 0;
	cudaDeviceProp prop;
	size_t		freemem = 0;
	size_t		total = 0;
	cudaError_t e;

	memset(info, 0, sizeof(*info));
	cudaRuntimeGetVersion(&runtime);
	info->runtime_version = runtime;
	if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
						 "no NVIDIA driver is installed");
	info->driver_version = driver;
	e = cudaGetDeviceCount(&count);
	if (e == cudaErrorInsufficientDriver)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
						 "the NVIDIA driver (CUDA %d.%d) is older than this library's runtime (CUDA %d.%d)",
						 driver / 1000, driver % 1000 / 10,
						 runtime / 1000, runtime % 1000 / 10);
	if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0))
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1, "no CUDA device is present");
	if (e != cudaSuccess)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
						 "CUDA is not usable: %s", cudaGetErrorString(e));
	info->device_count = count;
	info->device = kdc_device;
	if (kdc_device >= count)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
						 "no CUDA device %d (%d present)", kdc_device, count);
	e = cudaGetDeviceProperties(&prop, kdc_device);
	if (e != cudaSuccess)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
						 "cannot query CUDA device %d: %s", kdc_device,
						 cudaGetErrorString(e));
	snprintf(info->name, sizeof(info->name), "%s", prop.name);
	info->cc_major = prop.major;
	info->cc_minor = prop.minor;
	info->multiprocessors = prop.multiProcessorCount;
	info->total_memory = (int64_t) prop.totalGlobalMem;
	if (prop.major < 8)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
						 "CUDA device %d (%s) has compute capability %d.%d; 8.0 or later is needed",
						 kdc_device, prop.name, prop.major, prop.minor);
	e = cudaSetDevice(kdc_device);
	if (e == cudaSuccess)
		e = cudaMemGetInfo(&freemem, &total);
	if (e != cudaSuccess)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
						 "cannot use CUDA device %d (%s): %s", kdc_device,
						 prop.name, cudaGetErrorString(e));
	info->free_memory = (int64_t) freemem;
	info->total_memory = (int64_t) total;
	return KD_OK;
}

/*
 * Make device the one the calling thread's new trees go to and its probe()
 * describes.  Calls on a tree run on the tree's own device whatever this
 * says.
 */
static KdStatus
kdc_select_device(int device, KdError *err)
{
	int			count = 0;

	if (cudaGetDeviceCount(&count) != cudaSuccess || device < 0 || device >= count)
		return kde_set_error(err, KD_ERR_ARG, -1, "no CUDA device %d (%d present)",
							device, count);
	kdc_device = device;
	return KD_OK;
}

/* Free a device tree. */
void
kdc_release(KdGpuTree *gtree)
{
	if (gtree == NULL)
		return;
	cudaSetDevice(gtree->device);
	cudaFree(gtree->coords);
	cudaFree(gtree->coords_f);
	cudaFree(gtree->refs);
	cudaFree(gtree->split);
	cudaFree(gtree->bounds);
	delete gtree;
}

/* Device bytes of a tree. */
size_t
kdc_tree_bytes(int64_t n, int dim, int64_t nbounds)
{
	return (size_t) n * (sizeof(double) * dim + sizeof(uint64_t) + 1) +
		(size_t) nbounds * 2 * dim * sizeof(double);
}

/* Device bytes that a tree holds, its float copy included. */
size_t
kdc_tree_size(const KdGpuTree *gtree)
{
	return kdc_tree_bytes(gtree->n, gtree->dim, gtree->nbounds) +
		(gtree->coords_f ? sizeof(float) * kdc_float_stride(gtree->dim) * (size_t) gtree->n : 0);
}

/*
 * Allocate a device tree of n points; its arrays are owned by it, not by an
 * allocation list.
 */
KdStatus
kdc_tree_create(int64_t n, int dim, int64_t nbounds, const KdExec *exec,
				KdGpuTree **out, KdError *err)
{
	KdGpuTree  *g;
	size_t		budget;
	size_t		need = kdc_tree_bytes(n, dim, nbounds);
	KdStatus	st;
	cudaError_t e;

	*out = NULL;
	if ((st = kdc_budget(exec, 0, &budget, err)) != KD_OK)
		return st;
	if (need > budget)
		return kde_set_error(err, KD_ERR_GPU_NOMEM, -1,
						 "a tree of %lld points needs %zu MB of device memory, %zu MB are available",
						 (long long) n, need >> 20, budget >> 20);
	g = new(std::nothrow) KdGpuTree();
	if (g == NULL)
		return kde_set_error(err, KD_ERR_NOMEM, -1, "out of host memory");
	g->n = n;
	g->dim = dim;
	g->nbounds = nbounds;
	if (cudaGetDevice(&g->device) != cudaSuccess)
		g->device = kdc_device;
	e = kdc_malloc((void **) &g->coords, sizeof(double) * dim * n + 1);
	if (e == cudaSuccess)
		e = kdc_malloc((void **) &g->refs, sizeof(uint64_t) * n + 1);
	if (e == cudaSuccess)
		e = kdc_malloc((void **) &g->split, n + 1);
	if (e == cudaSuccess)
		e = kdc_malloc((void **) &g->bounds, sizeof(double) * 2 * dim * nbounds + 1);
	if (e != cudaSuccess)
	{
		kdc_release(g);
		return kdc_cuda_error(err, e, "allocating a device tree");
	}
	*out = g;
	return KD_OK;
}

/* Copy a host tree to the device. */
static KdStatus
kdc_upload(const KdTree *tree, KdGpuTree **out, const KdExec *exec,
		   KdError *err)
{
	KdGpuTree  *g;
	int64_t		n = tree->n;
	int			dim = tree->dim;
	KdStatus	st;
	cudaError_t e;

	*out = NULL;
	if ((st = kdc_begin(kdc_device, err)) != KD_OK)
		return st;
	if (dim < 1 || dim > KD_MAX_DIM || n < 0 || tree->nbounds != kde_tree_nbounds(n))
		return kde_set_error(err, KD_ERR_ARG, -1, "malformed tree");
	if ((st = kdc_tree_create(n, dim, tree->nbounds, exec, &g, err)) != KD_OK)
		return st;
	g->ref_order = tree->ref_order;
	e = kdc_to_device(g->coords, tree->coords, sizeof(double) * dim * n, exec);
	if (e == cudaSuccess)
		e = kdc_to_device(g->refs, tree->refs, sizeof(uint64_t) * n, exec);
	if (e == cudaSuccess)
		e = kdc_to_device(g->split, tree->split, n, exec);
	if (e == cudaSuccess)
		e = kdc_to_device(g->bounds, tree->bounds,
						  sizeof(double) * 2 * dim * tree->nbounds, exec);
	if (e != cudaSuccess)
	{
		kdc_release(g);
		return kdc_cuda_error(err, e, "uploading a tree");
	}
	if ((st = kdc_tree_box_flags(g, exec, err)) != KD_OK ||
		(st = kdc_tree_compact(g, exec, err)) != KD_OK)
	{
		kdc_release(g);
		return st;
	}
	*out = g;
	return KD_OK;
}

static const KdCudaApi kdc_api = {
	KDGPU_CUDA_ABI_VERSION,
	kdc_probe,
	kdc_select_device,
	kdc_upload,
	kdc_release,
	kdc_build,
	kdc_knn,
	kdc_all_knn,
	kdc_radius,
	kdc_box,
	kdc_dbscan,
	kdc_flat_knn,
	kdc_flat_radius,
	kdc_vp_build,
	kdc_vp_knn,
	kdc_vp_upload,
	kdc_vp_search,
	kdc_vp_release
};

/* The one exported symbol: the entry table. */
extern "C" __attribute__((visibility("default"))) const KdCudaApi *
kdgpu_cuda_api(void)
{
	return &kdc_api;
}
