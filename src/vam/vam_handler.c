/*
 * vam_handler.c
 *	  The kdvec access method's handler, options, cost estimate, operator
 *	  class validation, and the metric an index's operator class names.
 *
 * Operator classes (sql/install/kdgpu.sql): kd_vector_ops (the default for
 * float8[]) with `<->` for ORDER BY (strategy 1, L2), and kd_vector_l1_ops
 * with `<+>` (strategy 2, L1).  An index orders by its class's one
 * operator and answers no WHERE clause, so it needs no support functions.
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
#include "utils/catcache.h"
#include "utils/syscache.h"
#include "access/genam.h"

#include "vam.h"

PG_FUNCTION_INFO_V1(kdvam_handler);

/* The metric of an ORDER BY strategy, or -1 for one kdvec does not know. */
static int
kdvam_strategy_metric(int strategy)
{
	switch (strategy)
	{
		case KDVAM_STRATEGY_L2:
			return KD_METRIC_L2;
		case KDVAM_STRATEGY_L1:
			return KD_METRIC_L1;
		default:
			return -1;
	}
}

/* The metric of index's operator class: its one ORDER BY operator's. */
KdMetric
kdvam_index_metric(Relation index)
{
	Oid			family = index->rd_opfamily[0];
	Oid			type = index->rd_opcintype[0];

	for (int s = KDVAM_STRATEGY_L2; s <= KDVAM_STRATEGY_L1; s++)
		if (OidIsValid(get_opfamily_member(family, type, type, s)))
			return (KdMetric) kdvam_strategy_metric(s);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
			 errmsg("the operator class of index \"%s\" has no distance operator kdvec knows",
					RelationGetRelationName(index))));
	return KD_METRIC_L2;		/* not reached */
}

/* amoptions: kdvec indexes take no storage parameters */
static bytea *
kdvam_options(Datum reloptions, bool validate)
{
	if (validate && DatumGetPointer(reloptions) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("kdvec indexes take no storage parameters")));
	return NULL;
}

/*
 * amcostestimate: only an ordered scan by one distance uses the index.  Its search
 * compares the share of the tree's rows its build's probe found
 * (probe_share) and every pending row, reading their pages at random,
 * before it returns its first row, so that is its startup cost; a scan
 * through every row reads every page.  Where the vectors leave the tree
 * little to prune, this is more than the table's sequential scan costs,
 * and the planner takes that instead.
 */
static void
kdvam_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				   Cost *indexStartupCost, Cost *indexTotalCost,
				   Selectivity *indexSelectivity, double *indexCorrelation,
				   double *indexPages)
{
	Relation	index;
	Buffer		metabuf;
	KdvamMetaPageData meta;
	double		pages;
	double		rows;
	double		share;
	double		per_row = cpu_index_tuple_cost + cpu_operator_cost;

	*indexSelectivity = 1.0;
	*indexCorrelation = 0.0;
	/* a scan orders by one distance; it cannot break its ties by another */
	if (list_length(path->indexorderbys) != 1 || path->indexinfo->hypothetical)
	{
		*indexStartupCost = get_float8_infinity();
		*indexTotalCost = get_float8_infinity();
		*indexPages = 0.0;
		return;
	}
	index = index_open(path->indexinfo->indexoid, AccessShareLock);
	metabuf = ReadBuffer(index, KDVAM_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	meta = *KdvamPageGetMeta(BufferGetPage(metabuf));
	UnlockReleaseBuffer(metabuf);
	pages = Max(RelationGetNumberOfBlocks(index) - 1, 1);
	index_close(index, AccessShareLock);

	rows = Max(meta.ntree + meta.npending + meta.nnull, 1);
	share = Min((meta.ntree * Min(meta.probe_share, 1.0) + meta.npending) / rows, 1.0);
	*indexStartupCost = share * (pages * random_page_cost + rows * per_row);
	*indexTotalCost = pages * random_page_cost + rows * per_row;
	*indexPages = pages;
}

/*
 * amvalidate: an opclass of float8[] whose family has one operator, one of
 * kdvec's orderings (the tree is built for that one metric)
 */
static bool
kdvam_validate(Oid opclassoid)
{
	HeapTuple	tup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	Form_pg_opclass form;
	CatCList   *ops;
	bool		ok = true;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	form = (Form_pg_opclass) GETSTRUCT(tup);
	if (form->opcintype != FLOAT8ARRAYOID)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("kdvec operator class \"%s\" is for type %s, not float8[]",
						NameStr(form->opcname), format_type_be(form->opcintype))));
		ok = false;
	}
	ops = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(form->opcfamily));
	for (int i = 0; i < ops->n_members; i++)
	{
		Form_pg_amop op = (Form_pg_amop) GETSTRUCT(&ops->members[i]->tuple);

		if (op->amoppurpose != AMOP_ORDER ||
			kdvam_strategy_metric(op->amopstrategy) < 0 ||
			op->amoplefttype != form->opcintype ||
			op->amoprighttype != form->opcintype)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("kdvec operator class \"%s\" has an unsupported operator %s with strategy %d",
							NameStr(form->opcname),
							format_operator(op->amopopr), op->amopstrategy)));
			ok = false;
		}
	}
	if (ops->n_members > 1)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("kdvec operator family of \"%s\" orders by %d distances, not one",
						NameStr(form->opcname), ops->n_members)));
		ok = false;
	}
	ReleaseCatCacheList(ops);
	ReleaseSysCache(tup);
	return ok;
}

/* ambuildphasename */
static char *
kdvam_buildphasename(int64 phasenum)
{
	switch (phasenum)
	{
		case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE:
			return "initializing";
		case KDVAM_PHASE_TREE:
			return "building tree";
		case KDVAM_PHASE_WRITE:
			return "writing tree";
		default:
			return NULL;
	}
}

/* The index access method handler. */
Datum
kdvam_handler(PG_FUNCTION_ARGS)
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
	amroutine->amsearchnulls = false;
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
	amroutine->amcaninclude = false;
	amroutine->amusemaintenanceworkmem = false;
	amroutine->amparallelvacuumoptions = VACUUM_OPTION_NO_PARALLEL;
	amroutine->amkeytype = InvalidOid;

	amroutine->ambuild = kdvam_build;
	amroutine->ambuildempty = kdvam_buildempty;
	amroutine->aminsert = kdvam_insert;
	amroutine->ambulkdelete = kdvam_bulkdelete;
	amroutine->amvacuumcleanup = kdvam_vacuumcleanup;
	amroutine->amcanreturn = NULL;
	amroutine->amcostestimate = kdvam_costestimate;
	amroutine->amoptions = kdvam_options;
	amroutine->amproperty = NULL;
	amroutine->ambuildphasename = kdvam_buildphasename;
	amroutine->amvalidate = kdvam_validate;
	amroutine->amadjustmembers = NULL;
	amroutine->ambeginscan = kdvam_beginscan;
	amroutine->amrescan = kdvam_rescan;
	amroutine->amgettuple = kdvam_gettuple;
	amroutine->amgetbitmap = NULL;
	amroutine->amendscan = kdvam_endscan;
	amroutine->ammarkpos = NULL;
	amroutine->amrestrpos = NULL;
	amroutine->amestimateparallelscan = NULL;
	amroutine->aminitparallelscan = NULL;
	amroutine->amparallelrescan = NULL;

	PG_RETURN_POINTER(amroutine);
}
