/*
 * checks.h
 *	  The engine tests' one way to count a check and to pick a device
 *	  (test_engine.c), shared with the tests of other files.
 */
#ifndef CHECKS_H
#define CHECKS_H

#include <stdbool.h>

#include "kdtree.h"

extern bool check(bool ok, const char *fmt,...) __attribute__((format(printf, 2, 3)));

/* The ways a test runs the engine: CPU with 1 or 2 threads, or the GPU. */
extern const char *const test_ways[3];
extern void test_way_exec(KdExec *exec, int way);

/* test_dbscan.c */
extern void test_dbscan(bool have_gpu, bool large);

/* test_flat.c: the kinds of vector sets, and the oracle's distance */
typedef enum FlatKind
{
	FLAT_UNIFORM,
	FLAT_LINES,
	FLAT_INTEGERS,
	FLAT_OFFSET,
	FLAT_SAME,
	FLAT_NKINDS
} FlatKind;

extern const char *const flat_kinds[FLAT_NKINDS];
extern void flat_generate(FlatKind kind, int64_t n, int dim, uint64_t seed,
						  double *out);
extern double oracle_distance(KdMetric metric, const double *a,
							  const double *b, int dim);
extern void test_flat(bool have_gpu, bool large);

/* test_vptree.c */
extern void test_vptree(bool have_gpu);

#endif							/* CHECKS_H */
