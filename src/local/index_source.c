/*
 * index_source.c
 *	  The rows of a kd_* function taken from a kdgpu index and the table's
 *	  visibility map, as an index-only scan takes them, instead of a scan of
 *	  the whole table.
 *
 * A function's rows are the rows of its table visible to its snapshot
 * (source.c).  Where a kdgpu index on the column holds every such row, they
 * are:
 *
 *	the index's rows (its trees' live rows and its pending rows) whose heap
 *	page the visibility map marks all-visible: every snapshot sees them, as
 *	an index-only scan relies on; and
 *
 *	the rows visible to the snapshot on every other page, read from the heap.
 *
 * The trees' live rows are read once per version of the index (its
 * metapage's generation, bumped by every merge and every VACUUM that marks
 * rows dead) into a copy kept by this backend, with a tree over them built
 * from that copy: one tree, whether the index is one tree or a forest.  A
 * call reads the visibility map, the pages it does not mark all-visible and
 * the pending rows; when those pages hold exactly the copy's rows there and
 * no row is pending, its rows are the copy's, used in place, and the copy's
 * tree is searched as it is.  Otherwise its rows are assembled from the
 * copy, the pending rows and the pages read, and the copy's tree is searched
 * beside the difference (tree_delta.c), or a tree is built when it is large.
 *
 * Rows are named by the TID the index holds: a HOT chain's root.  A page
 * read from the heap names each visible row by its chain's root too, so
 * that both agree, and keeps where each root's visible row lies.  The TID a
 * function returns is the row's own (kdg_hot_tid): a root on an all-visible
 * page whose line pointer redirects (VACUUM pruned its chain) gives the
 * tuple it leads to, the one visible row of that chain.  Resolving is done
 * for every row an answer holds, before answers are ranked, so ties are
 * ranked by the rows' own TIDs, as the table's order has them.
 *
 * The VACUUM interlock.  The metapage stays pinned from reading its
 * generation until every page is read: VACUUM's cleanup lock on it, taken
 * after it marks rows dead and before the heap frees their line pointers or
 * marks their pages all-visible, waits for the pin.  So a row the copy
 * holds is not freed, nor its TID reused on a page marked all-visible,
 * without the generation changing first.  A page marked all-visible stays
 * so for the snapshot's whole life as far as its rows go: a row on it
 * deleted or HOT-updated later is still visible to the snapshot, and no
 * pruning can remove it while the snapshot holds back the horizon.
 *
 * Where this cannot hold, the table is read as before and kd_status() says
 * why (kd_status().last_run): row-level security, a key column, a type whose
 * index keeps other coordinates than the function reads, an index holding
 * values outside its trees (the table's reading reports them), a snapshot
 * that is not MVCC, or kdgpu.index_rows off.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/visibilitymap.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "am/kdam.h"
#include "geo/kd_gserialized.h"
#include "local/local.h"
#include "service/service.h"

/* copies of indexes' rows a backend keeps */
#define KDG_INDEX_ROWS_CACHE	4

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

/*
 * Heap pages one visibility map page covers (visibilitymap.c): two bits
 * each on the page's contents.
 */
#define KDG_VM_HEAP_PAGES \
	((BlockNumber) ((BLCKSZ - MAXALIGN(SizeOfPageHeaderData)) * 4))

static KdgIndexRows *rows_cache[KDG_INDEX_ROWS_CACHE];
static uint64 rows_clock;
static bool rows_callback_registered;

/* Drop every unpinned stale copy, and unpin all at the end of a transaction. */
static void
rows_xact_callback(XactEvent event, void *arg)
{
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	for (int i = 0; i < KDG_INDEX_ROWS_CACHE; i++)
	{
		KdgIndexRows *r = rows_cache[i];

		if (r == NULL)
			continue;
		r->pins = 0;
		if (r->stale)
		{
			MemoryContextDelete(r->cxt);
			rows_cache[i] = NULL;
		}
	}
}

/* Reset callback: free a copy's tree's device copy. */
static void
rows_release_gpu(void *arg)
{
	KdgIndexRows *r = arg;

	if (r->tree)
		kde_gpu_release(r->tree);
}

/*
 * The kept copy of index's rows at meta's generation, or NULL; copies of
 * older versions are dropped (or, while a call uses them, dropped at the
 * end of the transaction).
 */
