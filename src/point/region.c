/*
 * region.c
 *	  The query regions of kdgpu's own range operators: kd_ball (a center and
 *	  a radius) and kd_rect (low and high corners), and the operators
 *	  `p <@ kd_ball` and `p <@ kd_rect` that the kdgpu index answers.
 *
 * Both are composite types of float8[] fields (kdgpu--0.1.sql), so they read
 * and print like any row.  A point is inside a ball when its distance to the
 * center, in the metric of the column type's <-> operator (pg_hypot for
 * point, sqrt of the sum of squares for float8[]), is <= the radius: the
 * same test `p <-> center <= radius` would make, bit for bit.  A point is
 * inside a rect when low <= p <= high in every dimension, bounds included.
 *
 * kd_ball() and kd_rect() make the rows in C (kdgpu--0.3--0.4.sql): as
 * SQL functions, `SELECT ROW(center, radius)::kd_ball`, each query that
 * called one paid for inlining it, parsing its body again while planning,
 * a large part of a short radius query.  They keep the SQL functions'
 * results, NULL arguments
 * included: a NULL field, or for a NULL point a center of two NULLs.
 *
 * Bad regions are errors, the same in a sequential scan and an index scan:
 * a radius that is negative or NaN, corners with low > high, and a region
 * whose dimension differs from the point's.  A NULL field makes the operator
 * NULL (and matches nothing in an index scan); an empty point is in no
 * region, and is not indexed.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/geo_decls.h"

#include "point/point.h"

PG_FUNCTION_INFO_V1(kdgpu_in_ball);
PG_FUNCTION_INFO_V1(kdgpu_in_rect);
PG_FUNCTION_INFO_V1(kdgpu_region);
PG_FUNCTION_INFO_V1(kdgpu_ball_point);

/*
 * A row of the function's result type (kd_ball or kd_rect) from two
 * fields; the blessed tuple descriptor is kept in fn_extra.
 */
static Datum
region_row(FunctionCallInfo fcinfo, Datum a, bool anull, Datum b, bool bnull)
{
	TupleDesc	desc = fcinfo->flinfo->fn_extra;
	Datum		values[2] = {a, b};
	bool		nulls[2] = {anull, bnull};

	if (desc == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "kd_ball and kd_rect must return a row type");
		desc = BlessTupleDesc(CreateTupleDescCopy(desc));
		fcinfo->flinfo->fn_extra = desc;
		MemoryContextSwitchTo(old);
	}
	return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
}

/* kd_ball(float8[], float8) and kd_rect(float8[], float8[]): the row. */
Datum
kdgpu_region(PG_FUNCTION_ARGS)
{
	return region_row(fcinfo, PG_GETARG_DATUM(0), PG_ARGISNULL(0),
					  PG_GETARG_DATUM(1), PG_ARGISNULL(1));
}

/* kd_ball(point, float8): the row, its center the point's x and y. */
Datum
kdgpu_ball_point(PG_FUNCTION_ARGS)
{
	Datum		xy[2] = {0, 0};
	bool		xynull[2] = {true, true};
	int			dims[1] = {2};
	int			lbs[1] = {1};
	ArrayType  *center;

	if (!PG_ARGISNULL(0))
	{
		Point	   *p = PG_GETARG_POINT_P(0);

		xy[0] = Float8GetDatum(p->x);
		xy[1] = Float8GetDatum(p->y);
		xynull[0] = xynull[1] = false;
	}
	center = construct_md_array(xy, xynull, 1, dims, lbs, FLOAT8OID,
								sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	return region_row(fcinfo, PointerGetDatum(center), false,
					  PG_GETARG_DATUM(1), PG_ARGISNULL(1));
}

/* Error unless low <= high in every dimension. */
void
kdg_check_corners(const double *low, const double *high, int dim)
{
	for (int i = 0; i < dim; i++)
		if (low[i] > high[i])
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("low corner exceeds high corner in dimension %d", i + 1),
					 errhint("Give the corners as low, high.")));
}

