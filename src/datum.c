/*
 * datum.c
 *	  Reading point and float8[] values into coordinates, the distance of
 *	  each type, and the checks of scalar arguments.
 *
 * A point is the built-in point (two coordinates) or a one-dimensional
 * float8[] of 1..KD_MAX_DIM elements.  An empty array is an empty point: a
 * stored one is skipped like NULL.  NaN and infinite coordinates, NULL
 * elements, multi-dimensional arrays and arrays longer than KD_MAX_DIM are
 * errors that name where the value came from: a table row (by ctid) or an
 * argument (and the position in an array argument).
 *
 * The distances are those of the SQL operators the results stand in for:
 * point <-> point is pg_hypot(dx, dy); float8[] <-> float8[] (kd_distance,
 * below) is the square root of the sum of squared differences taken in
 * dimension order without fused multiply-add, bit for bit the engine's
 * sqrt(d2).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/geo_decls.h"
#include "utils/lsyscache.h"

#include "kdgpu.h"

PG_FUNCTION_INFO_V1(kdgpu_distance);

/* Which point type typid is (looking through domains), or KD_TYPE_NONE. */
KdPointType
kdg_point_type(Oid typid)
{
	Oid			base = getBaseType(typid);

	if (base == POINTOID)
		return KD_TYPE_POINT;
	if (base == FLOAT8ARRAYOID)
		return KD_TYPE_ARRAY;
	return KD_TYPE_NONE;
}

/* The SQL name of a point type, for messages. */
const char *
kdg_point_type_name(KdPointType type)
{
	return type == KD_TYPE_POINT ? "point" : "float8[]";
}

/* Describe where a value came from, for an error message. */
static char *
kdg_where_text(const KdWhere *where)
{
	if (where->arg == NULL)
		return psprintf("row (%u,%u) of table \"%s\"",
						ItemPointerGetBlockNumberNoCheck(&where->tid),
						ItemPointerGetOffsetNumberNoCheck(&where->tid),
						get_rel_name(where->relid));
	if (where->ord > 0)
		return psprintf("element %lld of argument \"%s\"",
						(long long) where->ord, where->arg);
	return psprintf("argument \"%s\"", where->arg);
}

/* Error unless every coordinate is finite. */
static void
kdg_check_finite(const double *coords, int dim, const KdWhere *where)
{
	for (int i = 0; i < dim; i++)
		if (!isfinite(coords[i]))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("%s coordinate in %s",
							isnan(coords[i]) ? "NaN" : "infinite",
							kdg_where_text(where)),
					 errhint("Points must have finite coordinates.")));
}

/*
 * Read one point or float8[] value into coords (room for KD_MAX_DIM) and
 * return its dimension; 0 means an empty array.
 */
int
kdg_datum_coords(KdPointType type, Datum value, double *coords,
				const KdWhere *where)
{
	ArrayType  *arr;
	int			dim;

	if (type == KD_TYPE_POINT)
	{
		Point	   *p = DatumGetPointP(value);

		coords[0] = p->x;
		coords[1] = p->y;
		kdg_check_finite(coords, 2, where);
		return 2;
	}

	arr = DatumGetArrayTypeP(value);
	if (ARR_NDIM(arr) == 0)
		dim = 0;
	else if (ARR_NDIM(arr) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("float8[] point in %s has %d array dimensions",
						kdg_where_text(where), ARR_NDIM(arr)),
				 errhint("A point is a one-dimensional array of 1 to %d coordinates.",
						 KD_MAX_DIM)));
	else
		dim = ARR_DIMS(arr)[0];
	if (dim > KD_MAX_DIM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("float8[] point in %s has %d coordinates, more than the limit of %d",
						kdg_where_text(where), dim, KD_MAX_DIM)));
	if (dim > 0 && ARR_HASNULL(arr) && array_contains_nulls(arr))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("float8[] point in %s has a NULL coordinate",
						kdg_where_text(where))));
	if (dim > 0)
		memcpy(coords, ARR_DATA_PTR(arr), sizeof(double) * dim);
	if ((Pointer) arr != DatumGetPointer(value))
		pfree(arr);
	kdg_check_finite(coords, dim, where);
	return dim;
}

/* Error unless a query point has the column's dimension. */
static void
kdg_check_dim(int got, int dim, const KdWhere *where)
{
	if (got == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query point in %s is empty", kdg_where_text(where))));
	if (dim > 0 && got != dim)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query point in %s has dimension %d, the column's points have dimension %d",
						kdg_where_text(where), got, dim)));
}

/*
 * Read a query point argument into coords and return its dimension; dim is
 * the column's dimension, or 0 when the column holds no points.
 */
