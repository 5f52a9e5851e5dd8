/*
 * build.cu
 *	  Build a left-balanced kd-tree on the device, in the engine's format.
 *
 * Design.  The classic presorted build, level-synchronous.  Each dimension d
 * keeps a list L_d of point indexes; every subtree being built owns the same
 * position range [start, start + size) in every list (its in-order range),
 * and inside that range L_d is sorted by (coordinate d, input index).
 *
 *	- Presort: the points are sorted by ref once; then for each dimension,
 *	  CUB radix sorts them, in that order, by the order-preserving bits of
 *	  their coordinate (stable, so ties keep ref order, as the CPU's
 *	  (coordinate, ref) order does); rank_d[p] is p's position in that
 *	  global order, a total order.
 *	- Per level, a node kernel reads each node's tight bounding box straight
 *	  off the ends of its lists (first and last entry of L_d), picks the
 *	  widest dimension s (float8 hi - lo, ties to the lowest), stores the box
 *	  for nodes below nbounds, and takes as the node's point the entry at
 *	  position start + leftsize of L_s: the element of rank leftsize in the
 *	  subtree ordered by coordinate s.
 *	- Then every list is stably partitioned inside each segment into left
 *	  (rank_s below the median's), the median, and right: one CUB exclusive
 *	  scan over packed (left, median) flags gives each element its place, and
 *	  a scatter writes the next level's lists and per-position node tags.
 *	  Stability keeps the children's lists sorted, so no level sorts again.
 *
 * A level costs O(n * dim) memory traffic and about 2 * dim + 1 launches;
 * there are ceil(log2(n + 1)) levels.  Finally the points are gathered into
 * node order.  Indexes are uint32, so the device build takes up to 2^31 - 2
 * points.
 *
 * The tree then goes down into the caller's fresh host arrays, whose pages
 * are faulted in by host threads while the presort and the levels run
 * (kdc_prefault_begin), since a copy into fresh pages was the largest part
 * of a build after the levels.
 */
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "common.cuh"

/* tag of a list position whose point already sits in a node */
#define TAG_DONE 0xFFFFFFFFu

/* Largest n the device build takes. */
#define BUILD_MAX_N ((int64_t) 0x7FFFFFFE)

/* Per-node state of the build (node index). */
typedef struct BuildNodes
{
	uint32_t   *start;			/* first list position of the subtree */
	uint32_t   *left;			/* size of its left subtree */
	uint32_t   *point;			/* input index of the node's point */
	uint32_t   *medrank;		/* rank of that point in the split dimension */
	uint8_t    *split;			/* split dimension */
} BuildNodes;

/* The refs as sort keys, and the identity permutation. */
static __global__ void
ref_keys_kernel(const uint64_t *refs, int64_t n, uint64_t *keys, uint32_t *idx)
{
	int64_t		i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	keys[i] = refs[i];
	idx[i] = (uint32_t) i;
}

/* Sort keys of coordinate d of the points taken in the order byref. */
static __global__ void
presort_keys_kernel(const double *pts, const uint32_t *byref, int64_t n,
					int dim, int d, uint64_t *keys, uint32_t *idx)
{
	int64_t		j = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	uint32_t	i;

	if (j >= n)
		return;
	i = byref[j];
	keys[j] = kdc_ordered_bits(pts[(int64_t) i * dim + d]);
	idx[j] = i;
}

/* rank[list[j]] = j */
static __global__ void
rank_kernel(const uint32_t *list, int64_t n, uint32_t *rank)
{
	int64_t		j = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;

	if (j < n)
		rank[list[j]] = (uint32_t) j;
}

/*
 * Settle the nodes [first, first + count) of one level: split dimension,
 * bounding box, point, and the list ranges of their children.
 */
static __global__ void
node_kernel(const double *pts, int64_t n, int dim, int64_t nbounds,
			int64_t first, int64_t count, const uint32_t *lists,
			const uint32_t *ranks, BuildNodes nodes, double *bounds)
{
	int64_t		i = first + blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	int64_t		start;
	int64_t		size;
	int64_t		left;
	int			s = 0;
	double		best = 0;
	uint32_t	med;

	if (i >= first + count)
		return;
	start = nodes.start[i];
	size = kde_subtree_size(i, n);
	left = kde_subtree_size(2 * i + 1, n);
	for (int j = 0; j < dim; j++)
	{
		const uint32_t *l = lists + j * n;
		double		lo = pts[(int64_t) l[start] * dim + j];
		double		hi = pts[(int64_t) l[start + size - 1] * dim + j];
		double		ext = hi - lo;

		if (j == 0 || ext > best)
		{
			best = ext;
			s = j;
		}
		if (i < nbounds)
		{
			bounds[i * 2 * dim + j] = lo;
			bounds[i * 2 * dim + dim + j] = hi;
		}
	}
	med = lists[s * n + start + left];
	nodes.point[i] = med;
	nodes.medrank[i] = ranks[s * n + med];
	nodes.split[i] = (uint8_t) s;
	nodes.left[i] = (uint32_t) left;
	if (2 * i + 1 < n)
		nodes.start[2 * i + 1] = (uint32_t) start;
	if (2 * i + 2 < n)
		nodes.start[2 * i + 2] = (uint32_t) (start + left + 1);
}

