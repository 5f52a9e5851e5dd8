/*
 * postgis_paths.c
 *	  kdgpu index paths for PostGIS's own predicates and for distance caps,
 *	  as the query wrote them.
 *
 * PostGIS's support functions give index conditions to GiST, SP-GiST and
 * BRIN only, and `col <-> q < r` is no index condition at all, so on a
 * table whose spatial index is kdgpu these predicates scanned the whole
 * table, and `ORDER BY col <-> q LIMIT k` with a distance cap walked the
 * whole index.  This set_rel_pathlist_hook derives, for a base relation's
 * WHERE clause on a kdgpu index's column, a condition of the index's own
 * operator class that holds every row the clause accepts:
 *
 *	ST_DWithin(col, q, r), ST_DFullyWithin:	col && ST_Expand(q, r)
 *	ST_3DDWithin, ST_3DDFullyWithin (n-D index): col &&& ST_Expand(q, r)
 *	ST_3DIntersects (n-D index):			col &&& q
 *	geography ST_DWithin (spheroid or not):	col && _ST_Expand(q, r')
 *	ST_Intersects, ST_Contains, ST_Within, ST_Covers, ST_CoveredBy,
 *	ST_ContainsProperly, ST_Touches, ST_Overlaps, ST_Crosses, ST_Equals
 *	(geometry; the first and the covers pair for geography): col && q
 *	col <-> q < r or <= r (r a constant; <<->> on an n-D index):
 *		col <@ circle(q, r) for point, col <@ kd_ball(q, r) for float8[],
 *		the boxes above for PostGIS
 *
 * with r' = r (1 + KD_SPHEROID_REL) + KD_DWITHIN_GEOGRAPHY_SLACK
 * (exactness.h), either argument order, and q and r constant for the
 * scan.  Each derived condition goes only into new paths on the kdgpu
 * index: an index scan and a bitmap scan, and each ordered scan the
 * planner made on the index (ORDER BY col <-> q) again with the condition,
 * which then walks only the condition's region: the capped kNN.  The
 * query's clause stays in the plan as the filter, so the rows are exactly
 * a sequential scan's.  A clause that joins another table gives
 * parameterized index and bitmap scans instead, for the inner side of a
 * nested loop.  No clause of the query changes and no other index gets a
 * condition, so a table without a kdgpu index plans as before; the
 * functions are recognised by name in the schema of their argument's
 * type, so an ALTER EXTENSION postgis UPDATE keeps them.
 */
#include "postgres.h"

#include <math.h>

#include "access/stratnum.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "parser/parse_func.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "am/kdam.h"
#include "exactness.h"
#include "plan/plan.h"

static set_rel_pathlist_hook_type kdg_prev_postgis_hook = NULL;

/* What a PostGIS function asks of its arguments' boxes. */
typedef enum KdgBoxKind
{
	KDG_BOX_NONE,
	KDG_BOX_EXPAND,				/* within r of the other: its box widened */
	KDG_BOX_OVERLAP				/* the boxes meet */
} KdgBoxKind;

