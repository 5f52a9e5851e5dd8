/*
 * vector_source.c
 *	  The rows of a kd_* function over vectors taken from a kdvec index
 *	  and the table's visibility map, as an index-only scan takes them, and
 *	  the index's vantage-point tree over them, instead of a scan of the
 *	  whole table and a tree built for the call.
 *
 * A function whose vectors are searched flat (flat_search.c: more than
 * KD_MAX_DIM coordinates, or a metric other than L2) on a table with a
 * kdvec index of its metric on the column takes as its rows:
 *
 *	the index's live rows (its tree's leaves and its pending chain) whose
 *	heap page the visibility map marks all-visible: every snapshot sees
 *	them, as an index-only scan relies on; and
 *
 *	the rows visible to the snapshot on every other page, read from the
 *	heap (index_source.c's kdg_read_heap_pages).
 *
 * The tree's live rows are copied once per generation of the index (vam.h)
 * into a copy kept by the backend (index_rows.c), in TID order, with the
 * index's tree: its vantage points are the nodes' own coordinates
 * (KdVpTree.vps) and its order names the copy's rows.  A subtree of at most
 * KD_VP_LEAF_ROWS live rows becomes one leaf of the copy: the index's
 * leaves are a page each, a few rows of wide vectors, and a search walks a
 * leaf's rows a warp's width at a time (the bounds above it still hold, as
 * the leaf has exactly the subtree's rows).  When no page needs reading and
 * nothing is pending, a call's rows and tree are the copy's, used in place,
 * and a GPU search keeps the tree and rows on the device until the copy is
 * dropped.  Else the call's rows are
 * assembled in TID order, and the tree's leaves keep the rows of theirs
 * that are the call's (a tree keeps its bounds for any subset of its
 * rows), while the call's rows it lacks (pending rows, rows read from
 * pages that changed) hang beside it under a new root whose outside bound
 * is 0 and whose inside bound covers them all: every row is reached and no
 * bound is above a row's distance.  Where more rows differ than
 * kdg_delta_max allows, no tree is given and the engine chooses as for a
 * table's rows.
 *
 * Rows are named by the TID the index holds (their HOT chain's root),
 * which the answers map to the rows' own (hot_chains.c, whose maps of
 * all-visible pages the copy keeps; flat_search.c).
 *
 * The VACUUM interlock is kdvec's (vam.h): the metapage stays pinned from
 * reading its generation until every heap page is read, so no row the
 * index shows live has its TID freed, let alone reused, meanwhile, and
 * VACUUM's new generation, set under the cleanup lock that waits for the
 * pin, retires the copy before the heap frees what it marked.  A page
 * marked all-visible stays so, as far as the snapshot's rows go, for the
 * snapshot's life (index_source.c says why).
 *
 * The index keeps no key column, so a function asked for keys reads the
 * table, and says so in kd_status().last_run, as it does for every case
 * index_source.c lists.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/visibilitymap.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "local/local.h"
#include "vam/vam.h"

/* A row and its TID, to sort by TID. */
typedef struct VsRow
{
	uint64		tid;
	int64		at;				/* where its record was copied */
} VsRow;

/* Rows read from index pages: each one's coordinates and TID. */
typedef struct VsRows
{
	int			dim;
	int64		n;
	int64		cap;
	double	   *coords;			/* n * dim */
	uint64	   *tids;
} VsRows;

/* What reading the index's tree gathers. */
typedef struct VsTree
{
	Relation	index;
	BlockNumber node_first;
	int			dim;
	int64		nnodes;			/* by depth-first preorder, the root first */
	int64		capnodes;
	KdVpNode   *nodes;			/* start and count: leaf positions */
	double	   *vps;			/* nnodes * dim */
	VsRows		leaves;			/* by leaf position */
} VsTree;

/* kdvam_chain_visit's callback: add a live row of a leaf or pending page. */
static void
vs_add_row(void *arg, uint64 ref, const char *rec)
{
	VsRows	   *rows = arg;

	if (rows->n == rows->cap)
	{
		int64		c = Max(rows->cap * 2, 1024);

		rows->coords = rows->coords ?
			repalloc_huge(rows->coords, sizeof(double) * rows->dim * c) :
			palloc_extended(sizeof(double) * rows->dim * c, MCXT_ALLOC_HUGE);
		rows->tids = rows->tids ? repalloc_huge(rows->tids, sizeof(uint64) * c) :
			palloc_extended(sizeof(uint64) * c, MCXT_ALLOC_HUGE);
		rows->cap = c;
	}
	rows->tids[rows->n] = ref;
	memcpy(rows->coords + rows->n * rows->dim, rec + sizeof(uint64),
		   sizeof(double) * rows->dim);
	rows->n++;
}

