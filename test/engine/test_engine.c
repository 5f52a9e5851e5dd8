/*
 * test_engine.c
 *	  The engine tests: every query kind against the brute-force oracle on
 *	  adversarial data, the GPU against the CPU when a GPU is usable, bad
 *	  arguments and cancellation (DBSCAN's in test_dbscan.c).  Run by `make engine-check`; prints one
 *	  line per failed check and ends with "N passed, N failed".
 *
 * Results are compared exactly: same refs, same float8 distances, same
 * order.  Row references are a scrambled bijection of the input position so
 * that ref order differs from every spatial order.
 *
 * Options: -v prints a line for every passed check too; -q N sets the
 * number of queries per case; -l leaves out the large GPU sets (for runs
 * under compute-sanitizer, test/gpu/faults.sh).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checks.h"
#include "datagen.h"
#include "oracle.h"

static int	passed;
static int	failed;
static bool verbose;
static int	nqueries = 40;
static bool skip_large;			/* -l: no large GPU sets (for memcheck runs) */
static bool have_gpu;
static int	ncpu;

/* Count one check, printing it when it fails (or always with -v). */
const char *const test_ways[3] = {"cpu/1", "cpu/2", "gpu"};

/* The exec of test way way (test_ways). */
void
test_way_exec(KdExec *exec, int way)
{
	kde_exec_init(exec);
	exec->device = way == 2 ? KD_DEVICE_GPU : KD_DEVICE_CPU;
	exec->threads = way == 1 ? 2 : 1;
	exec->gpu_min_work = 0;
}

bool
check(bool ok, const char *fmt,...)
{
	va_list		ap;

	if (ok)
		passed++;
	else
		failed++;
	if (!ok || verbose)
	{
		printf("%s - ", ok ? "ok" : "FAILED");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
	}
	return ok;
}

/* Equal neighbour lists: same length, refs and bit-identical d2. */
static bool
same_neighbors(const KdNeighbor *a, int64_t na, const KdNeighbor *b, int64_t nb)
{
	if (na != nb)
		return false;
	for (int64_t i = 0; i < na; i++)
		if (a[i].ref != b[i].ref || memcmp(&a[i].d2, &b[i].d2, sizeof(double)) != 0)
			return false;
	return true;
}

/* Equal range results. */
static bool
same_ranges(const KdRangeResult *a, const KdRangeResult *b)
{
	if (a->nq != b->nq ||
		memcmp(a->offsets, b->offsets, sizeof(int64_t) * (size_t) (a->nq + 1)) != 0)
		return false;
	return same_neighbors(a->hits, a->offsets[a->nq], b->hits, b->offsets[b->nq]);
}

static uint64_t
ref_of(int64_t i)
{
	return (uint64_t) i * 0x9E3779B97F4A7C15ULL + 12345;
}

static void
exec_for(KdExec *exec, KdDevice device, int threads)
{
	kde_exec_init(exec);
	exec->device = device;
	exec->threads = threads;
	exec->gpu_min_work = 0;
}

/* One data set with its queries, and the answers the oracle gives. */
typedef struct Case
{
	const char *name;
	int64_t		n;
	int			dim;
	double	   *pts;
	uint64_t   *refs;
	int64_t		nq;
	double	   *queries;
	double	   *radii;			/* per query: distance of its 10th neighbour */
	double	   *lows;			/* per query: a box around it */
	double	   *highs;
	KdRangeResult radius_expected;
	KdRangeResult box_expected;
} Case;

