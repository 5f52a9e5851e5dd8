/*
 * kd_flat.c
 *	  Exact kNN of vectors of any dimension under a metric (kd_metric.h):
 *	  every query compared with every vector, on the CPU threads, or on the
 *	  GPU (cuda/flat.cu) when exec chooses it.
 *
 * No tree prunes anything, so the answer is exact by construction: each
 * query keeps the k least (distance, ref) pairs, ties by ref as kde_knn's.
 * The CPU loop takes the queries in blocks and the vectors in tiles small
 * enough to stay in cache while a block's queries pass over them; the work
 * of a call is n * nq * dim terms, which the GPU's choice counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_internal.h"
#include "kd_metric.h"

/* queries that pass over a tile of vectors together */
#define FLAT_QUERY_BLOCK 8
/* bytes of vectors in one tile */
#define FLAT_TILE_BYTES (32 * 1024)

/* What the CPU loop's threads share. */
typedef struct FlatBatch
{
	const KdVectors *set;
	KdMetric	metric;
	const double *queries;
	int64_t		nq;
	int			k;
	const uint64_t *skip;
	KdNeighbor *out;
	int32_t    *count;
} FlatBatch;

/* A metric's name, for messages and kd_status(). */
const char *
kde_metric_name(KdMetric metric)
{
	switch (metric)
	{
		case KD_METRIC_L2:
			return "l2";
		case KD_METRIC_L1:
			return "l1";
		case KD_METRIC_LINF:
			return "linf";
		case KD_METRIC_COSINE:
			return "cosine";
	}
	return "unknown";
}

/* The distance between a and b (dim coordinates each) under metric. */
KD_INLINE double
metric_distance(const int metric, const double *a, const double *b, int dim)
{
	KdMetricSum sum = kde_metric_zero();

	for (int j = 0; j < dim; j++)
		kde_metric_add(metric, &sum, a[j], b[j]);
	return kde_metric_finish(metric, &sum);
}

/* The distance between a and b under metric, as the search ranks it. */
double
kde_vector_distance(KdMetric metric, const double *a, const double *b,
					int dim)
{
	return metric_distance((int) metric, a, b, dim);
}

/*
 * Offer (d, ref) to the list of count neighbours sorted by (d, ref), of
 * at most k.
 */
KD_INLINE void
flat_offer(KdNeighbor *list, int32_t *count, int k, double d, uint64_t ref)
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

/* Queries [q0, q1) against every vector, under a metric fixed inline. */
KD_INLINE void
flat_block(const FlatBatch *b, int64_t q0, int64_t q1, const int metric)
{
	const KdVectors *set = b->set;
	const int	dim = set->dim;
	int64_t		tile = FLAT_TILE_BYTES / ((int64_t) sizeof(double) * set->stride);

	if (tile < 1)
		tile = 1;
	for (int64_t q = q0; q < q1; q++)
		b->count[q] = 0;
	for (int64_t p0 = 0; p0 < set->n; p0 += tile)
	{
		int64_t		p1 = p0 + tile < set->n ? p0 + tile : set->n;

		for (int64_t q = q0; q < q1; q++)
		{
			const double *query = b->queries + q * dim;
			KdNeighbor *list = b->out + q * b->k;
			uint64_t	skip = b->skip ? b->skip[q] : UINT64_MAX;
			bool		skipping = b->skip != NULL;

			for (int64_t p = p0; p < p1; p++)
			{
				if (skipping && set->refs[p] == skip)
					continue;
				flat_offer(list, &b->count[q], b->k,
						   metric_distance(metric, query,
										   set->coords + p * set->stride, dim),
						   set->refs[p]);
			}
		}
	}
}

/* Parallel body: query blocks [begin, end). */
static void
flat_range(void *arg, int64_t begin, int64_t end)
{
	const FlatBatch *b = arg;

	for (int64_t blk = begin; blk < end; blk++)
	{
		int64_t		q0 = blk * FLAT_QUERY_BLOCK;
		int64_t		q1 = q0 + FLAT_QUERY_BLOCK < b->nq ? q0 + FLAT_QUERY_BLOCK : b->nq;

		switch (b->metric)
		{
			case KD_METRIC_L2:
				flat_block(b, q0, q1, KD_METRIC_L2);
				break;
			case KD_METRIC_L1:
				flat_block(b, q0, q1, KD_METRIC_L1);
				break;
			case KD_METRIC_LINF:
				flat_block(b, q0, q1, KD_METRIC_LINF);
				break;
			case KD_METRIC_COSINE:
				flat_block(b, q0, q1, KD_METRIC_COSINE);
				break;
		}
	}
}

/* The arguments' checks, shared by both paths. */
static KdStatus
flat_check_args(const KdVectors *set, KdMetric metric, const double *queries,
				int64_t nq, int k, KdError *err)
{
	KdStatus	st;

	if (set->n < 0 || nq < 0)
		return kde_set_error(err, KD_ERR_ARG, -1, "negative vector count");
	if ((st = kde_check_k(k, err)) != KD_OK ||
		(st = kde_flat_check(set->coords, set->n, set->dim, set->stride,
							 metric, "vector", err)) != KD_OK)
		return st;
	return kde_flat_check(queries, nq, set->dim, set->dim, metric, "query",
						  err);
}

/* Flat kNN on the CPU threads of exec; see kdtree.h. */
KdStatus
kde_flat_knn_cpu(const KdVectors *set, KdMetric metric, const double *queries,
				 int64_t nq, int k, const uint64_t *skip, KdNeighbor *out,
				 int32_t *count, KdExec *exec, KdError *err)
{
	FlatBatch	b = {set, metric, queries, nq, k, skip, out, count};
	KdStatus	st;

	if ((st = flat_check_args(set, metric, queries, nq, k, err)) != KD_OK)
		return st;
	return kde_parallel_for(exec, (nq + FLAT_QUERY_BLOCK - 1) / FLAT_QUERY_BLOCK,
							1, flat_range, &b, err);
}

/*
 * Flat kNN on the device exec chooses; see kdtree.h.  The GPU's threshold
 * counts a query against 64k coordinates as one item, about what one tree
 * query costs.
 */
KdStatus
kde_flat_knn(const KdVectors *set, KdMetric metric, const double *queries,
			 int64_t nq, int k, const uint64_t *skip, KdNeighbor *out,
			 int32_t *count, KdExec *exec, KdError *err)
{
	double		work = (double) nq * ceil((double) set->n * set->dim / 65536.0);
	KdStatus	st;

	if ((st = flat_check_args(set, metric, queries, nq, k, err)) != KD_OK)
		return st;
	if (kde_gpu_chosen(exec, work > 1e18 ? INT64_MAX : (int64_t) work, err, &st))
	{
		st = kde_gpu_flat_knn(set, metric, queries, nq, k, skip, out, count,
							  exec, err);
		if (st == KD_OK || !kde_gpu_fallback(exec, st, err))
			return st;
	}
	else if (st != KD_OK)
		return st;
	return kde_flat_knn_cpu(set, metric, queries, nq, k, skip, out, count,
							exec, err);
}
