/*
 * where.c
 *	  Naming where a point came from in error messages: a row of a table, an
 *	  argument, or an element of an array argument (KdWhere).
 *
 * The readers of points (datum.c, postgis.c, source.c) report bad values
 * through this one helper, so that every message names its value the same
 * way.
 */
#include "postgres.h"

#include "utils/lsyscache.h"

#include "point/point.h"

/* Describe where a value came from, for an error message. */
char *
kdg_where_text(const KdWhere *where)
{
	if (where->arg == NULL)
		return psprintf("row (%u,%u) of table \"%s\"",
						ItemPointerGetBlockNumberNoCheck(&where->tid),
						ItemPointerGetOffsetNumberNoCheck(&where->tid),
						get_rel_name(where->relid));
	if (where->ord > 0)
		return psprintf("element %lld of argument \"%s\"",
						(long long) where->ord, where->arg);
	return psprintf("argument \"%s\"", where->arg);
}