/* Generate a case and the oracle's range answers. */
static void
case_make(Case *c, DataKind kind, int64_t n, int dim, uint64_t seed)
{
	KdNeighbor	tenth[10];

	c->name = data_kind_name(kind);
	c->n = n;
	c->dim = dim;
	c->nq = nqueries;
	c->pts = malloc(sizeof(double) * (size_t) (n * dim + 1));
	c->refs = malloc(sizeof(uint64_t) * (size_t) (n + 1));
	c->queries = malloc(sizeof(double) * (size_t) (c->nq * dim));
	c->radii = malloc(sizeof(double) * (size_t) c->nq);
	c->lows = malloc(sizeof(double) * (size_t) (c->nq * dim));
	c->highs = malloc(sizeof(double) * (size_t) (c->nq * dim));
	data_generate(kind, n, dim, seed, c->pts);
	for (int64_t i = 0; i < n; i++)
		c->refs[i] = ref_of(i);
	data_queries(kind, c->nq, dim, seed + 1, c->pts, n, c->queries);

	c->radius_expected.nq = c->box_expected.nq = c->nq;
	c->radius_expected.offsets = calloc((size_t) c->nq + 1, sizeof(int64_t));
	c->box_expected.offsets = calloc((size_t) c->nq + 1, sizeof(int64_t));
	c->radius_expected.hits = malloc(sizeof(KdNeighbor) * (size_t) (n * c->nq + 1));
	c->box_expected.hits = malloc(sizeof(KdNeighbor) * (size_t) (n * c->nq + 1));
	for (int64_t q = 0; q < c->nq; q++)
	{
		const double *qp = c->queries + q * dim;
		int			m = oracle_knn(c->pts, c->refs, n, dim, qp, 10, -1, tenth);
		double		r = m > 0 ? sqrt(tenth[m - 1].d2) : 1.0;
		int64_t		at;

		/* radius 0 now and then, to hit exact duplicates only */
		c->radii[q] = (q % 7 == 3) ? 0.0 : r;
		for (int j = 0; j < dim; j++)
		{
			/* an inverted box now and then: no hits */
			double		h = (q % 11 == 5) ? -r : r * (1.0 + 0.5 * j);

			c->lows[q * dim + j] = qp[j] - h;
			c->highs[q * dim + j] = qp[j] + h;
		}
		at = c->radius_expected.offsets[q];
		c->radius_expected.offsets[q + 1] = at +
			oracle_radius(c->pts, c->refs, n, dim, qp, c->radii[q],
						  c->radius_expected.hits + at);
		at = c->box_expected.offsets[q];
		c->box_expected.offsets[q + 1] = at +
			oracle_box(c->pts, c->refs, n, dim, c->lows + q * dim,
					   c->highs + q * dim, c->box_expected.hits + at);
	}
}

static void
case_free(Case *c)
{
	free(c->pts);
	free(c->refs);
	free(c->queries);
	free(c->radii);
	free(c->lows);
	free(c->highs);
	kde_range_result_free(&c->radius_expected);
	kde_range_result_free(&c->box_expected);
}

/* kNN of every query of c against the oracle, for several k. */
static void
test_knn(const Case *c, const KdTree *tree, KdExec *exec, const char *how)
{
	/* each side of every capacity the GPU's kNN kernels are built for */
	static const int ks[] = {1, 2, 4, 5, 8, 9, 10, 11, 16, 17, 32, 33, 64, 100, 1024};

	for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++)
	{
		int			k = ks[ki];
		KdNeighbor *got = malloc(sizeof(KdNeighbor) * (size_t) (c->nq * k));
		KdNeighbor *want = malloc(sizeof(KdNeighbor) * (size_t) k);
		int32_t    *count = malloc(sizeof(int32_t) * (size_t) c->nq);
		KdError		err;
		KdStatus	st;
		bool		ok;
		int64_t		bad = -1;

		if (exec->device == KD_DEVICE_CPU)
			st = kde_knn_cpu(tree, c->queries, c->nq, k, got, count, exec, &err);
		else
			st = kde_knn(tree, c->queries, c->nq, k, got, count, exec, &err);
		ok = (st == KD_OK);
		for (int64_t q = 0; ok && q < c->nq; q++)
		{
			int			m = oracle_knn(c->pts, c->refs, c->n, c->dim,
									   c->queries + q * c->dim, k, -1, want);

			if (!same_neighbors(got + q * k, count[q], want, m))
			{
				ok = false;
				bad = q;
			}
		}
		check(ok, "knn %s d=%d n=%lld k=%d %s%s%s (query %lld)", c->name, c->dim,
			  (long long) c->n, k, how, st ? ": " : "", st ? err.message : "",
			  (long long) bad);
		free(got);
		free(want);
		free(count);
	}
}

/* All-kNN over the tree's points against the oracle (a sample of nodes). */
static void
test_all_knn(const Case *c, const KdTree *tree, KdExec *exec, const char *how)
{
	static const int ks[] = {1, 10, 33};
	int64_t		stride = tree->n <= 600 ? 1 : tree->n / 300;

	for (int self = 0; self <= 1; self++)
		for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++)
		{
			int			k = ks[ki];
			KdNeighbor *got = malloc(sizeof(KdNeighbor) * (size_t) (tree->n * k + 1));
			KdNeighbor *want = malloc(sizeof(KdNeighbor) * (size_t) k);
			int32_t    *count = malloc(sizeof(int32_t) * (size_t) (tree->n + 1));
			KdError		err;
			KdStatus	st;
			bool		ok;

			if (exec->device == KD_DEVICE_CPU)
				st = kde_all_knn_cpu(tree, k, self, got, count, exec, &err);
			else
				st = kde_all_knn(tree, k, self, got, count, exec, &err);
			ok = (st == KD_OK);
			for (int64_t i = 0; ok && i < tree->n; i += stride)
			{
				int			m = oracle_knn(tree->coords, tree->refs, tree->n,
										   tree->dim, tree->coords + i * tree->dim,
										   k, self ? -1 : i, want);

				ok = same_neighbors(got + i * k, count[i], want, m);
			}
			check(ok, "all-knn %s d=%d n=%lld k=%d self=%d %s%s%s", c->name,
				  c->dim, (long long) c->n, k, self, how, st ? ": " : "",
				  st ? err.message : "");
			free(got);
			free(want);
			free(count);
		}
}

