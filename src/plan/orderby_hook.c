/*
 * orderby_hook.c
 *	  Rechecked ORDER BY keys of kdgpu index scans, evaluated as written.
 *
 * The planner hands an index the commuted form of `ORDER BY q <-> col`
 * (the column on the left) and keeps that form in the plan's
 * indexorderbyorig, which the executor evaluates to recheck and re-sort
 * what an index returns as lower bounds (PostGIS types, rows outside the
 * tree).  PostGIS's geography distance is not symmetric to the last bit,
 * so the rows would come out ordered by `col <-> q` while a sequential
 * scan orders them by `q <-> col`.  At executor start, this hook puts the
 * expression the query wrote back into indexorderbyorig of kdgpu index
 * scans: the written form is the one the scan's target list computes for
 * the ORDER BY, as a resjunk or output column.  The index's own lower
 * bounds hold for either argument order.  The change is idempotent, so a
 * cached plan run again is left as it is.
 */
#include "postgres.h"

#include "commands/defrem.h"
#include "executor/executor.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "utils/syscache.h"

#include "plan/plan.h"

static ExecutorStart_hook_type prev_executor_start = NULL;

/*
 * The expression of the scan's target list that computes `b op a` when
 * orig is `a op b`, or NULL.
 */
static Expr *
written_form(const OpExpr *orig, List *tlist)
{
	ListCell   *lc;

	if (list_length(orig->args) != 2)
		return NULL;
	foreach(lc, tlist)
	{
		OpExpr	   *e = (OpExpr *) ((TargetEntry *) lfirst(lc))->expr;

		if (IsA(e, OpExpr) && e->opno == orig->opno &&
			list_length(e->args) == 2 &&
			equal(linitial(e->args), lsecond(orig->args)) &&
			equal(lsecond(e->args), linitial(orig->args)))
			return (Expr *) e;
	}
	return NULL;
}

/* The access method of an index, InvalidOid when it is gone. */
static Oid
index_am(Oid indexid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(indexid));
	Oid			am;

	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	am = ((Form_pg_class) GETSTRUCT(tup))->relam;
	ReleaseSysCache(tup);
	return am;
}

/* Put the written ORDER BY expressions into a kdgpu index scan. */
static void
fix_index_scan(IndexScan *scan, Oid kdgpu_am)
{
	ListCell   *lc;

	if (scan->indexorderbyorig == NIL ||
		index_am(scan->indexid) != kdgpu_am)
		return;
	foreach(lc, scan->indexorderbyorig)
	{
		Expr	   *written;

		if (!IsA(lfirst(lc), OpExpr))
			continue;
		written = written_form(lfirst(lc), scan->scan.plan.targetlist);
		/* the plan's own node: a cached plan outlives this executor's memory */
		if (written != NULL)
			lfirst(lc) = written;
	}
}

/* Walk a plan tree, fixing every kdgpu index scan in it. */
static void
fix_plan(Plan *plan, Oid kdgpu_am)
{
	ListCell   *lc;
	List	   *children = NIL;

	if (plan == NULL)
		return;
	check_stack_depth();
	switch (nodeTag(plan))
	{
		case T_IndexScan:
			fix_index_scan((IndexScan *) plan, kdgpu_am);
			break;
		case T_Append:
			children = ((Append *) plan)->appendplans;
			break;
		case T_MergeAppend:
			children = ((MergeAppend *) plan)->mergeplans;
			break;
		case T_BitmapAnd:
			children = ((BitmapAnd *) plan)->bitmapplans;
			break;
		case T_BitmapOr:
			children = ((BitmapOr *) plan)->bitmapplans;
			break;
		case T_SubqueryScan:
			fix_plan(((SubqueryScan *) plan)->subplan, kdgpu_am);
			break;
		case T_CustomScan:
			children = ((CustomScan *) plan)->custom_plans;
			break;
		default:
			break;
	}
	foreach(lc, children)
		fix_plan(lfirst(lc), kdgpu_am);
	fix_plan(plan->lefttree, kdgpu_am);
	fix_plan(plan->righttree, kdgpu_am);
}

/* ExecutorStart: fix the plan, then start it as usual. */
static void
kdg_executor_start(QueryDesc *queryDesc, int eflags)
{
	Oid			kdgpu_am = get_index_am_oid("kdgpu", true);

	if (OidIsValid(kdgpu_am))
	{
		ListCell   *lc;

		fix_plan(queryDesc->plannedstmt->planTree, kdgpu_am);
		foreach(lc, queryDesc->plannedstmt->subplans)
			fix_plan(lfirst(lc), kdgpu_am);
	}
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

/* Install the hook (from _PG_init). */
void
kdg_orderby_hook_install(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = kdg_executor_start;
}
