/*
 * test_flat.c
 *	  The engine's flat kNN and radius searches of vectors (kde_flat_knn,
 *	  kde_flat_radius) against a brute-force oracle written here, for
 *	  every metric, on the CPU's threads and the GPU; bad arguments; and,
 *	  with a GPU, large sets and the L2 matrix-form filter's hard sets
 *	  against the CPU; and CPU batches large enough for the vantage-point
 *	  tree, with data it prunes and data it does not.
 *
 * The oracle computes each distance with its own loop (the metric's
 * definition, term by term in dimension order, as kd_metric.h documents),
 * sorts every (distance, ref) pair and keeps the first k, so the engine's
 * distances must agree bit for bit and its order and ties exactly.  Refs
 * are a scrambled permutation, so that ties by ref are not ties by place;
 * the vectors are given in rows wider than their coordinates, padded with
 * NaN that must never be read, and half the runs skip each query's own
 * vector where it is one of them.
 * Sets: uniform; on a few random lines through the origin's neighbourhood
 * (low intrinsic dimension); small integers (many equal distances);
 * large offsets with tiny spreads; and one point repeated.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "datagen.h"
#include "kd_metric.h"

const char *const flat_kinds[] = {"uniform", "lines", "integers",
"offset", "same"};

/* n vectors of dim of a kind into out; none is the zero vector. */
void
flat_generate(FlatKind kind, int64_t n, int dim, uint64_t seed, double *out)
{
	Rng			rng = {seed * 0x9e3779b97f4a7c15ULL + 7};
	double		dirs[4 * 256];

	for (int j = 0; j < 4 * dim && j < 4 * 256; j++)
		dirs[j] = rng_normal(&rng);
	for (int64_t i = 0; i < n; i++)
	{
		double	   *v = out + i * dim;
		int			line = (int) (rng_next(&rng) % 4);
		double		t = rng_normal(&rng);

		for (int j = 0; j < dim; j++)
		{
			switch (kind)
			{
				case FLAT_UNIFORM:
					v[j] = rng_uniform(&rng) - 0.5;
					break;
				case FLAT_LINES:
					v[j] = t * dirs[line * (dim < 256 ? dim : 256) + j % 256] +
						1e-3 * rng_normal(&rng);
					break;
				case FLAT_INTEGERS:
					v[j] = (double) (rng_next(&rng) % 3) - 1.0;
					break;
				case FLAT_OFFSET:
					v[j] = 1.0e6 + 1.0e-3 * rng_uniform(&rng);
					break;
				default:
					v[j] = 0.25 + j;
					break;
			}
		}
		if (kind == FLAT_INTEGERS)
			v[i % dim] = 2.0;	/* never the zero vector */
	}
}

/* The oracle's distance: each metric's definition, in dimension order. */
double
oracle_distance(KdMetric metric, const double *a, const double *b, int dim)
{
	double		s = 0.0,
				na = 0.0,
				nb = 0.0,
				sim;

	for (int j = 0; j < dim; j++)
	{
		double		d = a[j] - b[j];

		if (metric == KD_METRIC_L2)
			s = s + d * d;
		else if (metric == KD_METRIC_L1)
			s = s + fabs(d);
		else if (metric == KD_METRIC_LINF)
			s = fabs(d) > s ? fabs(d) : s;
		else
		{
			s = s + a[j] * b[j];
			na = na + a[j] * a[j];
			nb = nb + b[j] * b[j];
		}
	}
	if (metric == KD_METRIC_L2)
		return sqrt(s);
	if (metric != KD_METRIC_COSINE)
		return s;
	sim = s / (sqrt(na) * sqrt(nb));
	if (sim > 1.0)
		sim = 1.0;
	if (sim < -1.0)
		sim = -1.0;
	return 1.0 - sim;
}

