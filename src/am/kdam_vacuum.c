/*
 * kdam_vacuum.c
 *	  VACUUM for the kdgpu access method.
 *
 * ambulkdelete takes a cleanup lock on the metapage, which waits for every
 * scan in flight to end (scans pin the metapage) and keeps new ones out,
 * marks the references of dead tree rows KDAM_DEAD_REF in place, compacts
 * the pending, null and outside pages, and bumps the generation so cached
 * trees are reloaded and a merge in flight gives up.
 *
 * amvacuumcleanup takes the merge lock (kdam_merge.c).  When the metapage's
 * orphans mark is set (a flush or merge failed, or the server crashed), it
 * reads every page and frees those no chain reaches.  It turns the pending
 * rows into a tree and merges trees of like size within
 * maintenance_work_mem, rebuilds trees that are mostly dead.  Before and
 * after, under a cleanup lock on the metapage (no scan in flight), it frees
 * the trees merges retired, so that its own merges reuse their pages.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/xlog.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/indexfsm.h"
#include "utils/rel.h"

#include "kdam.h"

/* Mark dead references on a tree's pages; returns how many were marked. */
static int64
delete_from_tree(Relation index, const KdamMetaPageData *meta,
				 const KdamTreeEntry *entry, IndexBulkDeleteCallback callback,
				 void *callback_state)
{
	KdamTreeShape shape;
	BlockNumber blkno = entry->head;
	int64		marked = 0;

	kdam_tree_shape(entry->n, meta->dim, meta->payload_words, entry->nbounds,
					&shape);
	while (blkno != InvalidBlockNumber)
	{
		Buffer		buf = ReadBuffer(index, blkno);

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		blkno = KdamPageGetOpaque(BufferGetPage(buf))->next;
		marked += kdam_block_delete(index, buf, &shape, callback, callback_state);
		UnlockReleaseBuffer(buf);
	}
	return marked;
}

/* ambulkdelete */
IndexBulkDeleteResult *
kdam_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
				IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	KdamMetaPage meta;
	KdamMetaPageData m;
	KdamForest	forest;
	int64		marked = 0,
				removed,
				removed_flush,
				removed_nulls,
				removed_outside;
	Size		pendsize;

	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	LockBufferForCleanup(metabuf);
	m = *kdam_metapage(index, BufferGetPage(metabuf));
	kdam_forest_read(index, &m, &forest);
	for (int t = 0; t < forest.n; t++)
	{
		int64		n;

		if (forest.trees[t].retired)
			continue;
		n = delete_from_tree(index, &m, &forest.trees[t], callback,
							 callback_state);
		forest.trees[t].ndead += n;
		marked += n;
	}
	pendsize = kdam_pending_record_size(m.dim, m.payload_words);
	removed = kdam_lanes_delete(index, pendsize, callback, callback_state);
	removed_flush = kdam_chain_delete(index, m.flush_head, pendsize, callback,
									  callback_state);
	removed_nulls = kdam_chain_delete(index, m.null_head,
									  kdam_pending_record_size(0, m.payload_words),
									  callback, callback_state);
	removed_outside = kdam_chain_delete(index, m.outside_head,
										kdam_pending_record_size(KDAM_OUTSIDE_COORDS,
																 m.payload_words),
										callback, callback_state);
	if (marked + removed + removed_flush + removed_nulls + removed_outside > 0)
	{
		GenericXLogState *state;
		BlockNumber head = m.forest_head;

		/* a new list with the trees' dead counts */
		if (marked > 0)
		{
			kdam_set_orphans(index, metabuf, 1);
			head = kdam_forest_write(index, &forest, true);
		}
		state = GenericXLogStart(index);
		meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
		meta->forest_head = head;
		meta->ndead += marked;
		meta->nflush -= removed_flush;
		meta->nnull -= removed_nulls;
		meta->noutside -= removed_outside;
		meta->generation++;
		GenericXLogFinish(state);
		if (marked > 0)
		{
			kdam_free_chain(index, m.forest_head);
			kdam_set_orphans(index, metabuf, m.orphans);
		}
	}
	meta = KdamPageGetMeta(BufferGetPage(metabuf));
	stats->tuples_removed += marked + removed + removed_flush + removed_nulls +
		removed_outside;
	stats->num_index_tuples = kdam_index_rows(index, meta);
	UnlockReleaseBuffer(metabuf);
	return stats;
}

/*
 * Flag orphaned pages free and record every free page in the free space
 * map; the metapage is locked for cleanup, so the chains stay still.
 */
