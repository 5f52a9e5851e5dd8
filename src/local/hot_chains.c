/*
 * hot_chains.c
 *	  The TIDs of rows named by their HOT chain's root: the rows the kd_*
 *	  functions take from a kdgpu index (index_source.c) carry the TID the
 *	  index holds, and return the row's own.
 *
 * A row HOT-updated has the index's TID (its chain's root) and one of its
 * own.  On a page the call read under its snapshot (index_source.c), the
 * map from each root to its visible row is made as the page is read.  On an
 * all-visible page, a root whose line pointer redirects (VACUUM pruned its
 * chain) leads to the chain's one row: pruning left no other on a page all
 * visible.  Those pages' line pointers are read when an answer first holds
 * one of their rows, before answers are ranked, so ties are ranked by the
 * rows' own TIDs as the table's order has them; the engine's threads, which
 * rank them, call nothing of PostgreSQL, so the pages are read before
 * (kdg_hot_read_pages).
 *
 * What all-visible pages say is kept by the index's copy across calls
 * (index_rows.c) while the LSN of the visibility map page covering them is
 * unchanged: a page's line pointers change only while its bit is clear,
 * and setting the bit again bumps the map page's LSN (read after the bits a
 * call used).  Tables without WAL keep nothing.
 *
 * A chain's versions share their key too (kdg_root_key), which the copies
 * of indexes' rows and their pending rows read through the root.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "local/local.h"

/* a page the call has not looked at, or one that redirects no root */
#define KDG_PAGE_UNKNOWN	0
#define KDG_PAGE_PLAIN		(-1)

/*
 * What heap pages' line pointers say of HOT chains' roots (kdg_hot_tid): per
 * page, unknown, plain (every root is its row), or the index + 1 of an
 * offset map from roots to rows.
 */
struct KdgPageMaps
{
	BlockNumber npages;
	int32	   *state;			/* npages */
	OffsetNumber **maps;
	int			nmaps;
	int			capmaps;
	MemoryContext mcxt;			/* where they live */
};

/*
 * How a call's rows' roots map to their own TIDs: the pages it read under
 * its snapshot and all-visible ones whose copy's maps could not be kept
 * (call), and the all-visible pages' maps its index's copy keeps across
 * calls (kept, or NULL).
 */
struct KdgHotMap
{
	Oid			relid;
	BlockNumber nblocks;
	KdgPageMaps call;
	KdgPageMaps *kept;
	const KdgIndexRows *rows;	/* kept's owner: which ranges are valid */
	bool		threads;		/* looked up by threads: read no page */
	bool		missed;			/* a thread looked up a page not read */
};

/* Make pm hold npages pages, every new one unknown, in its context. */
static void
page_maps_grow(KdgPageMaps *pm, BlockNumber npages)
{
	if (pm->state == NULL)
	{
		pm->state = MemoryContextAllocZero(pm->mcxt, sizeof(int32) * Max(npages, 1));
		pm->capmaps = 16;
		pm->maps = MemoryContextAlloc(pm->mcxt, sizeof(OffsetNumber *) * pm->capmaps);
		pm->npages = npages;
		return;
	}
	if (npages <= pm->npages)
		return;
	pm->state = repalloc(pm->state, sizeof(int32) * npages);
	memset(pm->state + pm->npages, 0, sizeof(int32) * (npages - pm->npages));
	pm->npages = npages;
}

/* A new offset map of block in pm, every root its own row until set. */
static OffsetNumber *
page_maps_add(KdgPageMaps *pm, BlockNumber block)
{
	OffsetNumber *map = MemoryContextAlloc(pm->mcxt,
										   sizeof(OffsetNumber) * (MaxHeapTuplesPerPage + 1));

	for (int i = 0; i <= MaxHeapTuplesPerPage; i++)
		map[i] = (OffsetNumber) i;
	if (pm->nmaps == pm->capmaps)
	{
		pm->capmaps *= 2;
		pm->maps = repalloc(pm->maps, sizeof(OffsetNumber *) * pm->capmaps);
	}
	pm->maps[pm->nmaps++] = map;
	pm->state[block] = pm->nmaps;
	return map;
}

/* What pm says of block: KDG_PAGE_UNKNOWN when it says nothing. */
static inline int32
page_maps_state(const KdgPageMaps *pm, BlockNumber block)
{
	return pm && block < pm->npages ? pm->state[block] : KDG_PAGE_UNKNOWN;
}

/* The row of root on a page whose state in pm is state (not unknown). */
static inline uint64
page_maps_row(const KdgPageMaps *pm, int32 state, uint64 root)
{
	if (state == KDG_PAGE_PLAIN)
		return root;
	return (root & ~UINT64CONST(0xFFFF)) | pm->maps[state - 1][root & 0xFFFF];
}

