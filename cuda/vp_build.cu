/*
 * vp_build.cu
 *	  The vantage-point tree's build on the GPU, a level at a time with
 *	  CUB's segmented sorts and reductions: node for node and row for row
 *	  the tree kde_vp_build_cpu makes (kd_vptree.c).
 *
 * Which rows each node holds, and the nodes' numbering, depend on the row
 * count alone (an inner node's inside child takes half its rows rounded
 * up to whole leaves), so the host lays every node out first
 * (vp_layout).  The device then fills in each inner node's vantage point
 * and radii, a level at a time:
 *   1. every node of the level sorts its rows by row number, which leaves
 *      a leaf's rows in row order and puts an inner node's least row first;
 *   2. each inner node's rows get their distance from that first row, and
 *      a segmented reduction picks the farthest (ties: the greater row) as
 *      the vantage point;
 *   3. the rows get their distance from the vantage point and a stable
 *      segmented sort orders them by it, ties staying in row order: the
 *      inside child takes the first half; mu_in is the last distance in
 *      it and mu_out the first after it.
 * The distances are kd_metric.h's with the CPU's bits (vp_warp_rows), so
 * every choice is the CPU's.  The sorts write only their segments, so each
 * sort's output starts as a copy of its input.
 */
#include <stdlib.h>
#include <string.h>

#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include "vptree.cuh"

#define VP_BUILD_WARPS 4		/* warps of a distance block */

/* A row and its distance from a node's first row. */
typedef struct VpFar
{
	double		d;
	int64_t		row;
} VpFar;

/* The greater of two VpFar by (distance, row). */
struct VpFarther
{
	__host__ __device__ __forceinline__ VpFar
	operator() (const VpFar & a, const VpFar & b) const
	{
		return a.d < b.d || (a.d == b.d && a.row < b.row) ? b : a;
	}
};

/* The host's layout of the tree: its nodes, and its inner nodes by level. */
typedef struct VpLayout
{
	KdVpNode   *nodes;
	int64_t		nnodes;
	int64_t    *level;			/* nlevels + 1: the nodes of level l are
								 * [level[l], level[l + 1]) */
	int			nlevels;
	int64_t    *node_begin;		/* nnodes: each node's first position */
	int64_t    *node_end;		/* nnodes: one past its last */
	int64_t    *split;			/* nsplit inner nodes, level by level */
	int64_t    *split_begin;
	int64_t    *split_end;
	int64_t    *split_level;	/* nlevels + 1: level l's are
								 * [split_level[l], split_level[l + 1]) */
	int64_t		nsplit;
} VpLayout;

/* Free what vp_layout allocated. */
static void
vp_layout_free(VpLayout *lay)
{
	free(lay->nodes);
	free(lay->level);
	free(lay->node_begin);
	free(lay->node_end);
	free(lay->split);
	free(lay->split_begin);
	free(lay->split_end);
	free(lay->split_level);
	memset(lay, 0, sizeof(*lay));
}

/*
 * Lay out the tree of n rows with leaves of at most leaf_rows: every node
 * with kde_vp_build_cpu's numbering, counts and children, vantage points
 * and radii left for the device; false out of memory.
 */
