/*
 * kdtree.h
 *	  The kdgpu kd-tree engine: one tree format, CPU build and queries, and the
 *	  dispatch to the GPU object (kdgpu_cuda.so) when one is usable.
 *
 * Plain C99; nothing here knows PostgreSQL.  The same code is linked into the
 * extension, the engine tests and the engine benchmark.
 *
 * Tree format.  A left-balanced, pointer-free kd-tree with one point per node:
 * node i has children 2i+1 and 2i+2, every level is full except the last,
 * which is filled from the left, so the depth is ceil(log2(n+1)) whatever the
 * data.  For each node the tree stores its coordinates (float8, dim per node),
 * its 64-bit row reference and its split dimension.  Points in the left
 * subtree of node i have coords[split[i]] <= the node's, points in the right
 * subtree have coords[split[i]] >= the node's.  The first nbounds nodes (the
 * top levels, whose subtrees hold eight or more points) also store the tight
 * bounding box of their subtree, which lets queries far from dense clusters
 * prune early.  Loading a tree is copying these arrays; nothing is rebuilt.
 *
 * Exactness.  Squared distances are sums of squared coordinate differences
 * taken in dimension order in float8 with no fused multiply-add, on the CPU
 * and the GPU alike, so both give bit-identical distances.  Results are
 * ordered by (squared distance, row reference); this order is total as long
 * as row references are unique.  Pruning uses lower bounds that are
 * themselves rounded sums of a subset of the same terms, so it never drops a
 * point that the brute-force answer would keep.
 *
 * Errors are returned as a KdStatus plus a KdError with a message; the
 * engine never exits, aborts or longjmps.  Long work polls the caller's
 * interrupt callback (from the calling thread only) and stops with
 * KD_ERR_CANCELED when it returns nonzero.
 */
#ifndef KDTREE_H
#define KDTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kd_shape.h"

