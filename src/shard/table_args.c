/*
 * table_args.c
 *	  The leading arguments of the table-reading functions, and how their
 *	  results identify rows.
 *
 * Each table-reading function exists with and without a column name after
 * the table: f(rel, ...) finds the table's only point column, f(rel, col,
 * ...) names it.  One C function serves both; it tells them apart by the
 * declared type of its second argument, read once from pg_proc and kept in
 * fn_extra with the arguments' names, by which later arguments are found.
 * The same C function also serves the forms that return a key (an argument
 * called key_col) and the _parts forms (a regclass column in the result).
 * For a table with foreign partitions it also writes the call that those
 * partitions run on their servers (remote.c).  The kNN functions' forms
 * with a metric argument (a kd_metric) set the sources' metric, which
 * sends their searches flat (local/flat_search.c).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "shard/shard.h"

/* Whether the function's result names partitions (nn_rel, nn_rels). */
static bool
kdg_result_names_partitions(Oid fn_oid)
{
	TupleDesc	desc;

	if (get_func_result_type(fn_oid, NULL, &desc) != TYPEFUNC_COMPOSITE)
		return false;
	for (int i = 0; i < desc->natts; i++)
		if (strncmp(NameStr(TupleDescAttr(desc, i)->attname), "nn_rel", 6) == 0)
			return true;
	return false;
}

/* The signature of the function called, read once per call site. */
static KdArgs *
kdg_signature(FmgrInfo *flinfo)
{
	HeapTuple	proc;
	Oid		   *argtypes;
	char	  **argnames;
	char	   *argmodes;
	int			nall;
	KdArgs	   *sig;
	MemoryContext oldcxt;

	proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(flinfo->fn_oid));
	if (!HeapTupleIsValid(proc))
		elog(ERROR, "cache lookup failed for function %u", flinfo->fn_oid);
	oldcxt = MemoryContextSwitchTo(flinfo->fn_mcxt);
	nall = get_func_arg_info(proc, &argtypes, &argnames, &argmodes);
	sig = palloc0(sizeof(KdArgs));
	sig->argtypes = palloc(sizeof(Oid) * Max(nall, 1));
	sig->argnames = palloc0(sizeof(char *) * Max(nall, 1));
	/* the input arguments only, in order */
	for (int i = 0; i < nall; i++)
	{
		if (argmodes && argmodes[i] != PROARGMODE_IN &&
			argmodes[i] != PROARGMODE_INOUT && argmodes[i] != PROARGMODE_VARIADIC)
			continue;
		sig->argtypes[sig->nargs] = argtypes[i];
		sig->argnames[sig->nargs++] = argnames ? argnames[i] : NULL;
	}
	sig->next = (sig->nargs > 1 && sig->argtypes[1] == NAMEOID) ? 2 : 1;
	MemoryContextSwitchTo(oldcxt);
	ReleaseSysCache(proc);
	if (kdg_argno(sig, "key_col") >= 0)
		sig->ident = KD_IDENT_KEY;
	else if (kdg_result_names_partitions(flinfo->fn_oid))
		sig->ident = KD_IDENT_PART;
	else
		sig->ident = KD_IDENT_CTID;
	return sig;
}

/* The position of the input argument called name, or -1. */
int
kdg_argno(const KdArgs *args, const char *name)
{
	for (int i = 0; i < args->nargs; i++)
		if (args->argnames[i] && strcmp(args->argnames[i], name) == 0)
			return i;
	return -1;
}

/*
 * What foreign partitions of t run (remote.c): the same function, in its
 * plain-table form (no _parts suffix; in the same schema there), with the
 * arguments after the table and column up to the key column.
 */
static void
kdg_remote_call(FunctionCallInfo fcinfo, const KdArgs *args, KdTable *t,
				int keyarg)
{
	char	   *fn = get_func_name(fcinfo->flinfo->fn_oid);
	char	   *suffix = strstr(fn, "_parts");
	StringInfoData buf;

	if (suffix)
		*suffix = '\0';
	initStringInfo(&buf);
	for (int i = args->next; i < (keyarg >= 0 ? keyarg : args->nargs); i++)
		appendStringInfo(&buf, "%s%s", i > args->next ? ", " : "",
						 kdg_remote_param(&t->rparams, PG_GETARG_DATUM(i), args->argtypes[i]));
	t->rschema = pstrdup(quote_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid))));
	t->rargs = buf.data;
	t->rbatched = strstr(fn, "_join") != NULL;
	t->rdistance = strcmp(fn, "kd_box") != 0;
	/* a kNN join's answers come in chunks, from kd_knn_join_chunks */
	t->rchunks = strcmp(fn, "kd_knn_join") == 0;
	t->rfn = t->rchunks ?
		psprintf("%s.kd_knn_join_chunks", kdg_remote_kdgpu_schema()) :
		psprintf("%s.%s", t->rschema, quote_identifier(fn));
}

/* Parse rel [, col] [, key_col] and open the table for reading. */
void
kdg_args(FunctionCallInfo fcinfo, KdArgs *args, KdTable *t)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	int			keyarg;
	int			metricarg;

	if (flinfo->fn_extra == NULL)
		flinfo->fn_extra = kdg_signature(flinfo);
	*args = *(KdArgs *) flinfo->fn_extra;
	args->relid = PG_GETARG_OID(0);
	args->colname = args->next == 2 ? PG_GETARG_NAME(1) : NULL;
	keyarg = kdg_argno(args, "key_col");
	metricarg = kdg_argno(args, "metric");
	/* a new call: kd_status() tells where its tables' rows came from */
	kdg_last_source[0] = '\0';
	kdg_table_open(t, args->relid, args->colname,
				   keyarg >= 0 ? PG_GETARG_NAME(keyarg) : NULL, args->ident,
				   get_func_name(flinfo->fn_oid));
	if (metricarg >= 0)
	{
		if (t->nremote > 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s with a metric does not search foreign partitions",
							get_func_name(flinfo->fn_oid)),
					 errhint("Call it on each server's table, or leave the metric out for Euclidean distance.")));
		t->head.metric = kdg_metric_of(PG_GETARG_DATUM(metricarg));
		for (int p = 0; p < t->nparts; p++)
			t->parts[p].metric = t->head.metric;
	}
	if (t->nremote > 0)
		kdg_remote_call(fcinfo, args, t, keyarg);
}
