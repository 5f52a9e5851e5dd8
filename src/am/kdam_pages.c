/*
 * kdam_pages.c
 *	  Page utilities of the kdgpu index: the metapage, chains of new pages,
 *	  the tree stream, the pending records, and recycling pages.
 *
 * The tree stream holds the engine's arrays back to back: coords (n * dim
 * float8), refs (n uint64), split (n bytes), then, 8-aligned, the bounding
 * boxes (nbounds * 2 * dim float8) and the points' payload (n * words
 * uint64: INCLUDE values, kdam_include.c).  Every page's payload is a multiple of 8
 * bytes, so no reference straddles two pages and VACUUM can mark one in
 * place.  pd_lower marks the end of the payload, so full-page images skip
 * the unused rest of a page.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/xloginsert.h"
#include "miscadmin.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/rel.h"


#include "kdam.h"

/*
 * Where the arrays of a tree of n points of dim dimensions, nbounds boxes
 * and words payload words per point lie in its stream.
 */
void
kdam_tree_stream_slices(int64 n, int dim, int64 nbounds, int words,
						KdamSlices *slices)
{
	slices->coords = 0;
	slices->refs = sizeof(double) * dim * (Size) n;
	slices->split = slices->refs + sizeof(uint64) * (Size) n;
	slices->bounds = TYPEALIGN(sizeof(double), slices->split + (Size) n);
	slices->payload = slices->bounds + sizeof(double) * 2 * dim * (Size) nbounds;
	slices->end = slices->payload + sizeof(uint64) * words * (Size) n;
}

/* Size of the stream of a tree of the index. */
Size
kdam_tree_stream_size(const KdamMetaPageData *meta, const KdamTreeEntry *entry)
{
	KdamSlices	sl;

	kdam_tree_stream_slices(entry->n, meta->dim, entry->nbounds,
							meta->payload_words, &sl);
	return sl.end;
}

/* Point t's arrays into the stream of a tree of the index, in t->data. */
void
kdam_stream_to_tree(KdamTree *t, const KdamMetaPageData *meta,
					const KdamTreeEntry *entry)
{
	KdamSlices	sl;

	kdam_tree_stream_slices(entry->n, meta->dim, entry->nbounds,
							meta->payload_words, &sl);
	memset(&t->tree, 0, sizeof(t->tree));
	t->tree.n = entry->n;
	t->tree.dim = meta->dim;
	t->tree.nbounds = entry->nbounds;
	t->tree.coords = (double *) (t->data + sl.coords);
	t->tree.refs = (uint64_t *) (t->data + sl.refs);
	t->tree.split = (uint8_t *) (t->data + sl.split);
	t->tree.bounds = (double *) (t->data + sl.bounds);
	t->tree.owned = false;
	t->payload = (uint64 *) (t->data + sl.payload);
	t->words = meta->payload_words;
}

/* Initialize a page of the given kind. */
void
kdam_init_page(Page page, uint16 flags)
{
	KdamPageOpaque opaque;

	PageInit(page, BLCKSZ, sizeof(KdamPageOpaqueData));
	opaque = KdamPageGetOpaque(page);
	opaque->next = InvalidBlockNumber;
	opaque->flags = flags;
	opaque->page_id = KDAM_PAGE_ID;
}

/*
 * Initialize the metapage of an index with no points yet, whose points
 * carry words payload words.
 */
void
kdam_init_metapage(Page page, int dim, KdPointType type, int words)
{
	KdamMetaPage meta;

	kdam_init_page(page, KDAM_META);
	meta = KdamPageGetMeta(page);
	memset(meta, 0, sizeof(*meta));
	meta->magic = KDAM_MAGIC;
	meta->format_version = KDAM_FORMAT_VERSION;
	meta->dim = dim;
	meta->point_type = type;
	meta->payload_words = words;
	meta->forest_head = InvalidBlockNumber;
	meta->retired_head = InvalidBlockNumber;
	meta->retired_tail = InvalidBlockNumber;
	meta->next_tree_id = 1;
	meta->flush_head = InvalidBlockNumber;
	meta->flush_tail = InvalidBlockNumber;
	meta->null_head = InvalidBlockNumber;
	meta->null_tail = InvalidBlockNumber;
	meta->outside_head = InvalidBlockNumber;
	meta->outside_tail = InvalidBlockNumber;
	((PageHeader) page)->pd_lower = ((char *) (meta + 1)) - (char *) page;
}

