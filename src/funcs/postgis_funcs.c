/*
 * postgis_funcs.c
 *	  kd_dwithin(geometry, geometry, radius), kd_dwithin(geography,
 *	  geography, radius[, use_spheroid]), their planner support function,
 *	  and the `geometry <@ kd_ball` operator.
 *
 * kd_dwithin answers as ST_DWithin: for two points (either may be empty,
 * never within any radius) it computes the distance of the index's
 * operators, ST_Distance(a, b) in x and y for geometry and the sphere
 * distance in metres for geography (ST_DWithin(a, b, radius, false));
 * for any other value, and for geography with use_spheroid, it calls
 * PostGIS's own ST_DWithin.  Points of different SRIDs and negative radii
 * are errors.
 *
 * PostGIS's ST_DWithin offers index conditions only to GiST, SP-GiST and
 * BRIN; the support function of kd_dwithin offers one to a kdgpu index on
 * either argument, and to no other access method's index (their strategy
 * numbers mean other operators):
 *	kd_geometry_ops, around a constant point: `col <@ kd_ball(other,
 *	  radius)`, the index's radius search, which tests each point with the
 *	  2-D distance itself;
 *	kd_geometry_ops, around anything else (a line, a parameter):
 *	  `col && ST_Expand(other, radius)`, the box PostGIS's GiST searches;
 *	kd_geography_ops: `col && _ST_Expand(other, radius + 1 mm)`, a box on
 *	  the unit sphere holding the arc of radius metres; the millimetre
 *	  covers PostGIS's boxes of a point at longitude -180 and its twin at
 *	  +180, whose unit vectors differ in the sign of a 1e-16 component.
 *	  With the spheroid the radius is first widened by KD_SPHEROID_REL,
 *	  more than the spheroid's distance exceeds the sphere's.
 * The condition is offered as lossy, so kd_dwithin stays as the filter that
 * decides, with its errors for mixed SRIDs.
 *
 * `geom <@ kd_ball(center, radius)` is true when the point's x and y lie
 * within radius of the ball's two-coordinate center, the 2-D distance of
 * kd_geometry_ops; for a geometry that is not a point, when its box comes
 * within radius of the center.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/supportnodes.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "am/kdam.h"
#include "funcs/funcs.h"

PG_FUNCTION_INFO_V1(kdgpu_dwithin);
PG_FUNCTION_INFO_V1(kdgpu_dwithin_support);
PG_FUNCTION_INFO_V1(kdgpu_geometry_in_ball);

/* PostGIS's ST_DWithin for kd_dwithin's argument type, looked up once. */
typedef struct KdDwithinCache
{
	Oid			argtype;
	FmgrInfo	st_dwithin;
} KdDwithinCache;

/*
 * PostGIS's own ST_DWithin(a, b, radius[, use_spheroid]) for values
 * kd_dwithin does not decide itself: found in the argument type's schema,
 * as the PostGIS that made the values.
 */
static Datum
postgis_dwithin(FunctionCallInfo fcinfo, Oid argtype, bool spheroid)
{
	KdDwithinCache *cache = fcinfo->flinfo->fn_extra;
	bool		geography = kdg_point_type(argtype) == KD_TYPE_GEOGRAPHY;

	if (cache == NULL || cache->argtype != argtype)
	{
		Oid			argtypes[4] = {argtype, argtype, FLOAT8OID, BOOLOID};
		Oid			fn = kdg_function_oid_args(kdg_type_namespace(argtype),
											   "st_dwithin", geography ? 4 : 3,
											   argtypes);

		if (!OidIsValid(fn))
			elog(ERROR, "PostGIS's st_dwithin for type %s was not found",
				 format_type_be(argtype));
		cache = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(KdDwithinCache));
		cache->argtype = argtype;
		fmgr_info_cxt(fn, &cache->st_dwithin, fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = cache;
	}
	if (geography)
		return FunctionCall4Coll(&cache->st_dwithin, InvalidOid,
								 PG_GETARG_DATUM(0), PG_GETARG_DATUM(1),
								 PG_GETARG_DATUM(2), BoolGetDatum(spheroid));
	return FunctionCall3Coll(&cache->st_dwithin, InvalidOid,
							 PG_GETARG_DATUM(0), PG_GETARG_DATUM(1),
							 PG_GETARG_DATUM(2));
}

/*
 * kd_dwithin(a, b, radius[, use_spheroid]) for geometry and geography.
 * Two points (either may be empty) are decided here, by the distance of the
 * index's operators; every other value, and the spheroid, by PostGIS's
 * ST_DWithin, so that kd_dwithin answers wherever ST_DWithin does.
 */
