/*
 * checks.h
 *	  The engine tests' one way to count a check (test_engine.c), shared
 *	  with the tests of other files.
 */
#ifndef CHECKS_H
#define CHECKS_H

#include <stdbool.h>

extern bool check(bool ok, const char *fmt,...) __attribute__((format(printf, 2, 3)));

/* test_dbscan.c */
extern void test_dbscan(bool have_gpu, bool large);

#endif							/* CHECKS_H */
