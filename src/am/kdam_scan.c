/*
 * kdam_scan.c
 *	  Index scans of the kdgpu access method: ordered (ORDER BY <->), range
 *	  and bitmap scans.
 *
 * A scan reads the metapage, the forest's list of trees, the pending
 * records and the rows outside the trees (kdam_outside.c) once (keeping
 * the metapage pinned for its whole life only under a snapshot that is
 * not MVCC, see kdam.h), and reads the trees' pages in place through
 * shared buffers (kdam_tree.c: no private copy, nothing to load).  The
 * pending records (fewer than KDAM_LANES * KDAM_LANE_ROWS, kdam_lanes.c) and the
 * outside rows are searched exhaustively beside the trees.  WHERE quals are regions (kdam_quals.c), ORDER BY keys
 * distances and bounds (kdam_order.c).
 *
 * Ordered scans are an incremental best-first search: a binary heap holds
 * subtrees keyed by lower bounds of their points' ORDER BY values and
 * points keyed by their values; it starts with the root of every tree
 * whose box meets the quals, bounded by that box.  The smallest entry is
 * expanded (a subtree pushes its own point and its children, and goes on
 * down into the child that would be popped next without pushing it,
 * expand_subtree) or returned (a point), so rows come out in order for as
 * long as the executor asks; filters above the scan never starve a LIMIT.
 * A scan allocates little (a reader only for each tree it enters, a small
 * first heap): at 10M points, a forest of 37 trees had every scan allocate
 * about 140 kB, which glibc took from the system and gave back each query,
 * and pgbench ran 6.7k LIMIT 10 a second on the 2-core machine, 10.8k
 * without (SP-GiST 10.0k).  With several ORDER BY keys entries compare
 * lexicographically, key by key, as a sort does (a subtree's vector of
 * lower bounds is a lexicographic lower bound of its points' vectors).  On
 * equal keys subtrees sort before points, then points by reference, so a
 * point is returned only when no subtree can still hold one that sorts
 * before it: ties come out in ctid order.  NaN sorts after every number, as
 * in float8's ordering.
 *
 * Keys are the ORDER BY operator's own values for point and float8[], so
 * rows come out exactly as a sort on `col <-> query, ctid` puts them, with
 * no recheck.  PostGIS types return lower bounds and the executor rechecks
 * the order; so do rows outside the tree whose value is not known exactly.
 *
 * Range and bitmap scans collect the matches of all quals at once with a
 * depth-first walk of each tree whose box meets them, skipping subtrees
 * outside the quals' region; index-only scans return them grouped by
 * visibility map page (group_hits_by_vm_page).
 *
 * Rows with no distance (NULL rows, and for point and float8[] the empty
 * values outside the tree) come after every point in an ordered scan, in
 * ctid order with NULL distances, as a sort puts them; for PostGIS types
 * (rechecked) NULL rows come first with a lower bound of -inf.  NULL rows
 * match only IS NULL quals.
 */
#include "postgres.h"

#include <math.h>

#include "access/relscan.h"
#include "nodes/tidbitmap.h"
#include "pgstat.h"
#include "utils/float.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "kdam_scan.h"

/* heap items' "more" arrays allocated at a time */
#define KDAM_MORE_CHUNK 1024

/* float8 order of two values: NaN after every number. */
static inline int
key_cmp(double a, double b)
{
	if (a < b)
		return -1;
	if (a > b)
		return 1;
	if (a == b)
		return 0;
	return isnan(a) ? (isnan(b) ? 0 : 1) : -1;
}

/* heap order: keys lexicographically, then subtrees before points, then ref */
static inline bool
item_less(const KdamScanOpaque so, const KdamHeapItem *a, const KdamHeapItem *b)
{
	int			c = key_cmp(a->key, b->key);

	for (int i = 0; c == 0 && i < so->norder - 1; i++)
		c = key_cmp(a->more[i], b->more[i]);
	if (c != 0)
		return c < 0;
	if ((a->node >= 0) != (b->node >= 0))
		return a->node >= 0;
	return a->ref < b->ref;
}

/* Room for an item's other keys and their squared bounds (NULL for one key). */
static double *
more_alloc(KdamScanOpaque so)
{
	int			per = 2 * (so->norder - 1);
	double	   *m;

	if (so->norder == 1)
		return NULL;
	if (so->more_left == 0)
	{
		so->more_free = MemoryContextAlloc(so->cxt,
										   sizeof(double) * per * KDAM_MORE_CHUNK);
		so->more_left = KDAM_MORE_CHUNK;
	}
	m = so->more_free;
	so->more_free += per;
	so->more_left--;
	return m;
}

