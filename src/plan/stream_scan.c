/*
 * stream_scan.c
 *	  A custom scan that streams the rows of kdgpu's functions in FROM.
 *
 * A set-returning function in FROM runs as a Function Scan, which stores
 * every row the function returns in a tuplestore before the first one goes
 * up the plan: for kd_all_knn over 10M points that is 100M rows written
 * and read back, spilling to disk past work_mem, and it costs more than the
 * search itself.  When a FROM item is a single call of one of the functions
 * in rows_funcs.c, this scan takes its place: it evaluates the arguments,
 * answers the queries as the function would (the same kdg_<name>_rows) and
 * returns each row from the answer as a virtual tuple, as the plan above
 * asks for it.  Columns that neither the plan above nor the scan's own
 * filter reads are returned as NULL without being made (for
 * kd_all_knn_arrays, the arrays under a count(*)).
 *
 * The scan replaces the Function Scan only when nothing else changes: no
 * WITH ORDINALITY, no LATERAL reference to another FROM item (outer
 * parameters are fine: a rescan with changed parameters answers again, one
 * with the same parameters rewinds), no whole-row reference to the
 * function's result.  kdgpu.stream_rows = off gives the Function Scan back.
 * A function returning one column (kd_box) has a one-column scan tuple.
 *
 * Where a call's arguments are constants, the scan is also offered as a
 * partial path for a parallel plan: the leader answers the call once as
 * the parallel query starts, and every participant returns the rows of the
 * queries it claims from the shared answer (stream_parallel.c), so that a
 * count, an aggregate or a join above runs on all of them.  The functions
 * stay parallel restricted: a worker never runs one, it reads its answer.
 * Workers are planned as for a table scan of the answer's size (its hits,
 * against min_parallel_table_scan_size), or, where more, one for every
 * KDG_STREAM_WORKER_ROWS rows (handing rows up is the participants' work,
 * and a table scan's rule gives 100M rows five).  Copying the answer into
 * the leader's kept segment (pages mapped already) is costed at
 * cpu_operator_cost / 8 per hit, about a tenth of what a row costs the
 * executor; either path costs KDG_ARRAY_HIT_COST per hit put in an array
 * that is read.
 */
#include "postgres.h"

#include "access/tupdesc.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "storage/dsm.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "plan/plan.h"

#define KDG_STREAM_NAME "KdgpuFunctionScan"

/*
 * The cost of a hit put in an array: about half what the planner counts
 * for a row through a Gather (parallel_tuple_cost, 10 cpu_tuple_cost by
 * default): filling All-kNN's arrays serially costs about as much per hit
 * as a Gather costs per row, and counted any cheaper the arrays stayed
 * serial under a CREATE TABLE AS where the parallel plan was faster.
 */
#define KDG_ARRAY_HIT_COST (5 * cpu_tuple_cost)

/* rows a parallel worker is planned for: fewer do not pay for its start */
#define KDG_STREAM_WORKER_ROWS 1000000.0

static set_rel_pathlist_hook_type kdg_prev_pathlist_hook = NULL;

/* Executor state of the scan. */
typedef struct KdStreamState
{
	CustomScanState css;
	FuncExpr   *fexpr;			/* the call */
	List	   *args;			/* ExprStates of its arguments */
	KdRowsFn	rowsfn;
	bool	   *needed;			/* per result column: read above */
	FmgrInfo	flinfo;
	MemoryContext cxt;			/* the answer and its rows */
	KdRows	   *rows;			/* NULL until the call has run */
	bool		ran;			/* the call has run (rows may be NULL) */
	KdStreamShared *shared;		/* parallel: the claims of the shared answer */
	dsm_segment *seg;			/* parallel: the shared answer's segment */
} KdStreamState;

static CustomPath *kdg_stream_path(RelOptInfo *rel, Cost startup, Cost run);
static bool kdg_reads_arrays(RelOptInfo *rel);
static void kdg_stream_add_partial(PlannerInfo *root, RelOptInfo *rel,
								   FuncExpr *fexpr, double hits,
								   const CustomPath *serial);
static Plan *kdg_stream_plan(PlannerInfo *root, RelOptInfo *rel,
							 CustomPath *best_path, List *tlist,
							 List *clauses, List *custom_plans);
