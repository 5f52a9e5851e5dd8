/*
 * kdam_insert.c
 *	  aminsert for the kdgpu access method: rows inserted after the build go
 *	  to the insert lanes.
 *
 * Trees never change.  A new point's (ref, coords, payload) record goes to
 * an insert lane (kdam_lanes.c), touching the metapage only when it starts
 * the lane's chain: the index's dimension (and a PostGIS column's SRID and Z/M flags), fixed by
 * its first point, are kept in the relation cache.  Scans search the
 * lanes' records exhaustively beside the trees; when the lanes hold
 * KDAM_FLUSH_ROWS records, the inserter turns every lane's records into a
 * tree and merges trees of like size (kdam_merge.c), unless another
 * process is doing so.  A row that sets the dimension, a NULL row (a
 * (ref, payload) record in the null chain) and a row whose value the tree
 * cannot hold (a record in the outside chain, kdam_outside.c) are added
 * under an exclusive lock on the metapage, in one Generic WAL record
 * covering the metapage, the chain's tail page and, when the tail is full,
 * a new tail.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "kdam.h"

/* The index's relation cache, with what inserts need of it set. */
static KdamRelCache *
insert_cache(Relation index)
{
	KdamRelCache *c = kdam_relcache(index);

	if (!c->insert_ready)
	{
		kdam_index_type(index);
		c->words = kdam_payload_words(index);
		c->insert_ready = true;
	}
	return c;
}

/*
 * Add a row under an exclusive lock on the metapage: a NULL row, a row
 * outside the tree, or a point while the cache does not know the index's
 * dimension (which the point may set).  rec holds the ref and the payload
 * after ncoords coordinates; returns whether a lane is full.
 */
static bool
insert_locked(Relation index, KdamRelCache *c, Datum value, bool isnull,
			  uint64 *rec)
{
	double		coords[KD_MAX_DIM + 2];
	double		box[KDAM_OUTSIDE_COORDS];
	uint64		payload[INDEX_MAX_KEYS + 1];
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO),
				tailbuf = InvalidBuffer,
				newbuf = InvalidBuffer;
	KdamMetaPage meta;
	GenericXLogState *state;
	int			dim;
	int32		srid,
				zm;
	bool		in_tree = false;
	bool		full = false;
	int			ncoords;

	/* the payload follows the ref until the coordinates are known */
	memcpy(payload, rec + 1, sizeof(uint64) * c->words);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	meta = kdam_metapage(index, BufferGetPage(metabuf));
	dim = meta->dim;
	srid = meta->srid;
	zm = meta->zm;
	if (!isnull)
		in_tree = kdam_classify_row(c->type, value, &dim, &srid, &zm, coords,
									box);
	ncoords = isnull ? 0 : in_tree ? dim : KDAM_OUTSIDE_COORDS;
	memcpy(rec + 1, in_tree ? coords : box, sizeof(double) * ncoords);
	memcpy(rec + 1 + ncoords, payload, sizeof(uint64) * c->words);

	state = GenericXLogStart(index);
	meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	if (isnull)
	{
		/* NULL: a record in the null chain, for ordered scans */
		kdam_chain_append(index, state, &meta->null_head, &meta->null_tail,
					  KDAM_NULLS, (const char *) rec,
					  kdam_pending_record_size(0, c->words), &tailbuf, &newbuf);
		meta->nnull++;
	}
	else if (!in_tree)
	{
		kdam_chain_append(index, state, &meta->outside_head, &meta->outside_tail,
					  KDAM_OUTSIDE, (const char *) rec,
					  kdam_pending_record_size(KDAM_OUTSIDE_COORDS, c->words),
					  &tailbuf, &newbuf);
		meta->noutside++;
	}
	else
	{
		meta->dim = dim;
		meta->srid = srid;
		meta->zm = zm;
	}
	GenericXLogFinish(state);
	if (BufferIsValid(newbuf))
		UnlockReleaseBuffer(newbuf);
	if (BufferIsValid(tailbuf))
		UnlockReleaseBuffer(tailbuf);

	if (in_tree)
		full = kdam_lane_insert(index, (const char *) rec,
								kdam_pending_record_size(dim, c->words), metabuf);
	c->dim = meta->dim;
	c->srid = meta->srid;
	c->zm = meta->zm;
	UnlockReleaseBuffer(metabuf);
	return full;
}

/* aminsert */
bool
kdam_insert(Relation index, Datum *values, bool *isnull, ItemPointer heap_tid,
			Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
			IndexInfo *indexInfo)
{
	KdamRelCache *c = insert_cache(index);
	double		coords[KD_MAX_DIM + 2];
	double		box[KDAM_OUTSIDE_COORDS];
	/* ref, coordinates (or an outside row's kind and box), payload */
	uint64		rec[1 + KDAM_OUTSIDE_COORDS + INDEX_MAX_KEYS + 1];
	int			dim = c->dim;
	int32		srid = c->srid,
				zm = c->zm;
	bool		full;

	rec[0] = kdg_tid_to_ref(heap_tid);
	if (!isnull[0] && dim > 0 &&
		kdam_classify_row(c->type, values[0], &dim, &srid, &zm, coords, box))
	{
		memcpy(rec + 1, coords, sizeof(double) * dim);
		if (c->words > 0)
			kdam_payload_from_values(index, values, isnull, rec + 1 + dim);
		full = kdam_lane_insert(index, (const char *) rec,
								kdam_pending_record_size(dim, c->words),
								InvalidBuffer);
	}
	else
	{
		if (c->words > 0)
			kdam_payload_from_values(index, values, isnull, rec + 1);
		full = insert_locked(index, c, values[0], isnull[0], rec);
	}
	/* another process flushing or merging does it for this one */
	if (full && kdam_work_lock(index, KDAM_FLUSH_LOCK, false))
	{
		kdam_flush(index);
		kdam_work_unlock(index, KDAM_FLUSH_LOCK);
		if (kdam_work_lock_mode(index, KDAM_MERGE_LOCK, ShareLock, false))
		{
			kdam_merge(index, (Size) maintenance_work_mem * 1024);
			kdam_work_unlock_mode(index, KDAM_MERGE_LOCK, ShareLock);
		}
	}
	return false;
}
