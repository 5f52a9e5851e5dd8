/*
 * kdam_vacuum.c
 *	  VACUUM for the kdgpu access method.
 *
 * ambulkdelete takes the merge lock exclusively (kdam_merge.c), so that no
 * merge copies a tree meanwhile.  Under the flush lock, briefly, it first
 * compacts the lanes, the sealed chain and the null and outside pages, so
 * that no flush after that copies a dead row into a new tree; then it
 * marks the references of dead tree rows KDAM_DEAD_REF in place, a page at
 * a time under that page's exclusive lock (scans take a share lock on each
 * page they read), while flushes, inserts and scans go on.  Last it takes
 * a cleanup lock on the metapage, which waits for every scan that pins it
 * (index-only scans, which may hold a reference read before its mark and
 * must be done with it before the heap sets its page all-visible; see
 * kdam.h), records the trees' dead counts and bumps the generation, so
 * cached trees are reloaded.
 *
 * amvacuumcleanup takes the merge lock exclusively and, while it looks for
 * orphaned pages, flushes the lanes and clears the bits of lanes left with
 * no chain (kdam_lanes_unmark), the flush lock: with no writer in flight,
 * a nonzero orphans mark means one failed (or the server crashed), and it
 * reads every page and frees those no chain reaches.  It turns the pending
 * rows into a tree.  Then it merges trees of like size within
 * maintenance_work_mem holding the merge lock in share mode, as merging
 * inserts do, so that they go on merging the size classes it is not
 * merging.  Then, exclusively again, it rebuilds trees that are mostly
 * dead (or the whole forest, when it fits), whose trees are of any class.
 * Before its merges and at the end, it drops the retired trees from their
 * list under a cleanup lock on the metapage (no scan in flight, so none
 * can still read them), then frees their pages without it, so that its
 * own merges reuse them.  Last, when the GPU service held a copy of the
 * index's tree and VACUUM changed that tree (marks, a merge or a
 * rebuild), it gives the service a copy of the new one
 * (kdam_cache_refresh_service), so that the next kd_* call finds it.
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

	kdam_tree_shape(entry->n, meta->dim, meta->payload_words, &shape);
	while (blkno != InvalidBlockNumber)
	{
		Buffer		buf;

		vacuum_delay_point();
		buf = ReadBuffer(index, blkno);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		blkno = KdamPageGetOpaque(BufferGetPage(buf))->next;
		marked += kdam_block_delete(index, buf, &shape, callback, callback_state);
		UnlockReleaseBuffer(buf);
	}
	return marked;
}

/*
 * Remove the dead records of the lanes, the sealed chain and the null and
 * outside chains, and lower the metapage's counts; returns how many.  The
 * caller holds the flush lock, so no flush copies them meanwhile.
 */
static int64
delete_from_chains(Relation index, Buffer metabuf,
				   IndexBulkDeleteCallback callback, void *callback_state)
{
	KdamMetaPageData m;
	KdamMetaPage meta;
	GenericXLogState *state;
	Size		pendsize;
	int64		removed_flush,
				removed_nulls,
				removed_outside,
				removed;

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	m = *kdam_metapage(index, BufferGetPage(metabuf));
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
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
	if (removed_flush + removed_nulls + removed_outside > 0)
	{
		LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
		state = GenericXLogStart(index);
		meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
		meta->nflush -= removed_flush;
		meta->nnull -= removed_nulls;
		meta->noutside -= removed_outside;
		GenericXLogFinish(state);
		LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	}
	return removed + removed_flush + removed_nulls + removed_outside;
}

/*
 * Under a cleanup lock on the metapage, which waits for the scans in
 * flight, write the forest's list again with the dead rows marked in each
 * tree (marked[i] in trees[i]; trees flushes added since keep theirs) and
 * bump the generation.
 */
static void
record_marks(Relation index, Buffer metabuf, const KdamForest *marked_trees,
			 const int64 *marked)
{
	KdamMetaPageData m;
	KdamMetaPage meta;
	KdamForest	forest;
	GenericXLogState *state;
	BlockNumber head;
	int64		total = 0;

	LockBufferForCleanup(metabuf);
	m = *KdamPageGetMeta(BufferGetPage(metabuf));
	kdam_forest_read(index, &m, &forest);
	for (int i = 0; i < forest.n; i++)
		for (int j = 0; j < marked_trees->n; j++)
			if (forest.trees[i].tree_id == marked_trees->trees[j].tree_id)
			{
				forest.trees[i].ndead += marked[j];
				total += marked[j];
			}
	kdam_orphans_add(index, metabuf, 1);
	head = kdam_forest_write(index, &forest, true, NULL);
	state = GenericXLogStart(index);
	meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	meta->forest_head = head;
	meta->ndead += total;
	meta->generation++;
	GenericXLogFinish(state);
	kdam_free_chain(index, m.forest_head);
	kdam_orphans_add(index, metabuf, -1);
}

