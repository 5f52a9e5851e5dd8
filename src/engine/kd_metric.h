/*
 * kd_metric.h
 *	  The distances between vectors of any dimension that the flat search
 *	  (kd_flat.c, cuda/flat.cu) ranks by: L2, L1, L-infinity and cosine.
 *
 * A distance is summed term by term in dimension order, each term with the
 * same separate multiplies and adds on the CPU and the GPU (nvcc builds
 * with --fmad=false), so both give the same bits; the SQL operators call
 * the same helpers (kde_vector_distance), so "nearest" means what the
 * operator says.  Cosine distance is 1 - dot / (|a| |b|), the quotient
 * clamped to [-1, 1] as pgvector's (no quotient counts as -1), and is not
 * defined for a vector whose squared norm is zero or overflows, which the
 * callers refuse (kde_flat_check, shared by both sides so that they
 * refuse the same calls with the same messages).
 */
#ifndef KD_METRIC_H
#define KD_METRIC_H

#include <math.h>

#include "kd_error.h"
#include "kd_shape.h"

/* What a distance sums so far: one sum, and cosine's two norms. */
typedef struct KdMetricSum
{
	double		s;
	double		na;
	double		nb;
} KdMetricSum;

/* A sum with no terms. */
KD_SHARED KdMetricSum
kde_metric_zero(void)
{
	KdMetricSum z = {0.0, 0.0, 0.0};

	return z;
}

/*
 * Add coordinate pair (x, y)'s term to sum under metric (a KdMetric), but
 * not cosine's norms: the searches sum those once a vector
 * (kde_metric_norm2), which gives the same bits, each norm being its own
 * sum in the same order.
 */
KD_SHARED void
kde_metric_term(int metric, KdMetricSum *sum, double x, double y)
{
	double		d = x - y;

	switch (metric)
	{
		case 0:					/* KD_METRIC_L2 */
			sum->s = sum->s + d * d;
			break;
		case 1:					/* KD_METRIC_L1 */
			sum->s = sum->s + fabs(d);
			break;
		case 2:					/* KD_METRIC_LINF */
			sum->s = fmax(sum->s, fabs(d));
			break;
		default:				/* KD_METRIC_COSINE: the dot product */
			sum->s = sum->s + x * y;
			break;
	}
}

/* Add coordinate pair (x, y) to sum under metric, cosine's norms too. */
KD_SHARED void
kde_metric_add(int metric, KdMetricSum *sum, double x, double y)
{
	kde_metric_term(metric, sum, x, y);
	if (metric == 3)			/* KD_METRIC_COSINE */
	{
		sum->na = sum->na + x * x;
		sum->nb = sum->nb + y * y;
	}
}

/* The squared norm of v (dim coordinates), summed as cosine sums it. */
KD_SHARED double
kde_metric_norm2(const double *v, int dim)
{
	double		s = 0.0;

	for (int j = 0; j < dim; j++)
		s = s + v[j] * v[j];
	return s;
}

/* The distance a finished sum stands for. */
KD_SHARED double
kde_metric_finish(int metric, const KdMetricSum *sum)
{
	double		sim;

	switch (metric)
	{
		case 0:
			return sqrt(sum->s);
		case 1:
		case 2:
			return sum->s;
		default:
			sim = sum->s / (sqrt(sum->na) * sqrt(sum->nb));
			sim = sim >= 1.0 ? 1.0 : (sim > -1.0 ? sim : -1.0);
			return 1.0 - sim;
	}
}

/*
 * Whether the GPU's flat kNN under metric in dim dimensions picks its
 * candidates through the float8 matrix-form filter (cuda/flat_filter.cu)
 * before the exact distances decide: L2 from KD_FLAT_FILTER_MIN_DIM
 * dimensions, where the exact tiles' three float8 operations a term cost
 * more than the tensor cores' one and the re-rank together.
 */
#define KD_FLAT_FILTER_MIN_DIM 32

KD_SHARED int
kde_flat_filtered(int metric, int dim)
{
	return metric == 0 && dim >= KD_FLAT_FILTER_MIN_DIM;
}

