/*
 * split_bench.c
 *	  One tree over several GPUs against one GPU, in the same run: the build
 *	  (kde_build on one device against kde_split_build over all of them) and
 *	  the kNN of a batch of queries (a device copy against a split copy).
 *
 * Usage: split-bench-bin [-n points] [-d dim] [-q queries] [-k k] [-r reps]
 * [-D devices] [-A].  Uniform points in the unit cube from a fixed seed;
 * times are end to end engine calls (points in, tree or answers out),
 * medians of -r runs; -A adds All-kNN (n * k answers, twice).  Every
 * split answer is compared with the one-device answer, bit for bit, and
 * the run fails if one differs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_time.h"
#include "datagen.h"
#include "kdtree.h"

/* Print a result as a line and a RESULT record. */
static void
report(const char *op, int devices, int64_t n, int dim, double ms,
	   const char *gpu)
{
	printf("%-12s devices=%d n=%lld d=%d %10.1f ms\n", op, devices,
		   (long long) n, dim, ms);
	printf("RESULT {\"op\":\"%s\",\"devices\":%d,\"n\":%lld,\"dim\":%d,\"ms\":%.2f,\"gpu\":\"%s\"}\n",
		   op, devices, (long long) n, dim, ms, gpu);
	fflush(stdout);
}