static bool
vp_layout(int64_t n, int leaf_rows, VpLayout *lay)
{
	int64_t		cap = 64;
	int			lcap = 64;

	memset(lay, 0, sizeof(*lay));
	lay->nodes = (KdVpNode *) malloc(sizeof(KdVpNode) * cap);
	lay->level = (int64_t *) malloc(sizeof(int64_t) * lcap);
	if (lay->nodes == NULL || lay->level == NULL)
		return false;
	lay->nodes[0] = (KdVpNode) {-1, 0.0, 0.0, 0, n, -1, -1};
	lay->nnodes = 1;
	lay->level[0] = 0;
	for (int64_t lo = 0, hi = 1; lo < hi; lo = hi, hi = lay->nnodes)
	{
		if (lay->nlevels + 2 > lcap)
		{
			int64_t    *grown = (int64_t *) realloc(lay->level, sizeof(int64_t) * lcap * 2);

			if (grown == NULL)
				return false;
			lay->level = grown;
			lcap *= 2;
		}
		lay->level[++lay->nlevels] = hi;
		for (int64_t id = lo; id < hi; id++)
		{
			KdVpNode   *nd = &lay->nodes[id];
			int64_t		half = (nd->count / 2 + leaf_rows - 1) / leaf_rows * leaf_rows;

			if (nd->count <= leaf_rows)
				continue;
			if (half >= nd->count)
				half = nd->count / 2;
			if (lay->nnodes + 2 > cap)
			{
				KdVpNode   *grown = (KdVpNode *) realloc(lay->nodes, sizeof(KdVpNode) * cap * 2);

				if (grown == NULL)
					return false;
				lay->nodes = grown;
				cap *= 2;
				nd = &lay->nodes[id];
			}
			nd->inside = lay->nnodes;
			nd->outside = lay->nnodes + 1;
			lay->nodes[lay->nnodes++] = (KdVpNode) {-1, 0.0, 0.0, nd->start, half, -1, -1};
			lay->nodes[lay->nnodes++] = (KdVpNode) {-1, 0.0, 0.0, nd->start + half,
			nd->count - half, -1, -1};
			lay->nsplit++;
		}
	}
	lay->node_begin = (int64_t *) malloc(sizeof(int64_t) * lay->nnodes);
	lay->node_end = (int64_t *) malloc(sizeof(int64_t) * lay->nnodes);
	lay->split = (int64_t *) malloc(sizeof(int64_t) * (lay->nsplit + 1));
	lay->split_begin = (int64_t *) malloc(sizeof(int64_t) * (lay->nsplit + 1));
	lay->split_end = (int64_t *) malloc(sizeof(int64_t) * (lay->nsplit + 1));
	lay->split_level = (int64_t *) malloc(sizeof(int64_t) * (lay->nlevels + 1));
	if (!lay->node_begin || !lay->node_end || !lay->split ||
		!lay->split_begin || !lay->split_end || !lay->split_level)
		return false;
	lay->nsplit = 0;
	for (int l = 0; l < lay->nlevels; l++)
	{
		lay->split_level[l] = lay->nsplit;
		for (int64_t id = lay->level[l]; id < lay->level[l + 1]; id++)
		{
			KdVpNode   *nd = &lay->nodes[id];

			lay->node_begin[id] = nd->start;
			lay->node_end[id] = nd->start + nd->count;
			if (nd->inside < 0)
				continue;
			lay->split[lay->nsplit] = id;
			lay->split_begin[lay->nsplit] = nd->start;
			lay->split_end[lay->nsplit] = nd->start + nd->count;
			lay->nsplit++;
		}
	}
	lay->split_level[lay->nlevels] = lay->nsplit;
	return true;
}

/*
 * For every position of the nsplit inner nodes [begin[s], end[s]) (begins
 * ascending): its distance under M from the node's first row (far NULL)
 * or from its vantage point far[s].row, into dist, and with far_rows not
 * NULL also (distance, row) into far_rows.  A warp takes 32 positions.
 */
template <int M>
__global__ void
__launch_bounds__(VP_BUILD_WARPS * 32)
vp_distances(const double *pts, int dim, const int64_t *order, int64_t n,
			 const int64_t *begin, const int64_t *end, int64_t nsplit,
			 const VpFar *far, double *dist, VpFar *far_rows)
{
	__shared__ VpTile tiles[VP_BUILD_WARPS];
	const int	w = threadIdx.x / 32;
	const int64_t pos = ((int64_t) blockIdx.x * VP_BUILD_WARPS + w) * 32 + (threadIdx.x & 31);
	int64_t		lo = 0;
	int64_t		hi = nsplit;
	int64_t		row = -1;
	int64_t		from = -1;
	double		dd;

	if (pos - (threadIdx.x & 31) >= n)
		return;
	/* the last inner node that begins at or before pos */
	while (hi - lo > 1)
	{
		int64_t		mid = (lo + hi) / 2;

		if (begin[mid] <= pos)
			lo = mid;
		else
			hi = mid;
	}
	if (pos < n && nsplit > 0 && begin[lo] <= pos && pos < end[lo])
	{
		row = order[pos];
		from = far ? far[lo].row : order[begin[lo]];
	}
	dd = vp_warp_rows<M>(pts, dim, pts + (from >= 0 ? from : 0) * dim, row,
						 tiles[w]);
	if (row < 0)
		return;
	dist[pos] = dd;
	if (far_rows)
		far_rows[pos] = (VpFar) {dd, row};
}

