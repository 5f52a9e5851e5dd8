/*
 * kd_grid.h
 *	  A uniform grid over points of one to three dimensions, for the
 *	  fixed-radius walks of DBSCAN on the CPU (kd_dbscan.c) without a tree.
 *
 * The points are sorted by cell ("slots"); a cell's side is at least the
 * largest radius walked, so every point within that radius of a point lies
 * in its cell or a neighbouring one.  A cell's key packs its coordinates,
 * at most KD_GRID_BITS each (as many as the points' spread needs), the
 * first in the lowest bits, offset by one so that a neighbour's is never
 * negative and never overflows into the next: the cells of one row (first
 * coordinate c - 1 .. c + 1, the others fixed) are one run of keys, and
 * so their points one run of slots, which the build finds for every cell
 * and each of its 3^(dim - 1) rows.  The walk tests each candidate with
 * the range walk's own test (kd_range_walk.h), so it finds exactly the
 * points a tree's walk finds.
 */
#ifndef KD_GRID_H
#define KD_GRID_H

#include "kd_range_walk.h"

/* bits of each cell coordinate in a key, at most */
#define KD_GRID_BITS 20

typedef struct KdGrid
{
	int64_t		n;				/* at most INT32_MAX */
	int			dim;			/* 1 to 3 */
	double	   *coords;			/* by slot: the points, n * dim */
	uint64_t   *refs;			/* by slot: the point's index given */
	int32_t    *slot_cell;		/* by slot: its cell */
	int64_t		ncells;
	int			nrows;			/* rows of neighbours a cell has */
	int32_t    *row_slots;		/* by cell, nrows pairs: each row's first
								 * slot and the slot after its last */
} KdGrid;

/* kd_grid.c */
extern KdStatus kde_grid_build(const double *coords, int64_t n, int dim,
							   double side, KdGrid *grid, bool *fits,
							   KdExec *exec, KdError *err);
extern void kde_grid_free(KdGrid *grid);

/*
 * Call visit for each point within r of slot's point (itself included),
 * with d2 as the range walk computes it; r is at most the grid's side.
 */
KD_INLINE void
grid_walk(const KdGrid *g, int64_t slot, double r, KdHitVisit visit, void *ctx)
{
	const int	dim = g->dim;
	const int32_t *rows = g->row_slots + g->slot_cell[slot] * 2 * g->nrows;
	RangeRegion rg;

	rg.a = g->coords + slot * dim;
	rg.b = NULL;
	rg.r = r;
	rg.r2max = kde_radius_bound(r);
	for (int w = 0; w < g->nrows; w++)
		for (int64_t s = rows[2 * w]; s < rows[2 * w + 1]; s++)
		{
			double		d2;

			if (region_holds(&rg, g->coords + s * dim, &d2, false, dim))
				visit(ctx, s, d2);
		}
}

#endif							/* KD_GRID_H */