/* The PostGIS functions with an index condition, and what they ask. */
static const struct
{
	const char *name;
	int			nargs;			/* 0: 3 or 4 */
	KdgBoxKind	kind;
	bool		geography;		/* also for geography */
	int			strategy;		/* the box operator: && or n-D &&& */
}			kdg_postgis_predicates[] =
{
	{"st_dwithin", 0, KDG_BOX_EXPAND, true, KDAM_STRATEGY_IN_BOX},
	{"st_dfullywithin", 3, KDG_BOX_EXPAND, false, KDAM_STRATEGY_IN_BOX},
	{"st_intersects", 2, KDG_BOX_OVERLAP, true, KDAM_STRATEGY_IN_BOX},
	{"st_contains", 2, KDG_BOX_OVERLAP, false, KDAM_STRATEGY_IN_BOX},
	{"st_within", 2, KDG_BOX_OVERLAP, false, KDAM_STRATEGY_IN_BOX},
	{"st_covers", 2, KDG_BOX_OVERLAP, true, KDAM_STRATEGY_IN_BOX},
	{"st_coveredby", 2, KDG_BOX_OVERLAP, true, KDAM_STRATEGY_IN_BOX},
	{"st_containsproperly", 2, KDG_BOX_OVERLAP, false, KDAM_STRATEGY_IN_BOX},
	{"st_touches", 2, KDG_BOX_OVERLAP, false, KDAM_STRATEGY_IN_BOX},
	{"st_overlaps", 2, KDG_BOX_OVERLAP, false, KDAM_STRATEGY_IN_BOX},
	{"st_crosses", 2, KDG_BOX_OVERLAP, false, KDAM_STRATEGY_IN_BOX},
	{"st_equals", 2, KDG_BOX_OVERLAP, false, KDAM_STRATEGY_IN_BOX},
	{"st_3ddwithin", 3, KDG_BOX_EXPAND, false, KDAM_STRATEGY_ND_OVERLAP},
	{"st_3ddfullywithin", 3, KDG_BOX_EXPAND, false, KDAM_STRATEGY_ND_OVERLAP},
	{"st_3dintersects", 2, KDG_BOX_OVERLAP, false, KDAM_STRATEGY_ND_OVERLAP},
};

/*
 * `col op region` when op is a member of the index's operator family at
 * strategy for (col's type, region's type), else NULL.
 */
static Expr *
index_condition(IndexOptInfo *index, Node *col, Node *region, int strategy)
{
	Oid			op = get_opfamily_member(index->opfamily[0], exprType(col),
										 exprType(region), strategy);

	if (!OidIsValid(op))
		return NULL;
	return make_opclause(op, BOOLOID, false, (Expr *) col, (Expr *) region,
						 InvalidOid, InvalidOid);
}

/*
 * col && box (or n-D &&&, by strategy) for a PostGIS column: the other
 * argument's box, widened by radius when radius is not NULL (ST_Expand,
 * which widens every coordinate; for geography _ST_Expand with the
 * radius as kdg_geography_reach widens it by rel).
 */
static Expr *
box_condition(IndexOptInfo *index, Node *col, Node *other, Node *radius,
			  double rel, int strategy)
{
	Oid			type = exprType(col);
	bool		geography = kdg_point_type(type) == KD_TYPE_GEOGRAPHY;
	Oid			expand;

	if (exprType(other) != type)
		return NULL;
	if (radius == NULL)
		return index_condition(index, col, other, strategy);
	expand = kdg_function_oid(kdg_type_namespace(type),
							  geography ? "_st_expand" : "st_expand", type, FLOAT8OID);
	if (!OidIsValid(expand))
		return NULL;
	if (geography)
		radius = kdg_geography_reach(radius, rel);
	return index_condition(index, col,
						   (Node *) makeFuncExpr(expand, type, list_make2(other, radius),
												 InvalidOid, InvalidOid,
												 COERCE_EXPLICIT_CALL),
						   strategy);
}

/* The schema of an operator. */
static Oid
operator_namespace(Oid opno)
{
	HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	Oid			nsp;

	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	nsp = ((Form_pg_operator) GETSTRUCT(tup))->oprnamespace;
	ReleaseSysCache(tup);
	return nsp;
}

/* Whether node is constant for a scan of index (no column of its table). */
static bool
scan_constant(PlannerInfo *root, Node *node, IndexOptInfo *index)
{
	return is_pseudo_constant_for_index(root, node, index);
}