/* The metapage's contents, after checking its magic number and version. */
KdamMetaPage
kdam_metapage(Relation index, Page page)
{
	KdamMetaPage meta = KdamPageGetMeta(page);

	if (meta->magic != KDAM_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not a kdgpu index",
						RelationGetRelationName(index))));
	if (meta->format_version != KDAM_FORMAT_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("index \"%s\" has on-disk format %u, this kdgpu reads format %u",
						RelationGetRelationName(index), meta->format_version,
						KDAM_FORMAT_VERSION),
				 errhint("REINDEX INDEX %s;", RelationGetRelationName(index))));
	return meta;
}

/*
 * Add delta to the metapage's orphans mark in metabuf (locked
 * exclusively), never below 0, through Generic WAL.
 */
void
kdam_orphans_add(Relation index, Buffer metabuf, int32 delta)
{
	GenericXLogState *state = GenericXLogStart(index);
	KdamMetaPage meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));

	meta->orphans = Max(meta->orphans + delta, 0);
	GenericXLogFinish(state);
}

/*
 * A new page for the index, exclusively locked: a recycled one from the
 * free space map when reuse is set and one is there, else a new block.
 */
Buffer
kdam_new_buffer(Relation index, bool reuse)
{
	Buffer		buf;

	while (reuse)
	{
		BlockNumber blkno = GetFreeIndexPage(index);

		if (blkno == InvalidBlockNumber)
			break;
		buf = ReadBuffer(index, blkno);
		if (ConditionalLockBuffer(buf))
		{
			Page		page = BufferGetPage(buf);

			if (PageIsNew(page) ||
				(KdamPageGetOpaque(page)->flags & KDAM_FREE))
				return buf;
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		}
		ReleaseBuffer(buf);
	}
	LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBuffer(index, P_NEW);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	UnlockRelationForExtension(index, ExclusiveLock);
	return buf;
}

/*
 * Write a build's finished page at blkno, the relation's end, straight to
 * its storage (as nbtree's build does), logging it when the relation needs
 * WAL; the build syncs the relation at its end (kdam_build).
 */
static void
write_direct(Relation index, BlockNumber blkno, Page page)
{
	SMgrRelation smgr = RelationGetSmgr(index);

	if (RelationNeedsWAL(index))
		log_newpage(&smgr->smgr_rnode.node, MAIN_FORKNUM, blkno, page, true);
	PageSetChecksumInplace(page, blkno);
	smgrextend(smgr, MAIN_FORKNUM, blkno, (char *) page, true);
}

/*
 * Finish the chain's last page, if it has one, and let it go; the chain
 * stays open for the next page.
 */
void
kdam_chain_finish(KdamPageChain *c)
{
	if (c->lastblk == InvalidBlockNumber)
		return;
	if (c->wal)
	{
		GenericXLogFinish(c->state);
		UnlockReleaseBuffer(c->last);
		c->last = InvalidBuffer;
	}
	else
		write_direct(c->index, c->lastblk, c->lastpage);
	c->lastblk = InvalidBlockNumber;
}

/*
 * The block number of the chain's next page: with wal a recycled or new
 * buffer, which becomes c->last; without, the block after the relation's
 * end and the page not yet written there.
 */
static BlockNumber
chain_next_block(KdamPageChain *c, Buffer *buf)
{
	if (c->wal)
	{
		*buf = kdam_new_buffer(c->index, true);
		return BufferGetBlockNumber(*buf);
	}
	*buf = InvalidBuffer;
	return c->lastblk != InvalidBlockNumber ? c->lastblk + 1 :
		smgrnblocks(RelationGetSmgr(c->index), MAIN_FORKNUM);
}

/*
 * Make the page at blkno (in buf, with wal) the chain's last page, of kind
 * flags; returns the page to fill.
 */
static Page
chain_start_page(KdamPageChain *c, Buffer buf, BlockNumber blkno, uint16 flags)
{
	Page		page;

	if (c->wal)
	{
		c->state = GenericXLogStart(c->index);
		page = GenericXLogRegisterBuffer(c->state, buf, GENERIC_XLOG_FULL_IMAGE);
		c->last = buf;
	}
	else
	{
		if (c->lastpage == NULL)
			c->lastpage = palloc(BLCKSZ);
		page = c->lastpage;
	}
	kdam_init_page(page, flags);
	c->lastpage = page;
	c->lastblk = blkno;
	return page;
}

/*
 * Add a page of kind flags to a chain: the previous page is linked to it
 * and let go; returns the new page (to be filled) and its block number.
 */
