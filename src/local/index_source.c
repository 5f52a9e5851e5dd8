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
 *	the index's rows (its trees' live rows, from the backend's copy of them,
 *	index_rows.c, and its pending rows) whose heap page the visibility map
 *	marks all-visible: every snapshot sees them, as an index-only scan
 *	relies on; and
 *
 *	the rows visible to the snapshot on every other page, read from the heap.
 *
 * When those pages hold exactly the copy's rows there and no row is
 * pending, the call's rows are the copy's, used in place, and the copy's
 * tree is searched as it is; otherwise they are assembled from the copy,
 * the pending rows and the pages read, and the copy's tree is searched
 * beside the difference (tree_delta.c), or a tree is built when it is
 * large.  What a call read of those pages, and the rows it assembled, are
 * kept for a later call that finds the pages unchanged (changed_pages.c).
 * Rows are named by the TID the index holds, their HOT chain's root; a
 * page read here names its visible rows so too, and answers give the
 * rows' own TIDs (hot_chains.c).
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
 * why (last_run): row-level security, a key column with no unique index, a
 * type whose index keeps other coordinates than the function reads, an
 * index holding values outside its trees (the table's reading reports
 * them), a snapshot that is not MVCC, a hot standby (where replay takes no
 * cleanup lock, so the pin is no interlock, as for index-only scans), or
 * kdgpu.index_rows off.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/visibilitymap.h"
#include "access/xlog.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "am/kdam.h"
#include "geo/kd_gserialized.h"
#include "local/local.h"

/*
 * An index of heap that fits the source, opened, or NULL: for kdgpu's
 * (kdg_index_fits), one on exactly the source's column holding the
 * coordinates it reads (a 2-D geometry index holds those of a column of XY
 * points only).
 */
Relation
kdg_source_index(const KdSource *src, Relation heap, KdgIndexFits fits)
{
	List	   *indexes = RelationGetIndexList(heap);
	ListCell   *lc;
	Relation	found = NULL;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		if (fits(index, src))
		{
			found = index;
			break;
		}
		index_close(index, AccessShareLock);
	}
	list_free(indexes);
	return found;
}

/* Why the table is read instead of an index, or NULL when it need not be. */
const char *
kdg_table_read_reason(const KdSource *src, Relation heap)
{
	char		relkind = heap->rd_rel->relkind;

	if (!kdgpu_index_rows)
		return "kdgpu.index_rows is off";
	if (src->keyattnum != InvalidAttrNumber && !kdg_source_key_unique(src))
		return "its key column is not NOT NULL with a unique index on it alone";
	if (src->extra != 0)
		return "the index keeps other coordinates than the function reads";
	if (relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW)
		return "not a plain table";
	if (!IsMVCCSnapshot(GetActiveSnapshot()))
		return "the snapshot is not MVCC";
	/* replay takes no cleanup lock: the metapage's pin holds nothing back */
	if (RecoveryInProgress())
		return "a hot standby's index cannot vouch for its rows";
	return NULL;
}

/*
 * Add the rows of a page the visibility map does not mark all-visible that
 * the snapshot sees to nv, each named by its chain's root (in root order),
 * and map the roots to the rows in hot; note its tuples and LSN in changed
 * (or NULL).  The page is read through shared buffers, not a bulk-read
 * ring: later calls look at the pages written since the last VACUUM again,
 * and a ring would send each back to the kernel.
 */
static void
read_heap_page(Relation heap, BlockNumber block, Snapshot snapshot,
			   KdSource *nv, KdgHotMap *hot, KdgChanged *changed)
{
	Buffer		buf = ReadBuffer(heap, block);
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
		kdg_changed_tuple(changed, tuple.t_data);
		if (!valid)
			continue;
		if (roots[off - 1] == InvalidOffsetNumber)
			elog(ERROR, "kdgpu: no HOT chain root found for row (%u,%u) of \"%s\"",
				 block, off, RelationGetRelationName(heap));
		byroot[roots[off - 1]] = off;
		nvisible++;
	}
	kdg_changed_page(changed, block, PageGetLSN(page), byroot, maxoff, nvisible);
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);

	/* the pin keeps the tuples in place while their values are read */
	map = kdg_hot_map_page(hot, block);
	for (OffsetNumber root = FirstOffsetNumber; nvisible > 0 && root <= maxoff; root++)
	{
		OffsetNumber off = byroot[root];
		HeapTupleData tuple;
		ItemPointerData tid;
		bool		isnull;
		bool		keynull = true;
		Datum		value;
		Datum		key = (Datum) 0;

		if (off == InvalidOffsetNumber)
			continue;
		nvisible--;
		map[root] = off;
		tuple.t_data = (HeapTupleHeader) PageGetItem(page, PageGetItemId(page, off));
		tuple.t_len = ItemIdGetLength(PageGetItemId(page, off));
		value = heap_getattr(&tuple, nv->attnum, desc, &isnull);
		if (nv->keyattnum != InvalidAttrNumber)
			key = heap_getattr(&tuple, nv->keyattnum, desc, &keynull);
		ItemPointerSet(&tid, block, root);
		kdg_source_add(nv, value, isnull, &tid, key, keynull);
	}
	ReleaseBuffer(buf);
}