Datum
kdgpu_dwithin(PG_FUNCTION_ARGS)
{
	Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, 0);
	KdPointType type = kdg_point_type(argtype);
	double		a[KD_MAX_DIM + 2];
	double		b[KD_MAX_DIM + 2];
	KdWhere		wa = {"a", 0};
	KdWhere		wb = {"b", 0};
	KdPointInfo ia,
				ib;
	double		radius = PG_GETARG_FLOAT8(2);
	bool		spheroid = PG_NARGS() > 3 && PG_GETARG_BOOL(3);
	KdValueKind ka,
				kb;
	int			da,
				db;

	if (!kdg_type_is_postgis(type))
		elog(ERROR, "kd_dwithin called on type %s", format_type_be(argtype));
	kdg_check_radius(radius, "radius", 0);
	ka = kdg_datum_classify(type, PG_GETARG_DATUM(0), a, &ia, &da);
	kb = kdg_datum_classify(type, PG_GETARG_DATUM(1), b, &ib, &db);
	if (spheroid ||
		ka == KD_VALUE_NOT_POINT || ka == KD_VALUE_OTHER ||
		kb == KD_VALUE_NOT_POINT || kb == KD_VALUE_OTHER)
		return postgis_dwithin(fcinfo, argtype, spheroid);
	/* a non-finite point: the error reading it raises */
	if (ka == KD_VALUE_NONFINITE)
		(void) kdg_datum_read(type, PG_GETARG_DATUM(0), a, &wa, &ia);
	if (kb == KD_VALUE_NONFINITE)
		(void) kdg_datum_read(type, PG_GETARG_DATUM(1), b, &wb, &ib);
	if (ia.srid != ib.srid)
		kdg_srid_mismatch("kd_dwithin", &ia, &ib);
	if (ka == KD_VALUE_EMPTY || kb == KD_VALUE_EMPTY)
		PG_RETURN_BOOL(false);
	if (type == KD_TYPE_GEOGRAPHY)
		PG_RETURN_BOOL(kdg_geography_distance(a, b) <= radius);
	PG_RETURN_BOOL(kdg_metric(KD_TYPE_GEOMETRY, a, b, 2) <= radius);
}

/*
 * geometry <@ kd_ball: whether a point's x and y lie within radius of the
 * center; for any other geometry, whether its box comes within radius of
 * it, widened by the regions' margins of exactness.h (a lossy test, as &&
 * is, so that every row kd_dwithin can accept is one the index condition
 * keeps).
 */
Datum
kdgpu_geometry_in_ball(PG_FUNCTION_ARGS)
{
	double		p[KD_MAX_DIM + 2];
	double		center[KD_MAX_DIM];
	double		lo[2],
				hi[2];
	double		radius;
	double		d2 = 0.0;
	KdWhere		where = {"p", 0};
	KdPointInfo info;
	int			dim;
	KdValueKind kind = kdg_datum_classify(KD_TYPE_GEOMETRY_2D, PG_GETARG_DATUM(0),
										  p, &info, &dim);

	if (kind == KD_VALUE_EMPTY)
		PG_RETURN_BOOL(false);
	if (kdg_ball_from_datum(PG_GETARG_DATUM(1), 2, center, &radius) < 0)
		PG_RETURN_NULL();
	/* a non-finite or unreadable point: the error reading it raises */
	if (kind == KD_VALUE_NONFINITE || kind == KD_VALUE_OTHER)
		(void) kdg_datum_coords(KD_TYPE_GEOMETRY_2D, PG_GETARG_DATUM(0), p, &where);
	if (kind != KD_VALUE_NOT_POINT)
		PG_RETURN_BOOL(kdg_metric(KD_TYPE_GEOMETRY_2D, p, center, 2) <= radius);
	if (!kdg_postgis_box(PG_GETARG_DATUM(0), lo, hi))
		PG_RETURN_BOOL(false);
	for (int j = 0; j < 2; j++)
	{
		double		gap = Max(Max(lo[j] - center[j], center[j] - hi[j]), 0.0);

		d2 += gap * gap;
	}
	PG_RETURN_BOOL(sqrt(d2) <= radius * (1.0 + KD_REGION_REL) + KD_REGION_ABS);
}

/* The OID of function name(argtypes) in schema nsp, or InvalidOid. */
Oid
kdg_function_oid_args(Oid nsp, const char *name, int nargs, const Oid *argtypes)
{
	return LookupFuncName(list_make2(makeString(get_namespace_name(nsp)),
									 makeString(pstrdup(name))),
						  nargs, argtypes, true);
}

/* The OID of function name(arg0, arg1) in schema nsp, or InvalidOid. */
Oid
kdg_function_oid(Oid nsp, const char *name, Oid arg0, Oid arg1)
{
	Oid			argtypes[2] = {arg0, arg1};

	return kdg_function_oid_args(nsp, name, 2, argtypes);
}

/*
 * radius * (1 + rel) + KD_DWITHIN_GEOGRAPHY_SLACK: a geography radius
 * widened for a box condition, folded when radius is a constant.
 */
