/*
 * vector.c
 *	  float8[] vectors of any dimension under the four metrics of the flat
 *	  search: their SQL distance functions, and the kd_metric argument.
 *
 * Each distance is kde_vector_distance's (engine/kd_metric.h), the one
 * the kNN functions rank by, so ORDER BY v <+> q and kd_knn(...,
 * metric => 'l1') agree bit for bit.  A vector is a one-dimensional
 * float8[] of 1 to KD_FLAT_MAX_DIM finite coordinates; an empty one gives
 * a NULL distance, as <-> does, and cosine distance refuses a vector
 * whose squared norm is zero or overflows (it has no direction).  real[]
 * operands need no functions of their own: PostgreSQL's implicit cast to
 * float8[] converts each element exactly, so v <-> q on real[] is the
 * float8[] distance of the same values.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "utils/builtins.h"

#include "engine/kd_metric.h"
#include "point/point.h"

PG_FUNCTION_INFO_V1(kdgpu_distance);
PG_FUNCTION_INFO_V1(kdgpu_l1_distance);
PG_FUNCTION_INFO_V1(kdgpu_linf_distance);
PG_FUNCTION_INFO_V1(kdgpu_cosine_distance);

/* The KdMetric a kd_metric value names. */
KdMetric
kdg_metric_of(Datum value)
{
	char	   *label = DatumGetCString(DirectFunctionCall1(enum_out, value));

	if (strcmp(label, "l2") == 0)
		return KD_METRIC_L2;
	if (strcmp(label, "l1") == 0)
		return KD_METRIC_L1;
	if (strcmp(label, "linf") == 0)
		return KD_METRIC_LINF;
	if (strcmp(label, "cosine") == 0)
		return KD_METRIC_COSINE;
	elog(ERROR, "unknown kd_metric \"%s\"", label);
	return KD_METRIC_L2;		/* keep compiler quiet */
}

/*
 * Error unless a vector (dim coordinates at v, from where) has a cosine
 * distance: a squared norm, summed as the metric sums it, that is neither
 * zero nor infinite.
 */
void
kdg_check_cosine(const double *v, int dim, const KdWhere *where)
{
	KdError		err;

	if (kde_flat_check(v, 1, dim, dim, KD_METRIC_COSINE, "vector", &err) != KD_OK &&
		err.code == KD_ERR_ARG)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("vector in %s has %s, so its cosine distance is not defined",
						kdg_where_text(where),
						strstr(err.message, "zero") ? "a zero norm" : "a norm too large to square")));
}

/*
 * Error unless each of n query vectors (dim coordinates each, from
 * argument arg, numbered from 1 when there are several) has a cosine
 * distance.
 */
void
kdg_check_cosine_queries(const double *coords, int64 n, int dim,
						 const char *arg)
{
	for (int64 i = 0; i < n; i++)
	{
		KdWhere		where = {arg, n > 1 ? i + 1 : 0};

		kdg_check_cosine(coords + i * dim, dim, &where);
	}
}

/*
 * The distance under metric between the float8[] arguments 0 and 1, or
 * NULL when either is empty.
 */
static Datum
vector_distance(FunctionCallInfo fcinfo, KdMetric metric)
{
	KdWhere		wa = {"a", 0};
	KdWhere		wb = {"b", 0};
	ArrayType  *a;
	ArrayType  *b;
	int			da = kdg_array_view(PG_GETARG_DATUM(0), KD_FLAT_MAX_DIM, &wa, &a);
	int			db = kdg_array_view(PG_GETARG_DATUM(1), KD_FLAT_MAX_DIM, &wb, &b);

	if (da == 0 || db == 0)
		PG_RETURN_NULL();
	if (da != db)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("cannot compute the distance between points of %d and %d dimensions",
						da, db)));
	if (metric == KD_METRIC_COSINE)
	{
		kdg_check_cosine((const double *) ARR_DATA_PTR(a), da, &wa);
		kdg_check_cosine((const double *) ARR_DATA_PTR(b), db, &wb);
	}
	PG_RETURN_FLOAT8(kde_vector_distance(metric, (const double *) ARR_DATA_PTR(a),
										 (const double *) ARR_DATA_PTR(b), da));
}

/* float8[] <-> float8[]: Euclidean distance. */
Datum
kdgpu_distance(PG_FUNCTION_ARGS)
{
	return vector_distance(fcinfo, KD_METRIC_L2);
}

/* float8[] <+> float8[]: L1 (taxicab) distance. */
Datum
kdgpu_l1_distance(PG_FUNCTION_ARGS)
{
	return vector_distance(fcinfo, KD_METRIC_L1);
}

/* kd_linf_distance: the largest coordinate difference. */
Datum
kdgpu_linf_distance(PG_FUNCTION_ARGS)
{
	return vector_distance(fcinfo, KD_METRIC_LINF);
}

/* float8[] <=> float8[]: cosine distance. */
Datum
kdgpu_cosine_distance(PG_FUNCTION_ARGS)
{
	return vector_distance(fcinfo, KD_METRIC_COSINE);
}