#ifdef __cplusplus
extern "C"
{
#endif

#define KD_MAX_DIM 8
#define KD_MAX_K 1024
/* deepest stack a depth-first walk of a tree of up to 2^63 nodes needs */
#define KD_STACK_DEPTH 64

typedef enum KdStatus
{
	KD_OK = 0,
	KD_ERR_ARG,					/* bad dimension, k, radius, box or size */
	KD_ERR_NONFINITE,			/* NaN or infinite coordinate */
	KD_ERR_NOMEM,				/* host memory allocation failed */
	KD_ERR_GPU_UNAVAILABLE,		/* no GPU library, driver or device */
	KD_ERR_GPU_NOMEM,			/* not enough device memory */
	KD_ERR_GPU,					/* a CUDA call or kernel failed */
	KD_ERR_CANCELED				/* the interrupt callback asked to stop */
} KdStatus;

typedef struct KdError
{
	KdStatus	code;
	int64_t		item;			/* offending point or query index, or -1 */
	char		message[256];
} KdError;

/* One neighbour or range hit: squared distance and row reference. */
typedef struct KdNeighbor
{
	double		d2;
	uint64_t	ref;
} KdNeighbor;

/* Device-resident copy of a tree; opaque outside cuda/. */
typedef struct KdGpuTree KdGpuTree;

typedef struct KdTree
{
	int64_t		n;				/* number of points (nodes) */
	int			dim;			/* 1..KD_MAX_DIM */
	int64_t		nbounds;		/* nodes 0..nbounds-1 carry a bounding box */
	double	   *coords;			/* n * dim, node order */
	uint64_t   *refs;			/* n row references, node order */
	uint8_t    *split;			/* n split dimensions */
	double	   *bounds;			/* nbounds * 2 * dim: lo[dim] then hi[dim] */
	bool		owned;			/* arrays were allocated by kde_tree_alloc */
	bool		ref_order;		/* as kde_build made it: each node's right
								 * subtree holds only points after it in
								 * (split coordinate, ref) order */
	uint64_t	key[4];			/* names the contents, for a device copy
								 * shared between processes (the GPU
								 * service); all zero: unnamed */
	KdGpuTree  *gpu;			/* resident device copy, or NULL */
} KdTree;

/*
 * A tree may live on the device only: n, dim, nbounds and gpu set, the
 * arrays NULL.  Its queries run on the GPU or fail (KD_ERR_GPU_UNAVAILABLE
 * when the GPU is not chosen); they never fall back to the CPU.
 */

/* Batched query results of variable size (radius and box queries). */
typedef struct KdRangeResult
{
	int64_t		nq;				/* number of queries */
	int64_t    *offsets;		/* nq + 1; hits of query q are [offsets[q], offsets[q+1]) */
	KdNeighbor *hits;			/* offsets[nq] hits */
} KdRangeResult;

typedef enum KdDevice
{
	KD_DEVICE_AUTO = 0,			/* GPU when usable and the work is large enough */
	KD_DEVICE_CPU,
	KD_DEVICE_GPU				/* GPU or an error */
} KdDevice;

typedef int (*KdInterruptFn) (void *arg);

/*
 * Where a GPU call's time went and how its flat kNN ran, added up when
 * KdExec.times is set (kde_gpu_times_add; the GPU service returns its
 * call's to the caller).
 */
typedef struct KdGpuTimes
{
	double		kernel_ms;		/* the query kernels, by CUDA events */
	int64_t		flat_filtered;	/* flat kNN queries through the matrix filter */
	int64_t		flat_rechecked; /* of those, searched again by exact tiles */
	int64_t		flat_tree;		/* flat kNN queries through a GPU
								 * vantage-point tree */
	int64_t		flat_sampled;	/* queries whose tree search was counted */
	double		flat_sampled_share; /* the shares of the rows they compared,
									 * summed */
	int64_t		flat_piloted;	/* calls that tried a pilot tree first */
	double		flat_piloted_share; /* the shares of its rows their pilot
									 * trees' searches compared, summed */
} KdGpuTimes;

/*
 * Whether a flat kNN batch may go through a vantage-point tree: AUTO
 * where a sample of its queries shows that the tree prunes (kd_flat.c,
 * cuda/flat.cu); ALWAYS and NEVER are for tests and benchmarks.
 */
typedef enum KdTreeUse
{
	KD_TREE_AUTO = 0,
	KD_TREE_NEVER,
	KD_TREE_ALWAYS
} KdTreeUse;

/* How to run a piece of work, and (on return) how it was run. */
typedef struct KdExec
{
	KdDevice	device;
	int			threads;		/* CPU threads for batches; <= 1: caller only */
	int64_t		gpu_min_work;	/* AUTO uses the CPU below this many items */
	int64_t		gpu_memory_limit;	/* bytes of device memory to use; 0: free */
	KdInterruptFn interrupt;	/* polled by the calling thread, may be NULL */
	void	   *interrupt_arg;
	KdGpuTimes *times;			/* if not NULL, GPU times are added to it */
	KdTreeUse	vector_tree;	/* flat kNN through a vantage-point tree */
	/* set by the engine */
	bool		used_gpu;		/* the work ran on the GPU */
	char		note[256];		/* why AUTO stayed on or fell back to the CPU */
} KdExec;

/* Information about the GPU, as seen by kde_gpu_probe. */
typedef struct KdGpuInfo
{
	int			device_count;
	int			device;			/* the device in use */
	char		name[128];
	int			cc_major;
	int			cc_minor;
	int			driver_version; /* e.g. 13000 */
	int			runtime_version;
	int64_t		total_memory;
	int64_t		free_memory;
	int			multiprocessors;
} KdGpuInfo;

/* kd_tree.c: tree memory, shape and validation */
extern void kde_exec_init(KdExec *exec);
extern KdStatus kde_tree_alloc(KdTree *tree, int64_t n, int dim, KdError *err);
extern void kde_tree_free(KdTree *tree);
extern KdStatus kde_tree_check(const KdTree *tree, KdError *err);
extern void kde_tree_fill_bounds(KdTree *tree, int64_t from);
extern KdStatus kde_check_points(const double *points, int64_t n, int dim,
								KdError *err);
extern void kde_range_result_free(KdRangeResult *res);

/*
 * kd_build.c: build a tree from points in input order, on the device exec
 * chooses; a GPU build keeps the tree's device copy in tree->gpu.
 * kde_build_in_place builds the same tree but sorts points and refs
 * themselves on the CPU (a copy of them less at the peak), leaving them in
 * another order.
 */
extern KdStatus kde_build(const double *points, const uint64_t *refs,
						 int64_t n, int dim, KdTree *tree,
						 KdExec *exec, KdError *err);
extern KdStatus kde_build_in_place(double *points, uint64_t *refs,
								  int64_t n, int dim, KdTree *tree,
								  KdExec *exec, KdError *err);
extern KdStatus kde_build_cpu(const double *points, const uint64_t *refs,
							 int64_t n, int dim, KdTree *tree,
							 KdExec *exec, KdError *err);

/*
 * kd_knn.c: k nearest neighbours.  Outputs are nq * k KdNeighbors, query q's
 * at [q * k, q * k + count[q]), sorted by (d2, ref); count[q] = min(k, n).
 */
extern KdStatus kde_knn(const KdTree *tree, const double *queries, int64_t nq,
					   int k, KdNeighbor *out, int32_t *count,
					   KdExec *exec, KdError *err);
extern KdStatus kde_knn_cpu(const KdTree *tree, const double *queries,
						   int64_t nq, int k, KdNeighbor *out, int32_t *count,
						   KdExec *exec, KdError *err);

/*
 * All-kNN: the k nearest other points of every tree point, in node order
 * (query i is tree point i; its own node is excluded unless include_self).
 */
extern KdStatus kde_all_knn(const KdTree *tree, int k, bool include_self,
						   KdNeighbor *out, int32_t *count,
						   KdExec *exec, KdError *err);
extern KdStatus kde_all_knn_cpu(const KdTree *tree, int k, bool include_self,
							   KdNeighbor *out, int32_t *count,
							   KdExec *exec, KdError *err);

/*
 * kd_range.c: radius and box queries.  A point is within radius r of a
 * centre when sqrt(d2) <= r; each query's hits are sorted by (d2, ref).
 * radii holds nradii values: 1 (shared) or nq (one per centre).  Box hits
 * (lo <= p <= hi in every dimension) are sorted by ref and have d2 = 0.
 */
extern KdStatus kde_radius(const KdTree *tree, const double *centers,
						  int64_t nq, const double *radii, int64_t nradii,
						  KdRangeResult *res, KdExec *exec, KdError *err);
extern KdStatus kde_radius_cpu(const KdTree *tree, const double *centers,
							  int64_t nq, const double *radii, int64_t nradii,
							  KdRangeResult *res, KdExec *exec, KdError *err);
extern KdStatus kde_box(const KdTree *tree, const double *lows,
					   const double *highs, int64_t nq,
					   KdRangeResult *res, KdExec *exec, KdError *err);
extern KdStatus kde_box_cpu(const KdTree *tree, const double *lows,
						   const double *highs, int64_t nq,
						   KdRangeResult *res, KdExec *exec, KdError *err);

/*
 * kd_dbscan.c: density clusters (DBSCAN) of a tree's points, whose refs
 * must be 0 .. n - 1.  A point reaches another when sqrt(d2) <= within,
 * and does not when sqrt(d2) > beyond; a pair in between is undecided.  A
 * core point reaches at least minpoints points (itself included); core
 * points that reach each other share a cluster; any other point that
 * reaches a core point joins the cluster of the nearest one, by (d2, ref),
 * and the rest are noise.  Clusters are numbered from 0 in the order of
 * their lowest refs: labels[ref] gets a point's number, or -1 for noise.
 * *undecided counts the undecided pairs, and the points not core whose
 * nearest core point of another cluster lies less than tie_rel * d +
 * tie_abs farther than the nearest one's distance d: the caller's metric
 * may decide those otherwise, so when it is not 0 the labels are not
 * defined.  With within == beyond and both margins 0 it is always 0.
 */
typedef struct KdDbscan
{
	double		within;
	double		beyond;
	double		tie_rel;
	double		tie_abs;
	int			minpoints;
} KdDbscan;

extern KdStatus kde_dbscan(const KdTree *tree, const KdDbscan *args,
						  int32_t *labels, int64_t *undecided,
						  KdExec *exec, KdError *err);
extern KdStatus kde_dbscan_cpu(const KdTree *tree, const KdDbscan *args,
							  int32_t *labels, int64_t *undecided,
							  KdExec *exec, KdError *err);

/*
 * The same labels for n points of dim (1 to 3) dimensions given as an
 * array (labels[i] for coords[i * dim ...]), on the CPU over a uniform grid
 * of cells a little above beyond (no tree is built); *gridded false, and
 * nothing done, when the points span too many cells or dim is above 3.
 */
extern KdStatus kde_dbscan_grid(const double *coords, int64_t n, int dim,
							   const KdDbscan *args, int32_t *labels,
							   int64_t *undecided, bool *gridded,
							   KdExec *exec, KdError *err);

/*
 * kd_gpu.c: the GPU object, opened on first use from the path given to
 * kde_gpu_set_library (default: "kdgpu_cuda.so" found by the dynamic linker).
 */
extern void kde_gpu_set_library(const char *path);

/*
 * A stand-in for the GPU object, such as the client of a GPU service in
 * another process: consulted once, when the GPU is first wanted; if it
 * returns a function table (kd_gpu_abi.h), that table serves this process
 * instead of the library.
 */
struct KdCudaApi;
typedef const struct KdCudaApi *(*KdGpuProvider) (void);
extern void kde_gpu_set_provider(KdGpuProvider provider);

extern bool kde_gpu_available(KdGpuInfo *info, char *why, size_t whylen);
extern KdStatus kde_gpu_upload(KdTree *tree, KdExec *exec, KdError *err);
extern void kde_gpu_release(KdTree *tree);

/*
 * The GPU object's entry points (kd_gpu_abi.h), through the table that made
 * this process's device copies; callable once kde_gpu_available has found a
 * GPU usable (within the engine, kde_gpu_chosen or kde_gpu_run).  Each has the
 * contract of its entry: kde_gpu_probe describes the selected device,
 * kde_gpu_select_device selects the one that later uploads and builds use,
 * kde_gpu_upload_copy and kde_gpu_release_copy make and free a device copy
 * held by the caller, and the queries are those of kde_knn, kde_all_knn,
 * kde_radius, kde_box and kde_dbscan on a device copy.  The GPU service calls them
 * directly; the rest of the engine through kde_build, kde_knn and the others.
 */
extern KdStatus kde_gpu_probe(KdGpuInfo *info, KdError *err);
extern KdStatus kde_gpu_select_device(int device, KdError *err);
extern KdStatus kde_gpu_upload_copy(const KdTree *tree, KdGpuTree **out,
								   const KdExec *exec, KdError *err);
extern void kde_gpu_release_copy(KdGpuTree *gtree);
extern KdStatus kde_gpu_build(const double *points, const uint64_t *refs,
							 int64_t n, int dim, KdTree *tree, KdGpuTree **out,
							 const KdExec *exec, KdError *err);
extern KdStatus kde_gpu_knn(const KdGpuTree *gtree, const double *queries,
						   int64_t nq, int k, KdNeighbor *out, int32_t *count,
						   const KdExec *exec, KdError *err);
extern KdStatus kde_gpu_all_knn(const KdGpuTree *gtree, int k, bool include_self,
							   KdNeighbor *out, int32_t *count,
							   const KdExec *exec, KdError *err);
extern KdStatus kde_gpu_radius(const KdGpuTree *gtree, const double *centers,
							  int64_t nq, const double *radii, int64_t nradii,
							  KdRangeResult *res, const KdExec *exec,
							  KdError *err);
extern KdStatus kde_gpu_box(const KdGpuTree *gtree, const double *lows,
						   const double *highs, int64_t nq, KdRangeResult *res,
						   const KdExec *exec, KdError *err);
extern KdStatus kde_gpu_dbscan(const KdGpuTree *gtree, const KdDbscan *args,
							  int32_t *labels, int64_t *undecided,
							  const KdExec *exec, KdError *err);

/*
 * kd_split.c: one tree's device copy split across several devices (a tree
 * larger than one device's share), searched on all of them at once with
 * answers identical to the whole tree's; and a build that uses several
 * devices into a tree the caller allocated (kde_tree_alloc), as the GPU
 * object's build does.  ndevices counts devices 0 .. ndevices - 1 of the
 * GPU object, which must be usable (kde_gpu_available).  Refs must be
 * unique.
 */
typedef struct KdSplitCopy KdSplitCopy;
extern KdStatus kde_split_upload(const KdTree *tree, int ndevices,
								KdSplitCopy **out, KdExec *exec,
								KdError *err);
extern void kde_split_release(KdSplitCopy *split);
extern int64_t kde_split_device_bytes(const KdSplitCopy *split, int device);
extern int64_t kde_split_plan_points(int64_t n, int ndevices, int device);
extern KdStatus kde_split_knn(const KdSplitCopy *split, const double *queries,
							 int64_t nq, int k, KdNeighbor *out,
							 int32_t *count, KdExec *exec, KdError *err);
extern KdStatus kde_split_all_knn(const KdSplitCopy *split, int k,
								 bool include_self, KdNeighbor *out,
								 int32_t *count, KdExec *exec, KdError *err);
extern KdStatus kde_split_radius(const KdSplitCopy *split,
								const double *centers, int64_t nq,
								const double *radii, int64_t nradii,
								KdRangeResult *res, KdExec *exec,
								KdError *err);
extern KdStatus kde_split_box(const KdSplitCopy *split, const double *lows,
							 const double *highs, int64_t nq,
							 KdRangeResult *res, KdExec *exec, KdError *err);
extern KdStatus kde_split_build(const double *points, const uint64_t *refs,
							   int64_t n, int dim, int ndevices, KdTree *tree,
							   KdExec *exec, KdError *err);

/*
 * kd_flat.c: exact kNN and radius searches of vectors of any dimension
 * under a metric, by comparing every query with every vector (no tree), on
 * the CPU threads or the GPU (cuda/flat.cu) with the same bits.  kNN
 * outputs are as kde_knn's, radius outputs as kde_radius's (each query's
 * hits by (distance, ref), bounds included; nradii is 1 or nq), but a
 * neighbour's d2 holds its distance itself (kd_metric.h), not a square.
 * Cosine refuses zero vectors; every metric refuses NaN and infinities.
 * With skip, kNN query q never takes the vector whose ref is skip[q]
 * (All-kNN leaving out a point's own).
 */
typedef enum KdMetric
{
	KD_METRIC_L2 = 0,			/* sqrt of the sum of squared differences */
	KD_METRIC_L1,				/* sum of absolute differences */
	KD_METRIC_LINF,				/* largest absolute difference */
	KD_METRIC_COSINE			/* 1 - cosine of the angle */
} KdMetric;

#define KD_FLAT_MAX_DIM 16000

/*
 * n vectors of dim coordinates each, vector i's at coords + i * stride
 * (stride >= dim: a row may carry more after its coordinates), and their
 * refs.
 */
typedef struct KdVectors
{
	int64_t		n;
	int			dim;
	int64_t		stride;
	const double *coords;
	const uint64_t *refs;
} KdVectors;

extern const char *kde_metric_name(KdMetric metric);
extern double kde_vector_distance(KdMetric metric, const double *a,
								  const double *b, int dim);
extern KdStatus kde_flat_knn(const KdVectors *set, KdMetric metric,
							 const double *queries, int64_t nq, int k,
							 const uint64_t *skip, KdNeighbor *out,
							 int32_t *count, KdExec *exec, KdError *err);
extern KdStatus kde_flat_knn_cpu(const KdVectors *set, KdMetric metric,
								 const double *queries, int64_t nq, int k,
								 const uint64_t *skip, KdNeighbor *out,
								 int32_t *count, KdExec *exec, KdError *err);
extern void kde_gpu_times_add(KdGpuTimes *dst, const KdGpuTimes *src);
extern KdStatus kde_gpu_flat_knn(const KdVectors *set, KdMetric metric,
								 const double *queries, int64_t nq, int k,
								 const uint64_t *skip, KdNeighbor *out,
								 int32_t *count, const KdExec *exec,
								 KdError *err);
extern KdStatus kde_flat_radius(const KdVectors *set, KdMetric metric,
								const double *centers, int64_t nq,
								const double *radii, int64_t nradii,
								KdRangeResult *res, KdExec *exec,
								KdError *err);
extern KdStatus kde_flat_radius_cpu(const KdVectors *set, KdMetric metric,
									const double *centers, int64_t nq,
									const double *radii, int64_t nradii,
									KdRangeResult *res, KdExec *exec,
									KdError *err);
extern KdStatus kde_gpu_flat_radius(const KdVectors *set, KdMetric metric,
									const double *centers, int64_t nq,
									const double *radii, int64_t nradii,
									KdRangeResult *res, const KdExec *exec,
									KdError *err);

/*
 * kd_vptree.c: the vantage-point tree of vectors under a metric (L2, L1,
 * L-infinity; cosine is refused), built on the GPU or on exec's CPU
 * threads (kde_vp_build_cpu), the same tree either way.  Node 0 is
 * the root, nodes are numbered level by level; an inner node's rows within mu_in of its vantage point row vp
 * are its inside child's, those from mu_out on its outside child's; a
 * leaf (vp -1) holds the rows order[start .. start + count).
 * kde_vp_bound (kd_metric.h) lowers dq - mu_in (side 0) or mu_out - dq
 * (side 1) past rounding: no row of that child is nearer the query.  kde_vp_probe is
 * the share of the rows a kNN search of k compares, over nprobe of them;
 * kde_vp_knn searches a batch of queries through the tree on the CPU,
 * kde_gpu_vp_knn on the GPU (where kde_gpu_searches_vp_trees), with the
 * same answers; kde_flat_knn_tree is kde_flat_knn's answer through a tree
 * given with the share of the rows its searches compare (an index's),
 * when that share pays on the device exec chooses, else flat; it checks
 * the queries but not set's vectors, which the caller vouches are finite,
 * and with keep, keeps a device copy of the tree and set in tree->gpu for
 * the calls that follow with the same set (kde_gpu_vp_release frees it).
 * A tree need not hold every row of set: the rows it lacks are never
 * answers.
 */
typedef struct KdVpNode
{
	int64_t		vp;				/* the vantage point's row; -1 at a leaf */
	double		mu_in;
	double		mu_out;
	int64_t		start;			/* the node's rows in order */
	int64_t		count;
	int64_t		inside;			/* child nodes; -1 at a leaf */
	int64_t		outside;
} KdVpNode;

/*
 * The rows a searched tree's leaves should reach: the GPU's search compares
 * a leaf's rows a warp (32 lanes) at a time.
 */
#define KD_VP_LEAF_ROWS 32

typedef struct KdVpGpu KdVpGpu;	/* a tree kept on a device (cuda/) */

typedef struct KdVpTree
{
	int64_t		nnodes;
	KdVpNode   *nodes;
	int64_t    *order;			/* the rows, leaf by leaf */
	const double *vps;			/* NULL: each vantage point is its row's
								 * coordinates; else node i's are vps + i *
								 * dim (a tree read from an index, whose
								 * vantage rows may be gone) */
	KdVpGpu    *gpu;			/* a device copy of it and its set, kept by
								 * kde_flat_knn_tree, or NULL */
} KdVpTree;

extern KdStatus kde_vp_build(const KdVectors *set, KdMetric metric,
							 int leaf_rows, KdVpTree *tree, KdExec *exec,
							 KdError *err);
extern KdStatus kde_vp_build_cpu(const KdVectors *set, KdMetric metric,
								 int leaf_rows, KdVpTree *tree, KdExec *exec,
								 KdError *err);
extern bool kde_gpu_builds_vp_trees(void);
extern KdStatus kde_gpu_vp_build(const KdVectors *set, KdMetric metric,
								 int leaf_rows, KdVpTree *tree,
								 const KdExec *exec, KdError *err);
extern void kde_vp_free(KdVpTree *tree);
extern double kde_vp_probe(const KdVectors *set, KdMetric metric,
						   const KdVpTree *tree, int k, int nprobe,
						   KdExec *exec);
extern KdStatus kde_vp_knn(const KdVectors *set, KdMetric metric,
						   const KdVpTree *tree, const double *queries,
						   int64_t nq, int k, const uint64_t *skip,
						   KdNeighbor *out, int32_t *count, int64_t *compared,
						   KdExec *exec, KdError *err);
extern bool kde_gpu_searches_vp_trees(void);
extern KdStatus kde_gpu_vp_knn(const KdVectors *set, KdMetric metric,
							   const KdVpTree *tree, const double *queries,
							   int64_t nq, int k, const uint64_t *skip,
							   KdNeighbor *out, int32_t *count,
							   const KdExec *exec, KdError *err);
extern bool kde_gpu_keeps_vp_trees(void);
extern KdStatus kde_gpu_vp_keep(const KdVectors *set, KdMetric metric,
								KdVpTree *tree, const KdExec *exec,
								KdError *err);
extern KdStatus kde_gpu_vp_search(const KdVpTree *tree, const double *queries,
								  int64_t nq, int k, const uint64_t *skip,
								  KdNeighbor *out, int32_t *count,
								  const KdExec *exec, KdError *err);
extern void kde_gpu_vp_release(KdVpTree *tree);
extern KdStatus kde_flat_knn_tree(const KdVectors *set, KdMetric metric,
								  KdVpTree *tree, double share, bool keep,
								  const double *queries, int64_t nq, int k,
								  const uint64_t *skip, KdNeighbor *out,
								  int32_t *count, KdExec *exec, KdError *err);

/* kd_replicas.c: one kNN batch over copies of one tree on several GPUs */
extern KdStatus kde_replicas_knn(KdGpuTree *const *copies, int ncopies,
								const double *queries, int64_t nq, int dim,
								int k, KdNeighbor *out, int32_t *count,
								KdExec *exec, KdError *err);

/*
 * kd_parallel.c: fn over [0, nitems) in chunks, on exec->threads threads
 * (the caller's included); KD_ERR_CANCELED when the interrupt callback asks
 * to stop.  fn runs on other threads: it must not call into PostgreSQL
 * beyond pure functions.
 */
typedef void (*KdRangeFn) (void *arg, int64_t begin, int64_t end);
extern KdStatus kde_parallel_for(KdExec *exec, int64_t nitems, int64_t chunk,
								KdRangeFn fn, void *arg, KdError *err);

#ifdef __cplusplus
}
#endif

#endif							/* KDTREE_H */