Page
kdam_chain_add(KdamPageChain *c, uint16 flags, BlockNumber *blkno)
{
	Buffer		buf;

	*blkno = chain_next_block(c, &buf);
	if (c->lastblk != InvalidBlockNumber)
	{
		KdamPageGetOpaque(c->lastpage)->next = *blkno;
		kdam_chain_finish(c);
	}
	else
		c->head = *blkno;
	return chain_start_page(c, buf, *blkno, flags);
}

/*
 * Add a page of kind flags in front of a chain: the page added before is
 * finished and let go first, and the new page links to it, so the chain
 * runs from the newest page to the oldest.  A writer that pushes holds no
 * page between kdam_chain_finish and its next push, where VACUUM's
 * cost-based delay may pause it; returns the new page (to be filled) and
 * its block number.
 */
Page
kdam_chain_push(KdamPageChain *c, uint16 flags, BlockNumber *blkno)
{
	Buffer		buf;
	Page		page;

	kdam_chain_finish(c);
	*blkno = chain_next_block(c, &buf);
	page = chain_start_page(c, buf, *blkno, flags);
	KdamPageGetOpaque(page)->next = c->head;
	c->head = *blkno;
	return page;
}

/*
 * Let the chain's last page go; its head (the first page added, or for a
 * pushed chain the last), or InvalidBlockNumber.
 */
BlockNumber
kdam_chain_end(KdamPageChain *c)
{
	kdam_chain_finish(c);
	if (!c->wal && c->lastpage != NULL)
	{
		pfree(c->lastpage);
		c->lastpage = NULL;
	}
	return c->head;
}

/* Mark every page of a chain free and record it in the free space map. */
void
kdam_free_chain(Relation index, BlockNumber head)
{
	BlockNumber blkno = head;

	while (blkno != InvalidBlockNumber)
	{
		Buffer		buf = ReadBuffer(index, blkno);
		GenericXLogState *state;
		Page		page;
		BlockNumber next;

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		state = GenericXLogStart(index);
		page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
		next = KdamPageGetOpaque(page)->next;
		kdam_init_page(page, KDAM_FREE);
		GenericXLogFinish(state);
		UnlockReleaseBuffer(buf);
		RecordFreeIndexPage(index, blkno);
		blkno = next;
	}
	IndexFreeSpaceMapVacuum(index);
}

/*
 * Append a record of recsize bytes to the chain whose head and tail block
 * numbers are given, fields of a page registered in the Generic WAL record
 * state (the metapage, or a lane's header); a tail filled to
 * KDAM_APPEND_FILL gets a new page of kind flags.  The tail and the new
 * page, locked exclusively and registered too, are returned in *tailbuf and
 * *newbuf (or left InvalidBuffer), for the caller to release after
 * GenericXLogFinish.
 */
void
kdam_chain_append(Relation index, GenericXLogState *state, BlockNumber *head,
				  BlockNumber *tailblk, uint16 flags, const char *rec,
				  Size recsize, Buffer *tailbuf, Buffer *newbuf)
{
	Page		tail = NULL;

	if (*tailblk != InvalidBlockNumber)
	{
		*tailbuf = ReadBuffer(index, *tailblk);
		LockBuffer(*tailbuf, BUFFER_LOCK_EXCLUSIVE);
		tail = GenericXLogRegisterBuffer(state, *tailbuf, 0);
	}
	if (tail == NULL ||
		((PageHeader) tail)->pd_lower + recsize >
		Min(((PageHeader) tail)->pd_upper, KDAM_APPEND_FILL))
	{
		Page		page;

		*newbuf = kdam_new_buffer(index, true);
		page = GenericXLogRegisterBuffer(state, *newbuf, GENERIC_XLOG_FULL_IMAGE);
		kdam_init_page(page, flags);
		if (tail)
			KdamPageGetOpaque(tail)->next = BufferGetBlockNumber(*newbuf);
		else
			*head = BufferGetBlockNumber(*newbuf);
		*tailblk = BufferGetBlockNumber(*newbuf);
		tail = page;
	}
	memcpy((char *) tail + ((PageHeader) tail)->pd_lower, rec, recsize);
	((PageHeader) tail)->pd_lower += recsize;
}

/* Bytes of one pending record: the ref, the coordinates, the payload. */
Size
kdam_pending_record_size(int dim, int words)
{
	return sizeof(uint64) * (1 + words) + sizeof(double) * dim;
}