/* Radius (per-query and shared radius) and box queries against the oracle. */
static void
test_ranges(const Case *c, const KdTree *tree, KdExec *exec, const char *how)
{
	KdRangeResult got;
	KdError		err;
	KdStatus	st;
	bool		cpu = exec->device == KD_DEVICE_CPU;

	st = cpu ? kde_radius_cpu(tree, c->queries, c->nq, c->radii, c->nq, &got, exec, &err)
		: kde_radius(tree, c->queries, c->nq, c->radii, c->nq, &got, exec, &err);
	check(st == KD_OK && same_ranges(&got, &c->radius_expected),
		  "radius %s d=%d n=%lld %s %s", c->name, c->dim, (long long) c->n, how,
		  st ? err.message : "");
	if (st == KD_OK)
		kde_range_result_free(&got);

	/* one shared radius: compare query by query with the oracle */
	st = cpu ? kde_radius_cpu(tree, c->queries, c->nq, c->radii, 1, &got, exec, &err)
		: kde_radius(tree, c->queries, c->nq, c->radii, 1, &got, exec, &err);
	if (st == KD_OK)
	{
		KdNeighbor *want = malloc(sizeof(KdNeighbor) * (size_t) (c->n + 1));
		bool		ok = true;

		for (int64_t q = 0; ok && q < c->nq; q++)
		{
			int64_t		m = oracle_radius(c->pts, c->refs, c->n, c->dim,
										  c->queries + q * c->dim, c->radii[0], want);

			ok = same_neighbors(got.hits + got.offsets[q],
								got.offsets[q + 1] - got.offsets[q], want, m);
		}
		check(ok, "radius (shared) %s d=%d n=%lld %s", c->name, c->dim,
			  (long long) c->n, how);
		free(want);
		kde_range_result_free(&got);
	}
	else
		check(false, "radius (shared) %s %s: %s", c->name, how, err.message);

	st = cpu ? kde_box_cpu(tree, c->lows, c->highs, c->nq, &got, exec, &err)
		: kde_box(tree, c->lows, c->highs, c->nq, &got, exec, &err);
	check(st == KD_OK && same_ranges(&got, &c->box_expected),
		  "box %s d=%d n=%lld %s %s", c->name, c->dim, (long long) c->n, how,
		  st ? err.message : "");
	if (st == KD_OK)
		kde_range_result_free(&got);
}

/* Build a tree for c on a device; check its structure. */
static bool
build_checked(const Case *c, KdExec *exec, KdTree *tree, const char *how)
{
	KdError		err;
	KdStatus	st;

	st = exec->device == KD_DEVICE_CPU
		? kde_build_cpu(c->pts, c->refs, c->n, c->dim, tree, exec, &err)
		: kde_build(c->pts, c->refs, c->n, c->dim, tree, exec, &err);
	if (st == KD_OK)
		st = kde_tree_check(tree, &err);
	return check(st == KD_OK, "build %s d=%d n=%lld %s %s", c->name, c->dim,
				 (long long) c->n, how, st ? err.message : "");
}

/*
 * Another build of c (how: the GPU's, one in place) is the CPU's on a
 * copy, bit for bit (ties in a coordinate broken by ref; c's refs are not
 * in input order).
 */
static void
check_same_tree(const Case *c, const KdTree *built, const char *how)
{
	KdTree		cpu;
	KdExec		exec;
	KdError		err;
	bool		ok;

	exec_for(&exec, KD_DEVICE_CPU, 1);
	ok = kde_build_cpu(c->pts, c->refs, c->n, c->dim, &cpu, &exec, &err) == KD_OK;
	if (ok)
	{
		ok = built->n == cpu.n && built->nbounds == cpu.nbounds &&
			memcmp(built->coords, cpu.coords, sizeof(double) * c->n * c->dim) == 0 &&
			memcmp(built->refs, cpu.refs, sizeof(uint64_t) * c->n) == 0 &&
			memcmp(built->split, cpu.split, c->n) == 0 &&
			memcmp(built->bounds, cpu.bounds, sizeof(double) * 2 * c->dim * cpu.nbounds) == 0;
		kde_tree_free(&cpu);
	}
	check(ok, "%s build equals the cpu build %s d=%d n=%lld", how, c->name,
		  c->dim, (long long) c->n);
}

