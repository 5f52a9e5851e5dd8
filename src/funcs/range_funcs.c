/*
 * range_funcs.c
 *	  kd_range, kd_range_join and kd_box: the rows within a radius of one or
 *	  many centres (an array, or the rows of another table), and the rows
 *	  inside a box.
 *
 * A row is within radius r of a centre when its distance (the type's <->)
 * is <= r; hits come nearest first, ties by ctid (or partition and ctid, or
 * key: table.c), and are ranked from 1.  A box holds the points whose every
 * coordinate lies between the low and the high corner's, bounds included;
 * its hits come in ctid (partition and ctid, key) order.
 */
#include "postgres.h"

#include <float.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/geo_decls.h"

#include "funcs/funcs.h"


/* kd_range(rel [, col], center, radius): the rows within radius of center. */
KdRows *
kdg_range_rows(FunctionCallInfo fcinfo)
{
	KdArgs		args;
	KdTable    *t = palloc0(sizeof(KdTable));
	double	   *center;
	KdPointInfo qinfo;
	int			qdim;
	double		radius;
	Oid			qtype;

	kdg_args(fcinfo, &args, t);
	qtype = args.argtypes[args.next];
	kdg_source_check_query(&t->head, kdg_point_type(qtype), qtype, "center");
	radius = PG_GETARG_FLOAT8(args.next + 1);
	kdg_check_radius(radius, "radius", 0);
	center = kdg_query_read_any(t->head.type, PG_GETARG_DATUM(args.next), "center",
								&qinfo, &qdim);
	kdg_table_read(t);
	kdg_query_check(qdim, &qinfo, t->head.dim, "center", &t->head);
	if (t->head.metric == KD_METRIC_COSINE)
		kdg_check_cosine_queries(center, 1, qdim, "center");
	return kdg_rows_pairs(t, kdg_table_radius(t, center, 1, &radius, 1), KD_KEY_NONE, NULL);
}

/*
 * Read the radii argument of kd_range_join: one float8, or a float8[] with
 * one radius per centre.  Returns how many.
 */
static int64
kdg_radii(FunctionCallInfo fcinfo, int argno, Oid argtype, int64 nq, double **radii)
{
	ArrayType  *arr;
	int64		n;

	if (argtype == FLOAT8OID)
	{
		*radii = palloc(sizeof(double));
		**radii = PG_GETARG_FLOAT8(argno);
		kdg_check_radius(**radii, "radius", 0);
		return 1;
	}
	arr = PG_GETARG_ARRAYTYPE_P(argno);
	n = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
	if (ARR_NDIM(arr) > 1 || n != nq)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"radii\" must be a one-dimensional array with one radius per centre"),
				 errdetail("There are %lld centres and %lld radii.",
						   (long long) nq, (long long) n)));
	if (ARR_HASNULL(arr) && array_contains_nulls(arr))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"radii\" has a NULL radius")));
	*radii = (double *) ARR_DATA_PTR(arr);
	for (int64 i = 0; i < n; i++)
		kdg_check_radius((*radii)[i], "radii", i + 1);
	return n;
}

/*
 * kd_range_join(rel [, col], centers, radius | radii): the rows within a
 * radius of each centre of an array.
 */
KdRows *
kdg_range_join_rows(FunctionCallInfo fcinfo)
{
	KdArgs		args;
	KdTable    *t = palloc0(sizeof(KdTable));
	double	   *centers;
	KdPointInfo *qinfos;
	int			qdim;
	double	   *radii;
	int64		nq;
	int64		nradii;
	Oid			qtype;

	kdg_args(fcinfo, &args, t);
	qtype = args.argtypes[args.next];
	kdg_source_check_query(&t->head, kdg_array_point_type(qtype),
						  qtype, "centers");
	nq = kdg_array_points(t->head.type, PG_GETARG_DATUM(args.next), &centers, &qdim, &qinfos,
						  "centers");
	nradii = kdg_radii(fcinfo, args.next + 1, args.argtypes[args.next + 1], nq, &radii);
	kdg_table_read(t);
	kdg_array_check(nq, qdim, qinfos, t->head.dim, "centers", &t->head);
	if (t->head.metric == KD_METRIC_COSINE)
		kdg_check_cosine_queries(centers, nq, qdim, "centers");
	return kdg_rows_pairs(t, kdg_table_radius(t, centers, nq, radii, nradii), KD_KEY_ORD, NULL);
}

/*
 * kd_range_join(rel [, col], query_rel [, query_col], radius [, key_col,
 * query_key_col]): the rows of rel within radius of each row of query_rel.
 * There is no _parts form: a partitioned rel is refused when opened.
 */