static KdgIndexRows *
rows_cache_find(Relation index, const KdamMetaPageData *meta)
{
	KdgIndexRows *found = NULL;

	for (int i = 0; i < KDG_INDEX_ROWS_CACHE; i++)
	{
		KdgIndexRows *r = rows_cache[i];

		if (r == NULL || r->indexrelid != RelationGetRelid(index) || r->stale)
			continue;
		if (RelFileNodeEquals(r->node, index->rd_node) &&
			r->generation == meta->generation)
		{
			found = r;
			continue;
		}
		if (r->pins > 0)
			r->stale = true;
		else
		{
			MemoryContextDelete(r->cxt);
			rows_cache[i] = NULL;
		}
	}
	return found;
}

/* Keep r, in place of the least recently used unpinned copy. */
static void
rows_cache_add(KdgIndexRows *r)
{
	int			slot = -1;

	if (!rows_callback_registered)
	{
		RegisterXactCallback(rows_xact_callback, NULL);
		rows_callback_registered = true;
	}
	for (int i = 0; i < KDG_INDEX_ROWS_CACHE; i++)
	{
		if (rows_cache[i] == NULL)
		{
			slot = i;
			break;
		}
		if (rows_cache[i]->pins == 0 &&
			(slot < 0 || rows_cache[i]->last_use < rows_cache[slot]->last_use))
			slot = i;
	}
	if (slot < 0)
		elog(ERROR, "kdgpu: every kept copy of an index's rows is in use");
	if (rows_cache[slot])
		MemoryContextDelete(rows_cache[slot]->cxt);
	rows_cache[slot] = r;
}

/*
 * Read the live rows of index's trees at meta's generation into a new copy
 * (the caller holds the metapage's pin).
 */
static KdgIndexRows *
rows_read(Relation index, const KdamMetaPageData *meta)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext,
											  "kdgpu index rows",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	KdgIndexRows *r = palloc0(sizeof(KdgIndexRows));
	KdamLiveRows live;
	MemoryContextCallback *cb;
	int			stride = meta->dim + 1;

	PG_TRY();
	{
		kdam_read_live_rows(index, meta, &live);
		r->rows = palloc_extended(sizeof(KdSlot) * stride * Max(live.n, 1),
								  MCXT_ALLOC_HUGE);
		for (int64 i = 0; i < live.n; i++)
		{
			KdSlot	   *row = r->rows + i * stride;

			for (int d = 0; d < meta->dim; d++)
				row[d].coord = live.coords[i * meta->dim + d];
			row[meta->dim].tid = live.tids[i];
		}
		pfree(live.coords);
		pfree(live.tids);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	r->indexrelid = RelationGetRelid(index);
	r->node = index->rd_node;
	r->generation = meta->generation;
	r->dim = meta->dim;
	r->n = live.n;
	r->cxt = cxt;
	strlcpy(r->indexname, RelationGetRelationName(index), NAMEDATALEN);
	cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));
	cb->func = rows_release_gpu;
	cb->arg = r;
	MemoryContextRegisterResetCallback(cxt, cb);
	return r;
}

/*
 * A kdgpu index whose rows the source may be taken from, opened, or NULL:
 * one on exactly the source's column holding the coordinates it reads (a
 * 2-D geometry index holds those of a column of XY points only).
 */
static Relation
source_index(const KdSource *src, Relation heap)
{
	List	   *indexes = RelationGetIndexList(heap);
	ListCell   *lc;
	Relation	found = NULL;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		if (kdg_index_usable(index, src->attnum))
		{
			KdPointType type = kdam_index_type(index);

			if (type == src->type ||
				(type == KD_TYPE_GEOMETRY_2D && src->type == KD_TYPE_GEOMETRY))
			{
				found = index;
				break;
			}
		}
		index_close(index, AccessShareLock);
	}
	list_free(indexes);
	return found;
}