/*
 * A CPU build in place (on copies of c's points and refs, 2 threads) makes
 * the tree of a build on a copy.
 */
static void
check_in_place(const Case *c)
{
	double	   *pts = malloc(sizeof(double) * c->n * c->dim + 1);
	uint64_t   *refs = malloc(sizeof(uint64_t) * c->n + 1);
	KdTree		tree;
	KdExec		exec;
	KdError		err;
	KdStatus	st;

	memcpy(pts, c->pts, sizeof(double) * c->n * c->dim);
	memcpy(refs, c->refs, sizeof(uint64_t) * c->n);
	exec_for(&exec, KD_DEVICE_CPU, 2);
	st = kde_build_in_place(pts, refs, c->n, c->dim, &tree, &exec, &err);
	if (st == KD_OK)
		st = kde_tree_check(&tree, &err);
	if (check(st == KD_OK, "build in place %s d=%d n=%lld %s", c->name, c->dim,
			  (long long) c->n, st ? err.message : ""))
	{
		check_same_tree(c, &tree, "in-place");
		kde_tree_free(&tree);
	}
	free(pts);
	free(refs);
}

/* Every query kind on one case, on the CPU and (when usable) the GPU. */
static void
test_case(DataKind kind, int64_t n, int dim)
{
	Case		c;
	KdExec		exec;
	KdTree		tree;

	case_make(&c, kind, n, dim, (uint64_t) (n * 31 + dim * 7 + kind));
	for (int threads = 1; threads <= 2; threads++)
	{
		const char *how = threads == 1 ? "cpu/1" : "cpu/2";

		exec_for(&exec, KD_DEVICE_CPU, threads);
		if (!build_checked(&c, &exec, &tree, how))
			continue;
		test_knn(&c, &tree, &exec, how);
		test_all_knn(&c, &tree, &exec, how);
		test_ranges(&c, &tree, &exec, how);
		if (have_gpu && threads == 1)
		{
			/* the GPU on a CPU-built tree */
			exec_for(&exec, KD_DEVICE_GPU, 1);
			test_knn(&c, &tree, &exec, "gpu-query");
			test_all_knn(&c, &tree, &exec, "gpu-query");
			test_ranges(&c, &tree, &exec, "gpu-query");
		}
		kde_tree_free(&tree);
	}
	check_in_place(&c);
	if (have_gpu)
	{
		/* a GPU-built tree, queried on the GPU */
		exec_for(&exec, KD_DEVICE_GPU, 1);
		if (build_checked(&c, &exec, &tree, "gpu-build"))
		{
			check_same_tree(&c, &tree, "gpu");
			test_knn(&c, &tree, &exec, "gpu-build");
			test_all_knn(&c, &tree, &exec, "gpu-build");
			test_ranges(&c, &tree, &exec, "gpu-build");
			kde_tree_free(&tree);
		}
	}
	case_free(&c);
}

/* Tree shape: subtree sizes, depth and bounding-box counts. */
static void
test_shape(void)
{
	bool		ok = true;

	for (int64_t n = 0; n < 2000 && ok; n++)
	{
		int64_t		nb = kde_tree_nbounds(n);

		ok = kde_subtree_size(0, n) == n &&
			(n == 0 || kde_subtree_size(1, n) + kde_subtree_size(2, n) + 1 == n) &&
			kde_tree_depth(n) == (int) ceil(log2((double) n + 1)) &&
			(nb == 0 || kde_subtree_size(nb - 1, n) >= KD_BOUNDS_MIN_SUBTREE) &&
			(2 * nb >= n || kde_subtree_size(2 * nb, n) < KD_BOUNDS_MIN_SUBTREE ||
			 2 * nb + 1 > n);
		for (int64_t i = 0; ok && i < n; i++)
			ok = kde_subtree_size(i, n) ==
				1 + kde_subtree_size(2 * i + 1, n) + kde_subtree_size(2 * i + 2, n);
		if (!ok)
			printf("shape fails at n=%lld\n", (long long) n);
	}
	check(ok, "tree shape for n = 0..1999");
}

/*
 * Boxes recomputed from the points (kde_tree_fill_bounds, for trees stored
 * with only their top boxes) equal the boxes the build made, bit for bit,
 * whatever prefix of them is kept.
 */
