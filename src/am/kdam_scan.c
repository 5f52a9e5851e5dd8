/*
 * kdam_scan.c
 *	  Index scans of the kdgpu access method: ordered (ORDER BY <->), range
 *	  and bitmap scans; their start, the rows they return and the rows with
 *	  no distance.
 *
 * A scan reads the metapage, the forest's list of trees, the pending
 * records and the rows outside the trees (kdam_outside.c) once (keeping
 * the metapage pinned for its whole life when it is index-only or its
 * snapshot is not MVCC, see kdam.h), and reads the trees' pages in place
 * through shared buffers (kdam_tree.c: no private copy, nothing to load).
 * The pending records (about KDAM_FLUSH_ROWS at most, kdam_lanes.c) and
 * the outside rows are searched exhaustively beside the trees.  WHERE
 * quals are regions (kdam_quals.c), ORDER BY keys distances and bounds
 * (kdam_order.c).  Ordered scans are a best-first search
 * (kdam_scan_ordered.c); range and bitmap scans collect every match at
 * once (kdam_scan_range.c).
 *
 * Keys are the ORDER BY operator's own values for point and float8[], so
 * rows come out exactly as a sort on `col <-> query, ctid` puts them, with
 * no recheck.  PostGIS types return lower bounds and the executor rechecks
 * the order (so->metric, chosen when the scan begins); so do rows
 * outside the tree whose value is not known exactly.
 *
 * Rows with no distance (NULL rows, and for point and float8[] the empty
 * values outside the tree) come after every point in an ordered scan, in
 * ctid order with NULL distances, as a sort puts them; with lower bounds
 * NULL rows come first with a bound of -inf.  NULL rows match only IS NULL
 * quals.
 */
#include "postgres.h"

#include "access/relscan.h"
#include "nodes/tidbitmap.h"
#include "pgstat.h"
#include "utils/float.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "kdam_scan.h"

/* The reader of live tree t, started on first use. */
KdamTreeReader *
kdam_scan_tree_reader(KdamScanOpaque so, Relation index, int t)
{
	KdamScanTree *st = &so->trees[t];

	if (st->reader == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(so->cxt);

		st->reader = palloc(sizeof(KdamTreeReader));
		kdam_reader_init(st->reader, index, &so->meta, &st->entry);
		MemoryContextSwitchTo(old);
	}
	return st->reader;
}

/* The live tree holding the node at a tree location (below so->ntree). */
static int
loc_tree(const KdamScanOpaque so, int64 loc)
{
	int			lo = 0,
				hi = so->ntrees - 1;

	while (lo < hi)
	{
		int			mid = (lo + hi + 1) / 2;

		if (so->trees[mid].base <= loc)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* Release the pins of every tree reader. */
static void
end_readers(KdamScanOpaque so)
{
	for (int t = 0; t < so->ntrees; t++)
		if (so->trees[t].reader)
			kdam_reader_end(so->trees[t].reader);
	so->ntrees = 0;
}

/* ambeginscan */
IndexScanDesc
kdam_beginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	KdamScanOpaque so = palloc0(sizeof(KdamScanOpaqueData));

	so->cxt = AllocSetContextCreate(CurrentMemoryContext, "kdgpu scan",
									ALLOCSET_DEFAULT_SIZES);
	so->metabuf = InvalidBuffer;
	so->type = kdam_index_type(index);
	so->metric = kdam_order_metric(so->type);
	if (norderbys > 0)
	{
		scan->xs_orderbyvals = palloc0(sizeof(Datum) * norderbys);
		scan->xs_orderbynulls = palloc(sizeof(bool) * norderbys);
		memset(scan->xs_orderbynulls, true, sizeof(bool) * norderbys);
	}
	scan->opaque = so;
	return scan;
}

/* amrescan: take the quals and the ORDER BY keys; the search starts lazily */
void
kdam_rescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys,
			int norderbys)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	MemoryContext old;

	end_readers(so);
	MemoryContextReset(so->cxt);
	so->started = false;
	so->empty = false;
	so->heap = NULL;
	so->nheap = 0;
	so->side = NULL;
	so->nside = 0;
	so->roots = NULL;
	so->nroots = 0;
	so->more_left = 0;
	so->nulls_read = false;
	so->nullpos = 0;
	so->nhits = 0;
	so->pos = 0;
	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
	if (orderbys && scan->numberOfOrderBys > 0)
		memmove(scan->orderByData, orderbys, scan->numberOfOrderBys * sizeof(ScanKeyData));

	old = MemoryContextSwitchTo(so->cxt);
	so->nquals = scan->numberOfKeys;
	so->quals = palloc0(sizeof(KdamQual) * Max(so->nquals, 1));
	so->recheck = false;
	for (int i = 0; i < so->nquals; i++)
	{
		if (!kdam_qual_from_key(so, &scan->keyData[i], &so->quals[i]))
			so->empty = true;
		so->recheck |= so->quals[i].lossy;
	}
	so->ordered = scan->numberOfOrderBys > 0;
	so->norder = scan->numberOfOrderBys;
	MemoryContextSwitchTo(old);
}

