/*
 * kdam_forest.c
 *	  The forest of a kdgpu index: the list of its trees on forest pages.
 *
 * The metapage names the first forest page (forest_head) and the number of
 * live trees it lists (ntrees); each forest page holds KDAM_FOREST_ENTRIES
 * fixed-size KdamTreeEntry records (see kdam.h).  The list is never
 * changed in place: a change writes a whole new chain of forest pages
 * (kdam_forest_write) and switches the metapage to it, and the old chain
 * is freed.  Scans read the list under a share lock on the metapage, so
 * they see the list before or after a switch, never half of one.  Trees a
 * merge retired are listed on a chain of their own (retired_head to
 * retired_tail, nretired entries), which a switch extends by linking new
 * pages to its tail, so scans never read them and VACUUM finds them to
 * free.
 *
 * Every switch bumps the metapage's generation, so a scan that finds the
 * generation and forest head of the list its backend read last takes the
 * entries from the index's relation cache and reads no forest page
 * (kdam_forest_read_cached): one page fewer per scan with up to
 * KDAM_FOREST_ENTRIES trees, several fewer for the hundreds of trees of a
 * forest built at the default maintenance_work_mem from 100M rows.
 *
 * The index's relation cache (kdam_relcache) lives here too, with the
 * point type of the index's column (kdam_index_type), which every other
 * file of the index reads.
 */
#include "postgres.h"

#include <math.h>

#include "access/generic_xlog.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "kdam.h"

/* Read count entries of the forest pages chained from head into list. */
static void
read_list(Relation index, BlockNumber head, int count, KdamForest *list)
{
	BlockNumber blkno = head;

	list->n = 0;
	list->trees = palloc(sizeof(KdamTreeEntry) * Max(count, 1));
	while (blkno != InvalidBlockNumber && list->n < count)
	{
		Buffer		buf = ReadBuffer(index, blkno);
		Page		page;
		int			n;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (!(KdamPageGetOpaque(page)->flags & KDAM_FOREST))
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("index \"%s\" has a broken forest chain at block %u",
							RelationGetRelationName(index), blkno)));
		n = (((PageHeader) page)->pd_lower - MAXALIGN(SizeOfPageHeaderData)) /
			sizeof(KdamTreeEntry);
		n = Min(n, count - list->n);
		memcpy(list->trees + list->n, PageGetContents(page),
			   sizeof(KdamTreeEntry) * n);
		list->n += n;
		blkno = KdamPageGetOpaque(page)->next;
		UnlockReleaseBuffer(buf);
	}
	if (list->n != count)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" lists %d trees of the %d its metapage counts",
						RelationGetRelationName(index), list->n, count)));
}

/*
 * Read the forest's live trees in CurrentMemoryContext.  The caller holds
 * a lock on the metapage, so the list does not change.
 */
void
kdam_forest_read(Relation index, const KdamMetaPageData *meta,
				 KdamForest *forest)
{
	read_list(index, meta->forest_head, meta->ntrees, forest);
}

/* The index's relation cache (KdamRelCache), made on first use. */
KdamRelCache *
kdam_relcache(Relation index)
{
	KdamRelCache *c = (KdamRelCache *) index->rd_amcache;

	if (c == NULL)
	{
		c = MemoryContextAllocZero(index->rd_indexcxt, sizeof(*c));
		c->forest_n = -1;
		index->rd_amcache = c;
	}
	return c;
}

/*
 * The point type of the index's column, kept in the relation cache after
 * its first use (a geometry index's opclass is looked up in the catalogs).
 */
KdPointType
kdam_index_type(Relation index)
{
	KdamRelCache *c = kdam_relcache(index);
	KdPointType type;

	if (c->type != KD_TYPE_NONE)
		return c->type;
	type = kdg_point_type(index->rd_opcintype[0]);
	if (type == KD_TYPE_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("kdgpu indexes point and float8[] columns, not %s",
						format_type_be(index->rd_opcintype[0]))));
	c->type = kdam_postgis_index_type(index, type);
	return c->type;
}