/*
 * Copy the tree below child into t's nodes, depth first (inside before
 * outside), the leaves' live rows given consecutive positions, a subtree
 * of at most KD_VP_LEAF_ROWS rows made one leaf; returns the node's number.
 */
static int64
vs_read_tree(VsTree *t, KdvamChild child, KdvamNode *rec)
{
	int64		id = t->nnodes;
	int64		start = t->leaves.n;
	KdVpNode   *nd;

	check_stack_depth();
	if (t->nnodes == t->capnodes)
	{
		int64		c = Max(t->capnodes * 2, 64);

		t->nodes = t->nodes ? repalloc_huge(t->nodes, sizeof(KdVpNode) * c) :
			palloc_extended(sizeof(KdVpNode) * c, MCXT_ALLOC_HUGE);
		t->vps = t->vps ? repalloc_huge(t->vps, sizeof(double) * t->dim * c) :
			palloc_extended(sizeof(double) * t->dim * c, MCXT_ALLOC_HUGE);
		t->capnodes = c;
	}
	t->nnodes++;
	if (KDVAM_IS_LEAF(child))
	{
		kdvam_chain_visit(t->index, KDVAM_LEAF_BLOCK(child),
						  KDVAM_ROW_SIZE(t->dim), vs_add_row, &t->leaves);
		nd = &t->nodes[id];
		*nd = (KdVpNode) {-1, 0.0, 0.0, 0, 0, -1, -1};
	}
	else
	{
		int			per_page = KDVAM_NODES_PER_PAGE(t->dim);
		Size		size = KDVAM_NODE_SIZE(t->dim);
		Buffer		buf = ReadBuffer(t->index, t->node_first +
									 (BlockNumber) (child / per_page));
		KdvamNode	head;
		int64		in_id,
					out_id;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		memcpy(rec, kdvam_page_record(BufferGetPage(buf), size,
									  (int) (child % per_page)), size);
		UnlockReleaseBuffer(buf);
		memcpy(t->vps + id * t->dim, rec->vp, sizeof(double) * t->dim);
		head = *rec;
		in_id = vs_read_tree(t, head.inside, rec);
		out_id = vs_read_tree(t, head.outside, rec);
		nd = &t->nodes[id];
		/* any row number marks an inner node: vps names its point */
		*nd = (KdVpNode) {0, head.mu_in, head.mu_out, 0, 0, in_id, out_id};
	}
	nd->start = start;
	nd->count = t->leaves.n - start;
	if (nd->vp >= 0 && nd->count <= KD_VP_LEAF_ROWS)
	{
		/* its descendants are the last nodes read: drop them */
		*nd = (KdVpNode) {-1, 0.0, 0.0, start, nd->count, -1, -1};
		t->nnodes = id + 1;
	}
	return id;
}