/*
 * Whether the scan keeps its pin on the metapage, VACUUM's interlock
 * (kdam.h), until it ends: an index-only scan does, since the executor
 * trusts the visibility map for a row VACUUM removed after the scan read
 * its TID; so does a scan under a snapshot that is not MVCC.  A plain scan
 * under an MVCC snapshot drops it, since the heap check of each row it
 * returns rejects a TID VACUUM freed and the heap reused.
 */
static bool
keeps_pin(IndexScanDesc scan)
{
	return scan->xs_want_itup || !IsMVCCSnapshot(scan->xs_snapshot);
}

/* Let the metapage's pin go when the scan does not keep it. */
static void
release_pin(IndexScanDesc scan)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;

	if (BufferIsValid(so->metabuf) && !keeps_pin(scan))
	{
		ReleaseBuffer(so->metabuf);
		so->metabuf = InvalidBuffer;
	}
}

/*
 * Pin the metapage, read the forest's list of live trees and the pending
 * and outside records.
 */
static void
scan_start(IndexScanDesc scan)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	Relation	index = scan->indexRelation;
	MemoryContext old;
	const KdamTreeEntry *trees;
	int			ntrees;

	if (!BufferIsValid(so->metabuf))
		so->metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	LockBuffer(so->metabuf, BUFFER_LOCK_SHARE);
	so->meta = *kdam_metapage(index, BufferGetPage(so->metabuf));
	for (int i = 0; i < so->nquals; i++)
		if (so->meta.dim > 0 && so->quals[i].dim > 0 &&
			so->quals[i].dim != so->meta.dim)
		{
			LockBuffer(so->metabuf, BUFFER_LOCK_UNLOCK);
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("query region has dimension %d, index \"%s\" has dimension %d",
							so->quals[i].dim, RelationGetRelationName(index),
							so->meta.dim)));
		}
	old = MemoryContextSwitchTo(so->cxt);
	trees = kdam_forest_read_cached(index, &so->meta, &ntrees);
	so->trees = palloc0(sizeof(KdamScanTree) * Max(ntrees, 1));
	so->ntree = 0;
	for (int t = 0; t < ntrees; t++)
		if (trees[t].n > 0)
		{
			KdamScanTree *st = &so->trees[so->ntrees++];

			st->entry = trees[t];
			st->base = so->ntree;
			so->ntree += st->entry.n;
		}
	if (so->meta.nflush > 0 || so->meta.lanes_used != 0)
		kdam_read_pending(index, &so->meta, &so->pending);
	else
		memset(&so->pending, 0, sizeof(so->pending));
	if (so->meta.noutside > 0)
		kdam_read_outside(index, &so->meta, &so->outside);
	else
		memset(&so->outside, 0, sizeof(so->outside));
	MemoryContextSwitchTo(old);
	LockBuffer(so->metabuf, BUFFER_LOCK_UNLOCK);
	release_pin(scan);
	so->started = true;
	pgstat_count_index_scan(index);
}

/*
 * Whether the row outside the tree at outside record i takes part in an
 * ordered scan's distance order: every one does but, for point and
 * float8[], empty values, which have no distance and come with the NULLs.
 */
bool
kdam_scan_outside_ordered(const KdamScanOpaque so, int64 i)
{
	return so->metric->lower_bounds ||
		KdamOutsideKind(kdam_scan_outside_rec(so, i)) != KDAM_OUT_EMPTY;
}

/* qsort_arg comparator of locations by reference; arg is the scan. */
static int
ref_cmp(const void *a, const void *b, void *arg)
{
	uint64		x = kdam_loc_ref(arg, *(const int64 *) a);
	uint64		y = kdam_loc_ref(arg, *(const int64 *) b);

	return (x > y) - (x < y);
}