int
kdg_query_coords(KdPointType type, Datum value, int dim, double *coords,
				const char *arg)
{
	KdWhere		where = {arg, 0};
	int			got = kdg_datum_coords(type, value, coords, &where);

	kdg_check_dim(got, dim, &where);
	return got;
}

/*
 * Read an array of query points: point[] (one point per element) or a
 * two-dimensional float8[] (one point per row).  Returns the number of
 * points and sets *coords to a palloc'd array of them.
 */
int64
kdg_array_points(KdPointType type, Datum array, int dim, double **coords,
				const char *arg)
{
	ArrayType  *arr = DatumGetArrayTypeP(array);
	int64		nq;
	KdWhere		where = {arg, 0};

	if (ARR_NDIM(arr) == 0)
	{
		*coords = NULL;
		return 0;
	}

	if (type == KD_TYPE_POINT)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			nelems;

		if (ARR_NDIM(arr) != 1)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("argument \"%s\" must be a one-dimensional array of points",
							arg)));
		deconstruct_array(arr, POINTOID, sizeof(Point), false, TYPALIGN_DOUBLE,
						  &elems, &nulls, &nelems);
		nq = nelems;
		*coords = palloc_extended(sizeof(double) * 2 * Max(nq, 1), MCXT_ALLOC_HUGE);
		for (int64 i = 0; i < nq; i++)
		{
			where.ord = i + 1;
			if (nulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("query point in %s is NULL", kdg_where_text(&where)),
						 errhint("Remove NULLs with array_remove(%s, NULL).", arg)));
			kdg_query_coords(type, elems[i], dim, *coords + 2 * i, arg);
		}
		return nq;
	}

	if (ARR_NDIM(arr) != 2)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("argument \"%s\" must be a two-dimensional float8[] array, one query point per row",
						arg),
				 errhint("Write ARRAY[[x1, y1], [x2, y2]], or use kd_knn or kd_range for one point.")));
	nq = ARR_DIMS(arr)[0];
	where.ord = 1;
	kdg_check_dim(ARR_DIMS(arr)[1], dim, &where);
	if (ARR_DIMS(arr)[1] > KD_MAX_DIM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query points in argument \"%s\" have %d coordinates, more than the limit of %d",
						arg, ARR_DIMS(arr)[1], KD_MAX_DIM)));
	if (ARR_HASNULL(arr) && array_contains_nulls(arr))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" has a NULL coordinate", arg)));
	dim = ARR_DIMS(arr)[1];
	*coords = palloc_extended(sizeof(double) * dim * nq, MCXT_ALLOC_HUGE);
	memcpy(*coords, ARR_DATA_PTR(arr), sizeof(double) * dim * nq);
	for (int64 i = 0; i < nq; i++)
	{
		where.ord = i + 1;
		kdg_check_finite(*coords + i * dim, dim, &where);
	}
	return nq;
}

/*
 * The distance between a and b in the metric of the type's <-> operator.
 */
double
kdg_metric(KdPointType type, const double *a, const double *b, int dim)
{
	double		d2 = 0.0;

	if (type == KD_TYPE_POINT)
		return pg_hypot(a[0] - b[0], a[1] - b[1]);
	for (int i = 0; i < dim; i++)
	{
		double		d = a[i] - b[i];

		d2 += d * d;
	}
	return sqrt(d2);
}

/* Error unless 1 <= k <= KD_SQL_MAX_K. */
void
kdg_check_k(int k)
{
	if (k < 1 || k > KD_SQL_MAX_K)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be between 1 and %d, not %d", KD_SQL_MAX_K, k)));
}

/* Error unless a radius is a number >= 0; ord > 0 names an array element. */
void
kdg_check_radius(double radius, const char *arg, int64 ord)
{
	if (isnan(radius) || radius < 0)
	{
		KdWhere		where = {arg, ord};

		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("radius in %s must be a number >= 0, not %s",
						kdg_where_text(&where), float8out_internal(radius))));
	}
}

/*
 * float8[] <-> float8[]: Euclidean distance; NULL when either is empty.
 */
Datum
kdgpu_distance(PG_FUNCTION_ARGS)
{
	double		a[KD_MAX_DIM];
	double		b[KD_MAX_DIM];
	KdWhere		wa = {"a", 0};
	KdWhere		wb = {"b", 0};
	int			da = kdg_datum_coords(KD_TYPE_ARRAY, PG_GETARG_DATUM(0), a, &wa);
	int			db = kdg_datum_coords(KD_TYPE_ARRAY, PG_GETARG_DATUM(1), b, &wb);

	if (da == 0 || db == 0)
		PG_RETURN_NULL();
	if (da != db)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("cannot compute the distance between points of %d and %d dimensions",
						da, db)));
	PG_RETURN_FLOAT8(kdg_metric(KD_TYPE_ARRAY, a, b, da));
}
