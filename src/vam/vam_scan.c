/*
 * vam_scan.c
 *	  The ordered scan of a kdvec index: rows by (distance to the query,
 *	  ref), through a best-first search of the vantage-point tree.
 *
 * One queue holds tree nodes, keyed by a lower bound of the distance of
 * every row below them (kde_vp_bound, never above the parent's), and rows,
 * keyed by their distance as the operator computes it (kde_vector_distance,
 * which the SQL operators call).  At equal keys a node comes out before a
 * row and rows by ref, so when a row comes out no row below a node still
 * queued is nearer, nor equally near with a lesser ref: rows come out in
 * the order a sort by distance, ties by ctid, gives.  The pending and
 * null chains are read whole when the scan starts, under the metapage's
 * share lock that inserts wait for; rows whose distance is NULL (no
 * vector, or no query) come out last.
 */
#include "postgres.h"

#include "access/relscan.h"
#include "lib/pairingheap.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "engine/kd_metric.h"
#include "vam.h"

/* A node or a row in the queue. */
typedef struct KdvamQueueItem
{
	pairingheap_node ph;
	double		key;			/* a node's bound, a row's distance */
	bool		null_key;		/* a row whose distance is NULL */
	bool		is_row;
	KdvamChild	child;			/* a node's */
	uint64		ref;			/* a row's */
} KdvamQueueItem;

typedef struct KdvamScanOpaqueData
{
	MemoryContext cxt;			/* the queue and the query; reset by rescan */
	pairingheap *queue;
	KdvamMetaPageData meta;
	double	   *query;			/* NULL: every distance is NULL */
	KdvamNode  *node;			/* a node record read from its page */
	bool		started;
	Buffer		metapin;		/* a scan not under MVCC: the metapage's pin */
} KdvamScanOpaqueData;

typedef KdvamScanOpaqueData *KdvamScanOpaque;

/* pairingheap order: the least (null_key, key, is_row, ref) first. */
static int
kdvam_queue_cmp(const pairingheap_node *a, const pairingheap_node *b, void *arg)
{
	const KdvamQueueItem *x = (const KdvamQueueItem *) a;
	const KdvamQueueItem *y = (const KdvamQueueItem *) b;

	if (x->null_key != y->null_key)
		return x->null_key ? -1 : 1;
	if (x->key != y->key)
		return x->key < y->key ? 1 : -1;
	if (x->is_row != y->is_row)
		return x->is_row ? -1 : 1;
	if (x->ref != y->ref)
		return x->ref < y->ref ? 1 : -1;
	return 0;
}

/* Queue a node (is_row false) or a row. */
static void
kdvam_push(KdvamScanOpaque so, bool is_row, double key, bool null_key,
		   KdvamChild child, uint64 ref)
{
	KdvamQueueItem *item = MemoryContextAlloc(so->cxt, sizeof(KdvamQueueItem));

	item->key = key;
	item->null_key = null_key;
	item->is_row = is_row;
	item->child = child;
	item->ref = ref;
	pairingheap_add(so->queue, &item->ph);
}

/* What kdvam_push_row queues rows for. */
typedef struct KdvamPushRows
{
	KdvamScanOpaque so;
	bool		vectors;
} KdvamPushRows;

/*
 * kdvam_chain_visit's callback: queue a row with its distance (a vector
 * of a leaf or pending page) or none (a null page's ref).
 */
static void
kdvam_push_row(void *arg, uint64 ref, const char *rec)
{
	KdvamPushRows *p = arg;
	KdvamScanOpaque so = p->so;

	if (p->vectors && so->query != NULL)
	{
		const double *v = (const double *) (rec + sizeof(uint64));

		kdvam_push(so, true, kde_vector_distance((KdMetric) so->meta.metric,
												 v, so->query, so->meta.dim),
				   false, 0, ref);
	}
	else
		kdvam_push(so, true, 0.0, true, 0, ref);
}

/*
 * Queue the live rows of the pages chained from blkno: vectors (leaf or
 * pending pages) with their distance, or refs (null pages) with none.
 */
static void
kdvam_push_rows(IndexScanDesc scan, BlockNumber blkno, bool vectors)
{
	KdvamPushRows p = {(KdvamScanOpaque) scan->opaque, vectors};

	kdvam_chain_visit(scan->indexRelation, blkno,
					  vectors ? KDVAM_ROW_SIZE(p.so->meta.dim) : sizeof(uint64),
					  kdvam_push_row, &p);
}

/* Expand inner node number n, reached with bound key: queue its children. */
static void
kdvam_push_children(IndexScanDesc scan, int64 n, double key)
{
	KdvamScanOpaque so = (KdvamScanOpaque) scan->opaque;
	int			dim = so->meta.dim;
	int			per_page = KDVAM_NODES_PER_PAGE(dim);
	Size		size = KDVAM_NODE_SIZE(dim);
	Buffer		buf = ReadBuffer(scan->indexRelation,
								 so->meta.node_first + (BlockNumber) (n / per_page));
	KdvamNode  *nd = so->node;
	double		in = key;
	double		out = key;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	memcpy(nd, kdvam_page_record(BufferGetPage(buf), size, (int) (n % per_page)),
		   size);
	UnlockReleaseBuffer(buf);
	if (so->query != NULL)
	{
		double		dq = kde_vector_distance((KdMetric) so->meta.metric,
											 so->query, nd->vp, dim);

		in = Max(key, kde_vp_bound(dq, nd->mu_in, 0));
		out = Max(key, kde_vp_bound(dq, nd->mu_out, 1));
	}
	kdvam_push(so, false, in, false, nd->inside, 0);
	kdvam_push(so, false, out, false, nd->outside, 0);
}