/*
 * Partition flag of list position j: 1 if its point goes to the left
 * subtree, 1 << 32 if it is its node's point, 0 if it goes right or is
 * settled (and 0 at j = n, so the exclusive scan of n + 1 flags ends with
 * the totals).
 */
struct PartitionFlag
{
	const uint32_t *list;
	const uint32_t *tags;
	const uint32_t *ranks;
	BuildNodes	nodes;
	int64_t		n;

	__device__ __forceinline__ uint64_t operator() (int64_t j) const
	{
		uint32_t	t;
		uint32_t	r;
		uint32_t	mr;

		if (j >= n || (t = tags[j]) == TAG_DONE)
			return 0;
		r = ranks[nodes.split[t] * n + list[j]];
		mr = nodes.medrank[t];
		return r < mr ? 1 : (r == mr ? ((uint64_t) 1 << 32) : 0);
	}
};

/*
 * Move each position of one list to its place in its subtree's partition,
 * given the exclusive scan of the flags; the first list also moves the
 * node tags (left child, settled, right child).
 */
static __global__ void
scatter_kernel(const uint32_t *list, const uint32_t *tags,
			   const uint64_t *scan, BuildNodes nodes, int64_t n,
			   uint32_t *list_out, uint32_t *tags_out)
{
	int64_t		j = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	uint32_t	t;
	int64_t		pos;
	uint32_t	nt;

	if (j >= n)
		return;
	t = tags[j];
	if (t == TAG_DONE)
	{
		pos = j;
		nt = TAG_DONE;
	}
	else
	{
		int64_t		start = nodes.start[t];
		int64_t		left = nodes.left[t];
		uint64_t	e = scan[j];
		uint64_t	f = scan[j + 1] - e;
		uint64_t	base = scan[start];
		int64_t		lb = (int64_t) ((uint32_t) e - (uint32_t) base);
		int64_t		mb = (int64_t) ((e >> 32) - (base >> 32));

		if (f & 1)
		{
			pos = start + lb;
			nt = 2 * t + 1;
		}
		else if (f >> 32)
		{
			pos = start + left;
			nt = TAG_DONE;
		}
		else
		{
			pos = start + left + 1 + (j - start - lb - mb);
			nt = 2 * t + 2;
		}
	}
	list_out[pos] = list[j];
	if (tags_out)
		tags_out[pos] = nt;
}

/* Gather the node points into node order. */
static __global__ void
gather_kernel(const double *pts, const uint64_t *refs, int64_t n, int dim,
			  const uint32_t *point, double *coords, uint64_t *refs_out)
{
	int64_t		i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	int64_t		p;

	if (i >= n)
		return;
	p = point[i];
	for (int j = 0; j < dim; j++)
		coords[i * dim + j] = pts[p * dim + j];
	refs_out[i] = refs[p];
}

/*
 * Run the levels of the build on the device buffers; the settled nodes'
 * points, splits and boxes land in nodes and g.
 */
static KdStatus
build_levels(const double *d_pts, int64_t n, int dim, KdGpuTree *g,
			 uint32_t *lists[2], uint32_t *tags[2], const uint32_t *ranks,
			 uint64_t *scan, void *temp, size_t temp_bytes, BuildNodes nodes,
			 const KdExec *exec, KdError *err)
{
	int			depth = kde_tree_depth(n);
	int			cur = 0;
	KdStatus	st;
	cudaError_t e;

	cudaMemset(tags[0], 0, sizeof(uint32_t) * n);
	cudaMemset(nodes.start, 0, sizeof(uint32_t));
	for (int level = 0; level < depth; level++)
	{
		int64_t		first = ((int64_t) 1 << level) - 1;
		int64_t		last = 2 * first;
		int64_t		count = (last < n ? last : n - 1) - first + 1;

		node_kernel <<< kdc_blocks(count), KDC_BLOCK >>>
			(d_pts, n, dim, g->nbounds, first, count, lists[cur], ranks,
			 nodes, g->bounds);
		if (level == depth - 1)
			break;
		for (int d = 0; d < dim; d++)
		{
			PartitionFlag op = {lists[cur] + d * n, tags[cur], ranks, nodes, n};
			thrust::transform_iterator<PartitionFlag, thrust::counting_iterator<int64_t> >
				flags(thrust::counting_iterator<int64_t>(0), op);
			size_t		tb = temp_bytes;

			e = cub::DeviceScan::ExclusiveSum(temp, tb, flags, scan, n + 1);
			if (e != cudaSuccess)
				return kdc_cuda_error(err, e, "the build's partition scan");
			scatter_kernel <<< kdc_blocks(n), KDC_BLOCK >>>
				(lists[cur] + d * n, tags[cur], scan, nodes, n,
				 lists[1 - cur] + d * n, d == 0 ? tags[1 - cur] : NULL);
		}
		cur = 1 - cur;
		if ((st = kdc_sync(exec, "the build", err)) != KD_OK)
			return st;
	}
	return kdc_sync(exec, "the build", err);
}