static Node *kdg_stream_create_state(CustomScan *cscan);
static void kdg_stream_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *kdg_stream_exec(CustomScanState *node);
static void kdg_stream_end(CustomScanState *node);
static void kdg_stream_rescan(CustomScanState *node);
static void kdg_stream_explain(CustomScanState *node, List *ancestors,
							   ExplainState *es);
static Size kdg_stream_estimate_dsm(CustomScanState *node,
									ParallelContext *pcxt);
static void kdg_stream_init_dsm(CustomScanState *node, ParallelContext *pcxt,
								void *coordinate);
static void kdg_stream_reinit_dsm(CustomScanState *node, ParallelContext *pcxt,
								  void *coordinate);
static void kdg_stream_init_worker(CustomScanState *node, shm_toc *toc,
								   void *coordinate);

static const CustomPathMethods kdg_stream_path_methods = {
	.CustomName = KDG_STREAM_NAME,
	.PlanCustomPath = kdg_stream_plan,
};

static const CustomScanMethods kdg_stream_scan_methods = {
	.CustomName = KDG_STREAM_NAME,
	.CreateCustomScanState = kdg_stream_create_state,
};

static const CustomExecMethods kdg_stream_exec_methods = {
	.CustomName = KDG_STREAM_NAME,
	.BeginCustomScan = kdg_stream_begin,
	.ExecCustomScan = kdg_stream_exec,
	.EndCustomScan = kdg_stream_end,
	.ReScanCustomScan = kdg_stream_rescan,
	.ExplainCustomScan = kdg_stream_explain,
	.EstimateDSMCustomScan = kdg_stream_estimate_dsm,
	.InitializeDSMCustomScan = kdg_stream_init_dsm,
	.ReInitializeDSMCustomScan = kdg_stream_reinit_dsm,
	.InitializeWorkerCustomScan = kdg_stream_init_worker,
};

/*
 * The columns of a call's result: its row type's, or one column of its
 * scalar type (kd_box); NULL for other results.
 */
static TupleDesc
kdg_stream_result(FuncExpr *fexpr)
{
	Oid			rettype;
	TupleDesc	desc;

	switch (get_expr_result_type((Node *) fexpr, &rettype, &desc))
	{
		case TYPEFUNC_COMPOSITE:
			return desc;
		case TYPEFUNC_SCALAR:
			desc = CreateTemplateTupleDesc(1);
			TupleDescInitEntry(desc, (AttrNumber) 1, "", rettype, -1, 0);
			TupleDescInitEntryCollation(desc, (AttrNumber) 1, fexpr->funccollid);
			return desc;
		default:
			return NULL;
	}
}

/* Whether expressions read the whole row of relation relid. */
static bool
kdg_reads_whole_row(Node *exprs, Index relid)
{
	Bitmapset  *attrs = NULL;

	pull_varattnos(exprs, relid, &attrs);
	return bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, attrs);
}

/*
 * set_rel_pathlist_hook: offer the streaming scan for a FROM item that is
 * one call of a kdgpu function returning rows.
 */
static void
kdg_stream_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
					RangeTblEntry *rte)
{
	RangeTblFunction *rtfunc;
	FuncExpr   *fexpr;
	Path	   *fscan = NULL;
	CustomPath *cpath;
	double		hits;
	ListCell   *lc;

	if (kdg_prev_pathlist_hook)
		kdg_prev_pathlist_hook(root, rel, rti, rte);
	if (!kdgpu_stream_rows || rte->rtekind != RTE_FUNCTION ||
		rel->reloptkind != RELOPT_BASEREL || rte->funcordinality ||
		list_length(rte->functions) != 1 || !bms_is_empty(rel->lateral_relids))
		return;
	rtfunc = linitial_node(RangeTblFunction, rte->functions);
	if (!IsA(rtfunc->funcexpr, FuncExpr))
		return;
	fexpr = (FuncExpr *) rtfunc->funcexpr;
	if (!fexpr->funcretset || kdg_rows_function(fexpr->funcid) == NULL ||
		kdg_stream_result(fexpr) == NULL)
		return;
	/* plain columns only above; no whole row in them or in the filter */
	foreach(lc, rel->reltarget->exprs)
		if (!IsA(lfirst(lc), Var) || ((Var *) lfirst(lc))->varattno <= 0)
			return;
	foreach(lc, rel->baserestrictinfo)
		if (kdg_reads_whole_row((Node *) ((RestrictInfo *) lfirst(lc))->clause, rti))
			return;

	/*
	 * The scan takes the Function Scan's place, at its costs less its
	 * tuplestore's writes and reads, plus the arrays made of hits where
	 * they are read.
	 */
	foreach(lc, rel->pathlist)
		if (((Path *) lfirst(lc))->pathtype == T_FunctionScan)
		{
			fscan = lfirst(lc);
			rel->pathlist = foreach_delete_current(rel->pathlist, lc);
			break;
		}
	if (fscan == NULL)
		return;
	hits = kdg_rows_hits(fexpr, rel->rows);
	cpath = kdg_stream_path(rel, fscan->startup_cost,
							(fscan->total_cost - fscan->startup_cost) / 2 +
							(kdg_reads_arrays(rel) ? hits * KDG_ARRAY_HIT_COST : 0));
	add_path(rel, &cpath->path);
	kdg_stream_add_partial(root, rel, fexpr, hits, cpath);
}