/* Add an item to the binary heap, sifting a hole up to its place. */
static void
heap_push(KdamScanOpaque so, const KdamHeapItem *item)
{
	int64		i;

	if (so->nheap == so->capheap)
	{
		so->capheap *= 2;
		so->heap = repalloc_huge(so->heap, sizeof(KdamHeapItem) * so->capheap);
	}
	i = so->nheap++;
	while (i > 0 && item_less(so, item, &so->heap[(i - 1) / 2]))
	{
		so->heap[i] = so->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	so->heap[i] = *item;
}

/* Take the heap's smallest item, sifting the last one down from the top. */
static KdamHeapItem
heap_pop(KdamScanOpaque so)
{
	KdamHeapItem top = so->heap[0];
	KdamHeapItem *last = &so->heap[--so->nheap];
	int64		i = 0;

	for (;;)
	{
		int64		m = 2 * i + 1;

		if (m >= so->nheap)
			break;
		if (m + 1 < so->nheap && item_less(so, &so->heap[m + 1], &so->heap[m]))
			m++;
		if (!item_less(so, &so->heap[m], last))
			break;
		so->heap[i] = so->heap[m];
		i = m;
	}
	so->heap[i] = *last;
	return top;
}

/* Locations: where the outside rows and the NULL rows start. */
static inline int64
loc_outside(const KdamScanOpaque so)
{
	return so->ntree + so->pending.n;
}

static inline int64
loc_nulls(const KdamScanOpaque so)
{
	return loc_outside(so) + so->outside.n;
}

/* The outside record at a location, or NULL for any other location. */
static inline const double *
loc_outside_rec(const KdamScanOpaque so, int64 loc)
{
	if (loc < loc_outside(so) || loc >= loc_nulls(so))
		return NULL;
	return kdam_scan_outside_rec(so, loc - loc_outside(so));
}

/*
 * The reference of the row at a location other than a tree node: a pending
 * record, an outside record or a NULL row.
 */
static inline uint64
loc_ref(KdamScanOpaque so, int64 loc)
{
	Assert(loc >= so->ntree);
	if (loc < loc_outside(so))
		return so->pending.refs[loc - so->ntree];
	if (loc < loc_nulls(so))
		return so->outside.refs[loc - loc_outside(so)];
	return so->nulls.refs[loc - loc_nulls(so)];
}

/*
 * A heap item for a point: the row at loc with reference ref, whose
 * coordinates are p (a tree node or a pending record), or an outside
 * record, or (p NULL) a NULL row when every key is null; keyed by every
 * ORDER BY key.
 */
static void
point_item(KdamScanOpaque so, int64 loc, uint64 ref, const double *p,
		   KdamHeapItem *it)
{
	const double *rec = loc_outside_rec(so, loc);

	/* a NULL row's keys are all null (so->all_null): p is not read */
	it->ref = ref;
	it->node = -1 - loc;
	it->lb2 = 0.0;
	it->boxed = false;
	it->more = more_alloc(so);
	for (int k = 0; k < so->norder; k++)
	{
		double		v = rec ? kdam_order_outside(so, &so->keys[k], rec)
			: kdam_order_point(so, &so->keys[k], p, so->meta.dim);

		if (k == 0)
			it->key = v;
		else
			it->more[k - 1] = v;
	}
}

/* A heap item for the row at a location other than a tree node. */
static void
row_item(KdamScanOpaque so, int64 loc, KdamHeapItem *it)
{
	const double *p = NULL;

	if (loc < loc_outside(so))
		p = so->pending.coords + (loc - so->ntree) * so->meta.dim;
	point_item(so, loc, loc_ref(so, loc), p, it);
}

/* A subtree item's squared bound for ORDER BY key k. */
static inline double
item_lb2(const KdamScanOpaque so, const KdamHeapItem *it, int k)
{
	return k == 0 ? it->lb2 : it->more[so->norder - 1 + k - 1];
}

/* Set a subtree item's squared bound for key k, and the key's bound. */
static inline void
item_set_bound(KdamScanOpaque so, KdamHeapItem *it, int k, double lb2)
{
	double		key = kdam_order_bound(so, &so->keys[k], lb2);

	if (k == 0)
	{
		it->lb2 = lb2;
		it->key = key;
	}
	else
	{
		it->more[so->norder - 1 + k - 1] = lb2;
		it->more[k - 1] = key;
	}
}

/*
 * A heap item for the child subtree of a node whose point is p, on the
 * left or right of its split plane s, given the parent's item: bounded by
 * the parent's bounds and the split plane.
 */
static void
subtree_item(KdamScanOpaque so, const KdamHeapItem *parent, const double *p,
			 int s, bool left, int64 child, KdamHeapItem *it)
{
	it->ref = 0;
	it->node = child;
	it->tree = parent->tree;
	it->boxed = false;
	it->more = more_alloc(so);
	for (int k = 0; k < so->norder; k++)
		item_set_bound(so, it, k, Max(item_lb2(so, parent, k),
									  kdam_order_side2(&so->keys[k], p, s, left)));
}

/*
 * The item of a popped subtree with its own box in its bounds, into out;
 * whether that moved it back in the order (it must then be pushed again).
 */
static bool
subtree_boxed(KdamScanOpaque so, const KdamHeapItem *it, const double *box,
			  KdamHeapItem *out)
{
	*out = *it;
	out->boxed = true;
	out->more = more_alloc(so);
	for (int k = 0; k < so->norder; k++)
		item_set_bound(so, out, k, Max(item_lb2(so, it, k),
									   kdam_order_box2(&so->keys[k], box,
													   so->meta.dim)));
	return item_less(so, it, out);
}

/* The reader of live tree t, started on first use. */
static KdamTreeReader *
tree_reader(KdamScanOpaque so, Relation index, int t)
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
	/* see kdam.h: only a scan of another kind of snapshot keeps the pin */
	if (IsMVCCSnapshot(scan->xs_snapshot))
	{
		ReleaseBuffer(so->metabuf);
		so->metabuf = InvalidBuffer;
	}
	so->started = true;
	pgstat_count_index_scan(index);
}

