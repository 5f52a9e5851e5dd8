/*
 * kdam_lanes.c
 *	  Insert lanes of the kdgpu index: where rows inserted after the build
 *	  wait to become a tree, in KDAM_LANES chains, so that concurrent
 *	  inserters do not queue on one lock.
 *
 * Blocks 1 to KDAM_LANES hold the lanes' header pages, made with the
 * metapage.  A header (KdamLaneData) names its chain of pending pages and
 * how many records the chain holds.  An inserter takes an exclusive lock on
 * one header (and on the metapage only to start the lane's chain, below, or
 * for a row that sets the index's dimension, kdam_insert.c): the lane its
 * process number picks when that is free, else the first free one, else it
 * waits for its own.  Its record goes onto the lane's tail page in one
 * Generic WAL record (the header, the tail and, when the tail is full, a new
 * tail).  A process keeps to one lane, so one inserter fills one chain.
 * Each time its lane reaches a multiple of KDAM_LANE_ROWS records, the
 * inserter counts the records of every lane, and when they are
 * KDAM_FLUSH_ROWS or more it flushes: each lane's chain in turn moves to the
 * end of the sealed chain under a short exclusive lock on the metapage
 * (kdam_lanes_seal), and the sealed records become a tree (kdam_merge.c).
 * So fewer than KDAM_FLUSH_ROWS + KDAM_LANES * KDAM_LANE_ROWS rows wait in
 * the lanes, and about KDAM_FLUSH_ROWS at a flush however many processes
 * insert: one inserter alone makes trees of KDAM_FLUSH_ROWS rows, not of
 * KDAM_LANE_ROWS that merges then copy again and again (which also left
 * about twice the pages until VACUUM).
 *
 * A lane with a chain has its bit set in the metapage's lanes_used: the
 * insert that starts a chain sets it first, under an exclusive lock on the
 * metapage, unless it is set; a seal leaves it, and VACUUM clears the bits
 * of lanes with no chain (kdam_lanes_unmark).  So inserters take the
 * metapage's exclusive lock about once per lane between VACUUMs, not once
 * per lane and flush, and a scan reads only the lanes in use: none, on an
 * index that took no insert since its last VACUUM.  Locks are taken in the
 * order metapage, header, chain page.  A scan reads the lanes in use under
 * its share lock on the metapage, so no seal moves a chain and no lane comes
 * into use meanwhile.  It reads a header's count and chain under a share
 * lock on the header, then lets it go and reads that many records from the
 * chain, a page at a time under the page's share lock: records appended
 * meanwhile are rows of transactions that were in progress when the scan
 * read the count, which its snapshot cannot see (holding the header made
 * inserts into the lane wait for the whole read).
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "miscadmin.h"
#include "utils/rel.h"

#include "kdam.h"

#define KdamPageGetLane(page) ((KdamLane) PageGetContents(page))

/* Initialize the header page of an empty lane. */
void
kdam_init_lane_page(Page page)
{
	KdamLane	lane;

	kdam_init_page(page, KDAM_LANE);
	lane = KdamPageGetLane(page);
	lane->head = InvalidBlockNumber;
	lane->tail = InvalidBlockNumber;
	lane->n = 0;
	((PageHeader) page)->pd_lower = ((char *) (lane + 1)) - (char *) page;
}

/*
 * Make the lanes' header pages of a new index, right after the metapage,
 * without WAL (the build logs every page at its end).
 */
void
kdam_lanes_create(Relation index)
{
	for (int i = 0; i < KDAM_LANES; i++)
	{
		Buffer		buf = kdam_new_buffer(index, false);

		Assert(BufferGetBlockNumber(buf) == KDAM_LANE_BLKNO(i));
		kdam_init_lane_page(BufferGetPage(buf));
		MarkBufferDirty(buf);
		UnlockReleaseBuffer(buf);
	}
}