/* Whether the plan reads an array column of rel's rows, above or in its filter. */
static bool
kdg_reads_arrays(RelOptInfo *rel)
{
	List	   *vars = list_concat(pull_var_clause((Node *) rel->reltarget->exprs, 0),
								   pull_var_clause((Node *) extract_actual_clauses(rel->baserestrictinfo, false), 0));
	ListCell   *lc;

	foreach(lc, vars)
		if (IsA(lfirst(lc), Var) && type_is_array(((Var *) lfirst(lc))->vartype))
			return true;
	return false;
}

/* A streaming scan path of rel with the given costs, not parallel. */
static CustomPath *
kdg_stream_path(RelOptInfo *rel, Cost startup, Cost run)
{
	CustomPath *cpath = makeNode(CustomPath);

	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = rel;
	cpath->path.pathtarget = rel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = rel->rows;
	cpath->path.startup_cost = startup;
	cpath->path.total_cost = startup + run;
	cpath->path.pathkeys = NIL;
	cpath->flags = 0;
	cpath->custom_paths = NIL;
	cpath->custom_private = NIL;
	cpath->methods = &kdg_stream_path_methods;
	return cpath;
}

/*
 * Offer the parallel streaming scan of fexpr, whose answer holds about
 * hits hits, beside serial, where the plan may be parallel, the call's
 * arguments are constants (the leader answers it once, whatever the
 * rescans), what is read of its rows is safe in a worker, and the answer
 * is large enough for a worker.
 */
static void
kdg_stream_add_partial(PlannerInfo *root, RelOptInfo *rel, FuncExpr *fexpr,
					   double hits, const CustomPath *serial)
{
	CustomPath *ppath;
	int			workers;
	double		divisor;
	ListCell   *lc;

	if (!root->glob->parallelModeOK || max_parallel_workers_per_gather <= 0)
		return;
	foreach(lc, fexpr->args)
		if (!IsA(lfirst(lc), Const))
			return;
	if (!is_parallel_safe(root, (Node *) rel->reltarget->exprs) ||
		!is_parallel_safe(root, (Node *) rel->baserestrictinfo))
		return;
	workers = Max(compute_parallel_worker(rel, hits * sizeof(KdHit) / BLCKSZ, -1,
										  max_parallel_workers_per_gather),
				  (int) Min(max_parallel_workers_per_gather,
							rel->rows / KDG_STREAM_WORKER_ROWS));
	if (workers < 1)
		return;

	/* the leader's share, as the planner counts it for other scans */
	divisor = workers;
	if (parallel_leader_participation && workers < 4)
		divisor += 1.0 - 0.3 * workers;

	ppath = kdg_stream_path(rel, serial->path.startup_cost + hits * cpu_operator_cost / 8,
							(serial->path.total_cost - serial->path.startup_cost) / divisor);
	ppath->path.parallel_aware = true;
	ppath->path.parallel_safe = true;
	ppath->path.parallel_workers = workers;
	ppath->path.rows = clamp_row_est(rel->rows / divisor);
	rel->consider_parallel = true;
	add_partial_path(rel, &ppath->path);
}

