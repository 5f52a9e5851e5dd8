/*
 * kdam_scan.c
 *	  Index scans of the kdgpu access method: ordered (ORDER BY <->), range
 *	  and bitmap scans.
 *
 * A scan pins the metapage for its whole life (see kdam.h), takes the tree
 * from the backend's cache, and reads the pending records and the rows
 * outside the tree (kdam_outside.c) once; both are searched exhaustively
 * beside the tree.  WHERE quals are regions (kdam_quals.c), ORDER BY keys
 * distances and bounds (kdam_order.c).
 *
 * Ordered scans are an incremental best-first search: a binary heap holds
 * subtrees keyed by lower bounds of their points' ORDER BY values and
 * points keyed by their values.  The smallest entry is expanded (a subtree
 * pushes its own point and its children) or returned (a point), so rows
 * come out in order for as long as the executor asks; filters above the
 * scan never starve a LIMIT.  With several ORDER BY keys entries compare
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
 * Ordered scans with one key and no quals start with a batch: the engine's
 * depth-first search finds the KDAM_BATCH points nearest by d2, whose exact
 * keys are computed and sorted together with the pending and outside rows'.
 * Every tree point outside the batch has d2 >= the last one's, so a key
 * below that d2's lower bound cannot be beaten: the batch's rows with such
 * keys are returned first, in order (a LIMIT 10 rarely needs more).  If the
 * executor asks for more, the best-first search starts from scratch and
 * skips as many rows, which it returns in the same order.
 *
 * Range and bitmap scans collect the matches of all quals at once with a
 * depth-first walk that skips subtrees outside the quals' region.
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

#include "kdam_scan.h"

/* points in the first batch of an ordered scan */
#define KDAM_BATCH 16
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
	so->heap[i] = *item;
	while (i > 0 && item_less(so, &so->heap[i], &so->heap[(i - 1) / 2]))
	{
		KdamHeapItem t = so->heap[i];

		so->heap[i] = so->heap[(i - 1) / 2];
		so->heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static KdamHeapItem
heap_pop(KdamScanOpaque so)
{
	KdamHeapItem top = so->heap[0];
	int64		i = 0;

	so->heap[0] = so->heap[--so->nheap];
	for (;;)
	{
		int64		l = 2 * i + 1,
					m = i;

		if (l < so->nheap && item_less(so, &so->heap[l], &so->heap[m]))
			m = l;
		if (l + 1 < so->nheap && item_less(so, &so->heap[l + 1], &so->heap[m]))
			m = l + 1;
		if (m == i)
			break;
		{
			KdamHeapItem t = so->heap[i];

			so->heap[i] = so->heap[m];
			so->heap[m] = t;
		}
		i = m;
	}
	return top;
}

/* Locations: where the outside rows and the NULL rows start. */
static inline int64
loc_outside(const KdamScanOpaque so)
{
	return so->tree->tree.n + so->pending.n;
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
 * The reference of the row at a location: a tree node, a pending record,
 * an outside record or a NULL row.
 */
static inline uint64
loc_ref(KdamScanOpaque so, int64 loc)
{
	const KdTree *t = &so->tree->tree;

	if (loc < t->n)
		return t->refs[loc];
	if (loc < loc_outside(so))
		return so->pending.refs[loc - t->n];
	if (loc < loc_nulls(so))
		return so->outside.refs[loc - loc_outside(so)];
	return so->nulls.refs[loc - loc_nulls(so)];
}

/* The coordinates of a tree or pending point. */
static inline const double *
loc_coords(KdamScanOpaque so, int64 loc)
{
	const KdTree *t = &so->tree->tree;

	if (loc < t->n)
		return t->coords + loc * t->dim;
	return so->pending.coords + (loc - t->n) * so->meta.dim;
}

/* A heap item for the row at a location, keyed by every ORDER BY key. */
static void
point_item(KdamScanOpaque so, int64 loc, KdamHeapItem *it)
{
	const double *rec = loc_outside_rec(so, loc);
	const double *p = rec || loc >= loc_nulls(so) ? NULL : loc_coords(so, loc);

	/* a NULL row's keys are all null (so->all_null): p is not read */
	it->ref = loc_ref(so, loc);
	it->node = -1 - loc;
	it->lb2 = 0.0;
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

/*
 * A heap item for the child subtree of a node whose point is p, on the
 * left or right of its split plane s, given the parent's item.
 */
static void
subtree_item(KdamScanOpaque so, const KdamHeapItem *parent, const double *p,
			 int s, bool left, int64 child, KdamHeapItem *it)
{
	const KdTree *t = &so->tree->tree;
	const double *box = child < t->nbounds ? t->bounds + child * 2 * t->dim : NULL;

	it->ref = 0;
	it->node = child;
	it->more = more_alloc(so);
	for (int k = 0; k < so->norder; k++)
	{
		const KdamOrderKey *key = &so->keys[k];
		double		lb2 = k == 0 ? parent->lb2 : parent->more[so->norder - 1 + k - 1];

		lb2 = Max(lb2, kdam_order_side2(key, p, s, left));
		if (box)
			lb2 = Max(lb2, kdam_order_box2(key, box, t->dim));
		if (k == 0)
		{
			it->lb2 = lb2;
			it->key = kdam_order_bound(so, key, lb2);
		}
		else
		{
			it->more[so->norder - 1 + k - 1] = lb2;
			it->more[k - 1] = kdam_order_bound(so, key, lb2);
		}
	}
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

	MemoryContextReset(so->cxt);
	so->started = false;
	so->empty = false;
	so->heap = NULL;
	so->nheap = 0;
	so->more_left = 0;
	so->nbatch = 0;
	so->batchpos = 0;
	so->skip = 0;
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

/* Pin the metapage, take the tree, the pending and the outside records. */
static void
scan_start(IndexScanDesc scan)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	Relation	index = scan->indexRelation;
	MemoryContext old;

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
	if (so->meta.npending > 0)
		kdam_read_pending(index, &so->meta, &so->pending);
	else
		memset(&so->pending, 0, sizeof(so->pending));
	if (so->meta.noutside > 0)
		kdam_read_outside(index, &so->meta, &so->outside);
	else
		memset(&so->outside, 0, sizeof(so->outside));
	MemoryContextSwitchTo(old);
	LockBuffer(so->metabuf, BUFFER_LOCK_UNLOCK);
	/* the pin keeps VACUUM off the tree pages while they are read */
	if (so->tree)
		kdam_cache_release(so->tree);
	so->tree = NULL;
	so->tree = kdam_cache_get(index, &so->meta);
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

/* Whether every coordinate of a point is finite. */
static bool
point_is_finite(const double *p, int dim)
{
	for (int j = 0; j < dim; j++)
		if (!isfinite(p[j]))
			return false;
	return true;
}

/* qsort comparator of heap items, in heap order; arg is the scan. */
static int
item_cmp(const void *a, const void *b, void *arg)
{
	KdamScanOpaque so = arg;

	return item_less(so, a, b) ? -1 : item_less(so, b, a) ? 1 : 0;
}

/*
 * The first rows of an ordered scan with one point key and no quals, from
 * a depth-first batch (see the file header), into so->batch in order.
 */
static void
ordered_batch(KdamScanOpaque so)
{
	const KdTree *t = &so->tree->tree;
	const KdamOrderKey *key = &so->keys[0];
	KdNeighbor	found[KDAM_BATCH];
	int			nfound = kd_knn_one_nodes(t, key->q, KDAM_BATCH, found);
	double		bound = nfound < KDAM_BATCH ? INFINITY
		: kdam_order_bound(so, key, found[nfound - 1].d2);
	int			n = 0;

	so->batch = MemoryContextAlloc(so->cxt, sizeof(KdamHeapItem) *
								   (nfound + so->pending.n + so->outside.n + 1));
	for (int i = 0; i < nfound; i++)
	{
		int64		node = (int64) found[i].ref;

		if (t->refs[node] == KDAM_DEAD_REF)
			continue;
		point_item(so, node, &so->batch[n]);
		n += so->batch[n].key < bound;
	}
	for (int64 i = 0; i < so->pending.n + so->outside.n; i++)
	{
		if (i >= so->pending.n && !outside_ordered(so, i - so->pending.n))
			continue;
		point_item(so, t->n + i, &so->batch[n]);
		n += key_cmp(so->batch[n].key, bound) < 0;
	}
	qsort_arg(so->batch, n, sizeof(KdamHeapItem), item_cmp, so);
	so->nbatch = n;
	so->skip = n;
}

static void read_nulls(IndexScanDesc scan);

/*
 * Start the best-first search: the root subtree, and every pending and
 * outside row that the quals may accept.  When every key is null, every
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

	so->capheap = 1024;
	so->heap = MemoryContextAlloc(so->cxt, sizeof(KdamHeapItem) * so->capheap);
	if (so->tree->tree.n > 0)
	{
		it.key = so->all_null ? 0.0 : kdam_order_bound(so, &so->keys[0], 0.0);
		it.lb2 = 0.0;
		it.ref = 0;
		it.node = 0;
		it.more = more_alloc(so);
		for (int k = 1; k < so->norder; k++)
		{
			it.more[k - 1] = kdam_order_bound(so, &so->keys[k], 0.0);
			it.more[so->norder - 1 + k - 1] = 0.0;
		}
		heap_push(so, &it);
	}
	for (int64 i = 0; i < so->pending.n; i++)
		if (kdam_quals_match(so, so->pending.coords + i * dim, dim))
		{
			point_item(so, so->tree->tree.n + i, &it);
			heap_push(so, &it);
		}
	for (int64 i = 0; i < so->outside.n; i++)
		if (outside_ordered(so, i) &&
			kdam_quals_take_outside(so, kdam_scan_outside_rec(so, i)))
		{
			point_item(so, loc_outside(so) + i, &it);
			heap_push(so, &it);
		}
	if (so->all_null)
	{
		read_nulls(scan);
		for (int64 i = 0; i < so->nnullorder; i++)
		{
			point_item(so, so->nullorder[i], &it);
			heap_push(so, &it);
		}
		so->nullpos = so->nnullorder;
	}
}

/* Start an ordered scan: read the ORDER BY keys, and take a first batch. */
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
	if (so->norder == 1 && so->nquals == 0 && !so->keys[0].null &&
		!so->keys[0].box && so->tree->tree.n > 0 &&
		point_is_finite(so->keys[0].q, so->meta.dim))
		ordered_batch(so);
}

/*
 * Next row of an ordered scan in order, as a heap item (keys and
 * location); false when none is left.
 */
static bool
ordered_next(IndexScanDesc scan, KdamHeapItem *out)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	const KdTree *t = &so->tree->tree;
	int			dim = t->dim;

	if (so->batchpos < so->nbatch)
	{
		*out = so->batch[so->batchpos++];
		return true;
	}
	if (so->heap == NULL)
		best_first_start(scan);
	while (so->nheap > 0)
	{
		KdamHeapItem it = heap_pop(so);
		const double *p;
		int			s;

		if (it.node < 0)
		{
			/* the batch returned the first rows already */
			if (so->skip > 0)
			{
				so->skip--;
				continue;
			}
			*out = it;
			return true;
		}
		p = t->coords + it.node * dim;
		if (t->refs[it.node] != KDAM_DEAD_REF && kdam_quals_match(so, p, dim))
		{
			KdamHeapItem pt;

			point_item(so, it.node, &pt);
			heap_push(so, &pt);
		}
		s = t->split[it.node];
		for (int side = 0; side < 2; side++)
		{
			int64		child = 2 * it.node + 1 + side;
			KdamHeapItem sub;

			if (child >= t->n || !kdam_quals_meet_side(so, s, p[s], side == 0))
				continue;
			if (child < t->nbounds &&
				!kdam_quals_meet_box(so, t->bounds + child * 2 * dim, dim))
				continue;
			subtree_item(so, &it, p, s, side == 0, child, &sub);
			heap_push(so, &sub);
		}
	}
	return false;
}

/* Collect every match of the quals (range and bitmap scans). */
static void
range_collect(KdamScanOpaque so)
{
	const KdTree *t = &so->tree->tree;
	int			dim = t->dim;
	int64		stack[KD_STACK_DEPTH];
	int			sp = 0;
	int64		cap = 1024;
	MemoryContext old = MemoryContextSwitchTo(so->cxt);

	so->hits = palloc_extended(sizeof(int64) * cap, MCXT_ALLOC_HUGE);
	MemoryContextSwitchTo(old);
	if (t->n > 0)
		stack[sp++] = 0;
	while (sp > 0)
	{
		int64		node = stack[--sp];

		while (node < t->n)
		{
			const double *p = t->coords + node * dim;
			int			s = t->split[node];
			bool		left,
						right;

			if (node < t->nbounds &&
				!kdam_quals_meet_box(so, t->bounds + node * 2 * dim, dim))
				break;
			if (t->refs[node] != KDAM_DEAD_REF && kdam_quals_match(so, p, dim))
			{
				if (so->nhits == cap)
				{
					cap *= 2;
					so->hits = repalloc_huge(so->hits, sizeof(int64) * cap);
				}
				so->hits[so->nhits++] = node;
			}
			left = kdam_quals_meet_side(so, s, p[s], true);
			right = kdam_quals_meet_side(so, s, p[s], false);
			if (left && right)
				stack[sp++] = 2 * node + 2;
			node = left ? 2 * node + 1 : right ? 2 * node + 2 : t->n;
		}
	}
	for (int64 i = 0; i < so->pending.n + so->outside.n; i++)
	{
		bool		take = i < so->pending.n
			? kdam_quals_match(so, so->pending.coords + i * so->meta.dim, so->meta.dim)
			: kdam_quals_take_outside(so, kdam_scan_outside_rec(so, i - so->pending.n));

		if (!take)
			continue;
		if (so->nhits == cap)
		{
			cap *= 2;
			so->hits = repalloc_huge(so->hits, sizeof(int64) * cap);
		}
		so->hits[so->nhits++] = t->n + i;
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
 * Return the row at loc: its TID, whether the executor must recheck it, and
 * its index tuple when asked for.
 */
static void
return_row(IndexScanDesc scan, int64 loc)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	const KdamTree *t = so->tree;
	const double *rec = loc_outside_rec(so, loc);
	int			words = so->meta.payload_words;
	const double *coords = NULL;
	const uint64 *payload;
	MemoryContext old;

	kdg_ref_to_tid(loc_ref(so, loc), &scan->xs_heaptid);
	/* rows outside the tree pass quals by their box alone */
	scan->xs_recheck = so->recheck || (rec != NULL && so->nquals > 0);
	if (!scan->xs_want_itup)
		return;
	if (loc < t->tree.n)
	{
		coords = t->tree.coords + loc * so->meta.dim;
		payload = t->payload + loc * words;
	}
	else if (loc < loc_outside(so))
	{
		coords = so->pending.coords + (loc - t->tree.n) * so->meta.dim;
		payload = so->pending.payload + (loc - t->tree.n) * words;
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
	scan->xs_itup = kdam_form_tuple(scan->indexRelation, coords, payload);
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
	return_row(scan, loc);
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
			range_collect(so);
	}
	if (so->ordered)
		return ordered_gettuple(scan);
	if (so->pos < so->nhits)
		loc = so->hits[so->pos++];
	else if (!next_null(scan, &loc))
		return false;
	return_row(scan, loc);
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
		range_collect(so);
	}
	for (int64 i = 0; i < so->nhits; i++)
	{
		ItemPointerData tid;

		kdg_ref_to_tid(loc_ref(so, so->hits[i]), &tid);
		tbm_add_tuples(tbm, &tid, 1,
					   so->recheck || loc_outside_rec(so, so->hits[i]) != NULL);
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

	if (so->tree)
		kdam_cache_release(so->tree);
	if (BufferIsValid(so->metabuf))
		ReleaseBuffer(so->metabuf);
	MemoryContextDelete(so->cxt);
	if (so->tupcxt)
		MemoryContextDelete(so->tupcxt);
	pfree(so);
	scan->opaque = NULL;
}