/*
 * Each of a level's nsplit inner nodes (split[s], rows from begin[s], its
 * rows sorted by distance from its vantage point far[s].row in dist):
 * its vantage point and radii.
 */
__global__ void
vp_radii(KdVpNode *nodes, const int64_t *split, const int64_t *begin,
		 const VpFar *far, const double *dist, int64_t nsplit)
{
	int64_t		s = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	KdVpNode   *nd;
	int64_t		half;

	if (s >= nsplit)
		return;
	nd = &nodes[split[s]];
	half = nodes[nd->inside].count;
	nd->vp = far[s].row;
	nd->mu_in = dist[begin[s] + half - 1];
	nd->mu_out = dist[begin[s] + half];
}

/* The first n row numbers into order. */
__global__ void
vp_iota(int64_t *order, int64_t n)
{
	int64_t		i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		order[i] = i;
}

/* Device bytes for the tree of n rows, its build's scratch included. */
size_t
kdc_vp_bytes(int64_t n, int leaf_rows)
{
	int64_t		nodes = 2 * (n / (leaf_rows > 1 ? leaf_rows / 2 : 1)) + 3;

	return (size_t) n * (4 * sizeof(int64_t) + 3 * sizeof(double) + sizeof(VpFar)) +
		(size_t) nodes * (sizeof(KdVpNode) + 5 * sizeof(int64_t)) + ((size_t) 1 << 22);
}

/* What a build holds on the device. */
typedef struct VpBuildDev
{
	const double *pts;
	int64_t		n;
	int			dim;
	KdMetric	metric;
	KdVpNode   *nodes;
	int64_t    *node_begin;
	int64_t    *node_end;
	int64_t    *split;
	int64_t    *split_begin;
	int64_t    *split_end;
	int64_t    *order;			/* the rows, the current order */
	int64_t    *order2;			/* a sort's output */
	double	   *dist;
	double	   *dist2;
	VpFar	   *far_rows;		/* n */
	VpFar	   *far;			/* nsplit: each inner node's vantage point */
	void	   *temp;
	size_t		temp_bytes;
} VpBuildDev;

/* Launch vp_distances under b's metric. */
static void
vp_launch_distances(const VpBuildDev *b, int64_t s0, int64_t ns, bool from_far)
{
	int64_t		warps = (b->n + 31) / 32;
	unsigned int blocks = (unsigned int) ((warps + VP_BUILD_WARPS - 1) / VP_BUILD_WARPS);
	const VpFar *far = from_far ? b->far + s0 : NULL;
	VpFar	   *rows = from_far ? NULL : b->far_rows;

#define VP_DIST(M) vp_distances<M> <<< blocks, VP_BUILD_WARPS * 32 >>> \
		(b->pts, b->dim, b->order, b->n, b->split_begin + s0, b->split_end + s0, \
		 ns, far, b->dist, rows)
	switch (b->metric)
	{
		case KD_METRIC_L2:
			VP_DIST(0);
			break;
		case KD_METRIC_L1:
			VP_DIST(1);
			break;
		default:
			VP_DIST(2);
			break;
	}
#undef VP_DIST
}

/*
 * The CUB calls of one level (nodes [lo, hi), inner nodes [s0, s0 + ns)):
 * temp NULL asks each for its scratch bytes into *bytes (their largest),
 * else runs it.  step 0 sorts the rows of every node by row number, 1
 * picks the vantage points, 2 sorts the inner nodes' rows by distance.
 */