/* Read lane i's header, locked in mode; returns the buffer. */
static Buffer
lane_lock(Relation index, int i, int mode, KdamLaneData *lane)
{
	Buffer		buf = ReadBuffer(index, KDAM_LANE_BLKNO(i));

	LockBuffer(buf, mode);
	*lane = *KdamPageGetLane(BufferGetPage(buf));
	return buf;
}

/*
 * Lock a lane's header exclusively for an insert: this process's lane when
 * free, else the first free one, else wait for this process's lane.
 */
static Buffer
lane_for_insert(Relation index)
{
	int			own = MyProcPid % KDAM_LANES;
	Buffer		buf;

	for (int k = 0; k < KDAM_LANES; k++)
	{
		buf = ReadBuffer(index, KDAM_LANE_BLKNO((own + k) % KDAM_LANES));
		if (ConditionalLockBuffer(buf))
			return buf;
		ReleaseBuffer(buf);
	}
	buf = ReadBuffer(index, KDAM_LANE_BLKNO(own));
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	return buf;
}

/*
 * Set lane i's bit in the metapage's lanes_used (metabuf, locked
 * exclusively), through Generic WAL, unless it is set.
 */
static void
mark_used(Relation index, Buffer metabuf, int i)
{
	GenericXLogState *state;

	if (KdamPageGetMeta(BufferGetPage(metabuf))->lanes_used & (1U << i))
		return;
	state = GenericXLogStart(index);
	KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0))->lanes_used |= 1U << i;
	GenericXLogFinish(state);
}

/*
 * Append a record of recsize bytes to a lane.  metabuf is the metapage when
 * the caller holds it locked exclusively, else InvalidBuffer.  A lane with
 * no chain gets its bit in the metapage's lanes_used first, under an
 * exclusive lock on the metapage taken before the lane's (the order of
 * every lock here): scans read only the lanes whose bit is set.  Returns
 * whether the lanes hold KDAM_FLUSH_ROWS records or more, time to flush
 * (counted when this lane reaches a multiple of KDAM_LANE_ROWS).
 */
bool
kdam_lane_insert(Relation index, const char *rec, Size recsize, Buffer metabuf)
{
	Buffer		headbuf;
	Buffer		tailbuf = InvalidBuffer,
				newbuf = InvalidBuffer;
	GenericXLogState *state;
	KdamLane	lane;
	bool		full;

	for (;;)
	{
		Buffer		meta;
		int			i;

		headbuf = lane_for_insert(index);
		i = BufferGetBlockNumber(headbuf) - KDAM_LANE_BLKNO(0);
		if (KdamPageGetLane(BufferGetPage(headbuf))->head != InvalidBlockNumber)
			break;
		if (BufferIsValid(metabuf))
		{
			mark_used(index, metabuf, i);
			break;
		}

		/*
		 * The lane's bit, set since its last chain was sealed (seals leave
		 * it), stays set while the metapage is held and, once the header is
		 * held, while the lane has a chain (VACUUM clears the bits of lanes
		 * with none, kdam_lanes_unmark).  Scans wait for an exclusive lock
		 * on the metapage, so it is taken only to set the bit, and never
		 * held while waiting for the header: when another insert took the
		 * lane meanwhile, start over.
		 */
		LockBuffer(headbuf, BUFFER_LOCK_UNLOCK);
		meta = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
		LockBuffer(meta, BUFFER_LOCK_SHARE);
		if (KdamPageGetMeta(BufferGetPage(meta))->lanes_used & (1U << i))
		{
			LockBuffer(headbuf, BUFFER_LOCK_EXCLUSIVE);
			UnlockReleaseBuffer(meta);
			break;
		}
		LockBuffer(meta, BUFFER_LOCK_UNLOCK);
		LockBuffer(meta, BUFFER_LOCK_EXCLUSIVE);
		if (ConditionalLockBuffer(headbuf))
		{
			mark_used(index, meta, i);
			UnlockReleaseBuffer(meta);
			break;
		}
		UnlockReleaseBuffer(meta);
		ReleaseBuffer(headbuf);
	}
	state = GenericXLogStart(index);
	lane = KdamPageGetLane(GenericXLogRegisterBuffer(state, headbuf, 0));
	kdam_chain_append(index, state, &lane->head, &lane->tail, KDAM_PENDING,
					  rec, recsize, &tailbuf, &newbuf);
	lane->n++;
	full = lane->n % KDAM_LANE_ROWS == 0;
	GenericXLogFinish(state);

	if (BufferIsValid(newbuf))
		UnlockReleaseBuffer(newbuf);
	if (BufferIsValid(tailbuf))
		UnlockReleaseBuffer(tailbuf);
	UnlockReleaseBuffer(headbuf);
	return full && kdam_lanes_count(index) >= KDAM_FLUSH_ROWS;
}

