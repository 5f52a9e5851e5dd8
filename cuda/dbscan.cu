/*
 * dbscan.cu
 *	  Density clusters (DBSCAN) of a device tree's points, by the passes of
 *	  src/engine/kd_dbscan.c, with one thread per point.
 *
 * Design.  One thread per point, in node order: a level's nodes in index
 * order are neighbouring cells, so the threads of a warp walk the same
 * nodes.  Every walk is kdc_range_search's (range_walk.cuh), instantiated
 * for 2-D and 3-D trees, so a pair is found exactly when the CPU's walk
 * finds it, and the reach and tie tests are the CPU's expressions, rounded
 * alike (no FMA).  The passes:
 *
 *	count	 core flags, the undecided pairs (an atomic counter), and each
 *			 point's first KDC_DBSCAN_LIST neighbours within reach, so that
 *			 the next passes walk again only for points with more;
 *	join	 the core points' sets: a union-find by node whose roots are the
 *			 lowest nodes, linked by compare-and-swap (src/engine/kd_sets.h
 *			 states the rule);
 *	attach	 every other point to its nearest core point by (d2, ref), and
 *			 the undecided choices (the result does not depend on the order
 *			 of the hits, so a list serves as well as a walk);
 *	number	 each set's lowest ref (an atomic minimum), a mark on it by
 *			 ref, an exclusive scan of the marks, and the labels by ref.
 *
 * Only the labels (4 bytes a point) and two counters cross to the host.
 * The walks run in paced slices, which poll the interrupt between them.
 */
#include <math_constants.h>

#include <cub/device/device_scan.cuh>

#include "../src/engine/kd_dbscan_args.h"
#include "range_walk.cuh"

/* Neighbours within reach kept per point by the count pass. */
#define KDC_DBSCAN_LIST 16

/* What the kernels share, by value. */
typedef struct DbscanDev
{
	KdGpuTree	t;
	KdDbscan	args;
	uint8_t    *core;			/* by node */
	int32_t    *nbr;			/* by node: KDC_DBSCAN_LIST neighbours */
	int32_t    *nnbr;			/* by node: its neighbours within reach */
	int32_t    *parent;			/* by node */
	int32_t    *root;			/* by node: its set's root, or -1 */
	int32_t    *first;			/* by root: the set's lowest ref */
	int32_t    *mark;			/* by ref: 1 on a set's lowest ref */
	int32_t    *number;			/* by ref: the scan of mark */
	int32_t    *labels;			/* by ref */
	unsigned long long *counters;	/* undecided, then refs out of range */
} DbscanDev;

/* The root of i's set, halving the path on the way (kd_sets.h's rule). */
static __device__ __forceinline__ int32_t
set_find(int32_t *parent, int32_t i)
{
	volatile int32_t *p = parent;

	for (;;)
	{
		int32_t		up = p[i];
		int32_t		g;

		if (up == i)
			return i;
		g = p[up];
		if (g != up)
			p[i] = g;
		i = g;
	}
}

/* Join the sets of a and b under the lower root. */
static __device__ __forceinline__ void
set_union(int32_t *parent, int32_t a, int32_t b)
{
	for (;;)
	{
		int32_t		ra = set_find(parent, a);
		int32_t		rb = set_find(parent, b);
		int32_t		hi = ra > rb ? ra : rb;

		if (ra == rb || atomicCAS(&parent[hi], hi, ra > rb ? rb : ra) == hi)
			return;
	}
}

/* Every node its own set, no set's first ref yet; refs checked. */
static __global__ void
init_kernel(DbscanDev d)
{
	int64_t		i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;

	if (i >= d.t.n)
		return;
	d.parent[i] = (int32_t) i;
	d.first[i] = INT32_MAX;
	d.mark[i] = 0;
	if (d.t.refs[i] >= (uint64_t) d.t.n)
		atomicAdd(&d.counters[1], 1ULL);
}

