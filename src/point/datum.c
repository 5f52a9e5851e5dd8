/*
 * datum.c
 *	  Reading point, float8[] and real[] values into coordinates, the
 *	  distance of each type, and the checks of scalar arguments.
 *
 * A point is the built-in point (two coordinates) or a one-dimensional
 * float8[] of 1..KD_MAX_DIM elements; a vector, read where the kNN
 * functions search flat (local/flat_search.c), is a float8[] of up to
 * KD_FLAT_MAX_DIM.  A real[] (float4[]) is read as the float8[] of its
 * values: each element converts to float8 exactly, so its answers and
 * distances are those of the same values stored as float8[]; the readers
 * take the element type from the array itself.  An empty array is an
 * empty point: a stored one is skipped like NULL.  NaN and infinite
 * coordinates, NULL elements, multi-dimensional arrays and arrays longer
 * than the limit are errors that name where the value came from: a table
 * row (by ctid) or an argument (and the position in an array argument).
 *
 * PostGIS geometry and geography points are read by postgis.c; their
 * SRID and Z/M flags come back in a KdPointInfo, and every point of a
 * column, and every query point, must agree with the column's first.
 *
 * The distances are those of the SQL operators the results stand in for:
 * point <-> point is pg_hypot(dx, dy); float8[] <-> float8[] (kd_distance,
 * vector.c) is the square root of the sum of squared differences taken in
 * dimension order without fused multiply-add, bit for bit the engine's
 * sqrt(d2), which is also PostGIS's distance of two geometry points
 * (ST_Distance in 2-D, ST_3DDistance in 3-D); geography uses PostGIS's
 * sphere distance (postgis.c).
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/geo_decls.h"
#include "utils/lsyscache.h"

#include "point/point.h"


/*
 * Which point type typid is (looking through domains), or KD_TYPE_NONE;
 * float8[] and real[] are both KD_TYPE_ARRAY.
 */
KdPointType
kdg_point_type(Oid typid)
{
	Oid			base = getBaseType(typid);

	if (base == POINTOID)
		return KD_TYPE_POINT;
	if (base == FLOAT8ARRAYOID || base == FLOAT4ARRAYOID)
		return KD_TYPE_ARRAY;
	return kdg_postgis_type(base);
}

/*
 * The point type of the query points an array argument holds: float8[] or
 * real[] (one point per row of a 2-D array), or an array of a point type.
 */
KdPointType
kdg_array_point_type(Oid arraytype)
{
	Oid			elem;

	if (kdg_point_type(arraytype) == KD_TYPE_ARRAY)
		return KD_TYPE_ARRAY;
	elem = get_element_type(getBaseType(arraytype));
	return OidIsValid(elem) ? kdg_point_type(elem) : KD_TYPE_NONE;
}

/* The SQL name of a point type, for messages. */
const char *
kdg_point_type_name(KdPointType type)
{
	switch (type)
	{
		case KD_TYPE_POINT:
			return "point";
		case KD_TYPE_GEOMETRY:
		case KD_TYPE_GEOMETRY_2D:
			return "geometry";
		case KD_TYPE_GEOGRAPHY:
			return "geography";
		default:
			return "float8[]";
	}
}

/* The SQL name of an array of coordinates, for messages. */
static const char *
kdg_array_type_name(ArrayType *a)
{
	return ARR_ELEMTYPE(a) == FLOAT4OID ? "real[]" : "float8[]";
}

/*
 * Copy the first n elements of a float8[] or real[] array with no NULLs
 * into coords, each real converted to float8 (exactly).
 */
static void
kdg_array_coords(ArrayType *a, double *coords, int64 n)
{
	const float4 *f;

	if (ARR_ELEMTYPE(a) != FLOAT4OID)
	{
		memcpy(coords, ARR_DATA_PTR(a), sizeof(double) * n);
		return;
	}
	f = (const float4 *) ARR_DATA_PTR(a);
	for (int64 i = 0; i < n; i++)
		coords[i] = (double) f[i];
}

/*
 * A palloc'd float8[] of the shape and values of a (a real[] with no
 * NULLs, of n elements).
 */
