/*
 * postgis_funcs.c
 *	  kd_dwithin(geometry, geometry, radius) and kd_dwithin(geography,
 *	  geography, radius), and their planner support function.
 *
 * kd_dwithin is true when two points are within radius of each other:
 * ST_Distance(a, b) <= radius for geometry (in x and y, like ST_DWithin),
 * the sphere distance in metres for geography (like ST_DWithin(a, b,
 * radius, false)).  Empty points are
 * never within any radius; non-points, points of different SRIDs and
 * negative radii are errors.
 *
 * PostGIS's ST_DWithin offers index conditions only to GiST, SP-GiST and
 * BRIN; the support function of kd_dwithin offers one to a kdgpu index on
 * either argument: `col && ST_Expand(other, radius)` for kd_geometry_ops,
 * `col && _ST_Expand(other, radius)` for kd_geography_ops (a box on the
 * unit sphere holding the arc of radius metres, plus 1%), which the index
 * answers with a box search.  The condition is lossy, so kd_dwithin itself
 * stays as the filter that decides.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/supportnodes.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "am/kdam.h"
#include "kdgpu.h"

PG_FUNCTION_INFO_V1(kdgpu_dwithin);
PG_FUNCTION_INFO_V1(kdgpu_dwithin_support);

/* kd_dwithin(a, b, radius) for geometry and geography points. */
Datum
kdgpu_dwithin(PG_FUNCTION_ARGS)
{
	Oid			argtype = get_fn_expr_argtype(fcinfo->flinfo, 0);
	KdPointType type = kdg_point_type(argtype);
	double		a[KD_MAX_DIM];
	double		b[KD_MAX_DIM];
	KdWhere		wa = {"a", 0};
	KdWhere		wb = {"b", 0};
	KdPointInfo ia,
				ib;
	double		radius = PG_GETARG_FLOAT8(2);
	int			da,
				db;

	if (!kdg_type_is_postgis(type))
		elog(ERROR, "kd_dwithin called on type %s", format_type_be(argtype));
	kdg_check_radius(radius, "radius", 0);
	da = kdg_datum_read(type, PG_GETARG_DATUM(0), a, &wa, &ia);
	db = kdg_datum_read(type, PG_GETARG_DATUM(1), b, &wb, &ib);
	if (ia.srid != ib.srid)
		kdg_srid_mismatch("kd_dwithin", &ia, &ib);
	if (da == 0 || db == 0)
		PG_RETURN_BOOL(false);
	if (type == KD_TYPE_GEOGRAPHY)
		PG_RETURN_BOOL(kdg_geography_distance(a, b) <= radius);
	PG_RETURN_BOOL(kdg_metric(KD_TYPE_GEOMETRY, a, b, 2) <= radius);
}

/*
 * The OID of PostGIS's st_expand(geometry, float8) or _st_expand(geography,
 * float8), from the type's schema.
 */
static Oid
kdg_st_expand_oid(Oid geomtype, const char *name)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(geomtype));
	Oid			argtypes[2] = {geomtype, FLOAT8OID};
	Oid			nsp;

	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	nsp = ((Form_pg_type) GETSTRUCT(tup))->typnamespace;
	ReleaseSysCache(tup);
	return LookupFuncName(list_make2(makeString(get_namespace_name(nsp)),
									 makeString(pstrdup(name))),
						  2, argtypes, true);
}

/*
 * Planner support: offer `col && ST_Expand(other, radius)` to a kdgpu
 * index over points whose opclass has && (kd_geometry_ops,
 * kd_geography_ops).
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
	Oid			overlap;
	Oid			expand;
	Expr	   *box;

	if (!IsA(rawreq, SupportRequestIndexCondition))
		PG_RETURN_POINTER(NULL);
	req = (SupportRequestIndexCondition *) rawreq;
	if (!is_funcclause(req->node) || req->indexarg > 1)
		PG_RETURN_POINTER(NULL);
	fexpr = (FuncExpr *) req->node;
	if (list_length(fexpr->args) != 3)
		PG_RETURN_POINTER(NULL);
	indexarg = (Node *) list_nth(fexpr->args, req->indexarg);
	other = (Node *) list_nth(fexpr->args, 1 - req->indexarg);
	radius = (Node *) list_nth(fexpr->args, 2);
	geomtype = exprType(indexarg);
	if (!kdg_type_is_postgis(kdg_point_type(geomtype)) ||
		contain_volatile_functions(other) || contain_volatile_functions(radius))
		PG_RETURN_POINTER(NULL);
	overlap = get_opfamily_member(req->opfamily, geomtype, geomtype,
								  KDAM_STRATEGY_IN_BOX);
	expand = kdg_st_expand_oid(geomtype,
							   kdg_point_type(geomtype) == KD_TYPE_GEOGRAPHY ?
							   "_st_expand" : "st_expand");
	if (!OidIsValid(overlap) || !OidIsValid(expand))
		PG_RETURN_POINTER(NULL);
	box = (Expr *) makeFuncExpr(expand, geomtype, list_make2(other, radius),
								InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	req->lossy = true;
	PG_RETURN_POINTER(list_make1(make_opclause(overlap, BOOLOID, false,
											   (Expr *) indexarg, box,
											   InvalidOid, InvalidOid)));
}