KdRows *
kdg_range_join_table_rows(FunctionCallInfo fcinfo)
{
	KdArgs		args;
	KdTable    *t = palloc0(sizeof(KdTable));
	KdTable    *qt;
	double		radius;
	double	   *queries;

	kdg_args(fcinfo, &args, t);
	qt = kdg_query_table(fcinfo, &args, t);
	radius = PG_GETARG_FLOAT8(kdg_argno(&args, "radius"));
	kdg_check_radius(radius, "radius", 0);
	kdg_table_read(t);
	kdg_table_read_all(qt);
	kdg_source_check_dims(&t->head, &qt->head);
	queries = kdg_table_queries(qt);
	if (t->head.metric == KD_METRIC_COSINE)
		kdg_check_cosine_queries(queries, qt->head.n, qt->head.dim, "query_rel");
	return kdg_rows_pairs(t, kdg_table_radius(t, queries, qt->head.n, &radius, 1),
						  KD_KEY_ROW, qt);
}

/*
 * The box of a geometry region (kd_box(rel [, col], region)) into low and
 * high: the exact x and y bounds of its coordinates, every other dimension
 * of the column's points unbounded, as PostGIS's && bounds a point (&&
 * compares boxes rounded outward to float4, so it may also take a point
 * within that rounding outside them).  A region of SRID 0 (a box2d,
 * ST_MakeEnvelope without an SRID) fits any column; an empty one is an
 * error.
 */
static void
region_box(Datum region, const KdTable *t, double *low, double *high)
{
	double		coords[KD_MAX_DIM + 2];
	KdPointInfo info;
	int			dim;

	if (kdg_datum_classify(KD_TYPE_GEOMETRY, region, coords, &info, &dim) == KD_VALUE_EMPTY ||
		!kdg_postgis_exact_box(region, low, high))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("region of kd_box is empty")));
	if (info.srid != 0 && t->head.n > 0 && info.srid != t->head.info.srid)
		kdg_srid_mismatch(t->head.fname, &t->head.info, &info);
	for (int j = 2; j < t->head.dim; j++)
	{
		low[j] = -DBL_MAX;
		high[j] = DBL_MAX;
	}
}

/*
 * kd_box(rel [, col], low, high), kd_box(rel [, col], box) and, for
 * geometry, kd_box(rel [, col], region): the rows inside a box, bounds
 * included, in ctid order.
 */
KdRows *
kdg_box_rows(FunctionCallInfo fcinfo)
{
	KdArgs		args;
	KdTable    *t = palloc0(sizeof(KdTable));
	double		low[KD_MAX_DIM];
	double		high[KD_MAX_DIM];
	KdPointInfo lowinfo;
	KdPointInfo highinfo;
	int			lowdim;
	int			highdim;
	Oid			qtype;
	bool		isbox;
	bool		isregion;

	kdg_args(fcinfo, &args, t);
	qtype = args.argtypes[args.next];
	isbox = qtype == BOXOID;
	/* one geometry where the corners' form has two */
	isregion = kdg_point_type(qtype) == KD_TYPE_GEOMETRY &&
		(args.next + 1 == args.nargs || args.argtypes[args.next + 1] != qtype);
	kdg_source_check_query(&t->head, isbox ? KD_TYPE_POINT : kdg_point_type(qtype),
						  qtype, isbox ? "box" : isregion ? "region" : "low");
	if (t->head.type == KD_TYPE_GEOGRAPHY)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("kd_box does not take geography columns"),
				 errhint("Use kd_range with a radius in metres, or a geometry column.")));
	if (isbox)
	{
		BOX		   *box = PG_GETARG_BOX_P(args.next);

		kdg_query_read(KD_TYPE_POINT, PointPGetDatum(&box->low), low, "box", &lowinfo);
		kdg_query_read(KD_TYPE_POINT, PointPGetDatum(&box->high), high, "box", &highinfo);
	}
	else if (!isregion)
	{
		lowdim = kdg_query_read(t->head.type, PG_GETARG_DATUM(args.next), low, "low", &lowinfo);
		highdim = kdg_query_read(t->head.type, PG_GETARG_DATUM(args.next + 1), high, "high",
								 &highinfo);
	}
	kdg_table_read(t);
	if (isregion)
		region_box(PG_GETARG_DATUM(args.next), t, low, high);
	else if (!isbox)
	{
		kdg_query_check(lowdim, &lowinfo, t->head.dim, "low", &t->head);
		kdg_query_check(highdim, &highinfo, t->head.dim, "high", &t->head);
		/* a table without points checks no dimension: the corners must agree */
		if (lowdim != highdim)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("corner \"low\" has dimension %d, corner \"high\" has dimension %d",
							lowdim, highdim)));
	}
	kdg_check_corners(low, high, t->head.dim);
	return kdg_rows_pairs(t, kdg_table_box(t, low, high, 1), KD_KEY_NONE, NULL);
}
