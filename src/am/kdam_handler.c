/*
 * kdam_handler.c
 *	  The kdgpu access method's handler, options, cost estimate and operator
 *	  class validation.
 *
 * Operator classes (kdgpu--0.1.sql): kd_point_ops for point, with
 * `<@ box` (strategy 1), `<@ circle` (2), `<@ kd_ball` (3), `<<`, `>>`,
 * `<<|`, `|>>`, `<^`, `>^`, `~=` (5-11), `<@ polygon` (12) and `<->` for
 * ORDER BY (15); kd_float8_ops for float8[], with `<@ kd_ball` (3),
 * `<@ kd_rect` (4) and `<->` for ORDER BY; kdgpu_postgis's for geometry and
 * geography (kdam_postgis.c).  Every index answers IS NULL and IS NOT NULL.  The access method
 * reads the indexed type itself (datum.c), so it needs no support functions.
 */
#include "postgres.h"

#include <math.h>

#include "access/amvalidate.h"
#include "access/htup_details.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"

#include "kdam.h"

PG_FUNCTION_INFO_V1(kdam_handler);

/* amoptions: kdgpu indexes take no storage parameters */
static bytea *
kdam_options(Datum reloptions, bool validate)
{
	if (validate && DatumGetPointer(reloptions) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kdgpu indexes take no storage parameters")));
	return NULL;
}

/*
 * amcostestimate: generic costs for the matching fraction of the index,
 * its pages counted as cached: an ordered scan starts at the cost of one
 * descent and pays per row returned, so the planner takes it for
 * ORDER BY <-> LIMIT k; a range scan pays for the rows its quals select.
 */
static void
kdam_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				  Cost *indexStartupCost, Cost *indexTotalCost,
				  Selectivity *indexSelectivity, double *indexCorrelation,
				  double *indexPages)
{
	GenericCosts costs;
	double		ntuples = Max(path->indexinfo->tuples, 1.0);

	/* no quals and no ordering: nothing to gain from this index */
	if (path->indexclauses == NIL && path->indexorderbys == NIL)
	{
		*indexStartupCost = get_float8_infinity();
		*indexTotalCost = get_float8_infinity();
		*indexSelectivity = 1.0;
		*indexCorrelation = 0.0;
		*indexPages = 0.0;
		return;
	}
	MemSet(&costs, 0, sizeof(costs));
	genericcostestimate(root, path, loop_count, &costs);
	/*
	 * a search reads few pages, mostly the upper levels of its trees, which
	 * stay in shared buffers: count them at CPU cost, not random_page_cost
	 */
	costs.indexTotalCost -= costs.numIndexPages * random_page_cost;
	costs.indexTotalCost += costs.numIndexPages * cpu_operator_cost;
	*indexStartupCost = log2(ntuples) * cpu_operator_cost * 4;
	*indexTotalCost = *indexStartupCost + Max(costs.indexTotalCost, 0.0);
	*indexSelectivity = costs.indexSelectivity;
	*indexCorrelation = 0.0;
	*indexPages = costs.numIndexPages;
}

/* Whether the scans of an index of a type know a search strategy. */
static bool
kdam_strategy_known(KdPointType type, int s)
{
	switch (type)
	{
		case KD_TYPE_POINT:
			return s == KDAM_STRATEGY_IN_BOX || s == KDAM_STRATEGY_IN_CIRCLE ||
				s == KDAM_STRATEGY_IN_BALL ||
				(s >= KDAM_STRATEGY_LEFT && s <= KDAM_STRATEGY_IN_POLYGON);
		case KD_TYPE_ARRAY:
			return s == KDAM_STRATEGY_IN_BALL || s == KDAM_STRATEGY_IN_RECT;
		case KD_TYPE_GEOGRAPHY:
			return s == KDAM_STRATEGY_IN_BOX;
		default:
			/* geometry: && and kd_ball, and PostGIS's box operators */
			return s == KDAM_STRATEGY_IN_BOX || s == KDAM_STRATEGY_IN_BALL ||
				(s >= KDAM_STRATEGY_LEFT && s <= KDAM_STRATEGY_ABOVE) ||
				s == KDAM_STRATEGY_SAME ||
				(s >= KDAM_STRATEGY_CONTAINS && s <= KDAM_STRATEGY_MAX &&
				 s != KDAM_STRATEGY_DISTANCE);
	}
}