/* Room in out for cap records of dim coordinates and words payload words. */
static void
records_alloc(KdamRecords *out, int dim, int words, int64 cap)
{
	cap = Max(cap, 1);
	out->n = 0;
	out->cap = cap;
	out->coords = palloc_extended(sizeof(double) * Max(dim, 1) * cap,
								  MCXT_ALLOC_HUGE);
	out->refs = palloc_extended(sizeof(uint64) * cap, MCXT_ALLOC_HUGE);
	out->payload = palloc_extended(sizeof(uint64) * Max(words, 1) * cap,
								   MCXT_ALLOC_HUGE);
}

/* Room in out (made by records_alloc) for more records. */
void
kdam_records_reserve(KdamRecords *out, int dim, int words, int64 more)
{
	int64		cap = out->n + more;

	if (cap <= out->cap)
		return;
	out->coords = repalloc_huge(out->coords, sizeof(double) * Max(dim, 1) * cap);
	out->refs = repalloc_huge(out->refs, sizeof(uint64) * cap);
	out->payload = repalloc_huge(out->payload,
								 sizeof(uint64) * Max(words, 1) * cap);
	out->cap = cap;
}

/*
 * Append the live records of the chain at head (pending records of dim
 * coordinates, or records of rows with no point when dim is 0) to out, at
 * most limit of them (a negative limit: all, and more than out has room
 * for means the chain holds more than its count).
 */
void
kdam_read_chain(Relation index, BlockNumber head, int dim, int words,
				int64 limit, KdamRecords *out)
{
	Size		recsize = kdam_pending_record_size(dim, words);
	BlockNumber blkno = head;
	int64		stop = limit < 0 ? -1 : out->n + limit;

	while (blkno != InvalidBlockNumber && out->n != stop)
	{
		Buffer		buf = ReadBuffer(index, blkno);
		Page		page;
		char	   *rec;
		char	   *end;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		rec = PageGetContents(page);
		end = (char *) page + ((PageHeader) page)->pd_lower;
		for (; rec + recsize <= end && out->n != stop; rec += recsize)
		{
			uint64		ref;

			memcpy(&ref, rec, sizeof(uint64));
			if (ref == KDAM_DEAD_REF)
				continue;
			if (out->n == out->cap)
				ereport(ERROR,
						(errcode(ERRCODE_INDEX_CORRUPTED),
						 errmsg("index \"%s\" has more records in a chain than its metapage says",
								RelationGetRelationName(index))));
			out->refs[out->n] = ref;
			memcpy(out->coords + out->n * dim, rec + sizeof(uint64),
				   sizeof(double) * dim);
			memcpy(out->payload + out->n * words,
				   rec + sizeof(uint64) + sizeof(double) * dim,
				   sizeof(uint64) * words);
			out->n++;
		}
		blkno = KdamPageGetOpaque(page)->next;
		UnlockReleaseBuffer(buf);
	}
}

/*
 * Remove dead records of recsize bytes from the chain at head (pending,
 * null or outside pages), a page at a time; returns how many.
 */