static void
reclaim_pages(IndexVacuumInfo *info, const KdamMetaPageData *meta,
			  IndexBulkDeleteResult *stats)
{
	Relation	index = info->index;
	KdamCensus	census;

	kdam_page_census(index, meta, info->strategy, &census);
	for (BlockNumber blkno = 0; blkno < census.nblocks; blkno++)
	{
		if (census.kind[blkno] == KDAM_PAGE_ORPHAN)
		{
			Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno,
												 RBM_NORMAL, info->strategy);
			GenericXLogState *state;

			LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
			state = GenericXLogStart(index);
			kdam_init_page(GenericXLogRegisterBuffer(state, buf,
													 GENERIC_XLOG_FULL_IMAGE),
						   KDAM_FREE);
			GenericXLogFinish(state);
			UnlockReleaseBuffer(buf);
		}
		if (census.kind[blkno] != KDAM_PAGE_IN_USE)
			RecordFreeIndexPage(index, blkno);
	}
	IndexFreeSpaceMapVacuum(index);
	stats->pages_free = census.nfree + census.norphan;
	if (census.norphan > 0)
		ereport(LOG,
				(errmsg("index \"%s\": freed %u pages left by an interrupted build, flush or merge",
						RelationGetRelationName(index), census.norphan)));
	pfree(census.kind);
}

/*
 * Rebuild trees after the flush and merges: the whole forest as one tree
 * when it has several trees or dead rows and fits in mem bytes (as the
 * kd_* functions want it), else each tree more than a tenth dead that
 * fits.  The caller holds the merge lock.
 */
static void
rebuild_trees(Relation index, Size mem)
{
	for (;;)
	{
		Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
		KdamMetaPageData m;
		KdamForest	forest;
		KdamForest	pick = {0, NULL};
		Size		need = 0;

		LockBuffer(metabuf, BUFFER_LOCK_SHARE);
		m = *kdam_metapage(index, BufferGetPage(metabuf));
		kdam_forest_read(index, &m, &forest);
		UnlockReleaseBuffer(metabuf);
		for (int t = 0; t < forest.n; t++)
			if (!forest.trees[t].retired)
			{
				kdam_forest_add(&pick, &forest.trees[t]);
				need = Max(need, kdam_tree_stream_size(&m, &forest.trees[t]));
			}
		if ((pick.n < 2 && m.ndead == 0) ||
			kdam_build_memory(m.ntree, m.dim, m.payload_words) + need > mem)
		{
			pick.n = 0;
			for (int t = 0; t < forest.n && pick.n == 0; t++)
				if (!forest.trees[t].retired &&
					forest.trees[t].ndead * 10 > forest.trees[t].n &&
					kdam_build_memory(forest.trees[t].n, m.dim, m.payload_words) +
					kdam_tree_stream_size(&m, &forest.trees[t]) <= mem)
					pick.trees[pick.n++] = forest.trees[t];
		}
		if (pick.n == 0 || !kdam_rebuild_trees(index, &m, pick.trees, pick.n) ||
			pick.n > 1)
			return;
		CHECK_FOR_INTERRUPTS();
	}
}

/* amvacuumcleanup */
IndexBulkDeleteResult *
kdam_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	Relation	index = info->index;
	Buffer		metabuf;
	KdamMetaPage meta;
	Size		mem = (Size) maintenance_work_mem * 1024;

	if (info->analyze_only)
		return stats;
	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));

	kdam_merge_lock(index, true);
	metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	LockBufferForCleanup(metabuf);
	meta = kdam_metapage(index, BufferGetPage(metabuf));
	if (meta->orphans)
	{
		reclaim_pages(info, meta, stats);
		kdam_set_orphans(index, metabuf, 0);
	}
	/* pages of trees retired since the last VACUUM, for the merges to reuse */
	kdam_free_retired(index, metabuf);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);

	kdam_flush_and_merge(index, mem);
	rebuild_trees(index, mem);

	LockBufferForCleanup(metabuf);
	kdam_free_retired(index, metabuf);
	meta = KdamPageGetMeta(BufferGetPage(metabuf));
	stats->num_index_tuples = kdam_index_rows(index, meta);
	stats->num_pages = RelationGetNumberOfBlocks(index);
	UnlockReleaseBuffer(metabuf);
	kdam_merge_unlock(index);
	/* VACUUM commits no transaction of its own: make its records durable */
	if (RelationNeedsWAL(index) && XactLastRecEnd != InvalidXLogRecPtr)
		XLogFlush(XactLastRecEnd);
	return stats;
}
