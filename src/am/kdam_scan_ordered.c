/*
 * kdam_scan_ordered.c
 *	  The best-first search of ordered kdgpu index scans (ORDER BY <->).
 *
 * An incremental best-first search: a binary heap holds subtrees keyed by
 * lower bounds of their points' ORDER BY values and points keyed by their
 * values; it starts with the roots of the trees whose boxes meet the
 * quals, bounded by their boxes, and every outside row the quals may
 * accept.  The smallest entry is expanded (a subtree pushes its own point and its
 * children, and goes on down into the child that would be popped next
 * without pushing it, expand_subtree) or returned (a point), so rows come
 * out in order for as long as the executor asks; filters above the scan
 * never starve a LIMIT.
 *
 * The pending rows the quals accept wait in a heap of their own, keyed by
 * their squared distances alone (no ORDER BY value computed) and ordered
 * at once in linear time; the main heap holds one item for them, bounded
 * by the nearest one's distance, and a pending row's value is computed
 * only when that item is popped (side_start, side_expand): a LIMIT 10
 * takes a handful of the pending rows, and the main heap stays as small as
 * the trees make it.  The roots of the trees wait in a heap of their own
 * too, keyed by their boxes' bounds (roots_start, roots_expand), so that a
 * search pushes only the roots of the trees it enters.  A scan allocates
 * little (a reader only for each tree it enters), since memory that glibc
 * takes from the system and gives back each query costs a short search
 * more than the search itself.
 *
 * With several ORDER BY keys entries compare lexicographically, key by
 * key, as a sort does (a subtree's vector of lower bounds is a
 * lexicographic lower bound of its points' vectors).  On equal keys
 * subtrees sort before points, then points by reference, so a point is
 * returned only when no subtree can still hold one that sorts before it:
 * ties come out in ctid order.  NaN sorts after every number, as in
 * float8's ordering.
 */
#include "postgres.h"

#include <math.h>

#include "access/relscan.h"
#include "utils/float.h"
#include "utils/memutils.h"

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

/*
 * Put row into the hole at i of a heap apart from the main one (h, n
 * rows), sifting the hole down to the row's place.
 */
static void
lazy_sift_down(KdamLazyRow *h, int64 n, int64 i, KdamLazyRow row)
{
	for (;;)
	{
		int64		m = 2 * i + 1;

		if (m >= n)
			break;
		if (m + 1 < n && h[m + 1].v < h[m].v)
			m++;
		if (!(h[m].v < row.v))
			break;
		h[i] = h[m];
		i = m;
	}
	h[i] = row;
}

/* Order a heap apart from the main one in linear time (Floyd's method). */
static void
lazy_heapify(KdamLazyRow *h, int64 n)
{
	for (int64 i = n / 2 - 1; i >= 0; i--)
		lazy_sift_down(h, n, i, h[i]);
}

/* Take the smallest row of a heap apart from the main one. */
static void
lazy_pop(KdamLazyRow *h, int64 *n)
{
	(*n)--;
	if (*n > 0)
		lazy_sift_down(h, *n, 0, h[*n]);
}

/*
 * Push the main heap's item standing for a heap apart from it (tree
 * KDAM_SIDE_TREE or KDAM_ROOTS_TREE): bounded by key for the first ORDER
 * BY key (and by -inf for the others), and sorting before points on an
 * equal bound, as a subtree does.  Its squared bounds are never read: the
 * item is expanded by its own heap, not as a subtree.
 */
static void
lazy_push(KdamScanOpaque so, int32 tree, double key)
{
	KdamHeapItem it;

	it.ref = 0;
	it.node = 0;
	it.tree = tree;
	it.boxed = true;
	it.lb2 = 0.0;
	it.key = key;
	it.more = more_alloc(so);
	for (int k = 1; k < so->norder; k++)
	{
		it.more[k - 1] = -get_float8_infinity();
		it.more[so->norder - 1 + k - 1] = 0.0;
	}
	heap_push(so, &it);
}

/* Push the item of the pending rows' heap, bounded by its nearest row. */
static void
side_push(KdamScanOpaque so)
{
	if (so->nside > 0)
		lazy_push(so, KDAM_SIDE_TREE,
				  kdam_order_bound(so, &so->keys[0], so->side[0].v));
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
	const double *rec = kdam_loc_outside_rec(so, loc);

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

	if (loc < kdam_loc_outside(so))
		p = so->pending.coords + (loc - so->ntree) * so->meta.dim;
	point_item(so, loc, kdam_loc_ref(so, loc), p, it);
}

/*
 * Put the pending rows the quals accept in their own heap, keyed by their
 * squared distances to the first key's argument and ordered in linear time
 * (Floyd's method), and their item in the main heap.
 */