/* qsort order of (d2, ref) */
static int
pair_cmp(const void *x, const void *y)
{
	const KdNeighbor *a = x;
	const KdNeighbor *b = y;

	if (a->d2 != b->d2)
		return a->d2 < b->d2 ? -1 : 1;
	return a->ref < b->ref ? -1 : (a->ref > b->ref);
}

/*
 * The oracle's k nearest of one query among n vectors of dim (in rows of
 * stride), leaving out the one whose ref is skip, into want; returns
 * their count.
 */
static int
oracle_flat(const double *pts, int64_t stride, const uint64_t *refs,
			int64_t n, int dim, KdMetric metric, const double *q, int k,
			uint64_t skip, KdNeighbor *want)
{
	KdNeighbor *all = malloc(sizeof(KdNeighbor) * (size_t) (n + 1));
	int64_t		m = 0;
	int			cnt;

	for (int64_t i = 0; i < n; i++)
	{
		if (refs[i] == skip)
			continue;
		all[m].d2 = oracle_distance(metric, q, pts + i * stride, dim);
		all[m].ref = refs[i];
		m++;
	}
	cnt = m < k ? (int) m : k;
	qsort(all, (size_t) m, sizeof(KdNeighbor), pair_cmp);
	memcpy(want, all, sizeof(KdNeighbor) * (size_t) cnt);
	free(all);
	return cnt;
}

/*
 * The oracle's hits of one query within r among n vectors, by (distance,
 * ref), into want (room for n); returns their count.
 */
static int64_t
oracle_radius(const double *pts, int64_t stride, const uint64_t *refs,
			  int64_t n, int dim, KdMetric metric, const double *q, double r,
			  KdNeighbor *want)
{
	int64_t		m = 0;

	for (int64_t i = 0; i < n; i++)
	{
		double		d = oracle_distance(metric, q, pts + i * stride, dim);

		if (d <= r)
		{
			want[m].d2 = d;
			want[m++].ref = refs[i];
		}
	}
	qsort(want, (size_t) m, sizeof(KdNeighbor), pair_cmp);
	return m;
}

/*
 * Radius searches of set on one way, under metric, at the oracle's
 * distance of each query's (q % 7 + 1)-th nearest vector (so that ties
 * sit on the boundary), one radius per query and one for all: the hits
 * equal the oracle's.
 */
static bool
flat_radius_case(const KdVectors *set, KdMetric metric, const double *qs,
				 int64_t nq, int way)
{
	double	   *radii = malloc(sizeof(double) * (size_t) nq);
	KdNeighbor *want = malloc(sizeof(KdNeighbor) * (size_t) (set->n + 1));
	bool		ok = true;

	for (int64_t q = 0; q < nq; q++)
	{
		int64_t		m = oracle_radius(set->coords, set->stride, set->refs, set->n,
									  set->dim, metric, qs + q * set->dim,
									  INFINITY, want);

		radii[q] = m == 0 ? 1.0 : want[(q % 7) < m ? q % 7 : m - 1].d2;
	}
	for (int one = 0; one < 2 && ok; one++)
	{
		KdRangeResult res;
		KdExec		exec;
		KdError		err;

		test_way_exec(&exec, way);
		if (kde_flat_radius(set, metric, qs, nq, radii, one ? 1 : nq, &res,
							&exec, &err) != KD_OK)
		{
			free(radii);
			free(want);
			return false;
		}
		for (int64_t q = 0; q < nq && ok; q++)
		{
			int64_t		m = oracle_radius(set->coords, set->stride, set->refs,
										  set->n, set->dim, metric,
										  qs + q * set->dim, radii[one ? 0 : q],
										  want);

			ok = res.offsets[q + 1] - res.offsets[q] == m &&
				memcmp(res.hits + res.offsets[q], want, sizeof(KdNeighbor) * (size_t) m) == 0;
		}
		kde_range_result_free(&res);
	}
	free(radii);
	free(want);
	return ok;
}

