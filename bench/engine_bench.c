/*
 * engine_bench.c
 *	  The engine benchmark: build time, kNN / All-kNN / radius / box
 *	  throughput and DBSCAN time on the GPU, the CPU on one thread and the CPU on all
 *	  threads, over uniform and clustered data (bench/README.md).
 *
 * For each (data kind, n, dim) it generates the points and queries from a
 * fixed seed, builds the tree on each device and times each query kind,
 * keeping the median of --reps runs.  Times are end to end engine calls:
 * a GPU query includes copying queries in and results out (the tree stays
 * resident, as an index's would); a GPU build includes copying the tree
 * back.  CPU runs use at most --cpu-queries queries, since one thread on
 * 10M queries takes minutes; the query count used is printed with each
 * result.  Each result is one table row and one machine-readable line:
 *   RESULT {"op":"knn","device":"gpu",...}
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_time.h"
#include "datagen.h"
#include "kdtree.h"

typedef struct BenchOpts
{
	int64_t		sizes[8];
	int			nsizes;
	int			dims[8];
	int			ndims;
	int			ks[8];
	int			nks;
	DataKind	kinds[4];
	int			nkinds;
	bool		devices[3];		/* gpu, cpu/1, cpu/all */
	int64_t		cpu_queries;
	int64_t		max_output;		/* bytes of kNN output per call */
	int			reps;
} BenchOpts;

static const char *const device_names[3] = {"gpu", "cpu1", "cpuall"};

/* Print one result as a table row and a RESULT line. */
static void
report(const char *op, int dev, DataKind kind, int64_t n, int dim, int k,
	   int64_t nq, double sec, double extra, const char *extra_name)
{
	double		rate = nq > 0 ? nq / sec : 0.0;

	printf("%-8s %-7s %-9s n=%-9lld d=%d k=%-4d q=%-9lld %10.2f ms %12.0f q/s",
		   op, device_names[dev], data_kind_name(kind), (long long) n, dim, k,
		   (long long) nq, sec * 1e3, rate);
	if (extra_name)
		printf("  %s=%.2f", extra_name, extra);
	printf("\n");
	printf("RESULT {\"op\":\"%s\",\"device\":\"%s\",\"data\":\"%s\",\"n\":%lld,"
		   "\"dim\":%d,\"k\":%d,\"queries\":%lld,\"ms\":%.3f,\"qps\":%.0f",
		   op, device_names[dev], data_kind_name(kind), (long long) n, dim, k,
		   (long long) nq, sec * 1e3, rate);
	if (extra_name)
		printf(",\"%s\":%.3f", extra_name, extra);
	printf("}\n");
	fflush(stdout);
}

static void
exec_for_device(KdExec *exec, int dev, int ncpu)
{
	kde_exec_init(exec);
	exec->device = dev == 0 ? KD_DEVICE_GPU : KD_DEVICE_CPU;
	exec->threads = dev == 1 ? 1 : ncpu;
	exec->gpu_min_work = 0;
}

/*
 * The radius that holds 10 points around the median query near the data:
 * the median distance to the 10th neighbour over a sample of the queries
 * that data_queries places next to data points (the even ones).
 */
static double
calibrate_radius(const double *pts, const uint64_t *refs, int64_t n, int dim,
				 const double *qs)
{
	int64_t		nq = n < 1001 ? n : 1001;
	KdNeighbor *out = malloc(sizeof(KdNeighbor) * (size_t) (nq * 10));
	int32_t    *count = malloc(sizeof(int32_t) * (size_t) nq);
	double	   *dist = malloc(sizeof(double) * (size_t) nq);
	double		r = 0.0;
	KdExec		exec;
	KdTree		tree;
	KdError		err;

	kde_exec_init(&exec);
	exec.device = KD_DEVICE_CPU;
	exec.threads = (int) sysconf(_SC_NPROCESSORS_ONLN);
	if (nq > 0 && kde_build_cpu(pts, refs, n, dim, &tree, &exec, &err) == KD_OK)
	{
		if (kde_knn_cpu(&tree, qs, nq, 10, out, count, &exec, &err) == KD_OK)
		{
			int			m = 0;

			for (int64_t q = 0; q < nq; q += 2)
				dist[m++] = sqrt(out[q * 10 + count[q] - 1].d2);
			r = bench_median(dist, m);
		}
		kde_tree_free(&tree);
	}
	free(out);
	free(count);
	free(dist);
	return r;
}