/*
 * PlanCustomPath: the scan returns the function's columns through its own
 * scan tuple (scanrelid 0); custom_exprs hold the call, custom_private
 * which columns are read.
 */
static Plan *
kdg_stream_plan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				List *tlist, List *clauses, List *custom_plans)
{
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
	RangeTblFunction *rtfunc = linitial_node(RangeTblFunction, rte->functions);
	CustomScan *cscan = makeNode(CustomScan);
	Bitmapset  *attrs = NULL;
	List	   *scan_tlist = NIL;
	List	   *needed = NIL;
	TupleDesc	desc = kdg_stream_result((FuncExpr *) rtfunc->funcexpr);

	clauses = extract_actual_clauses(clauses, false);
	pull_varattnos((Node *) tlist, rel->relid, &attrs);
	pull_varattnos((Node *) clauses, rel->relid, &attrs);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		AttrNumber	attno = (AttrNumber) (i + 1);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) makeVar(rel->relid, attno, att->atttypid,
															  att->atttypmod, att->attcollation, 0),
											 attno, NULL, false));
		needed = lappend_int(needed,
							 bms_is_member(attno - FirstLowInvalidHeapAttributeNumber, attrs));
	}
	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = clauses;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->custom_exprs = list_make1(rtfunc->funcexpr);
	cscan->custom_private = list_make1(needed);
	cscan->methods = &kdg_stream_scan_methods;
	return &cscan->scan.plan;
}

/* CreateCustomScanState. */
static Node *
kdg_stream_create_state(CustomScan *cscan)
{
	KdStreamState *st = palloc0(sizeof(KdStreamState));
	List	   *needed = linitial(cscan->custom_private);
	int			i = 0;
	ListCell   *lc;

	NodeSetTag(st, T_CustomScanState);
	st->css.methods = &kdg_stream_exec_methods;
	st->needed = palloc(sizeof(bool) * Max(list_length(needed), 1));
	foreach(lc, needed)
		st->needed[i++] = lfirst_int(lc) != 0;
	return (Node *) st;
}

/* BeginCustomScan: prepare the arguments; the call runs at the first row. */
static void
kdg_stream_begin(CustomScanState *node, EState *estate, int eflags)
{
	KdStreamState *st = (KdStreamState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	st->fexpr = linitial_node(FuncExpr, cscan->custom_exprs);
	st->args = ExecInitExprList(st->fexpr->args, &node->ss.ps);
	st->rowsfn = kdg_rows_function(st->fexpr->funcid);
	fmgr_info_cxt(st->fexpr->funcid, &st->flinfo, estate->es_query_cxt);
	st->flinfo.fn_expr = (Node *) st->fexpr;
	st->cxt = AllocSetContextCreate(estate->es_query_cxt, "kdgpu streamed rows",
									ALLOCSET_DEFAULT_SIZES);
}

/*
 * Evaluate the arguments and answer the call, in st->cxt; a strict function
 * with a NULL argument returns no rows.
 */
static void
kdg_stream_run(KdStreamState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	MemoryContext oldcxt = MemoryContextSwitchTo(st->cxt);
	int			nargs = list_length(st->args);
	FunctionCallInfo fcinfo = palloc0(SizeForFunctionCallInfo(nargs));
	int			i = 0;
	ListCell   *lc;

	st->ran = true;
	InitFunctionCallInfoData(*fcinfo, &st->flinfo, nargs, st->fexpr->inputcollid,
							 NULL, NULL);
	foreach(lc, st->args)
	{
		fcinfo->args[i].value = ExecEvalExpr(lfirst(lc), econtext, &fcinfo->args[i].isnull);
		if (fcinfo->args[i].isnull && st->flinfo.fn_strict)
		{
			MemoryContextSwitchTo(oldcxt);
			return;
		}
		i++;
	}
	st->rows = st->rowsfn(fcinfo);
	MemoryContextSwitchTo(oldcxt);
}

/* ExecScan access method: the next row as a virtual tuple. */
static TupleTableSlot *
kdg_stream_next(ScanState *node)
{
	KdStreamState *st = (KdStreamState *) node;
	TupleTableSlot *slot = node->ss_ScanTupleSlot;

	if (!st->ran)
		kdg_stream_run(st);
	ExecClearTuple(slot);
	while (st->rows != NULL)
	{
		if (kdg_rows_next(st->rows, slot->tts_tupleDescriptor, st->needed,
						  slot->tts_values, slot->tts_isnull))
			return ExecStoreVirtualTuple(slot);
		/* in a parallel query, the rows of the next queries claimed */
		if (st->shared == NULL || !kdg_stream_claim(st->shared, st->rows))
			break;
	}
	return slot;
}

/* ExecScan recheck method: there is nothing to recheck. */
static bool
kdg_stream_recheck(ScanState *node, TupleTableSlot *slot)
{
	return true;
}

/* ExecCustomScan. */
static TupleTableSlot *
kdg_stream_exec(CustomScanState *node)
{
	return ExecScan(&node->ss, kdg_stream_next, kdg_stream_recheck);
}

/*
 * EndCustomScan: free the answer, or unmap the shared one, now rather than
 * at the query's end.
 */
static void
kdg_stream_end(CustomScanState *node)
{
	KdStreamState *st = (KdStreamState *) node;

	MemoryContextDelete(st->cxt);
	kdg_stream_unshare(st->seg);
}

/*
 * ReScanCustomScan: with changed parameters the call runs again; otherwise
 * its rows start over.
 */
static void
kdg_stream_rescan(CustomScanState *node)
{
	KdStreamState *st = (KdStreamState *) node;

	/* parallel: the shared answer stays; kdg_stream_reinit_dsm unclaims it */
	if (st->shared != NULL)
	{
		if (st->rows)
			kdg_rows_seek(st->rows, 0, 0);
	}
	else if (node->ss.ps.chgParam != NULL)
	{
		MemoryContextReset(st->cxt);
		st->rows = NULL;
		st->ran = false;
	}
	else if (st->rows)
		kdg_rows_rewind(st->rows);
}

/* ExplainCustomScan: which function the scan runs. */
static void
kdg_stream_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	KdStreamState *st = (KdStreamState *) node;

	ExplainPropertyText("Function", get_func_name(st->fexpr->funcid), es);
}

