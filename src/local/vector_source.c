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
 *	heap (index_source.c's kdg_read_heap_page).
 *
 * The rows are in TID order, each named by the TID the index holds (its
 * HOT chain's root, which the answers map to the row's own: hot_chains.c,
 * flat_search.c).  The tree is the index's, node for node: its vantage
 * points are the nodes' own coordinates (KdVpTree.vps), its leaves hold
 * the rows of theirs that are the call's (a tree keeps its bounds for any
 * subset of its rows), and the call's rows it lacks (pending rows, rows
 * read from pages that changed since the build) hang beside it under a
 * new root whose outside bound is 0 and whose inside bound covers them
 * all: so every row is reached and no bound is above a row's distance.
 * Where more rows differ from the tree's than kdg_delta_max allows, no
 * tree is given and the engine chooses as for a table's rows.
 *
 * The VACUUM interlock is kdvec's (vam.h): the metapage stays pinned from
 * the first index page read until every heap page is read, so no row the
 * index shows live has its TID freed, let alone reused, meanwhile.  A page
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

/* A row found in the index: its TID and where its record was copied. */
typedef struct VsRow
{
	uint64		tid;
	int64		at;				/* the tree's: leaf position; pending: index */
} VsRow;

/* What reading the index gathers. */
typedef struct VsIndex
{
	Relation	index;
	KdvamMetaPageData meta;
	int			dim;
	/* the tree, as read: nodes by DFS preorder, the root first */
	int64		nnodes;
	int64		capnodes;
	KdVpNode   *nodes;
	double	   *vps;			/* nnodes * dim */
	/* the live leaf rows, by leaf position */
	int64		nleaf;
	int64		capleaf;
	double	   *leaf_coords;	/* nleaf * dim */
	uint64	   *leaf_tids;
	/* the live pending rows */
	int64		npend;
	int64		cappend;
	double	   *pend_coords;
	uint64	   *pend_tids;
} VsIndex;

/* Room in coords (dim each) and tids for one more than *n rows of *cap. */
static void
vs_room(double **coords, uint64 **tids, int64 *cap, int64 n, int dim)
{
	int64		c;

	if (n < *cap)
		return;
	c = Max(*cap * 2, 1024);
	*coords = *coords ? repalloc_huge(*coords, sizeof(double) * dim * c) :
		palloc_extended(sizeof(double) * dim * c, MCXT_ALLOC_HUGE);
	*tids = *tids ? repalloc_huge(*tids, sizeof(uint64) * c) :
		palloc_extended(sizeof(uint64) * c, MCXT_ALLOC_HUGE);
	*cap = c;
}

/* What vs_add_row adds rows to: the leaves' or the pending rows. */
typedef struct VsAdd
{
	VsIndex    *vs;
	bool		leaf;
} VsAdd;

/* kdvam_chain_visit's callback: add a live row of a leaf or pending page. */
static void
vs_add_row(void *arg, uint64 ref, const char *rec)
{
	VsAdd	   *a = arg;
	VsIndex    *vs = a->vs;
	double	  **coords = a->leaf ? &vs->leaf_coords : &vs->pend_coords;
	uint64	  **tids = a->leaf ? &vs->leaf_tids : &vs->pend_tids;
	int64	   *count = a->leaf ? &vs->nleaf : &vs->npend;

	vs_room(coords, tids, a->leaf ? &vs->capleaf : &vs->cappend, *count, vs->dim);
	(*tids)[*count] = ref;
	memcpy(*coords + *count * vs->dim, rec + sizeof(uint64),
		   sizeof(double) * vs->dim);
	(*count)++;
}

/* Add the live rows of the pages chained from blkno: leaf rows or pending. */
static void
vs_read_rows(VsIndex *vs, BlockNumber blkno, bool leaf)
{
	VsAdd		a = {vs, leaf};

	kdvam_chain_visit(vs->index, blkno, KDVAM_ROW_SIZE(vs->dim), vs_add_row, &a);
}