/* One set: every way's answer for every metric equals the oracle's. */
static void
flat_case(FlatKind kind, int64_t n, int dim, int k, bool have_gpu)
{
	int64_t		nq = 23;
	int64_t		stride = dim + 2;
	double	   *flat = malloc(sizeof(double) * (size_t) (n * dim + 1));
	double	   *pts = malloc(sizeof(double) * (size_t) (n * stride + 1));
	double	   *qs = malloc(sizeof(double) * (size_t) (nq * dim));
	uint64_t   *refs = malloc(sizeof(uint64_t) * (size_t) (n + 1));
	uint64_t   *skip = malloc(sizeof(uint64_t) * (size_t) nq);
	KdNeighbor *got = malloc(sizeof(KdNeighbor) * (size_t) (nq * k));
	KdNeighbor *want = malloc(sizeof(KdNeighbor) * (size_t) k);
	int32_t    *count = malloc(sizeof(int32_t) * (size_t) nq);
	KdVectors	set = {n, dim, stride, pts, refs};

	flat_generate(kind, n, dim, 11 + (uint64_t) n, flat);
	for (int64_t i = 0; i < n; i++)
	{
		memcpy(pts + i * stride, flat + i * dim, sizeof(double) * (size_t) dim);
		pts[i * stride + dim] = pts[i * stride + dim + 1] = NAN;
		refs[i] = (uint64_t) ((i * 7919) % (n + 1000003)) ^ 0x5a5aULL;
	}
	/* queries: some of the points themselves (skipping them), some new */
	flat_generate(kind, nq, dim, 5 + (uint64_t) dim, qs);
	for (int64_t q = 0; q < nq; q++)
	{
		skip[q] = UINT64_MAX - (uint64_t) q;
		if (q % 3 == 0 && n > 0)
		{
			memcpy(qs + q * dim, flat + ((q * 7) % n) * dim, sizeof(double) * (size_t) dim);
			skip[q] = refs[(q * 7) % n];
		}
	}
	/* way 3: the CPU through a vantage-point tree, 4: the GPU's */
	for (int metric = 0; metric <= KD_METRIC_COSINE; metric++)
		for (int way = 0; way < (have_gpu ? 5 : 4); way++)
		{
			KdExec		exec;
			KdError		err;
			KdGpuTimes	times = {0};
			KdStatus	st;
			bool		ok = true;
			bool		skipping = (metric + way) % 2 == 1;
			bool		tree = way >= 3;

			if ((way == 2 && !have_gpu) || (tree && metric == KD_METRIC_COSINE))
				continue;
			test_way_exec(&exec, tree ? (way == 3 ? 0 : 2) : way);
			exec.vector_tree = tree ? KD_TREE_ALWAYS : KD_TREE_AUTO;
			exec.times = &times;
			memset(err.message, 0, sizeof(err.message));
			st = kde_flat_knn(&set, (KdMetric) metric, qs, nq, k,
							  skipping ? skip : NULL, got, count, &exec, &err);
			if (!check(st == KD_OK, "flat %s n=%lld d=%d k=%d %s %s%s: %s",
					   flat_kinds[kind], (long long) n, dim, k,
					   kde_metric_name((KdMetric) metric),
					   test_ways[tree ? (way == 3 ? 0 : 2) : way],
					   tree ? " tree" : "", err.message))
				continue;
			if (way == 4)
				check(n == 0 || times.flat_tree == nq,
					  "flat %s n=%lld d=%d %s: the GPU's tree answered %lld of %lld",
					  flat_kinds[kind], (long long) n, dim,
					  kde_metric_name((KdMetric) metric),
					  (long long) times.flat_tree, (long long) nq);
			for (int64_t q = 0; q < nq && ok; q++)
			{
				int			cnt = oracle_flat(pts, stride, refs, n, dim,
											  (KdMetric) metric, qs + q * dim, k,
											  skipping ? skip[q] : UINT64_MAX,
											  want);

				ok = count[q] == cnt &&
					memcmp(got + q * k, want, sizeof(KdNeighbor) * (size_t) cnt) == 0;
			}
			check(ok, "flat %s n=%lld d=%d k=%d %s %s%s%s equals the oracle",
				  flat_kinds[kind], (long long) n, dim, k,
				  kde_metric_name((KdMetric) metric),
				  test_ways[tree ? (way == 3 ? 0 : 2) : way],
				  tree ? " tree" : "", skipping ? " skipping" : "");
			if (!tree)
				check(flat_radius_case(&set, (KdMetric) metric, qs, nq, way),
					  "flat radius %s n=%lld d=%d %s %s equals the oracle",
					  flat_kinds[kind], (long long) n, dim,
					  kde_metric_name((KdMetric) metric), test_ways[way]);
		}
	free(flat);
	free(pts);
	free(qs);
	free(refs);
	free(skip);
	free(got);
	free(want);
	free(count);
}

