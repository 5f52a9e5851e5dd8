/*
 * kdam_forest.c
 *	  The forest of a kdgpu index: the list of its trees on forest pages.
 *
 * The metapage names the first forest page (forest_head) and the number of
 * entries (ntrees); each forest page holds KDAM_FOREST_ENTRIES fixed-size
 * KdamTreeEntry records, live trees and retired ones (see kdam.h).  The
 * list is never changed in place but for the dead counts VACUUM keeps: a
 * change writes a whole new chain of forest pages (kdam_forest_write) and
 * switches the metapage to it, and the old chain is freed.  Scans read the
 * list under a share lock on the metapage, so they see the list before or
 * after a switch, never half of one.
 */
#include "postgres.h"

#include <math.h>

#include "access/generic_xlog.h"
#include "miscadmin.h"
#include "utils/rel.h"

#include "kdam.h"

/*
 * Read the forest's entries (live and retired) in CurrentMemoryContext.
 * The caller holds a lock on the metapage, so the list does not change.
 */
void
kdam_forest_read(Relation index, const KdamMetaPageData *meta,
				 KdamForest *forest)
{
	BlockNumber blkno = meta->forest_head;

	forest->n = 0;
	forest->trees = palloc(sizeof(KdamTreeEntry) * Max(meta->ntrees, 1));
	while (blkno != InvalidBlockNumber && forest->n < meta->ntrees)
	{
		Buffer		buf = ReadBuffer(index, blkno);
		Page		page;
		int			count;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (!(KdamPageGetOpaque(page)->flags & KDAM_FOREST))
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("index \"%s\" has a broken forest chain at block %u",
							RelationGetRelationName(index), blkno)));
		count = (((PageHeader) page)->pd_lower - MAXALIGN(SizeOfPageHeaderData)) /
			sizeof(KdamTreeEntry);
		count = Min(count, meta->ntrees - forest->n);
		memcpy(forest->trees + forest->n, PageGetContents(page),
			   sizeof(KdamTreeEntry) * count);
		forest->n += count;
		blkno = KdamPageGetOpaque(page)->next;
		UnlockReleaseBuffer(buf);
	}
	if (forest->n != meta->ntrees)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" lists %d trees of the %d its metapage counts",
						RelationGetRelationName(index), forest->n, meta->ntrees)));
}

/*
 * Write the forest's entries to a new chain of forest pages, with wal each
 * logged as a full image (CREATE INDEX logs its pages at its end); returns
 * its head (InvalidBlockNumber for no entries).  No scan reaches the chain
 * until the metapage is switched to it.
 */
BlockNumber
kdam_forest_write(Relation index, const KdamForest *forest, bool wal)
{
	KdamPageChain chain = KDAM_PAGE_CHAIN(index, wal);

	for (int i = 0; i < forest->n; i += KDAM_FOREST_ENTRIES)
	{
		int			count = Min(KDAM_FOREST_ENTRIES, forest->n - i);
		BlockNumber blkno;
		Page		page = kdam_chain_add(&chain, KDAM_FOREST, &blkno);

		memcpy(PageGetContents(page), forest->trees + i,
			   sizeof(KdamTreeEntry) * count);
		((PageHeader) page)->pd_lower += sizeof(KdamTreeEntry) * count;
	}
	return kdam_chain_end(&chain);
}

/* Add an entry to a forest read by kdam_forest_read (or made empty). */
void
kdam_forest_add(KdamForest *forest, const KdamTreeEntry *entry)
{
	forest->trees = forest->trees
		? repalloc(forest->trees, sizeof(KdamTreeEntry) * (forest->n + 1))
		: palloc(sizeof(KdamTreeEntry) * (forest->n + 1));
	forest->trees[forest->n++] = *entry;
}

/* The number of live trees of a forest. */
int64
kdam_forest_live(const KdamForest *forest)
{
	int64		live = 0;

	for (int i = 0; i < forest->n; i++)
		live += !forest->trees[i].retired;
	return live;
}

/* The bounding box of n points (low corner, then high) into box. */
void
kdam_tree_box(const double *coords, int64 n, int dim, double *box)
{
	for (int j = 0; j < dim; j++)
	{
		box[j] = INFINITY;
		box[dim + j] = -INFINITY;
	}
	for (int64 i = 0; i < n; i++)
		for (int j = 0; j < dim; j++)
		{
			double		v = coords[i * dim + j];

			box[j] = Min(box[j], v);
			box[dim + j] = Max(box[dim + j], v);
		}
}

/* Free the block and directory pages of a tree no scan reads. */
void
kdam_free_tree_pages(Relation index, const KdamTreeEntry *entry)
{
	kdam_free_chain(index, entry->head);
	kdam_free_chain(index, entry->dirhead);
}
