/*
 * oracle.h
 *	  Brute-force answers the engine tests compare against, written apart
 *	  from the engine: every distance computed, everything sorted.
 */
#ifndef ORACLE_H
#define ORACLE_H

#include "kdtree.h"

extern int	oracle_knn(const double *points, const uint64_t *refs, int64_t n,
					   int dim, const double *q, int k, int64_t exclude,
					   KdNeighbor *out);
extern int64_t oracle_radius(const double *points, const uint64_t *refs,
							 int64_t n, int dim, const double *q, double r,
							 KdNeighbor *out);
extern int64_t oracle_box(const double *points, const uint64_t *refs,
						  int64_t n, int dim, const double *lo,
						  const double *hi, KdNeighbor *out);

extern void oracle_dbscan(const double *points, const uint64_t *refs,
						  int64_t n, int dim, double r, int minpoints,
						  int32_t *labels);

#endif							/* ORACLE_H */
