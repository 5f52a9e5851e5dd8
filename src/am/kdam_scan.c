/*
 * kdam_scan.c
 *	  Index scans of the kdgpu access method: ordered (ORDER BY <->), range
 *	  (box and circle) and bitmap scans.
 *
 * A scan pins the metapage for its whole life (see kdam.h), takes the tree
 * from the backend's cache and reads the pending records once.
 *
 * Ordered scans with no quals start with a batch: the engine's depth-first
 * search finds the KDAM_BATCH points nearest by d2, whose exact keys are
 * computed and sorted together with the pending points'.  Every point
 * outside the batch has d2 >= the last one's, so a key below that d2's
 * lower bound (op_lower_bound) cannot be beaten: the batch's rows with such
 * keys are returned first, in order, at a fraction of the best-first cost
 * (a LIMIT 10 rarely needs more).  If the executor asks for more, the
 * best-first search below starts from scratch and skips as many rows, which
 * it returns in the same order.
 *
 * Ordered scans are an incremental best-first search: a binary heap holds
 * subtrees keyed by a lower bound on their distance to the query and points
 * keyed by their exact distance.  The smallest entry is
 * expanded (a subtree pushes its own point and its children) or returned
 * (a point), so rows come out in (distance, ctid) order for as long as the
 * executor asks; filters above the scan never starve a LIMIT.  On equal
 * keys subtrees sort before points, so a point is returned only when no
 * subtree can still hold a nearer or equal-but-lower-ctid one.
 *
 * Keys are the ORDER BY operator's own values, so rows come out in exactly
 * the order (and with the distances) a sort on `col <-> query, ctid` gives,
 * with no recheck: sqrt(d2) for float8[], pg_hypot(dx, dy) for point.  A
 * subtree's key is a lower bound of its points' keys: sqrt of its squared
 * distance bound, lowered for point by a margin that covers the few ulps
 * between pg_hypot and sqrt(d2).
 *
 * Quals: box and kd_rect quals are exact; kd_ball quals prune with a widened
 * squared radius and test each point with the operator's own metric, so they
 * are exact too; circle quals (whose operator allows a tolerance) are
 * widened and rechecked by the executor.  A qual whose region has another
 * dimension than the index is an error, as the operator would raise.
 * PostGIS types return lower bounds and have the executor recheck the
 * order (kdam_postgis.c).
 *
 * Range and bitmap scans collect the matches of all quals at once with a
 * depth-first walk that skips subtrees outside the quals' region.
 *
 * Rows whose point is NULL or empty (the null chain) come after every point
 * in an ordered scan with no quals, in ctid order and with a NULL distance,
 * as a sort puts them; for PostGIS types (rechecked) they come first with a
 * lower bound of 0.  They match no qual.
 */
#include "postgres.h"

#include <math.h>

#include "access/relscan.h"
#include "nodes/tidbitmap.h"
#include "utils/float.h"
#include "utils/geo_decls.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "kdam.h"

/*
 * relative and absolute margins that keep a lowered sqrt(d2) below
 * pg_hypot's value, the absolute one for squares that underflow
 */
#define KDAM_HYPOT_MARGIN 4e-15
#define KDAM_HYPOT_ABS	1e-150
/* points in the first batch of an ordered scan */
#define KDAM_BATCH 16

typedef struct KdamQual
{
	int			strategy;
	int			dim;			/* the region's dimension */
	double		lo[KD_MAX_DIM]; /* box, kd_rect */
	double		hi[KD_MAX_DIM];
	double		center[KD_MAX_DIM]; /* circle, kd_ball */
	double		radius;
	double		r2max;			/* squared radius, widened */
} KdamQual;

/*
 * heap entry: a subtree (node) or a point (ref).  A point's location is
 * its tree node, or the tree's size plus its pending record's number.
 */
typedef struct KdamHeapItem
{
	double		key;			/* operator distance, or a lower bound */
	double		lb2;			/* subtree: lower bound on its d2 */
	uint64		ref;
	int64		node;			/* subtree root, or -1 - location of a point */
} KdamHeapItem;

