/*
 * bench_time.h
 *	  The clock and the median that the benchmark programs time with.
 */
#ifndef BENCH_TIME_H
#define BENCH_TIME_H

extern double bench_now(void);
extern double bench_median(double *v, int n);

#endif							/* BENCH_TIME_H */