/* Bad arguments: each way refuses them alike. */
static void
flat_errors(bool have_gpu)
{
	double		v[4 * 20];
	double		zero[20] = {0};
	uint64_t	refs[4] = {1, 2, 3, 4};
	KdNeighbor	out[8];
	int32_t		count[2];
	KdVectors	set = {4, 20, 20, v, refs};

	flat_generate(FLAT_UNIFORM, 4, 20, 3, v);
	for (int way = 0; way < (have_gpu ? 3 : 2); way++)
	{
		KdExec		exec;
		KdError		err;
		KdVectors	wide = {4, KD_FLAT_MAX_DIM + 1, KD_FLAT_MAX_DIM + 1, v, refs};
		KdVectors	narrow = {4, 20, 19, v, refs};

		test_way_exec(&exec, way);
		check(kde_flat_knn(&set, KD_METRIC_L2, v, 1, 0, NULL, out, count, &exec, &err) == KD_ERR_ARG,
			  "flat refuses k = 0 %s", test_ways[way]);
		check(kde_flat_knn(&wide, KD_METRIC_L2, v, 0, 1, NULL, out, count, &exec, &err) == KD_ERR_ARG,
			  "flat refuses too many dimensions %s", test_ways[way]);
		check(kde_flat_knn(&narrow, KD_METRIC_L2, v, 1, 1, NULL, out, count, &exec, &err) == KD_ERR_ARG,
			  "flat refuses rows narrower than vectors %s", test_ways[way]);
		check(kde_flat_knn(&set, KD_METRIC_COSINE, zero, 1, 2, NULL, out, count, &exec, &err) == KD_ERR_ARG &&
			  err.item == 0,
			  "flat cosine refuses a zero query %s", test_ways[way]);
		check(kde_flat_knn(&set, (KdMetric) 9, v, 1, 2, NULL, out, count, &exec, &err) == KD_ERR_ARG,
			  "flat refuses an unknown metric %s", test_ways[way]);
		v[2 * 20 + 5] = NAN;
		check(kde_flat_knn(&set, KD_METRIC_L1, v, 1, 2, NULL, out, count, &exec, &err) == KD_ERR_NONFINITE &&
			  err.item == 2,
			  "flat refuses a NaN vector %s", test_ways[way]);
		v[2 * 20 + 5] = 0.5;
		zero[3] = INFINITY;
		check(kde_flat_knn(&set, KD_METRIC_L1, zero, 1, 2, NULL, out, count, &exec, &err) == KD_ERR_NONFINITE,
			  "flat refuses an infinite query %s", test_ways[way]);
		zero[3] = 0.0;
		{
			KdRangeResult res;
			double		bad[3] = {-1.0, NAN, 1.0};

			check(kde_flat_radius(&set, KD_METRIC_L2, v, 1, &bad[0], 1, &res, &exec, &err) == KD_ERR_ARG &&
				  kde_flat_radius(&set, KD_METRIC_L2, v, 1, &bad[1], 1, &res, &exec, &err) == KD_ERR_ARG &&
				  kde_flat_radius(&set, KD_METRIC_L2, v, 1, bad, 3, &res, &exec, &err) == KD_ERR_ARG,
				  "flat radius refuses a negative or NaN radius, and radii not one per query %s",
				  test_ways[way]);
			check(kde_flat_radius(&set, KD_METRIC_COSINE, zero, 1, &bad[2], 1, &res, &exec, &err) == KD_ERR_ARG,
				  "flat radius under cosine refuses a zero query %s", test_ways[way]);
		}
	}
}

