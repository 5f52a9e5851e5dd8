/*
 * split_test.c
 *	  Tests of a tree split over several devices (src/engine/kd_split.c):
 *	  every answer of a split copy against the brute-force oracle, and a
 *	  build over several devices against the CPU build, bit for bit.
 *
 * It runs against whatever GPU object KDGPU_CUDA_LIB names: the real one on
 * a GPU host, or build/test-bin/emulated_cuda.so (KDGPU_FAKE_DEVICES devices)
 * elsewhere, as `make split-check` does.  Splits are tried over 1 to the
 * object's device count.  Prints "N passed, N failed".
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kdtree.h"
#include "datagen.h"
#include "oracle.h"

static int	passed;
static int	failed;

/* Count a check; print it when it fails. */
static bool
check(bool ok, const char *fmt,...)
{
	va_list		ap;

	if (ok)
	{
		passed++;
		return true;
	}
	failed++;
	printf("FAILED: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return false;
}

/* Unique refs that do not follow the input order. */
static uint64_t
ref_of(int64_t i)
{
	return (uint64_t) i * 0x9E3779B97F4A7C15ULL + 777;
}

/* Whether a and b hold the same n neighbours, bit for bit. */
static bool
same(const KdNeighbor *a, const KdNeighbor *b, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		if (a[i].ref != b[i].ref || memcmp(&a[i].d2, &b[i].d2, sizeof(double)) != 0)
			return false;
	return true;
}

/* Whether query q of res holds the expected hits. */
static bool
same_hits(const KdRangeResult *res, int64_t q, const KdNeighbor *expected,
		  int64_t m)
{
	return res->offsets[q + 1] - res->offsets[q] == m &&
		same(res->hits + res->offsets[q], expected, m);
}

/* A plan for the GPU with threads. */
static KdExec
plan(void)
{
	KdExec		e;

	kde_exec_init(&e);
	e.device = KD_DEVICE_GPU;
	e.gpu_min_work = 0;
	e.threads = 4;
	return e;
}

/* kNN, All-kNN, radius and box on a split of tree over ndevices. */
static void
test_searches(const char *what, const KdTree *tree, int ndevices,
			  const double *qs, int64_t nq)
{
	int64_t		n = tree->n;
	int			dim = tree->dim;
	int			ks[] = {1, 10, 64};
	KdExec		e = plan();
	KdError		err;
	KdSplitCopy *split;
	KdNeighbor *out = malloc(sizeof(KdNeighbor) * (size_t) (n + nq) * 64 + 1);
	int32_t    *count = malloc(sizeof(int32_t) * (size_t) (n + nq) + 1);
	KdNeighbor *want = malloc(sizeof(KdNeighbor) * (size_t) (n + 1));
	int64_t		step = n > 500 ? n / 200 : 1;
	KdRangeResult res;

	if (!check(kde_split_upload(tree, ndevices, &split, &e, &err) == KD_OK,
			   "%s: split upload over %d devices: %s", what, ndevices, err.message))
		goto done;
	for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++)
	{
		int			k = ks[ki];
		bool		ok = kde_split_knn(split, qs, nq, k, out, count, &e, &err) == KD_OK;

		for (int64_t q = 0; ok && q < nq; q++)
		{
			int			m = oracle_knn(tree->coords, tree->refs, n, dim, qs + q * dim, k, -1, want);

			ok = count[q] == m && same(out + q * k, want, m);
		}
		check(ok, "%s: kNN k=%d over %d devices", what, k, ndevices);

		for (int self = 0; self <= (k == 10); self++)
		{
			ok = kde_split_all_knn(split, k, self, out, count, &e, &err) == KD_OK;
			for (int64_t i = 0; ok && i < n; i += (i < 40 ? 1 : step))
			{
				int			m = oracle_knn(tree->coords, tree->refs, n, dim,
										   tree->coords + i * dim, k, self ? -1 : i, want);

				ok = count[i] == m && same(out + i * k, want, m);
			}
			check(ok, "%s: All-kNN k=%d include_self=%d over %d devices: %s",
				  what, k, self, ndevices, ok ? "" : err.message);
		}
	}

	/* radius: each query's 10th neighbour's distance, and 0 */
	{
		double	   *radii = malloc(sizeof(double) * (size_t) nq + 1);
		bool		ok;

		kde_split_knn(split, qs, nq, 10, out, count, &e, &err);
		for (int64_t q = 0; q < nq; q++)
			radii[q] = count[q] > 0 ? sqrt(out[q * 10 + count[q] - 1].d2) : 0.0;
		ok = kde_split_radius(split, qs, nq, radii, nq, &res, &e, &err) == KD_OK;
		for (int64_t q = 0; ok && q < nq; q++)
			ok = same_hits(&res, q, want,
						   oracle_radius(tree->coords, tree->refs, n, dim, qs + q * dim,
										 radii[q], want));
		check(ok, "%s: radius over %d devices", what, ndevices);
		if (ok)
			kde_range_result_free(&res);
		free(radii);
	}

	/* box: a box around each query, half the data's width across */
	{
		double	   *lows = malloc(sizeof(double) * (size_t) (nq * dim) + 1);
		double	   *highs = malloc(sizeof(double) * (size_t) (nq * dim) + 1);
		bool		ok;

		for (int64_t q = 0; q < nq; q++)
			for (int j = 0; j < dim; j++)
			{
				double		w = 0.05 * (1 + q % 5);

				lows[q * dim + j] = qs[q * dim + j] - w;
				highs[q * dim + j] = qs[q * dim + j] + w;
			}
		ok = kde_split_box(split, lows, highs, nq, &res, &e, &err) == KD_OK;
		for (int64_t q = 0; ok && q < nq; q++)
			ok = same_hits(&res, q, want,
						   oracle_box(tree->coords, tree->refs, n, dim, lows + q * dim,
									  highs + q * dim, want));
		check(ok, "%s: box over %d devices", what, ndevices);
		if (ok)
			kde_range_result_free(&res);
		free(lows);
		free(highs);
	}
	kde_split_release(split);
done:
	free(out);
	free(count);
	free(want);
}