/* Drop the relation cache: a build (an in-place TRUNCATE too) starts anew. */
void
kdam_relcache_forget(Relation index)
{
	KdamRelCache *c = (KdamRelCache *) index->rd_amcache;

	if (c == NULL)
		return;
	if (c->forest_trees)
		pfree(c->forest_trees);
	pfree(c);
	index->rd_amcache = NULL;
}

/*
 * The live trees of the metapage image meta (*n of them) for a scan: from
 * the relation cache when it holds the list read at meta's generation and
 * forest head, else read and kept there.  The entries belong to the cache:
 * the caller copies what it needs before anything that may process
 * invalidation messages (a lock, a catalog lookup), which may drop them.
 */
const KdamTreeEntry *
kdam_forest_read_cached(Relation index, const KdamMetaPageData *meta, int *n)
{
	KdamRelCache *c = kdam_relcache(index);

	if (c->forest_n != meta->ntrees || c->forest_generation != meta->generation ||
		c->forest_head != meta->forest_head)
	{
		KdamForest	read;

		kdam_forest_read(index, meta, &read);
		if (c->forest_trees)
			pfree(c->forest_trees);
		c->forest_trees = NULL;
		c->forest_n = -1;
		c->forest_trees = MemoryContextAlloc(index->rd_indexcxt,
											 sizeof(KdamTreeEntry) * Max(read.n, 1));
		memcpy(c->forest_trees, read.trees, sizeof(KdamTreeEntry) * read.n);
		pfree(read.trees);
		c->forest_n = read.n;
		c->forest_generation = meta->generation;
		c->forest_head = meta->forest_head;
	}
	*n = c->forest_n;
	return c->forest_trees;
}

/* Read the retired trees, as kdam_forest_read reads the live ones. */
void
kdam_retired_read(Relation index, const KdamMetaPageData *meta,
				  KdamForest *retired)
{
	read_list(index, meta->retired_head, meta->nretired, retired);
}

/*
 * Write a list of trees to a new chain of forest pages, with wal each
 * logged as a full image (CREATE INDEX logs its pages at its end); returns
 * its head (InvalidBlockNumber for no entries) and, when tail is not NULL,
 * sets *tail to its last page.  No scan reaches the chain until the
 * metapage is switched to it.
 */
BlockNumber
kdam_forest_write(Relation index, const KdamForest *forest, bool wal,
				  BlockNumber *tail)
{
	KdamPageChain chain = KDAM_PAGE_CHAIN(index, wal);
	BlockNumber blkno = InvalidBlockNumber;

	for (int i = 0; i < forest->n; i += KDAM_FOREST_ENTRIES)
	{
		int			count = Min(KDAM_FOREST_ENTRIES, forest->n - i);
		Page		page = kdam_chain_add(&chain, KDAM_FOREST, &blkno);

		memcpy(PageGetContents(page), forest->trees + i,
			   sizeof(KdamTreeEntry) * count);
		((PageHeader) page)->pd_lower += sizeof(KdamTreeEntry) * count;
	}
	if (tail)
		*tail = blkno;
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

/*
 * Read index's metapage (left pinned in *metabuf, for the caller to
 * release) and live trees, and put the largest one (the first of equals),
 * the one the kd_* functions search (index_tree.c), in *entry; false when
 * there is none.
 */
bool
kdam_largest_tree(Relation index, Buffer *metabuf, KdamMetaPageData *meta,
				  KdamTreeEntry *entry)
{
	KdamForest	forest;
	int			best = -1;

	*metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	LockBuffer(*metabuf, BUFFER_LOCK_SHARE);
	*meta = *kdam_metapage(index, BufferGetPage(*metabuf));
	kdam_forest_read(index, meta, &forest);
	LockBuffer(*metabuf, BUFFER_LOCK_UNLOCK);
	for (int i = 0; i < forest.n; i++)
		if (best < 0 || forest.trees[i].n > forest.trees[best].n)
			best = i;
	if (best >= 0)
		*entry = forest.trees[best];
	if (forest.trees)
		pfree(forest.trees);
	return best >= 0;
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