Node *
kdg_geography_reach(Node *radius, double rel)
{
	Const	   *slack = makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8),
								  Float8GetDatum(KD_DWITHIN_GEOGRAPHY_SLACK),
								  false, FLOAT8PASSBYVAL);
	Const	   *scale = makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8),
								  Float8GetDatum(1.0 + rel), false, FLOAT8PASSBYVAL);

	if (IsA(radius, Const) && !((Const *) radius)->constisnull)
	{
		slack->constvalue =
			Float8GetDatum(DatumGetFloat8(((Const *) radius)->constvalue) * (1.0 + rel) +
						   KD_DWITHIN_GEOGRAPHY_SLACK);
		return (Node *) slack;
	}
	if (rel != 0.0)
		radius = (Node *) makeFuncExpr(F_FLOAT8MUL, FLOAT8OID, list_make2(radius, scale),
									   InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	return (Node *) makeFuncExpr(F_FLOAT8PL, FLOAT8OID, list_make2(radius, slack),
								 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
}

/* Whether node is a constant geometry point, not empty. */
static bool
const_point(Node *node)
{
	double		coords[KD_MAX_DIM + 2];
	KdPointInfo info;
	int			dim;

	return IsA(node, Const) && !((Const *) node)->constisnull &&
		kdg_datum_classify(KD_TYPE_GEOMETRY, ((Const *) node)->constvalue,
						   coords, &info, &dim) == KD_VALUE_POINT;
}

/*
 * Planner support: offer a kdgpu index over points an index condition
 * that holds every row kd_dwithin can accept (see the file header).
 */
Datum
kdgpu_dwithin_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);
	SupportRequestIndexCondition *req;
	FuncExpr   *fexpr;
	Node	   *indexarg;
	Node	   *other;
	Node	   *radius;
	Oid			geomtype;
	Oid			region;
	Oid			regiontype;
	Oid			op;
	double		spheroid_rel = 0.0;

	if (!IsA(rawreq, SupportRequestIndexCondition))
		PG_RETURN_POINTER(NULL);
	req = (SupportRequestIndexCondition *) rawreq;
	if (!is_funcclause(req->node) || req->indexarg > 1)
		PG_RETURN_POINTER(NULL);
	/* the strategy numbers below are kdgpu's: no other AM's index */
	if (req->index->relam != get_index_am_oid("kdgpu", true))
		PG_RETURN_POINTER(NULL);
	fexpr = (FuncExpr *) req->node;
	if (list_length(fexpr->args) < 3)
		PG_RETURN_POINTER(NULL);
	indexarg = (Node *) list_nth(fexpr->args, req->indexarg);
	other = (Node *) list_nth(fexpr->args, 1 - req->indexarg);
	radius = (Node *) list_nth(fexpr->args, 2);
	geomtype = exprType(indexarg);
	if (!kdg_type_is_postgis(kdg_point_type(geomtype)) ||
		!is_pseudo_constant_for_index(req->root, other, req->index) ||
		!is_pseudo_constant_for_index(req->root, radius, req->index))
		PG_RETURN_POINTER(NULL);
	/* the spheroid's distance, unless use_spheroid is a constant false */
	if (list_length(fexpr->args) > 3)
	{
		Node	   *use = eval_const_expressions(req->root,
												 (Node *) list_nth(fexpr->args, 3));

		if (!IsA(use, Const) || ((Const *) use)->constisnull ||
			DatumGetBool(((Const *) use)->constvalue))
			spheroid_rel = KD_SPHEROID_REL;
	}

	/* geometry around a constant point: kd_ball(other, radius) */
	region = kdg_point_type(geomtype) == KD_TYPE_GEOMETRY && const_point(other)
		? kdg_function_oid(get_func_namespace(fexpr->funcid), "kd_ball",
						   geomtype, FLOAT8OID)
		: InvalidOid;
	regiontype = OidIsValid(region) ? get_func_rettype(region) : InvalidOid;
	op = OidIsValid(regiontype)
		? get_opfamily_member(req->opfamily, geomtype, regiontype,
							  KDAM_STRATEGY_IN_BALL)
		: InvalidOid;
	if (!OidIsValid(op))
	{
		/* a box: ST_Expand (geometry) or _ST_Expand (geography) */
		Oid			nsp = kdg_type_namespace(geomtype);

		region = kdg_function_oid(nsp, kdg_point_type(geomtype) == KD_TYPE_GEOGRAPHY ?
								  "_st_expand" : "st_expand", geomtype, FLOAT8OID);
		regiontype = geomtype;
		op = get_opfamily_member(req->opfamily, geomtype, geomtype,
								 KDAM_STRATEGY_IN_BOX);
	}
	if (!OidIsValid(region) || !OidIsValid(op))
		PG_RETURN_POINTER(NULL);
	if (kdg_point_type(geomtype) == KD_TYPE_GEOGRAPHY)
		radius = kdg_geography_reach(radius, spheroid_rel);
	req->lossy = true;
	PG_RETURN_POINTER(list_make1(make_opclause(op, BOOLOID, false, (Expr *) indexarg,
											   (Expr *) makeFuncExpr(region, regiontype,
																	 list_make2(other, radius),
																	 InvalidOid, InvalidOid,
																	 COERCE_EXPLICIT_CALL),
											   InvalidOid, InvalidOid)));
}