/* ambulkdelete */
IndexBulkDeleteResult *
kdam_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
				IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	KdamMetaPageData m;
	KdamForest	forest;
	int64	   *marked;
	int64		nmarked = 0,
				removed;

	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	/* no merge copies a tree while its rows are marked */
	kdam_work_lock_mode(index, KDAM_MERGE_LOCK, ExclusiveLock, true);
	/* the pending rows first: a flush after that copies no dead one */
	kdam_work_lock(index, KDAM_FLUSH_LOCK, true);
	removed = delete_from_chains(index, metabuf, callback, callback_state);
	kdam_work_unlock(index, KDAM_FLUSH_LOCK);

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	m = *kdam_metapage(index, BufferGetPage(metabuf));
	kdam_forest_read(index, &m, &forest);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	marked = palloc0(sizeof(int64) * Max(forest.n, 1));
	for (int t = 0; t < forest.n; t++)
	{
		marked[t] = delete_from_tree(index, &m, &forest.trees[t], callback,
									 callback_state);
		nmarked += marked[t];
	}
	if (nmarked > 0)
		record_marks(index, metabuf, &forest, marked);
	else if (removed > 0)
	{
		/* the scans in flight may hold references read before the removal */
		LockBufferForCleanup(metabuf);
	}
	else
		LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	stats->tuples_removed += nmarked + removed;
	stats->num_index_tuples = kdam_index_rows(index,
											  KdamPageGetMeta(BufferGetPage(metabuf)));
	UnlockReleaseBuffer(metabuf);
	kdam_work_unlock_mode(index, KDAM_MERGE_LOCK, ExclusiveLock);
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
 * fits.  The caller holds the merge lock exclusively.
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

	kdam_work_lock_mode(index, KDAM_MERGE_LOCK, ExclusiveLock, true);
	/* with no flush or merge in flight, a writer counted there failed */
	kdam_work_lock(index, KDAM_FLUSH_LOCK, true);
	metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	LockBufferForCleanup(metabuf);
	meta = kdam_metapage(index, BufferGetPage(metabuf));
	if (meta->orphans)
	{
		reclaim_pages(info, meta, stats);
		kdam_orphans_add(index, metabuf, -meta->orphans);
	}
	/* pages of trees retired since the last VACUUM, for the merges to reuse */
	kdam_drop_retired(index, metabuf, &retired);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	kdam_flush(index);
	kdam_lanes_unmark(index);
	kdam_work_unlock(index, KDAM_FLUSH_LOCK);
	kdam_work_unlock_mode(index, KDAM_MERGE_LOCK, ExclusiveLock);
	kdam_free_trees(index, &retired);

	/* merge as inserts do, beside theirs, a size class at a time */
	kdam_work_lock_mode(index, KDAM_MERGE_LOCK, ShareLock, true);
	kdam_merge(index, mem);
	kdam_work_unlock_mode(index, KDAM_MERGE_LOCK, ShareLock);

	/* a rebuild's trees are of any class: no merge may retire them */
	kdam_work_lock_mode(index, KDAM_MERGE_LOCK, ExclusiveLock, true);
	rebuild_trees(index, mem);
	kdam_reclaim_retired(index, metabuf, true);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	stats->num_index_tuples = kdam_index_rows(index,
											  KdamPageGetMeta(BufferGetPage(metabuf)));
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	stats->num_pages = RelationGetNumberOfBlocks(index);
	ReleaseBuffer(metabuf);
	kdam_work_unlock_mode(index, KDAM_MERGE_LOCK, ExclusiveLock);
	/* VACUUM commits no transaction of its own: make its records durable */
	if (RelationNeedsWAL(index) && XactLastRecEnd != InvalidXLogRecPtr)
		XLogFlush(XactLastRecEnd);
	kdam_cache_refresh_service(index);
	return stats;
}
