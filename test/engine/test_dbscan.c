/*
 * test_dbscan.c
 *	  The engine's DBSCAN (kde_dbscan) against the brute-force oracle on
 *	  the data generator's adversarial sets, on the CPU's threads and the
 *	  GPU; its undecided pairs and ties; bad arguments; and, with a GPU,
 *	  large sets against the CPU.
 *
 * Refs run backwards through the input, so that the order that numbers
 * clusters and breaks ties is not the input's or any spatial order.  The
 * grid form (kde_dbscan_grid), whose refs are the points' places, is given
 * the points backwards: its labels are then the oracle's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "datagen.h"
#include "oracle.h"

/* A tree of pts with refs n - 1 .. 0, built on exec's device. */
static bool
dbscan_tree(const double *pts, int64_t n, int dim, KdExec *exec, KdTree *tree)
{
	uint64_t   *refs = malloc(sizeof(uint64_t) * (size_t) (n + 1));
	KdError		err;
	KdStatus	st;

	for (int64_t i = 0; i < n; i++)
		refs[i] = (uint64_t) (n - 1 - i);
	st = kde_build(pts, refs, n, dim, tree, exec, &err);
	free(refs);
	return check(st == KD_OK, "dbscan build n=%lld d=%d: %s", (long long) n,
				 dim, st ? err.message : "");
}

/*
 * kde_dbscan_grid of pts given backwards (n points, dim each), on two CPU
 * threads; *gridded as it says.
 */
static KdStatus
dbscan_grid_backwards(const double *pts, int64_t n, int dim, const KdDbscan *args,
					  int32_t *labels, int64_t *undecided, bool *gridded,
					  KdError *err)
{
	double	   *back = malloc(sizeof(double) * (size_t) (n * dim + 1));
	KdExec		exec;
	KdStatus	st;

	for (int64_t i = 0; i < n; i++)
		memcpy(back + i * dim, pts + (n - 1 - i) * dim, sizeof(double) * (size_t) dim);
	test_way_exec(&exec, 1);
	st = kde_dbscan_grid(back, n, dim, args, labels, undecided, gridded, &exec, err);
	free(back);
	return st;
}

/*
 * One data set: each way's labels equal the oracle's for a few reaches
 * (about the distance of a point's 3rd and 10th neighbour, and 0 to hit
 * duplicates only) and minpoints 1, 4 and 10.
 */
static void
dbscan_case(DataKind kind, int64_t n, int dim, bool have_gpu)
{
	double	   *pts = malloc(sizeof(double) * (size_t) (n * dim + 1));
	uint64_t   *refs = malloc(sizeof(uint64_t) * (size_t) (n + 1));
	int32_t    *want = malloc(sizeof(int32_t) * (size_t) (n + 1));
	int32_t    *got = malloc(sizeof(int32_t) * (size_t) (n + 1));
	KdNeighbor	near[10];
	double		reach[3] = {0.0, 0.0, 0.0};
	static const int minpoints[] = {1, 4, 10};

	data_generate(kind, n, dim, (uint64_t) (n * 13 + dim), pts);
	for (int64_t i = 0; i < n; i++)
		refs[i] = (uint64_t) (n - 1 - i);
	if (n > 0)
	{
		int			m = oracle_knn(pts, refs, n, dim, pts + (n / 2) * dim, 10, -1, near);

		reach[1] = sqrt(near[m < 3 ? m - 1 : 2].d2);
		reach[2] = sqrt(near[m - 1].d2);
	}
	for (int way = 0; way < (have_gpu ? 3 : 2); way++)
	{
		KdExec		exec;
		KdTree		tree;

		test_way_exec(&exec, way);
		if (!dbscan_tree(pts, n, dim, &exec, &tree))
			continue;
		for (int ri = 0; ri < 3; ri++)
			for (int mi = 0; mi < 3; mi++)
			{
				KdDbscan	args = {reach[ri], reach[ri], 0.0, 0.0, minpoints[mi]};
				int64_t		undecided = -1;
				KdError		err;
				KdStatus	st;

				oracle_dbscan(pts, refs, n, dim, reach[ri], minpoints[mi], want);
				memset(got, 0x55, sizeof(int32_t) * (size_t) (n + 1));
				st = kde_dbscan(&tree, &args, got, &undecided, &exec, &err);
				check(st == KD_OK && undecided == 0 &&
					  memcmp(got, want, sizeof(int32_t) * (size_t) n) == 0,
					  "dbscan %s d=%d n=%lld r=%g minpoints=%d %s %s",
					  data_kind_name(kind), dim, (long long) n, reach[ri],
					  minpoints[mi], test_ways[way], st ? err.message : "");
			}
		kde_tree_free(&tree);
	}
	/* the grid: the same labels wherever it is made (dim 1 to 3, reach > 0) */
	for (int ri = 0; ri < 3; ri++)
		for (int mi = 0; mi < 3; mi++)
		{
			KdDbscan	args = {reach[ri], reach[ri], 0.0, 0.0, minpoints[mi]};
			int64_t		undecided = -1;
			bool		gridded;
			KdError		err;
			KdStatus	st;

			oracle_dbscan(pts, refs, n, dim, reach[ri], minpoints[mi], want);
			memset(got, 0x55, sizeof(int32_t) * (size_t) (n + 1));
			st = dbscan_grid_backwards(pts, n, dim, &args, got, &undecided, &gridded, &err);
			check(st == KD_OK && (!gridded || (undecided == 0 &&
											   memcmp(got, want, sizeof(int32_t) * (size_t) n) == 0)),
				  "dbscan grid %s d=%d n=%lld r=%g minpoints=%d %s",
				  data_kind_name(kind), dim, (long long) n, reach[ri],
				  minpoints[mi], st ? err.message : "");
			/* spread over too many cells, the float and offset sets may not be */
			check(gridded == (dim <= 3 && reach[ri] > 0 && n > 0) ||
				  (!gridded && (kind == DATA_FLOAT || kind == DATA_OFFSET)),
				  "dbscan grid made where it fits %s d=%d n=%lld r=%g: %d",
				  data_kind_name(kind), dim, (long long) n, reach[ri], gridded);
		}
	free(pts);
	free(refs);
	free(want);
	free(got);
}