static cudaError_t
vp_cub(VpBuildDev *b, int step, int64_t lo, int64_t hi, int64_t s0,
	   int64_t ns, size_t *bytes)
{
	size_t		need = b->temp_bytes;
	cudaError_t e = cudaSuccess;

	if (b->temp == NULL)
		need = 0;
	switch (step)
	{
		case 0:
			e = cub::DeviceSegmentedSort::SortKeys(b->temp, need, b->order,
												   b->order2, b->n, hi - lo,
												   b->node_begin + lo,
												   b->node_end + lo);
			break;
		case 1:
			e = cub::DeviceSegmentedReduce::Reduce(b->temp, need, b->far_rows,
												   b->far + s0, ns,
												   b->split_begin + s0,
												   b->split_end + s0,
												   VpFarther(),
												   VpFar {-1.0, -1});
			break;
		default:
			e = cub::DeviceSegmentedSort::StableSortPairs(b->temp, need,
														  b->dist, b->dist2,
														  b->order, b->order2,
														  b->n, ns,
														  b->split_begin + s0,
														  b->split_end + s0);
			break;
	}
	if (b->temp == NULL && need > *bytes)
		*bytes = need;
	return e;
}

/* Swap two device pointers. */
template <typename T>
static void
vp_swap(T **a, T **b)
{
	T		   *t = *a;

	*a = *b;
	*b = t;
}

/* Build level l of lay on the device. */
static KdStatus
vp_level(VpBuildDev *b, const VpLayout *lay, int l, const KdExec *exec,
		 KdError *err)
{
	int64_t		lo = lay->level[l];
	int64_t		hi = lay->level[l + 1];
	int64_t		s0 = lay->split_level[l];
	int64_t		ns = lay->split_level[l + 1] - s0;
	size_t		bytes = 8 * b->n;
	cudaError_t e;

	if ((e = cudaMemcpy(b->order2, b->order, bytes, cudaMemcpyDeviceToDevice)) != cudaSuccess ||
		(e = vp_cub(b, 0, lo, hi, s0, ns, NULL)) != cudaSuccess)
		return kdc_cuda_error(err, e, "sorting a level's rows");
	vp_swap(&b->order, &b->order2);
	if (ns > 0)
	{
		vp_launch_distances(b, s0, ns, false);
		if ((e = cudaGetLastError()) != cudaSuccess ||
			(e = vp_cub(b, 1, lo, hi, s0, ns, NULL)) != cudaSuccess)
			return kdc_cuda_error(err, e, "choosing vantage points");
		vp_launch_distances(b, s0, ns, true);
		if ((e = cudaGetLastError()) != cudaSuccess ||
			(e = cudaMemcpy(b->order2, b->order, bytes, cudaMemcpyDeviceToDevice)) != cudaSuccess ||
			(e = vp_cub(b, 2, lo, hi, s0, ns, NULL)) != cudaSuccess)
			return kdc_cuda_error(err, e, "splitting a level's nodes");
		vp_swap(&b->order, &b->order2);
		vp_swap(&b->dist, &b->dist2);
		vp_radii <<< kdc_blocks(ns), KDC_BLOCK >>> (b->nodes, b->split + s0,
													b->split_begin + s0,
													b->far + s0, b->dist, ns);
		if ((e = cudaGetLastError()) != cudaSuccess)
			return kdc_cuda_error(err, e, "setting radii");
	}
	return kdc_sync(exec, "vantage-point tree build", err);
}

/* Copy n items of host array src into a new device array of a. */
template <typename T>
static KdStatus
vp_put(KdcAllocs *a, T **dst, const T *src, int64_t n, const char *what,
	   KdError *err)
{
	KdStatus	st;
	cudaError_t e;

	if ((st = kdc_alloc(a, (void **) dst, sizeof(T) * (n > 0 ? n : 1), what, err)) != KD_OK)
		return st;
	if (n > 0 && (e = cudaMemcpy(*dst, src, sizeof(T) * n, cudaMemcpyHostToDevice)) != cudaSuccess)
		return kdc_cuda_error(err, e, what);
	return KD_OK;
}

