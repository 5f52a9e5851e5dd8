/*
 * kdam_insert.c
 *	  aminsert for the kdgpu access method: rows inserted after the build go
 *	  to the pending pages.
 *
 * Trees never change.  A new row's (ref, coords, payload) record is
 * appended to the tail of the pending chain under an exclusive lock on the
 * metapage, in one Generic WAL record covering the metapage, the tail page
 * and, when the tail is full, the new tail.  Scans search the pending
 * records exhaustively beside the trees; when they reach KDAM_FLUSH_ROWS,
 * the inserter turns them into a tree and merges trees of like size
 * (kdam_merge.c), unless another process is doing so.  A NULL row gets a
 * (ref, payload) record in the null chain instead, the same way, and a row
 * whose value the tree cannot hold a record in the outside chain
 * (kdam_outside.c).
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "miscadmin.h"
#include "utils/rel.h"

#include "kdam.h"

/*
 * Append a record to the chain whose head and tail fields of the metapage
 * are given, in the Generic WAL record state that has the metapage
 * registered; a full tail gets a new page of kind flags.
 */
static void
append_record(Relation index, GenericXLogState *state, BlockNumber *head,
			  BlockNumber *tailblk, uint16 flags, const char *rec, Size recsize,
			  Buffer *tailbuf, Buffer *newbuf)
{
	Page		tail = NULL;

	if (*tailblk != InvalidBlockNumber)
	{
		*tailbuf = ReadBuffer(index, *tailblk);
		LockBuffer(*tailbuf, BUFFER_LOCK_EXCLUSIVE);
		tail = GenericXLogRegisterBuffer(state, *tailbuf, 0);
	}
	if (tail == NULL ||
		((PageHeader) tail)->pd_lower + recsize > ((PageHeader) tail)->pd_upper)
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

/* aminsert */
bool
kdam_insert(Relation index, Datum *values, bool *isnull, ItemPointer heap_tid,
			Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
			IndexInfo *indexInfo)
{
	double		coords[KD_MAX_DIM + 2];
	double		box[KDAM_OUTSIDE_COORDS];
	int			words = kdam_payload_words(index);
	/* ref, coordinates (or an outside row's kind and box), payload */
	uint64		rec[1 + KDAM_OUTSIDE_COORDS + INDEX_MAX_KEYS + 1];
	int			ncoords;
	Buffer		metabuf,
				tailbuf = InvalidBuffer,
				newbuf = InvalidBuffer;
	GenericXLogState *state;
	KdamMetaPage meta;
	KdPointType type = kdam_index_type(index);
	int			dim;
	int32		srid,
				zm;
	bool		in_tree = false;
	bool		flush;

	rec[0] = kdg_tid_to_ref(heap_tid);
	metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	meta = kdam_metapage(index, BufferGetPage(metabuf));
	dim = meta->dim;
	srid = meta->srid;
	zm = meta->zm;
	if (!isnull[0])
		in_tree = kdam_classify_row(type, values[0], &dim, &srid, &zm, coords, box);
	ncoords = isnull[0] ? 0 : in_tree ? dim : KDAM_OUTSIDE_COORDS;
	memcpy(rec + 1, in_tree ? coords : box, sizeof(double) * ncoords);
	if (words > 0)
		kdam_payload_from_values(index, values, isnull, rec + 1 + ncoords);

	state = GenericXLogStart(index);
	meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	if (isnull[0])
	{
		/* NULL: a record in the null chain, for ordered scans */
		append_record(index, state, &meta->null_head, &meta->null_tail,
					  KDAM_NULLS, (const char *) rec,
					  kdam_pending_record_size(0, words), &tailbuf, &newbuf);
		meta->nnull++;
	}
	else if (!in_tree)
	{
		append_record(index, state, &meta->outside_head, &meta->outside_tail,
					  KDAM_OUTSIDE, (const char *) rec,
					  kdam_pending_record_size(KDAM_OUTSIDE_COORDS, words),
					  &tailbuf, &newbuf);
		meta->noutside++;
	}
	else
	{
		meta->dim = dim;
		meta->srid = srid;
		meta->zm = zm;
		append_record(index, state, &meta->pending_head, &meta->pending_tail,
					  KDAM_PENDING, (const char *) rec,
					  kdam_pending_record_size(dim, words), &tailbuf, &newbuf);
		meta->npending++;
	}
	flush = meta->npending >= KDAM_FLUSH_ROWS;
	GenericXLogFinish(state);

	if (BufferIsValid(newbuf))
		UnlockReleaseBuffer(newbuf);
	if (BufferIsValid(tailbuf))
		UnlockReleaseBuffer(tailbuf);
	UnlockReleaseBuffer(metabuf);
	if (flush && kdam_merge_lock(index, false))
	{
		kdam_flush_and_merge(index, KDAM_FLUSH_ROWS,
							 (Size) maintenance_work_mem * 1024);
		kdam_merge_unlock(index);
	}
	return false;
}