/*
 * Mark in notall (by block) and list in notall_list the heap's pages of
 * nblocks that its visibility map does not mark all-visible, and return
 * how many; where hot keeps what all-visible pages say across calls (in
 * the copy r), note each map page's LSN, read after its bits.
 */
BlockNumber
kdg_visibility_scan(Relation heap, BlockNumber nblocks, KdgIndexRows *r,
					KdgHotMap *hot, bool *notall, BlockNumber *notall_list)
{
	Buffer		vmbuf = InvalidBuffer;
	BlockNumber nread = 0;

	for (BlockNumber b = 0; b < nblocks; b++)
	{
		if (!VM_ALL_VISIBLE(heap, b, &vmbuf))
		{
			notall[b] = true;
			notall_list[nread++] = b;
		}
		if (kdg_hot_keeps(hot) && (b + 1 == nblocks || (b + 1) % KDG_VM_HEAP_PAGES == 0))
		{
			BlockNumber vmpage = b / KDG_VM_HEAP_PAGES;

			kdg_hot_keep_vm_range(r, vmpage,
								  BufferIsValid(vmbuf) && BufferGetBlockNumber(vmbuf) == vmpage ?
								  BufferGetLSNAtomic(vmbuf) : InvalidXLogRecPtr);
		}
	}
	if (BufferIsValid(vmbuf))
		ReleaseBuffer(vmbuf);
	return nread;
}

/*
 * Read the rows the snapshot sees on the nblocks pages of blocks
 * (ascending) into nv, a new source like src, each named by its chain's
 * root, mapping the roots in src->hot and noting the tuples in changed
 * (or NULL): read_heap_page's, page by page.
 */
