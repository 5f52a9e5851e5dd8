/*
 * kdam_vacuum.c
 *	  VACUUM for the kdgpu access method.
 *
 * ambulkdelete takes a cleanup lock on the metapage, which waits for every
 * scan in flight to end (scans pin the metapage) and keeps new ones out,
 * marks the references of dead tree rows KDAM_DEAD_REF in place, compacts
 * the pending, null and outside pages, and bumps the generation so cached
 * trees are reloaded.
 *
 * amvacuumcleanup folds: when the pending records exceed a fraction of the
 * tree (kdam_fold_threshold), or dead references do, it builds a new tree of
 * the live points, writes it WAL-logged to new pages, switches the metapage
 * to it and frees the old tree and pending pages for reuse.  The fold holds
 * the metapage's cleanup lock throughout, so writers and new scans of this
 * index wait for it.  A fold marks the metapage before it writes and
 * clears the mark when it switches; a VACUUM that finds the mark set (the
 * fold failed, or the server crashed) first reads every page and frees the
 * orphans the fold left, which no chain reaches, so that its own fold
 * reuses them.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/xlog.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/indexfsm.h"
#include "utils/rel.h"

#include "kdam.h"

/* Mark dead references on the tree pages; returns how many were marked. */
static int64
delete_from_tree(Relation index, const KdamMetaPageData *meta,
				 IndexBulkDeleteCallback callback, void *callback_state)
{
	KdamTreeShape shape;
	BlockNumber blkno = meta->tree_head;
	int64		marked = 0;

	kdam_tree_shape(meta->ntree, meta->dim, meta->payload_words, meta->nbounds,
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

/*
 * Remove dead records of recsize bytes from the chain at head (pending,
 * null or outside pages); returns how many.
 */
static int64
delete_from_chain(Relation index, BlockNumber head, Size recsize,
				  IndexBulkDeleteCallback callback, void *callback_state)
{
	BlockNumber blkno = head;
	int64		removed = 0;

	while (blkno != InvalidBlockNumber)
	{
		Buffer		buf = ReadBuffer(index, blkno);
		GenericXLogState *state;
		Page		page;
		char	   *rec,
				   *end,
				   *keep;

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		state = GenericXLogStart(index);
		page = GenericXLogRegisterBuffer(state, buf, 0);
		rec = keep = PageGetContents(page);
		end = (char *) page + ((PageHeader) page)->pd_lower;
		for (; rec + recsize <= end; rec += recsize)
		{
			uint64		ref;
			ItemPointerData tid;

			memcpy(&ref, rec, sizeof(uint64));
			kdg_ref_to_tid(ref, &tid);
			if (callback(&tid, callback_state))
			{
				removed++;
				continue;
			}
			if (keep != rec)
				memmove(keep, rec, recsize);
			keep += recsize;
		}
		((PageHeader) page)->pd_lower = keep - (char *) page;
		blkno = KdamPageGetOpaque(page)->next;
		if (keep != end)
			GenericXLogFinish(state);
		else
			GenericXLogAbort(state);
		UnlockReleaseBuffer(buf);
	}
	return removed;
}

/* ambulkdelete */
IndexBulkDeleteResult *
kdam_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
				IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	KdamMetaPage meta;
	int64		marked,
				removed,
				removed_nulls,
				removed_outside;

	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	LockBufferForCleanup(metabuf);
	meta = kdam_metapage(index, BufferGetPage(metabuf));
	marked = delete_from_tree(index, meta, callback, callback_state);
	removed = delete_from_chain(index, meta->pending_head,
								kdam_pending_record_size(meta->dim, meta->payload_words),
								callback, callback_state);
	removed_nulls = delete_from_chain(index, meta->null_head,
									  kdam_pending_record_size(0, meta->payload_words),
									  callback, callback_state);
	removed_outside = delete_from_chain(index, meta->outside_head,
										kdam_pending_record_size(KDAM_OUTSIDE_COORDS,
																 meta->payload_words),
										callback, callback_state);
	if (marked + removed + removed_nulls + removed_outside > 0)
	{
		GenericXLogState *state = GenericXLogStart(index);

		meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
		meta->ndead += marked;
		meta->npending -= removed;
		meta->nnull -= removed_nulls;
		meta->noutside -= removed_outside;
		meta->generation++;
		GenericXLogFinish(state);
		/* the registered copy is gone with the record: read the page */
		meta = KdamPageGetMeta(BufferGetPage(metabuf));
	}
	stats->tuples_removed += marked + removed + removed_nulls + removed_outside;
	stats->num_index_tuples = meta->ntree - meta->ndead + meta->npending + meta->nnull +
		meta->noutside;
	UnlockReleaseBuffer(metabuf);
	return stats;
}

/*
 * Build a new tree of the live tree and pending points and switch the
 * metapage (locked for cleanup in metabuf) to it.
 */
static void
fold(Relation index, Buffer metabuf)
{
	KdamMetaPageData meta = *KdamPageGetMeta(BufferGetPage(metabuf));
	KdamTree   *t = kdam_cache_get(index, &meta,
								   KdamMetaDir(KdamPageGetMeta(BufferGetPage(metabuf))));
	BlockNumber *dir = palloc(sizeof(BlockNumber) * KDAM_MAX_DIR);
	int			ndir;
	BlockNumber dirhead;
	KdamPending pending;
	int			words = meta.payload_words;
	int64		n = 0;
	double	   *coords;
	uint64	   *refs;
	uint64	   *payload;
	int64		nbounds;
	BlockNumber head;
	GenericXLogState *state;
	KdamMetaPage newmeta;

	/* an interrupted fold leaves this set for the next VACUUM */
	state = GenericXLogStart(index);
	KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0))->fold_started = 1;
	GenericXLogFinish(state);

	kdam_read_pending(index, &meta, &pending);
	coords = palloc_extended(sizeof(double) * meta.dim *
							 (t->tree.n + pending.n + 1), MCXT_ALLOC_HUGE);
	refs = palloc_extended(sizeof(uint64) * (t->tree.n + pending.n + 1),
						   MCXT_ALLOC_HUGE);
	payload = palloc_extended(sizeof(uint64) * words * (t->tree.n + pending.n) + 1,
							  MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < t->tree.n; i++)
		if (t->tree.refs[i] != KDAM_DEAD_REF)
		{
			memcpy(coords + n * meta.dim, t->tree.coords + i * meta.dim,
				   sizeof(double) * meta.dim);
			memcpy(payload + n * words, t->payload + i * words,
				   sizeof(uint64) * words);
			refs[n++] = t->tree.refs[i];
		}
	kdam_cache_release(t);
	memcpy(coords + n * meta.dim, pending.coords,
		   sizeof(double) * meta.dim * pending.n);
	memcpy(refs + n, pending.refs, sizeof(uint64) * pending.n);
	memcpy(payload + n * words, pending.payload,
		   sizeof(uint64) * words * pending.n);
	n += pending.n;

	head = kdam_write_new_tree(index, coords, refs, payload, words, n, meta.dim,
							   false, meta.tree_id + 1, &nbounds, dir, &ndir,
							   &dirhead);

	state = GenericXLogStart(index);
	newmeta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	newmeta->ntree = n;
	newmeta->nbounds = nbounds;
	newmeta->tree_head = head;
	newmeta->tree_dir_head = dirhead;
	newmeta->tree_ndir = ndir;
	newmeta->tree_id = meta.tree_id + 1;
	memcpy(KdamMetaDir(newmeta), dir, sizeof(BlockNumber) * ndir);
	newmeta->pending_head = InvalidBlockNumber;
	newmeta->pending_tail = InvalidBlockNumber;
	newmeta->npending = 0;
	newmeta->ndead = 0;
	newmeta->fold_started = 0;
	newmeta->generation++;
	/* VACUUM commits no transaction of its own: make the switch durable */
	XLogFlush(GenericXLogFinish(state));

	kdam_cache_forget(RelationGetRelid(index));
	kdam_free_chain(index, meta.tree_head);
	kdam_free_chain(index, meta.tree_dir_head);
	kdam_free_chain(index, meta.pending_head);
	pfree(coords);
	pfree(refs);
	pfree(payload);
	pfree(dir);
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
				(errmsg("index \"%s\": freed %u pages left by an interrupted fold",
						RelationGetRelationName(index), census.norphan)));
	pfree(census.kind);
}

/* amvacuumcleanup */
IndexBulkDeleteResult *
kdam_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	Relation	index = info->index;
	Buffer		metabuf;
	KdamMetaPage meta;

	if (info->analyze_only)
		return stats;
	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));

	metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	LockBufferForCleanup(metabuf);
	meta = kdam_metapage(index, BufferGetPage(metabuf));
	if (meta->fold_started)
	{
		GenericXLogState *state;

		reclaim_pages(info, meta, stats);
		state = GenericXLogStart(index);
		KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0))->fold_started = 0;
		GenericXLogFinish(state);
		meta = KdamPageGetMeta(BufferGetPage(metabuf));
	}
	if (meta->npending + meta->ndead > kdam_fold_threshold(meta->ntree))
		fold(index, metabuf);
	meta = KdamPageGetMeta(BufferGetPage(metabuf));
	stats->num_index_tuples = meta->ntree - meta->ndead + meta->npending + meta->nnull +
		meta->noutside;
	stats->num_pages = RelationGetNumberOfBlocks(index);
	UnlockReleaseBuffer(metabuf);
	return stats;
}
