/*
 * changed_pages.c
 *	  The rows of the heap pages that a kd_* call read because the
 *	  visibility map does not mark them all-visible (index_source.c), kept
 *	  with the backend's copy of the index's rows, so that a later call
 *	  finding those pages unchanged reads none of their tuples, and takes
 *	  the rows the earlier call assembled and the tree it searched beside
 *	  them (tree_delta.c) instead of making them again.
 *
 * A kept set (KdgChanged) stands for a later call's reading when:
 *
 *	it belongs to the same copy of the index's rows (same index, same
 *	generation) and was read for the same key column;
 *
 *	the table has as many blocks, the visibility map leaves the same pages
 *	not all-visible, and each has the LSN it had when read: every change of
 *	a tuple of a table with WAL (insert, delete, update, lock, pruning,
 *	freezing) is logged and sets its page's LSN, while hint bits, which
 *	may change without one, do not change whom a tuple is visible to;
 *
 *	every transaction that decided whether those pages' tuples are visible
 *	(their xmin, and the xmax of deleted ones) had ended, committed or
 *	aborted as the hint bits say, before the xmin of both calls' snapshots
 *	(horizon): then both snapshots see exactly the same tuples there, and
 *	no serializable conflict can arise with such a transaction; and
 *
 *	the index's pending rows are the same.
 *
 * A page holding a tuple whose transaction was not yet known to have ended
 * (no hint bit), a multixact deleter, or a table without WAL keeps nothing.
 * Sources hold a reference on the set whose rows they use; a set replaced
 * by a newer one, or whose copy is dropped, is freed when the last source
 * lets go (its context is TopMemoryContext's child, not the copy's, for
 * that reason).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "am/kdam.h"
#include "local/local.h"

/* Free c once no copy points to it and no source uses its rows. */
static void
changed_free_if_unused(KdgChanged *c)
{
	if (!c->owned && c->refs == 0)
		MemoryContextDelete(c->cxt);
}

/* Reset callback of a source's context: it no longer uses the set. */
static void
changed_release(void *arg)
{
	KdgChanged *c = arg;

	c->refs--;
	changed_free_if_unused(c);
}

/* Reset callback of a copy's context: its set is no longer its own. */
static void
changed_owner_gone(void *arg)
{
	KdgIndexRows *r = arg;

	if (r->changed)
	{
		r->changed->owned = false;
		changed_free_if_unused(r->changed);
		r->changed = NULL;
	}
}

/*
 * A set to fill while a call reads its nread pages of a table of nblocks
 * under snapshot, for the source src; NULL when the table has no WAL (its
 * pages' LSNs say nothing).  It lives in a child of the current context
 * until kept, so an error frees it.
 */
KdgChanged *
kdg_changed_begin(Relation heap, const KdSource *src, Snapshot snapshot,
				  BlockNumber nread, BlockNumber nblocks)
{
	MemoryContext cxt;
	KdgChanged *c;

	if (!RelationNeedsWAL(heap) || nread == 0)
		return NULL;
	cxt = AllocSetContextCreate(CurrentMemoryContext, "kdgpu changed pages",
								ALLOCSET_DEFAULT_SIZES);
	c = MemoryContextAllocZero(cxt, sizeof(KdgChanged));
	c->cxt = cxt;
	c->usable = true;
	c->snapshot_xmin = snapshot->xmin;
	c->keyattnum = src->keyattnum;
	c->nblocks = nblocks;
	c->blocks = MemoryContextAlloc(cxt, sizeof(BlockNumber) * nread);
	c->lsns = MemoryContextAlloc(cxt, sizeof(XLogRecPtr) * nread);
	c->first_pair = MemoryContextAlloc(cxt, sizeof(int64) * (nread + 1));
	c->has_rows = MemoryContextAllocZero(cxt, sizeof(bool) * nread);
	c->first_pair[0] = 0;
	return c;
}

/* Make the latest of x and the horizon the horizon. */
static void
changed_horizon(KdgChanged *c, TransactionId x)
{
	if (!TransactionIdIsNormal(x))
		return;
	if (!c->has_horizon || TransactionIdFollows(x, c->horizon))
		c->horizon = x;
	c->has_horizon = true;
}