static void
test_fill_bounds(void)
{
	static const int64_t sizes[] = {0, 1, 2, 9, 17, 300, 2500, 70001};
	bool		ok = true;

	for (int si = 0; si < (int) (sizeof(sizes) / sizeof(sizes[0])); si++)
		for (int dim = 1; dim <= 4; dim += 3)
		{
			int64_t		n = sizes[si];
			double	   *pts = malloc(sizeof(double) * (size_t) (n * dim) + 1);
			uint64_t   *refs = malloc(sizeof(uint64_t) * (size_t) n + 1);
			KdTree		tree;
			KdExec		exec;
			KdError		err;
			double	   *built;
			size_t		bytes;

			data_generate(DATA_CLUSTERED, n, dim, 7 + si, pts);
			for (int64_t i = 0; i < n; i++)
				refs[i] = ref_of(i);
			exec_for(&exec, KD_DEVICE_CPU, 1);
			if (kde_build_cpu(pts, refs, n, dim, &tree, &exec, &err) != KD_OK)
			{
				ok = false;
				break;
			}
			bytes = sizeof(double) * 2 * dim * (size_t) tree.nbounds;
			built = malloc(bytes + 1);
			memcpy(built, tree.bounds, bytes);
			for (int64_t from = 0; from <= tree.nbounds; from = 2 * from + 1)
			{
				memset(tree.bounds + from * 2 * dim, 0xff,
					   sizeof(double) * 2 * dim * (size_t) (tree.nbounds - from));
				kde_tree_fill_bounds(&tree, from);
				if (memcmp(built, tree.bounds, bytes) != 0)
				{
					printf("fill_bounds differs: n=%lld dim=%d from=%lld\n",
						   (long long) n, dim, (long long) from);
					ok = false;
				}
			}
			free(built);
			kde_tree_free(&tree);
			free(pts);
			free(refs);
		}
	check(ok, "boxes recomputed from the points equal the built ones");
}

/* Every bad argument returns its code, with no crash. */
static void
test_errors(void)
{
	double		pts[6] = {0, 0, 1, 1, 2, 2};
	uint64_t	refs[3] = {1, 2, 3};
	double		nanq[2] = {NAN, 0};
	double		infq[2] = {0, INFINITY};
	double		r_neg = -1.0,
				r_nan = NAN;
	KdNeighbor	out[8];
	int32_t		count[2];
	KdRangeResult res;
	KdTree		tree;
	KdExec		exec;
	KdError		err;

	exec_for(&exec, KD_DEVICE_CPU, 1);
	check(kde_build_cpu(pts, refs, 3, 0, &tree, &exec, &err) == KD_ERR_ARG, "dim 0 rejected");
	check(kde_build_cpu(pts, refs, 0, 9, &tree, &exec, &err) == KD_ERR_ARG, "dim 9 rejected");
	pts[3] = NAN;
	check(kde_build_cpu(pts, refs, 3, 2, &tree, &exec, &err) == KD_ERR_NONFINITE &&
		  err.item == 1, "NaN point rejected, naming point 1: %s", err.message);
	pts[3] = -INFINITY;
	check(kde_build_cpu(pts, refs, 3, 2, &tree, &exec, &err) == KD_ERR_NONFINITE,
		  "infinite point rejected");
	pts[3] = 1;
	if (!check(kde_build_cpu(pts, refs, 3, 2, &tree, &exec, &err) == KD_OK, "tiny build"))
		return;
	check(kde_knn_cpu(&tree, pts, 1, 0, out, count, &exec, &err) == KD_ERR_ARG, "k = 0 rejected");
	check(kde_knn_cpu(&tree, pts, 1, -3, out, count, &exec, &err) == KD_ERR_ARG, "k < 0 rejected");
	check(kde_knn_cpu(&tree, pts, 1, KD_MAX_K + 1, out, count, &exec, &err) == KD_ERR_ARG,
		  "k > %d rejected", KD_MAX_K);
	check(kde_knn_cpu(&tree, nanq, 1, 1, out, count, &exec, &err) == KD_ERR_NONFINITE,
		  "NaN query rejected");
	check(kde_knn_cpu(&tree, infq, 1, 1, out, count, &exec, &err) == KD_ERR_NONFINITE,
		  "infinite query rejected");
	check(kde_all_knn_cpu(&tree, 0, false, out, count, &exec, &err) == KD_ERR_ARG,
		  "all-knn k = 0 rejected");
	check(kde_radius_cpu(&tree, pts, 1, &r_neg, 1, &res, &exec, &err) == KD_ERR_ARG,
		  "negative radius rejected");
	check(kde_radius_cpu(&tree, pts, 1, &r_nan, 1, &res, &exec, &err) == KD_ERR_ARG,
		  "NaN radius rejected");
	check(kde_radius_cpu(&tree, pts, 2, pts, 3, &res, &exec, &err) == KD_ERR_ARG,
		  "radius count mismatch rejected");
	check(kde_box_cpu(&tree, nanq, pts, 1, &res, &exec, &err) == KD_ERR_NONFINITE,
		  "NaN box rejected");
	check(kde_knn_cpu(&tree, pts, 1, 5, out, count, &exec, &err) == KD_OK && count[0] == 3,
		  "k > n returns n");
	if (!have_gpu)
	{
		exec_for(&exec, KD_DEVICE_GPU, 1);
		check(kde_knn(&tree, pts, 1, 1, out, count, &exec, &err) == KD_ERR_GPU_UNAVAILABLE,
			  "device = gpu without a GPU fails: %s", err.message);
		exec_for(&exec, KD_DEVICE_AUTO, 1);
		check(kde_knn(&tree, pts, 1, 1, out, count, &exec, &err) == KD_OK &&
			  !exec.used_gpu && exec.note[0] != '\0',
			  "device = auto without a GPU runs on the CPU: %s", exec.note);
	}
	kde_tree_free(&tree);
}