/*
 * Forget what the copy keeps of all-visible pages whose visibility map page
 * has a new LSN (lsn, read after the bits the call used): a page's bit set
 * again after a change bumps it.  Where the map page's LSN says nothing (no
 * WAL, no map page), nothing is kept.
 */
void
kdg_hot_keep_vm_range(KdgIndexRows *r, BlockNumber vmpage, XLogRecPtr lsn)
{
	BlockNumber first = vmpage * KDG_VM_HEAP_PAGES;
	BlockNumber end = Min(first + KDG_VM_HEAP_PAGES, r->pages->npages);

	if (vmpage >= r->nvm)
	{
		int			n = Max(vmpage + 1, r->nvm * 2);

		r->vm_lsn = r->vm_lsn ? repalloc(r->vm_lsn, sizeof(XLogRecPtr) * n) :
			MemoryContextAlloc(r->cxt, sizeof(XLogRecPtr) * n);
		for (int i = r->nvm; i < n; i++)
			r->vm_lsn[i] = InvalidXLogRecPtr;
		r->nvm = n;
	}
	if (r->vm_lsn[vmpage] == lsn && !XLogRecPtrIsInvalid(lsn))
		return;
	for (BlockNumber b = first; b < end; b++)
		r->pages->state[b] = KDG_PAGE_UNKNOWN;
	r->vm_lsn[vmpage] = lsn;
}

/*
 * A new map of a table's pages, every page unknown, beside the copy r's
 * (NULL: the call's map alone).
 */
KdgHotMap *
kdg_hot_map_new(Relation heap, BlockNumber nblocks, KdgIndexRows *r)
{
	KdgHotMap  *hot = palloc0(sizeof(KdgHotMap));

	hot->relid = RelationGetRelid(heap);
	hot->nblocks = nblocks;
	hot->call.mcxt = CurrentMemoryContext;
	page_maps_grow(&hot->call, nblocks);
	if (r != NULL && RelationNeedsWAL(heap))
	{
		if (r->pages == NULL)
		{
			r->pages = MemoryContextAllocZero(r->cxt, sizeof(KdgPageMaps));
			r->pages->mcxt = r->cxt;
		}
		page_maps_grow(r->pages, nblocks);
		hot->kept = r->pages;
		hot->rows = r;
	}
	return hot;
}

/*
 * Look at an all-visible page's line pointers: a root that redirects leads
 * to its chain's one row (pruning left no other on a page all-visible).
 * What they say is kept by the copy when its visibility map range is
 * valid, else for the call.
 */
static void
hot_read_page(KdgHotMap *hot, Relation heap, BlockNumber block)
{
	Buffer		buf = ReadBuffer(heap, block);
	KdgPageMaps *pm = &hot->call;
	Page		page;
	OffsetNumber maxoff;
	OffsetNumber *map = NULL;

	if (hot->kept && block < hot->kept->npages &&
		block / KDG_VM_HEAP_PAGES < (BlockNumber) hot->rows->nvm &&
		!XLogRecPtrIsInvalid(hot->rows->vm_lsn[block / KDG_VM_HEAP_PAGES]))
		pm = hot->kept;
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	maxoff = PageGetMaxOffsetNumber(page);
	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
	{
		ItemId		lp = PageGetItemId(page, off);

		if (!ItemIdIsRedirected(lp))
			continue;
		if (map == NULL)
			map = page_maps_add(pm, block);
		map[off] = ItemIdGetRedirect(lp);
	}
	UnlockReleaseBuffer(buf);
	if (map == NULL)
		pm->state[block] = KDG_PAGE_PLAIN;
}

/* Whether block's line pointers are known to the call. */
static inline bool
hot_known(const KdgHotMap *hot, BlockNumber block)
{
	return block >= hot->nblocks ||
		hot->call.state[block] != KDG_PAGE_UNKNOWN ||
		page_maps_state(hot->kept, block) != KDG_PAGE_UNKNOWN;
}

/* Read every page whose line pointers are not known yet. */
static void
hot_read_all(KdgHotMap *hot, Relation heap)
{
	for (BlockNumber block = 0; block < hot->nblocks; block++)
		if (!hot_known(hot, block))
		{
			CHECK_FOR_INTERRUPTS();
			hot_read_page(hot, heap, block);
		}
}

/* Read the pages of n candidates (ordinals of src) not known yet. */
static void
hot_read_candidates(const KdSource *src, Relation heap, const KdNeighbor *cand,
					int64 n)
{
	for (int64 i = 0; i < n; i++)
	{
		uint64		root = kdg_row_tid(src, cand[i].ref);
		BlockNumber block = (BlockNumber) (root >> 16);

		if (!hot_known(src->hot, block))
		{
			CHECK_FOR_INTERRUPTS();
			hot_read_page(src->hot, heap, block);
		}
	}
}