static void
side_start(KdamScanOpaque so)
{
	int			dim = so->meta.dim;

	so->side = MemoryContextAlloc(so->cxt,
								  sizeof(KdamLazyRow) * Max(so->pending.n, 1));
	so->nside = 0;
	for (int64 i = 0; i < so->pending.n; i++)
	{
		const double *p = so->pending.coords + i * dim;
		KdamLazyRow *row = &so->side[so->nside];

		if (!kdam_quals_match(so, p, dim))
			continue;
		row->v = kdam_order_point2(&so->keys[0], p, dim);
		row->i = i;
		so->nside++;
	}
	lazy_heapify(so->side, so->nside);
	side_push(so);
}

/*
 * The main heap's item for the pending rows was popped: put the nearest
 * pending row in the main heap as a point, with its ORDER BY values, and
 * the item again, bounded by the next one.
 */
static void
side_expand(KdamScanOpaque so)
{
	KdamHeapItem it;

	row_item(so, so->ntree + so->side[0].i, &it);
	heap_push(so, &it);
	lazy_pop(so->side, &so->nside);
	side_push(so);
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

/* Push the item of the roots' heap, bounded by its nearest tree. */
static void
roots_push(KdamScanOpaque so)
{
	if (so->nroots > 0)
		lazy_push(so, KDAM_ROOTS_TREE, so->roots[0].v);
}

/*
 * Put the roots of the trees whose boxes meet the quals in a heap of their
 * own, keyed by their boxes' bounds for the first ORDER BY key, and its
 * item in the main heap: a search enters the few trees near its argument
 * and pushes no item for the others, however many the forest holds.
 */
static void
roots_start(KdamScanOpaque so)
{
	int			dim = so->meta.dim;

	so->roots = MemoryContextAlloc(so->cxt,
								   sizeof(KdamLazyRow) * Max(so->ntrees, 1));
	so->nroots = 0;
	for (int t = 0; t < so->ntrees; t++)
	{
		const double *box = so->trees[t].entry.box;
		KdamLazyRow *row = &so->roots[so->nroots];

		if (!kdam_quals_meet_box(so, box, dim))
			continue;
		row->v = kdam_order_bound(so, &so->keys[0],
								  kdam_order_box2(&so->keys[0], box, dim));
		row->i = t;
		so->nroots++;
	}
	lazy_heapify(so->roots, so->nroots);
	roots_push(so);
}

/*
 * The main heap's item for the roots was popped: push the nearest tree's
 * root, bounded by the tree's box for every key, and the item again,
 * bounded by the next tree.
 */
static void
roots_expand(KdamScanOpaque so)
{
	int			t = (int) so->roots[0].i;
	const double *box = so->trees[t].entry.box;
	KdamHeapItem it;

	it.ref = 0;
	it.node = 0;
	it.tree = t;
	it.boxed = false;
	it.more = more_alloc(so);
	for (int k = 0; k < so->norder; k++)
		item_set_bound(so, &it, k, kdam_order_box2(&so->keys[k], box,
												   so->meta.dim));
	heap_push(so, &it);
	lazy_pop(so->roots, &so->nroots);
	roots_push(so);
}

/*
 * Start the best-first search: the item of the trees' roots whose boxes
 * meet the quals (roots_start), the item of the pending rows that the
 * quals may accept (side_start), and every such outside row.  When every
 * key is null, every row's distances are NULL and a sort orders them by
 * ctid alone: the rows with no distance join the search, and come out in
 * ctid order among the rest.
 */
static void
best_first_start(IndexScanDesc scan)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	KdamHeapItem it;

	so->capheap = 128;
	so->heap = MemoryContextAlloc(so->cxt, sizeof(KdamHeapItem) * so->capheap);
	roots_start(so);
	side_start(so);
	for (int64 i = 0; i < so->outside.n; i++)
		if (kdam_scan_outside_ordered(so, i) &&
			kdam_quals_take_outside(so, kdam_scan_outside_rec(so, i)))
		{
			row_item(so, kdam_loc_outside(so) + i, &it);
			heap_push(so, &it);
		}
	if (so->all_null)
	{
		kdam_scan_read_nulls(scan);
		for (int64 i = 0; i < so->nnullorder; i++)
		{
			row_item(so, so->nullorder[i], &it);
			heap_push(so, &it);
		}
		so->nullpos = so->nnullorder;
	}
}

/* Start an ordered scan: read the ORDER BY keys. */
void
kdam_ordered_start(IndexScanDesc scan)
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
	KdamTreeReader *rd = kdam_scan_tree_reader(so, scan->indexRelation, it.tree);
	int64		n = so->trees[it.tree].entry.n;

	kdam_reader_hold(rd, true);
	for (;;)
	{
		KdamNode	nd;
		KdamHeapItem sub[2];
		int			nsub = 0;

		kdam_reader_node(rd, it.node, !it.boxed, &nd);
		kdam_reader_prefetch_children(rd);
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
bool
kdam_ordered_next(IndexScanDesc scan, KdamHeapItem *out)
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
		if (it.tree == KDAM_SIDE_TREE)
			side_expand(so);
		else if (it.tree == KDAM_ROOTS_TREE)
			roots_expand(so);
		else
			expand_subtree(scan, it);
	}
	return false;
}
