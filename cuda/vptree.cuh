/*
 * vptree.cuh
 *	  The GPU's vantage-point tree of vectors (kd_vptree.c's tree, the
 *	  same nodes and order): what its kernels read, a warp's exact
 *	  distances to 32 rows, and the entry points that vp_build.cu and
 *	  vp_knn.cu offer flat.cu on the host.
 *
 * A VpDev holds device pointers only; whoever built the tree owns them
 * (a KdcAllocs list).  The distances that rank rows are kd_metric.h's,
 * summed term by term in dimension order by one lane a row, so they are
 * the CPU's bits; the rows' coordinates reach the lanes through a shared
 * tile that the warp fills with coalesced reads.
 */
#ifndef KDGPU_VPTREE_CUH
#define KDGPU_VPTREE_CUH

#include "flat.cuh"

/* What the search kernels read of a tree. */
typedef struct VpDev
{
	const KdVpNode *nodes;		/* nnodes, as kdtree.h's */
	int64_t		nnodes;
	const int64_t *order;		/* n rows, leaf by leaf */
	const double *vps;			/* nnodes * dim, or NULL: KdVpTree's */
} VpDev;

#define VP_DK 16				/* coordinates of a tile's rows */
#define VP_STACK 64				/* a search's stack: more than the levels */
#define VP_FULL 0xffffffffu

/* A warp's tile: VP_DK coordinates of 32 rows, padded against conflicts. */
typedef double VpTile[32][VP_DK + 1];

/*
 * Each lane's distance under metric M (L2, L1 or L-infinity) from its x
 * to its row of pts (row < 0: none, and any value), with the CPU's bits;
 * every lane of the warp must call it.
 */
template <int M>
static __device__ __forceinline__ double
vp_warp_rows(const double *pts, int dim, const double *x, int64_t row,
			 VpTile &tile)
{
	const int	lane = threadIdx.x & 31;
	KdMetricSum s = kde_metric_zero();

	for (int c0 = 0; c0 < dim; c0 += VP_DK)
	{
		int			w = dim - c0 < VP_DK ? dim - c0 : VP_DK;

		for (int r = 0; r < 32; r += 32 / VP_DK)
		{
			int			rr = r + lane / VP_DK;
			int			c = lane % VP_DK;
			int64_t		src = __shfl_sync(VP_FULL, row, rr);

			tile[rr][c] = src >= 0 && c < w ? pts[src * dim + c0 + c] : 0.0;
		}
		__syncwarp();
		for (int c = 0; c < w; c++)
			kde_metric_term(M, &s, x[c0 + c], tile[lane][c]);
		__syncwarp();
	}
	return kde_metric_finish(M, &s);
}

/*
 * vp_build.cu: the device memory a tree of n rows needs; and the tree of
 * the n vectors at d_pts (dim coordinates, packed) under metric, leaves
 * of at most leaf_rows rows, built level by level on the device into *t
 * (its arrays in a, which owns them) and, if host is not NULL, copied into
 * *host (kde_vp_free frees it) — node for node and row for row the tree
 * kde_vp_build makes of the same vectors.
 */
extern size_t kdc_vp_bytes(int64_t n, int leaf_rows);
extern KdStatus kdc_vp_build_dev(const double *d_pts, int64_t n, int dim,
								 KdMetric metric, int leaf_rows, VpDev *t,
								 KdVpTree *host, KdcAllocs *a,
								 const KdExec *exec, KdError *err);

/*
 * vp_knn.cu: the k nearest rows of every query of d under metric through
 * tree t, into d->res and d->count, as kde_vp_knn answers them; when
 * compared is not NULL it gets the distances computed (vantage points
 * counted), summed over the queries.
 */
extern KdStatus kdc_vp_knn_dev(const FlatDev *d, const VpDev *t,
							   KdMetric metric, int64_t *compared,
							   KdcAllocs *a, const KdExec *exec,
							   KdError *err);

#endif							/* KDGPU_VPTREE_CUH */