int64
kdam_chain_delete(Relation index, BlockNumber head, Size recsize,
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

/*
 * Read the live records of the chain at head (see kdam_read_chain), in
 * CurrentMemoryContext; count is how many the metapage says it holds.  The
 * caller holds a lock on the metapage, so the chain does not change.
 */
void
kdam_read_records(Relation index, BlockNumber head, int dim, int words,
				  int64 count, KdamRecords *out)
{
	records_alloc(out, dim, words, count);
	kdam_read_chain(index, head, dim, words, -1, out);
}

/*
 * Read the live pending records: the sealed ones being made a tree, then
 * every lane's.  The caller holds a lock on the metapage, so no lane is
 * sealed meanwhile.  Returns how many the counts of the metapage and the
 * lanes' headers say there are.
 */
int64
kdam_read_pending(Relation index, const KdamMetaPageData *meta,
				  KdamRecords *pending)
{
	kdam_read_records(index, meta->flush_head, meta->dim, meta->payload_words,
					  meta->nflush, pending);
	return meta->nflush +
		kdam_lanes_read(index, meta->lanes_used, meta->dim,
						meta->payload_words, pending);
}

/* Read the records of rows with no point; see kdam_read_records. */
void
kdam_read_nulls(Relation index, const KdamMetaPageData *meta,
				KdamRecords *nulls)
{
	kdam_read_records(index, meta->null_head, 0, meta->payload_words,
					  meta->nnull, nulls);
}

/* Read the records of rows outside the tree; see kdam_read_records. */
void
kdam_read_outside(Relation index, const KdamMetaPageData *meta,
				  KdamRecords *outside)
{
	kdam_read_records(index, meta->outside_head, KDAM_OUTSIDE_COORDS,
					  meta->payload_words, meta->noutside, outside);
}

/*
 * Write n records of recsize bytes to a new chain of pages of kind flags,
 * for CREATE INDEX (straight to storage, kdam_chain_add); returns its
 * head, or InvalidBlockNumber for none, and sets *tail.
 */
BlockNumber
kdam_write_records(Relation index, const char *recs, int64 n, Size recsize,
				   uint16 flags, BlockNumber *tail)
{
	KdamPageChain chain = KDAM_PAGE_CHAIN(index, false);
	Page		page = NULL;

	*tail = InvalidBlockNumber;
	for (int64 i = 0; i < n; i++)
	{
		if (page == NULL ||
			((PageHeader) page)->pd_lower + recsize > ((PageHeader) page)->pd_upper)
			page = kdam_chain_add(&chain, flags, tail);
		memcpy((char *) page + ((PageHeader) page)->pd_lower, recs + i * recsize,
			   recsize);
		((PageHeader) page)->pd_lower += recsize;
	}
	return kdam_chain_end(&chain);
}

/*
 * Classify every page of the index: the metapage, the lanes' headers, the
 * forest pages, the block and directory chains of every tree they list
 * (live or retired), and the sealed, lane, null and outside chains are in
 * use; pages flagged free or never initialized are free; any other page is
 * an orphan, written by a build, flush or merge that an error or a crash
 * interrupted, which no chain reaches.  Each page is read once under a
 * share lock.  The caller keeps every chain but the lanes still (a lock on
 * the metapage); the lanes' heads are read after the pages, so a page an
 * insert has taken since was seen free or past the end.  strategy may be
 * NULL.
 */
void
kdam_page_census(Relation index, const KdamMetaPageData *meta,
				 BufferAccessStrategy strategy, KdamCensus *census)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	BlockNumber *next = palloc_extended(sizeof(BlockNumber) * Max(nblocks, 1),
										MCXT_ALLOC_HUGE);
	KdamForest	forest;
	KdamForest	retired;
	int			nheads = 0;
	BlockNumber *heads;

	kdam_forest_read(index, meta, &forest);
	kdam_retired_read(index, meta, &retired);
	for (int t = 0; t < retired.n; t++)
		kdam_forest_add(&forest, &retired.trees[t]);
	heads = palloc(sizeof(BlockNumber) * (5 + KDAM_LANES + 2 * forest.n));
	heads[nheads++] = meta->forest_head;
	heads[nheads++] = meta->retired_head;
	heads[nheads++] = meta->flush_head;
	heads[nheads++] = meta->null_head;
	heads[nheads++] = meta->outside_head;
	for (int t = 0; t < forest.n; t++)
	{
		heads[nheads++] = forest.trees[t].head;
		heads[nheads++] = forest.trees[t].dirhead;
	}

	census->nblocks = nblocks;
	census->kind = palloc_extended(Max(nblocks, 1), MCXT_ALLOC_HUGE);
	census->nfree = 0;
	census->norphan = 0;
	for (BlockNumber blkno = 0; blkno < nblocks && blkno <= KDAM_LANE_BLKNO(KDAM_LANES - 1);
		 blkno++)
		census->kind[blkno] = KDAM_PAGE_IN_USE;
	for (BlockNumber blkno = KDAM_LANE_BLKNO(KDAM_LANES); blkno < nblocks; blkno++)
	{
		Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno,
											 RBM_NORMAL, strategy);
		Page		page;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (PageIsNew(page) || (KdamPageGetOpaque(page)->flags & KDAM_FREE))
			census->kind[blkno] = KDAM_PAGE_FREE;
		else
		{
			census->kind[blkno] = KDAM_PAGE_ORPHAN;
			next[blkno] = KdamPageGetOpaque(page)->next;
		}
		UnlockReleaseBuffer(buf);
	}
	kdam_lanes_heads(index, heads + nheads);
	nheads += KDAM_LANES;
	for (int i = 0; i < nheads; i++)
		for (BlockNumber b = heads[i];
			 b != InvalidBlockNumber && b < nblocks &&
			 census->kind[b] == KDAM_PAGE_ORPHAN;
			 b = next[b])
			census->kind[b] = KDAM_PAGE_IN_USE;
	for (BlockNumber blkno = 0; blkno < nblocks; blkno++)
	{
		census->nfree += census->kind[blkno] == KDAM_PAGE_FREE;
		census->norphan += census->kind[blkno] == KDAM_PAGE_ORPHAN;
	}
	pfree(next);
	pfree(heads);
}