/* Records in the lanes, each header read under a share lock. */
int64
kdam_lanes_count(Relation index)
{
	int64		n = 0;

	for (int i = 0; i < KDAM_LANES; i++)
	{
		KdamLaneData lane;

		UnlockReleaseBuffer(lane_lock(index, i, BUFFER_LOCK_SHARE, &lane));
		n += lane.n;
	}
	return n;
}

/* Rows the index holds: live tree rows, pending, NULL and outside rows. */
int64
kdam_index_rows(Relation index, const KdamMetaPageData *meta)
{
	return meta->ntree - meta->ndead + meta->nflush + kdam_lanes_count(index) +
		meta->nnull + meta->noutside;
}

/*
 * Append the live records of every lane in use (a bit of used, the
 * metapage's lanes_used; the others hold none) of dim coordinates and
 * words payload words to out; the caller holds a lock on the metapage.
 * Returns how many records the lanes' headers counted.
 */
int64
kdam_lanes_read(Relation index, uint32 used, int dim, int words,
				KdamRecords *out)
{
	int64		counted = 0;

	for (int i = 0; i < KDAM_LANES; i++)
	{
		KdamLaneData lane;
		Buffer		buf;

		if (!(used & (1U << i)))
			continue;
		buf = lane_lock(index, i, BUFFER_LOCK_SHARE, &lane);
		UnlockReleaseBuffer(buf);
		if (lane.n > 0)
		{
			kdam_records_reserve(out, dim, words, lane.n);
			kdam_read_chain(index, lane.head, dim, words, lane.n, out);
		}
		counted += lane.n;
	}
	return counted;
}

/*
 * Move lane i's chain, if it has one, to the end of the metapage's sealed
 * chain in one Generic WAL record (the metapage, the header and the sealed
 * chain's tail) under an exclusive lock on the metapage (metabuf, pinned);
 * false, having done nothing, when an insert held the lane's header.
 */
static bool
seal_lane(Relation index, Buffer metabuf, int i)
{
	KdamLaneData old;
	Buffer		buf;
	Buffer		tailbuf = InvalidBuffer;
	GenericXLogState *state;
	KdamMetaPage meta;
	KdamLane	lane;

	/* wait for an insert into the lane before taking the metapage */
	UnlockReleaseBuffer(lane_lock(index, i, BUFFER_LOCK_SHARE, &old));
	if (old.n == 0 && old.head == InvalidBlockNumber)
		return true;
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	buf = ReadBuffer(index, KDAM_LANE_BLKNO(i));
	if (!ConditionalLockBuffer(buf))
	{
		ReleaseBuffer(buf);
		LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
		return false;
	}
	old = *KdamPageGetLane(BufferGetPage(buf));
	state = GenericXLogStart(index);
	meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	lane = KdamPageGetLane(GenericXLogRegisterBuffer(state, buf, 0));
	if (meta->flush_tail != InvalidBlockNumber)
	{
		tailbuf = ReadBuffer(index, meta->flush_tail);
		LockBuffer(tailbuf, BUFFER_LOCK_EXCLUSIVE);
		KdamPageGetOpaque(GenericXLogRegisterBuffer(state, tailbuf, 0))->next =
			old.head;
	}
	else
		meta->flush_head = old.head;
	meta->flush_tail = old.tail;
	meta->nflush += old.n;
	lane->head = InvalidBlockNumber;
	lane->tail = InvalidBlockNumber;
	lane->n = 0;
	GenericXLogFinish(state);
	if (BufferIsValid(tailbuf))
		UnlockReleaseBuffer(tailbuf);
	UnlockReleaseBuffer(buf);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	return true;
}