/* amvalidate: the operators of an opclass are ones this method knows */
static bool
kdam_validate(Oid opclassoid)
{
	HeapTuple	tup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	Form_pg_opclass form;
	CatCList   *ops;
	bool		ok = true;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	form = (Form_pg_opclass) GETSTRUCT(tup);
	if (kdg_point_type(form->opcintype) == KD_TYPE_NONE)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("kdgpu operator class \"%s\" is for type %s, not point or float8[]",
						NameStr(form->opcname), format_type_be(form->opcintype))));
		ok = false;
	}
	ops = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(form->opcfamily));
	for (int i = 0; i < ops->n_members; i++)
	{
		Form_pg_amop op = (Form_pg_amop) GETSTRUCT(&ops->members[i]->tuple);
		bool		order = op->amoppurpose == AMOP_ORDER;
		int			s = op->amopstrategy;
		bool		known;

		KdPointType type = kdg_point_type(form->opcintype);

		if (order)
			known = s == KDAM_STRATEGY_DISTANCE &&
				op->amoprighttype == form->opcintype;
		else
			known = kdam_strategy_known(type, s);
		if (!known || op->amoplefttype != form->opcintype)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("kdgpu operator class \"%s\" has an unsupported operator %s with strategy %d",
							NameStr(form->opcname),
							format_operator(op->amopopr), op->amopstrategy)));
			ok = false;
		}
	}
	ReleaseCatCacheList(ops);
	ReleaseSysCache(tup);
	return ok;
}

/* ambuildphasename */
static char *
kdam_buildphasename(int64 phasenum)
{
	switch (phasenum)
	{
		case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE:
			return "initializing";
		case KDAM_PHASE_TREE:
			return "building tree";
		case KDAM_PHASE_WRITE:
			return "writing tree";
		case KDAM_PHASE_SORT:
			return "sorting points";
		case KDAM_PHASE_SCAN:
			return "scanning table";
		case KDAM_PHASE_READ:
			return "reading cells";
		default:
			return NULL;
	}
}

/* The index access method handler. */
Datum
kdam_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *amroutine = makeNode(IndexAmRoutine);

	amroutine->amstrategies = 0;
	amroutine->amsupport = 0;
	amroutine->amoptsprocnum = 0;
	amroutine->amcanorder = false;
	amroutine->amcanorderbyop = true;
	amroutine->amcanbackward = false;
	amroutine->amcanunique = false;
	amroutine->amcanmulticol = false;
	amroutine->amoptionalkey = true;
	amroutine->amsearcharray = false;
	amroutine->amsearchnulls = true;
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
	amroutine->amcaninclude = true;
	amroutine->amusemaintenanceworkmem = false;
	amroutine->amparallelvacuumoptions = VACUUM_OPTION_NO_PARALLEL;
	amroutine->amkeytype = InvalidOid;

	amroutine->ambuild = kdam_build;
	amroutine->ambuildempty = kdam_buildempty;
	amroutine->aminsert = kdam_insert;
	amroutine->ambulkdelete = kdam_bulkdelete;
	amroutine->amvacuumcleanup = kdam_vacuumcleanup;
	amroutine->amcanreturn = kdam_canreturn;
	amroutine->amcostestimate = kdam_costestimate;
	amroutine->amoptions = kdam_options;
	amroutine->amproperty = NULL;
	amroutine->ambuildphasename = kdam_buildphasename;
	amroutine->amvalidate = kdam_validate;
	amroutine->amadjustmembers = NULL;
	amroutine->ambeginscan = kdam_beginscan;
	amroutine->amrescan = kdam_rescan;
	amroutine->amgettuple = kdam_gettuple;
	amroutine->amgetbitmap = kdam_getbitmap;
	amroutine->amendscan = kdam_endscan;
	amroutine->ammarkpos = NULL;
	amroutine->amrestrpos = NULL;
	amroutine->amestimateparallelscan = NULL;
	amroutine->aminitparallelscan = NULL;
	amroutine->amparallelrescan = NULL;

	PG_RETURN_POINTER(amroutine);
}