/* EstimateDSMCustomScan: the claims' shared state. */
static Size
kdg_stream_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	return kdg_stream_shared_size();
}

/*
 * InitializeDSMCustomScan, in the leader as the parallel query starts:
 * answer the call and share the answer; the private one is freed (but for
 * an answer made in slices, which the leader keeps and returns alone).
 */
static void
kdg_stream_init_dsm(CustomScanState *node, ParallelContext *pcxt,
					void *coordinate)
{
	KdStreamState *st = (KdStreamState *) node;
	MemoryContext oldcxt;
	KdRows	   *shared;
	bool		read_hits;

	kdg_stream_run(st);
	oldcxt = MemoryContextSwitchTo(node->ss.ps.state->es_query_cxt);
	st->shared = coordinate;
	read_hits = st->rows != NULL &&
		kdg_rows_read_hits(st->rows, node->ss.ss_ScanTupleSlot->tts_tupleDescriptor,
						   st->needed);
	shared = kdg_stream_share(st->shared, st->rows, read_hits, &st->seg);
	MemoryContextSwitchTo(oldcxt);
	if (shared != st->rows)
		MemoryContextReset(st->cxt);
	st->rows = shared;
}

/* ReInitializeDSMCustomScan: before a rescan's workers start. */
static void
kdg_stream_reinit_dsm(CustomScanState *node, ParallelContext *pcxt,
					  void *coordinate)
{
	kdg_stream_restart(coordinate);
}

/* InitializeWorkerCustomScan: read the leader's answer. */
static void
kdg_stream_init_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	KdStreamState *st = (KdStreamState *) node;
	MemoryContext oldcxt = MemoryContextSwitchTo(st->cxt);

	st->shared = coordinate;
	st->rows = kdg_stream_attach(st->shared, &st->seg);
	st->ran = true;
	MemoryContextSwitchTo(oldcxt);
}

/* Install the planner hook that offers the scan; from _PG_init. */
void
kdg_stream_scan_install(void)
{
	RegisterCustomScanMethods(&kdg_stream_scan_methods);
	kdg_prev_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = kdg_stream_pathlist;
}
