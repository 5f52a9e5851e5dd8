/*
 * bench_sets.c
 *	  The named data sets of the peer benchmarks (bench_sets.h).
 *
 * Uniform data fills the unit square or cube.  Clustered data is 1000
 * Gaussian clusters of sigma 0.001 with uniform centres, the case where
 * cudaKDTree is weakest; its "u" variants query it from anywhere in its
 * bounding box, as GIS queries do.  Duplicate-heavy data has n / 100
 * distinct locations.  Queries of the other sets are the points themselves
 * (All-kNN, the point itself among its neighbours).
 */
#include <string.h>

#include "bench_sets.h"
#include "datagen.h"

static const BenchSet sets[] = {
	{"u2", "uniform 2-D, queries = the points", 2, false},
	{"u3", "uniform 3-D, queries = the points", 3, false},
	{"c3", "clustered 3-D (1000 Gaussian clusters, sigma 0.001), queries = the points", 3, false},
	{"d2", "duplicate-heavy 2-D (n/100 distinct locations), queries = the points", 2, false},
	{"c3u", "clustered 3-D (1000 Gaussian clusters, sigma 0.001), n queries uniform over its bounding box", 3, true},
	{"c2u", "clustered 2-D (1000 Gaussian clusters, sigma 0.001), n queries uniform over its bounding box", 2, true},
};

/* The set called name, or NULL. */
const BenchSet *
bench_set_find(const char *name)
{
	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
		if (strcmp(sets[i].name, name) == 0)
			return &sets[i];
	return NULL;
}

/* Every set's name, comma separated, for usage messages. */
const char *
bench_set_names(void)
{
	static char names[64];

	if (!names[0])
		for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
		{
			if (i > 0)
				strcat(names, ",");
			strcat(names, sets[i].name);
		}
	return names;
}

/* Fill out (n * dim) with the set's points. */
void
bench_set_points(const BenchSet *set, int64_t n, double *out)
{
	switch (set->name[0])
	{
		case 'u':
			data_generate(DATA_UNIFORM, n, set->dim, 1001 + set->dim, out);
			break;
		case 'c':
			data_gaussian_clusters(n, set->dim, 1000, 0.001, 1003, out);
			break;
		default:
			data_places(n, set->dim, n / 100 > 0 ? n / 100 : 1, 1004, out);
			break;
	}
}

/* Fill out (n * dim) with the set's queries: the points, or their own. */
void
bench_set_queries(const BenchSet *set, const double *points, int64_t n,
				  double *out)
{
	if (set->own_queries)
		data_uniform_in_bounds(n, set->dim, 1005, points, n, out);
	else
		memcpy(out, points, sizeof(double) * (size_t) (n * set->dim));
}