/* The condition for a call of a PostGIS predicate, or NULL. */
static Expr *
postgis_condition(PlannerInfo *root, IndexOptInfo *index, FuncExpr *call)
{
	int			nargs = list_length(call->args);
	char	   *name;
	Node	   *col;
	Node	   *other;
	KdPointType type;

	if (nargs < 2 || nargs > 4)
		return NULL;
	for (int side = 0; side < 2; side++)
	{
		col = list_nth(call->args, side);
		other = list_nth(call->args, 1 - side);
		if (match_index_to_operand(col, 0, index))
			break;
		col = NULL;
	}
	if (col == NULL || !scan_constant(root, other, index))
		return NULL;
	type = kdg_point_type(exprType(col));
	if (!kdg_type_is_postgis(type) ||
		get_func_namespace(call->funcid) != kdg_type_namespace(exprType(col)))
		return NULL;
	name = get_func_name(call->funcid);
	for (int i = 0; i < lengthof(kdg_postgis_predicates); i++)
	{
		Node	   *radius;

		if (strcmp(name, kdg_postgis_predicates[i].name) != 0 ||
			(type == KD_TYPE_GEOGRAPHY && !kdg_postgis_predicates[i].geography))
			continue;
		if (kdg_postgis_predicates[i].kind == KDG_BOX_OVERLAP)
			return nargs == 2 ? box_condition(index, col, other, NULL, 0.0,
											  kdg_postgis_predicates[i].strategy) : NULL;
		if (kdg_postgis_predicates[i].nargs ? nargs != kdg_postgis_predicates[i].nargs :
			nargs < 3)
			return NULL;
		radius = list_nth(call->args, 2);
		if (exprType(radius) != FLOAT8OID || !scan_constant(root, radius, index))
			return NULL;
		return box_condition(index, col, other, radius, KD_SPHEROID_REL,
							 kdg_postgis_predicates[i].strategy);
	}
	return NULL;
}

/*
 * The distance of `col <-> q` or `q <-> col` when expr is one with the
 * index's ORDER BY operator, q constant for the scan; NULL otherwise.
 */
static Node *
capped_query(PlannerInfo *root, IndexOptInfo *index, Node *expr, Node **col)
{
	OpExpr	   *dist = (OpExpr *) expr;

	if (!IsA(expr, OpExpr) || list_length(dist->args) != 2)
		return NULL;
	for (int side = 0; side < 2; side++)
	{
		Node	   *c = list_nth(dist->args, side);
		Node	   *q = list_nth(dist->args, 1 - side);
		Oid			op;

		if (!match_index_to_operand(c, 0, index) || !scan_constant(root, q, index))
			continue;
		op = get_opfamily_member(index->opfamily[0], exprType(c), exprType(q),
								 KDAM_STRATEGY_DISTANCE);
		if (OidIsValid(op) && (op == dist->opno || get_commutator(op) == dist->opno))
		{
			*col = c;
			return q;
		}
	}
	return NULL;
}

/*
 * The condition for `col <-> q < r` or `<= r` (either way round) with r a
 * constant that is not NaN, or NULL.
 */