/*
 * Whether the row outside the tree at outside record i takes part in an
 * ordered scan's distance order: every one does but, for point and
 * float8[], empty values, which have no distance and come with the NULLs.
 */
static bool
outside_ordered(const KdamScanOpaque so, int64 i)
{
	return kdg_type_is_postgis(so->type) ||
		KdamOutsideKind(kdam_scan_outside_rec(so, i)) != KDAM_OUT_EMPTY;
}

static void read_nulls(IndexScanDesc scan);

/*
 * Start the best-first search: the root of every tree whose box meets the
 * quals, bounded by the box, and every pending and outside row that the
 * quals may accept.  When every key is null, every
 * row's distances are NULL and a sort orders them by ctid alone: the rows
 * with no distance join the search, and come out in ctid order among the
 * rest.
 */
static void
best_first_start(IndexScanDesc scan)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	int			dim = so->meta.dim;
	KdamHeapItem it;

	so->capheap = 128;
	so->heap = MemoryContextAlloc(so->cxt, sizeof(KdamHeapItem) * so->capheap);
	for (int t = 0; t < so->ntrees; t++)
	{
		const double *box = so->trees[t].entry.box;

		if (!kdam_quals_meet_box(so, box, dim))
			continue;
		it.ref = 0;
		it.node = 0;
		it.tree = t;
		it.boxed = false;
		it.more = more_alloc(so);
		for (int k = 0; k < so->norder; k++)
			item_set_bound(so, &it, k, kdam_order_box2(&so->keys[k], box, dim));
		heap_push(so, &it);
	}
	for (int64 i = 0; i < so->pending.n; i++)
		if (kdam_quals_match(so, so->pending.coords + i * dim, dim))
		{
			row_item(so, so->ntree + i, &it);
			heap_push(so, &it);
		}
	for (int64 i = 0; i < so->outside.n; i++)
		if (outside_ordered(so, i) &&
			kdam_quals_take_outside(so, kdam_scan_outside_rec(so, i)))
		{
			row_item(so, loc_outside(so) + i, &it);
			heap_push(so, &it);
		}
	if (so->all_null)
	{
		read_nulls(scan);
		for (int64 i = 0; i < so->nnullorder; i++)
		{
			row_item(so, so->nullorder[i], &it);
			heap_push(so, &it);
		}
		so->nullpos = so->nnullorder;
	}
}