/* Free a host tree's arrays (kde_vp_free's work, which is not linked here). */
static void
vp_host_free(KdVpTree *host)
{
	free(host->nodes);
	free(host->order);
	memset(host, 0, sizeof(*host));
}

/* Copy the built tree back into *host (allocated here). */
static KdStatus
vp_to_host(const VpBuildDev *b, int64_t nnodes, KdVpTree *host, KdError *err)
{
	cudaError_t e;

	memset(host, 0, sizeof(*host));
	host->nodes = (KdVpNode *) malloc(sizeof(KdVpNode) * nnodes);
	host->order = (int64_t *) malloc(sizeof(int64_t) * b->n);
	if (host->nodes == NULL || host->order == NULL)
	{
		vp_host_free(host);
		return kde_set_error(err, KD_ERR_NOMEM, -1,
							 "out of memory for a vantage-point tree of %lld vectors",
							 (long long) b->n);
	}
	host->nnodes = nnodes;
	if ((e = cudaMemcpy(host->nodes, b->nodes, sizeof(KdVpNode) * nnodes,
						cudaMemcpyDeviceToHost)) != cudaSuccess ||
		(e = cudaMemcpy(host->order, b->order, sizeof(int64_t) * b->n,
						cudaMemcpyDeviceToHost)) != cudaSuccess)
	{
		vp_host_free(host);
		return kdc_cuda_error(err, e, "copying a vantage-point tree to the host");
	}
	return KD_OK;
}

