/*
 * rows_diff.c
 *	  How the rows of an index tree differ from the rows a call reads.
 *
 * kdg_rows_diff compares two lists of rows by TID (and, with coordinates,
 * by point) in one merge pass.  It is pure (no catalog access, no
 * allocation), so both the local search path (local/index_tree.c), which
 * decides whether an index tree can stand for a source's rows, and the GPU
 * service, which checks the copy it holds against the rows a call sends,
 * call it from below both.
 */
#include "postgres.h"

#include "core/core.h"

/* Whether row i of view a and row j of view b have the same coordinates. */
static inline bool
same_point(const KdgRowsView *a, int64 i, const KdgRowsView *b, int64 j, int dim)
{
	return memcmp(a->coords + i * a->coord_stride, b->coords + j * b->coord_stride,
				  sizeof(double) * dim) == 0;
}

/*
 * Whether the rows of a tree (TIDs in rank order) differ from a source's
 * rows (TIDs ascending) by at most max_gone rows the source lacks and
 * max_added rows the tree lacks.  If so, diff gets the ranks of the former
 * and the ordinals of the latter, ascending, and their counts (its arrays
 * have room for the limits).  When both views have coordinates (of dim), a
 * row of the same TID but another point counts as gone and added: a tree
 * built from rows read once may outlive its TIDs (index_tree.c).  Pure:
 * the GPU service calls it too.
 */
bool
kdg_rows_diff(const KdgRowsView *tree, const KdgRowsView *rows, int dim,
			  int64 max_gone, int64 max_added, KdgDiff *diff)
{
	bool		points = tree->coords != NULL && rows->coords != NULL;
	int64		r = 0;
	int64		o = 0;
	int64		g = 0;
	int64		a = 0;

	if (tree->n - rows->n > max_gone || rows->n - tree->n > max_added)
		return false;
	while (r < tree->n || o < rows->n)
	{
		uint64		tid = o < rows->n ? rows->tids[o * rows->tid_stride] : 0;
		uint64		ttid = r < tree->n ? tree->tids[r * tree->tid_stride] : 0;

		if (o >= rows->n || (r < tree->n && ttid < tid))
		{
			if (g == max_gone)
				return false;
			diff->gone[g++] = r++;
		}
		else if (r >= tree->n || tid < ttid)
		{
			if (a == max_added)
				return false;
			diff->added[a++] = o++;
		}
		else if (points && !same_point(tree, r, rows, o, dim))
		{
			if (g == max_gone || a == max_added)
				return false;
			diff->gone[g++] = r++;
			diff->added[a++] = o++;
		}
		else
		{
			r++;
			o++;
		}
	}
	diff->ngone = g;
	diff->nadded = a;
	return true;
}