/*
 * Read the rows with no distance, in ctid order: NULL rows (from the null
 * chain) that the quals take, and for ordered scans of point and float8[]
 * the empty values outside the tree.  Rows inserted since the scan started
 * may be read too: the executor checks every row's visibility.
 */
void
kdam_scan_read_nulls(IndexScanDesc scan)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	KdamMetaPageData meta;
	MemoryContext old = MemoryContextSwitchTo(so->cxt);
	bool		take = kdam_quals_take_null(so);
	int64		n = 0;

	if (!BufferIsValid(so->metabuf))
		so->metabuf = ReadBuffer(scan->indexRelation, KDAM_METAPAGE_BLKNO);
	LockBuffer(so->metabuf, BUFFER_LOCK_SHARE);
	meta = *kdam_metapage(scan->indexRelation, BufferGetPage(so->metabuf));
	if (meta.nnull > 0 && take)
		kdam_read_nulls(scan->indexRelation, &meta, &so->nulls);
	else
		memset(&so->nulls, 0, sizeof(so->nulls));
	LockBuffer(so->metabuf, BUFFER_LOCK_UNLOCK);
	release_pin(scan);
	so->nullorder = palloc_extended(sizeof(int64) *
									(so->nulls.n + so->outside.n + 1),
									MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < so->nulls.n; i++)
		so->nullorder[n++] = kdam_loc_nulls(so) + i;
	for (int64 i = 0; so->ordered && i < so->outside.n; i++)
		if (!kdam_scan_outside_ordered(so, i) &&
			kdam_quals_take_outside(so, kdam_scan_outside_rec(so, i)))
			so->nullorder[n++] = kdam_loc_outside(so) + i;
	so->nnullorder = n;
	qsort_arg(so->nullorder, n, sizeof(int64), ref_cmp, so);
	MemoryContextSwitchTo(old);
	so->nulls_read = true;
}

/*
 * The location of the next row with no distance (read_nulls); false when
 * none is left.
 */
static bool
next_null(IndexScanDesc scan, int64 *loc)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;

	if (!so->nulls_read)
		kdam_scan_read_nulls(scan);
	if (so->nullpos >= so->nnullorder)
		return false;
	*loc = so->nullorder[so->nullpos++];
	return true;
}

/*
 * Return the row at loc, whose reference is ref: its TID, whether the
 * executor must recheck it, and its index tuple when asked for.  known is
 * the coordinates of a tree row when the caller has them (a range scan's
 * hits keep them), else NULL: the row's tree page is then read again.
 */
static void
return_row(IndexScanDesc scan, int64 loc, uint64 ref, const double *known)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	const double *rec = kdam_loc_outside_rec(so, loc);
	int			words = so->meta.payload_words;
	const double *coords = NULL;
	const uint64 *payload;
	KdamNode	nd;
	uint64		treepayload[INDEX_MAX_KEYS + 1] = {0};
	bool		point_alone;
	MemoryContext old;

	kdg_ref_to_tid(ref, &scan->xs_heaptid);
	/* rows outside the tree pass quals by their box alone */
	scan->xs_recheck = so->recheck || (rec != NULL && so->nquals > 0);
	if (!scan->xs_want_itup)
		return;
	if (loc < so->ntree)
	{
		int			t = loc_tree(so, loc);
		KdamTreeReader *rd = kdam_scan_tree_reader(so, scan->indexRelation, t);

		if (known == NULL)
		{
			kdam_reader_node(rd, loc - so->trees[t].base, false, &nd);
			known = nd.coords;
		}
		if (words > 0)
			kdam_reader_payload(rd, loc - so->trees[t].base, treepayload);
		coords = known;
		payload = treepayload;
	}
	else if (loc < kdam_loc_outside(so))
	{
		coords = so->pending.coords + (loc - so->ntree) * so->meta.dim;
		payload = so->pending.payload + (loc - so->ntree) * words;
	}
	else if (rec != NULL)
	{
		if (KdamOutsideKind(rec) == KDAM_OUT_EXACT)
			coords = KdamOutsideLow(rec);
		payload = so->outside.payload + (loc - kdam_loc_outside(so)) * words;
	}
	else
		payload = so->nulls.payload + (loc - kdam_loc_nulls(so)) * words;
	if (so->tupcxt == NULL)
		so->tupcxt = AllocSetContextCreate(MemoryContextGetParent(so->cxt),
										   "kdgpu scan tuple",
										   ALLOCSET_SMALL_SIZES);
	scan->xs_itupdesc = RelationGetDescr(scan->indexRelation);
	/* the tuple of a point alone is formed once and its point rewritten */
	point_alone = coords != NULL && words == 0 && so->type == KD_TYPE_POINT;
	if (point_alone && so->pointtup != NULL)
	{
		kdam_tuple_set_point(so->pointtup, coords);
		scan->xs_itup = so->pointtup;
		return;
	}
	MemoryContextReset(so->tupcxt);
	old = MemoryContextSwitchTo(so->tupcxt);
	scan->xs_itup = kdam_form_tuple(scan->indexRelation,
									 so->type == KD_TYPE_POINT, coords, payload);
	MemoryContextSwitchTo(old);
	so->pointtup = point_alone ? scan->xs_itup : NULL;
}

