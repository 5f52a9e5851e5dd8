/*
 * kdam_insert.c
 *	  aminsert for the kdgpu access method: rows inserted after the build go
 *	  to the pending pages.
 *
 * The tree is static.  A new row's (ref, coords, payload) record is appended
 * to the tail of the pending chain under an exclusive lock on the metapage, in one
 * Generic WAL record covering the metapage, the tail page and, when the
 * tail is full, the new tail.  Scans search the pending records
 * exhaustively beside the tree; VACUUM folds them into a new tree.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "utils/rel.h"

#include "kdam.h"

/* aminsert */
bool
kdam_insert(Relation index, Datum *values, bool *isnull, ItemPointer heap_tid,
			Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
			IndexInfo *indexInfo)
{
	KdWhere		where = {NULL, 0, *heap_tid, RelationGetRelid(heap)};
	double		coords[KD_MAX_DIM];
	uint64		payload[INDEX_MAX_KEYS + 1];
	int			words = kdam_payload_words(index);
	uint64		ref;
	int			dim;
	Size		recsize;
	Buffer		metabuf,
				tailbuf = InvalidBuffer,
				newbuf = InvalidBuffer;
	GenericXLogState *state;
	KdamMetaPage meta;
	Page		tail = NULL;
	KdPointType type;
	KdPointInfo info;
	int32		srid,
				zm;

	if (isnull[0])
		return false;
	type = kdam_index_type(index);
	dim = kdg_datum_read(type, values[0], coords, &where, &info);
	if (dim == 0)
		return false;
	ref = kdg_tid_to_ref(heap_tid);
	if (words > 0)
		kdam_payload_from_values(index, values, isnull, payload);
	recsize = kdam_pending_record_size(dim, words);

	metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	meta = kdam_metapage(index, BufferGetPage(metabuf));
	if (meta->dim != 0 && meta->dim != dim)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("point of dimension %d cannot be added to index \"%s\" of dimension %d",
						dim, RelationGetRelationName(index), meta->dim),
				 errhint("A kdgpu index holds points of one dimension.")));
	srid = meta->srid;
	zm = meta->zm;
	kdam_postgis_check_row(index, type, &srid, &zm, meta->dim == 0, &info, heap_tid);

	state = GenericXLogStart(index);
	meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	meta->dim = dim;
	meta->srid = srid;
	meta->zm = zm;
	if (meta->pending_tail != InvalidBlockNumber)
	{
		tailbuf = ReadBuffer(index, meta->pending_tail);
		LockBuffer(tailbuf, BUFFER_LOCK_EXCLUSIVE);
		tail = GenericXLogRegisterBuffer(state, tailbuf, 0);
	}
	if (tail == NULL ||
		((PageHeader) tail)->pd_lower + recsize > ((PageHeader) tail)->pd_upper)
	{
		Page		page;

		newbuf = kdam_new_buffer(index, true);
		page = GenericXLogRegisterBuffer(state, newbuf, GENERIC_XLOG_FULL_IMAGE);
		kdam_init_page(page, KDAM_PENDING);
		if (tail)
			KdamPageGetOpaque(tail)->next = BufferGetBlockNumber(newbuf);
		else
			meta->pending_head = BufferGetBlockNumber(newbuf);
		meta->pending_tail = BufferGetBlockNumber(newbuf);
		tail = page;
	}
	memcpy((char *) tail + ((PageHeader) tail)->pd_lower, &ref, sizeof(uint64));
	memcpy((char *) tail + ((PageHeader) tail)->pd_lower + sizeof(uint64),
		   coords, sizeof(double) * dim);
	memcpy((char *) tail + ((PageHeader) tail)->pd_lower + sizeof(uint64) +
		   sizeof(double) * dim, payload, sizeof(uint64) * words);
	((PageHeader) tail)->pd_lower += recsize;
	meta->npending++;
	GenericXLogFinish(state);

	if (BufferIsValid(newbuf))
		UnlockReleaseBuffer(newbuf);
	if (BufferIsValid(tailbuf))
		UnlockReleaseBuffer(tailbuf);
	UnlockReleaseBuffer(metabuf);
	return false;
}