/*
 * Read the metapage and the query, and queue the tree's root and the rows
 * of the pending and null chains.
 */
static void
kdvam_scan_start(IndexScanDesc scan)
{
	KdvamScanOpaque so = (KdvamScanOpaque) scan->opaque;
	Relation	index = scan->indexRelation;
	Buffer		metabuf;

	if (!IsMVCCSnapshot(scan->xs_snapshot) && !BufferIsValid(so->metapin))
		so->metapin = ReadBuffer(index, KDVAM_METAPAGE_BLKNO);
	metabuf = ReadBuffer(index, KDVAM_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	so->meta = *KdvamPageGetMeta(BufferGetPage(metabuf));
	kdvam_check_meta(index, &so->meta);
	if (scan->numberOfOrderBys > 1 ||
		(scan->numberOfOrderBys == 1 &&
		 scan->orderByData[0].sk_strategy != (so->meta.metric == KD_METRIC_L1 ?
											  KDVAM_STRATEGY_L1 : KDVAM_STRATEGY_L2)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("index \"%s\" orders by its operator class's one distance only",
						RelationGetRelationName(index))));
	if (scan->numberOfOrderBys > 0 &&
		!(scan->orderByData[0].sk_flags & SK_ISNULL))
	{
		KdWhere		where = {"query", 0};
		ArrayType  *arr;
		int			qdim = kdg_array_view(scan->orderByData[0].sk_argument,
										  KD_FLAT_MAX_DIM, &where, &arr);

		if (qdim > 0 && so->meta.dim > 0 && qdim != so->meta.dim)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("cannot compute the distance between points of %d and %d dimensions",
							so->meta.dim, qdim)));
		if (qdim > 0)
		{
			so->query = MemoryContextAlloc(so->cxt, sizeof(double) * qdim);
			memcpy(so->query, ARR_DATA_PTR(arr), sizeof(double) * qdim);
		}
		if ((Pointer) arr != DatumGetPointer(scan->orderByData[0].sk_argument))
			pfree(arr);
	}
	so->node = MemoryContextAlloc(so->cxt, KDVAM_NODE_SIZE(Max(so->meta.dim, 1)));
	if (so->meta.root != KDVAM_NO_CHILD)
		kdvam_push(so, false, 0.0, false, so->meta.root, 0);
	kdvam_push_rows(scan, so->meta.pending_head, true);
	kdvam_push_rows(scan, so->meta.null_head, false);
	UnlockReleaseBuffer(metabuf);
	so->started = true;
}

/* ambeginscan */
IndexScanDesc
kdvam_beginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	KdvamScanOpaque so = palloc0(sizeof(KdvamScanOpaqueData));

	so->cxt = AllocSetContextCreate(CurrentMemoryContext, "kdvec scan",
									ALLOCSET_DEFAULT_SIZES);
	so->metapin = InvalidBuffer;
	scan->opaque = so;
	scan->xs_orderbyvals = palloc0(sizeof(Datum) * Max(norderbys, 1));
	scan->xs_orderbynulls = palloc(sizeof(bool) * Max(norderbys, 1));
	return scan;
}

/* amrescan: a new query; the search starts at the next gettuple */
void
kdvam_rescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys,
			 int norderbys)
{
	KdvamScanOpaque so = (KdvamScanOpaque) scan->opaque;
	MemoryContext oldcxt;

	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
	if (orderbys && scan->numberOfOrderBys > 0)
		memmove(scan->orderByData, orderbys,
				scan->numberOfOrderBys * sizeof(ScanKeyData));
	MemoryContextReset(so->cxt);
	oldcxt = MemoryContextSwitchTo(so->cxt);
	so->queue = pairingheap_allocate(kdvam_queue_cmp, NULL);
	MemoryContextSwitchTo(oldcxt);
	so->query = NULL;
	so->started = false;
}

/* amgettuple: the next row by distance */
bool
kdvam_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	KdvamScanOpaque so = (KdvamScanOpaque) scan->opaque;

	if (dir != ForwardScanDirection)
		elog(ERROR, "kdvec indexes scan forward only");
	if (!so->started)
		kdvam_scan_start(scan);
	while (!pairingheap_is_empty(so->queue))
	{
		KdvamQueueItem *item = (KdvamQueueItem *) pairingheap_remove_first(so->queue);

		CHECK_FOR_INTERRUPTS();
		if (item->is_row)
		{
			kdg_ref_to_tid(item->ref, &scan->xs_heaptid);
			scan->xs_recheck = false;
			scan->xs_recheckorderby = false;
			if (scan->numberOfOrderBys > 0)
			{
				scan->xs_orderbyvals[0] = Float8GetDatum(item->key);
				scan->xs_orderbynulls[0] = item->null_key;
			}
			pfree(item);
			return true;
		}
		if (KDVAM_IS_LEAF(item->child))
			kdvam_push_rows(scan, KDVAM_LEAF_BLOCK(item->child), true);
		else
			kdvam_push_children(scan, item->child, item->key);
		pfree(item);
	}
	return false;
}

/* amendscan */
void
kdvam_endscan(IndexScanDesc scan)
{
	KdvamScanOpaque so = (KdvamScanOpaque) scan->opaque;

	if (BufferIsValid(so->metapin))
		ReleaseBuffer(so->metapin);
	MemoryContextDelete(so->cxt);
	pfree(so);
}