/* A build over ndevices: the CPU's tree, bit for bit. */
static void
test_build(const char *what, const double *pts, const uint64_t *refs,
		   const KdTree *cpu, int ndevices)
{
	KdExec		e = plan();
	KdError		err;
	KdTree		t;
	int64_t		n = cpu->n;
	int			dim = cpu->dim;

	kde_tree_alloc(&t, n, dim, &err);
	if (!check(kde_split_build(pts, refs, n, dim, ndevices, &t, &e, &err) == KD_OK,
			   "%s: build over %d devices: %s", what, ndevices, err.message))
	{
		kde_tree_free(&t);
		return;
	}
	check(kde_tree_check(&t, &err) == KD_OK &&
		  t.nbounds == cpu->nbounds &&
		  memcmp(t.coords, cpu->coords, sizeof(double) * n * dim) == 0 &&
		  memcmp(t.refs, cpu->refs, sizeof(uint64_t) * n) == 0 &&
		  memcmp(t.split, cpu->split, n) == 0 &&
		  memcmp(t.bounds, cpu->bounds, sizeof(double) * 2 * dim * cpu->nbounds) == 0,
		  "%s: build over %d devices is the CPU's tree", what, ndevices);
	kde_tree_free(&t);
}

/*
 * Parts of a split over ndevices devices: twice the least power of two
 * that is ndevices or more (kd_split.c).
 */
static int
parts_for(int ndevices)
{
	int			p = 1;

	while (p < ndevices)
		p *= 2;
	return 2 * p;
}