/* Start an ordered scan: read the ORDER BY keys. */
static void
ordered_start(IndexScanDesc scan)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;

	so->keys = MemoryContextAllocZero(so->cxt, sizeof(KdamOrderKey) * so->norder);
	so->all_null = true;
	for (int k = 0; k < so->norder; k++)
	{
		kdam_order_key_init(scan, &scan->orderByData[k], &so->keys[k]);
		so->all_null &= so->keys[k].null;
	}
}

/*
 * Expand the subtree item it: push its point and its children, but go on
 * down into a child at once, rather than through the heap, while that
 * child sorts no later than the heap's smallest item (it would be popped
 * next; the child on the query's side of the split plane keeps its
 * parent's bound, so this is usually the nearer child).  The descent holds
 * the share lock of each page it reads until it leaves the page.
 */
static void
expand_subtree(IndexScanDesc scan, KdamHeapItem it)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	int			dim = so->meta.dim;
	KdamTreeReader *rd = tree_reader(so, scan->indexRelation, it.tree);
	int64		n = so->trees[it.tree].entry.n;

	kdam_reader_hold(rd, true);
	for (;;)
	{
		KdamNode	nd;
		KdamHeapItem sub[2];
		int			nsub = 0;

		kdam_reader_node(rd, it.node, !it.boxed, &nd);
		if (nd.box && !it.boxed)
		{
			KdamHeapItem tight;

			/* a subtree whose box misses a qual holds no match */
			if (!kdam_quals_meet_box(so, nd.box, dim))
				break;
			if (!so->all_null)
			{
				if (subtree_boxed(so, &it, nd.box, &tight))
				{
					heap_push(so, &tight);
					break;
				}
				it = tight;
			}
		}
		if (nd.ref != KDAM_DEAD_REF && kdam_quals_match(so, nd.coords, dim))
		{
			KdamHeapItem pt;

			point_item(so, so->trees[it.tree].base + it.node, nd.ref, nd.coords,
					   &pt);
			heap_push(so, &pt);
		}
		for (int side = 0; side < 2; side++)
		{
			int64		child = 2 * it.node + 1 + side;

			if (child < n &&
				kdam_quals_meet_side(so, nd.split, nd.coords[nd.split], side == 0))
				subtree_item(so, &it, nd.coords, nd.split, side == 0, child,
							 &sub[nsub++]);
		}
		if (nsub == 2 && item_less(so, &sub[1], &sub[0]))
		{
			heap_push(so, &sub[0]);
			sub[0] = sub[1];
		}
		else if (nsub == 2)
			heap_push(so, &sub[1]);
		if (nsub == 0)
			break;
		if (so->nheap > 0 && item_less(so, &so->heap[0], &sub[0]))
		{
			heap_push(so, &sub[0]);
			break;
		}
		it = sub[0];
	}
	kdam_reader_hold(rd, false);
}

/*
 * Next row of an ordered scan in order, as a heap item (keys and
 * location); false when none is left.
 */
static bool
ordered_next(IndexScanDesc scan, KdamHeapItem *out)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;

	if (so->heap == NULL)
		best_first_start(scan);
	while (so->nheap > 0)
	{
		KdamHeapItem it = heap_pop(so);

		if (it.node < 0)
		{
			*out = it;
			return true;
		}
		expand_subtree(scan, it);
	}
	return false;
}

/* Add a match to the range scan's hits. */
static void
add_hit(KdamScanOpaque so, int64 loc, uint64 ref, int64 *cap)
{
	if (so->nhits == *cap)
	{
		*cap *= 2;
		so->hits = repalloc_huge(so->hits, sizeof(KdamHit) * *cap);
	}
	so->hits[so->nhits].ref = ref;
	so->hits[so->nhits++].loc = loc;
}