/*
 * Whether the flat kNN of nq queries ran on the GPU (exec gpu) and gave
 * the CPU path's answers (exec cpu) bit for bit, into a and ca, b and cb.
 */
static bool
flat_gpu_is_cpu(const KdVectors *set, KdMetric metric, const double *qs,
				int64_t nq, int k, KdExec *gpu, KdExec *cpu, KdNeighbor *a,
				KdNeighbor *b, int32_t *ca, int32_t *cb, KdError *err)
{
	return kde_flat_knn(set, metric, qs, nq, k, NULL, a, ca, gpu, err) == KD_OK &&
		gpu->used_gpu &&
		kde_flat_knn_cpu(set, metric, qs, nq, k, NULL, b, cb, cpu, err) == KD_OK &&
		memcmp(a, b, sizeof(KdNeighbor) * (size_t) (nq * k)) == 0 &&
		memcmp(ca, cb, sizeof(int32_t) * (size_t) nq) == 0;
}

/* Large sets on the GPU: every answer equal to the CPU's, bit for bit. */
static void
flat_large(int64_t n, int64_t nq, int dim, int k)
{
	double	   *pts = malloc(sizeof(double) * (size_t) ((n + nq) * dim));
	uint64_t   *refs = malloc(sizeof(uint64_t) * (size_t) n);
	KdNeighbor *a = malloc(sizeof(KdNeighbor) * (size_t) (nq * k));
	KdNeighbor *b = malloc(sizeof(KdNeighbor) * (size_t) (nq * k));
	int32_t    *ca = malloc(sizeof(int32_t) * (size_t) nq);
	int32_t    *cb = malloc(sizeof(int32_t) * (size_t) nq);
	KdVectors	set = {n, dim, dim, pts, refs};
	KdExec		gpu,
				cpu;
	KdError		err;

	flat_generate(FLAT_LINES, n + nq, dim, 77, pts);
	for (int64_t i = 0; i < n; i++)
		refs[i] = (uint64_t) (n - i);
	test_way_exec(&gpu, 2);
	test_way_exec(&cpu, 1);
	cpu.threads = 8;
	for (int metric = 0; metric <= KD_METRIC_COSINE; metric++)
		check(flat_gpu_is_cpu(&set, (KdMetric) metric, pts + n * dim, nq, k,
							  &gpu, &cpu, a, b, ca, cb, &err),
			  "large flat gpu == cpu n=%lld nq=%lld d=%d k=%d %s %s",
			  (long long) n, (long long) nq, dim, k,
			  kde_metric_name((KdMetric) metric), err.message);
	/* radius at each query's 10th neighbour's distance, GPU against CPU */
	for (int metric = 0; metric <= KD_METRIC_COSINE; metric++)
	{
		double	   *radii = malloc(sizeof(double) * (size_t) nq);
		KdRangeResult ra,
					rb;

		if (kde_flat_knn_cpu(&set, (KdMetric) metric, pts + n * dim, nq, k, NULL, b, cb, &cpu, &err) != KD_OK)
		{
			free(radii);
			continue;
		}
		for (int64_t q = 0; q < nq; q++)
			radii[q] = b[q * k + k - 1].d2;
		check(kde_flat_radius(&set, (KdMetric) metric, pts + n * dim, nq, radii, nq, &ra, &gpu, &err) == KD_OK &&
			  gpu.used_gpu &&
			  kde_flat_radius_cpu(&set, (KdMetric) metric, pts + n * dim, nq, radii, nq, &rb, &cpu, &err) == KD_OK &&
			  memcmp(ra.offsets, rb.offsets, sizeof(int64_t) * (size_t) (nq + 1)) == 0 &&
			  memcmp(ra.hits, rb.hits, sizeof(KdNeighbor) * (size_t) ra.offsets[nq]) == 0 &&
			  ra.offsets[nq] >= nq * k,
			  "large flat radius gpu == cpu n=%lld nq=%lld d=%d %s %s",
			  (long long) n, (long long) nq, dim,
			  kde_metric_name((KdMetric) metric), err.message);
		kde_range_result_free(&ra);
		kde_range_result_free(&rb);
		free(radii);
	}
	free(pts);
	free(refs);
	free(a);
	free(b);
	free(ca);
	free(cb);
}

