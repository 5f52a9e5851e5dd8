/*
 * fuzz_engine.c
 *	  libFuzzer harness for the kd-tree engine: build a tree over an
 *	  arbitrary point set and run every query kind on it, each answer
 *	  compared exactly with the brute-force oracle of the engine tests
 *	  (test/engine/oracle.c) and kNN also with the engine's own brute force.
 *
 * Input layout (any byte string is a valid input):
 *	 byte 0		dimension, 1 + b % KD_MAX_DIM
 *	 byte 1		k, 1 + b % 64, or KD_MAX_K when b is 0xff
 *	 byte 2		flags: 0x01 coordinates are one signed byte each, scaled by
 *				the factor chosen by bits 0x06 (1, 1e-310 subnormal, 1e300
 *				huge, 1e-3 around 1e6 as UTM metres); 0x08 two CPU threads;
 *				0x10 All-kNN includes each point itself
 *	 rest		coordinates: one byte or eight (a raw float8, so NaN,
 *				infinities, subnormals and huge values all occur)
 *
 * Points with a NaN or infinite coordinate must be refused with
 * KD_ERR_NONFINITE, never built.  The queries are the first points, a
 * radius is the distance between two of them (and 0 and +Inf), and a box
 * spans three of them.  A mismatch aborts, so that libFuzzer (or the
 * replay driver, replay.c) records it.
 *
 * KDGPU_FUZZ_DEVICE=auto runs the work on the GPU where one is usable
 * (with KDGPU_CUDA_LIB pointing at kdgpu_cuda.so), so the same corpus
 * checks the GPU path against the same oracle.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kdtree.h"
#include "oracle.h"

#define FUZZ_MAX_POINTS 2048
#define FUZZ_MAX_ALLKNN 256		/* All-kNN's oracle is quadratic */
#define FUZZ_QUERIES 4

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Report a mismatch and abort. */
static void
fuzz_fail(const char *what, int64_t q, int64_t i)
{
	fprintf(stderr, "fuzz_engine: %s (query %lld, item %lld)\n", what,
			(long long) q, (long long) i);
	abort();
}

/* Abort unless two neighbour lists are identical. */
static void
same_hits(const char *what, int64_t q, const KdNeighbor *got, int64_t ngot,
		  const KdNeighbor *want, int64_t nwant)
{
	if (ngot != nwant)
		fuzz_fail(what, q, -1);
	for (int64_t i = 0; i < ngot; i++)
		if (memcmp(&got[i].d2, &want[i].d2, sizeof(double)) != 0 ||
			got[i].ref != want[i].ref)
			fuzz_fail(what, q, i);
}

/* The execution settings: CPU unless KDGPU_FUZZ_DEVICE=auto or gpu. */
static void
fuzz_exec(KdExec *exec, int threads)
{
	const char *dev = getenv("KDGPU_FUZZ_DEVICE");

	kde_exec_init(exec);
	exec->device = KD_DEVICE_CPU;
	exec->threads = threads;
	if (dev && strcmp(dev, "auto") == 0)
	{
		exec->device = KD_DEVICE_AUTO;
		exec->gpu_min_work = 0;
	}
	else if (dev && strcmp(dev, "gpu") == 0)
		exec->device = KD_DEVICE_GPU;
}

/* Decode the points; returns n (points and refs are malloc'd). */
static int64_t
fuzz_points(const uint8_t *data, size_t size, int dim, uint8_t flags,
			double **points, uint64_t **refs)
{
	static const double scales[4] = {1.0, 1e-310, 1e300, 1e-3};
	size_t		width = (flags & 0x01) ? 1 : sizeof(double);
	int64_t		n = (int64_t) (size / (width * (size_t) dim));

	if (n > FUZZ_MAX_POINTS)
		n = FUZZ_MAX_POINTS;
	*points = malloc(sizeof(double) * (size_t) (n * dim + 1));
	*refs = malloc(sizeof(uint64_t) * (size_t) (n + 1));
	for (int64_t i = 0; i < n * dim; i++)
	{
		if (width == 1)
		{
			int			sc = (flags >> 1) & 3;

			(*points)[i] = (int8_t) data[i] * scales[sc] + (sc == 3 ? 1e6 : 0.0);
		}
		else
			memcpy(&(*points)[i], data + i * width, sizeof(double));
	}
	/* unique references in a scrambled order (7919 is a prime above n) */
	for (int64_t i = 0; i < n; i++)
		(*refs)[i] = ((uint64_t) 1 << 40) + (uint64_t) ((i * 7919) % n);
	return n;
}

/* kNN of the first points against the oracle. */
static void
fuzz_knn(const KdTree *tree, const double *points, const uint64_t *refs,
		 int64_t n, int dim, int k, KdExec *exec)
{
	int64_t		nq = n < FUZZ_QUERIES ? n : FUZZ_QUERIES;
	KdNeighbor *out = malloc(sizeof(KdNeighbor) * (size_t) (nq * k + 1));
	KdNeighbor *want = malloc(sizeof(KdNeighbor) * (size_t) k);
	int32_t    *count = malloc(sizeof(int32_t) * (size_t) (nq + 1));
	KdError		err;

	if (kde_knn(tree, points, nq, k, out, count, exec, &err) != KD_OK)
		fuzz_fail(err.message, -1, -1);
	for (int64_t q = 0; q < nq; q++)
	{
		int			m = oracle_knn(points, refs, n, dim, points + q * dim, k, -1, want);

		same_hits("kNN differs from the oracle", q, out + q * k, count[q], want, m);
	}
	free(out);
	free(want);
	free(count);
}

