/*
 * kdam_rows.c
 *	  The live rows of a kdgpu index's trees, read into memory in TID order,
 *	  for the kd_* functions that take a table's rows from its index
 *	  (local/index_source.c).
 *
 * Every live tree of the forest is read (kdam_load_tree) and its rows that
 * VACUUM has not marked dead are kept, with their packed heap TIDs, then
 * sorted by TID (kdam_tid_sort.c) and laid out as rows.  Taking the live
 * rows out of each tree, the sort and the layout run on the engine's
 * threads (the pages are read by the backend), since a first call's
 * reading of a large index was bound by these copies on one.  The caller
 * reads the forest's list under a share lock on the metapage, as scans do
 * (a switch to a new list frees the old one's pages at once), and holds a
 * pin on the metapage while the trees are read, the VACUUM interlock
 * (kdam.h): no tree it reads is freed and no reference marked dead
 * meanwhile without the metapage's generation changing, which the caller
 * checks.  Pending, NULL and outside rows are not trees' rows and are not
 * read here.
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

/* At least this many nodes a task of a tree's take. */
#define KDAM_TAKE_BLOCK ((int64) 1 << 16)

/* What the threads taking one tree's live rows share. */
typedef struct KdamRowsTake
{
	const KdTree *tree;
	int			dim;
	int			cstride;		/* of coords */
	double	   *coords;			/* the rows taken, in the order taken */
	KdamTidNode *pairs;			/* and their TIDs and places */
	int64		ntasks;
	int64	   *at;				/* per task: its live rows, then its first place */
} KdamRowsTake;

/*
 * With write false, count the live rows of task b of the tree; with it,
 * take them into their places.
 */
static void
take_task(KdamRowsTake *t, int64 b, bool write)
{
	const KdTree *tree = t->tree;
	int64		at = write ? t->at[b] : 0;

	for (int64 i = tree->n * b / t->ntasks; i < tree->n * (b + 1) / t->ntasks; i++)
	{
		if (tree->refs[i] == KDAM_DEAD_REF)
			continue;
		if (write)
		{
			memcpy(t->coords + at * t->cstride, tree->coords + i * t->dim,
				   sizeof(double) * t->dim);
			t->pairs[at].tid = tree->refs[i];
			t->pairs[at].node = at;
		}
		at++;
	}
	if (!write)
		t->at[b] = at;
}

/* kde_parallel_for body: count the live rows of tasks begin .. end. */
static void
take_count(void *arg, int64_t begin, int64_t end)
{
	for (int64 b = begin; b < end; b++)
		take_task(arg, b, false);
}

/* kde_parallel_for body: take the live rows of tasks begin .. end. */
static void
take_write(void *arg, int64_t begin, int64_t end)
{
	for (int64 b = begin; b < end; b++)
		take_task(arg, b, true);
}

/*
 * Take the live rows of a loaded tree after the n taken (of at most cap),
 * on the engine's threads; returns the new n.
 */
static int64
take_tree(Relation index, KdamRowsTake *take, const KdTree *tree, int64 n,
		  int64 cap)
{
	take->tree = tree;
	take->ntasks = Max(1, Min(4 * kdg_cpu_threads(), tree->n / KDAM_TAKE_BLOCK));
	take->at = palloc(sizeof(int64) * take->ntasks);
	kdg_parallel_for(take->ntasks, 1, take_count, take);
	for (int64 b = 0; b < take->ntasks; b++)
	{
		int64		live = take->at[b];

		take->at[b] = n;
		n += live;
	}
	if (n > cap)
		elog(ERROR, "index \"%s\" holds more live tree rows than its metapage counts",
			 RelationGetRelationName(index));
	kdg_parallel_for(take->ntasks, 1, take_write, take);
	pfree(take->at);
	return n;
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
	KdamRowsTake take;
	int64		n = 0;

	coords = palloc_extended(sizeof(double) * dim * cap, MCXT_ALLOC_HUGE);
	pairs = palloc_extended(sizeof(KdamTidNode) * cap, MCXT_ALLOC_HUGE);
	take.dim = meta->dim;
	take.cstride = dim;
	take.coords = coords;
	take.pairs = pairs;
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
		if (tree.tree.n > 0)
			n = take_tree(index, &take, &tree.tree, n, cap);
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
