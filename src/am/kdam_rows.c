/*
 * kdam_rows.c
 *	  The live rows of a kdgpu index's trees, read into memory in TID order,
 *	  for the kd_* functions that take a table's rows from its index
 *	  (local/index_source.c).
 *
 * Every live tree of the forest is read (kdam_load_tree) and its rows that
 * VACUUM has not marked dead are kept, with their packed heap TIDs, then
 * sorted by TID on the engine's threads (kdam_tid_sort.c).  The caller reads
 * the forest's list under a share lock on the metapage, as scans do (a
 * switch to a new list frees the old one's pages at once), and holds a pin
 * on the metapage while the trees are read, the VACUUM interlock (kdam.h):
 * no tree it reads is freed and no reference marked dead meanwhile without
 * the metapage's generation changing, which the caller checks.  Pending, NULL and
 * outside rows are not trees' rows and are not read here.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "kdam.h"

/* What the threads of kdam_read_live_rows share. */
typedef struct KdamRowsPlace
{
	const KdamTidNode *pairs;	/* sorted */
	const double *coords;		/* by node, cstride apart */
	KdSlot	   *rows;
	int			dim;
	int			cstride;
} KdamRowsPlace;

/* kde_parallel_for body: rows begin .. end in TID order, in place. */
static void
rows_place(void *arg, int64_t begin, int64_t end)
{
	const KdamRowsPlace *p = arg;
	int			stride = p->dim + 1;

	for (int64 i = begin; i < end; i++)
	{
		KdSlot	   *row = p->rows + i * stride;
		const double *c = p->coords + p->pairs[i].node * p->cstride;

		for (int d = 0; d < p->dim; d++)
			row[d].coord = c[d];
		row[p->dim].tid = p->pairs[i].tid;
	}
}

/*
 * Read the live rows of index's trees, as forest lists them, into out
 * (palloc'd in the current memory context), sorted by TID.
 */
void
kdam_read_live_rows(Relation index, const KdamMetaPageData *meta,
					const KdamForest *forest, KdamLiveRows *out)
{
	int64		cap = Max(meta->ntree - meta->ndead, 1);
	int			dim = Max(meta->dim, 1);
	double	   *coords;
	KdamTidNode *pairs;
	KdamTidNode *tmp;
	KdamRowsPlace place;
	int64		n = 0;

	coords = palloc_extended(sizeof(double) * dim * cap, MCXT_ALLOC_HUGE);
	pairs = palloc_extended(sizeof(KdamTidNode) * cap, MCXT_ALLOC_HUGE);
	for (int t = 0; t < forest->n; t++)
	{
		MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
												  "kdgpu tree rows",
												  ALLOCSET_DEFAULT_SIZES);
		MemoryContext old = MemoryContextSwitchTo(cxt);
		KdamTree	tree;

		memset(&tree, 0, sizeof(tree));
		CHECK_FOR_INTERRUPTS();
		kdam_load_tree(index, meta, &forest->trees[t], &tree);
		MemoryContextSwitchTo(old);
		for (int64 i = 0; i < tree.tree.n; i++)
		{
			if (tree.tree.refs[i] == KDAM_DEAD_REF)
				continue;
			if (n == cap)
				elog(ERROR, "index \"%s\" holds more live tree rows than its metapage counts",
					 RelationGetRelationName(index));
			memcpy(coords + n * dim, tree.tree.coords + i * meta->dim,
				   sizeof(double) * meta->dim);
			pairs[n].tid = tree.tree.refs[i];
			pairs[n].node = n;
			n++;
		}
		MemoryContextDelete(cxt);
	}
	tmp = palloc_extended(sizeof(KdamTidNode) * Max(n, 1), MCXT_ALLOC_HUGE);
	kdam_sort_tid_nodes(pairs, tmp, n);
	pfree(tmp);
	out->n = n;
	out->dim = meta->dim;
	out->rows = palloc_extended(sizeof(KdSlot) * (meta->dim + 1) * Max(n, 1),
								MCXT_ALLOC_HUGE);
	place.pairs = pairs;
	place.coords = coords;
	place.rows = out->rows;
	place.dim = meta->dim;
	place.cstride = dim;
	if (n > 0)
		kdg_parallel_for(n, 65536, rows_place, &place);
	pfree(pairs);
	pfree(coords);
}