static int
interrupt_now(void *arg)
{
	return ++*(int *) arg >= 2;
}

static int
interrupt_count(void *arg)
{
	++*(int *) arg;
	return 0;
}

/*
 * The interrupt callback stops long work with KD_ERR_CANCELED, and is
 * polled often enough for a cancel to take effect soon: a one-thread build
 * at least once per 32768 points, kNN with k = 1024 at least once per 8
 * queries (it was polled once per 256 queries whatever k, and a one-thread
 * build only before and after the whole tree).
 */
static void
test_cancel(void)
{
	int64_t		n = 200000;
	double	   *pts = malloc(sizeof(double) * (size_t) n * 3);
	uint64_t   *refs = malloc(sizeof(uint64_t) * (size_t) n);
	KdNeighbor *out = malloc(sizeof(KdNeighbor) * (size_t) n * 10);
	int32_t    *count = malloc(sizeof(int32_t) * (size_t) n);
	KdTree		tree;
	KdExec		exec;
	KdError		err;
	int			calls = 0;

	data_generate(DATA_UNIFORM, n, 3, 99, pts);
	for (int64_t i = 0; i < n; i++)
		refs[i] = ref_of(i);
	exec_for(&exec, KD_DEVICE_CPU, 1);
	exec.interrupt = interrupt_count;
	exec.interrupt_arg = &calls;
	if (check(kde_build_cpu(pts, refs, n, 3, &tree, &exec, &err) == KD_OK, "cancel: counted build"))
	{
		KdNeighbor *wide = malloc(sizeof(KdNeighbor) * 2000 * KD_MAX_K);
		KdStatus	st;

		check(calls >= n / 32768, "a one-thread build polls every 32768 points (%d polls)", calls);
		calls = 0;
		st = kde_knn(&tree, pts, 2000, KD_MAX_K, wide, count, &exec, &err);
		check(st == KD_OK && calls >= 2000 / 8,
			  "kNN with k = %d polls every 8 queries (%d polls)", KD_MAX_K, calls);
		free(wide);
		kde_tree_free(&tree);
	}
	exec_for(&exec, KD_DEVICE_CPU, 2);
	if (check(kde_build_cpu(pts, refs, n, 3, &tree, &exec, &err) == KD_OK, "cancel setup"))
	{
		for (int gpu = 0; gpu <= (have_gpu ? 1 : 0); gpu++)
		{
			exec_for(&exec, gpu ? KD_DEVICE_GPU : KD_DEVICE_CPU, 2);
			exec.interrupt = interrupt_now;
			exec.interrupt_arg = &calls;
			calls = 0;
			check(kde_all_knn(&tree, 10, false, out, count, &exec, &err) == KD_ERR_CANCELED,
				  "all-knn canceled on the %s", gpu ? "GPU" : "CPU");
			calls = 0;
			check(kde_knn(&tree, pts, n, 10, out, count, &exec, &err) == KD_ERR_CANCELED,
				  "knn canceled on the %s", gpu ? "GPU" : "CPU");
		}
		kde_tree_free(&tree);
	}
	free(pts);
	free(refs);
	free(out);
	free(count);
}