static Expr *
cap_condition(PlannerInfo *root, IndexOptInfo *index, OpExpr *cmp)
{
	char	   *opname;
	Node	   *q = NULL;
	Node	   *col = NULL;
	Const	   *r = NULL;
	double		radius;
	Node	   *rnode;
	Oid			fn;

	if (list_length(cmp->args) != 2 || get_op_rettype(cmp->opno) != BOOLOID ||
		operator_namespace(cmp->opno) != PG_CATALOG_NAMESPACE)
		return NULL;
	opname = get_opname(cmp->opno);
	if (opname == NULL)
		return NULL;
	if (strcmp(opname, "<") == 0 || strcmp(opname, "<=") == 0)
	{
		q = capped_query(root, index, linitial(cmp->args), &col);
		r = (Const *) lsecond(cmp->args);
	}
	else if (strcmp(opname, ">") == 0 || strcmp(opname, ">=") == 0)
	{
		q = capped_query(root, index, lsecond(cmp->args), &col);
		r = (Const *) linitial(cmp->args);
	}
	if (q == NULL || !IsA(r, Const) || r->constisnull || r->consttype != FLOAT8OID)
		return NULL;
	radius = DatumGetFloat8(r->constvalue);
	if (isnan(radius))
		return NULL;
	rnode = (Node *) makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8),
							   Float8GetDatum(Max(radius, 0.0)), false,
							   FLOAT8PASSBYVAL);
	switch (kdg_point_type(exprType(col)))
	{
		case KD_TYPE_POINT:
			/* the circle's test has a tolerance: it holds every row */
			fn = kdg_function_oid(PG_CATALOG_NAMESPACE, "circle", POINTOID, FLOAT8OID);
			return OidIsValid(fn) ?
				index_condition(index, col,
								(Node *) makeFuncExpr(fn, CIRCLEOID, list_make2(q, rnode),
													  InvalidOid, InvalidOid,
													  COERCE_EXPLICIT_CALL),
								KDAM_STRATEGY_IN_CIRCLE) : NULL;
		case KD_TYPE_ARRAY:
			/* kd_ball of the schema of the index's distance operator */
			fn = kdg_function_oid(operator_namespace(get_opfamily_member(index->opfamily[0],
																		 exprType(col), exprType(q),
																		 KDAM_STRATEGY_DISTANCE)),
								  "kd_ball", FLOAT8ARRAYOID, FLOAT8OID);
			return OidIsValid(fn) ?
				index_condition(index, col,
								(Node *) makeFuncExpr(fn, get_func_rettype(fn),
													  list_make2(q, rnode),
													  InvalidOid, InvalidOid,
													  COERCE_EXPLICIT_CALL),
								KDAM_STRATEGY_IN_BALL) : NULL;
		case KD_TYPE_GEOMETRY:
			/* an n-D index (<<->>) has &&&, a 2-D one && */
			return box_condition(index, col, q, rnode, 0.0,
								 OidIsValid(get_opfamily_member(index->opfamily[0], exprType(col),
																exprType(col),
																KDAM_STRATEGY_ND_OVERLAP)) ?
								 KDAM_STRATEGY_ND_OVERLAP : KDAM_STRATEGY_IN_BOX);
		case KD_TYPE_GEOGRAPHY:
			/* <-> is the sphere's distance: the slack alone */
			return box_condition(index, col, q, rnode, 0.0, KDAM_STRATEGY_IN_BOX);
		default:
			return NULL;
	}
}

/* The condition derived from a WHERE clause for index, or NULL. */
static Expr *
derived_condition(PlannerInfo *root, IndexOptInfo *index, Expr *clause)
{
	if (IsA(clause, FuncExpr))
		return postgis_condition(root, index, (FuncExpr *) clause);
	if (IsA(clause, OpExpr))
		return cap_condition(root, index, (OpExpr *) clause);
	return NULL;
}

/*
 * Offer index's paths with the derived conditions iclauses: an index scan,
 * a bitmap scan, and each ordered scan of the index in ordered (the paths
 * the planner had made) again with them.
 */
static void
add_index_paths(PlannerInfo *root, RelOptInfo *rel, IndexOptInfo *index,
				List *iclauses, List *ordered)
{
	ListCell   *lc;
	IndexPath  *path;

	path = create_index_path(root, index, iclauses, NIL, NIL, NIL,
							 ForwardScanDirection, false, NULL, 1.0, false);
	add_path(rel, (Path *) path);
	if (index->amhasgetbitmap)
		add_path(rel, (Path *) create_bitmap_heap_path(root, rel, (Path *) path,
													   NULL, 1.0, 0));
	foreach(lc, ordered)
	{
		IndexPath  *o = lfirst(lc);

		add_path(rel, (Path *) create_index_path(root, index,
												 list_concat(list_copy(o->indexclauses), iclauses),
												 o->indexorderbys, o->indexorderbycols,
												 o->path.pathkeys, o->indexscandir,
												 false, NULL, 1.0, false));
	}
}

/*
 * The index clause of a derived condition, its constants folded (ST_Expand
 * of a constant point once, not for every row the executor rechecks).
 */