typedef struct KdamScanOpaqueData
{
	MemoryContext cxt;			/* per-rescan allocations */
	Buffer		metabuf;		/* pinned for the scan's life */
	KdamMetaPageData meta;
	KdamTree   *tree;
	KdamPending pending;
	KdPointType type;
	int			nquals;
	KdamQual   *quals;
	bool		empty;			/* a qual can match nothing */
	bool		recheck;		/* circle or PostGIS &&: the executor tests */
	bool		started;
	/* ordered scans */
	bool		ordered;
	bool		order_null;		/* ORDER BY argument is NULL */
	double		query[KD_MAX_DIM];
	KdamHeapItem *batch;		/* the first rows, in order (key, ref) */
	int			nbatch;
	int			batchpos;
	int64		skip;			/* rows the best-first search must skip */
	KdamHeapItem *heap;		/* NULL until the best-first search starts */
	int64		nheap;
	int64		capheap;
	MemoryContext tupcxt;		/* index-only scans: the tuple returned */
	KdamPending nulls;			/* rows with no point, read when reached */
	int64	   *nullorder;		/* their order by ref */
	bool		nulls_read;
	int64		nullpos;
	/* range scans */
	int64	   *hits;			/* locations of the matches */
	int64		nhits;
	int64		pos;
} KdamScanOpaqueData;

typedef KdamScanOpaqueData *KdamScanOpaque;

/* heap order: key, then subtrees before points, then ref */
static inline bool
item_less(const KdamHeapItem *a, const KdamHeapItem *b)
{
	if (a->key != b->key)
		return a->key < b->key;
	if ((a->node >= 0) != (b->node >= 0))
		return a->node >= 0;
	return a->ref < b->ref;
}