static ArrayType *
kdg_array_to_float8(ArrayType *a, int64 n)
{
	int			ndim = ARR_NDIM(a);
	Size		size = ARR_OVERHEAD_NONULLS(ndim) + sizeof(double) * n;
	ArrayType  *r = palloc_extended(size, MCXT_ALLOC_HUGE);

	SET_VARSIZE(r, size);
	r->ndim = ndim;
	r->dataoffset = 0;
	r->elemtype = FLOAT8OID;
	memcpy(ARR_DIMS(r), ARR_DIMS(a), sizeof(int) * ndim);
	memcpy(ARR_LBOUND(r), ARR_LBOUND(a), sizeof(int) * ndim);
	kdg_array_coords(a, (double *) ARR_DATA_PTR(r), n);
	return r;
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
 * Read one point value into coords (room for KD_MAX_DIM) and return its
 * dimension, the number of engine coordinates; 0 means an empty point.
 * Types with extra coordinates write them after the engine's.
 */
int
kdg_datum_coords(KdPointType type, Datum value, double *coords,
				const KdWhere *where)
{
	KdPointInfo info;

	return kdg_datum_read(type, value, coords, where, &info);
}

/* kdg_datum_coords, also returning the value's SRID and Z/M flags. */
int
kdg_datum_read(KdPointType type, Datum value, double *coords,
			  const KdWhere *where, KdPointInfo *info)
{
	ArrayType  *arr;
	int			dim;

	memset(info, 0, sizeof(*info));
	if (kdg_type_is_postgis(type))
	{
		dim = kdg_postgis_coords(type, value, coords, info, where);
		/* stored geography must be on the sphere kdgpu knows */
		if (dim > 0 && type == KD_TYPE_GEOGRAPHY && where->arg == NULL)
			kdg_check_geography_srid(info->srid, where);
		kdg_check_finite(coords, dim + (dim > 0 ? kdg_type_extra(type) : 0), where);
		return dim;
	}
	if (type == KD_TYPE_POINT)
	{
		Point	   *p = DatumGetPointP(value);

		coords[0] = p->x;
		coords[1] = p->y;
		kdg_check_finite(coords, 2, where);
		return 2;
	}

	dim = kdg_array_view(value, KD_MAX_DIM, where, &arr);
	if (dim > 0)
		memcpy(coords, ARR_DATA_PTR(arr), sizeof(double) * dim);
	if ((Pointer) arr != DatumGetPointer(value))
		pfree(arr);
	return dim;
}

/*
 * Check a float8[] or real[] value of at most maxdim coordinates and
 * return their number (0: an empty array), with *arr a float8[] whose data
 * are the coordinates: the detoasted value, or a real[]'s converted copy
 * (pfree it when it is not value's own).
 */
int
kdg_array_view(Datum value, int maxdim, const KdWhere *where, ArrayType **arr)
{
	ArrayType  *a = DatumGetArrayTypeP(value);
	int			dim;

	*arr = a;
	if (ARR_NDIM(a) == 0)
		return 0;
	if (ARR_NDIM(a) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s point in %s has %d array dimensions",
						kdg_array_type_name(a), kdg_where_text(where), ARR_NDIM(a)),
				 errhint("A point is a one-dimensional array of 1 to %d coordinates.",
						 maxdim)));
	dim = ARR_DIMS(a)[0];
	if (dim > maxdim)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s point in %s has %d coordinates, more than the limit of %d",
						kdg_array_type_name(a), kdg_where_text(where), dim, maxdim)));
	if (ARR_HASNULL(a) && array_contains_nulls(a))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s point in %s has a NULL coordinate",
						kdg_array_type_name(a), kdg_where_text(where))));
	if (ARR_ELEMTYPE(a) == FLOAT4OID)
	{
		*arr = kdg_array_to_float8(a, dim);
		if ((Pointer) a != DatumGetPointer(value))
			pfree(a);
	}
	kdg_check_finite((const double *) ARR_DATA_PTR(*arr), dim, where);
	return dim;
}

/*
 * Read a stored value as an index does: like kdg_datum_read, but returning
 * the kind of a value the tree cannot hold instead of raising an error.
 * For KD_VALUE_POINT and KD_VALUE_NONFINITE, coords and *dim hold the
 * point (with the type's extra coordinates).
 */