/*
 * Call visit(node) for each point within reach of node i but i itself:
 * from the count pass's list when it holds them all, else by a walk of
 * radius within.  a holds i's point.
 */
template <int D, typename Visit>
static __device__ __forceinline__ void
each_within(const DbscanDev &d, int64_t i, const double *a, Visit visit)
{
	int32_t		m = d.nnbr[i];
	double		b[D];

	if (m <= KDC_DBSCAN_LIST)
	{
		for (int32_t k = 0; k < m; k++)
			visit((int64_t) d.nbr[i * KDC_DBSCAN_LIST + k]);
		return;
	}
	b[0] = d.args.within;
	kdc_range_search<false, D>(d.t, a, b, [&](double, int64_t node)
							   {
								   if (node != i)
									   visit(node);
							   });
}

/* Count pass over nodes [start, start + count). */
template <int D>
static __global__ void __launch_bounds__(KDC_BLOCK)
count_kernel(DbscanDev d, int64_t start, int64_t count)
{
	int64_t		i = start + blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	double		a[D];
	double		b[D];
	int32_t    *row;
	int32_t		m = 0;
	int64_t		undecided = 0;

	if (i >= start + count)
		return;
	row = d.nbr + i * KDC_DBSCAN_LIST;
	kdc_load_point<D>(a, d.t.coords + i * d.t.dim, d.t.dim);
	b[0] = d.args.beyond;
	kdc_range_search<false, D>(d.t, a, b, [&](double d2, int64_t node)
							   {
								   if (node == i)
									   return;
								   if (sqrt(d2) <= d.args.within)
								   {
									   if (m < KDC_DBSCAN_LIST)
										   row[m] = (int32_t) node;
									   m++;
								   }
								   else
									   undecided++;
							   });
	d.nnbr[i] = m;
	d.core[i] = m + 1 >= d.args.minpoints;
	if (undecided > 0)
		atomicAdd(&d.counters[0], (unsigned long long) undecided);
}

/* Join pass: the core points among nodes [start, start + count). */
template <int D>
static __global__ void __launch_bounds__(KDC_BLOCK)
join_kernel(DbscanDev d, int64_t start, int64_t count)
{
	int64_t		i = start + blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	double		a[D];

	if (i >= start + count || !d.core[i] || !(d.args.within >= 0))
		return;
	kdc_load_point<D>(a, d.t.coords + i * d.t.dim, d.t.dim);
	each_within<D>(d, i, a, [&](int64_t node)
				   {
					   if (node > i && d.core[node])
						   set_union(d.parent, (int32_t) i, (int32_t) node);
				   });
}

/*
 * Attach pass over nodes [start, start + count): a core point's root, or
 * another point's nearest core point's (kd_dbscan.c's attach_hit keeps the
 * same three values).
 */
template <int D>
static __global__ void __launch_bounds__(KDC_BLOCK)
attach_kernel(DbscanDev d, int64_t start, int64_t count)
{
	int64_t		i = start + blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	double		a[D];
	int64_t		best = -1;
	double		best_d2 = 0.0;
	int32_t		best_root = -1;
	double		other_d2 = CUDART_INF;

	if (i >= start + count)
		return;
	if (d.core[i])
	{
		d.root[i] = set_find(d.parent, (int32_t) i);
		return;
	}
	if (d.args.within >= 0)
	{
		kdc_load_point<D>(a, d.t.coords + i * d.t.dim, d.t.dim);
		each_within<D>(d, i, a, [&](int64_t node)
					   {
						   double		d2;
						   int32_t		r;

						   if (!d.core[node])
							   return;
						   d2 = kdc_dist2<D>(a, d.t.coords + node * d.t.dim, d.t.dim);
						   r = set_find(d.parent, (int32_t) node);
						   if (best < 0 || d2 < best_d2 ||
							   (d2 == best_d2 && d.t.refs[node] < d.t.refs[best]))
						   {
							   if (best >= 0 && r != best_root)
								   other_d2 = best_d2;
							   best = node;
							   best_d2 = d2;
							   best_root = r;
						   }
						   else if (r != best_root && d2 < other_d2)
							   other_d2 = d2;
					   });
	}
	d.root[i] = best_root;
	if (best >= 0 && sqrt(other_d2) <
		__dadd_rn(__dmul_rn(sqrt(best_d2), 1.0 + d.args.tie_rel), d.args.tie_abs))
		atomicAdd(&d.counters[0], 1ULL);
}

