/*
 * kd_range.c
 *	  Radius and box queries on the CPU, and their dispatch to the GPU.
 *
 * Both are one depth-first walk (range_walk, kd_range_walk.h) over a
 * region, a ball or a box, skipping a subtree when its splitting plane or
 * its stored bounding box shows it cannot hold a hit.  Results are
 * sized by a count pass and then filled, so memory is exactly what the
 * answer needs; each query's hits are then sorted: by (d2, ref) for radius
 * queries, by ref for boxes.
 *
 * A point is within radius r when sqrt(d2) <= r with the correctly rounded
 * square root, which is what a brute-force `distance <= r` computes.  The
 * walk compares squared distances with r^2 widened by a relative slack (and a
 * few subnormals), so the cheap test never rejects a point the exact test
 * would keep.
 */
#include <stdlib.h>

#include "kd_range_walk.h"

typedef struct RangeBatch
{
	const KdTree *tree;
	const double *centers;		/* radius queries: centres ... */
	const double *radii;		/* ... and radii (nradii of them) */
	int64_t		nradii;
	const double *lows;			/* box queries: corners */
	const double *highs;
	int64_t		nq;
	KdRangeResult *res;
	bool		fill;			/* false: count pass into offsets[q + 1] */
} RangeBatch;

/* What the walk of one query of a batch writes its hits to. */
typedef struct RangeOut
{
	const KdTree *tree;
	KdNeighbor *out;			/* NULL: count only */
	int64_t		n;
} RangeOut;

/* range_walk visitor: write the hit at the next place, if writing. */
KD_INLINE void
range_out_hit(void *ctx, int64_t node, double d2)
{
	RangeOut   *o = ctx;

	if (o->out)
	{
		o->out[o->n].d2 = d2;
		o->out[o->n].ref = o->tree->refs[node];
	}
	o->n++;
}

/* One query of a batch, for a dimension count known at compile time. */
KD_INLINE int64_t
range_query(const RangeBatch *b, int64_t q, KdNeighbor *out, const int dim)
{
	RangeRegion g;
	RangeOut	o = {b->tree, out, 0};

	if (b->centers)
	{
		g.a = b->centers + q * dim;
		g.b = NULL;
		g.r = b->radii[b->nradii == 1 ? 0 : q];
		g.r2max = kde_radius_bound(g.r);
		return range_walk(b->tree, g, range_out_hit, &o, false, dim);
	}
	g.a = b->lows + q * dim;
	g.b = b->highs + q * dim;
	g.r = g.r2max = 0.0;
	return range_walk(b->tree, g, range_out_hit, &o, true, dim);
}

/* Parallel body: count or fill queries [begin, end). */
static void
range_batch_range(void *arg, int64_t begin, int64_t end)
{
	RangeBatch *b = arg;
	KdRangeResult *res = b->res;

	for (int64_t q = begin; q < end; q++)
	{
		KdNeighbor *out = b->fill ? res->hits + res->offsets[q] : NULL;
		int64_t		hits;

		switch (b->tree->dim)
		{
			case 1:
				hits = range_query(b, q, out, 1);
				break;
			case 2:
				hits = range_query(b, q, out, 2);
				break;
			case 3:
				hits = range_query(b, q, out, 3);
				break;
			case 4:
				hits = range_query(b, q, out, 4);
				break;
			default:
				hits = range_query(b, q, out, b->tree->dim);
				break;
		}
		if (b->fill)
			kde_sort_neighbors(out, hits, b->centers == NULL);
		else
			res->offsets[q + 1] = hits;
	}
}

/* Count, size and fill a batch of range queries. */
static KdStatus
range_run(RangeBatch *b, int64_t nq, KdExec *exec, KdError *err)
{
	KdStatus	st = kde_range_result_alloc(b->res, nq, err);

	b->fill = false;
	if (st == KD_OK)
		st = kde_parallel_for(exec, nq, 64, range_batch_range, b, err);
	if (st == KD_OK)
		st = kde_range_result_fill_offsets(b->res, err);
	b->fill = true;
	if (st == KD_OK)
		st = kde_parallel_for(exec, nq, 64, range_batch_range, b, err);
	if (st != KD_OK)
		kde_range_result_free(b->res);
	return st;
}

/* Reject NaN or negative radii and a radius count other than 1 or nq. */
static KdStatus
check_radii(const double *radii, int64_t nradii, int64_t nq, KdError *err)
{
	if (nradii != 1 && nradii != nq)
		return kde_set_error(err, KD_ERR_ARG, -1,
							"%lld radii given for %lld centres",
							(long long) nradii, (long long) nq);
	for (int64_t i = 0; i < nradii; i++)
		if (isnan(radii[i]) || radii[i] < 0)
			return kde_set_error(err, KD_ERR_ARG, i, "radius %lld is %s",
								(long long) i,
								isnan(radii[i]) ? "NaN" : "negative");
	return KD_OK;
}

/* Radius queries on the CPU threads of exec. */
KdStatus
kde_radius_cpu(const KdTree *tree, const double *centers, int64_t nq,
			  const double *radii, int64_t nradii, KdRangeResult *res,
			  KdExec *exec, KdError *err)
{
	RangeBatch	b = {tree, centers, radii, nradii, NULL, NULL, nq, res, false};
	KdStatus	st;

	if ((st = check_radii(radii, nradii, nq, err)) != KD_OK ||
		(st = kde_check_points(centers, nq, tree->dim, err)) != KD_OK)
		return st;
	return range_run(&b, nq, exec, err);
}

/* Box queries on the CPU threads of exec. */
KdStatus
kde_box_cpu(const KdTree *tree, const double *lows, const double *highs,
		   int64_t nq, KdRangeResult *res, KdExec *exec, KdError *err)
{
	RangeBatch	b = {tree, NULL, NULL, 0, lows, highs, nq, res, false};
	KdStatus	st;

	if ((st = kde_check_points(lows, nq, tree->dim, err)) != KD_OK ||
		(st = kde_check_points(highs, nq, tree->dim, err)) != KD_OK)
		return st;
	return range_run(&b, nq, exec, err);
}

/* GPU body of kde_radius and kde_box. */
static KdStatus
range_batch_gpu(const KdGpuTree *gtree, void *arg, KdExec *exec, KdError *err)
{
	RangeBatch *b = arg;

	if (b->centers)
		return kde_gpu_radius(gtree, b->centers, b->nq, b->radii,
							 b->nradii, b->res, exec, err);
	return kde_gpu_box(gtree, b->lows, b->highs, b->nq, b->res, exec, err);
}

/* Radius queries, on the device exec chooses. */
KdStatus
kde_radius(const KdTree *tree, const double *centers, int64_t nq,
		  const double *radii, int64_t nradii, KdRangeResult *res,
		  KdExec *exec, KdError *err)
{
	RangeBatch	b = {tree, centers, radii, nradii, NULL, NULL, nq, res, false};
	KdStatus	st;

	if (kde_gpu_run(tree, nq, range_batch_gpu, &b, exec, err, &st))
		return st;
	return kde_radius_cpu(tree, centers, nq, radii, nradii, res, exec, err);
}

/* Box queries, on the device exec chooses. */
KdStatus
kde_box(const KdTree *tree, const double *lows, const double *highs,
	   int64_t nq, KdRangeResult *res, KdExec *exec, KdError *err)
{
	RangeBatch	b = {tree, NULL, NULL, 0, lows, highs, nq, res, false};
	KdStatus	st;

	if (kde_gpu_run(tree, nq, range_batch_gpu, &b, exec, err, &st))
		return st;
	return kde_box_cpu(tree, lows, highs, nq, res, exec, err);
}
