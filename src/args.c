/*
 * args.c
 *	  The leading arguments of the table-reading functions.
 *
 * Each table-reading function exists with and without a column name after
 * the table: f(rel, ...) finds the table's only point column, f(rel, col,
 * ...) names it.  One C function serves both; it tells them apart by the
 * declared type of its second argument, read once from pg_proc and kept in
 * fn_extra.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/lsyscache.h"

#include "kdgpu.h"

/* Parse rel [, col] and open the table's point column for reading. */
void
kdg_args(FunctionCallInfo fcinfo, KdArgs *args, KdSource *src)
{
	FmgrInfo   *flinfo = fcinfo->flinfo;
	KdArgs	   *sig = (KdArgs *) flinfo->fn_extra;

	if (sig == NULL)
	{
		Oid		   *argtypes;
		int			nargs;

		get_func_signature(flinfo->fn_oid, &argtypes, &nargs);
		sig = MemoryContextAllocZero(flinfo->fn_mcxt, sizeof(KdArgs));
		sig->argtypes = MemoryContextAlloc(flinfo->fn_mcxt, sizeof(Oid) * Max(nargs, 1));
		memcpy(sig->argtypes, argtypes, sizeof(Oid) * nargs);
		sig->nargs = nargs;
		sig->next = (nargs > 1 && argtypes[1] == NAMEOID) ? 2 : 1;
		flinfo->fn_extra = sig;
	}
	*args = *sig;
	args->relid = PG_GETARG_OID(0);
	args->colname = args->next == 2 ? PG_GETARG_NAME(1) : NULL;
	kdg_source_open(src, args->relid, args->colname);
	src->fname = get_func_name(flinfo->fn_oid);
}
