/*
 * bench_time.c
 *	  The clock and the median that the benchmark programs time with: wall
 *	  seconds on the monotonic clock, and the median of a run's repeats.
 */
#include <stdlib.h>
#include <time.h>

#include "bench_time.h"

/* Seconds on the monotonic clock. */
double
bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* qsort order of doubles */
static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

/* The median of v[0 .. n), sorting v. */
double
bench_median(double *v, int n)
{
	qsort(v, (size_t) n, sizeof(double), cmp_double);
	return v[n / 2];
}