void
kdg_read_heap_pages(Relation heap, const KdSource *src, Snapshot snapshot,
					const BlockNumber *blocks, BlockNumber nblocks,
					KdgChanged *changed, KdSource *nv)
{
	memcpy(nv, src, sizeof(*nv));
	nv->n = nv->cap = 0;
	nv->rows = NULL;
	nv->hot = NULL;
	for (BlockNumber k = 0; k < nblocks; k++)
	{
		CHECK_FOR_INTERRUPTS();
		read_heap_page(heap, blocks[k], snapshot, nv, src->hot, changed);
	}
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

/* Append one row of dim coordinates, packed TID (and key) to src. */
static void
append_row(KdSource *src, const double *coords, uint64 tid, uint64 key)
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
	if (src->keyattnum != InvalidAttrNumber)
		row[src->dim + 1].tid = key;
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
 * The key of the row a root TID names on an all-visible page (a pending
 * row's, which the index does not keep): HOT chains share their key.
 */
static uint64
key_of_root(Relation heap, const KdSource *src, uint64 root)
{
	Buffer		buf = ReadBuffer(heap, (BlockNumber) (root >> 16));
	uint64		key;
	bool		found;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	found = kdg_root_key(BufferGetPage(buf), (OffsetNumber) (root & 0xFFFF), src,
						 RelationGetDescr(heap), &key);
	UnlockReleaseBuffer(buf);
	if (!found)
		elog(ERROR, "kdgpu: no key found for row (%u,%u) of \"%s\" on an all-visible page",
			 (BlockNumber) (root >> 16), (unsigned) (root & 0xFFFF),
			 RelationGetRelationName(heap));
	return key;
}

/* Append x to a growing list of *n values with room for *cap. */
static void
list_add(uint64 **list, int64 *n, int64 *cap, uint64 x)
{
	if (*n == *cap)
	{
		*cap = Max(*cap * 2, 64);
		*list = *list ? repalloc_huge(*list, sizeof(uint64) * *cap) :
			palloc_extended(sizeof(uint64) * *cap, MCXT_ALLOC_HUGE);
	}
	(*list)[(*n)++] = x;
}

/*
 * Assemble the source's rows in TID order: the copy's and the pending rows
 * on all-visible pages, and the rows read from the other pages (nv); and
 * how they differ from the copy's rows (diff: ranks of the copy's rows on
 * those pages that nv lacks, ordinals of the rows the copy lacks), made in
 * the same pass, the rows in rowcxt.  A row of nv with a TID of the copy's
 * is that row: a TID names one point until VACUUM marks it dead, which makes
 * a new copy.
 */
static void
assemble(KdSource *src, Relation heap, const KdgIndexRows *r,
		 const KdamRecords *pending, const KdSource *nv, const bool *notall,
		 BlockNumber nblocks, KdgDiff *diff, MemoryContext rowcxt)
{
	bool		keyed = src->keyattnum != InvalidAttrNumber;
	int64		npend = 0;
	int64	   *order = palloc(sizeof(int64) * Max(pending->n, 1));
	int64		i = 0,
				p = 0,
				v = 0;
	int64		gonecap = 0,
				addedcap = 0;
	int			stride = r->dim + 1;

	for (int64 k = 0; k < pending->n; k++)
	{
		BlockNumber block = (BlockNumber) (pending->refs[k] >> 16);

		if (block < nblocks && !notall[block])
			order[npend++] = k;
	}
	qsort_arg(order, npend, sizeof(int64), pending_cmp, pending->refs);
	memset(diff, 0, sizeof(*diff));
	src->n = 0;
	src->cap = Max(r->n + npend + nv->n, 1);
	src->rows = MemoryContextAllocExtended(rowcxt,
										   sizeof(KdSlot) * src->stride * src->cap,
										   MCXT_ALLOC_HUGE);
	for (;;)
	{
		uint64		tr = i < r->n ? r->rows[i * stride + r->dim].tid : UINT64_MAX;
		uint64		tp = p < npend ? pending->refs[order[p]] : UINT64_MAX;
		uint64		tv = v < nv->n ? kdg_row_tid(nv, v) : UINT64_MAX;
		BlockNumber block = (BlockNumber) (tr >> 16);
		bool		copy_read = tr != UINT64_MAX &&
			(block >= nblocks || notall[block]);

		if (tr == UINT64_MAX && tp == UINT64_MAX && tv == UINT64_MAX)
			break;
		if (tr <= tp && tr <= tv && !copy_read)
		{
			if (keyed && r->nokey && r->nokey[i])
				elog(ERROR, "kdgpu: the copy of index \"%s\" has no key for a row on an all-visible page",
					 r->indexname);
			append_row(src, &r->rows[i * stride].coord, tr, keyed ? r->keys[i] : 0);
			i++;
		}
		else if (copy_read && tr < tv && tr <= tp)
		{
			/* a copy row on a page read that the snapshot does not see */
			list_add(&diff->gone, &diff->ngone, &gonecap, (uint64) i);
			i++;
		}
		else if (tp <= tv)
		{
			list_add(&diff->added, &diff->nadded, &addedcap, (uint64) src->n);
			append_row(src, pending->coords + order[p] * src->dim, tp,
					   keyed ? key_of_root(heap, src, tp) : 0);
			p++;
		}
		else
		{
			/* a row read: the copy's own when it has its TID */
			if (tr == tv)
				i++;
			else
				list_add(&diff->added, &diff->nadded, &addedcap, (uint64) src->n);
			append_row(src, kdg_row_coords(nv, v), tv, kdg_row_ref(nv, v));
			v++;
		}
	}
	pfree(order);
}

/*
 * Read the pages the visibility map does not mark all-visible (notall_list,
 * nread of them; notall by block) under the call's snapshot, let go of the
 * metapage, and make the source's rows: the copy r's own when those pages
 * hold exactly its rows there and nothing is pending, else assembled.  What
 * was read is kept for later calls where it may be (changed_pages.c).
 */
static void
read_changed(KdSource *src, Relation heap, KdgIndexRows *r,
			 const KdamMetaPageData *meta, const KdamRecords *pending,
			 const bool *notall, const BlockNumber *notall_list,
			 BlockNumber nread, BlockNumber nblocks, Buffer metabuf)
{
	Snapshot	snapshot = GetActiveSnapshot();
	KdgChanged *changed;
	KdSource	nv;
	bool		keep;

	changed = kdg_changed_begin(heap, src, snapshot, nread, nblocks);
	kdg_read_heap_pages(heap, src, snapshot, notall_list, nread, changed, &nv);
	ReleaseBuffer(metabuf);
	keep = kdg_changed_usable(changed);

	/* the index holds points of one dimension, SRID and Z/M flags */
	src->dim = r->n > 0 || pending->n > 0 ? meta->dim : nv.dim;
	if (nv.n > 0)
		src->info = nv.info;
	else if (kdg_type_is_postgis(src->type))
	{
		src->info.srid = meta->srid;
		src->info.zm = meta->zm;
		src->info.geotype = KD_GS_POINTTYPE;
	}
	if (nv.n > 0 && nv.dim != src->dim)
		elog(ERROR, "kdgpu: rows of dimension %d read beside an index of dimension %d",
			 nv.dim, src->dim);
	src->stride = kdg_source_stride(src, src->dim);
	if (pending->n == 0 && r->nokey == NULL &&
		pages_match(r, &nv, notall_list, nread))
	{
		/* the copy's rows are the call's: used in place, never written */
		src->rows = r->rows;
		src->keys = r->keys;
		src->stride = r->dim + 1;
		src->n = r->n;
		src->cap = r->n;
	}
	else
	{
		/* kept rows are assembled where the kept set lives */
		MemoryContext rowcxt = keep ? changed->cxt : src->mcxt;
		MemoryContext old = MemoryContextSwitchTo(rowcxt);

		src->index_diff = palloc(sizeof(KdgDiff));
		assemble(src, heap, r, pending, &nv, notall, nblocks, src->index_diff, rowcxt);
		MemoryContextSwitchTo(old);
	}
	if (keep)
		kdg_changed_keep(r, changed, src, pending);
	else if (changed)
		MemoryContextDelete(changed->cxt);
}

/*
 * Take the source's rows from a kdgpu index on its column and the table's
 * visibility map (see the top of the file); false, with note saying why,
 * when the table must be read instead.
 */
static bool
index_source_read(KdSource *src, char *note, size_t notelen)
{
	Relation	heap = table_open(src->relid, AccessShareLock);
	const char *why = kdg_table_read_reason(src, heap);
	Relation	index = NULL;
	Buffer		metabuf;
	KdamMetaPageData meta;
	KdamForest	forest;
	KdgIndexRows *r = NULL;
	KdamRecords pending;
	Snapshot	snapshot = GetActiveSnapshot();
	BlockNumber nblocks;
	BlockNumber nread = 0;
	bool	   *notall;
	BlockNumber *notall_list;
	KdgChanged *changed;

	if (why == NULL && (index = kdg_source_index(src, heap, kdg_index_fits)) == NULL)
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
		if ((r = kdg_index_rows_find(index, meta.generation, src)) != NULL)
			break;
		/* the list under the lock: a merge frees the list it replaces */
		kdam_forest_read(index, &meta, &forest);
		LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
		r = kdg_index_rows_read(index, &meta, &forest, src);
		kdg_index_rows_keep(r);
	}
	kdg_index_rows_pin(r);
	memset(&pending, 0, sizeof(pending));
	if (meta.nflush > 0 || meta.lanes_used != 0)
		kdam_read_pending(index, &meta, &pending);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);

	/* the pages the visibility map does not mark all-visible, read */
	PredicateLockRelation(heap, snapshot);
	nblocks = RelationGetNumberOfBlocks(heap);
	notall = palloc0(sizeof(bool) * Max(nblocks, 1));
	notall_list = palloc(sizeof(BlockNumber) * Max(nblocks, 1));
	src->hot = kdg_hot_map_new(heap, nblocks, r);
	nread = kdg_visibility_scan(heap, nblocks, r, src->hot, notall, notall_list);
	src->index_rows = r;
	changed = nread > 0 ?
		kdg_changed_find(r, heap, src, snapshot, notall_list, nread, nblocks, &pending) :
		NULL;
	if (changed)
	{
		/* those pages hold what an earlier call read there */
		ReleaseBuffer(metabuf);
		kdg_changed_use(changed, src);
	}
	else
		read_changed(src, heap, r, &meta, &pending, notall, notall_list, nread,
					 nblocks, metabuf);
	snprintf(note, notelen,
			 "rows from index \"%s\" and the visibility map, %u of %u table pages read%s",
			 r->indexname, nread, nblocks,
			 changed ? " by an earlier call and unchanged since" : "");
	pfree(notall);
	pfree(notall_list);
	index_close(index, AccessShareLock);
	table_close(heap, NoLock);
	return true;
}

/*
 * Read the visible points of an opened source, in ctid order: from a kdgpu
 * index on its column where one holds them (index_source.c), else from the
 * table; kdg_last_source says which, and why.
 */
void
kdg_source_read(KdSource *src)
{
	char		note[160];
	size_t		used = strlen(kdg_last_source);

	if (check_enable_rls(src->relid, InvalidOid, false) == RLS_ENABLED)
	{
		snprintf(note, sizeof(note), "the table was read: row-level security applies");
		kdg_sources_spi(src, &src->relid, 1, src->relid);
	}
	else if (!index_source_read(src, note, sizeof(note)) &&
			 !kdg_vector_source_read(src, note, sizeof(note)))
		kdg_source_scan(src);
	snprintf(kdg_last_source + used, sizeof(kdg_last_source) - used, "%s%s: %s",
			 used > 0 ? "; " : "", get_rel_name(src->relid), note);
	if (src->unsorted)
		kdg_source_sort(src);
}