/*
 * A CPU kNN batch large enough to try the vantage-point tree
 * (kd_flat.c's flat_tree_knn): every query's answer equals the oracle's
 * under L2, L1 and L-infinity, on one thread and two, with and without
 * skips; the note names the tree where tree is 1, the flat loop where it
 * is 0 (either where -1: small integers tie too much for some metrics).
 */
static void
flat_tree_case(FlatKind kind, int dim, int tree)
{
	int64_t		n = 5000,
				nq = 300;
	int			k = 10;
	double	   *pts = malloc(sizeof(double) * (size_t) ((n + nq) * dim));
	uint64_t   *refs = malloc(sizeof(uint64_t) * (size_t) n);
	uint64_t   *skip = malloc(sizeof(uint64_t) * (size_t) nq);
	KdNeighbor *got = malloc(sizeof(KdNeighbor) * (size_t) (nq * k));
	KdNeighbor	want[10];
	int32_t    *count = malloc(sizeof(int32_t) * (size_t) nq);
	KdVectors	set = {n, dim, dim, pts, refs};

	flat_generate(kind, n + nq, dim, 90 + (uint64_t) dim, pts);
	for (int64_t i = 0; i < n; i++)
		refs[i] = (uint64_t) ((i * 7919) % n) ^ 0x3cULL;
	/* every third query is one of the vectors, which it skips */
	for (int64_t q = 0; q < nq; q++)
	{
		skip[q] = UINT64_MAX;
		if (q % 3 == 0)
		{
			memcpy(pts + (n + q) * dim, pts + ((q * 13) % n) * dim, sizeof(double) * (size_t) dim);
			skip[q] = refs[(q * 13) % n];
		}
	}
	for (int metric = 0; metric < KD_METRIC_COSINE; metric++)
		for (int way = 0; way < 2; way++)
		{
			KdExec		exec;
			KdError		err;
			bool		skipping = (metric + way) % 2 == 0;
			bool		ok;

			test_way_exec(&exec, way);
			ok = kde_flat_knn_cpu(&set, (KdMetric) metric, pts + n * dim, nq, k,
								  skipping ? skip : NULL, got, count, &exec,
								  &err) == KD_OK;
			for (int64_t q = 0; q < nq && ok; q++)
			{
				int			cnt = oracle_flat(pts, dim, refs, n, dim, (KdMetric) metric,
											  pts + (n + q) * dim, k,
											  skipping ? skip[q] : UINT64_MAX, want);

				ok = count[q] == cnt &&
					memcmp(got + q * k, want, sizeof(KdNeighbor) * (size_t) cnt) == 0;
			}
			check(ok, "flat tree batch %s d=%d %s %s%s equals the oracle",
				  flat_kinds[kind], dim, kde_metric_name((KdMetric) metric),
				  test_ways[way], skipping ? " skipping" : "");
			check(tree < 0 || (strstr(exec.note, "vantage-point tree") != NULL) == (tree == 1),
				  "flat tree batch %s d=%d %s %s: %s", flat_kinds[kind], dim,
				  kde_metric_name((KdMetric) metric), test_ways[way], exec.note);
		}
	free(pts);
	free(refs);
	free(skip);
	free(got);
	free(count);
}

