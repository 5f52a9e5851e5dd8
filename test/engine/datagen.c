/*
 * datagen.c
 *	  Deterministic point sets for the engine tests and the benchmark: see
 *	  datagen.h.  Clustered data follows cudaKDTree's stress case: a few
 *	  hundred tight clusters holding most points plus a sparse uniform
 *	  background, with queries spread over the whole domain.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "datagen.h"

/* Name of a data kind, for reports. */
const char *
data_kind_name(DataKind kind)
{
	static const char *const names[] = {
		"uniform", "clustered", "grid", "equal", "line", "offset", "float",
		"float-scales", "shell"
	};

	return names[kind];
}

/* splitmix64 */
uint64_t
rng_next(Rng *rng)
{
	uint64_t	z = (rng->state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 53 random bits. */
double
rng_uniform(Rng *rng)
{
	return (rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* Standard normal (Box-Muller). */
double
rng_normal(Rng *rng)
{
	double		u = rng_uniform(rng) + 1e-300;
	double		v = rng_uniform(rng);

	return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/*
 * Move the direction p (of dim coordinates) to the sphere of radius 0.3
 * about the unit cube's centre, rounded to float4: the squared distances
 * to the centre then differ in their last bits only.
 */
static void
shell_place(double *p, int dim)
{
	double		len = 0.0;

	for (int j = 0; j < dim; j++)
		len += p[j] * p[j];
	len = sqrt(len);
	for (int j = 0; j < dim; j++)
		p[j] = (double) (float) (0.5 + (len > 0 ? 0.3 * p[j] / len : 0.3));
}

/* Fill out (n * dim) with a data set of the given kind. */
void
data_generate(DataKind kind, int64_t n, int dim, uint64_t seed, double *out)
{
	static const double float_scales[] = {1e-41, 1e-20, 1e19, 3e38};
	Rng			rng = {seed * 0x2545f4914f6cdd1dULL + 1};
	int			nclusters = 256;
	double		centers[256 * 8];
	double		offset[8];

	for (int c = 0; c < nclusters * dim; c++)
		centers[c] = rng_uniform(&rng);
	for (int j = 0; j < dim; j++)
		offset[j] = 4.0e5 + 1.0e6 * rng_uniform(&rng);

	for (int64_t i = 0; i < n; i++)
	{
		double	   *p = out + i * dim;
		double		t = rng_uniform(&rng);
		int			c = (int) (rng_next(&rng) % nclusters);
		bool		noise = rng_uniform(&rng) < 0.05;

		for (int j = 0; j < dim; j++)
		{
			switch (kind)
			{
				case DATA_UNIFORM:
					p[j] = rng_uniform(&rng);
					break;
				case DATA_CLUSTERED:
					p[j] = noise ? rng_uniform(&rng)
						: centers[c * dim + j] + 0.002 * rng_normal(&rng);
					break;
				case DATA_GRID:
					p[j] = floor(rng_uniform(&rng) * 16.0) / 4.0;
					break;
				case DATA_EQUAL:
					p[j] = 0.25;
					break;
				case DATA_LINE:
					p[j] = t * (j + 1);
					break;
				case DATA_OFFSET:
					p[j] = offset[j] + 1.0e-3 * (double) (rng_next(&rng) % 100000);
					break;
				case DATA_FLOAT:
					p[j] = (double) (float) rng_uniform(&rng);
					break;
				case DATA_FLOAT_SCALES:

					/*
					 * Per point one of four scales, on a grid of 64 steps
					 * each side of 0 (ties): subnormal floats, floats whose
					 * squares are subnormal, floats whose squares overflow a
					 * float, and floats whose differences do.
					 */
					p[j] = (double) (float) (float_scales[c % 4] *
											 (floor(rng_uniform(&rng) * 128.0) - 64.0) / 64.0);
					break;
				case DATA_SHELL:
					p[j] = rng_normal(&rng);
					break;
				default:
					p[j] = 0.0;
			}
		}
		if (kind == DATA_SHELL)
			shell_place(p, dim);
	}
}

/*
 * Fill out (nq * dim) with queries for a data set: half of them are data
 * points jittered a little (near hits, exact duplicates when the jitter
 * is zero), half spread over the data's domain; for a shell, a quarter at
 * its centre instead.
 */
void
data_queries(DataKind kind, int64_t nq, int dim, uint64_t seed,
			 const double *points, int64_t n, double *out)
{
	Rng			rng = {seed * 0x9e3779b97f4a7c15ULL + 7};
	double		lo[8],
				hi[8];

	for (int j = 0; j < dim; j++)
	{
		lo[j] = n > 0 ? points[j] : 0.0;
		hi[j] = n > 0 ? points[j] : 1.0;
	}
	for (int64_t i = 1; i < n; i++)
		for (int j = 0; j < dim; j++)
		{
			lo[j] = fmin(lo[j], points[i * dim + j]);
			hi[j] = fmax(hi[j], points[i * dim + j]);
		}
	for (int64_t q = 0; q < nq; q++)
	{
		bool		near = n > 0 && (q % 2 == 0);
		int64_t		src = near ? (int64_t) (rng_next(&rng) % (uint64_t) n) : 0;
		int			exact = (rng_next(&rng) % 4) == 0;

		for (int j = 0; j < dim; j++)
		{
			double		w = hi[j] - lo[j];

			if (kind == DATA_SHELL && q % 4 == 1)
				out[q * dim + j] = 0.5; /* the centre */
			else if (near)
				out[q * dim + j] = points[src * dim + j] +
					(exact || kind == DATA_OFFSET ? 0.0 : 1e-3 * w * (rng_uniform(&rng) - 0.5));
			else
				out[q * dim + j] = lo[j] - 0.1 * w + 1.2 * w * rng_uniform(&rng);
		}
	}
}

/*
 * Fill out (n * dim) with points in nclusters Gaussian clusters of standard
 * deviation sigma whose centres are uniform in the unit cube, each point in
 * a cluster chosen uniformly: the GIS case of data in cities.
 */
void
data_gaussian_clusters(int64_t n, int dim, int nclusters, double sigma,
					   uint64_t seed, double *out)
{
	Rng			rng = {seed * 0x2545f4914f6cdd1dULL + 3};
	double	   *centers = malloc(sizeof(double) * (size_t) (nclusters * dim));

	if (!centers)
		abort();
	for (int c = 0; c < nclusters * dim; c++)
		centers[c] = rng_uniform(&rng);
	for (int64_t i = 0; i < n; i++)
	{
		int			c = (int) (rng_next(&rng) % (uint64_t) nclusters);

		for (int j = 0; j < dim; j++)
			out[i * dim + j] = centers[c * dim + j] + sigma * rng_normal(&rng);
	}
	free(centers);
}

/*
 * Fill out (n * dim) with copies of nplaces distinct uniform locations, each
 * point a copy of one chosen uniformly: duplicate-heavy data, about n /
 * nplaces rows per location.
 */
void
data_places(int64_t n, int dim, int64_t nplaces, uint64_t seed, double *out)
{
	Rng			rng = {seed * 0x2545f4914f6cdd1dULL + 5};
	double	   *places = malloc(sizeof(double) * (size_t) (nplaces * dim));

	if (!places)
		abort();
	for (int64_t c = 0; c < nplaces * dim; c++)
		places[c] = rng_uniform(&rng);
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		c = (int64_t) (rng_next(&rng) % (uint64_t) nplaces);

		for (int j = 0; j < dim; j++)
			out[i * dim + j] = places[c * dim + j];
	}
	free(places);
}

/*
 * Fill out (nq * dim) with queries uniform over the bounding box of the n
 * points: most of them far from clustered data.
 */
void
data_uniform_in_bounds(int64_t nq, int dim, uint64_t seed,
					   const double *points, int64_t n, double *out)
{
	Rng			rng = {seed * 0x9e3779b97f4a7c15ULL + 11};
	double		lo[8],
				hi[8];

	for (int j = 0; j < dim; j++)
		lo[j] = hi[j] = n > 0 ? points[j] : 0.0;
	for (int64_t i = 1; i < n; i++)
		for (int j = 0; j < dim; j++)
		{
			lo[j] = fmin(lo[j], points[i * dim + j]);
			hi[j] = fmax(hi[j], points[i * dim + j]);
		}
	for (int64_t q = 0; q < nq; q++)
		for (int j = 0; j < dim; j++)
			out[q * dim + j] = lo[j] + (hi[j] - lo[j]) * rng_uniform(&rng);
}
