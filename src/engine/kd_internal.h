/*
 * kd_internal.h
 *	  Helpers shared by the engine's C files and not part of its API:
 *	  squared distances, the (d2, ref) order of results, the thread pool's
 *	  parallel loop and the GPU dispatch hooks.
 *
 * Distances come from kd_shape.h, so that every query kind rounds
 * identically; the GPU kernels reproduce the same sum, term by term.
 */
#ifndef KD_INTERNAL_H
#define KD_INTERNAL_H

#include <math.h>

#include "kdtree.h"
#include "kd_error.h"

#ifdef __GNUC__
#define KD_INLINE static inline __attribute__((always_inline))
#else
#define KD_INLINE static inline
#endif

/* (d2, ref) order of results */
KD_INLINE bool
kde_neighbor_less(double d2a, uint64_t refa, double d2b, uint64_t refb)
{
	return d2a < d2b || (d2a == d2b && refa < refb);
}

/*
 * Offer (d, ref) to a list of *count neighbours sorted by (d, ref), of at
 * most k.
 */
KD_INLINE void
kde_list_offer(KdNeighbor *list, int32_t *count, int k, double d,
			   uint64_t ref)
{
	int			i;

	if (*count == k && !kde_neighbor_less(d, ref, list[k - 1].d2, list[k - 1].ref))
		return;
	i = *count < k ? (*count)++ : k - 1;
	while (i > 0 && kde_neighbor_less(d, ref, list[i - 1].d2, list[i - 1].ref))
	{
		list[i] = list[i - 1];
		i--;
	}
	list[i].d2 = d;
	list[i].ref = ref;
}

/* Widen box (lo[dim] then hi[dim]) to take in point p. */
KD_INLINE void
kde_box_take(double *box, const double *p, int dim)
{
	for (int j = 0; j < dim; j++)
	{
		if (p[j] < box[j])
			box[j] = p[j];
		if (p[j] > box[dim + j])
			box[dim + j] = p[j];
	}
}

/* radius test shared by CPU range queries: sqrt(d2) <= r */
KD_INLINE bool
kde_within_radius(double d2, double r2max, double r)
{
	return d2 <= r2max && sqrt(d2) <= r;
}

/* kd_parallel.c */
extern bool kde_interrupted(KdExec *exec);

/* kd_parallel.c: one item per thread, each driving a device */
#define KD_PARALLEL_MAX_DEVICES 16
typedef KdStatus (*KdDeviceFn) (void *arg, int item, const KdExec *exec,
								KdError *err);
extern KdStatus kde_parallel_devices(KdExec *exec, int n, KdDeviceFn fn,
									void *arg, KdError *err);

/* kd_build.c */
extern KdStatus kde_build_top(const double *points, const uint64_t *refs,
							 int64_t n, int dim, int levels, KdTree *tree,
							 double **pts, uint64_t **prefs,
							 int64_t *sub_begin, KdExec *exec, KdError *err);

/* kd_order.c */
extern int64_t *kde_query_order(const KdTree *tree, const double *queries,
							   int64_t nq, KdError *err, KdStatus *st);
extern int64_t *kde_inorder_nodes(const KdTree *tree, KdError *err,
								 KdStatus *st);

/* kd_tree.c */
extern KdStatus kde_check_k(int k, KdError *err);
extern KdStatus kde_range_result_alloc(KdRangeResult *res, int64_t nq,
									  KdError *err);
extern KdStatus kde_range_result_fill_offsets(KdRangeResult *res,
											 KdError *err);
extern void kde_sort_neighbors(KdNeighbor *hits, int64_t n, bool by_ref);

/*
 * kd_gpu.c: dispatch.  kde_gpu_run runs fn on the tree's device copy (made
 * for the call if the tree has none) when exec chooses the GPU for work
 * items.  It returns true when the caller is to return *st (the GPU did the
 * work, or failed in a way the CPU cannot mend) and false when the caller is
 * to run the CPU path instead.
 */
typedef KdStatus (*KdGpuFn) (const KdGpuTree *gtree, void *arg,
							 KdExec *exec, KdError *err);
extern bool kde_gpu_chosen(KdExec *exec, int64_t work, KdError *err,
						  KdStatus *st);
extern bool kde_gpu_fallback(KdExec *exec, KdStatus st, const KdError *err);
extern bool kde_gpu_run(const KdTree *tree, int64_t work, KdGpuFn fn,
					   void *arg, KdExec *exec, KdError *err, KdStatus *st);

/*
 * kd_split.c and kd_split_build.c: a split copy's host levels and parts.
 */
/* devices a split copy uses, at most, and its parts: 2^5 */
#define KD_SPLIT_MAX_DEVICES KD_PARALLEL_MAX_DEVICES
#define KD_SPLIT_MAX_PARTS 32

/* queries of All-kNN's cross-part rounds at a time (host memory) */
#define KD_SPLIT_CHUNK ((int64_t) 1 << 20)

/* queries that one thread sorts to the parts at a time */
#define KD_SPLIT_CHOOSE_CHUNK ((int64_t) 1 << 16)

/* the lesser of two counts */
#define Min64(a, b) ((a) < (b) ? (a) : (b))

/* One part: the subtree below the host's levels that one device holds. */
typedef struct KdSplitPart
{
	int64_t		root;			/* its root in the whole tree */
	int64_t		n;
	int			device;
	KdGpuTree  *copy;
	int64_t		bytes;
	double	   *coords;			/* its points in its node order (host) */
	double		box[2 * KD_MAX_DIM];	/* their bounding box */
} KdSplitPart;

struct KdSplitCopy
{
	int64_t		n;
	int			dim;
	int			ndevices;
	int64_t		ntop;			/* the host's nodes: the whole tree's first */
	double	   *top_coords;
	uint64_t   *top_refs;
	uint8_t    *top_split;
	int			nparts;
	KdSplitPart parts[KD_SPLIT_MAX_PARTS];
};

/* A level of a part: its nodes [local, local + len) are the whole tree's [whole, ...). */
typedef struct LevelRun
{
	int64_t		local;
	int64_t		whole;
	int64_t		len;
} LevelRun;

typedef struct DeviceWork DeviceWork;
typedef KdStatus (*PartFn) (DeviceWork *w, int part, const KdExec *exec,
							KdError *err);

struct DeviceWork
{
	KdSplitCopy *split;
	PartFn		fn;
	void	   *arg;
};

extern int	kde_split_level_runs(int64_t root, int64_t n, LevelRun *runs);
extern int	kde_split_levels(int ndevices);
extern KdStatus kde_split_on_devices(KdSplitCopy *split, PartFn fn, void *arg,
									KdExec *exec, KdError *err);
extern int	kde_split_selected_device(void);
extern void kde_split_restore_device(int device);

#endif							/* KD_INTERNAL_H */