/*
 * A large set for the GPU tests: n points of dim coordinates, nq = n / 4
 * queries, and room for the GPU's and the CPU's answers of up to kmax
 * neighbours a point.
 */
typedef struct GpuSet
{
	int64_t		n;
	int64_t		nq;
	int			dim;
	double	   *pts;
	double	   *qs;
	uint64_t   *refs;
	KdNeighbor *a;				/* the GPU's answers */
	KdNeighbor *b;				/* the CPU's */
	int32_t    *ca;
	int32_t    *cb;
	KdExec		cpu;
	KdExec		gpu;
} GpuSet;

/* Allocate s's arrays and give its points their references. */
static void
gpu_set_alloc(GpuSet *s, int64_t n, int dim, int kmax)
{
	s->n = n;
	s->nq = n / 4;
	s->dim = dim;
	s->pts = malloc(sizeof(double) * (size_t) (n * dim));
	s->qs = malloc(sizeof(double) * (size_t) (s->nq * dim));
	s->refs = malloc(sizeof(uint64_t) * (size_t) n);
	s->a = malloc(sizeof(KdNeighbor) * (size_t) (n * kmax));
	s->b = malloc(sizeof(KdNeighbor) * (size_t) (n * kmax));
	s->ca = malloc(sizeof(int32_t) * (size_t) n);
	s->cb = malloc(sizeof(int32_t) * (size_t) n);
	for (int64_t i = 0; i < n; i++)
		s->refs[i] = ref_of(i);
	exec_for(&s->cpu, KD_DEVICE_CPU, ncpu);
	exec_for(&s->gpu, KD_DEVICE_GPU, ncpu);
}

/* Free s's arrays. */
static void
gpu_set_free(GpuSet *s)
{
	free(s->pts);
	free(s->qs);
	free(s->refs);
	free(s->a);
	free(s->b);
	free(s->ca);
	free(s->cb);
}

/* kNN of s's queries on the GPU (answers left in s->a) against the CPU's. */
static void
check_gpu_knn(GpuSet *s, const KdTree *tree, int k, const char *name)
{
	KdError		err;

	check(kde_knn(tree, s->qs, s->nq, k, s->a, s->ca, &s->gpu, &err) == KD_OK &&
		  kde_knn_cpu(tree, s->qs, s->nq, k, s->b, s->cb, &s->cpu, &err) == KD_OK &&
		  memcmp(s->ca, s->cb, sizeof(int32_t) * s->nq) == 0 &&
		  same_neighbors(s->a, s->nq * k, s->b, s->nq * k),
		  "%s knn gpu == cpu n=%lld d=%d k=%d", name, (long long) s->n, s->dim, k);
}

/* All-kNN on the GPU (answers left in s->a) against the CPU's. */
static void
check_gpu_all_knn(GpuSet *s, const KdTree *tree, int k, bool self, const char *name)
{
	KdError		err;

	check(kde_all_knn(tree, k, self, s->a, s->ca, &s->gpu, &err) == KD_OK &&
		  kde_all_knn_cpu(tree, k, self, s->b, s->cb, &s->cpu, &err) == KD_OK &&
		  memcmp(s->ca, s->cb, sizeof(int32_t) * s->n) == 0 &&
		  same_neighbors(s->a, s->n * k, s->b, s->n * k),
		  "%s all-knn gpu == cpu n=%lld d=%d k=%d self=%d", name,
		  (long long) s->n, s->dim, k, self);
}

/* Large sets on the GPU: results identical to the CPU's. */
static void
test_gpu_large(DataKind kind, int64_t n, int dim, int k)
{
	const char *name = data_kind_name(kind);
	GpuSet		s;
	KdRangeResult ra,
				rb;
	double		r;
	KdTree		tree;
	KdError		err;
	KdStatus	st;

	gpu_set_alloc(&s, n, dim, k);
	data_generate(kind, n, dim, 7, s.pts);
	data_queries(kind, s.nq, dim, 8, s.pts, n, s.qs);
	if (!check(kde_build(s.pts, s.refs, n, dim, &tree, &s.gpu, &err) == KD_OK &&
			   kde_tree_check(&tree, &err) == KD_OK,
			   "large gpu build %s n=%lld d=%d: %s", name, (long long) n, dim,
			   err.message))
		goto done;
	check_gpu_knn(&s, &tree, k, name);
	check_gpu_all_knn(&s, &tree, k, false, name);
	r = sqrt(s.a[k - 1].d2) * 2.0;
	st = kde_radius(&tree, s.qs, s.nq, &r, 1, &ra, &s.gpu, &err);
	if (check(st == KD_OK && kde_radius_cpu(&tree, s.qs, s.nq, &r, 1, &rb, &s.cpu, &err) == KD_OK,
			  "large radius runs %s", err.message))
	{
		check(same_ranges(&ra, &rb), "large radius gpu == cpu %s n=%lld d=%d (%lld hits)",
			  name, (long long) n, dim, (long long) ra.offsets[s.nq]);
		kde_range_result_free(&ra);
		kde_range_result_free(&rb);
	}
	kde_tree_free(&tree);
done:
	gpu_set_free(&s);
}

