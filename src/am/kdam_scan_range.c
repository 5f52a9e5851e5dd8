/*
 * kdam_scan_range.c
 *	  The matches of range and bitmap kdgpu index scans.
 *
 * Range and bitmap scans collect the matches of all quals at once with a
 * depth-first walk of each tree whose box meets them, skipping subtrees
 * outside the quals' region, then test every pending and outside row;
 * index-only scans return them grouped by visibility map page
 * (kdam_range_group_by_vm_page).
 */
#include "postgres.h"

#include "access/relscan.h"
#include "utils/memutils.h"

#include "kdam_scan.h"

/*
 * Add a match to the range scan's hits, with its coordinates when the scan
 * keeps them (coords is NULL for rows not in a tree, whose coordinates
 * return_row finds elsewhere).
 */
static void
add_hit(KdamScanOpaque so, int64 loc, uint64 ref, const double *coords,
		int64 *cap)
{
	int			dim = so->meta.dim;

	if (so->nhits == *cap)
	{
		*cap *= 2;
		so->hits = repalloc_huge(so->hits, sizeof(KdamHit) * *cap);
		if (so->hitcoords)
			so->hitcoords = repalloc_huge(so->hitcoords,
										  sizeof(double) * dim * *cap);
	}
	if (so->hitcoords && coords)
		memcpy(so->hitcoords + so->nhits * dim, coords, sizeof(double) * dim);
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
	rd = kdam_scan_tree_reader(so, index, t);
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
			kdam_reader_prefetch_children(rd);
			if (nd.box && !kdam_quals_meet_box(so, nd.box, dim))
				break;
			if (nd.ref != KDAM_DEAD_REF && kdam_quals_match(so, nd.coords, dim))
				add_hit(so, st->base + node, nd.ref, nd.coords, cap);
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
 * The hits' coordinates move with them.
 */
void
kdam_range_group_by_vm_page(KdamScanOpaque so)
{
	int64		npages = 0;
	int64	   *start;
	KdamHit    *sorted;
	double	   *coords = NULL;
	int			dim = so->meta.dim;

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
	if (so->hitcoords)
		coords = MemoryContextAllocExtended(so->cxt,
											sizeof(double) * dim * so->nhits,
											MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < so->nhits; i++)
	{
		int64		to = start[hit_vm_page(&so->hits[i])]++;

		sorted[to] = so->hits[i];
		if (coords)
			memcpy(coords + to * dim, so->hitcoords + i * dim,
				   sizeof(double) * dim);
	}
	pfree(so->hits);
	pfree(start);
	so->hits = sorted;
	if (coords)
	{
		pfree(so->hitcoords);
		so->hitcoords = coords;
	}
}

/* Collect every match of the quals (range and bitmap scans). */
void
kdam_range_collect(IndexScanDesc scan)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	int64		n = so->ntree;
	int			dim = so->meta.dim;
	int64		cap = 256;
	MemoryContext old = MemoryContextSwitchTo(so->cxt);

	so->hits = palloc_extended(sizeof(KdamHit) * cap, MCXT_ALLOC_HUGE);
	so->hitcoords = scan->xs_want_itup ?
		palloc_extended(sizeof(double) * dim * cap, MCXT_ALLOC_HUGE) : NULL;
	MemoryContextSwitchTo(old);
	for (int t = 0; t < so->ntrees; t++)
		tree_collect(so, scan->indexRelation, t, &cap);
	for (int64 i = 0; i < so->pending.n + so->outside.n; i++)
	{
		bool		take = i < so->pending.n
			? kdam_quals_match(so, so->pending.coords + i * dim, dim)
			: kdam_quals_take_outside(so, kdam_scan_outside_rec(so, i - so->pending.n));

		if (take)
			add_hit(so, n + i, kdam_loc_ref(so, n + i), NULL, &cap);
	}
}
