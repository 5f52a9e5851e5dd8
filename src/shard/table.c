/*
 * table.c
 *	  The table a kd_* function reads: a plain table, or every leaf partition
 *	  of a partitioned table; and how the results identify its rows.
 *
 * A partitioned table is read leaf by leaf, each leaf a source of its own
 * (source.c) in ctid order, so that a leaf's kdgpu index serves it exactly
 * as it serves a plain table (index_tree.c), and the answers of the leaves
 * are merged (table_search.c).  Results identify a row by one of:
 *
 *	ctid	the heap TID, for a plain table (the functions' first form);
 *	part	the partition (regclass) and its TID: the _parts functions.  The
 *			leaves are numbered in OID order and a row's ref is its number
 *			<< 48 | TID, so that ties in distance go by (tableoid, ctid), as
 *			"ORDER BY dist, tableoid, ctid" orders them;
 *	key		an integer column the caller names (key_col): ties go by key,
 *			as "ORDER BY dist, key" orders them.  The key must identify the
 *			row: a NULL key on a row with a point, or one key on two rows
 *			read, is an error.
 *
 * The rights that count are those on the table named, as for a query of a
 * partitioned table: the leaves are read without checks of their own, and
 * when row-level security applies to the partitioned table its policies
 * are applied by reading it through SPI (source.c), not the leaves'.
 *
 * A foreign leaf (postgres_fdw) is not read here: it answers through its
 * server (remote.c), where the remote role's rights and policies apply.
 * When row-level security applies to the partitioned table, its foreign
 * leaves' rows are read through it too (postgres_fdw fetches them, under
 * the remote role's rights and policies as well) and searched here.
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"

#include "shard/shard.h"

/* The leaf partitions of a partitioned table, locked, in OID order. */
static Oid *
kdg_leaves(Oid relid, int *n)
{
	List	   *all = find_all_inheritors(relid, AccessShareLock, NULL);
	Oid		   *oids = palloc(sizeof(Oid) * list_length(all));
	ListCell   *lc;

	*n = 0;
	foreach(lc, all)
	{
		Oid			child = lfirst_oid(lc);
		char		relkind = get_rel_relkind(child);

		if (relkind == RELKIND_PARTITIONED_TABLE)
			continue;
		oids[(*n)++] = child;
	}
	list_free(all);
	qsort(oids, *n, sizeof(Oid), oid_cmp);
	if (*n > KD_MAX_PARTS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("table \"%s\" has %d partitions, more than the %d the kd_* functions read",
						get_rel_name(relid), *n, KD_MAX_PARTS)));
	return oids;
}

/*
 * Open the table relid for reading its point column (colname, or the only
 * one) and, with keyname, its key column; ident is how the function's
 * result identifies rows, fname the function, for hints.
 */
void
kdg_table_open(KdTable *t, Oid relid, Name colname, Name keyname,
			   KdIdent ident, const char *fname)
{
	memset(t, 0, sizeof(*t));
	kdg_source_open(&t->head, relid, colname);
	t->head.fname = fname;
	if (keyname)
		kdg_source_set_key(&t->head, NameStr(*keyname));
	t->ident = ident;
	t->partitioned = get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE;
	if (!t->partitioned)
	{
		t->nparts = 1;
		t->parts = &t->head;
		t->partoids = &t->head.relid;
		return;
	}
	if (ident == KD_IDENT_CTID)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a partitioned table", get_rel_name(relid)),
				 errdetail("ctid does not identify a row across partitions."),
				 errhint("Use %s_parts(), which returns each row's partition and ctid, or name a key column: %s(..., key_col => 'id').",
						 fname, fname)));
	t->partoids = kdg_leaves(relid, &t->nparts);
	t->parts = palloc0(sizeof(KdSource) * Max(t->nparts, 1));
	for (int i = 0; i < t->nparts; i++)
	{
		kdg_source_open_leaf(&t->parts[i], t->partoids[i], &t->head);
		t->parts[i].refbase = (uint64) i << KD_PART_SHIFT;
		if (get_rel_relkind(t->partoids[i]) == RELKIND_FOREIGN_TABLE)
		{
			kdg_remote_open(&t->parts[i]);
			t->nremote++;
		}
	}
}

/*
 * Once the leaves are read: put each in ctid order, and give head the
 * dimension, PostGIS metadata and number of points of them all.
 */
static void
kdg_table_summarize(KdTable *t)
{
	KdSource   *lead = NULL;

	t->head.n = 0;
	for (int i = 0; i < t->nparts; i++)
	{
		KdSource   *leaf = &t->parts[i];

		if (leaf->unsorted)
			kdg_source_sort(leaf);
		if (leaf->n == 0)
			continue;
		if (lead == NULL)
			lead = leaf;
		else
			kdg_source_check_dims(lead, leaf);
		t->head.n += leaf->n;
	}
	if (lead)
	{
		t->head.dim = lead->dim;
		t->head.info = lead->info;
	}
	kdg_check_keys_unique(t);
}

/*
 * Read the visible points of every local leaf, each in ctid order (foreign
 * leaves answer on their servers), and give head the dimension, PostGIS
 * metadata and number of points of them all.
 */
void
kdg_table_read(KdTable *t)
{
	if (!t->partitioned)
	{
		kdg_source_read(&t->head);
		kdg_check_keys_unique(t);
		return;
	}
	if (check_enable_rls(t->head.relid, InvalidOid, false) == RLS_ENABLED)
	{
		/*
		 * The policies hold for the rows of foreign leaves too: postgres_fdw
		 * fetches them through the partitioned table, and they are searched
		 * here like a local leaf's.
		 */
		kdg_sources_spi(t->parts, t->partoids, t->nparts, t->head.relid);
		for (int i = 0; i < t->nparts; i++)
			t->parts[i].remote = NULL;
		t->nremote = 0;
	}
	else
		for (int i = 0; i < t->nparts; i++)
			if (t->parts[i].remote == NULL)
				kdg_source_scan(&t->parts[i]);
	kdg_table_summarize(t);
}

/*
 * Read the visible points of every leaf, foreign ones too, to use them as
 * query points: through SPI on the partitioned table when it has foreign
 * partitions (postgres_fdw fetches theirs, with their ctids there, and
 * the partitioned table's policies apply).
 */
void
kdg_table_read_all(KdTable *t)
{
	if (t->nremote == 0)
	{
		kdg_table_read(t);
		return;
	}
	kdg_sources_spi(t->parts, t->partoids, t->nparts, t->head.relid);
	kdg_table_summarize(t);
}

/* The refs of every point of the table, leaf after leaf, palloc'd. */
uint64 *
kdg_table_refs(const KdTable *t)
{
	uint64	   *refs = kdg_alloc_large(CurrentMemoryContext, sizeof(uint64) * t->head.n, false);
	int64		n = 0;

	for (int p = 0; p < t->nparts; p++)
		for (int64 i = 0; i < t->parts[p].n; i++)
			refs[n++] = kdg_row_ref(&t->parts[p], i);
	return refs;
}

/*
 * The full coordinates of every point of the table, leaf after leaf, to use
 * them as queries (palloc'd).
 */
double *
kdg_table_queries(const KdTable *t)
{
	int			full = t->head.dim + t->head.extra;
	double	   *coords = palloc_extended(sizeof(double) * full * Max(t->head.n, 1),
										 MCXT_ALLOC_HUGE);
	int64		n = 0;

	for (int p = 0; p < t->nparts; p++)
		for (int64 i = 0; i < t->parts[p].n; i++)
			memcpy(coords + full * n++, kdg_row_coords(&t->parts[p], i),
				   sizeof(double) * full);
	return coords;
}