static void
heap_push(KdamScanOpaque so, double key, double lb2, uint64 ref, int64 node)
{
	int64		i;

	if (so->nheap == so->capheap)
	{
		so->capheap *= 2;
		so->heap = repalloc_huge(so->heap, sizeof(KdamHeapItem) * so->capheap);
	}
	i = so->nheap++;
	so->heap[i].key = key;
	so->heap[i].lb2 = lb2;
	so->heap[i].ref = ref;
	so->heap[i].node = node;
	while (i > 0 && item_less(&so->heap[i], &so->heap[(i - 1) / 2]))
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

		if (l < so->nheap && item_less(&so->heap[l], &so->heap[m]))
			m = l;
		if (l + 1 < so->nheap && item_less(&so->heap[l + 1], &so->heap[m]))
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

/* The ORDER BY operator's distance from the query to p. */
static inline double
op_distance(const KdamScanOpaque so, const double *p, int dim)
{
	if (so->order_null)
		return 0.0;
	if (so->type == KD_TYPE_POINT)
		return pg_hypot(p[0] - so->query[0], p[1] - so->query[1]);
	if (kdg_type_is_postgis(so->type))
		return kdam_postgis_lower_bound(so->type, kd_dist2(p, so->query, dim));
	return sqrt(kd_dist2(p, so->query, dim));
}

/*
 * A lower bound on op_distance for points with d2 >= lb2.  When d2
 * overflows, pg_hypot may still be finite, so no bound is known.
 */
static inline double
op_lower_bound(const KdamScanOpaque so, double lb2)
{
	if (so->type == KD_TYPE_POINT)
		return isinf(lb2) ? 0.0
			: Max(0.0, sqrt(lb2) * (1.0 - KDAM_HYPOT_MARGIN) - KDAM_HYPOT_ABS);
	if (kdg_type_is_postgis(so->type))
		return kdam_postgis_lower_bound(so->type, lb2);
	return sqrt(lb2);
}

/* Whether a qual's region is a box (box, kd_rect) rather than a ball. */
static inline bool
qual_is_box(const KdamQual *q)
{
	return q->strategy == KDAM_STRATEGY_IN_BOX ||
		q->strategy == KDAM_STRATEGY_IN_RECT;
}

/* Whether a point may satisfy every qual (exact but for circles). */
static bool
quals_match(const KdamScanOpaque so, const double *p, int dim)
{
	for (int i = 0; i < so->nquals; i++)
	{
		const KdamQual *q = &so->quals[i];

		if (qual_is_box(q))
		{
			for (int j = 0; j < dim; j++)
				if (p[j] < q->lo[j] || p[j] > q->hi[j])
					return false;
		}
		else if (kd_dist2(p, q->center, dim) > q->r2max)
			return false;
		else if (q->strategy == KDAM_STRATEGY_IN_BALL &&
				 !(kdg_metric(so->type, p, q->center, dim) <= q->radius))
			return false;
	}
	return true;
}

/* Whether a region (a stored box) may hold a point satisfying the quals. */
static bool
quals_meet_box(const KdamScanOpaque so, const double *box, int dim)
{
	for (int i = 0; i < so->nquals; i++)
	{
		const KdamQual *q = &so->quals[i];

		if (qual_is_box(q))
		{
			for (int j = 0; j < dim; j++)
				if (q->hi[j] < box[j] || q->lo[j] > box[dim + j])
					return false;
		}
		else if (kd_box_dist2(q->center, box, dim) > q->r2max)
			return false;
	}
	return true;
}

/*
 * Whether the side of node's split plane holding coordinates <= v (left) or
 * >= v (right) may hold a point satisfying the quals.
 */
static bool
quals_meet_side(const KdamScanOpaque so, int s, double v, bool left)
{
	for (int i = 0; i < so->nquals; i++)
	{
		const KdamQual *q = &so->quals[i];

		if (qual_is_box(q))
		{
			if (left ? q->lo[s] > v : q->hi[s] < v)
				return false;
		}
		else
		{
			double		d = q->center[s] - v;

			if ((left ? d > 0 : d < 0) && d * d > q->r2max)
				return false;
		}
	}
	return true;
}

/* Read a scan key's argument into a qual; false if it can match nothing. */
static bool
qual_from_key(KdamScanOpaque so, ScanKey key, KdamQual *q)
{
	q->strategy = key->sk_strategy;
	q->dim = 2;
	if (key->sk_flags & SK_ISNULL)
		return false;
	if (key->sk_strategy == KDAM_STRATEGY_IN_BOX && kdg_type_is_postgis(so->type))
	{
		/* col && arg: PostGIS tests float4 boxes; the executor rechecks */
		so->recheck = true;
		q->dim = kdam_postgis_box_qual(so->type, key->sk_argument, q->lo, q->hi);
		return q->dim > 0;
	}
	/* ball and rect dimensions are checked against the index's later */
	if (key->sk_strategy == KDAM_STRATEGY_IN_BALL)
	{
		q->dim = kdg_ball_from_datum(key->sk_argument, 0, q->center, &q->radius);
		q->r2max = kd_radius_bound(q->radius);
		return q->dim > 0;
	}
	if (key->sk_strategy == KDAM_STRATEGY_IN_RECT)
	{
		q->dim = kdg_rect_from_datum(key->sk_argument, 0, q->lo, q->hi);
		return q->dim > 0;
	}
	if (key->sk_strategy == KDAM_STRATEGY_IN_BOX)
	{
		BOX		   *box = DatumGetBoxP(key->sk_argument);

		q->lo[0] = box->low.x;
		q->lo[1] = box->low.y;
		q->hi[0] = box->high.x;
		q->hi[1] = box->high.y;
		return !isnan(box->low.x) && !isnan(box->low.y) &&
			!isnan(box->high.x) && !isnan(box->high.y);
	}
	if (key->sk_strategy == KDAM_STRATEGY_IN_CIRCLE)
	{
		CIRCLE	   *c = DatumGetCircleP(key->sk_argument);

		q->center[0] = c->center.x;
		q->center[1] = c->center.y;
		q->radius = c->radius;
		q->r2max = kd_radius_bound(c->radius);
		return !isnan(c->radius) && !isnan(c->center.x) && !isnan(c->center.y);
	}
	elog(ERROR, "unsupported kdgpu strategy %d", key->sk_strategy);
	return false;
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

/* amrescan: take the quals and the query point; the search starts lazily */
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
		if (!qual_from_key(so, &scan->keyData[i], &so->quals[i]))
			so->empty = true;
		/* circle quals are widened: the executor applies the exact test */
		if (so->quals[i].strategy == KDAM_STRATEGY_IN_CIRCLE)
			so->recheck = true;
	}
	so->ordered = scan->numberOfOrderBys > 0;
	so->order_null = so->ordered &&
		(scan->orderByData[0].sk_flags & SK_ISNULL) != 0;
	MemoryContextSwitchTo(old);
}