/* Add every match of the quals in live tree t to the hits. */
static void
tree_collect(KdamScanOpaque so, Relation index, int t, int64 *cap)
{
	KdamScanTree *st = &so->trees[t];
	KdamTreeReader *rd;
	int64		n = st->entry.n;
	int			dim = so->meta.dim;
	int64		stack[KD_STACK_DEPTH];
	int			sp = 0;

	if (!kdam_quals_meet_box(so, st->entry.box, dim))
		return;
	rd = tree_reader(so, index, t);
	kdam_reader_hold(rd, true);
	stack[sp++] = 0;
	while (sp > 0)
	{
		int64		node = stack[--sp];

		while (node < n)
		{
			KdamNode	nd;
			bool		left,
						right;

			kdam_reader_node(rd, node, true, &nd);
			if (nd.box && !kdam_quals_meet_box(so, nd.box, dim))
				break;
			if (nd.ref != KDAM_DEAD_REF && kdam_quals_match(so, nd.coords, dim))
				add_hit(so, st->base + node, nd.ref, cap);
			left = kdam_quals_meet_side(so, nd.split, nd.coords[nd.split], true);
			right = kdam_quals_meet_side(so, nd.split, nd.coords[nd.split], false);
			if (left && right)
				stack[sp++] = 2 * node + 2;
			node = left ? 2 * node + 1 : right ? 2 * node + 2 : n;
		}
	}
	kdam_reader_hold(rd, false);
}

/*
 * Heap blocks whose bits share a visibility map page: visibilitymap.c's
 * HEAPBLOCKS_PER_PAGE, which it does not export.
 */
#define KDAM_HEAP_BLOCKS_PER_VM_PAGE \
	((BLCKSZ - MAXALIGN(SizeOfPageHeaderData)) * (BITS_PER_BYTE / 2))

/* The visibility map page holding the bits of a hit's heap block. */
static inline int64
hit_vm_page(const KdamHit *hit)
{
	return kdg_ref_block(hit->ref) / KDAM_HEAP_BLOCKS_PER_VM_PAGE;
}

/*
 * Order an index-only scan's hits by the visibility map page of their heap
 * block, keeping the walk's order within each (which keeps the tree pages
 * that return_row reads again together).  The executor checks each row's
 * visibility map bit, and reads a page whenever it differs from the last
 * row's: in the walk's order, which is random in the heap, that was about
 * one page read per row of a table of two map pages (a 10M-row table).
 */
static void
group_hits_by_vm_page(KdamScanOpaque so)
{
	int64		npages = 0;
	int64	   *start;
	KdamHit    *sorted;

	for (int64 i = 0; i < so->nhits; i++)
		npages = Max(npages, hit_vm_page(&so->hits[i]) + 1);
	if (npages <= 1)
		return;
	start = MemoryContextAllocZero(so->cxt, sizeof(int64) * (npages + 1));
	for (int64 i = 0; i < so->nhits; i++)
		start[hit_vm_page(&so->hits[i]) + 1]++;
	for (int64 p = 0; p < npages; p++)
		start[p + 1] += start[p];
	sorted = MemoryContextAllocExtended(so->cxt, sizeof(KdamHit) * so->nhits,
										MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < so->nhits; i++)
		sorted[start[hit_vm_page(&so->hits[i])]++] = so->hits[i];
	pfree(so->hits);
	pfree(start);
	so->hits = sorted;
}

/* Collect every match of the quals (range and bitmap scans). */
static void
range_collect(IndexScanDesc scan)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	int64		n = so->ntree;
	int			dim = so->meta.dim;
	int64		cap = 256;
	MemoryContext old = MemoryContextSwitchTo(so->cxt);

	so->hits = palloc_extended(sizeof(KdamHit) * cap, MCXT_ALLOC_HUGE);
	MemoryContextSwitchTo(old);
	for (int t = 0; t < so->ntrees; t++)
		tree_collect(so, scan->indexRelation, t, &cap);
	for (int64 i = 0; i < so->pending.n + so->outside.n; i++)
	{
		bool		take = i < so->pending.n
			? kdam_quals_match(so, so->pending.coords + i * dim, dim)
			: kdam_quals_take_outside(so, kdam_scan_outside_rec(so, i - so->pending.n));

		if (take)
			add_hit(so, n + i, loc_ref(so, n + i), &cap);
	}
}

/* qsort_arg comparator of locations by reference; arg is the scan. */
static int
ref_cmp(const void *a, const void *b, void *arg)
{
	uint64		x = loc_ref(arg, *(const int64 *) a);
	uint64		y = loc_ref(arg, *(const int64 *) b);

	return (x > y) - (x < y);
}

/*
 * Read the rows with no distance, in ctid order: NULL rows (from the null
 * chain) that the quals take, and for ordered scans of point and float8[]
 * the empty values outside the tree.  Rows inserted since the scan started
 * may be read too: the executor checks every row's visibility.
 */