/*
 * Note one tuple of the page being read, after the visibility check (which
 * sets its hint bits where it can): the transactions that decide whom it
 * is visible to must have ended, as its hint bits say.
 */
void
kdg_changed_tuple(KdgChanged *c, HeapTupleHeader tup)
{
	uint16		mask = tup->t_infomask;

	if (c == NULL || !c->usable)
		return;
	if (HeapTupleHeaderXminInvalid(tup))
		return;					/* aborted: visible to none */
	if ((mask & HEAP_MOVED) || !HeapTupleHeaderXminCommitted(tup))
	{
		c->usable = false;
		return;
	}
	if (!HeapTupleHeaderXminFrozen(tup))
		changed_horizon(c, HeapTupleHeaderGetRawXmin(tup));
	if ((mask & HEAP_XMAX_INVALID) || HEAP_XMAX_IS_LOCKED_ONLY(mask))
		return;					/* not deleted */
	if ((mask & HEAP_XMAX_IS_MULTI) || !(mask & HEAP_XMAX_COMMITTED))
	{
		c->usable = false;
		return;
	}
	changed_horizon(c, HeapTupleHeaderGetRawXmax(tup));
}

/*
 * Note a page read at lsn: byroot maps each root offset (up to maxoff) to
 * its chain's visible tuple, or InvalidOffsetNumber; nvisible of them.
 */
void
kdg_changed_page(KdgChanged *c, BlockNumber block, XLogRecPtr lsn,
				 const OffsetNumber *byroot, OffsetNumber maxoff, int nvisible)
{
	int64		k;

	if (c == NULL || !c->usable)
		return;
	k = c->npages++;
	c->blocks[k] = block;
	c->lsns[k] = lsn;
	c->has_rows[k] = nvisible > 0;
	for (OffsetNumber root = FirstOffsetNumber; nvisible > 0 && root <= maxoff; root++)
	{
		OffsetNumber off = byroot[root];

		if (off == InvalidOffsetNumber || off == root)
			continue;
		if (c->npairs == c->cappairs)
		{
			c->cappairs = Max(c->cappairs * 2, 64);
			c->pairs = c->pairs ?
				repalloc_huge(c->pairs, sizeof(OffsetNumber) * 2 * c->cappairs) :
				MemoryContextAllocHuge(c->cxt, sizeof(OffsetNumber) * 2 * c->cappairs);
		}
		c->pairs[2 * c->npairs] = root;
		c->pairs[2 * c->npairs + 1] = off;
		c->npairs++;
	}
	c->first_pair[k + 1] = c->npairs;
}

/*
 * Whether the rows read into c may be kept: every page's tuples were
 * decided by transactions ended before the reading snapshot's xmin.  Then
 * the call assembles its rows in c's context (kdg_changed_keep).
 */
bool
kdg_changed_usable(const KdgChanged *c)
{
	return c != NULL && c->usable &&
		(!c->has_horizon || TransactionIdPrecedes(c->horizon, c->snapshot_xmin));
}

/* Whether c was read beside the same pending rows, of dimension dim. */
static bool
pending_same(const KdgChanged *c, const KdamRecords *pending, int dim)
{
	return c->npending == pending->n &&
		(c->npending == 0 ||
		 (memcmp(c->pending_refs, pending->refs, sizeof(uint64) * c->npending) == 0 &&
		  memcmp(c->pending_coords, pending->coords,
				 sizeof(double) * dim * c->npending) == 0));
}

/* Let src use c's rows until its context is reset. */
static void
changed_ref(KdgChanged *c, KdSource *src)
{
	MemoryContextCallback *cb = MemoryContextAlloc(src->mcxt, sizeof(MemoryContextCallback));

	src->index_changed = c;
	c->refs++;
	cb->func = changed_release;
	cb->arg = c;
	MemoryContextRegisterResetCallback(src->mcxt, cb);
}

/*
 * Keep c, read for the source src whose rows are now made (in c's context,
 * or the copy's own), as the set of r, replacing any older one, and take a
 * reference for src; pending is the index's pending rows the call used.
 */
