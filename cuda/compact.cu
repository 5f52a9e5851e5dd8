/*
 * compact.cu
 *	  A float copy of a device tree's coordinates, made where it is lossless.
 *
 * Design.  A kNN walk waits on its node loads, one after the other, so what
 * it costs depends on how much of the tree the caches hold.  When every
 * coordinate of a tree is a float8 that a float4 holds exactly (data that
 * came from float4, as many point clouds do, or that was rounded to it),
 * the kNN kernels read this copy, half the bytes: each value widens back to
 * the same float8, so every distance and bound they compute is the same,
 * bit for bit.  In 3-D a node's floats and its split dimension form one
 * 16-byte record, so that a visit loads both at once; 2-D records (8 bytes
 * of padding) were slower than plain floats, so 2-D trees keep those.
 * Trees with any other coordinate keep only their float8 coordinates.
 * The copy is an optimization only: where the device has no
 * room for it the tree goes without, and the environment variable
 * KDGPU_NO_FLOAT_COPY turns it off, so that the benchmark can time the
 * float8 path on the same data (bench/README.md).
 */
#include <stdlib.h>

#include "common.cuh"

/*
 * Write every coordinate of the n nodes as float to dst, fstride floats
 * per node, and clear *exact where one does not widen back to the same
 * bits.  With fstride above dim each node's last float holds the bits of
 * its split dimension.
 */
static __global__ void
compact_kernel(const double *src, const uint8_t *split, int64_t n, int dim,
			   int fstride, float *dst, int *exact)
{
	int64_t		stride = (int64_t) gridDim.x * blockDim.x;

	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n; i += stride)
	{
		for (int j = 0; j < fstride; j++)
		{
			double		v = j < dim ? src[i * dim + j] : 0.0;
			float		f = __double2float_rn(v);

			if (__double_as_longlong((double) f) != __double_as_longlong(v))
				*exact = 0;
			dst[i * fstride + j] = f;
		}
		if (fstride > dim)
			dst[i * fstride + fstride - 1] = __int_as_float(split[i]);
	}
}

/*
 * Give gtree a float copy of its coordinates (coords_f) if every one of
 * them is a float and the device has room; otherwise leave it without.
 * Errors are only those of the device itself.
 */
KdStatus
kdc_tree_compact(KdGpuTree *gtree, const KdExec *exec, KdError *err)
{
	size_t		m = (size_t) gtree->n * kdc_float_stride(gtree->dim);
	size_t		budget;
	float	   *copy = NULL;
	int		   *d_exact = NULL;
	int			exact = 0;
	KdStatus	st;
	cudaError_t e;

	if (m == 0 || getenv("KDGPU_NO_FLOAT_COPY"))
		return KD_OK;
	if ((st = kdc_budget(exec, kdc_tree_size(gtree), &budget, err)) != KD_OK)
		return st;
	if (sizeof(float) * m + sizeof(int) > budget)
		return KD_OK;
	if (cudaMalloc((void **) &copy, sizeof(float) * m) != cudaSuccess)
	{
		cudaGetLastError();		/* no room: not an error */
		return KD_OK;
	}
	e = cudaMalloc((void **) &d_exact, sizeof(int));
	if (e == cudaSuccess)
	{
		exact = 1;
		e = cudaMemcpy(d_exact, &exact, sizeof(int), cudaMemcpyHostToDevice);
	}
	if (e == cudaSuccess)
	{
		compact_kernel <<< 1024, 256 >>> (gtree->coords, gtree->split, gtree->n,
										  gtree->dim, kdc_float_stride(gtree->dim),
										  copy, d_exact);
		e = cudaMemcpy(&exact, d_exact, sizeof(int), cudaMemcpyDeviceToHost);
	}
	cudaFree(d_exact);
	if (e != cudaSuccess || !exact)
	{
		cudaFree(copy);
		return e == cudaSuccess ? KD_OK : kdc_cuda_error(err, e, "compacting a tree");
	}
	gtree->coords_f = copy;
	return KD_OK;
}