/* See vptree.cuh. */
KdStatus
kdc_vp_build_dev(const double *d_pts, int64_t n, int dim, KdMetric metric,
				 int leaf_rows, VpDev *t, KdVpTree *host, KdcAllocs *a,
				 const KdExec *exec, KdError *err)
{
	VpLayout	lay;
	VpBuildDev	b;
	KdcAllocs	scratch = {0};
	KdStatus	st;

	memset(t, 0, sizeof(*t));
	if (host)
		memset(host, 0, sizeof(*host));
	if (metric != KD_METRIC_L2 && metric != KD_METRIC_L1 && metric != KD_METRIC_LINF)
		return kde_set_error(err, KD_ERR_ARG, -1,
							 "a vantage-point tree needs a metric: L2, L1 or L-infinity");
	if (leaf_rows < 2 || n < 1)
		return kde_set_error(err, KD_ERR_ARG, -1,
							 "a vantage-point tree needs leaves of 2 rows or more, and rows");
	if (!vp_layout(n, leaf_rows, &lay))
	{
		vp_layout_free(&lay);
		return kde_set_error(err, KD_ERR_NOMEM, -1,
							 "out of memory for a vantage-point tree of %lld vectors",
							 (long long) n);
	}
	if (lay.nlevels + 1 > VP_STACK)
	{
		vp_layout_free(&lay);
		return kde_set_error(err, KD_ERR_ARG, -1,
							 "a vantage-point tree of %lld vectors is too deep to search",
							 (long long) n);
	}
	memset(&b, 0, sizeof(b));
	b.pts = d_pts;
	b.n = n;
	b.dim = dim;
	b.metric = metric;
	if ((st = vp_put(a, &b.nodes, lay.nodes, lay.nnodes, "tree nodes", err)) != KD_OK ||
		(st = kdc_alloc(&scratch, (void **) &b.order, sizeof(int64_t) * n, "tree build", err)) != KD_OK ||
		(st = vp_put(&scratch, &b.node_begin, lay.node_begin, lay.nnodes, "tree build", err)) != KD_OK ||
		(st = vp_put(&scratch, &b.node_end, lay.node_end, lay.nnodes, "tree build", err)) != KD_OK ||
		(st = vp_put(&scratch, &b.split, lay.split, lay.nsplit, "tree build", err)) != KD_OK ||
		(st = vp_put(&scratch, &b.split_begin, lay.split_begin, lay.nsplit, "tree build", err)) != KD_OK ||
		(st = vp_put(&scratch, &b.split_end, lay.split_end, lay.nsplit, "tree build", err)) != KD_OK ||
		(st = kdc_alloc(&scratch, (void **) &b.order2, sizeof(int64_t) * n, "tree build", err)) != KD_OK ||
		(st = kdc_alloc(&scratch, (void **) &b.dist, sizeof(double) * n, "tree build", err)) != KD_OK ||
		(st = kdc_alloc(&scratch, (void **) &b.dist2, sizeof(double) * n, "tree build", err)) != KD_OK ||
		(st = kdc_alloc(&scratch, (void **) &b.far_rows, sizeof(VpFar) * n, "tree build", err)) != KD_OK ||
		(st = kdc_alloc(&scratch, (void **) &b.far, sizeof(VpFar) * (lay.nsplit + 1), "tree build", err)) != KD_OK)
		goto done;
	/* the scratch of the largest CUB call */
	for (int l = 0; l < lay.nlevels; l++)
		for (int step = 0; step < 3; step++)
		{
			int64_t		ns = lay.split_level[l + 1] - lay.split_level[l];
			cudaError_t e;

			if (step > 0 && ns == 0)
				continue;
			if ((e = vp_cub(&b, step, lay.level[l], lay.level[l + 1],
							lay.split_level[l], ns, &b.temp_bytes)) != cudaSuccess)
			{
				st = kdc_cuda_error(err, e, "sizing a tree build's scratch");
				goto done;
			}
		}
	if ((st = kdc_alloc(&scratch, &b.temp, b.temp_bytes, "tree build", err)) != KD_OK)
		goto done;
	vp_iota <<< kdc_blocks(n), KDC_BLOCK >>> (b.order, n);
	{
		cudaError_t e = cudaGetLastError();

		if (e != cudaSuccess)
			st = kdc_cuda_error(err, e, "numbering a tree's rows");
	}
	for (int l = 0; l < lay.nlevels && st == KD_OK; l++)
		st = vp_level(&b, &lay, l, exec, err);
	if (st == KD_OK && host)
		st = vp_to_host(&b, lay.nnodes, host, err);
	if (st == KD_OK)
	{
		t->nodes = b.nodes;
		t->nnodes = lay.nnodes;
		t->vps = NULL;
		/* the rows' order outlives the build's scratch */
		if ((st = kdc_alloc(a, (void **) &t->order, sizeof(int64_t) * n,
							"tree rows", err)) == KD_OK)
		{
			cudaError_t e = cudaMemcpy((void *) t->order, b.order, sizeof(int64_t) * n,
									   cudaMemcpyDeviceToDevice);

			if (e != cudaSuccess)
				st = kdc_cuda_error(err, e, "keeping a tree's rows");
		}
	}
	if (st != KD_OK && host)
		vp_host_free(host);
done:
	kdc_free_all(&scratch);
	vp_layout_free(&lay);
	return st;
}

/* See kd_gpu_abi.h: kde_vp_build_cpu's tree, built on the selected device. */
KdStatus
kdc_vp_build(const KdVectors *set, KdMetric metric, int leaf_rows,
			 KdVpTree *tree, const KdExec *exec, KdError *err)
{
	KdcAllocs	a = {0};
	FlatDev		d;
	VpDev		t;
	KdStatus	st;

	memset(tree, 0, sizeof(*tree));
	if (set->n == 0)
		return KD_OK;
	if ((st = kdc_flat_upload(set, metric, NULL, 0, NULL,
							  kdc_vp_bytes(set->n, leaf_rows), &d, &a, exec,
							  err)) == KD_OK)
		st = kdc_vp_build_dev(d.pts, set->n, set->dim, metric, leaf_rows, &t,
							  tree, &a, exec, err);
	kdc_free_all(&a);
	return st;
}