/*
 * Move every lane's chain to the end of the metapage's sealed chain, a
 * lane at a time (seal_lane), so that a crash between two leaves each
 * record in one place.  Each move holds the metapage exclusively, so that
 * a scan (which reads the lanes and the sealed chain under a share lock on
 * it) finds each record in one place too; but only for that lane, and
 * never while waiting for an insert into the lane to let go of its header,
 * so that scans wait for one short record at a time: one lock for every
 * lane held the metapage several times as long, and concurrent readers
 * waited for it.  The caller holds the flush lock.
 */
void
kdam_lanes_seal(Relation index)
{
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);

	for (int i = 0; i < KDAM_LANES; i++)
		while (!seal_lane(index, metabuf, i))
			CHECK_FOR_INTERRUPTS();
	ReleaseBuffer(metabuf);
}

/*
 * Clear the metapage's bits of the lanes that have no chain, so that scans
 * of an index that takes no more inserts read no lane's header (a seal
 * leaves a lane's bit set, so that the next insert into the lane needs no
 * exclusive lock on the metapage).  A lane whose header an insert holds is
 * in use and keeps its bit.  For VACUUM.
 */
void
kdam_lanes_unmark(Relation index)
{
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	uint32		used;
	uint32		unused = 0;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	used = KdamPageGetMeta(BufferGetPage(metabuf))->lanes_used;
	for (int i = 0; i < KDAM_LANES; i++)
	{
		Buffer		buf;

		if (!(used & (1U << i)))
			continue;
		buf = ReadBuffer(index, KDAM_LANE_BLKNO(i));
		if (ConditionalLockBuffer(buf))
		{
			if (KdamPageGetLane(BufferGetPage(buf))->head == InvalidBlockNumber)
				unused |= 1U << i;
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		}
		ReleaseBuffer(buf);
	}
	if (unused != 0)
	{
		GenericXLogState *state = GenericXLogStart(index);

		KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0))->lanes_used &= ~unused;
		GenericXLogFinish(state);
	}
	UnlockReleaseBuffer(metabuf);
}

/*
 * Remove the dead records of every lane (kdam_chain_delete) and lower the
 * lanes' counts; returns how many were removed.  The caller holds a
 * cleanup lock on the metapage.
 */
int64
kdam_lanes_delete(Relation index, Size recsize,
				  IndexBulkDeleteCallback callback, void *callback_state)
{
	int64		removed = 0;

	for (int i = 0; i < KDAM_LANES; i++)
	{
		KdamLaneData old;
		Buffer		buf = lane_lock(index, i, BUFFER_LOCK_EXCLUSIVE, &old);
		int64		r = kdam_chain_delete(index, old.head, recsize, callback,
										  callback_state);

		if (r > 0)
		{
			GenericXLogState *state = GenericXLogStart(index);

			KdamPageGetLane(GenericXLogRegisterBuffer(state, buf, 0))->n -= r;
			GenericXLogFinish(state);
			removed += r;
		}
		UnlockReleaseBuffer(buf);
	}
	return removed;
}

/* The first page of every lane's chain, into heads (KDAM_LANES of them). */
void
kdam_lanes_heads(Relation index, BlockNumber *heads)
{
	for (int i = 0; i < KDAM_LANES; i++)
	{
		KdamLaneData lane;

		UnlockReleaseBuffer(lane_lock(index, i, BUFFER_LOCK_SHARE, &lane));
		heads[i] = lane.head;
	}
}