KdValueKind
kdg_datum_classify(KdPointType type, Datum value, double *coords,
				   KdPointInfo *info, int *dim)
{
	ArrayType  *arr;
	KdValueKind kind = KD_VALUE_POINT;

	memset(info, 0, sizeof(*info));
	*dim = 0;
	if (kdg_type_is_postgis(type))
		return kdg_postgis_classify(type, value, coords, info, dim);
	if (type == KD_TYPE_POINT)
	{
		Point	   *p = DatumGetPointP(value);

		coords[0] = p->x;
		coords[1] = p->y;
		*dim = 2;
		return isfinite(p->x) && isfinite(p->y) ? KD_VALUE_POINT
			: KD_VALUE_NONFINITE;
	}
	arr = DatumGetArrayTypeP(value);
	if (ARR_NDIM(arr) == 0)
		kind = KD_VALUE_EMPTY;
	else if (ARR_NDIM(arr) != 1 || ARR_DIMS(arr)[0] > KD_MAX_DIM ||
			 (ARR_HASNULL(arr) && array_contains_nulls(arr)))
		kind = KD_VALUE_OTHER;
	else
	{
		*dim = ARR_DIMS(arr)[0];
		kdg_array_coords(arr, coords, *dim);
		for (int i = 0; i < *dim; i++)
			if (!isfinite(coords[i]))
				kind = KD_VALUE_NONFINITE;
	}
	if ((Pointer) arr != DatumGetPointer(value))
		pfree(arr);
	return kind;
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
 * Error unless a query point's SRID and Z/M flags agree with the points of
 * the column src has read (when it has read one).
 */
void
kdg_check_query_info(const KdSource *src, const KdPointInfo *info,
					 const KdWhere *where)
{
	if (src == NULL || !kdg_type_is_postgis(src->type) || src->n == 0)
		return;
	if (info->srid != src->info.srid)
		kdg_srid_mismatch(src->fname, &src->info, info);
	if (src->type == KD_TYPE_GEOMETRY && info->zm != src->info.zm)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query point in %s is %s, the points of column \"%s\" are %s",
						kdg_where_text(where), kdg_zm_name(info->zm),
						src->colname, kdg_zm_name(src->info.zm)),
				 errhint("Give the query point the same coordinates, e.g. with ST_Force3DZ or ST_Force3DM.")));
}

/*
 * Read a query point argument into coords (its full coordinates) and *info,
 * and return its dimension; an empty point is an error.  The point is
 * checked against the column later, by kdg_query_check.
 */
int
kdg_query_read(KdPointType type, Datum value, double *coords, const char *arg,
			   KdPointInfo *info)
{
	KdWhere		where = {arg, 0};
	int			got = kdg_datum_read(type, value, coords, &where, info);

	kdg_check_dim(got, 0, &where);
	return got;
}

/*
 * kdg_query_read into a palloc'd array of *dim coordinates, where a
 * float8[] may have up to KD_FLAT_MAX_DIM (a vector the kNN functions
 * search flat).
 */
double *
kdg_query_read_any(KdPointType type, Datum value, const char *arg,
				   KdPointInfo *info, int *dim)
{
	KdWhere		where = {arg, 0};
	ArrayType  *arr;
	double	   *coords;

	if (type != KD_TYPE_ARRAY)
	{
		coords = palloc(sizeof(double) * KD_MAX_DIM);
		*dim = kdg_query_read(type, value, coords, arg, info);
		return coords;
	}
	memset(info, 0, sizeof(*info));
	*dim = kdg_array_view(value, KD_FLAT_MAX_DIM, &where, &arr);
	kdg_check_dim(*dim, 0, &where);
	coords = palloc(sizeof(double) * *dim);
	memcpy(coords, ARR_DATA_PTR(arr), sizeof(double) * *dim);
	return coords;
}

/*
 * Error unless a query point read by kdg_query_read (dimension got) fits
 * the column: its dimension dim (0 when the column holds no points) and,
 * when src is given, the SRID and Z/M flags of the points src has read.
 */
void
kdg_query_check(int got, const KdPointInfo *info, int dim, const char *arg,
				const KdSource *src)
{
	KdWhere		where = {arg, 0};

	kdg_check_dim(got, dim, &where);
	kdg_check_query_info(src, info, &where);
}

/*
 * Read an array of query points: point[], geometry[] or geography[] (one
 * point per element) or a two-dimensional float8[] or real[] (one point,
 * or vector of up to KD_FLAT_MAX_DIM coordinates, per row).
 * Every point must have the first one's dimension.  Returns the number of
 * points, sets *coords to a palloc'd array of their full coordinates (dim
 * + extra per point), *dim to their dimension and, for PostGIS types,
 * *infos to each point's SRID and flags (else NULL); kdg_array_check
 * checks them against the column later.
 */