/*
 * One set through the GPU's matrix-form filter (cuda/flat_filter.cu): the
 * answers equal the CPU's bit for bit, and the filter decided every query
 * (decides_all) or left at least one to the exact tiles.
 */
static void
flat_filter_set(const char *what, const double *pts, int64_t n,
				const double *qs, int64_t nq, int dim, int k,
				bool decides_all)
{
	uint64_t   *refs = malloc(sizeof(uint64_t) * (size_t) n);
	KdNeighbor *a = malloc(sizeof(KdNeighbor) * (size_t) (nq * k));
	KdNeighbor *b = malloc(sizeof(KdNeighbor) * (size_t) (nq * k));
	int32_t    *ca = malloc(sizeof(int32_t) * (size_t) nq);
	int32_t    *cb = malloc(sizeof(int32_t) * (size_t) nq);
	KdVectors	set = {n, dim, dim, pts, refs};
	KdGpuTimes	times = {0};
	KdExec		gpu,
				cpu;
	KdError		err;

	for (int64_t i = 0; i < n; i++)
		refs[i] = (uint64_t) ((i * 104729) % n);
	test_way_exec(&gpu, 2);
	test_way_exec(&cpu, 1);
	gpu.times = &times;
	check(flat_gpu_is_cpu(&set, KD_METRIC_L2, qs, nq, k, &gpu, &cpu, a, b,
						  ca, cb, &err),
		  "flat filter %s d=%d: gpu == cpu %s", what, dim, err.message);
	check(times.flat_filtered == nq &&
		  (decides_all ? times.flat_rechecked == 0 : times.flat_rechecked > 0),
		  "flat filter %s d=%d: %lld of %lld queries rechecked", what, dim,
		  (long long) times.flat_rechecked, (long long) times.flat_filtered);
	free(refs);
	free(a);
	free(b);
	free(ca);
	free(cb);
}

/*
 * The GPU's matrix-form filter on sets made to test its bounds: uniform
 * and far from the origin (the shift must keep their digits, so the filter
 * decides every query), and a far cluster whose vectors lie at distances
 * from its query that differ by far less than the matrix form's error (so
 * the bounds must send the query to the exact tiles).
 */
static void
flat_filter_cases(void)
{
	int			dim = 64;
	int64_t		n = 4000,
				nq = 300;
	double	   *pts = malloc(sizeof(double) * (size_t) ((n + nq) * dim));
	Rng			rng = {12345};

	flat_generate(FLAT_UNIFORM, n + nq, dim, 31, pts);
	flat_filter_set("uniform", pts, n, pts + n * dim, nq, dim, 10, true);
	flat_generate(FLAT_OFFSET, n + nq, dim, 32, pts);
	flat_filter_set("offset", pts, n, pts + n * dim, nq, dim, 10, true);
	/* 3,700 vectors near the origin, 300 on a shell of radius 1 +- 3e-8 */
	for (int64_t i = 0; i < n; i++)
	{
		double	   *v = pts + i * dim;
		double		norm = 0.0;

		for (int j = 0; j < dim; j++)
		{
			v[j] = i < n - 300 ? rng_uniform(&rng) : rng_normal(&rng);
			norm += v[j] * v[j];
		}
		if (i >= n - 300)
			for (int j = 0; j < dim; j++)
				v[j] = (j == 0 ? 1000.0 : 0.0) +
					v[j] / sqrt(norm) * (1.0 + (double) (i - n + 300) * 1e-10);
	}
	for (int j = 0; j < dim; j++)
		pts[n * dim + j] = j == 0 ? 1000.0 : 0.0;
	flat_filter_set("near shell", pts, n, pts + n * dim, 1, dim, 10, false);
	free(pts);
}

/*
 * A GPU batch large enough to try its vantage-point tree (cuda/flat.cu),
 * on vectors near a few lines, where the tree prunes: AUTO goes through
 * the tree and says so, and every answer equals the CPU's bit for bit,
 * under L2, L1 and L-infinity; on uniform vectors in 64 dimensions, where
 * it cannot prune, the pilot tree (or the sample) sends them to the tiles.
 */