/* Pin the metapage, take the tree and the pending records. */
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
		if (so->meta.dim > 0 && so->quals[i].dim != so->meta.dim)
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
	MemoryContextSwitchTo(old);
	LockBuffer(so->metabuf, BUFFER_LOCK_UNLOCK);
	/* the pin keeps VACUUM off the tree pages while they are read */
	if (so->tree)
		kdam_cache_release(so->tree);
	so->tree = NULL;
	so->tree = kdam_cache_get(index, &so->meta);
	so->started = true;
}

/* qsort comparator of heap items, in heap order. */
static int
item_cmp(const void *a, const void *b)
{
	return item_less(a, b) ? -1 : item_less(b, a) ? 1 : 0;
}

/*
 * The first rows of an ordered scan with no quals, from a depth-first batch
 * (see the file header), into so->batch in (key, ref) order.
 */
static void
ordered_batch(KdamScanOpaque so)
{
	const KdTree *t = &so->tree->tree;
	int			dim = so->meta.dim;
	KdNeighbor	found[KDAM_BATCH];
	int			nfound = kd_knn_one_nodes(t, so->query, KDAM_BATCH, found);
	double		bound = nfound < KDAM_BATCH ? INFINITY
		: op_lower_bound(so, found[nfound - 1].d2);
	int64		npending = 0;
	int			n = 0;

	for (int64 i = 0; i < so->pending.n; i++)
		npending += op_distance(so, so->pending.coords + i * dim, dim) < bound;
	so->batch = MemoryContextAlloc(so->cxt,
								   sizeof(KdamHeapItem) * (nfound + npending + 1));
	for (int i = 0; i < nfound; i++)
	{
		int64		node = (int64) found[i].ref;
		double		key = op_distance(so, t->coords + node * dim, dim);

		if (t->refs[node] != KDAM_DEAD_REF && key < bound)
		{
			so->batch[n].key = key;
			so->batch[n].ref = t->refs[node];
			so->batch[n++].node = -1 - node;
		}
	}
	for (int64 i = 0; i < so->pending.n; i++)
	{
		double		key = op_distance(so, so->pending.coords + i * dim, dim);

		if (key < bound)
		{
			so->batch[n].key = key;
			so->batch[n].ref = so->pending.refs[i];
			so->batch[n++].node = -1 - (t->n + i);
		}
	}
	qsort(so->batch, n, sizeof(KdamHeapItem), item_cmp);
	so->nbatch = n;
	so->skip = n;
}

/* Start the best-first search: the root subtree and every pending point. */
static void
best_first_start(KdamScanOpaque so)
{
	int			dim = so->meta.dim;

	so->capheap = 1024;
	so->heap = MemoryContextAlloc(so->cxt, sizeof(KdamHeapItem) * so->capheap);
	if (so->tree->tree.n > 0)
		heap_push(so, 0.0, 0.0, 0, 0);
	for (int64 i = 0; i < so->pending.n; i++)
	{
		const double *p = so->pending.coords + i * dim;

		if (quals_match(so, p, dim))
			heap_push(so, op_distance(so, p, dim), 0.0, so->pending.refs[i],
					  -1 - (so->tree->tree.n + i));
	}
}

/* Start an ordered scan: read the query point, and take a first batch. */
static void
ordered_start(IndexScanDesc scan)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	int			dim = so->meta.dim;

	if (!so->order_null)
	{
		KdWhere		where = {"ORDER BY", 0};
		KdPointInfo info;
		int			qdim = kdg_datum_read(so->type,
										  scan->orderByData[0].sk_argument,
										  so->query, &where, &info);

		kdam_postgis_check_query(scan->indexRelation, &so->meta, &info,
								 so->type == KD_TYPE_GEOGRAPHY ?
								 "geography_distance_knn" : "ST_Distance");
		if (qdim == 0 && kdg_type_is_postgis(so->type))
		{
			/* an empty point: PostGIS's distance is NULL for every row */
			so->order_null = true;
			memset(so->query, 0, sizeof(so->query));
		}
		else if (dim > 0 && qdim != dim)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("query point has dimension %d, index \"%s\" has dimension %d",
							qdim, RelationGetRelationName(scan->indexRelation), dim)));
	}
	else
		memset(so->query, 0, sizeof(so->query));
	if (!so->order_null && so->nquals == 0)
		ordered_batch(so);
}