/*
 * Boxes centred on the first nq queries with the volume of the ball of the
 * given radius, so that they hold about as many points as the radius
 * queries.  False when out of memory.
 */
static bool
query_boxes(const double *qs, int64_t nq, int dim, double radius,
			double **lows, double **highs)
{
	double		ball = pow(M_PI, dim / 2.0) / tgamma(dim / 2.0 + 1.0);
	double		half = radius * pow(ball, 1.0 / dim) / 2.0;

	*lows = malloc(sizeof(double) * (size_t) (nq * dim));
	*highs = malloc(sizeof(double) * (size_t) (nq * dim));
	if (*lows == NULL || *highs == NULL)
	{
		free(*lows);
		free(*highs);
		return false;
	}
	for (int64_t i = 0; i < nq * dim; i++)
	{
		(*lows)[i] = qs[i] - half;
		(*highs)[i] = qs[i] + half;
	}
	return true;
}

/*
 * Time nq range queries on tree and report them as op with their mean hit
 * count: radius queries of the given radius about centers, or with centers
 * NULL the boxes [lows, highs].
 */
static void
time_range(const BenchOpts *o, const char *op, KdTree *tree,
		   const double *centers, double radius, const double *lows,
		   const double *highs, int64_t nq, KdExec *exec, int dev,
		   DataKind kind, int64_t n)
{
	double		times[16];
	double		hits = 0;
	KdRangeResult res;
	KdError		err;

	for (int r = 0; r < o->reps; r++)
	{
		double		t0 = bench_now();
		KdStatus	st = centers
			? kde_radius(tree, centers, nq, &radius, 1, &res, exec, &err)
			: kde_box(tree, lows, highs, nq, &res, exec, &err);

		if (st != KD_OK)
		{
			printf("# %s failed: %s\n", op, err.message);
			return;
		}
		times[r] = bench_now() - t0;
		hits = (double) res.offsets[nq] / nq;
		kde_range_result_free(&res);
	}
	report(op, dev, kind, n, tree->dim, 0, nq, bench_median(times, o->reps), hits,
		   "hits_per_query");
}

/*
 * Time DBSCAN of the tree's points (refs 0 .. n - 1) with eps the radius
 * that holds about 10 points and minpoints 5, as issue targets state it;
 * reported with the number of clusters.
 */
static void
time_dbscan(const BenchOpts *o, KdTree *tree, double eps, KdExec *exec,
			int dev, DataKind kind)
{
	KdDbscan	args = {eps, eps, 0.0, 0.0, 5};
	int32_t    *labels = malloc(sizeof(int32_t) * (size_t) (tree->n + 1));
	double		times[16];
	int32_t		clusters = 0;
	int64_t		undecided;
	KdError		err;

	for (int r = 0; r < o->reps; r++)
	{
		double		t0 = bench_now();

		if (kde_dbscan(tree, &args, labels, &undecided, exec, &err) != KD_OK)
		{
			printf("# dbscan failed: %s\n", err.message);
			free(labels);
			return;
		}
		times[r] = bench_now() - t0;
	}
	for (int64_t i = 0; i < tree->n; i++)
		clusters = labels[i] + 1 > clusters ? labels[i] + 1 : clusters;
	report("dbscan", dev, kind, tree->n, tree->dim, args.minpoints, tree->n,
		   bench_median(times, o->reps), clusters, "clusters");
	free(labels);
}