/* Build a tree over points on the device; see KdCudaApi.build. */
KdStatus
kdc_build(const double *points, const uint64_t *refs, int64_t n, int dim,
		  KdTree *tree, KdGpuTree **out, const KdExec *exec, KdError *err)
{
	KdcAllocs	a = {0};
	KdGpuTree  *g = NULL;
	double	   *d_pts;
	uint64_t   *d_refs;
	uint64_t   *d_keys;
	uint32_t   *d_idx;
	uint32_t   *d_ranks;
	uint32_t   *lists[2];
	uint32_t   *tags[2];
	uint64_t   *d_scan;
	uint32_t   *d_point;
	void	   *d_temp;
	BuildNodes	nodes;
	KdcPrefault *prefault = NULL;
	void	   *host[4];		/* the tree's arrays: in host memory, */
	const void *dev[4];			/* on the device, */
	size_t		bytes[4];		/* and their sizes */
	size_t		sort_bytes = 0;
	size_t		scan_bytes = 0;
	size_t		temp_bytes;
	size_t		need;
	size_t		budget;
	int64_t		nbounds;
	KdStatus	st;
	cudaError_t e;

	if (out)
		*out = NULL;
	if (dim < 1 || dim > KD_MAX_DIM)
		return kde_set_error(err, KD_ERR_ARG, -1,
						 "dimension %d is out of range 1..%d", dim, KD_MAX_DIM);
	if (n < 0)
		return kde_set_error(err, KD_ERR_ARG, -1, "negative point count");
	if (n > BUILD_MAX_N)
		return kde_set_error(err, KD_ERR_ARG, -1,
						 "%lld points are more than the device build takes (%lld)",
						 (long long) n, (long long) BUILD_MAX_N);
	nbounds = kde_tree_nbounds(n);
	if (tree->n != n || tree->dim != dim || tree->nbounds != nbounds)
		return kde_set_error(err, KD_ERR_ARG, -1,
						 "the output tree is not allocated for %lld points of dimension %d",
						 (long long) n, dim);
	if ((st = kdc_begin(kdc_device, err)) != KD_OK)
		return st;

	/* size everything before allocating anything */
	cub::DeviceRadixSort::SortPairs(NULL, sort_bytes, (uint64_t *) NULL,
									(uint64_t *) NULL, (uint32_t *) NULL,
									(uint32_t *) NULL, n, 0, 64);
	{
		PartitionFlag op = {NULL, NULL, NULL, {NULL, NULL, NULL, NULL, NULL}, n};
		thrust::transform_iterator<PartitionFlag, thrust::counting_iterator<int64_t> >
			flags(thrust::counting_iterator<int64_t>(0), op);

		cub::DeviceScan::ExclusiveSum(NULL, scan_bytes, flags, (uint64_t *) NULL, n + 1);
	}
	temp_bytes = sort_bytes > scan_bytes ? sort_bytes : scan_bytes;
	need = kdc_tree_bytes(n, dim, nbounds) + temp_bytes +
		(size_t) n * (sizeof(double) * dim	/* points */
					  + sizeof(uint64_t)	/* refs */
					  + 2 * sizeof(uint64_t)	/* sort keys */
					  + sizeof(uint32_t)	/* sort values */
					  + 3 * sizeof(uint32_t) * dim	/* ranks, two list sets */
					  + 2 * sizeof(uint32_t)	/* two tag sets */
					  + sizeof(uint64_t)	/* scan */
					  + 4 * sizeof(uint32_t)) + 64;	/* nodes */
	if ((st = kdc_budget(exec, 0, &budget, err)) != KD_OK)
		return st;
	if (need > budget)
		return kde_set_error(err, KD_ERR_GPU_NOMEM, -1,
						 "building a tree of %lld points needs %zu MB of device memory, %zu MB are available",
						 (long long) n, need >> 20, budget >> 20);
	if ((st = kdc_tree_create(n, dim, nbounds, exec, &g, err)) != KD_OK)
		return st;
	if (n == 0)
		goto done;

	if ((st = kdc_alloc(&a, (void **) &d_pts, sizeof(double) * dim * n, "points", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d_refs, sizeof(uint64_t) * n, "references", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d_keys, sizeof(uint64_t) * 2 * n, "sort keys", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d_idx, sizeof(uint32_t) * n, "sort values", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d_ranks, sizeof(uint32_t) * dim * n, "ranks", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &lists[0], sizeof(uint32_t) * dim * n, "lists", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &lists[1], sizeof(uint32_t) * dim * n, "lists", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &tags[0], sizeof(uint32_t) * n, "tags", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &tags[1], sizeof(uint32_t) * n, "tags", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d_scan, sizeof(uint64_t) * (n + 1), "scan", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &nodes.start, sizeof(uint32_t) * n, "nodes", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &nodes.left, sizeof(uint32_t) * n, "nodes", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &d_point, sizeof(uint32_t) * n, "nodes", err)) != KD_OK ||
		(st = kdc_alloc(&a, (void **) &nodes.medrank, sizeof(uint32_t) * n, "nodes", err)) != KD_OK ||
		(st = kdc_alloc(&a, &d_temp, temp_bytes, "sort space", err)) != KD_OK)
		goto done;
	nodes.point = d_point;
	nodes.split = g->split;
	host[0] = tree->coords;
	dev[0] = g->coords;
	bytes[0] = sizeof(double) * dim * n;
	host[1] = tree->refs;
	dev[1] = g->refs;
	bytes[1] = sizeof(uint64_t) * n;
	host[2] = tree->split;
	dev[2] = g->split;
	bytes[2] = (size_t) n;
	host[3] = tree->bounds;
	dev[3] = g->bounds;
	bytes[3] = sizeof(double) * 2 * dim * nbounds;

	if ((st = kdc_upload_points(points, refs, n, dim, d_pts, d_refs, &a, exec, err)) != KD_OK)
		goto done;
	prefault = kdc_prefault_begin(host, bytes, 4, exec);

	/*
	 * presort every dimension, starting from the points in ref order (in
	 * tags[0], free until the levels): the stable sorts then break ties in
	 * a coordinate by ref, as the CPU's (coordinate, ref) order does
	 */
	ref_keys_kernel <<< kdc_blocks(n), KDC_BLOCK >>> (d_refs, n, d_keys, d_idx);
	{
		size_t		tb = temp_bytes;

		e = cub::DeviceRadixSort::SortPairs(d_temp, tb, d_keys, d_keys + n,
											d_idx, tags[0], n, 0, 64);
		if (e != cudaSuccess)
		{
			st = kdc_cuda_error(err, e, "the build's presort");
			goto done;
		}
	}
	for (int d = 0; d < dim; d++)
	{
		size_t		tb = temp_bytes;

		presort_keys_kernel <<< kdc_blocks(n), KDC_BLOCK >>> (d_pts, tags[0], n, dim, d, d_keys, d_idx);
		e = cub::DeviceRadixSort::SortPairs(d_temp, tb, d_keys, d_keys + n,
											d_idx, lists[0] + d * n, n, 0, 64);
		if (e != cudaSuccess)
		{
			st = kdc_cuda_error(err, e, "the build's presort");
			goto done;
		}
		rank_kernel <<< kdc_blocks(n), KDC_BLOCK >>> (lists[0] + d * n, n, d_ranks + d * n);
	}
	if ((st = kdc_sync(exec, "the build's presort", err)) != KD_OK)
		goto done;

	st = build_levels(d_pts, n, dim, g, lists, tags, d_ranks, d_scan, d_temp,
					  temp_bytes, nodes, exec, err);
	if (st != KD_OK)
		goto done;
	gather_kernel <<< kdc_blocks(n), KDC_BLOCK >>> (d_pts, d_refs, n, dim, d_point,
													g->coords, g->refs);
	if ((st = kdc_sync(exec, "the build", err)) != KD_OK)
		goto done;

	kdc_prefault_end(prefault);
	prefault = NULL;
	for (int i = 0; i < 4 && st == KD_OK; i++)
		if ((e = kdc_to_host(host[i], dev[i], bytes[i], exec)) != cudaSuccess)
			st = kdc_cuda_error(err, e, "copying the tree to the host");

done:
	kdc_prefault_end(prefault);
	kdc_free_all(&a);
	g->ref_order = true;
	if (st == KD_OK && out &&
		(st = kdc_tree_box_flags(g, exec, err)) == KD_OK)
		st = kdc_tree_compact(g, exec, err);
	if (st == KD_OK && out)
		*out = g;
	else
		kdc_release(g);
	return st;
}
