/*
 * cpu_knn_lib.c
 *	  The engine's side of bench/ckdtree-compare, loaded by that script with
 *	  ctypes into the process that runs scipy's cKDTree, so that both
 *	  systems get the very same arrays in the same run.
 *
 * It generates a named data set (bench_sets.h) into the caller's arrays
 * and runs the CPU engine on them: kde_build_cpu, then kde_knn_cpu with the
 * caller's queries, each on the number of threads asked (1: per core),
 * timing each call with a monotonic clock.
 */
#include <stdlib.h>

#include "bench_sets.h"
#include "bench_time.h"
#include "kdtree.h"

extern int	kdb_set_dim(const char *name);
extern int	kdb_set_generate(const char *name, int64_t n, double *points,
							 double *queries);
extern int	kdb_knn(const double *points, int64_t n, int dim,
					const double *queries, int64_t nq, int k, int threads,
					KdNeighbor *out, double *build_sec, double *knn_sec);

/* Dimension of the named set, or -1 when there is none. */
int
kdb_set_dim(const char *name)
{
	const BenchSet *set = bench_set_find(name);

	return set ? set->dim : -1;
}

/*
 * Fill points (n * dim) and queries (n * dim) with the named set; returns
 * 1 when the queries are the set's own, 0 when they are the points, -1
 * when there is no such set.
 */
int
kdb_set_generate(const char *name, int64_t n, double *points, double *queries)
{
	const BenchSet *set = bench_set_find(name);

	if (!set)
		return -1;
	bench_set_points(set, n, points);
	bench_set_queries(set, points, n, queries);
	return set->own_queries ? 1 : 0;
}

/*
 * Build a tree of the n points (row references 0..n-1) and answer the nq
 * queries' k nearest neighbours into out (nq * k); the two calls' times go
 * to *build_sec and *knn_sec.  Returns 0, or -1 when the engine failed.
 */
int
kdb_knn(const double *points, int64_t n, int dim, const double *queries,
		int64_t nq, int k, int threads, KdNeighbor *out,
		double *build_sec, double *knn_sec)
{
	uint64_t   *refs = malloc(sizeof(uint64_t) * (size_t) n + 1);
	int32_t    *count = malloc(sizeof(int32_t) * (size_t) nq + 1);
	KdExec		exec;
	KdError		err;
	KdTree		tree;
	double		t0;
	int			rc = -1;

	if (!refs || !count)
		goto done;
	for (int64_t i = 0; i < n; i++)
		refs[i] = (uint64_t) i;
	kde_exec_init(&exec);
	exec.device = KD_DEVICE_CPU;
	exec.threads = threads;
	t0 = bench_now();
	if (kde_build_cpu(points, refs, n, dim, &tree, &exec, &err) != KD_OK)
		goto done;
	*build_sec = bench_now() - t0;
	t0 = bench_now();
	if (kde_knn_cpu(&tree, queries, nq, k, out, count, &exec, &err) == KD_OK)
	{
		*knn_sec = bench_now() - t0;
		rc = 0;
	}
	kde_tree_free(&tree);
done:
	free(refs);
	free(count);
	return rc;
}