/* All-kNN over the tree's points in node order. */
static void
fuzz_all_knn(const KdTree *tree, int k, bool include_self, KdExec *exec)
{
	int64_t		n = tree->n;
	KdNeighbor *out = malloc(sizeof(KdNeighbor) * (size_t) (n * k + 1));
	KdNeighbor *want = malloc(sizeof(KdNeighbor) * (size_t) k);
	int32_t    *count = malloc(sizeof(int32_t) * (size_t) (n + 1));
	KdError		err;

	if (kde_all_knn(tree, k, include_self, out, count, exec, &err) != KD_OK)
		fuzz_fail(err.message, -1, -1);
	for (int64_t i = 0; i < n; i++)
	{
		int			m = oracle_knn(tree->coords, tree->refs, n, tree->dim,
								   tree->coords + i * tree->dim, k,
								   include_self ? -1 : i, want);

		same_hits("All-kNN differs from the oracle", i, out + i * k, count[i], want, m);
	}
	free(out);
	free(want);
	free(count);
}

/* Radius queries: radius 0, +Inf and the distance between two points. */
static void
fuzz_radius(const KdTree *tree, const double *points, const uint64_t *refs,
			int64_t n, int dim, KdExec *exec)
{
	int64_t		nq = n < FUZZ_QUERIES ? n : FUZZ_QUERIES;
	double		radii[FUZZ_QUERIES];
	KdNeighbor *want = malloc(sizeof(KdNeighbor) * (size_t) n);
	KdRangeResult res;
	KdError		err;
	double		d2 = 0.0;

	for (int j = 0; j < dim && n > 1; j++)
		d2 += (points[j] - points[dim + j]) * (points[j] - points[dim + j]);
	for (int64_t q = 0; q < nq; q++)
		radii[q] = q == 0 ? 0.0 : q == 1 ? INFINITY : sqrt(d2) * (double) (q - 1);
	memset(&res, 0, sizeof(res));
	if (kde_radius(tree, points, nq, radii, nq, &res, exec, &err) != KD_OK)
		fuzz_fail(err.message, -1, -1);
	for (int64_t q = 0; q < nq; q++)
	{
		int64_t		m = oracle_radius(points, refs, n, dim, points + q * dim, radii[q], want);

		same_hits("radius differs from the oracle", q, res.hits + res.offsets[q],
				  res.offsets[q + 1] - res.offsets[q], want, m);
	}
	kde_range_result_free(&res);
	free(want);
}

/* A box spanning points 0..2 (and a degenerate box at point 0). */
static void
fuzz_box(const KdTree *tree, const double *points, const uint64_t *refs,
		 int64_t n, int dim, KdExec *exec)
{
	double		lo[2 * KD_MAX_DIM];
	double		hi[2 * KD_MAX_DIM];
	KdNeighbor *want = malloc(sizeof(KdNeighbor) * (size_t) n);
	KdRangeResult res;
	KdError		err;

	for (int j = 0; j < dim; j++)
	{
		lo[j] = hi[j] = points[j];
		for (int64_t i = 1; i < 3 && i < n; i++)
		{
			lo[j] = fmin(lo[j], points[i * dim + j]);
			hi[j] = fmax(hi[j], points[i * dim + j]);
		}
		lo[dim + j] = hi[dim + j] = points[j];
	}
	/* the two boxes as two queries: rows lo[0..dim) and lo[dim..2dim) */
	memset(&res, 0, sizeof(res));
	if (kde_box(tree, lo, hi, 2, &res, exec, &err) != KD_OK)
		fuzz_fail(err.message, -1, -1);
	for (int64_t q = 0; q < 2; q++)
	{
		int64_t		m = oracle_box(points, refs, n, dim, lo + q * dim, hi + q * dim, want);

		same_hits("box differs from the oracle", q, res.hits + res.offsets[q],
				  res.offsets[q + 1] - res.offsets[q], want, m);
	}
	kde_range_result_free(&res);
	free(want);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int			dim,
				k;
	uint8_t		flags;
	double	   *points;
	uint64_t   *refs;
	int64_t		n;
	bool		finite = true;
	KdTree		tree;
	KdExec		exec;
	KdError		err;
	KdStatus	st;

	if (size < 3)
		return 0;
	dim = 1 + data[0] % KD_MAX_DIM;
	k = data[1] == 0xff ? KD_MAX_K : 1 + data[1] % 64;
	flags = data[2];
	n = fuzz_points(data + 3, size - 3, dim, flags, &points, &refs);
	for (int64_t i = 0; i < n * dim; i++)
		finite = finite && isfinite(points[i]);
	fuzz_exec(&exec, (flags & 0x08) ? 2 : 1);

	memset(&tree, 0, sizeof(tree));
	st = kde_build(points, refs, n, dim, &tree, &exec, &err);
	if (!finite)
	{
		if (st != KD_ERR_NONFINITE)
			fuzz_fail("a non-finite point was not refused", -1, -1);
	}
	else if (st != KD_OK)
		fuzz_fail(err.message, -1, -1);
	else
	{
		if (kde_tree_check(&tree, &err) != KD_OK)
			fuzz_fail(err.message, -1, -1);
		if (n > 0)
		{
			fuzz_knn(&tree, points, refs, n, dim, k, &exec);
			fuzz_radius(&tree, points, refs, n, dim, &exec);
			fuzz_box(&tree, points, refs, n, dim, &exec);
		}
		if (n <= FUZZ_MAX_ALLKNN)
			fuzz_all_knn(&tree, k, (flags & 0x10) != 0, &exec);
		kde_gpu_release(&tree);
		kde_tree_free(&tree);
	}
	free(points);
	free(refs);
	return 0;
}