/* Time one (kind, n, dim) on each device. */
static void
bench_set(const BenchOpts *o, DataKind kind, int64_t n, int dim, int ncpu)
{
	double	   *pts = malloc(sizeof(double) * (size_t) (n * dim));
	uint64_t   *refs = malloc(sizeof(uint64_t) * (size_t) n);
	double	   *qs = malloc(sizeof(double) * (size_t) (n * dim));
	double		times[16];
	double		radius;
	double	   *lows,
			   *highs;
	KdError		err;

	data_generate(kind, n, dim, 42, pts);
	data_queries(kind, n, dim, 43, pts, n, qs);
	for (int64_t i = 0; i < n; i++)
		refs[i] = (uint64_t) i;
	radius = calibrate_radius(pts, refs, n, dim, qs);

	for (int dev = 0; dev < 3; dev++)
	{
		KdExec		exec;
		KdTree		tree;
		int64_t		qmax = dev == 0 ? n : (o->cpu_queries < n ? o->cpu_queries : n);

		if (!o->devices[dev])
			continue;
		exec_for_device(&exec, dev, ncpu);

		for (int r = 0; r < o->reps; r++)
		{
			double		t0 = bench_now();

			if (kde_build(pts, refs, n, dim, &tree, &exec, &err) != KD_OK)
			{
				printf("# build on %s failed: %s\n", device_names[dev], err.message);
				goto next_device;
			}
			times[r] = bench_now() - t0;
			if (r + 1 < o->reps)
				kde_tree_free(&tree);
		}
		report("build", dev, kind, n, dim, 0, n, bench_median(times, o->reps), 0, NULL);
		if (dev == 0 && kde_gpu_upload(&tree, &exec, &err) != KD_OK)
		{
			printf("# upload failed: %s\n", err.message);
			kde_tree_free(&tree);
			continue;
		}

		for (int ki = 0; ki < o->nks; ki++)
		{
			int			k = o->ks[ki];
			int64_t		nq = qmax;
			KdNeighbor *out;
			int32_t    *count;

			if (nq * k * (int64_t) sizeof(KdNeighbor) > o->max_output)
				nq = o->max_output / (k * (int64_t) sizeof(KdNeighbor));
			out = malloc(sizeof(KdNeighbor) * (size_t) (nq * (k + 1)));
			count = malloc(sizeof(int32_t) * (size_t) n);
			for (int r = 0; r < o->reps; r++)
			{
				double		t0 = bench_now();

				if (kde_knn(&tree, qs, nq, k, out, count, &exec, &err) != KD_OK)
					printf("# knn failed: %s\n", err.message);
				times[r] = bench_now() - t0;
			}
			report("knn", dev, kind, n, dim, k, nq, bench_median(times, o->reps), 0, NULL);

			/* All-kNN: the whole set on the GPU, else a timed sample */
			if (nq == n)
			{
				for (int r = 0; r < o->reps; r++)
				{
					double		t0 = bench_now();

					if (kde_all_knn(&tree, k, false, out, count, &exec, &err) != KD_OK)
						printf("# all-knn failed: %s\n", err.message);
					times[r] = bench_now() - t0;
				}
				report("allknn", dev, kind, n, dim, k, n, bench_median(times, o->reps), 0, NULL);
			}
			else
			{
				/* tree points as queries, self included: the same work */
				for (int r = 0; r < o->reps; r++)
				{
					double		t0 = bench_now();

					if (kde_knn(&tree, tree.coords, nq, k + 1, out, count, &exec, &err) != KD_OK)
						printf("# all-knn sample failed: %s\n", err.message);
					times[r] = bench_now() - t0;
				}
				report("allknn~", dev, kind, n, dim, k, nq, bench_median(times, o->reps), 0, NULL);
			}
			free(out);
			free(count);
		}

		time_range(o, "radius", &tree, qs, radius, NULL, NULL, qmax, &exec,
				   dev, kind, n);
		if (query_boxes(qs, qmax, dim, radius, &lows, &highs))
		{
			time_range(o, "box", &tree, NULL, 0.0, lows, highs, qmax, &exec,
					   dev, kind, n);
			free(lows);
			free(highs);
		}
		/* one CPU thread would take minutes at 10M */
		if (dev != 1 || n <= o->cpu_queries * 10)
			time_dbscan(o, &tree, radius, &exec, dev, kind);
		kde_tree_free(&tree);
next_device:;
	}
	free(pts);
	free(refs);
	free(qs);
}