/*
 * When the GPU's flat kNN goes through a vantage-point tree
 * (cuda/flat.cu): under L2, L1 or L-infinity, with KD_VP_GPU_MIN_ROWS
 * vectors and KD_VP_GPU_MIN_QUERIES queries or more, it first builds a
 * pilot tree of KD_VP_GPU_PILOT_ROWS of the rows and searches the first
 * KD_VP_GPU_PILOT_QUERIES queries through it, which costs little and
 * foretells the whole tree; where those compared at most
 * KD_VP_GPU_PILOT_SHARE of the pilot's rows, it builds the tree of all
 * the rows (leaves of KD_VP_GPU_LEAF_ROWS, a warp's width), searches the
 * first KD_VP_GPU_SAMPLE queries through it, and the rest too when those
 * compared at most the share of the rows kde_vp_gpu_pays allows.  A
 * tree's walk reads rows a leaf at a time, a row costing several times
 * what the tiles' sweep spends on it (more where the tensor-core filter
 * sweeps), so the tree must skip most rows to pay; smaller batches
 * cannot pay for its build, and a sample through the whole tree of rows
 * without structure would cost as much as a tenth of the batch.
 */
#define KD_VP_GPU_MIN_ROWS 65536
#define KD_VP_GPU_MIN_QUERIES 4096
#define KD_VP_GPU_PILOT_ROWS 32768
#define KD_VP_GPU_PILOT_QUERIES 256
#define KD_VP_GPU_PILOT_SHARE 0.25
#define KD_VP_GPU_SAMPLE 1024
#define KD_VP_GPU_LEAF_ROWS 32
#define KD_VP_GPU_SHARE_TILES 0.10
#define KD_VP_GPU_SHARE_FILTER 0.04

KD_SHARED int
kde_vp_gpu_pays(double share, int metric, int dim)
{
	return share <= (kde_flat_filtered(metric, dim) ? KD_VP_GPU_SHARE_FILTER :
					 KD_VP_GPU_SHARE_TILES);
}

/*
 * A lower bound of the distance from a query to every row of a
 * vantage-point tree node's child (kd_vptree.c), the query dq from the
 * node's vantage point: side 0 the inside child (rows within mu = mu_in),
 * 1 the outside (rows from mu = mu_out on).  Lowered by a margin past the
 * rounding (and underflow) of the three distances, and 0 where they
 * overflow, so that no row is ever nearer than its bound.  Each distance
 * is a sum of at most KD_FLAT_MAX_DIM terms of one sign, off by far less
 * than KD_VP_BOUND_REL of it whatever the order of its terms (the GPU's
 * warps add theirs in another), or, where squares underflow, by far less
 * than KD_VP_BOUND_ABS.
 */
#define KD_VP_BOUND_REL 1e-10
#define KD_VP_BOUND_ABS 1e-150

KD_SHARED double
kde_vp_bound(double dq, double mu, int side)
{
	double		b = side == 0 ? dq - mu : mu - dq;

	b -= (dq + mu) * KD_VP_BOUND_REL + KD_VP_BOUND_ABS;
	return b > 0.0 ? b : 0.0;
}

/*
 * KD_OK, or the error for a dimension out of range, a NaN or infinite
 * coordinate, or (cosine) a vector with no usable norm, among n vectors
 * of dim coordinates stride apart; what names them ("vector", "query") in
 * the message.
 */
static inline KdStatus
kde_flat_check(const double *coords, int64_t n, int dim, int64_t stride,
			   KdMetric metric, const char *what, KdError *err)
{
	if (dim < 1 || dim > KD_FLAT_MAX_DIM)
		return kde_set_error(err, KD_ERR_ARG, -1,
							 "dimension %d is out of range 1..%d", dim,
							 KD_FLAT_MAX_DIM);
	if ((unsigned) metric > KD_METRIC_COSINE)
		return kde_set_error(err, KD_ERR_ARG, -1, "unknown metric %d",
							 (int) metric);
	if (stride < dim)
		return kde_set_error(err, KD_ERR_ARG, -1,
							 "vectors %lld apart cannot hold %d coordinates",
							 (long long) stride, dim);
	for (int64_t i = 0; i < n; i++)
	{
		const double *v = coords + i * stride;
		double		norm = kde_metric_norm2(v, dim);

		for (int j = 0; j < dim; j++)
			if (!isfinite(v[j]))
				return kde_set_error(err, KD_ERR_NONFINITE, i,
									 "%s %lld has a %s coordinate", what,
									 (long long) i,
									 isnan(v[j]) ? "NaN" : "infinite");
		if (metric == KD_METRIC_COSINE && !(norm > 0.0 && isfinite(norm)))
			return kde_set_error(err, KD_ERR_ARG, i,
								 "%s %lld has %s, so its cosine distance is not defined",
								 what, (long long) i,
								 norm == 0.0 ? "a zero norm" : "a norm too large to square");
	}
	return KD_OK;
}

#endif							/* KD_METRIC_H */
