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
 * kdg_sort_refs(refs, n): sort refs ascending, the comparison inlined
 * (lib/sort_template.h).
 */
#define ST_SORT kdg_sort_refs
#define ST_ELEMENT_TYPE uint64
#define ST_COMPARE(a, b) ((*(a) > *(b)) - (*(a) < *(b)))
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* What the threads of kdg_parallel_sort_refs share: runs of refs. */
typedef struct KdRefRuns
{
	uint64	   *a;				/* the runs */
	uint64	   *out;			/* where merged pairs of runs go */
	int64		n;
	int64		run;			/* the length of a run */
} KdRefRuns;

/* kde_parallel_for body: sort runs begin .. end. */
static void
kdg_sort_runs(void *arg, int64_t begin, int64_t end)
{
	KdRefRuns  *r = arg;

	for (int64 i = begin; i < end; i++)
	{
		int64		lo = i * r->run;

		kdg_sort_refs(r->a + lo, Min(r->run, r->n - lo));
	}
}

/* kde_parallel_for body: merge pairs of runs begin .. end into out. */
static void
kdg_merge_runs(void *arg, int64_t begin, int64_t end)
{
	KdRefRuns  *r = arg;

	for (int64 i = begin; i < end; i++)
	{
		int64		lo = 2 * i * r->run;
		int64		mid = Min(lo + r->run, r->n);
		int64		hi = Min(mid + r->run, r->n);
		int64		x = lo,
					y = mid,
					o = lo;

		while (x < mid && y < hi)
			r->out[o++] = r->a[y] < r->a[x] ? r->a[y++] : r->a[x++];
		while (x < mid)
			r->out[o++] = r->a[x++];
		while (y < hi)
			r->out[o++] = r->a[y++];
	}
}

/*
 * Sort n refs ascending on the engine's threads: a run per thread sorted,
 * then pairs of runs merged, pass after pass: an inline comparison on
 * every thread, where qsort() calls a comparator function on one.
 */
static void
kdg_parallel_sort_refs(uint64 *refs, int64 n)
{
	KdRefRuns	r = {refs, NULL, n, n};
	int64		nruns = Max(1, Min(kdg_cpu_threads(), n / 65536));

	r.run = (n + nruns - 1) / nruns;
	kdg_parallel_for(nruns, 1, kdg_sort_runs, &r);
	if (r.run >= n)
		return;
	r.out = palloc_extended(sizeof(uint64) * n, MCXT_ALLOC_HUGE);
	for (; r.run < n; r.run *= 2)
	{
		uint64	   *swap = r.a;

		kdg_parallel_for((n + 2 * r.run - 1) / (2 * r.run), 1, kdg_merge_runs, &r);
		r.a = r.out;
		r.out = swap;
	}
	if (r.a != refs)
	{
		memcpy(refs, r.a, sizeof(uint64) * n);
		pfree(r.a);
	}
	else
		pfree(r.out);
}

/* Error unless no two rows read have the same key. */
void
kdg_check_keys_unique(const KdTable *t)
{
	int64		n = t->head.n;
	uint64	   *keys;

	/* rows taken from an index: a unique index on the key vouches */
	if (t->head.keyattnum == InvalidAttrNumber || n < 2 || t->head.index_rows)
		return;
	keys = kdg_table_refs(t);
	kdg_parallel_sort_refs(keys, n);
	for (int64 i = 1; i < n; i++)
		if (keys[i] == keys[i - 1])
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("key column \"%s\" of table \"%s\" has the value " INT64_FORMAT " in more than one row",
							t->head.keyname, get_rel_name(t->head.relid),
							kdg_ref_to_key(keys[i])),
					 errhint("A key column must identify the row, as a primary key does.")));
	pfree(keys);
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
	uint64	   *refs = palloc_extended(sizeof(uint64) * Max(t->head.n, 1),
									   MCXT_ALLOC_HUGE);
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