/* Each set's lowest ref, over nodes. */
static __global__ void
first_kernel(DbscanDev d)
{
	int64_t		i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;

	if (i < d.t.n && d.root[i] >= 0)
		atomicMin(&d.first[d.root[i]], (int32_t) d.t.refs[i]);
}

/* A mark on each set's lowest ref, over nodes. */
static __global__ void
mark_kernel(DbscanDev d)
{
	int64_t		i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;

	if (i < d.t.n && d.root[i] >= 0 &&
		d.first[d.root[i]] == (int32_t) d.t.refs[i])
		d.mark[d.t.refs[i]] = 1;
}

/* The labels by ref, over nodes. */
static __global__ void
label_kernel(DbscanDev d)
{
	int64_t		i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	int32_t		r;

	if (i >= d.t.n)
		return;
	r = d.root[i];
	d.labels[d.t.refs[i]] = r < 0 ? -1 : d.number[d.first[r]];
}

/* The kernels of one pass, by dimension. */
typedef void (*DbscanKernel) (DbscanDev d, int64_t start, int64_t count);
typedef struct DbscanPass
{
	DbscanKernel k2;
	DbscanKernel k3;
	DbscanKernel kn;
} DbscanPass;

/* Run one pass over all points in paced slices. */
static KdStatus
dbscan_walks(const DbscanDev &d, DbscanPass pass, int64_t *slice,
			 const KdExec *exec, KdError *err)
{
	DbscanKernel kernel = d.t.dim == 2 ? pass.k2 : (d.t.dim == 3 ? pass.k3 : pass.kn);

	return kdc_run_paced(exec, d.t.n, slice, "DBSCAN", err,
						 [&](int64_t start, int64_t count)
						 {
							 kernel <<< kdc_blocks(count), KDC_BLOCK >>> (d, start, count);
						 });
}

/* The two counters, from the device. */
static KdStatus
dbscan_counters(const DbscanDev &d, unsigned long long *c, KdError *err)
{
	cudaError_t e = cudaMemcpy(c, d.counters, 2 * sizeof(unsigned long long),
							   cudaMemcpyDeviceToHost);

	return e == cudaSuccess ? KD_OK : kdc_cuda_error(err, e, "reading DBSCAN's counters");
}

static const DbscanPass count_pass = {count_kernel<2>, count_kernel<3>, count_kernel<KD_MAX_DIM>};
static const DbscanPass join_pass = {join_kernel<2>, join_kernel<3>, join_kernel<KD_MAX_DIM>};
static const DbscanPass attach_pass = {attach_kernel<2>, attach_kernel<3>, attach_kernel<KD_MAX_DIM>};