/* Why the table is read instead of an index, or NULL when it need not be. */
static const char *
table_read_reason(const KdSource *src, Relation heap)
{
	char		relkind = heap->rd_rel->relkind;

	if (!kdgpu_index_rows)
		return "kdgpu.index_rows is off";
	if (src->keyattnum != InvalidAttrNumber)
		return "a key column is read from the table";
	if (src->extra != 0)
		return "the index keeps other coordinates than the function reads";
	if (relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW)
		return "not a plain table";
	if (!IsMVCCSnapshot(GetActiveSnapshot()))
		return "the snapshot is not MVCC";
	return NULL;
}

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
static void
keep_vm_range(KdgIndexRows *r, BlockNumber vmpage, XLogRecPtr lsn)
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

/* A new map of a table's pages, every page unknown, beside r's. */
static KdgHotMap *
hot_map_new(Relation heap, BlockNumber nblocks, KdgIndexRows *r)
{
	KdgHotMap  *hot = palloc0(sizeof(KdgHotMap));

	hot->relid = RelationGetRelid(heap);
	hot->nblocks = nblocks;
	hot->call.mcxt = CurrentMemoryContext;
	page_maps_grow(&hot->call, nblocks);
	if (RelationNeedsWAL(heap))
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
	{
		for (BlockNumber block = 0; block < hot->nblocks; block++)
			if (!hot_known(hot, block))
			{
				CHECK_FOR_INTERRUPTS();
				hot_read_page(hot, heap, block);
			}
	}
	else
		for (int64 q = 0; q < nq; q++)
			for (int i = 0; i < count[q]; i++)
			{
				uint64		root = kdg_row_tid(src, raw[q * kk + i].ref);
				BlockNumber block = (BlockNumber) (root >> 16);

				if (!hot_known(hot, block))
				{
					CHECK_FOR_INTERRUPTS();
					hot_read_page(hot, heap, block);
				}
			}
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
 * Add the rows of a page the visibility map does not mark all-visible that
 * the snapshot sees to nv, each named by its chain's root (in root order),
 * and map the roots to the rows in hot.
 */
static void
read_heap_page(Relation heap, BlockNumber block, Snapshot snapshot,
			   KdSource *nv, KdgHotMap *hot, BufferAccessStrategy strategy)
{
	Buffer		buf = ReadBufferExtended(heap, MAIN_FORKNUM, block, RBM_NORMAL,
										 strategy);
	Page		page;
	OffsetNumber maxoff;
	OffsetNumber roots[MaxHeapTuplesPerPage];
	OffsetNumber byroot[MaxHeapTuplesPerPage + 1];
	OffsetNumber *map;
	int			nvisible = 0;
	TupleDesc	desc = RelationGetDescr(heap);

	memset(byroot, 0, sizeof(byroot));
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	maxoff = PageGetMaxOffsetNumber(page);
	heap_get_root_tuples(page, roots);
	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
	{
		ItemId		lp = PageGetItemId(page, off);
		HeapTupleData tuple;
		bool		valid;

		if (!ItemIdIsNormal(lp))
			continue;
		tuple.t_data = (HeapTupleHeader) PageGetItem(page, lp);
		tuple.t_len = ItemIdGetLength(lp);
		tuple.t_tableOid = RelationGetRelid(heap);
		ItemPointerSet(&tuple.t_self, block, off);
		valid = HeapTupleSatisfiesVisibility(&tuple, snapshot, buf);
		HeapCheckForSerializableConflictOut(valid, heap, &tuple, buf, snapshot);
		if (!valid)
			continue;
		if (roots[off - 1] == InvalidOffsetNumber)
			elog(ERROR, "kdgpu: no HOT chain root found for row (%u,%u) of \"%s\"",
				 block, off, RelationGetRelationName(heap));
		byroot[roots[off - 1]] = off;
		nvisible++;
	}
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);

	/* the pin keeps the tuples in place while their values are read */
	map = page_maps_add(&hot->call, block);
	for (OffsetNumber root = FirstOffsetNumber; nvisible > 0 && root <= maxoff; root++)
	{
		OffsetNumber off = byroot[root];
		HeapTupleData tuple;
		ItemPointerData tid;
		bool		isnull;
		Datum		value;

		if (off == InvalidOffsetNumber)
			continue;
		nvisible--;
		map[root] = off;
		tuple.t_data = (HeapTupleHeader) PageGetItem(page, PageGetItemId(page, off));
		tuple.t_len = ItemIdGetLength(PageGetItemId(page, off));
		value = heap_getattr(&tuple, nv->attnum, desc, &isnull);
		ItemPointerSet(&tid, block, root);
		kdg_source_add(nv, value, isnull, &tid, (Datum) 0, true);
	}
	ReleaseBuffer(buf);
}