/*
 * Next point of an ordered scan in (distance, ref) order, and its location;
 * false when none is left.
 */
static bool
ordered_next(KdamScanOpaque so, double *dist, int64 *loc)
{
	const KdTree *t = &so->tree->tree;
	int			dim = t->dim;

	if (so->batchpos < so->nbatch)
	{
		*dist = so->batch[so->batchpos].key;
		*loc = -1 - so->batch[so->batchpos++].node;
		return true;
	}
	if (so->heap == NULL)
		best_first_start(so);
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
			*dist = it.key;
			*loc = -1 - it.node;
			return true;
		}
		p = t->coords + it.node * dim;
		if (t->refs[it.node] != KDAM_DEAD_REF && quals_match(so, p, dim))
			heap_push(so, op_distance(so, p, dim), 0.0, t->refs[it.node], -1 - it.node);
		s = t->split[it.node];
		for (int side = 0; side < 2; side++)
		{
			int64		child = 2 * it.node + 1 + side;
			double		lb = it.lb2;

			if (child >= t->n || !quals_meet_side(so, s, p[s], side == 0))
				continue;
			if (!so->order_null)
			{
				double		diff = so->query[s] - p[s];

				if ((side == 0) == (diff > 0) && diff * diff > lb)
					lb = diff * diff;
			}
			if (child < t->nbounds)
			{
				const double *box = t->bounds + child * 2 * dim;

				if (!quals_meet_box(so, box, dim))
					continue;
				if (!so->order_null)
					lb = Max(lb, kd_box_dist2(so->query, box, dim));
			}
			heap_push(so, so->order_null ? 0.0 : op_lower_bound(so, lb), lb, 0, child);
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
				!quals_meet_box(so, t->bounds + node * 2 * dim, dim))
				break;
			if (t->refs[node] != KDAM_DEAD_REF && quals_match(so, p, dim))
			{
				if (so->nhits == cap)
				{
					cap *= 2;
					so->hits = repalloc_huge(so->hits, sizeof(int64) * cap);
				}
				so->hits[so->nhits++] = node;
			}
			left = quals_meet_side(so, s, p[s], true);
			right = quals_meet_side(so, s, p[s], false);
			if (left && right)
				stack[sp++] = 2 * node + 2;
			node = left ? 2 * node + 1 : right ? 2 * node + 2 : t->n;
		}
	}
	for (int64 i = 0; i < so->pending.n; i++)
		if (quals_match(so, so->pending.coords + i * dim, dim))
		{
			if (so->nhits == cap)
			{
				cap *= 2;
				so->hits = repalloc_huge(so->hits, sizeof(int64) * cap);
			}
			so->hits[so->nhits++] = t->n + i;
		}
}

/*
 * The reference of the point at a location: a tree node, the tree's size
 * plus a pending record's number, or past those a null record's number.
 */
static inline uint64
loc_ref(KdamScanOpaque so, int64 loc)
{
	const KdTree *t = &so->tree->tree;

	if (loc < t->n)
		return t->refs[loc];
	if (loc < t->n + so->pending.n)
		return so->pending.refs[loc - t->n];
	return so->nulls.refs[loc - t->n - so->pending.n];
}

/* qsort_arg comparator of null records by ref; arg is the records. */
static int
null_cmp(const void *a, const void *b, void *arg)
{
	const uint64 *refs = ((KdamPending *) arg)->refs;
	uint64		x = refs[*(const int64 *) a];
	uint64		y = refs[*(const int64 *) b];

	return (x > y) - (x < y);
}

/*
 * The location of the next row with no point for an ordered scan, read
 * from the null chain when first reached; false when none is left.  Rows
 * inserted since the scan started may be read too: the executor checks
 * every row's visibility.
 */