/* Sort n rows by TID: three passes of a 16-bit radix (TIDs have 48 bits). */
static void
vs_sort_rows(VsRow *rows, int64 n)
{
	VsRow	   *tmp = palloc_extended(sizeof(VsRow) * Max(n, 1), MCXT_ALLOC_HUGE);
	int64	   *count = palloc(sizeof(int64) * 65536);

	for (int shift = 0; shift < 48; shift += 16)
	{
		int64		sum = 0;

		memset(count, 0, sizeof(int64) * 65536);
		for (int64 i = 0; i < n; i++)
			count[(rows[i].tid >> shift) & 0xFFFF]++;
		for (int d = 0; d < 65536; d++)
		{
			int64		c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (int64 i = 0; i < n; i++)
			tmp[count[(rows[i].tid >> shift) & 0xFFFF]++] = rows[i];
		memcpy(rows, tmp, sizeof(VsRow) * n);
	}
	pfree(tmp);
	pfree(count);
}

/* rows' (TID, index) pairs sorted by TID, palloc'd. */
static VsRow *
vs_sorted(const VsRows *rows)
{
	VsRow	   *sorted = palloc_extended(sizeof(VsRow) * Max(rows->n, 1),
										 MCXT_ALLOC_HUGE);

	for (int64 i = 0; i < rows->n; i++)
		sorted[i] = (VsRow) {rows->tids[i], i};
	vs_sort_rows(sorted, rows->n);
	return sorted;
}

/*
 * Fill a new copy r (in its context) with the live rows of index's tree
 * (meta's), in TID order, and the tree over them.
 */
static void
vs_copy_fill(KdgIndexRows *r, Relation index, const KdvamMetaPageData *meta)
{
	VsTree		t;
	KdvamNode  *rec = palloc(KDVAM_NODE_SIZE(meta->dim));
	KdVpTree   *tree = palloc0(sizeof(KdVpTree));
	VsRow	   *sorted;
	int64	   *rank;
	int			stride = meta->dim + 1;

	memset(&t, 0, sizeof(t));
	t.index = index;
	t.node_first = meta->node_first;
	t.dim = t.leaves.dim = meta->dim;
	vs_read_tree(&t, meta->root, rec);
	sorted = vs_sorted(&t.leaves);
	rank = palloc_extended(sizeof(int64) * Max(t.leaves.n, 1), MCXT_ALLOC_HUGE);
	r->rows = palloc_extended(sizeof(KdSlot) * stride * Max(t.leaves.n, 1),
							  MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < t.leaves.n; i++)
	{
		KdSlot	   *row = r->rows + i * stride;

		memcpy(row, t.leaves.coords + sorted[i].at * meta->dim,
			   sizeof(double) * meta->dim);
		row[meta->dim].tid = sorted[i].tid;
		rank[sorted[i].at] = i;
	}
	/* the leaves' positions are the order's: they name the copy's rows */
	tree->nnodes = t.nnodes;
	tree->nodes = t.nodes;
	tree->vps = t.vps;
	tree->order = rank;
	r->n = t.leaves.n;
	r->vp_tree = tree;
	pfree(sorted);
	pfree(t.leaves.coords);
	pfree(t.leaves.tids);
	pfree(rec);
}

/*
 * A new copy of the live rows of index's tree at meta's generation, and
 * the tree (the caller holds the metapage's pin).
 */
static KdgIndexRows *
vs_copy_read(Relation index, const KdvamMetaPageData *meta, const KdSource *src)
{
	KdgIndexRows *r = kdg_index_rows_new(index, meta->generation, src);
	MemoryContext old = MemoryContextSwitchTo(r->cxt);

	PG_TRY();
	{
		if (meta->root != KDVAM_NO_CHILD && meta->dim > 0)
			vs_copy_fill(r, index, meta);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(r->cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	r->dim = meta->dim;
	r->vp_share = meta->probe_share;
	return r;
}

/* Append a row of src->dim coordinates and a TID to src's rows. */
static int64
vs_append(KdSource *src, const double *coords, uint64 tid)
{
	KdSlot	   *row = src->rows + src->n * src->stride;

	memcpy(row, coords, sizeof(double) * src->dim);
	row[src->dim].tid = tid;
	return src->n++;
}

/*
 * Whether row v of nv (read from a heap page) is the index's row of tid
 * with these coordinates: a TID names one point while the index shows it.
 */
static bool
vs_same(const KdSource *nv, int64 v, uint64 tid, const double *coords, int dim)
{
	return v < nv->n && kdg_row_tid(nv, v) == tid &&
		memcmp(kdg_row_coords(nv, v), coords, sizeof(double) * dim) == 0;
}

/*
 * The tree given with the call's rows: the copy's tree (base) over the
 * rows of it that are the call's (where[i]: the call's ordinal of the
 * copy's row i, -1 for a row not the call's), and the call's rows it
 * lacks (added, nadded of them) under a new root when there are any.
 */
static KdVpTree *
vs_tree(KdSource *src, const KdVpTree *base, const int64 *where,
		const int64 *added, int64 nadded)
{
	KdVpTree   *tree = palloc0(sizeof(KdVpTree));
	int64		shift = nadded > 0 ? 2 : 0;
	int64		nnodes = base->nnodes + shift;
	KdVpNode   *nodes = palloc_extended(sizeof(KdVpNode) * nnodes, MCXT_ALLOC_HUGE);
	double	   *vps = palloc_extended(sizeof(double) * src->dim * nnodes, MCXT_ALLOC_HUGE);
	int64	   *order = palloc_extended(sizeof(int64) * Max(src->n, 1), MCXT_ALLOC_HUGE);
	int64		pos = 0;

	/* the added rows first, then each leaf's rows that are the call's */
	for (int64 i = 0; i < nadded; i++)
		order[pos++] = added[i];
	memcpy(vps + shift * src->dim, base->vps, sizeof(double) * src->dim * base->nnodes);
	for (int64 id = 0; id < base->nnodes; id++)
	{
		KdVpNode   *nd = &nodes[id + shift];
		int64		first = pos;

		*nd = base->nodes[id];
		if (nd->vp >= 0)
		{
			nd->inside += shift;
			nd->outside += shift;
			continue;
		}
		for (int64 p = nd->start; p < nd->start + nd->count; p++)
			if (where[base->order[p]] >= 0)
				order[pos++] = where[base->order[p]];
		nd->start = first;
		nd->count = pos - first;
	}
	/* inner nodes span their children: preorder puts children after */
	for (int64 id = nnodes - 1; id >= shift; id--)
		if (nodes[id].vp >= 0)
		{
			nodes[id].start = nodes[nodes[id].inside].start;
			nodes[id].count = nodes[nodes[id].inside].count +
				nodes[nodes[id].outside].count;
		}
	if (nadded > 0)
	{
		const double *vp = kdg_row_coords(src, added[0]);
		double		mu = 0.0;

		for (int64 i = 0; i < nadded; i++)
			mu = Max(mu, kde_vector_distance(src->metric, vp,
											 kdg_row_coords(src, added[i]),
											 src->dim));
		memcpy(vps, vp, sizeof(double) * src->dim);
		nodes[0] = (KdVpNode) {0, mu, 0.0, 0, src->n, 1, 2};
		nodes[1] = (KdVpNode) {-1, 0.0, 0.0, 0, nadded, -1, -1};
	}
	tree->nnodes = nnodes;
	tree->nodes = nodes;
	tree->order = order;
	tree->vps = vps;
	return tree;
}

/*
 * Assemble the call's rows in TID order from the copy r's rows, the
 * pending rows (pend) and the rows read from the pages the visibility map
 * does not mark all-visible (nv; notall by block, nblocks of them), and
 * the tree over them when few enough differ from the copy's.
 */
static void
vs_assemble(KdSource *src, const KdgIndexRows *r, const VsRows *pend,
			const KdSource *nv, const bool *notall, BlockNumber nblocks)
{
	VsRow	   *psort = vs_sorted(pend);
	int64	   *where = palloc_extended(sizeof(int64) * Max(r->n, 1), MCXT_ALLOC_HUGE);
	int64	   *added = palloc_extended(sizeof(int64) * Max(pend->n + nv->n, 1),
										MCXT_ALLOC_HUGE);
	int			rstride = r->dim + 1;
	int64		nadded = 0;
	int64		ngone = 0;
	int64		i = 0,
				p = 0,
				v = 0;

	src->dim = r->dim;
	src->stride = kdg_source_stride(src, src->dim);
	src->cap = Max(r->n + pend->n + nv->n, 1);
	src->rows = MemoryContextAllocExtended(src->mcxt,
										   sizeof(KdSlot) * src->stride * src->cap,
										   MCXT_ALLOC_HUGE);
	src->n = 0;
	for (;;)
	{
		uint64		tr = i < r->n ? r->rows[i * rstride + r->dim].tid : UINT64_MAX;
		uint64		tp = p < pend->n ? psort[p].tid : UINT64_MAX;
		uint64		tv = v < nv->n ? kdg_row_tid(nv, v) : UINT64_MAX;
		uint64		t = Min(tr, tp);
		bool		copy_row = tr <= tp;
		const double *coords;
		BlockNumber block;

		if (t == UINT64_MAX && tv == UINT64_MAX)
			break;
		if (tv < t)
		{
			/* a row read that the index does not hold */
			added[nadded++] = vs_append(src, kdg_row_coords(nv, v), tv);
			v++;
			continue;
		}
		coords = copy_row ? &r->rows[i * rstride].coord :
			pend->coords + psort[p].at * pend->dim;
		block = (BlockNumber) (t >> 16);
		if (copy_row)
			where[i] = -1;
		if (block >= nblocks ||
			(notall[block] && !vs_same(nv, v, t, coords, r->dim)))
		{
			/* not the call's: gone from its page, or from the table */
			ngone += copy_row;
		}
		else
		{
			int64		ord;

			/* a page read: its visible row of this TID, the index's */
			if (notall[block])
				v++;
			ord = vs_append(src, coords, t);
			if (copy_row)
				where[i] = ord;
			else
				added[nadded++] = ord;
		}
		if (copy_row)
			i++;
		else
			p++;
	}
	if (r->vp_tree && nadded <= kdg_delta_max(src->n) &&
		ngone <= kdg_delta_max(src->n))
	{
		MemoryContext old = MemoryContextSwitchTo(src->mcxt);

		src->vp_tree = vs_tree(src, r->vp_tree, where, added, nadded);
		MemoryContextSwitchTo(old);
		/* the build's probe share of the tree's rows, and every added row */
		src->vp_share = Min(1.0, (r->vp_share * (r->n - ngone) + nadded) /
							(double) Max(src->n, 1));
	}
	pfree(psort);
	pfree(where);
	pfree(added);
}

/*
 * Take a vector source's rows, and the tree over them, from a kdvec index
 * on its column and the table's visibility map (see the top of the file);
 * false when there is no such index, with note saying why the table is
 * read when there is one that cannot serve.
 */
bool
kdg_vector_source_read(KdSource *src, char *note, size_t notelen)
{
	Relation	heap = table_open(src->relid, AccessShareLock);
	const char *why = kdg_table_read_reason(src, heap);
	Relation	index;
	Buffer		metabuf;
	KdvamMetaPageData meta;
	KdgIndexRows *r;
	VsRows		pend;
	Snapshot	snapshot = GetActiveSnapshot();
	BlockNumber nblocks;
	BlockNumber nread;
	bool	   *notall;
	BlockNumber *notall_list;
	KdSource	nv;

	if (src->type != KD_TYPE_ARRAY ||
		(index = kdg_source_index(src, heap, kdg_vector_index_fits)) == NULL)
	{
		table_close(heap, NoLock);
		return false;
	}
	if (why == NULL && src->keyattnum != InvalidAttrNumber)
		why = "its kdvec index keeps no key column";

	/* the metapage's pin, held to the end, is the VACUUM interlock */
	metabuf = ReadBuffer(index, KDVAM_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	meta = *KdvamPageGetMeta(BufferGetPage(metabuf));
	kdvam_check_meta(index, &meta);
	/* rows the kd-tree searches are not the flat path's */
	if (why == NULL && meta.dim > 0 && meta.dim <= KD_MAX_DIM &&
		src->metric == KD_METRIC_L2)
		why = "its vectors have few enough coordinates for a kd-tree";
	if (why)
	{
		UnlockReleaseBuffer(metabuf);
		snprintf(note, notelen, "the table was read: %s", why);
		index_close(index, AccessShareLock);
		table_close(heap, NoLock);
		return false;
	}

	/* the copy of the tree's rows, and the pending rows under the lock */
	if ((r = kdg_index_rows_find(index, meta.generation, src)) == NULL)
	{
		r = vs_copy_read(index, &meta, src);
		kdg_index_rows_keep(r);
	}
	kdg_index_rows_pin(r);
	memset(&pend, 0, sizeof(pend));
	pend.dim = meta.dim;
	if (meta.dim > 0)
		kdvam_chain_visit(index, meta.pending_head, KDVAM_ROW_SIZE(meta.dim),
						  vs_add_row, &pend);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);

	/* the pages the visibility map does not mark all-visible, read */
	PredicateLockRelation(heap, snapshot);
	nblocks = RelationGetNumberOfBlocks(heap);
	notall = palloc0(sizeof(bool) * Max(nblocks, 1));
	notall_list = palloc(sizeof(BlockNumber) * Max(nblocks, 1));
	src->hot = kdg_hot_map_new(heap, nblocks, r);
	nread = kdg_visibility_scan(heap, nblocks, r, src->hot, notall, notall_list);
	kdg_read_heap_pages(heap, src, snapshot, notall_list, nread, NULL, &nv);
	ReleaseBuffer(metabuf);
	if (nv.n > 0 && meta.dim > 0 && nv.dim != meta.dim)
		elog(ERROR, "kdgpu: rows of dimension %d read beside an index of dimension %d",
			 nv.dim, meta.dim);
	if (nv.n > 0)
		src->info = nv.info;
	if (meta.dim == 0)
	{
		/* an index of no vectors yet: the rows read are all */
		src->dim = nv.dim;
		src->stride = nv.stride;
		src->rows = nv.rows;
		src->n = nv.n;
		src->cap = nv.cap;
	}
	else if (nread == 0 && pend.n == 0)
	{
		/* the copy's rows and tree are the call's: used in place */
		src->dim = r->dim;
		src->stride = r->dim + 1;
		src->rows = r->rows;
		src->n = src->cap = r->n;
		src->vp_tree = r->vp_tree;
		src->vp_share = r->vp_share;
		src->vp_kept = true;
	}
	else
		vs_assemble(src, r, &pend, &nv, notall, nblocks);
	snprintf(note, notelen,
			 "rows %sfrom index \"%s\" and the visibility map, %u of %u table pages read",
			 src->vp_tree ? "and vantage-point tree " : "",
			 RelationGetRelationName(index), nread, nblocks);
	pfree(notall);
	pfree(notall_list);
	index_close(index, AccessShareLock);
	table_close(heap, NoLock);
	return true;
}
