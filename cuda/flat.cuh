/*
 * flat.cuh
 *	  What the flat search's kernels read (flat.cu's exact tiles and
 *	  flat_filter.cu's matrix-form filter), and the entry points those two
 *	  files offer each other on the host.
 *
 * A FlatDev holds device pointers only; the host functions that fill it
 * (flat.cu's flat_upload) own every allocation it points to.
 */
#ifndef KDGPU_FLAT_CUH
#define KDGPU_FLAT_CUH

#include "common.cuh"
#include "../src/engine/kd_metric.h"

/* What the kernels read. */
typedef struct FlatDev
{
	const double *pts;			/* n * dim */
	const uint64_t *refs;
	int64_t		n;
	int			dim;
	const double *qs;			/* nq * dim */
	int64_t		nq;
	/* kNN */
	int			k;
	const uint64_t *skip;		/* nq refs not to take, or NULL */
	KdNeighbor *res;			/* nq * k: heaps, then sorted lists */
	int32_t    *count;			/* nq: the neighbours each found */
	/* radius */
	const double *radii;		/* nradii: 1 or nq */
	int64_t		nradii;
	int64_t    *offsets;		/* nq + 1: counts at q + 1, then offsets */
	int64_t    *cursor;			/* nq: where each query's next hit goes */
	KdNeighbor *hits;
	/* cosine: the squared norms (kde_metric_norm2), or NULL */
	double	   *pnorm;			/* n */
	double	   *qnorm;			/* nq */
} FlatDev;

/*
 * flat.cu: check a call's vectors and nq (>= 0) queries, size its device
 * memory (with extra bytes beside the vectors, queries and skips) against
 * the budget, and copy them to the device into d.
 */
extern KdStatus kdc_flat_upload(const KdVectors *set, KdMetric metric,
								const double *queries, int64_t nq,
								const uint64_t *skip, size_t extra,
								FlatDev *d, KdcAllocs *a,
								const KdExec *exec, KdError *err);

/*
 * flat_filter.cu: the device memory its filter needs beside the call's
 * vectors, queries and answers; and the k nearest by L2 of every query of d through the
 * float8 matrix-form filter and an exact re-rank, into d->res and
 * d->count; each query the filter cannot decide gets recheck[q] = 1 (on
 * the host, nq flags) and is left for the exact tiles.
 */
extern size_t kdc_flat_filter_bytes(int64_t n, int64_t nq, int dim, int k);
extern KdStatus kdc_flat_filter_knn(const FlatDev *d, uint8_t *recheck,
									int64_t *nrecheck, KdcAllocs *a,
									const KdExec *exec, KdError *err);

#endif							/* KDGPU_FLAT_CUH */