static bool
next_null(IndexScanDesc scan, int64 *loc)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;

	if (so->nquals > 0)
		return false;
	if (!so->nulls_read)
	{
		KdamMetaPageData meta;
		MemoryContext old = MemoryContextSwitchTo(so->cxt);

		LockBuffer(so->metabuf, BUFFER_LOCK_SHARE);
		meta = *kdam_metapage(scan->indexRelation, BufferGetPage(so->metabuf));
		if (meta.nnull > 0)
			kdam_read_nulls(scan->indexRelation, &meta, &so->nulls);
		else
			memset(&so->nulls, 0, sizeof(so->nulls));
		LockBuffer(so->metabuf, BUFFER_LOCK_UNLOCK);
		so->nullorder = palloc_extended(sizeof(int64) * Max(so->nulls.n, 1),
										MCXT_ALLOC_HUGE);
		for (int64 i = 0; i < so->nulls.n; i++)
			so->nullorder[i] = i;
		qsort_arg(so->nullorder, so->nulls.n, sizeof(int64), null_cmp, &so->nulls);
		MemoryContextSwitchTo(old);
		so->nulls_read = true;
	}
	if (so->nullpos >= so->nulls.n)
		return false;
	*loc = so->tree->tree.n + so->pending.n + so->nullorder[so->nullpos++];
	return true;
}

/* Return the point at loc: its TID, and its index tuple when asked for. */
static void
return_point(IndexScanDesc scan, int64 loc)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	const KdamTree *t = so->tree;
	int			dim = so->meta.dim;
	int			words = so->meta.payload_words;
	MemoryContext old;

	kdg_ref_to_tid(loc_ref(so, loc), &scan->xs_heaptid);
	if (!scan->xs_want_itup)
		return;
	if (so->tupcxt == NULL)
		so->tupcxt = AllocSetContextCreate(MemoryContextGetParent(so->cxt),
										   "kdgpu scan tuple",
										   ALLOCSET_SMALL_SIZES);
	MemoryContextReset(so->tupcxt);
	old = MemoryContextSwitchTo(so->tupcxt);
	if (loc < t->tree.n)
		scan->xs_itup = kdam_form_tuple(scan->indexRelation,
										t->tree.coords + loc * dim,
										t->payload + loc * words);
	else if (loc < t->tree.n + so->pending.n)
		scan->xs_itup = kdam_form_tuple(scan->indexRelation,
										so->pending.coords + (loc - t->tree.n) * dim,
										so->pending.payload + (loc - t->tree.n) * words);
	else
		scan->xs_itup = kdam_form_tuple(scan->indexRelation, NULL,
										so->nulls.payload +
										(loc - t->tree.n - so->pending.n) * words);
	scan->xs_itupdesc = RelationGetDescr(scan->indexRelation);
	MemoryContextSwitchTo(old);
}

/* amgettuple */
bool
kdam_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;

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
	scan->xs_recheck = so->recheck;

	if (so->ordered)
	{
		double		dist;
		int64		loc;

		bool		null_distance = so->order_null;
		bool		nulls_first = kdg_type_is_postgis(so->type);

		/*
		 * Rows with no point: last with a NULL distance, as a sort puts
		 * them; for PostGIS types first with a lower bound of 0, since
		 * <<->> gives 0 for an empty point, and the executor sorts them.
		 */
		if (nulls_first && next_null(scan, &loc))
			dist = 0.0;
		else if (ordered_next(so, &dist, &loc))
			;
		else if (!nulls_first && next_null(scan, &loc))
		{
			dist = 0.0;
			null_distance = true;
		}
		else
			return false;
		return_point(scan, loc);
		scan->xs_orderbyvals[0] = Float8GetDatum(dist);
		scan->xs_orderbynulls[0] = null_distance;
		scan->xs_recheckorderby = kdg_type_is_postgis(so->type) && !so->order_null;
		return true;
	}
	if (so->pos >= so->nhits)
		return false;
	return_point(scan, so->hits[so->pos++]);
	return true;
}

/* amgetbitmap */
int64
kdam_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;

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
		tbm_add_tuples(tbm, &tid, 1, so->recheck);
	}
	return so->nhits;
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
