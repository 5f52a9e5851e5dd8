/*
 * kdam_pages.c
 *	  Page utilities of the kdgpu index: the metapage, the tree stream cut
 *	  into a chain of pages, the pending records, and recycling pages.
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
#include "miscadmin.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
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

/* Size of the tree stream of the tree meta describes. */
Size
kdam_tree_stream_size(const KdamMetaPageData *meta)
{
	KdamSlices	sl;

	kdam_tree_stream_slices(meta->ntree, meta->dim, meta->nbounds,
							meta->payload_words, &sl);
	return sl.end;
}

/* Point t's arrays into the stream, of the tree meta describes, in t->data. */
void
kdam_stream_to_tree(KdamTree *t, const KdamMetaPageData *meta)
{
	KdamSlices	sl;

	kdam_tree_stream_slices(meta->ntree, meta->dim, meta->nbounds,
							meta->payload_words, &sl);
	memset(&t->tree, 0, sizeof(t->tree));
	t->tree.n = meta->ntree;
	t->tree.dim = meta->dim;
	t->tree.nbounds = meta->nbounds;
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
	meta->tree_head = InvalidBlockNumber;
	meta->pending_head = InvalidBlockNumber;
	meta->pending_tail = InvalidBlockNumber;
	meta->null_head = InvalidBlockNumber;
	meta->null_tail = InvalidBlockNumber;
	meta->outside_head = InvalidBlockNumber;
	meta->outside_tail = InvalidBlockNumber;
	meta->tree_dir_head = InvalidBlockNumber;
	/* the fields, and the list of the tree's directory pages */
	((PageHeader) page)->pd_lower =
		((char *) (KdamMetaDir(meta) + KDAM_MAX_DIR)) - (char *) page;
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

/* Bytes of one pending record: the ref, the coordinates, the payload. */
Size
kdam_pending_record_size(int dim, int words)
{
	return sizeof(uint64) * (1 + words) + sizeof(double) * dim;
}

/*
 * Read the live records of the chain at head (pending records of dim
 * coordinates, or records of rows with no point when dim is 0), in
 * CurrentMemoryContext; count is how many the metapage says it holds.  The
 * caller holds a lock on the metapage, so the chain does not change.
 */
void
kdam_read_records(Relation index, BlockNumber head, int dim, int words,
				  int64 count, KdamPending *out)
{
	Size		recsize = kdam_pending_record_size(dim, words);
	BlockNumber blkno = head;
	int64		cap = Max(count, 1);

	out->n = 0;
	out->coords = palloc_extended(sizeof(double) * Max(dim, 1) * cap,
								  MCXT_ALLOC_HUGE);
	out->refs = palloc_extended(sizeof(uint64) * cap, MCXT_ALLOC_HUGE);
	out->payload = palloc_extended(sizeof(uint64) * Max(words, 1) * cap,
								   MCXT_ALLOC_HUGE);
	while (blkno != InvalidBlockNumber)
	{
		Buffer		buf = ReadBuffer(index, blkno);
		Page		page;
		char	   *rec;
		char	   *end;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		rec = PageGetContents(page);
		end = (char *) page + ((PageHeader) page)->pd_lower;
		for (; rec + recsize <= end; rec += recsize)
		{
			uint64		ref;

			memcpy(&ref, rec, sizeof(uint64));
			if (ref == KDAM_DEAD_REF)
				continue;
			if (out->n == cap)
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

/* Read the live pending records; see kdam_read_records. */
void
kdam_read_pending(Relation index, const KdamMetaPageData *meta,
				  KdamPending *pending)
{
	kdam_read_records(index, meta->pending_head, meta->dim,
					  meta->payload_words, meta->npending, pending);
}

/* Read the records of rows with no point; see kdam_read_records. */
void
kdam_read_nulls(Relation index, const KdamMetaPageData *meta,
				KdamPending *nulls)
{
	kdam_read_records(index, meta->null_head, 0, meta->payload_words,
					  meta->nnull, nulls);
}

/* Read the records of rows outside the tree; see kdam_read_records. */
void
kdam_read_outside(Relation index, const KdamMetaPageData *meta,
				  KdamPending *outside)
{
	kdam_read_records(index, meta->outside_head, KDAM_OUTSIDE_COORDS,
					  meta->payload_words, meta->noutside, outside);
}

/*
 * Write n records of recsize bytes to a new chain of pages of kind flags,
 * without WAL (CREATE INDEX logs every page at its end); returns its head,
 * or InvalidBlockNumber for none, and sets *tail.
 */
BlockNumber
kdam_write_records(Relation index, const char *recs, int64 n, Size recsize,
				   uint16 flags, BlockNumber *tail)
{
	BlockNumber head = InvalidBlockNumber;
	Buffer		buf = InvalidBuffer;
	Page		page = NULL;

	*tail = InvalidBlockNumber;
	for (int64 i = 0; i < n; i++)
	{
		if (page == NULL ||
			((PageHeader) page)->pd_lower + recsize > ((PageHeader) page)->pd_upper)
		{
			Buffer		next = kdam_new_buffer(index, false);

			kdam_init_page(BufferGetPage(next), flags);
			if (page)
			{
				KdamPageGetOpaque(page)->next = BufferGetBlockNumber(next);
				MarkBufferDirty(buf);
				UnlockReleaseBuffer(buf);
			}
			else
				head = BufferGetBlockNumber(next);
			buf = next;
			page = BufferGetPage(buf);
		}
		memcpy((char *) page + ((PageHeader) page)->pd_lower, recs + i * recsize,
			   recsize);
		((PageHeader) page)->pd_lower += recsize;
	}
	if (page)
	{
		*tail = BufferGetBlockNumber(buf);
		MarkBufferDirty(buf);
		UnlockReleaseBuffer(buf);
	}
	return head;
}

/*
 * Classify every page of the index: the metapage and the pages of its tree,
 * tree's block and directory chains and of its pending, null and outside
 * chains are in use; pages flagged free or never initialized
 * are free; any other page is an orphan, written by a build or fold that an
 * error or a crash interrupted, which no chain reaches.  Each page is read
 * once under a share lock; the caller keeps the chains still (a lock on the
 * metapage).  strategy may be NULL.
 */
void
kdam_page_census(Relation index, const KdamMetaPageData *meta,
				 BufferAccessStrategy strategy, KdamCensus *census)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	BlockNumber *next = palloc_extended(sizeof(BlockNumber) * Max(nblocks, 1),
										MCXT_ALLOC_HUGE);
	BlockNumber heads[5] = {meta->tree_head, meta->tree_dir_head,
	meta->pending_head, meta->null_head, meta->outside_head};

	census->nblocks = nblocks;
	census->kind = palloc_extended(Max(nblocks, 1), MCXT_ALLOC_HUGE);
	census->nfree = 0;
	census->norphan = 0;
	if (nblocks > 0)
		census->kind[KDAM_METAPAGE_BLKNO] = KDAM_PAGE_IN_USE;
	for (BlockNumber blkno = KDAM_METAPAGE_BLKNO + 1; blkno < nblocks; blkno++)
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
	for (int i = 0; i < lengthof(heads); i++)
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
}
