/*
 * oracle.c
 *	  Brute-force kNN, radius, box and DBSCAN answers for the engine tests.
 *
 * Deliberately naive and independent of the engine's code: each query
 * computes the squared distance to every point (the sum in dimension order
 * that defines the engine's distances), sorts all of them by (d2, ref) with
 * qsort and cuts the list.  O(n log n) per query.
 */
#include <math.h>
#include <stdlib.h>

#include "oracle.h"

static int
by_d2_ref(const void *a, const void *b)
{
	const KdNeighbor *x = a,
			   *y = b;

	if (x->d2 != y->d2)
		return x->d2 < y->d2 ? -1 : 1;
	return (x->ref > y->ref) - (x->ref < y->ref);
}

static int
by_ref(const void *a, const void *b)
{
	const KdNeighbor *x = a,
			   *y = b;

	return (x->ref > y->ref) - (x->ref < y->ref);
}

/* squared distance, summed in dimension order */
static double
dist2(const double *a, const double *b, int dim)
{
	double		s = 0.0;

	for (int j = 0; j < dim; j++)
		s += (a[j] - b[j]) * (a[j] - b[j]);
	return s;
}

/* All points (but exclude) with their d2, sorted by (d2, ref). */
static KdNeighbor *
all_sorted(const double *points, const uint64_t *refs, int64_t n, int dim,
		   const double *q, int64_t exclude, int64_t *m)
{
	KdNeighbor *all = malloc(sizeof(KdNeighbor) * (size_t) (n + 1));

	*m = 0;
	for (int64_t i = 0; i < n; i++)
		if (i != exclude)
		{
			all[*m].d2 = dist2(q, points + i * dim, dim);
			all[*m].ref = refs[i];
			(*m)++;
		}
	qsort(all, (size_t) *m, sizeof(KdNeighbor), by_d2_ref);
	return all;
}

/* The k nearest points to q (skipping index exclude); returns the count. */
int
oracle_knn(const double *points, const uint64_t *refs, int64_t n, int dim,
		   const double *q, int k, int64_t exclude, KdNeighbor *out)
{
	int64_t		m;
	KdNeighbor *all = all_sorted(points, refs, n, dim, q, exclude, &m);
	int			count = m < k ? (int) m : k;

	for (int i = 0; i < count; i++)
		out[i] = all[i];
	free(all);
	return count;
}

/* Points with sqrt(d2) <= r, sorted by (d2, ref); returns the count. */
int64_t
oracle_radius(const double *points, const uint64_t *refs, int64_t n, int dim,
			  const double *q, double r, KdNeighbor *out)
{
	int64_t		m,
				count = 0;
	KdNeighbor *all = all_sorted(points, refs, n, dim, q, -1, &m);

	for (int64_t i = 0; i < m; i++)
		if (sqrt(all[i].d2) <= r)
			out[count++] = all[i];
	free(all);
	return count;
}

/* Points inside [lo, hi], sorted by ref, d2 = 0; returns the count. */
int64_t
oracle_box(const double *points, const uint64_t *refs, int64_t n, int dim,
		   const double *lo, const double *hi, KdNeighbor *out)
{
	int64_t		count = 0;

	for (int64_t i = 0; i < n; i++)
	{
		int			inside = 1;

		for (int j = 0; j < dim; j++)
			if (points[i * dim + j] < lo[j] || points[i * dim + j] > hi[j])
				inside = 0;
		if (inside)
		{
			out[count].d2 = 0.0;
			out[count].ref = refs[i];
			count++;
		}
	}
	qsort(out, (size_t) count, sizeof(KdNeighbor), by_ref);
	return count;
}

/*
 * DBSCAN by brute force, as kdtree.h defines it with within == beyond == r
 * and no tie margins: every pair's distance, clusters as the components
 * of the core points found by a breadth-first search, border points by
 * their nearest core point in (d2, ref) order, clusters numbered by their
 * lowest ref.  Point i's ref is refs[i] (0 .. n - 1); labels by ref.
 */
void
oracle_dbscan(const double *points, const uint64_t *refs, int64_t n, int dim,
			  double r, int minpoints, int32_t *labels)
{
	bool	   *core = calloc((size_t) n + 1, sizeof(bool));
	int64_t    *comp = malloc(sizeof(int64_t) * (size_t) (n + 1));
	int64_t    *queue = malloc(sizeof(int64_t) * (size_t) (n + 1));
	int64_t    *who = malloc(sizeof(int64_t) * (size_t) (n + 1));
	int32_t    *number = malloc(sizeof(int32_t) * (size_t) (n + 1));
	int32_t		next = 0;

#define REACH(i, j) ((i) == (j) || \
	sqrt(dist2(points + (i) * dim, points + (j) * dim, dim)) <= r)

	for (int64_t i = 0; i < n; i++)
	{
		int64_t		c = 0;

		for (int64_t j = 0; j < n; j++)
			c += REACH(i, j);
		core[i] = c >= minpoints;
		comp[i] = -1;
	}
	for (int64_t s = 0; s < n; s++)
	{
		int64_t		head = 0,
					tail = 0;

		if (!core[s] || comp[s] >= 0)
			continue;
		comp[s] = s;
		queue[tail++] = s;
		while (head < tail)
		{
			int64_t		i = queue[head++];

			for (int64_t j = 0; j < n; j++)
				if (core[j] && comp[j] < 0 && REACH(i, j))
				{
					comp[j] = s;
					queue[tail++] = j;
				}
		}
	}
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		best = -1;
		double		bd2 = 0.0;

		if (core[i])
			continue;
		for (int64_t j = 0; j < n; j++)
		{
			double		d2 = dist2(points + i * dim, points + j * dim, dim);

			if (!core[j] || !REACH(i, j))
				continue;
			if (best < 0 || d2 < bd2 || (d2 == bd2 && refs[j] < refs[best]))
			{
				best = j;
				bd2 = d2;
			}
		}
		comp[i] = best < 0 ? -1 : comp[best];
	}
#undef REACH
	/* in ref order, each component is numbered at its lowest ref */
	for (int64_t i = 0; i < n; i++)
	{
		who[refs[i]] = i;
		number[i] = -1;
	}
	for (int64_t x = 0; x < n; x++)
	{
		int64_t		c = comp[who[x]];

		if (c >= 0 && number[c] < 0)
			number[c] = next++;
		labels[x] = c < 0 ? -1 : number[c];
	}
	free(core);
	free(comp);
	free(queue);
	free(who);
	free(number);
}
