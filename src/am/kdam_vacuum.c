/*
 * kdam_vacuum.c
 *	  VACUUM for the kdgpu access method.
 *
 * ambulkdelete takes the merge lock (kdam_merge.c), so that no flush or
 * merge copies a tree meanwhile, marks the references of dead tree rows
 * KDAM_DEAD_REF in place and compacts the pending, null and outside pages,
 * a page at a time under that page's exclusive lock (scans take a share
 * lock on each page they read).  Then it takes a cleanup lock on the
 * metapage, which waits for every scan in flight to end (scans pin the
 * metapage, and one may hold a reference read before its mark), records
 * the counts and bumps the generation, so cached trees are reloaded.
 * Scans and inserts go on while it marks.
 *
 * amvacuumcleanup takes the merge lock (kdam_merge.c).  When the metapage's
 * orphans mark is set (a flush or merge failed, or the server crashed), it
 * reads every page and frees those no chain reaches.  It turns the pending
 * rows into a tree and merges trees of like size within
 * maintenance_work_mem, rebuilds trees that are mostly dead.  Before and
 * after, it drops the trees merges retired from the forest under a cleanup
 * lock on the metapage (no scan in flight, so none can still read them),
 * then frees their pages without it, so that its own merges reuse them.
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
	Buffer		metabuf;
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
	/* no flush or merge copies a tree or the sealed chain meanwhile */
	kdam_work_lock(index, KDAM_MERGE_LOCK, true);
	kdam_work_lock(index, KDAM_FLUSH_LOCK, true);
	metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	m = *kdam_metapage(index, BufferGetPage(metabuf));
	kdam_forest_read(index, &m, &forest);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);

	for (int t = 0; t < forest.n; t++)
	{
		int64		n = delete_from_tree(index, &m, &forest.trees[t], callback,
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
			LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
			kdam_orphans_add(index, metabuf, 1);
			LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
			head = kdam_forest_write(index, &forest, true, NULL);
		}

		/*
		 * Wait for the scans in flight, which may hold references read before
		 * their marks: the heap may reuse those TIDs once this returns.
		 */
		LockBufferForCleanup(metabuf);
		state = GenericXLogStart(index);
		meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
		meta->forest_head = head;
		meta->ndead += marked;
		meta->nflush -= removed_flush;
		meta->nnull -= removed_nulls;
		meta->noutside -= removed_outside;
		if (marked > 0)
			meta->orphans = Max(meta->orphans - 1, 0);
		meta->generation++;
		GenericXLogFinish(state);
		if (marked > 0)
			kdam_free_chain(index, m.forest_head);
	}
	else
		LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	meta = KdamPageGetMeta(BufferGetPage(metabuf));
	stats->tuples_removed += marked + removed + removed_flush + removed_nulls +
		removed_outside;
	stats->num_index_tuples = kdam_index_rows(index, meta);
	UnlockReleaseBuffer(metabuf);
	kdam_work_unlock(index, KDAM_FLUSH_LOCK);
	kdam_work_unlock(index, KDAM_MERGE_LOCK);
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
		{
			kdam_forest_add(&pick, &forest.trees[t]);
			need = Max(need, kdam_tree_stream_size(&m, &forest.trees[t]));
		}
		if ((pick.n < 2 && m.ndead == 0) ||
			kdam_build_memory(m.ntree, m.dim, m.payload_words) + need > mem)
		{
			pick.n = 0;
			for (int t = 0; t < forest.n && pick.n == 0; t++)
				if (forest.trees[t].ndead * 10 > forest.trees[t].n &&
					kdam_build_memory(forest.trees[t].n, m.dim, m.payload_words) +
					kdam_tree_stream_size(&m, &forest.trees[t]) <= mem)
					pick.trees[pick.n++] = forest.trees[t];
		}
		if (pick.n == 0)
			return;
		kdam_rebuild_trees(index, &m, pick.trees, pick.n);
		if (pick.n > 1)
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
	KdamForest	retired;
	Size		mem = (Size) maintenance_work_mem * 1024;

	if (info->analyze_only)
		return stats;
	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));

	kdam_work_lock(index, KDAM_MERGE_LOCK, true);
	kdam_work_lock(index, KDAM_FLUSH_LOCK, true);
	metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	LockBufferForCleanup(metabuf);
	meta = kdam_metapage(index, BufferGetPage(metabuf));
	/* no flush or merge is in flight: a writer counted there failed */
	if (meta->orphans)
	{
		reclaim_pages(info, meta, stats);
		kdam_orphans_add(index, metabuf, -meta->orphans);
	}
	/* pages of trees retired since the last VACUUM, for the merges to reuse */
	kdam_drop_retired(index, metabuf, &retired);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	kdam_free_trees(index, &retired);

	kdam_flush(index);
	kdam_merge(index, mem);
	rebuild_trees(index, mem);

	LockBufferForCleanup(metabuf);
	kdam_drop_retired(index, metabuf, &retired);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	kdam_free_trees(index, &retired);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	stats->num_index_tuples = kdam_index_rows(index,
											  KdamPageGetMeta(BufferGetPage(metabuf)));
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	stats->num_pages = RelationGetNumberOfBlocks(index);
	ReleaseBuffer(metabuf);
	kdam_work_unlock(index, KDAM_FLUSH_LOCK);
	kdam_work_unlock(index, KDAM_MERGE_LOCK);
	/* VACUUM commits no transaction of its own: make its records durable */
	if (RelationNeedsWAL(index) && XactLastRecEnd != InvalidXLogRecPtr)
		XLogFlush(XactLastRecEnd);
	return stats;
}