/*
 * Read field attno (a float8[] point) of a region into coords and return
 * its dimension, or -1 when it is NULL.  dim is the points' dimension
 * (0: not known).
 */
static int
region_point(HeapTupleHeader region, int attno, const char *what, int dim,
			 double *coords)
{
	bool		isnull;
	Datum		value = GetAttributeByNum(region, attno, &isnull);

	if (isnull)
		return -1;
	{
		KdPointInfo info;
		int			got = kdg_query_read(KD_TYPE_ARRAY, value, coords, what, &info);

		kdg_query_check(got, &info, dim, what, NULL);
		return got;
	}
}

/*
 * Read a kd_ball value and return its dimension, or -1 when a field is
 * NULL.  dim is the points' dimension (0: not known).
 */
int
kdg_ball_from_datum(Datum value, int dim, double *center, double *radius)
{
	HeapTupleHeader ball = DatumGetHeapTupleHeader(value);
	bool		isnull;
	Datum		r;

	dim = region_point(ball, 1, "kd_ball center", dim, center);
	if (dim < 0)
		return -1;
	r = GetAttributeByNum(ball, 2, &isnull);
	if (isnull)
		return -1;
	*radius = DatumGetFloat8(r);
	kdg_check_radius(*radius, "kd_ball radius", 0);
	return dim;
}

/*
 * Read a kd_rect value and return its dimension, or -1 when a field is
 * NULL.  dim is the points' dimension (0: not known; the corners must then
 * agree with each other).
 */
int
kdg_rect_from_datum(Datum value, int dim, double *low, double *high)
{
	HeapTupleHeader rect = DatumGetHeapTupleHeader(value);

	dim = region_point(rect, 1, "kd_rect low", dim, low);
	if (dim < 0 || region_point(rect, 2, "kd_rect high", dim, high) < 0)
		return -1;
	kdg_check_corners(low, high, dim);
	return dim;
}

/* Read the point argument of an operator; its dimension, 0 when empty. */
static int
operand_coords(FunctionCallInfo fcinfo, double *coords)
{
	KdPointType type = kdg_point_type(get_fn_expr_argtype(fcinfo->flinfo, 0));
	KdWhere		where = {"p", 0};

	return kdg_datum_coords(type, PG_GETARG_DATUM(0), coords, &where);
}

/* p <@ kd_ball: whether p lies within radius of center. */
Datum
kdgpu_in_ball(PG_FUNCTION_ARGS)
{
	KdPointType type = kdg_point_type(get_fn_expr_argtype(fcinfo->flinfo, 0));
	double		p[KD_MAX_DIM];
	double		center[KD_MAX_DIM];
	double		radius;
	int			dim = operand_coords(fcinfo, p);

	if (dim == 0)
		PG_RETURN_BOOL(false);
	if (kdg_ball_from_datum(PG_GETARG_DATUM(1), dim, center, &radius) < 0)
		PG_RETURN_NULL();
	PG_RETURN_BOOL(kdg_metric(type, p, center, dim) <= radius);
}

/* p <@ kd_rect: whether low <= p <= high in every dimension. */
Datum
kdgpu_in_rect(PG_FUNCTION_ARGS)
{
	double		p[KD_MAX_DIM];
	double		low[KD_MAX_DIM];
	double		high[KD_MAX_DIM];
	int			dim = operand_coords(fcinfo, p);

	if (dim == 0)
		PG_RETURN_BOOL(false);
	if (kdg_rect_from_datum(PG_GETARG_DATUM(1), dim, low, high) < 0)
		PG_RETURN_NULL();
	for (int i = 0; i < dim; i++)
		if (p[i] < low[i] || p[i] > high[i])
			PG_RETURN_BOOL(false);
	PG_RETURN_BOOL(true);
}