static void
read_nulls(IndexScanDesc scan)
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
	so->nullorder = palloc_extended(sizeof(int64) *
									(so->nulls.n + so->outside.n + 1),
									MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < so->nulls.n; i++)
		so->nullorder[n++] = loc_nulls(so) + i;
	for (int64 i = 0; so->ordered && i < so->outside.n; i++)
		if (!outside_ordered(so, i) &&
			kdam_quals_take_outside(so, kdam_scan_outside_rec(so, i)))
			so->nullorder[n++] = loc_outside(so) + i;
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
		read_nulls(scan);
	if (so->nullpos >= so->nnullorder)
		return false;
	*loc = so->nullorder[so->nullpos++];
	return true;
}

/*
 * Return the row at loc, whose reference is ref: its TID, whether the
 * executor must recheck it, and its index tuple when asked for.
 */
static void
return_row(IndexScanDesc scan, int64 loc, uint64 ref)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	const double *rec = loc_outside_rec(so, loc);
	int			words = so->meta.payload_words;
	const double *coords = NULL;
	const uint64 *payload;
	KdamNode	nd;
	uint64		treepayload[INDEX_MAX_KEYS + 1] = {0};
	MemoryContext old;

	kdg_ref_to_tid(ref, &scan->xs_heaptid);
	/* rows outside the tree pass quals by their box alone */
	scan->xs_recheck = so->recheck || (rec != NULL && so->nquals > 0);
	if (!scan->xs_want_itup)
		return;
	if (loc < so->ntree)
	{
		int			t = loc_tree(so, loc);
		KdamTreeReader *rd = tree_reader(so, scan->indexRelation, t);

		kdam_reader_node(rd, loc - so->trees[t].base, false, &nd);
		if (words > 0)
			kdam_reader_payload(rd, loc - so->trees[t].base, treepayload);
		coords = nd.coords;
		payload = treepayload;
	}
	else if (loc < loc_outside(so))
	{
		coords = so->pending.coords + (loc - so->ntree) * so->meta.dim;
		payload = so->pending.payload + (loc - so->ntree) * words;
	}
	else if (rec != NULL)
	{
		if (KdamOutsideKind(rec) == KDAM_OUT_EXACT)
			coords = KdamOutsideLow(rec);
		payload = so->outside.payload + (loc - loc_outside(so)) * words;
	}
	else
		payload = so->nulls.payload + (loc - loc_nulls(so)) * words;
	if (so->tupcxt == NULL)
		so->tupcxt = AllocSetContextCreate(MemoryContextGetParent(so->cxt),
										   "kdgpu scan tuple",
										   ALLOCSET_SMALL_SIZES);
	MemoryContextReset(so->tupcxt);
	old = MemoryContextSwitchTo(so->tupcxt);
	scan->xs_itup = kdam_form_tuple(scan->indexRelation,
									 so->type == KD_TYPE_POINT, coords, payload);
	scan->xs_itupdesc = RelationGetDescr(scan->indexRelation);
	MemoryContextSwitchTo(old);
}

/* amgettuple for ordered scans: the next row and its ORDER BY values. */
static bool
ordered_gettuple(IndexScanDesc scan)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	bool		postgis = kdg_type_is_postgis(so->type);
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
	else if (ordered_next(scan, &it))
		loc = -1 - it.node;
	else if (!postgis && !so->all_null && next_null(scan, &loc))
		no_distance = true;
	else
		return false;
	ref = no_distance ? loc_ref(so, loc) : it.ref;
	return_row(scan, loc, ref);
	rec = loc_outside_rec(so, loc);
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
			ordered_start(scan);
		else
		{
			range_collect(scan);
			if (scan->xs_want_itup)
				group_hits_by_vm_page(so);
		}
	}
	if (so->ordered)
		return ordered_gettuple(scan);
	if (so->pos < so->nhits)
	{
		return_row(scan, so->hits[so->pos].loc, so->hits[so->pos].ref);
		so->pos++;
	}
	else if (next_null(scan, &loc))
		return_row(scan, loc, loc_ref(so, loc));
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
		range_collect(scan);
	}
	for (int64 i = 0; i < so->nhits; i++)
	{
		ItemPointerData tid;

		kdg_ref_to_tid(so->hits[i].ref, &tid);
		tbm_add_tuples(tbm, &tid, 1,
					   so->recheck || loc_outside_rec(so, so->hits[i].loc) != NULL);
		n++;
	}
	while (next_null(scan, &loc))
	{
		ItemPointerData tid;

		kdg_ref_to_tid(loc_ref(so, loc), &tid);
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