/* One data set: its tree split every way the devices allow. */
static void
test_set(DataKind kind, int64_t n, int dim, int maxdev)
{
	double	   *pts = malloc(sizeof(double) * (size_t) (n * dim) + 1);
	uint64_t   *refs = malloc(sizeof(uint64_t) * (size_t) n + 1);
	int64_t		nq = 100;
	double	   *qs = malloc(sizeof(double) * (size_t) (nq * dim) + 1);
	KdExec		cpu;
	KdError		err;
	KdTree		tree;
	char		what[128];

	kde_exec_init(&cpu);
	cpu.device = KD_DEVICE_CPU;
	data_generate(kind, n, dim, 11 + n, pts);
	data_queries(kind, nq, dim, 12 + n, pts, n, qs);
	for (int64_t i = 0; i < n; i++)
		refs[i] = ref_of(i);
	snprintf(what, sizeof(what), "%s n=%lld d=%d", data_kind_name(kind), (long long) n, dim);
	if (check(kde_build_cpu(pts, refs, n, dim, &tree, &cpu, &err) == KD_OK,
			  "%s: CPU build: %s", what, err.message))
	{
		for (int d = 1; d <= maxdev; d++)
		{
			KdExec		e = plan();
			KdSplitCopy *split;

			if (n >= 2 * parts_for(d) - 1)
			{
				test_searches(what, &tree, d, qs, nq);
				test_build(what, pts, refs, &tree, d);
			}
			else
				check(kde_split_upload(&tree, d, &split, &e, &err) == KD_ERR_ARG,
					  "%s: too small to split over %d devices", what, d);
		}
		kde_tree_free(&tree);
	}
	free(pts);
	free(refs);
	free(qs);
}

/*
 * The devices' shares of a split of 100M points: within 3% of each other
 * (two H200s held 50.3M and 49.7M points; four, 24.5M to 25.2M).
 */
static void
test_balance(int maxdev)
{
	for (int d = 2; d <= maxdev; d++)
	{
		int64_t		n = 100000000;
		int64_t		lo = -1,
					hi = 0;

		/* bytes per device of a tree that is never built: from the shape alone */
		for (int dev = 0; dev < d; dev++)
		{
			int64_t		b = kde_split_plan_points(n, d, dev);

			lo = lo < 0 || b < lo ? b : lo;
			hi = b > hi ? b : hi;
		}
		check(hi > 0 && (double) (hi - lo) / hi < 0.03,
			  "split of 100M points over %d devices: shares %lld to %lld points", d,
			  (long long) lo, (long long) hi);
	}
}

/* Trees too small to split, and device counts out of range. */
static void
test_refusals(int maxdev)
{
	double		pts[2 * 6] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5};
	uint64_t	refs[6] = {1, 2, 3, 4, 5, 6};
	KdExec		e = plan();
	KdError		err;
	KdTree		tree;
	KdSplitCopy *split;

	kde_build_cpu(pts, refs, 6, 2, &tree, &e, &err);
	check(kde_split_upload(&tree, 0, &split, &e, &err) == KD_ERR_ARG && split == NULL,
		  "no split over 0 devices");
	check(kde_split_upload(&tree, 17, &split, &e, &err) == KD_ERR_ARG,
		  "no split over 17 devices");
	if (maxdev >= 2)
		check(kde_split_upload(&tree, 2, &split, &e, &err) == KD_ERR_ARG &&
			  strstr(err.message, "too small") != NULL,
			  "a 6-point tree is too small for 4 parts: %s", err.message);
	kde_tree_free(&tree);
	kde_build_cpu(pts, refs, 2, 2, &tree, &e, &err);
	check(kde_split_upload(&tree, 1, &split, &e, &err) == KD_ERR_ARG,
		  "a 2-point tree is too small for 2 parts");
	kde_tree_free(&tree);
}

int
main(void)
{
	static const DataKind kinds[] = {DATA_UNIFORM, DATA_CLUSTERED, DATA_GRID, DATA_EQUAL};
	static const int64_t sizes[] = {3, 7, 31, 500, 4000};
	KdGpuInfo	info;
	char		why[256];
	int			maxdev;

	if (!kde_gpu_available(&info, why, sizeof(why)))
	{
		printf("no GPU object: %s\n0 passed, 1 failed\n", why);
		return 1;
	}
	maxdev = info.device_count < 4 ? info.device_count : 4;
	printf("# %s, %d device(s); splits over 1 to %d\n", info.name,
		   info.device_count, maxdev);
	test_refusals(maxdev);
	for (size_t ki = 0; ki < sizeof(kinds) / sizeof(kinds[0]); ki++)
		for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
			for (int dim = 2; dim <= 3; dim++)
				test_set(kinds[ki], sizes[si], dim, maxdev);
	test_balance(maxdev);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