static void
flat_tree_gpu(FlatKind kind, int dim, bool through_tree)
{
	int64_t		n = KD_VP_GPU_MIN_ROWS + 1000,
				nq = KD_VP_GPU_MIN_QUERIES + 100;
	int			k = 10;
	double	   *pts = malloc(sizeof(double) * (size_t) ((n + nq) * dim));
	uint64_t   *refs = malloc(sizeof(uint64_t) * (size_t) n);
	KdNeighbor *a = malloc(sizeof(KdNeighbor) * (size_t) (nq * k));
	KdNeighbor *b = malloc(sizeof(KdNeighbor) * (size_t) (nq * k));
	int32_t    *ca = malloc(sizeof(int32_t) * (size_t) nq);
	int32_t    *cb = malloc(sizeof(int32_t) * (size_t) nq);
	KdVectors	set = {n, dim, dim, pts, refs};
	KdExec		gpu,
				cpu;
	KdError		err;

	flat_generate(kind, n + nq, dim, 41 + (uint64_t) dim, pts);
	for (int64_t i = 0; i < n; i++)
		refs[i] = (uint64_t) ((i * 104729) % n);
	for (int metric = 0; metric < KD_METRIC_COSINE; metric++)
	{
		KdGpuTimes	times = {0};

		test_way_exec(&gpu, 2);
		gpu.device = KD_DEVICE_AUTO;
		gpu.times = &times;
		test_way_exec(&cpu, 1);
		cpu.threads = 8;
		check(flat_gpu_is_cpu(&set, (KdMetric) metric, pts + n * dim, nq, k,
							  &gpu, &cpu, a, b, ca, cb, &err),
			  "flat tree gpu %s d=%d %s: gpu == cpu %s", flat_kinds[kind], dim,
			  kde_metric_name((KdMetric) metric), err.message);
		check(times.flat_piloted == 1 &&
			  (!through_tree || times.flat_sampled == KD_VP_GPU_SAMPLE) &&
			  (times.flat_tree == nq) == through_tree &&
			  (strstr(gpu.note, "through a GPU vantage-point tree") != NULL) == through_tree,
			  "flat tree gpu %s d=%d %s: %lld of %lld through the tree: %s",
			  flat_kinds[kind], dim, kde_metric_name((KdMetric) metric),
			  (long long) times.flat_tree, (long long) nq, gpu.note);
	}
	free(pts);
	free(refs);
	free(a);
	free(b);
	free(ca);
	free(cb);
}

/* Every flat kNN test; large sets only with a GPU and large. */
void
test_flat(bool have_gpu, bool large)
{
	static const int64_t sizes[] = {0, 1, 5, 70, 300};
	static const int dims[] = {1, 3, 9, 16, 65, 200};
	static const int ks[] = {1, 8, 100};

	for (int kind = 0; kind < FLAT_NKINDS; kind++)
		for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
			for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
				flat_case((FlatKind) kind, sizes[si], dims[di],
						  ks[(kind + di + si) % 3], have_gpu);
	flat_case(FLAT_INTEGERS, 1000, 64, 1024, have_gpu);
	flat_errors(have_gpu);
	flat_tree_case(FLAT_LINES, 24, 1);
	flat_tree_case(FLAT_LINES, 3, 1);
	flat_tree_case(FLAT_INTEGERS, 6, -1);
	flat_tree_case(FLAT_UNIFORM, 64, 0);
	if (have_gpu)
		flat_filter_cases();
	if (have_gpu && large)
	{
		flat_tree_gpu(FLAT_LINES, 24, true);
		flat_tree_gpu(FLAT_UNIFORM, 64, false);
		flat_large(20000, 3000, 64, 10);
		flat_large(5000, 500, 1000, 16);
	}
}