int64
kdg_array_points(KdPointType type, Datum array, double **coords, int *dim,
				 KdPointInfo **infos, const char *arg)
{
	ArrayType  *arr = DatumGetArrayTypeP(array);
	int64		nq;
	KdWhere		where = {arg, 0};

	*coords = NULL;
	*infos = NULL;
	*dim = 0;
	if (ARR_NDIM(arr) == 0)
		return 0;

	if (type != KD_TYPE_ARRAY)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			nelems;
		int16		typlen;
		bool		typbyval;
		char		typalign;
		int			full;

		if (ARR_NDIM(arr) != 1)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("argument \"%s\" must be a one-dimensional array of points",
							arg)));
		get_typlenbyvalalign(ARR_ELEMTYPE(arr), &typlen, &typbyval, &typalign);
		deconstruct_array(arr, ARR_ELEMTYPE(arr), typlen, typbyval, typalign,
						  &elems, &nulls, &nelems);
		nq = nelems;
		full = (type == KD_TYPE_POINT ? 2 : KD_MAX_DIM);
		*coords = palloc_extended(sizeof(double) * full * Max(nq, 1), MCXT_ALLOC_HUGE);
		if (kdg_type_is_postgis(type))
			*infos = palloc_extended(sizeof(KdPointInfo) * Max(nq, 1), MCXT_ALLOC_HUGE);
		for (int64 i = 0; i < nq; i++)
		{
			double		c[KD_MAX_DIM];
			KdPointInfo info;
			int			got;

			where.ord = i + 1;
			if (nulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("query point in %s is NULL", kdg_where_text(&where)),
						 errhint("Remove NULLs with array_remove(%s, NULL).", arg)));
			got = kdg_datum_read(type, elems[i], c, &where, &info);
			kdg_check_dim(got, i > 0 ? *dim : 0, &where);
			if (i == 0)
			{
				*dim = got;
				full = got + kdg_type_extra(type);
			}
			if (*infos)
				(*infos)[i] = info;
			memcpy(*coords + full * i, c, sizeof(double) * full);
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
	kdg_check_dim(ARR_DIMS(arr)[1], 0, &where);
	if (ARR_DIMS(arr)[1] > KD_FLAT_MAX_DIM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("query points in argument \"%s\" have %d coordinates, more than the limit of %d",
						arg, ARR_DIMS(arr)[1], KD_FLAT_MAX_DIM)));
	if (ARR_HASNULL(arr) && array_contains_nulls(arr))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" has a NULL coordinate", arg)));
	*dim = ARR_DIMS(arr)[1];
	*coords = palloc_extended(sizeof(double) * *dim * nq, MCXT_ALLOC_HUGE);
	kdg_array_coords(arr, *coords, (int64) *dim * nq);
	for (int64 i = 0; i < nq; i++)
	{
		where.ord = i + 1;
		kdg_check_finite(*coords + i * *dim, *dim, &where);
	}
	return nq;
}

/*
 * Error unless the nq query points read by kdg_array_points (dimension
 * got, infos) fit the column: its dimension dim (0 when the column holds
 * no points) and the SRID and Z/M flags of the points src has read.
 */
void
kdg_array_check(int64 nq, int got, const KdPointInfo *infos, int dim,
				const char *arg, const KdSource *src)
{
	KdWhere		where = {arg, 0};

	if (nq == 0)
		return;
	where.ord = 1;
	kdg_check_dim(got, dim, &where);
	for (int64 i = 0; infos && i < nq; i++)
	{
		where.ord = i + 1;
		kdg_check_query_info(src, &infos[i], &where);
	}
}

/*
 * The distance between a query point a and a column's point b (full
 * coordinates) in the metric of the type's <-> operator, computed as
 * `b <-> a` computes it (geography's is not symmetric to the last bit).
 */
double
kdg_metric(KdPointType type, const double *a, const double *b, int dim)
{
	double		d2 = 0.0;

	if (type == KD_TYPE_POINT)
		return pg_hypot(a[0] - b[0], a[1] - b[1]);
	if (type == KD_TYPE_GEOGRAPHY)
		return kdg_geography_distance(b, a);
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