/* Parse "a,b,c" into up to max integers. */
static int
parse_list(const char *s, int64_t *out, int max)
{
	int			n = 0;

	while (*s && n < max)
	{
		char	   *end;
		double		v = strtod(s, &end);

		if (end == s)
			break;
		if (*end == 'M' || *end == 'k')
			v *= (*end++ == 'M') ? 1e6 : 1e3;
		out[n++] = (int64_t) v;
		s = (*end == ',') ? end + 1 : end;
	}
	return n;
}

static void
usage(void)
{
	fprintf(stderr,
			"usage: engine-bench-bin [-n 1M,10M] [-d 2,3,4] [-k 1,10,100]\n"
			"       [-t uniform,clustered] [-D gpu,cpu1,cpuall] [-c cpu_queries]\n"
			"       [-r reps] [-m max_output_bytes]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	BenchOpts	o;
	int64_t		tmp[8];
	int			ncpu = (int) sysconf(_SC_NPROCESSORS_ONLN);
	KdGpuInfo	info;
	char		why[256];
	int			opt;

	memset(&o, 0, sizeof(o));
	o.nsizes = parse_list("1M,10M", o.sizes, 8);
	o.ndims = 3;
	o.dims[0] = 2;
	o.dims[1] = 3;
	o.dims[2] = 4;
	o.nks = 3;
	o.ks[0] = 1;
	o.ks[1] = 10;
	o.ks[2] = 100;
	o.nkinds = 2;
	o.kinds[0] = DATA_UNIFORM;
	o.kinds[1] = DATA_CLUSTERED;
	o.devices[0] = o.devices[1] = o.devices[2] = true;
	o.cpu_queries = 200000;
	o.max_output = (int64_t) 4 << 30;
	o.reps = 3;

	while ((opt = getopt(argc, argv, "n:d:k:t:D:c:r:m:")) != -1)
	{
		switch (opt)
		{
			case 'n':
				o.nsizes = parse_list(optarg, o.sizes, 8);
				break;
			case 'd':
				o.ndims = parse_list(optarg, tmp, 8);
				for (int i = 0; i < o.ndims; i++)
					o.dims[i] = (int) tmp[i];
				break;
			case 'k':
				o.nks = parse_list(optarg, tmp, 8);
				for (int i = 0; i < o.nks; i++)
					o.ks[i] = (int) tmp[i];
				break;
			case 't':
				o.nkinds = 0;
				if (strstr(optarg, "uniform"))
					o.kinds[o.nkinds++] = DATA_UNIFORM;
				if (strstr(optarg, "clustered"))
					o.kinds[o.nkinds++] = DATA_CLUSTERED;
				break;
			case 'D':
				for (int i = 0; i < 3; i++)
					o.devices[i] = strstr(optarg, device_names[i]) != NULL;
				break;
			case 'c':
				parse_list(optarg, &o.cpu_queries, 1);
				break;
			case 'r':
				o.reps = atoi(optarg) > 0 ? (atoi(optarg) < 16 ? atoi(optarg) : 15) : 1;
				break;
			case 'm':
				parse_list(optarg, &o.max_output, 1);
				break;
			default:
				usage();
		}
	}

	if (kde_gpu_available(&info, why, sizeof(why)))
		printf("# GPU: %s, cc %d.%d, %d SMs, %lld MiB, driver %d\n", info.name,
			   info.cc_major, info.cc_minor, info.multiprocessors,
			   (long long) (info.total_memory >> 20), info.driver_version);
	else
	{
		printf("# no GPU: %s\n", why);
		o.devices[0] = false;
	}
	printf("# CPU threads: %d; CPU runs use at most %lld queries; median of %d\n",
		   ncpu, (long long) o.cpu_queries, o.reps);
	for (int t = 0; t < o.nkinds; t++)
		for (int s = 0; s < o.nsizes; s++)
			for (int d = 0; d < o.ndims; d++)
				bench_set(&o, o.kinds[t], o.sizes[s], o.dims[d], ncpu);
	return 0;
}
