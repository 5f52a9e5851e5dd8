/*
 * vam_pages.c
 *	  The kdvec index's pages: their initialization, the metapage, the
 *	  records packed on a page, visiting a chain's live records, and
 *	  appending a row to the pending or the null chain.
 *
 * Records of one size fill a page from its contents onward, pd_lower just
 * past the last one, so that a page's count is read from pd_lower and
 * generic WAL skips the free space.  Appends lock the metapage
 * exclusively, then the chain's tail: one order for every writer.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "miscadmin.h"
#include "storage/bufpage.h"
#include "storage/lmgr.h"

#include "vam.h"

/* Initialize page as an empty page of kind flags. */
void
kdvam_init_page(Page page, uint16 flags)
{
	KdvamPageOpaque opaque;

	PageInit(page, BLCKSZ, sizeof(KdvamPageOpaqueData));
	((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData);
	opaque = KdvamPageGetOpaque(page);
	opaque->next = InvalidBlockNumber;
	opaque->flags = flags;
	opaque->page_id = KDVAM_PAGE_ID;
}

/* Initialize page as the metapage of an empty index under metric. */
void
kdvam_init_metapage(Page page, KdMetric metric)
{
	KdvamMetaPageData *meta;

	kdvam_init_page(page, KDVAM_META);
	meta = KdvamPageGetMeta(page);
	memset(meta, 0, sizeof(*meta));
	meta->magic = KDVAM_MAGIC;
	meta->format_version = KDVAM_FORMAT_VERSION;
	meta->metric = (int32) metric;
	meta->root = KDVAM_NO_CHILD;
	meta->probe_share = 1.0;
	meta->node_first = InvalidBlockNumber;
	meta->pending_head = meta->pending_tail = InvalidBlockNumber;
	meta->null_head = meta->null_tail = InvalidBlockNumber;
	((PageHeader) page)->pd_lower =
		((char *) meta + sizeof(KdvamMetaPageData)) - (char *) page;
}

/* Check that meta is the metapage of a kdvec index of this format. */
void
kdvam_check_meta(Relation index, const KdvamMetaPageData *meta)
{
	if (meta->magic != KDVAM_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not a kdvec index",
						RelationGetRelationName(index))));
	if (meta->format_version != KDVAM_FORMAT_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("index \"%s\" has kdvec format %u, this kdgpu reads %d",
						RelationGetRelationName(index), meta->format_version,
						KDVAM_FORMAT_VERSION),
				 errhint("REINDEX it.")));
}

/* The number of records of recsize bytes on page. */
int
kdvam_page_count(Page page, Size recsize)
{
	return (((PageHeader) page)->pd_lower - MAXALIGN(SizeOfPageHeaderData)) /
		recsize;
}

/* Record i (of recsize bytes) of page. */
char *
kdvam_page_record(Page page, Size recsize, int i)
{
	return (char *) PageGetContents(page) + (Size) i * recsize;
}

/*
 * Call fn(arg, ref, rec) for each live record (of recsize bytes, a ref
 * first) of the pages chained from blkno, each page share-locked while
 * its records are visited.
 */
void
kdvam_chain_visit(Relation index, BlockNumber blkno, Size recsize,
				  KdvamRecordFn fn, void *arg)
{
	while (BlockNumberIsValid(blkno))
	{
		Buffer		buf = ReadBuffer(index, blkno);
		Page		page;
		int			n;

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		n = kdvam_page_count(page, recsize);
		for (int i = 0; i < n; i++)
		{
			const char *rec = kdvam_page_record(page, recsize, i);
			uint64		ref;

			memcpy(&ref, rec, sizeof(uint64));
			if (ref != KDVAM_DEAD_REF)
				fn(arg, ref, rec);
		}
		blkno = KdvamPageGetOpaque(page)->next;
		UnlockReleaseBuffer(buf);
	}
}

/* Append rec (recsize bytes) to page; false when it is full. */
bool
kdvam_page_add(Page page, const void *rec, Size recsize)
{
	PageHeader	ph = (PageHeader) page;

	if (ph->pd_lower + recsize > ph->pd_upper)
		return false;
	memcpy((char *) page + ph->pd_lower, rec, recsize);
	ph->pd_lower += recsize;
	return true;
}

/* A new page at the end of index, pinned and locked exclusively. */
Buffer
kdvam_extend(Relation index)
{
	Buffer		buf;

	LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBuffer(index, P_NEW);
	UnlockRelationForExtension(index, ExclusiveLock);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	return buf;
}

/*
 * Append rec (recsize bytes) to the pending chain (flags KDVAM_PENDING: a
 * vector of dim coordinates, which must be the index's, or sets it in an
 * index that has none yet) or the null chain (KDVAM_NULLS), in one WAL
 * record with the metapage's counts.
 */
void
kdvam_chain_append(Relation index, const void *rec, Size recsize,
				   uint16 flags, int dim)
{
	Buffer		metabuf = ReadBuffer(index, KDVAM_METAPAGE_BLKNO);
	Buffer		tailbuf = InvalidBuffer;
	Buffer		newbuf = InvalidBuffer;
	GenericXLogState *state;
	KdvamMetaPageData *meta;
	bool		pending = flags == KDVAM_PENDING;
	BlockNumber tail;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	meta = KdvamPageGetMeta(BufferGetPage(metabuf));
	kdvam_check_meta(index, meta);
	if (pending && meta->dim != 0 && meta->dim != dim)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("index \"%s\" holds vectors of %d dimensions, not %d",
						RelationGetRelationName(index), meta->dim, dim)));
	tail = pending ? meta->pending_tail : meta->null_tail;
	if (BlockNumberIsValid(tail))
	{
		tailbuf = ReadBuffer(index, tail);
		LockBuffer(tailbuf, BUFFER_LOCK_EXCLUSIVE);
		if (((PageHeader) BufferGetPage(tailbuf))->pd_upper -
			((PageHeader) BufferGetPage(tailbuf))->pd_lower < recsize)
			newbuf = kdvam_extend(index);
	}
	else
		newbuf = kdvam_extend(index);

	state = GenericXLogStart(index);
	meta = KdvamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	if (BufferIsValid(newbuf))
	{
		Page		page = GenericXLogRegisterBuffer(state, newbuf,
													 GENERIC_XLOG_FULL_IMAGE);
		BlockNumber blkno = BufferGetBlockNumber(newbuf);

		kdvam_init_page(page, flags);
		kdvam_page_add(page, rec, recsize);
		if (BufferIsValid(tailbuf))
			KdvamPageGetOpaque(GenericXLogRegisterBuffer(state, tailbuf, 0))->next = blkno;
		else if (pending)
			meta->pending_head = blkno;
		else
			meta->null_head = blkno;
		if (pending)
			meta->pending_tail = blkno;
		else
			meta->null_tail = blkno;
	}
	else
		kdvam_page_add(GenericXLogRegisterBuffer(state, tailbuf, 0), rec, recsize);
	if (pending)
	{
		meta->dim = dim;
		meta->npending++;
	}
	else
		meta->nnull++;
	GenericXLogFinish(state);

	if (BufferIsValid(newbuf))
		UnlockReleaseBuffer(newbuf);
	if (BufferIsValid(tailbuf))
		UnlockReleaseBuffer(tailbuf);
	UnlockReleaseBuffer(metabuf);
}