static IndexClause *
index_clause(PlannerInfo *root, Expr *cond)
{
	IndexClause *ic = makeNode(IndexClause);

	cond = (Expr *) eval_const_expressions(root, (Node *) cond);
	ic->rinfo = make_simple_restrictinfo(root, cond);
	ic->indexquals = list_make1(ic->rinfo);
	ic->lossy = false;
	ic->indexcol = 0;
	ic->indexcols = NIL;
	return ic;
}

/*
 * Join clauses on index's column (ST_DWithin(a.g, b.g, r), ...): an index
 * scan and a bitmap scan parameterized by the other tables, for the inner
 * side of a nested loop, costed for as many loops as the largest of them
 * has rows.
 */
static void
add_join_paths(PlannerInfo *root, RelOptInfo *rel, IndexOptInfo *index)
{
	ListCell   *lc;

	foreach(lc, rel->joininfo)
	{
		RestrictInfo *rinfo = lfirst(lc);
		Expr	   *cond;
		Relids		outer;
		double		loops = 1.0;
		int			relid = -1;
		IndexPath  *path;

		if (rinfo->pseudoconstant || !join_clause_is_movable_to(rinfo, rel))
			continue;
		cond = derived_condition(root, index, rinfo->clause);
		if (cond == NULL)
			continue;
		outer = bms_del_member(bms_copy(rinfo->clause_relids), rel->relid);
		if (bms_is_empty(outer))
			continue;
		while ((relid = bms_next_member(outer, relid)) >= 0)
			loops = Max(loops, find_base_rel(root, relid)->rows);
		path = create_index_path(root, index, list_make1(index_clause(root, cond)),
								 NIL, NIL, NIL, ForwardScanDirection, false,
								 outer, loops, false);
		add_path(rel, (Path *) path);
		if (index->amhasgetbitmap)
			add_path(rel, (Path *) create_bitmap_heap_path(root, rel, (Path *) path,
														   outer, loops, 0));
	}
}

/*
 * set_rel_pathlist_hook: for each kdgpu index of a base relation, the
 * conditions its WHERE and join clauses give, and the paths that use them.
 */
static void
kdg_postgis_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
					 RangeTblEntry *rte)
{
	Oid			kdgpu_am;
	ListCell   *li;

	if (kdg_prev_postgis_hook)
		kdg_prev_postgis_hook(root, rel, rti, rte);
	if (rte->rtekind != RTE_RELATION || rel->reloptkind != RELOPT_BASEREL ||
		rel->indexlist == NIL ||
		(rel->baserestrictinfo == NIL && rel->joininfo == NIL))
		return;
	kdgpu_am = get_index_am_oid("kdgpu", true);
	if (!OidIsValid(kdgpu_am))
		return;
	foreach(li, rel->indexlist)
	{
		IndexOptInfo *index = lfirst(li);
		List	   *iclauses = NIL;
		List	   *ordered = NIL;
		ListCell   *lc;

		if (index->relam != kdgpu_am || index->nkeycolumns != 1)
			continue;
		add_join_paths(root, rel, index);
		foreach(lc, rel->baserestrictinfo)
		{
			RestrictInfo *rinfo = lfirst(lc);
			Expr	   *cond = rinfo->pseudoconstant ? NULL :
				derived_condition(root, index, rinfo->clause);

			if (cond != NULL)
				iclauses = lappend(iclauses, index_clause(root, cond));
		}
		if (iclauses == NIL)
			continue;
		foreach(lc, rel->pathlist)
		{
			IndexPath  *o = lfirst(lc);

			if (IsA(o, IndexPath) && o->indexinfo == index &&
				o->indexorderbys != NIL && o->path.param_info == NULL)
				ordered = lappend(ordered, o);
		}
		add_index_paths(root, rel, index, iclauses, ordered);
	}
}

/* Install the planner hook; from _PG_init. */
void
kdg_postgis_paths_install(void)
{
	kdg_prev_postgis_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = kdg_postgis_pathlist;
}