/*
 * Undecided pairs and ties, in 1-D: two clusters of four points either
 * side of a border point exactly 1 from each.  Points exactly at the reach
 * are undecided when within < beyond; the border point's two nearest core
 * points are tied, which the margins leave undecided and zero margins
 * decide by ref, as the oracle does; a near tie the same.
 */
static void
dbscan_undecided(bool have_gpu)
{
	double		pts[9] = {-1.3, -1.2, -1.1, -1.0, 0.0, 1.0, 1.1, 1.2, 1.3};
	uint64_t	refs[9];
	int32_t		want[9];
	int32_t		got[9];

	for (int i = 0; i < 9; i++)
		refs[i] = (uint64_t) (8 - i);
	for (int near = 0; near <= 1; near++)
	{
		/* near: the right cluster 1e-13 farther, a tie only within margins */
		pts[5] = near ? 1.0 + 1e-13 : 1.0;
		oracle_dbscan(pts, refs, 9, 1, 1.05, 4, want);
		KdDbscan	exact = {1.05, 1.05, 0.0, 0.0, 4};
		KdDbscan	margins = {1.05, 1.05, 1e-9, 1e-12, 4};
		KdDbscan	band = {1.0 - 1e-9, 1.0 + 1e-9, 0.0, 0.0, 1};

		for (int way = 0; way < (have_gpu ? 3 : 2); way++)
		{
			KdExec		exec;
			KdTree		tree;
			KdError		err;
			int64_t		undecided = -1;
			KdStatus	st;

			test_way_exec(&exec, way);
			if (!dbscan_tree(pts, 9, 1, &exec, &tree))
				continue;
			st = kde_dbscan(&tree, &exact, got, &undecided, &exec, &err);
			check(st == KD_OK && undecided == 0 && memcmp(got, want, sizeof(got)) == 0 &&
				  got[refs[4]] == got[refs[near ? 3 : 5]] && got[refs[3]] != got[refs[5]],
				  "dbscan tie decided by %s (near %d) %s", near ? "distance" : "ref",
				  near, test_ways[way]);
			st = kde_dbscan(&tree, &margins, got, &undecided, &exec, &err);
			check(st == KD_OK && undecided == 1,
				  "dbscan tie within margins undecided (near %d) %s: %lld",
				  near, test_ways[way], (long long) undecided);
			st = kde_dbscan(&tree, &band, got, &undecided, &exec, &err);
			check(st == KD_OK && undecided >= 2,
				  "dbscan pairs at the reach undecided (near %d) %s: %lld",
				  near, test_ways[way], (long long) undecided);
			kde_tree_free(&tree);
		}
		/* the grid decides and leaves undecided the same */
		{
			bool		gridded;
			KdError		err;
			int64_t		undecided = -1;
			KdStatus	st;

			st = dbscan_grid_backwards(pts, 9, 1, &exact, got, &undecided, &gridded, &err);
			check(st == KD_OK && gridded && undecided == 0 &&
				  memcmp(got, want, sizeof(got)) == 0,
				  "dbscan grid tie decided (near %d)", near);
			st = dbscan_grid_backwards(pts, 9, 1, &margins, got, &undecided, &gridded, &err);
			check(st == KD_OK && gridded && undecided == 1,
				  "dbscan grid tie within margins undecided (near %d): %lld",
				  near, (long long) undecided);
			st = dbscan_grid_backwards(pts, 9, 1, &band, got, &undecided, &gridded, &err);
			check(st == KD_OK && gridded && undecided >= 2,
				  "dbscan grid pairs at the reach undecided (near %d): %lld",
				  near, (long long) undecided);
		}
	}
}