void
kdg_changed_keep(KdgIndexRows *r, KdgChanged *c, KdSource *src,
				 const KdamRecords *pending)
{
	MemoryContext old = MemoryContextSwitchTo(c->cxt);

	c->npending = pending->n;
	if (pending->n > 0)
	{
		c->pending_refs = palloc_extended(sizeof(uint64) * pending->n, MCXT_ALLOC_HUGE);
		c->pending_coords = palloc_extended(sizeof(double) * r->dim * pending->n,
											MCXT_ALLOC_HUGE);
		memcpy(c->pending_refs, pending->refs, sizeof(uint64) * pending->n);
		memcpy(c->pending_coords, pending->coords, sizeof(double) * r->dim * pending->n);
	}
	MemoryContextSwitchTo(old);
	c->rows = src->rows;
	c->keys = src->keys;
	c->n = src->n;
	c->dim = src->dim;
	c->stride = src->stride;
	c->info = src->info;
	c->diff = src->index_diff;
	MemoryContextSetParent(c->cxt, TopMemoryContext);
	if (r->changed)
	{
		r->changed->owned = false;
		changed_free_if_unused(r->changed);
	}
	else
	{
		MemoryContextCallback *cb = MemoryContextAlloc(r->cxt, sizeof(MemoryContextCallback));

		cb->func = changed_owner_gone;
		cb->arg = r;
		MemoryContextRegisterResetCallback(r->cxt, cb);
	}
	c->owned = true;
	r->changed = c;
	changed_ref(c, src);
}

/*
 * The set r keeps when it stands for this call's reading (see the top of
 * the file): the table heap of nblocks, whose pages not all-visible are
 * notall (nnotall, ascending), the source src, the call's snapshot and the
 * index's pending rows.  Each page is pinned to compare its LSN.
 */
KdgChanged *
kdg_changed_find(const KdgIndexRows *r, Relation heap, const KdSource *src,
				 Snapshot snapshot, const BlockNumber *notall,
				 BlockNumber nnotall, BlockNumber nblocks,
				 const KdamRecords *pending)
{
	KdgChanged *c = r->changed;

	if (c == NULL || !RelationNeedsWAL(heap) ||
		c->keyattnum != src->keyattnum || c->nblocks != nblocks ||
		c->npages != nnotall ||
		(c->has_horizon && !TransactionIdPrecedes(c->horizon, snapshot->xmin)) ||
		memcmp(c->blocks, notall, sizeof(BlockNumber) * nnotall) != 0 ||
		!pending_same(c, pending, r->dim))
		return NULL;
	for (BlockNumber k = 0; k < nnotall; k++)
	{
		Buffer		buf = ReadBuffer(heap, notall[k]);
		XLogRecPtr	lsn = BufferGetLSNAtomic(buf);

		ReleaseBuffer(buf);
		if (lsn != c->lsns[k])
			return NULL;
	}
	return c;
}

/*
 * Make src's rows those of c (used in place, never written), and its map
 * of HOT chains on the pages c read what they were; src holds a reference
 * on c until its context is reset.
 */
void
kdg_changed_use(KdgChanged *c, KdSource *src)
{
	src->rows = c->rows;
	src->keys = c->keys;
	src->n = c->n;
	src->cap = c->n;
	src->dim = c->dim;
	src->stride = c->stride;
	src->info = c->info;
	src->index_diff = c->diff;
	for (BlockNumber k = 0; k < c->npages; k++)
		if (c->has_rows[k])
			kdg_hot_map_set(src->hot, c->blocks[k], c->pairs + 2 * c->first_pair[k],
							(int) (c->first_pair[k + 1] - c->first_pair[k]));
	changed_ref(c, src);
}

/* Reset callback of a call's context: it is done with c's delta tree. */
static void
changed_delta_done(void *arg)
{
	KdgChanged *c = arg;

	/* a device copy the search made is this backend's: not kept */
	if (c->delta && c->delta->added)
		kde_gpu_release(c->delta->added);
	c->refs--;
	changed_free_if_unused(c);
}

/*
 * Note that the current call searches c's delta tree: when the call's
 * context is reset, the device copy the search made of its added rows is
 * let go (a device copy owned by a backend outlives it until the service
 * sweeps, so none is kept across calls).
 */
void
kdg_changed_use_delta(KdgChanged *c)
{
	MemoryContextCallback *cb = palloc(sizeof(MemoryContextCallback));

	c->refs++;
	cb->func = changed_delta_done;
	cb->arg = c;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);
}
