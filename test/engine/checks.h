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

/* test_flat.c */
extern void test_flat(bool have_gpu, bool large);

#endif							/* CHECKS_H */