/* amgettuple for ordered scans: the next row and its ORDER BY values. */
static bool
ordered_gettuple(IndexScanDesc scan)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	bool		postgis = so->metric->lower_bounds;
	KdamHeapItem it;
	int64		loc;
	uint64		ref;
	bool		no_distance = false;
	const double *rec;

	/*
	 * Rows with no distance: last with NULL values, as a sort puts them;
	 * for PostGIS types first with a lower bound of -inf, and the
	 * executor sorts them.
	 */
	if (postgis && !so->all_null && next_null(scan, &loc))
		no_distance = true;
	else if (kdam_ordered_next(scan, &it))
		loc = -1 - it.node;
	else if (!postgis && !so->all_null && next_null(scan, &loc))
		no_distance = true;
	else
		return false;
	ref = no_distance ? kdam_loc_ref(so, loc) : it.ref;
	return_row(scan, loc, ref, NULL);
	rec = kdam_loc_outside_rec(so, loc);
	for (int k = 0; k < so->norder; k++)
	{
		double		v = no_distance ? -get_float8_infinity()
			: k == 0 ? it.key : it.more[k - 1];

		scan->xs_orderbyvals[k] = Float8GetDatum(v);
		scan->xs_orderbynulls[k] = so->keys[k].null || (no_distance && !postgis);
	}
	scan->xs_recheckorderby = !so->all_null &&
		(postgis || (rec != NULL && KdamOutsideKind(rec) != KDAM_OUT_EXACT &&
					 !no_distance));
	return true;
}

/* amgettuple */
bool
kdam_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	int64		loc;

	if (so->empty)
		return false;
	if (!so->started)
	{
		scan_start(scan);
		if (so->ordered)
			kdam_ordered_start(scan);
		else
		{
			kdam_range_collect(scan);
			if (scan->xs_want_itup)
				kdam_range_group_by_vm_page(so);
		}
	}
	if (so->ordered)
		return ordered_gettuple(scan);
	if (so->pos < so->nhits)
	{
		return_row(scan, so->hits[so->pos].loc, so->hits[so->pos].ref,
				   so->hitcoords ? so->hitcoords + so->pos * so->meta.dim : NULL);
		so->pos++;
	}
	else if (next_null(scan, &loc))
		return_row(scan, loc, kdam_loc_ref(so, loc), NULL);
	else
		return false;
	return true;
}

/* amgetbitmap */
int64
kdam_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	int64		n = 0;
	int64		loc;

	if (so->empty)
		return 0;
	if (!so->started)
	{
		scan_start(scan);
		kdam_range_collect(scan);
	}
	for (int64 i = 0; i < so->nhits; i++)
	{
		ItemPointerData tid;

		kdg_ref_to_tid(so->hits[i].ref, &tid);
		tbm_add_tuples(tbm, &tid, 1,
					   so->recheck || kdam_loc_outside_rec(so, so->hits[i].loc) != NULL);
		n++;
	}
	while (next_null(scan, &loc))
	{
		ItemPointerData tid;

		kdg_ref_to_tid(kdam_loc_ref(so, loc), &tid);
		tbm_add_tuples(tbm, &tid, 1, so->recheck);
		n++;
	}
	return n;
}

/* amendscan */
void
kdam_endscan(IndexScanDesc scan)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;

	end_readers(so);
	if (BufferIsValid(so->metabuf))
		ReleaseBuffer(so->metabuf);
	MemoryContextDelete(so->cxt);
	if (so->tupcxt)
		MemoryContextDelete(so->tupcxt);
	pfree(so);
	scan->opaque = NULL;
}