/* Refs beyond n - 1 and bad reaches or minpoints are refused. */
static void
dbscan_errors(bool have_gpu)
{
	double		pts[4] = {0.0, 1.0, 2.0, 3.0};
	uint64_t	refs[4] = {0, 1, 2, 7};
	KdDbscan	bad[] = {
		{1.0, 1.0, 0.0, 0.0, 0}, {2.0, 1.0, 0.0, 0.0, 1}, {NAN, NAN, 0.0, 0.0, 1},
		{1.0, INFINITY, 0.0, 0.0, 1}, {1.0, 1.0, -1.0, 0.0, 1}
	};
	KdDbscan	good = {1.0, 1.0, 0.0, 0.0, 1};
	int32_t		got[8];

	for (int way = 0; way < (have_gpu ? 3 : 2); way++)
	{
		KdExec		exec;
		KdTree		tree;
		KdError		err;
		int64_t		undecided;

		test_way_exec(&exec, way);
		if (!check(kde_build(pts, refs, 4, 1, &tree, &exec, &err) == KD_OK,
				   "dbscan errors build %s", test_ways[way]))
			continue;
		check(kde_dbscan(&tree, &good, got, &undecided, &exec, &err) == KD_ERR_ARG,
			  "dbscan refuses a ref beyond n - 1 %s", test_ways[way]);
		for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++)
			check(kde_dbscan(&tree, &bad[b], got, &undecided, &exec, &err) == KD_ERR_ARG,
				  "dbscan refuses bad arguments %zu %s", b, test_ways[way]);
		kde_tree_free(&tree);
	}
}

/*
 * Large clustered sets on the GPU: labels equal to the CPU's (which the
 * small sets hold to the oracle), with many clusters, core and noise
 * points alike.
 */
static void
dbscan_large(int64_t n, int dim)
{
	double	   *pts = malloc(sizeof(double) * (size_t) (n * dim));
	int32_t    *a = malloc(sizeof(int32_t) * (size_t) n);
	int32_t    *b = malloc(sizeof(int32_t) * (size_t) n);
	KdExec		gpu,
				cpu;
	KdTree		tree;
	KdError		err;
	KdNeighbor	near[8];
	uint64_t   *refs = malloc(sizeof(uint64_t) * (size_t) n);
	int64_t		ua = -1,
				ub = -1;
	int32_t		clusters = 0;
	int64_t		noise = 0;
	KdDbscan	args;

	data_generate(DATA_CLUSTERED, n, dim, 99, pts);
	for (int64_t i = 0; i < n; i++)
		refs[i] = (uint64_t) (n - 1 - i);
	oracle_knn(pts, refs, n, dim, pts + (n / 3) * dim, 8, -1, near);
	args = (KdDbscan) {sqrt(near[7].d2), sqrt(near[7].d2), 0.0, 0.0, 5};
	test_way_exec(&gpu, 2);
	test_way_exec(&cpu, 1);
	cpu.threads = 8;
	if (dbscan_tree(pts, n, dim, &gpu, &tree))
	{
		check(kde_dbscan(&tree, &args, a, &ua, &gpu, &err) == KD_OK &&
			  kde_dbscan_cpu(&tree, &args, b, &ub, &cpu, &err) == KD_OK &&
			  ua == 0 && ub == 0 &&
			  memcmp(a, b, sizeof(int32_t) * (size_t) n) == 0,
			  "large dbscan gpu == cpu n=%lld d=%d %s", (long long) n, dim, err.message);
		for (int64_t i = 0; i < n; i++)
		{
			clusters = a[i] + 1 > clusters ? a[i] + 1 : clusters;
			noise += a[i] < 0;
		}
		check(clusters > 1 && noise > 0 && noise < n,
			  "large dbscan has clusters and noise: %d clusters, %lld noise",
			  clusters, (long long) noise);
		kde_tree_free(&tree);
	}
	free(pts);
	free(refs);
	free(a);
	free(b);
}

/* Every DBSCAN test; large sets only with a GPU and large. */
void
test_dbscan(bool have_gpu, bool large)
{
	static const DataKind kinds[] = {
		DATA_UNIFORM, DATA_CLUSTERED, DATA_GRID, DATA_EQUAL, DATA_LINE,
		DATA_OFFSET, DATA_FLOAT
	};
	static const int64_t sizes[] = {0, 1, 2, 17, 300};
	static const int dims[] = {1, 2, 3, 5};

	for (size_t ki = 0; ki < sizeof(kinds) / sizeof(kinds[0]); ki++)
		for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
			for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
				dbscan_case(kinds[ki], sizes[si], dims[di], have_gpu);
	dbscan_case(DATA_CLUSTERED, 2500, 2, have_gpu);
	dbscan_case(DATA_GRID, 2500, 3, have_gpu);
	dbscan_undecided(have_gpu);
	dbscan_errors(have_gpu);
	if (have_gpu && large)
	{
		dbscan_large(1000000, 3);
		dbscan_large(1000000, 2);
	}
}