/*
 * Duplicate-heavy data on the GPU (about 100 copies of each place, and
 * queries that repeat the data's points), where equal queries are walked
 * once: kNN and All-kNN with and without each point itself, for k at the
 * list capacities either side of k + 1 and, up to kmax, at the largest k
 * (where All-kNN's runs would need k + 1), identical to the CPU's.
 */
static void
test_gpu_places(int64_t n, int dim, int kmax)
{
	static const int ks[] = {1, 9, 10, 31, 32, 64, KD_MAX_K - 1, KD_MAX_K};
	GpuSet		s;
	KdTree		tree;
	KdError		err;

	gpu_set_alloc(&s, n, dim, kmax);
	data_places(n, dim, n / 100, 21, s.pts);
	for (int64_t q = 0; q < s.nq; q++)
		memcpy(s.qs + q * dim, s.pts + (q * 7919 % n) * dim, sizeof(double) * dim);
	if (!check(kde_build(s.pts, s.refs, n, dim, &tree, &s.gpu, &err) == KD_OK,
			   "places gpu build n=%lld d=%d: %s", (long long) n, dim, err.message))
		goto done;
	for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]) && ks[ki] <= kmax; ki++)
	{
		check_gpu_knn(&s, &tree, ks[ki], "places");
		for (int self = 0; self <= 1; self++)
			check_gpu_all_knn(&s, &tree, ks[ki], self, "places");
	}
	kde_tree_free(&tree);
done:
	gpu_set_free(&s);
}

int
main(int argc, char **argv)
{
	static const DataKind kinds[] = {
		DATA_UNIFORM, DATA_CLUSTERED, DATA_GRID, DATA_EQUAL, DATA_LINE, DATA_OFFSET,
		DATA_FLOAT, DATA_FLOAT_SCALES, DATA_SHELL
	};
	static const int64_t sizes[] = {0, 1, 2, 3, 17, 300, 2500};
	static const int dims[] = {1, 2, 3, 4, 5, 6, 7, 8};
	KdGpuInfo	info;
	char		why[256];
	int			opt;

	while ((opt = getopt(argc, argv, "vlq:")) != -1)
	{
		if (opt == 'v')
			verbose = true;
		else if (opt == 'l')
			skip_large = true;
		else if (opt == 'q')
			nqueries = atoi(optarg);
	}
	ncpu = (int) sysconf(_SC_NPROCESSORS_ONLN);
	have_gpu = kde_gpu_available(&info, why, sizeof(why));
	if (have_gpu)
		printf("# GPU: %s (cc %d.%d, %lld MiB), driver %d\n", info.name,
			   info.cc_major, info.cc_minor,
			   (long long) (info.total_memory >> 20), info.driver_version);
	else
		printf("# no GPU, CPU tests only: %s\n", why);

	test_shape();
	test_fill_bounds();
	test_errors();
	for (size_t ki = 0; ki < sizeof(kinds) / sizeof(kinds[0]); ki++)
		for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
			for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
			{
				/* the largest size in the common dimensions only */
				if (sizes[si] > 1000 && dims[di] != 2 && dims[di] != 3)
					continue;
				test_case(kinds[ki], sizes[si], dims[di]);
			}
	test_cancel();
	test_dbscan(have_gpu, !skip_large);
	test_flat(have_gpu, !skip_large);
	test_vptree(have_gpu);
	if (have_gpu && !skip_large)
	{
		test_gpu_large(DATA_UNIFORM, 1000000, 3, 10);
		test_gpu_large(DATA_CLUSTERED, 1000000, 3, 10);
		test_gpu_large(DATA_CLUSTERED, 300000, 2, 100);
		test_gpu_large(DATA_GRID, 500000, 2, 16);
		test_gpu_large(DATA_FLOAT, 1000000, 2, 10);
		test_gpu_large(DATA_SHELL, 100000, 2, 10);
		test_gpu_large(DATA_SHELL, 100000, 3, 32);
		test_gpu_places(1000000, 2, 64);
		test_gpu_places(300000, 3, 64);
		test_gpu_places(20000, 2, KD_MAX_K);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