/*
 * Before the engine's threads look up the TIDs of candidates (raw holds nq
 * runs of kk, count[q] of query q's, references ordinals of src), read the
 * pages they lie on that are not known yet: threads call nothing of
 * PostgreSQL.
 */
void
kdg_hot_read_pages(const KdSource *src, const KdNeighbor *raw,
				   const int32 *count, int64 nq, int kk)
{
	KdgHotMap  *hot = src->hot;
	Relation	heap = table_open(hot->relid, NoLock);

	/* more candidates than pages (All-kNN): every page, in one pass */
	if (nq * kk > (int64) hot->nblocks)
		hot_read_all(hot, heap);
	else
		for (int64 q = 0; q < nq; q++)
			hot_read_candidates(src, heap, raw + q * kk, count[q]);
	table_close(heap, NoLock);
	hot->threads = true;
}

/* The same for n candidates in one run (a range search's hits). */
void
kdg_hot_read_hits(const KdSource *src, const KdNeighbor *hits, int64 n)
{
	KdgHotMap  *hot = src->hot;
	Relation	heap = table_open(hot->relid, NoLock);

	if (n > (int64) hot->nblocks)
		hot_read_all(hot, heap);
	else
		hot_read_candidates(src, heap, hits, n);
	table_close(heap, NoLock);
	hot->threads = true;
}

/* The same for every row of src: each page not known yet is read. */
void
kdg_hot_read_all(const KdSource *src)
{
	KdgHotMap  *hot = src->hot;
	Relation	heap = table_open(hot->relid, NoLock);

	hot_read_all(hot, heap);
	table_close(heap, NoLock);
	hot->threads = true;
}

/* After the threads: an error if one looked up a page not read. */
void
kdg_hot_threads_done(KdgHotMap *hot)
{
	hot->threads = false;
	if (hot->missed)
		elog(ERROR, "kdgpu: a row's page was not read before the threads ranked it");
}

/* The row's own packed TID for a row named by its chain's root. */
uint64
kdg_hot_tid(KdgHotMap *hot, uint64 root)
{
	BlockNumber block = (BlockNumber) (root >> 16);
	int32		state;

	if (block >= hot->nblocks)
		return root;
	for (;;)
	{
		Relation	heap;

		if ((state = hot->call.state[block]) != KDG_PAGE_UNKNOWN)
			return page_maps_row(&hot->call, state, root);
		if ((state = page_maps_state(hot->kept, block)) != KDG_PAGE_UNKNOWN)
			return page_maps_row(hot->kept, state, root);
		if (hot->threads)
		{
			hot->missed = true;
			return root;
		}
		heap = table_open(hot->relid, NoLock);
		hot_read_page(hot, heap, block);
		table_close(heap, NoLock);
	}
}

/*
 * The key (kdg_key_to_ref) of the row that root names on a page the caller
 * holds locked: a root that redirects leads to its chain's row, and every
 * version of a chain has one key (the key column is indexed, which HOT
 * never changes).  False when root leads to no tuple (dead and pruned) or
 * the key is NULL.
 */
bool
kdg_root_key(Page page, OffsetNumber root, const KdSource *src,
			 TupleDesc desc, uint64 *key)
{
	ItemId		lp;
	HeapTupleData tuple;
	bool		isnull;
	Datum		value;

	if (root > PageGetMaxOffsetNumber(page))
		return false;
	lp = PageGetItemId(page, root);
	if (ItemIdIsRedirected(lp))
		lp = PageGetItemId(page, ItemIdGetRedirect(lp));
	if (!ItemIdIsNormal(lp))
		return false;
	tuple.t_data = (HeapTupleHeader) PageGetItem(page, lp);
	tuple.t_len = ItemIdGetLength(lp);
	value = heap_getattr(&tuple, src->keyattnum, desc, &isnull);
	if (isnull)
		return false;
	*key = kdg_key_to_ref(src->keytype, value);
	return true;
}

/* Whether the copy keeps what all-visible pages say for this call. */
bool
kdg_hot_keeps(const KdgHotMap *hot)
{
	return hot->kept != NULL;
}

/*
 * The map for the call of a page an earlier call read under its snapshot
 * (changed_pages.c): npairs (root, row) pairs, every other root its own row.
 */
void
kdg_hot_map_set(KdgHotMap *hot, BlockNumber block, const OffsetNumber *pairs,
				int npairs)
{
	OffsetNumber *map;

	if (npairs == 0)
	{
		hot->call.state[block] = KDG_PAGE_PLAIN;
		return;
	}
	map = page_maps_add(&hot->call, block);
	for (int i = 0; i < npairs; i++)
		map[pairs[2 * i]] = pairs[2 * i + 1];
}

/*
 * A new map for the call of a page it read under its snapshot, every root
 * its own row until set.
 */
OffsetNumber *
kdg_hot_map_page(KdgHotMap *hot, BlockNumber block)
{
	return page_maps_add(&hot->call, block);
}
