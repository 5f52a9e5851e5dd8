/*
 * bench_sets.h
 *	  The named data sets that the engine is timed on beside its peers
 *	  (cudaKDTree on the GPU, scipy's cKDTree on the CPU): the same points
 *	  and queries for every system of one run, generated from fixed seeds.
 */
#ifndef BENCH_SETS_H
#define BENCH_SETS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct BenchSet
{
	const char *name;			/* short name: u2, u3, c3, d2, c3u, c2u */
	const char *desc;			/* what the points and queries are */
	int			dim;
	bool		own_queries;	/* false: the queries are the points */
} BenchSet;

#ifdef __cplusplus
extern "C"
{
#endif

extern const BenchSet *bench_set_find(const char *name);
extern const char *bench_set_names(void);
extern void bench_set_points(const BenchSet *set, int64_t n, double *out);
extern void bench_set_queries(const BenchSet *set, const double *points,
							  int64_t n, double *out);

#ifdef __cplusplus
}
#endif

#endif							/* BENCH_SETS_H */