/* The first of the copy's rows whose TID is at least tid. */
static int64
rows_lower_bound(const KdgIndexRows *r, uint64 tid)
{
	int64		lo = 0,
				hi = r->n;

	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (r->rows[mid * (r->dim + 1) + r->dim].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Whether the rows read from the pages the visibility map does not mark
 * all-visible (nv, in TID order; the pages' blocks are notall[], nnotall of
 * them, ascending) are exactly the copy's rows on those pages, point for
 * point.
 */
static bool
pages_match(const KdgIndexRows *r, const KdSource *nv,
			const BlockNumber *notall, BlockNumber nnotall)
{
	int			stride = r->dim + 1;
	int64		j = 0;

	for (BlockNumber k = 0; k < nnotall; k++)
	{
		uint64		first = (uint64) notall[k] << 16;
		int64		i = rows_lower_bound(r, first);

		for (; i < r->n; i++, j++)
		{
			const KdSlot *row = r->rows + i * stride;

			if ((row[r->dim].tid >> 16) != notall[k])
				break;
			if (j == nv->n || kdg_row_tid(nv, j) != row[r->dim].tid ||
				memcmp(kdg_row_coords(nv, j), row, sizeof(double) * r->dim) != 0)
				return false;
		}
		if (j < nv->n && (kdg_row_tid(nv, j) >> 16) == notall[k])
			return false;
	}
	return j == nv->n;
}

/* Append one row of dim coordinates and packed TID to src. */
static void
append_row(KdSource *src, const double *coords, uint64 tid)
{
	KdSlot	   *row;

	if (src->n == src->cap)
	{
		src->cap = Max(src->cap * 2, 1024);
		src->rows = src->rows ?
			repalloc_huge(src->rows, sizeof(KdSlot) * src->stride * src->cap) :
			MemoryContextAllocExtended(src->mcxt, sizeof(KdSlot) * src->stride * src->cap,
									   MCXT_ALLOC_HUGE);
	}
	row = src->rows + src->n * src->stride;
	memcpy(row, coords, sizeof(double) * src->dim);
	row[src->dim].tid = tid;
	src->n++;
}

/* qsort comparator of pending rows' places by TID (arg: the refs). */
static int
pending_cmp(const void *a, const void *b, void *arg)
{
	const uint64 *refs = arg;
	uint64		x = refs[*(const int64 *) a];
	uint64		y = refs[*(const int64 *) b];

	return (x > y) - (x < y);
}

/*
 * Assemble the source's rows in TID order: the copy's and the pending rows
 * on all-visible pages, and the rows read from the other pages (nv).
 */
static void
assemble(KdSource *src, const KdgIndexRows *r, const KdamRecords *pending,
		 const KdSource *nv, const bool *notall, BlockNumber nblocks)
{
	int64		npend = 0;
	int64	   *order = palloc(sizeof(int64) * Max(pending->n, 1));
	int64		i = 0,
				p = 0,
				v = 0;
	int			stride = r->dim + 1;

	for (int64 k = 0; k < pending->n; k++)
	{
		BlockNumber block = (BlockNumber) (pending->refs[k] >> 16);

		if (block < nblocks && !notall[block])
			order[npend++] = k;
	}
	qsort_arg(order, npend, sizeof(int64), pending_cmp, pending->refs);
	src->n = 0;
	src->cap = 0;
	src->rows = NULL;
	for (;;)
	{
		uint64		tr = UINT64_MAX,
					tp = UINT64_MAX,
					tv = UINT64_MAX;

		while (i < r->n)
		{
			uint64		tid = r->rows[i * stride + r->dim].tid;
			BlockNumber block = (BlockNumber) (tid >> 16);

			if (block < nblocks && !notall[block])
			{
				tr = tid;
				break;
			}
			i++;
		}
		if (p < npend)
			tp = pending->refs[order[p]];
		if (v < nv->n)
			tv = kdg_row_tid(nv, v);
		if (tr == UINT64_MAX && tp == UINT64_MAX && tv == UINT64_MAX)
			break;
		if (tr <= tp && tr <= tv)
			append_row(src, &r->rows[i++ * stride].coord, tr);
		else if (tp <= tv)
		{
			append_row(src, pending->coords + order[p] * src->dim, tp);
			p++;
		}
		else
		{
			append_row(src, kdg_row_coords(nv, v), tv);
			v++;
		}
	}
	pfree(order);
}

/*
 * Take the source's rows from a kdgpu index on its column and the table's
 * visibility map (see the top of the file); false, with note saying why,
 * when the table must be read instead.
 */
bool
kdg_index_source_read(KdSource *src, char *note, size_t notelen)
{
	Relation	heap = table_open(src->relid, AccessShareLock);
	const char *why = table_read_reason(src, heap);
	Relation	index = NULL;
	Buffer		metabuf;
	KdamMetaPageData meta;
	KdgIndexRows *r = NULL;
	KdamRecords pending;
	Snapshot	snapshot = GetActiveSnapshot();
	BlockNumber nblocks;
	BlockNumber nread = 0;
	bool	   *notall;
	BlockNumber *notall_list;
	Buffer		vmbuf = InvalidBuffer;
	BufferAccessStrategy strategy;
	KdSource	nv;

	if (why == NULL && (index = source_index(src, heap)) == NULL)
		why = "it has no kdgpu index on the column";
	if (why)
	{
		snprintf(note, notelen,
				 "the table was read: %s", why);
		table_close(heap, NoLock);
		return false;
	}

	/* the metapage's pin, held to the end, is the VACUUM interlock */
	metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	for (int attempt = 0;; attempt++)
	{
		LockBuffer(metabuf, BUFFER_LOCK_SHARE);
		meta = *kdam_metapage(index, BufferGetPage(metabuf));
		if (r && r->generation == meta.generation)
			break;
		if (meta.noutside > 0 || attempt == 3 ||
			(kdg_type_is_postgis(src->type) && meta.zm != 0 &&
			 kdam_index_type(index) == KD_TYPE_GEOMETRY_2D))
		{
			UnlockReleaseBuffer(metabuf);
			snprintf(note, notelen,
					 "the table was read: %s",
					 meta.noutside > 0 ?
					 "its index holds values outside its trees" :
					 attempt == 3 ?
					 "its index kept changing while its rows were read" :
					 "its 2-D index does not keep the points' Z or M");
			index_close(index, AccessShareLock);
			table_close(heap, NoLock);
			return false;
		}
		if ((r = rows_cache_find(index, &meta)) != NULL)
			break;
		LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
		r = rows_read(index, &meta);
		rows_cache_add(r);
	}
	r->pins++;
	r->last_use = ++rows_clock;
	memset(&pending, 0, sizeof(pending));
	if (meta.nflush > 0 || meta.lanes_used != 0)
		kdam_read_pending(index, &meta, &pending);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);

	/* the pages the visibility map does not mark all-visible, read */
	PredicateLockRelation(heap, snapshot);
	nblocks = RelationGetNumberOfBlocks(heap);
	notall = palloc0(sizeof(bool) * Max(nblocks, 1));
	notall_list = palloc(sizeof(BlockNumber) * Max(nblocks, 1));
	src->hot = hot_map_new(heap, nblocks, r);
	for (BlockNumber b = 0; b < nblocks; b++)
	{
		if (!VM_ALL_VISIBLE(heap, b, &vmbuf))
		{
			notall[b] = true;
			notall_list[nread++] = b;
		}
		/* a map page's LSN, read after its bits */
		if (src->hot->kept && (b + 1 == nblocks || (b + 1) % KDG_VM_HEAP_PAGES == 0))
		{
			BlockNumber vmpage = b / KDG_VM_HEAP_PAGES;

			keep_vm_range(r, vmpage,
						  BufferIsValid(vmbuf) && BufferGetBlockNumber(vmbuf) == vmpage ?
						  BufferGetLSNAtomic(vmbuf) : InvalidXLogRecPtr);
		}
	}
	if (BufferIsValid(vmbuf))
		ReleaseBuffer(vmbuf);
	memcpy(&nv, src, sizeof(nv));
	nv.n = nv.cap = 0;
	nv.rows = NULL;
	nv.hot = NULL;
	strategy = GetAccessStrategy(BAS_BULKREAD);
	for (BlockNumber k = 0; k < nread; k++)
	{
		CHECK_FOR_INTERRUPTS();
		read_heap_page(heap, notall_list[k], snapshot, &nv, src->hot, strategy);
	}
	FreeAccessStrategy(strategy);
	ReleaseBuffer(metabuf);

	/* the index holds points of one dimension, SRID and Z/M flags */
	src->dim = r->n > 0 || pending.n > 0 ? meta.dim : nv.dim;
	if (nv.n > 0)
		src->info = nv.info;
	else if (kdg_type_is_postgis(src->type))
	{
		src->info.srid = meta.srid;
		src->info.zm = meta.zm;
		src->info.geotype = KD_GS_POINTTYPE;
	}
	if (nv.n > 0 && nv.dim != src->dim)
		elog(ERROR, "kdgpu: rows of dimension %d read beside an index of dimension %d",
			 nv.dim, src->dim);
	src->stride = kdg_source_stride(src, src->dim);
	src->index_rows = r;
	if (pending.n == 0 && pages_match(r, &nv, notall_list, nread))
	{
		/* the copy's rows are the call's: used in place, never written */
		src->rows = r->rows;
		src->n = r->n;
		src->cap = r->n;
	}
	else
		assemble(src, r, &pending, &nv, notall, nblocks);
	snprintf(note, notelen,
			 "rows from index \"%s\" and the visibility map, %u of %u table pages read",
			 r->indexname, nread, nblocks);
	pfree(notall);
	pfree(notall_list);
	index_close(index, AccessShareLock);
	table_close(heap, NoLock);
	return true;
}

/*
 * The copy's tree, built over its rows on first use (references are the
 * copy's ordinals) where the engine chooses, and kept; it is named by the
 * index and its generation, so that the GPU service keeps one device copy
 * for every session.
 */
static KdTree *
rows_tree(KdgIndexRows *r)
{
	KdSource	view;
	MemoryContext old;
	bool		used_gpu;

	if (r->tree || r->n == 0)
		return r->tree;
	memset(&view, 0, sizeof(view));
	view.n = r->n;
	view.dim = r->dim;
	view.stride = r->dim + 1;
	view.rows = r->rows;
	old = MemoryContextSwitchTo(r->cxt);
	r->tree = kdg_build_tree(&view, &used_gpu);
	MemoryContextSwitchTo(old);
	kdg_service_key_of_index(r->tree->key, r->indexrelid, r->node.relNode,
							 r->generation, 0, KDG_KEY_ROWS);
	return r->tree;
}

/*
 * The tree to search for a source whose rows were taken from an index, for
 * work of that many items: the copy's tree, as it is when the source's rows
 * are the copy's, else beside the difference (tree_delta.c) when it is
 * within the limits (but for All-kNN, where a build costs less); else one
 * built over the source's rows.  Work for the GPU keeps the copy's device
 * copy.
 */
KdgTree *
kdg_index_source_tree(const KdSource *src, int64 work, bool all_knn)
{
	KdgIndexRows *r = src->index_rows;
	KdTree	   *tree = NULL;
	bool		used_gpu;

	if (src->n == 0)
		return kdg_tree_plain(NULL);
	if (src->rows == r->rows || !all_knn)
		tree = rows_tree(r);
	if (tree && kdg_gpu_wanted(work))
	{
		KdExec		exec;
		KdError		err;

		kdg_exec_prepare(&exec);
		if (exec.device != KD_DEVICE_CPU && kde_gpu_upload(tree, &exec, &err) != KD_OK)
			elog(DEBUG1, "kdgpu: index rows' tree not uploaded: %s", err.message);
	}
	if (src->rows == r->rows)
		return kdg_tree_plain(tree);
	if (tree)
	{
		int64		maxdiff = kdg_delta_max(src->n);
		KdgRowsView tv = {&r->rows[r->dim].tid, r->dim + 1, NULL, 0, r->n};
		KdgRowsView rv = {&src->rows[src->dim].tid, src->stride, NULL, 0, src->n};
		KdgDiff		diff;

		kdg_diff_alloc(&diff, maxdiff);
		if (kdg_rows_diff(&tv, &rv, src->dim, maxdiff, maxdiff, &diff))
			return kdg_tree_delta(src, tree, &diff);
	}
	return kdg_tree_plain(kdg_build_tree(src, &used_gpu));
}