int
main(int argc, char **argv)
{
	int64_t		n = 10000000;
	int64_t		nq = 1000000;
	int			dim = 2;
	int			k = 10;
	int			reps = 3;
	int			ndev = 0;
	bool		allknn = false;
	int			opt;
	KdGpuInfo	info;
	char		why[256];
	KdExec		e;
	KdError		err;
	double		t[16];
	int			bad = 0;

	while ((opt = getopt(argc, argv, "n:d:q:k:r:D:A")) != -1)
	{
		if (opt == 'n')
			n = atoll(optarg);
		else if (opt == 'd')
			dim = atoi(optarg);
		else if (opt == 'q')
			nq = atoll(optarg);
		else if (opt == 'k')
			k = atoi(optarg);
		else if (opt == 'r')
			reps = atoi(optarg) < 1 ? 1 : (atoi(optarg) > 16 ? 16 : atoi(optarg));
		else if (opt == 'D')
			ndev = atoi(optarg);
		else if (opt == 'A')
			allknn = true;
	}
	if (!kde_gpu_available(&info, why, sizeof(why)))
	{
		printf("no GPU: %s\n", why);
		return 0;
	}
	if (ndev < 1 || ndev > info.device_count)
		ndev = info.device_count;
	printf("# %d x %s, driver %d; n=%lld d=%d, %lld queries, k=%d, medians of %d\n",
		   info.device_count, info.name, info.driver_version, (long long) n, dim,
		   (long long) nq, k, reps);

	{
		double	   *pts = malloc(sizeof(double) * (size_t) (n * dim));
		double	   *qs = malloc(sizeof(double) * (size_t) (nq * dim));
		uint64_t   *refs = malloc(sizeof(uint64_t) * (size_t) n);
		KdNeighbor *a = malloc(sizeof(KdNeighbor) * (size_t) (nq * k));
		KdNeighbor *b = malloc(sizeof(KdNeighbor) * (size_t) (nq * k));
		int32_t    *ca = malloc(sizeof(int32_t) * (size_t) nq);
		int32_t    *cb = malloc(sizeof(int32_t) * (size_t) nq);
		KdTree		one,
					split;
		KdSplitCopy *copy;

		data_generate(DATA_UNIFORM, n, dim, 42, pts);
		data_generate(DATA_UNIFORM, nq, dim, 43, qs);
		for (int64_t i = 0; i < n; i++)
			refs[i] = (uint64_t) i;
		kde_exec_init(&e);
		e.device = KD_DEVICE_GPU;
		e.gpu_min_work = 0;
		e.threads = (int) sysconf(_SC_NPROCESSORS_ONLN);

		/* builds: one device, then all */
		for (int r = 0; r < reps; r++)
		{
			double		t0 = bench_now();

			if (kde_build(pts, refs, n, dim, &one, &e, &err) != KD_OK)
			{
				printf("build failed: %s\n", err.message);
				return 1;
			}
			t[r] = bench_now() - t0;
			if (r + 1 < reps)
				kde_tree_free(&one);
		}
		report("build", 1, n, dim, bench_median(t, reps) * 1e3, info.name);
		for (int r = 0; r < reps; r++)
		{
			double		t0;

			kde_tree_alloc(&split, n, dim, &err);
			t0 = bench_now();
			if (kde_split_build(pts, refs, n, dim, ndev, &split, &e, &err) != KD_OK)
			{
				printf("split build failed: %s\n", err.message);
				return 1;
			}
			t[r] = bench_now() - t0;
			if (memcmp(split.coords, one.coords, sizeof(double) * n * dim) != 0 ||
				memcmp(split.refs, one.refs, sizeof(uint64_t) * n) != 0 ||
				memcmp(split.split, one.split, n) != 0)
				bad++;
			kde_tree_free(&split);
		}
		report("split-build", ndev, n, dim, bench_median(t, reps) * 1e3, info.name);
		printf("# split builds equal to the one-device build: %s\n", bad ? "NO" : "yes");

		/* kNN of the queries: the one-device copy, then a split copy */
		for (int r = 0; r < reps; r++)
		{
			double		t0 = bench_now();

			kde_knn(&one, qs, nq, k, a, ca, &e, &err);
			t[r] = bench_now() - t0;
		}
		report("knn", 1, n, dim, bench_median(t, reps) * 1e3, info.name);
		if (kde_split_upload(&one, ndev, &copy, &e, &err) != KD_OK)
		{
			printf("split upload failed: %s\n", err.message);
			return 1;
		}
		for (int r = 0; r < reps; r++)
		{
			double		t0 = bench_now();

			kde_split_knn(copy, qs, nq, k, b, cb, &e, &err);
			t[r] = bench_now() - t0;
		}
		report("split-knn", ndev, n, dim, bench_median(t, reps) * 1e3, info.name);
		for (int d = 0; d < ndev; d++)
			printf("# split copy: %lld MB on device %d\n",
				   (long long) (kde_split_device_bytes(copy, d) >> 20), d);
		if (memcmp(ca, cb, sizeof(int32_t) * nq) != 0 ||
			memcmp(a, b, sizeof(KdNeighbor) * nq * k) != 0)
			bad++;
		printf("# split kNN equal to the one-device kNN: %s\n",
			   memcmp(a, b, sizeof(KdNeighbor) * nq * k) == 0 ? "yes" : "NO");
		if (allknn)
		{
			KdNeighbor *aa = malloc(sizeof(KdNeighbor) * (size_t) (n * k));
			KdNeighbor *ab = malloc(sizeof(KdNeighbor) * (size_t) (n * k));
			int32_t    *na = malloc(sizeof(int32_t) * (size_t) n);
			int32_t    *nb = malloc(sizeof(int32_t) * (size_t) n);

			for (int r = 0; r < reps; r++)
			{
				double		t0 = bench_now();

				kde_all_knn(&one, k, false, aa, na, &e, &err);
				t[r] = bench_now() - t0;
			}
			report("all-knn", 1, n, dim, bench_median(t, reps) * 1e3, info.name);
			for (int r = 0; r < reps; r++)
			{
				double		t0 = bench_now();

				kde_split_all_knn(copy, k, false, ab, nb, &e, &err);
				t[r] = bench_now() - t0;
			}
			report("split-all-knn", ndev, n, dim, bench_median(t, reps) * 1e3, info.name);
			if (memcmp(na, nb, sizeof(int32_t) * n) != 0 ||
				memcmp(aa, ab, sizeof(KdNeighbor) * n * k) != 0)
				bad++;
			printf("# split All-kNN equal to the one-device All-kNN: %s\n",
				   memcmp(aa, ab, sizeof(KdNeighbor) * n * k) == 0 ? "yes" : "NO");
			free(aa);
			free(ab);
			free(na);
			free(nb);
		}
		kde_split_release(copy);
		kde_tree_free(&one);
	}
	return bad ? 1 : 0;
}