/*
 * Copy the tree below child into vs's nodes, depth first (inside before
 * outside), the leaves' live rows given consecutive positions; returns the
 * node's number.  A node's start and count are its rows' positions.
 */
static int64
vs_read_tree(VsIndex *vs, KdvamChild child, KdvamNode *rec)
{
	int64		id = vs->nnodes;
	KdVpNode   *nd;
	int64		start = vs->nleaf;

	check_stack_depth();
	if (vs->nnodes == vs->capnodes)
	{
		int64		c = Max(vs->capnodes * 2, 64);

		vs->nodes = vs->nodes ? repalloc_huge(vs->nodes, sizeof(KdVpNode) * c) :
			palloc_extended(sizeof(KdVpNode) * c, MCXT_ALLOC_HUGE);
		vs->vps = vs->vps ? repalloc_huge(vs->vps, sizeof(double) * vs->dim * c) :
			palloc_extended(sizeof(double) * vs->dim * c, MCXT_ALLOC_HUGE);
		vs->capnodes = c;
	}
	vs->nnodes++;
	if (KDVAM_IS_LEAF(child))
	{
		vs_read_rows(vs, KDVAM_LEAF_BLOCK(child), true);
		nd = &vs->nodes[id];
		nd->vp = -1;
		nd->mu_in = nd->mu_out = 0.0;
		nd->inside = nd->outside = -1;
	}
	else
	{
		int			per_page = KDVAM_NODES_PER_PAGE(vs->dim);
		Size		size = KDVAM_NODE_SIZE(vs->dim);
		Buffer		buf = ReadBuffer(vs->index, vs->meta.node_first +
									 (BlockNumber) (child / per_page));
		KdvamChild	inside,
					outside;
		double		mu_in,
					mu_out;
		int64		in_id,
					out_id;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		memcpy(rec, kdvam_page_record(BufferGetPage(buf), size,
									  (int) (child % per_page)), size);
		UnlockReleaseBuffer(buf);
		memcpy(vs->vps + id * vs->dim, rec->vp, sizeof(double) * vs->dim);
		inside = rec->inside;
		outside = rec->outside;
		mu_in = rec->mu_in;
		mu_out = rec->mu_out;
		in_id = vs_read_tree(vs, inside, rec);
		out_id = vs_read_tree(vs, outside, rec);
		nd = &vs->nodes[id];
		/* any row number marks an inner node: vps names its point */
		nd->vp = 0;
		nd->mu_in = mu_in;
		nd->mu_out = mu_out;
		nd->inside = in_id;
		nd->outside = out_id;
	}
	nd->start = start;
	nd->count = vs->nleaf - start;
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

/* Free what reading the index gathered. */
static void
vs_free(VsIndex *vs)
{
	void	   *arrays[] = {vs->nodes, vs->vps, vs->leaf_coords, vs->leaf_tids,
	vs->pend_coords, vs->pend_tids};

	for (int i = 0; i < lengthof(arrays); i++)
		if (arrays[i])
			pfree(arrays[i]);
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
 * The tree given with the source: vs's tree over the leaf rows kept
 * (where[pos]: the ordinal of leaf position pos, -1 for a row not the
 * call's), and the call's rows it lacks (added, nadded of them) under a
 * new root when there are any.
 */
static KdVpTree *
vs_tree(KdSource *src, VsIndex *vs, const int64 *where, const int64 *added,
		int64 nadded)
{
	KdVpTree   *tree = palloc0(sizeof(KdVpTree));
	int64		shift = nadded > 0 ? 2 : 0;
	int64		nnodes = vs->nnodes + shift;
	KdVpNode   *nodes = palloc_extended(sizeof(KdVpNode) * nnodes, MCXT_ALLOC_HUGE);
	double	   *vps = palloc_extended(sizeof(double) * vs->dim * nnodes, MCXT_ALLOC_HUGE);
	int64	   *order = palloc_extended(sizeof(int64) * Max(src->n, 1), MCXT_ALLOC_HUGE);
	int64		pos = 0;

	/* the added rows first, then each leaf's kept rows in turn */
	for (int64 i = 0; i < nadded; i++)
		order[pos++] = added[i];
	for (int64 id = 0; id < vs->nnodes; id++)
	{
		KdVpNode   *nd = &nodes[id + shift];

		*nd = vs->nodes[id];
		memcpy(vps + (id + shift) * vs->dim, vs->vps + id * vs->dim,
			   sizeof(double) * vs->dim);
		if (nd->vp >= 0)
		{
			nd->inside += shift;
			nd->outside += shift;
			continue;
		}
		{
			int64		first = pos;

			for (int64 p = nd->start; p < nd->start + nd->count; p++)
				if (where[p] >= 0)
					order[pos++] = where[p];
			nd->start = first;
			nd->count = pos - first;
		}
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
 * Make the source's rows in TID order from the index's rows (vs) and the
 * rows read from the pages the visibility map does not mark all-visible
 * (nv; notall by block, nblocks of them), and the tree over them when few
 * enough differ from the tree's.
 */
static void
vs_assemble(KdSource *src, VsIndex *vs, const KdSource *nv, const bool *notall,
			BlockNumber nblocks)
{
	VsRow	   *rows = palloc_extended(sizeof(VsRow) * Max(vs->nleaf + vs->npend, 1),
									   MCXT_ALLOC_HUGE);
	int64	   *where = palloc_extended(sizeof(int64) * Max(vs->nleaf, 1), MCXT_ALLOC_HUGE);
	int64	   *added = palloc_extended(sizeof(int64) * Max(vs->npend + nv->n, 1),
										MCXT_ALLOC_HUGE);
	int64		nrows = 0;
	int64		nadded = 0;
	int64		ngone = 0;
	int64		v = 0;

	/* the leaf rows, then the pending ones (at >= nleaf), by TID */
	for (int64 i = 0; i < vs->nleaf; i++)
		rows[nrows++] = (VsRow) {vs->leaf_tids[i], i};
	for (int64 i = 0; i < vs->npend; i++)
		rows[nrows++] = (VsRow) {vs->pend_tids[i], vs->nleaf + i};
	vs_sort_rows(rows, nrows);

	src->dim = vs->dim;
	src->stride = kdg_source_stride(src, src->dim);
	src->cap = Max(nrows + nv->n, 1);
	src->rows = MemoryContextAllocExtended(src->mcxt,
										   sizeof(KdSlot) * src->stride * src->cap,
										   MCXT_ALLOC_HUGE);
	src->n = 0;
	for (int64 i = 0; i < vs->nleaf; i++)
		where[i] = -1;
	for (int64 i = 0;; )
	{
		uint64		ti = i < nrows ? rows[i].tid : UINT64_MAX;
		uint64		tv = v < nv->n ? kdg_row_tid(nv, v) : UINT64_MAX;
		bool		leaf;
		const double *coords;
		BlockNumber block;

		if (ti == UINT64_MAX && tv == UINT64_MAX)
			break;
		if (tv < ti)
		{
			/* a row read that the index does not hold */
			added[nadded++] = vs_append(src, kdg_row_coords(nv, v), tv);
			v++;
			continue;
		}
		leaf = rows[i].at < vs->nleaf;
		coords = leaf ? vs->leaf_coords + rows[i].at * vs->dim :
			vs->pend_coords + (rows[i].at - vs->nleaf) * vs->dim;
		block = (BlockNumber) (ti >> 16);
		i++;
		if (block < nblocks && notall[block])
		{
			/* the page was read: its visible row of this TID, if any */
			if (!vs_same(nv, v, ti, coords, vs->dim))
			{
				ngone += leaf;
				continue;
			}
			v++;
		}
		else if (block >= nblocks)
		{
			/* a row of a page the table no longer has: not the call's */
			ngone += leaf;
			continue;
		}
		if (leaf)
			where[rows[i - 1].at] = vs_append(src, coords, ti);
		else
			added[nadded++] = vs_append(src, coords, ti);
	}
	if (nadded <= kdg_delta_max(src->n) && ngone <= kdg_delta_max(src->n) &&
		vs->nnodes > 0)
	{
		MemoryContext old = MemoryContextSwitchTo(src->mcxt);

		src->vp_tree = vs_tree(src, vs, where, added, nadded);
		MemoryContextSwitchTo(old);
		/* the build's probe share of the tree's rows, and every added row */
		src->vp_share = src->n > 0 ?
			Min(1.0, (vs->meta.probe_share * (vs->nleaf - ngone) + nadded) /
				(double) src->n) : 1.0;
	}
	pfree(rows);
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
	VsIndex		vs;
	KdvamNode  *rec;
	Snapshot	snapshot = GetActiveSnapshot();
	BlockNumber nblocks;
	BlockNumber nread = 0;
	bool	   *notall;
	Buffer		vmbuf = InvalidBuffer;
	KdSource	nv;

	if (src->type != KD_TYPE_ARRAY ||
		(index = kdg_source_index(src, heap, kdg_vector_index_fits)) == NULL)
	{
		table_close(heap, NoLock);
		return false;
	}
	if (why == NULL && src->keyattnum != InvalidAttrNumber)
		why = "its kdvec index keeps no key column";
	memset(&vs, 0, sizeof(vs));
	vs.index = index;
	metabuf = ReadBuffer(index, KDVAM_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	vs.meta = *KdvamPageGetMeta(BufferGetPage(metabuf));
	kdvam_check_meta(index, &vs.meta);
	vs.dim = vs.meta.dim;
	/* rows the kd-tree searches are not the flat path's */
	if (why == NULL && vs.dim > 0 && vs.dim <= KD_MAX_DIM &&
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

	/* pending rows under the share lock that inserts wait for */
	if (vs.dim > 0)
		vs_read_rows(&vs, vs.meta.pending_head, false);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	if (vs.dim > 0 && vs.meta.root != KDVAM_NO_CHILD)
	{
		rec = palloc(KDVAM_NODE_SIZE(vs.dim));
		vs_read_tree(&vs, vs.meta.root, rec);
		pfree(rec);
	}

	/* the pages the visibility map does not mark all-visible, read */
	PredicateLockRelation(heap, snapshot);
	nblocks = RelationGetNumberOfBlocks(heap);
	notall = palloc0(sizeof(bool) * Max(nblocks, 1));
	src->hot = kdg_hot_map_new(heap, nblocks, NULL);
	memcpy(&nv, src, sizeof(nv));
	nv.n = nv.cap = 0;
	nv.rows = NULL;
	nv.hot = NULL;
	for (BlockNumber b = 0; b < nblocks; b++)
	{
		if (VM_ALL_VISIBLE(heap, b, &vmbuf))
			continue;
		CHECK_FOR_INTERRUPTS();
		notall[b] = true;
		nread++;
		kdg_read_heap_page(heap, b, snapshot, &nv, src->hot, NULL);
	}
	if (BufferIsValid(vmbuf))
		ReleaseBuffer(vmbuf);
	ReleaseBuffer(metabuf);
	if (nv.n > 0 && vs.dim > 0 && nv.dim != vs.dim)
		elog(ERROR, "kdgpu: rows of dimension %d read beside an index of dimension %d",
			 nv.dim, vs.dim);
	if (vs.dim == 0)
		vs.dim = nv.dim;
	if (nv.n > 0)
		src->info = nv.info;
	vs_assemble(src, &vs, &nv, notall, nblocks);
	vs_free(&vs);
	snprintf(note, notelen,
			 "rows %sfrom index \"%s\" and the visibility map, %u of %u table pages read",
			 src->vp_tree ? "and vantage-point tree " : "",
			 RelationGetRelationName(index), nread, nblocks);
	pfree(notall);
	index_close(index, AccessShareLock);
	table_close(heap, NoLock);
	return true;
}
