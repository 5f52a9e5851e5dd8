/*
 * kd_brute.c
 *	  Brute-force kNN over points that are not in a tree: small sets, an
 *	  index's pending inserts, and the tests' oracle.
 *
 * Every query looks at every point and keeps the k best (d2, ref) pairs in
 * the same sorted list the tree search uses, so the two agree exactly.
 */
#include "kd_internal.h"
#include "../../cuda/kdgpu_cuda.h"

typedef struct BruteBatch
{
	const double *points;
	const uint64_t *refs;
	int64_t		n;
	int			dim;
	const double *queries;
	int64_t		nq;
	int			k;
	KdNeighbor *out;
	int32_t    *count;
} BruteBatch;

/* Parallel body: queries [begin, end). */
static void
brute_range(void *arg, int64_t begin, int64_t end)
{
	BruteBatch *b = arg;

	for (int64_t q = begin; q < end; q++)
	{
		const double *query = b->queries + q * b->dim;
		KdNeighbor *list = b->out + q * b->k;
		int			count = 0;

		for (int64_t i = 0; i < b->n; i++)
		{
			double		d2 = kd_dist2(query, b->points + i * b->dim, b->dim);

			if (kd_candidate_wanted(list, count, b->k, d2, b->refs[i]))
				kd_candidate_insert(list, &count, b->k, d2, b->refs[i]);
		}
		b->count[q] = count;
	}
}

/* Brute-force kNN on the CPU threads of exec. */
KdStatus
kd_brute_knn_cpu(const double *points, const uint64_t *refs, int64_t n,
				 int dim, const double *queries, int64_t nq, int k,
				 KdNeighbor *out, int32_t *count, KdExec *exec, KdError *err)
{
	BruteBatch	b = {points, refs, n, dim, queries, nq, k, out, count};
	KdStatus	st;

	if ((st = kd_check_k(k, err)) != KD_OK ||
		(st = kd_check_points(points, n, dim, err)) != KD_OK ||
		(st = kd_check_points(queries, nq, dim, err)) != KD_OK)
		return st;
	return kd_parallel_for(exec, nq, 16, brute_range, &b, err);
}

/* Brute-force kNN, on the device exec chooses (by points times queries). */
KdStatus
kd_brute_knn(const double *points, const uint64_t *refs, int64_t n, int dim,
			 const double *queries, int64_t nq, int k, KdNeighbor *out,
			 int32_t *count, KdExec *exec, KdError *err)
{
	KdStatus	st;

	if (kd_gpu_chosen(exec, n * nq, err, &st))
	{
		st = kd_gpu_api()->brute_knn(points, refs, n, dim, queries, nq, k,
									 out, count, exec, err);
		if (st == KD_OK || !kd_gpu_fallback(exec, st, err))
			return st;
	}
	else if (st != KD_OK)
		return st;
	return kd_brute_knn_cpu(points, refs, n, dim, queries, nq, k, out, count,
							exec, err);
}
