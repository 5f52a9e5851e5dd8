/*
 * datagen.h
 *	  Deterministic point sets for the engine tests and the benchmark.
 *
 * Every generator is driven by a seeded splitmix64 stream, so a data set is
 * fully described by (kind, n, dim, seed).
 */
#ifndef DATAGEN_H
#define DATAGEN_H

#include <stdint.h>

typedef enum DataKind
{
	DATA_UNIFORM,				/* uniform in the unit cube */
	DATA_CLUSTERED,				/* dense Gaussian clusters over sparse noise */
	DATA_GRID,					/* snapped to a coarse grid: many duplicates */
	DATA_EQUAL,					/* every point the same */
	DATA_LINE,					/* collinear, on a diagonal */
	DATA_OFFSET,				/* UTM-like: ~10^6 with 10^-3 spacing */
	DATA_FLOAT,					/* uniform, each coordinate a float4 value */
	DATA_FLOAT_SCALES,			/* float4 values at the ends of its range */
	DATA_SHELL,					/* float4 values all about as far from the
								 * centre of the unit cube, some queries
								 * there: distances equal in their high bits */
	DATA_NKINDS
} DataKind;

typedef struct Rng
{
	uint64_t	state;
} Rng;

extern const char *data_kind_name(DataKind kind);
extern uint64_t rng_next(Rng *rng);
extern double rng_uniform(Rng *rng);
extern double rng_normal(Rng *rng);
extern void data_generate(DataKind kind, int64_t n, int dim, uint64_t seed,
						  double *out);
extern void data_queries(DataKind kind, int64_t nq, int dim, uint64_t seed,
						 const double *points, int64_t n, double *out);
extern void data_gaussian_clusters(int64_t n, int dim, int nclusters,
								   double sigma, uint64_t seed, double *out);
extern void data_places(int64_t n, int dim, int64_t nplaces, uint64_t seed,
						double *out);
extern void data_uniform_in_bounds(int64_t nq, int dim, uint64_t seed,
								   const double *points, int64_t n,
								   double *out);

#endif							/* DATAGEN_H */