/* DBSCAN; see KdCudaApi.dbscan. */
KdStatus
kdc_dbscan(const KdGpuTree *gtree, const KdDbscan *args, int32_t *labels,
		   int64_t *undecided, const KdExec *exec, KdError *err)
{
	KdcAllocs	a = {0};
	DbscanDev	d;
	int64_t		n;
	size_t		budget;
	size_t		need;
	size_t		temp_bytes = 0;
	void	   *temp = NULL;
	unsigned long long c[2] = {0, 0};
	int64_t		slice = 1 << 16;
	KdStatus	st;
	cudaError_t e;

	*undecided = 0;
	if (gtree == NULL)
		return kde_set_error(err, KD_ERR_ARG, -1, "no device tree");
	if ((st = kde_dbscan_check(gtree->n, args, err)) != KD_OK)
		return st;
	n = gtree->n;
	if (n == 0)
		return KD_OK;
	memset(&d, 0, sizeof(d));
	d.t = *gtree;
	d.args = *args;
	cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, (int32_t *) NULL,
								  (int32_t *) NULL, n);
	need = (size_t) n * (1 + (7 + KDC_DBSCAN_LIST) * sizeof(int32_t)) + temp_bytes;
	if ((st = kdc_begin(gtree->device, err)) != KD_OK ||
		(st = kdc_budget(exec, kdc_tree_size(gtree), &budget, err)) != KD_OK)
		return st;
	if (need > budget)
		return kde_set_error(err, KD_ERR_GPU_NOMEM, -1,
							 "DBSCAN of %lld points needs %zu MB of device memory, %zu MB available",
							 (long long) n, need >> 20, budget >> 20);
	if ((st = kdc_alloc(&a, (void **) &d.core, n, "core flags", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.nbr, sizeof(int32_t) * KDC_DBSCAN_LIST * n, "DBSCAN's lists", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.nnbr, sizeof(int32_t) * n, "DBSCAN's lists", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.parent, sizeof(int32_t) * n, "DBSCAN's sets", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.root, sizeof(int32_t) * n, "DBSCAN's sets", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.first, sizeof(int32_t) * n, "DBSCAN's sets", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.mark, sizeof(int32_t) * n, "DBSCAN's sets", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.number, sizeof(int32_t) * n, "DBSCAN's sets", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.labels, sizeof(int32_t) * n, "DBSCAN's labels", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d.counters, 2 * sizeof(unsigned long long), "DBSCAN's counters", err)) != KD_OK ||
		(st = kdc_alloc(&a, &temp, temp_bytes, "scan space", err)) != KD_OK)
		goto done;
	cudaMemset(d.counters, 0, 2 * sizeof(unsigned long long));
	init_kernel <<< kdc_blocks(n), KDC_BLOCK >>> (d);
	if ((st = dbscan_walks(d, count_pass, &slice, exec, err)) != KD_OK ||
		(st = dbscan_counters(d, c, err)) != KD_OK)
		goto done;
	if (c[1] > 0)
	{
		st = kde_set_error(err, KD_ERR_ARG, -1,
						   "DBSCAN needs refs 0 .. n - 1, and %llu refs are beyond",
						   c[1]);
		goto done;
	}
	if (c[0] == 0 &&
		((st = dbscan_walks(d, join_pass, &slice, exec, err)) != KD_OK ||
		 (st = dbscan_walks(d, attach_pass, &slice, exec, err)) != KD_OK ||
		 (st = dbscan_counters(d, c, err)) != KD_OK))
		goto done;
	*undecided = (int64_t) c[0];
	if (c[0] > 0)
		goto done;
	first_kernel <<< kdc_blocks(n), KDC_BLOCK >>> (d);
	mark_kernel <<< kdc_blocks(n), KDC_BLOCK >>> (d);
	e = cub::DeviceScan::ExclusiveSum(temp, temp_bytes, d.mark, d.number, n);
	if (e == cudaSuccess)
	{
		label_kernel <<< kdc_blocks(n), KDC_BLOCK >>> (d);
		e = cudaGetLastError();
	}
	if (e != cudaSuccess)
	{
		st = kdc_cuda_error(err, e, "numbering DBSCAN's clusters");
		goto done;
	}
	if ((st = kdc_sync(exec, "numbering DBSCAN's clusters", err)) != KD_OK)
		goto done;
	e = kdc_to_host(labels, d.labels, sizeof(int32_t) * n, exec);
	if (e != cudaSuccess)
		st = kdc_cuda_error(err, e, "copying DBSCAN's labels to the host");
done:
	kdc_free_all(&a);
	return st;
}
