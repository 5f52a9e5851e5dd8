/*
 * kdam_tree_shape.c
 *	  How a tree of a kdgpu index is cut into blocks and pages: its ranges
 *	  of levels, each range's block depth and blocks to a page.
 *
 * kdam_tree_shape depends only on the tree's size, dimension and payload
 * words, so the writer, every reader and VACUUM compute the same layout
 * from the tree's forest entry, and nothing of it is stored.  Ranges are
 * cut from the bottom: a range whose nodes carry a box is as deep as fits
 * on a page; one without takes the depth that fills pages best
 * (fill_levels), a page holding the blocks of several consecutive roots.
 * A last level less than half full gets a range of its own
 * (last_level_sparse); a fuller one keeps the bottom range, and the roots
 * whose subtrees end above it get a tail range one level shorter.
 */
#include "postgres.h"

#include "utils/rel.h"

#include "kdam.h"

/*
 * Slots of a block of the given levels starting at level start whose nodes
 * carry a box: those above level bounded_levels.
 */
static int
boxed_slots(int start, int levels, int bounded_levels)
{
	int			l = Min(levels, Max(0, bounded_levels - start));

	return (1 << l) - 1;
}

/* Bytes of a block of the given levels starting at level start. */
static Size
block_bytes(int dim, int words, int start, int levels, int bounded_levels)
{
	return (Size) ((1 << levels) - 1) *
		(kdam_record_bytes(dim) + sizeof(uint64) * words) +
		(Size) boxed_slots(start, levels, bounded_levels) * sizeof(double) * 2 * dim;
}

/*
 * Levels of a range ending above level top, without boxes, of at most
 * max_levels: the count that fills pages best (a page holds the subtrees of
 * as many consecutive roots as fit), preferring more levels unless fewer
 * fill pages by a fiftieth more.
 */
static int
fill_levels(int dim, int words, int top, int max_levels)
{
	int			best = max_levels;
	double		best_fill = 0.0;

	for (int levels = max_levels; levels >= Min(KDAM_MIN_RANGE_LEVELS, max_levels); levels--)
	{
		Size		bytes = block_bytes(dim, words, top - levels, levels, 0);
		double		fill = (double) (KDAM_BLOCK_BYTES / bytes) * bytes / KDAM_BLOCK_BYTES;

		if (fill > best_fill + 0.02)
		{
			best = levels;
			best_fill = fill;
		}
	}
	return best;
}

/*
 * Whether the last of a tree's height levels (n points, left-balanced) is
 * less than half full: such a level goes on pages of its own.
 */
static bool
last_level_sparse(int64 n, int height)
{
	return height >= 2 &&
		2 * (n - (((int64) 1 << (height - 1)) - 1)) < ((int64) 1 << (height - 1));
}

/*
 * The page layout of a tree of n nodes of dim dimensions and words payload
 * words.  Pages keep the boxes of the nodes of the top levels whose subtrees
 * hold at least KDAM_BOX_MIN_SUBTREE points (shape->nbounds of them): the
 * engine's boxes below those, of small subtrees, would take a fifth of the
 * index for little pruning, and kdam_read_tree computes them again.
 */
void
kdam_tree_shape(int64 n, int dim, int words, KdamTreeShape *shape)
{
	int64		nbounds = kde_tree_nbounds_min(n, KDAM_BOX_MIN_SUBTREE);
	int			height = n > 0 ? kdam_node_level(n - 1) + 1 : 0;
	int			bounded_levels = kdam_node_level(nbounds);	/* nbounds = 2^L - 1 */
	int			starts[64];
	int			tops[64];
	int			nr = 0;
	int			top = height;

	memset(shape, 0, sizeof(*shape));
	shape->n = n;
	shape->dim = dim;
	shape->words = words;
	shape->nbounds = nbounds;
	/*
	 * A last level less than half full goes on pages of its own, many
	 * nodes to a page; the levels above it fill whole pages.
	 */
	if (last_level_sparse(n, height) &&
		boxed_slots(height - 1, 1, bounded_levels) == 0)
	{
		starts[nr] = height - 1;
		tops[nr++] = height;
		top = height - 1;
	}
	/* from the bottom, as many levels per range as fit on a page */
	while (top > 0)
	{
		int			levels = 1;

		while (levels < Min(top, 30) &&
			   block_bytes(dim, words, top - levels - 1, levels + 1,
						   bounded_levels) <= KDAM_BLOCK_BYTES)
			levels++;
		if (boxed_slots(top - levels, levels, bounded_levels) == 0)
			levels = fill_levels(dim, words, top, levels);
		starts[nr] = top - levels;
		tops[nr++] = top;
		top -= levels;
	}
	shape->nranges = nr;
	for (int r = 0; r < nr; r++)
	{
		int			src = nr - 1 - r;
		int64		first = ((int64) 1 << starts[src]) - 1;

		shape->start[r] = starts[src];
		shape->levels[r] = tops[src] - starts[src];
		shape->boxed[r] = boxed_slots(starts[src], shape->levels[r], bounded_levels);
		shape->roots_from[r] = 0;
		shape->roots_to[r] = Min((int64) 1 << starts[src], n - first);
		for (int l = starts[src]; l < tops[src]; l++)
			shape->range_of_level[l] = r;
	}

	/*
	 * The bottom range (the last: ranges are cut from the tree's last level
	 * up) of blocks holding a last level between half full and full: the
	 * roots whose subtrees do not reach that level get a tail range of
	 * blocks a level shorter, so that no block is left half empty.  A full
	 * last level reaches every root; a sparse one is a range of one level.
	 */
	if (nr > 0 && shape->levels[nr - 1] >= 2 && shape->boxed[nr - 1] == 0)
	{
		int			below = height - 1 - shape->start[nr - 1];
		int64		last = n - (((int64) 1 << (height - 1)) - 1);
		int64		reach = (last + ((int64) 1 << below) - 1) >> below;

		if (reach < shape->roots_to[nr - 1])
		{
			shape->start[nr] = shape->start[nr - 1];
			shape->levels[nr] = shape->levels[nr - 1] - 1;
			shape->boxed[nr] = 0;
			shape->roots_from[nr] = reach;
			shape->roots_to[nr] = shape->roots_to[nr - 1];
			shape->roots_to[nr - 1] = reach;
			shape->nranges = ++nr;
		}
	}

	for (int r = 0; r < nr; r++)
	{
		/* the subtrees of consecutive roots share a page while they fit */
		shape->group[r] = shape->boxed[r] > 0 ? 1 :
			(int) (KDAM_BLOCK_BYTES /
				   block_bytes(dim, words, shape->start[r], shape->levels[r],
							   bounded_levels));
		shape->first_block[r + 1] = shape->first_block[r] +
			(shape->roots_to[r] - shape->roots_from[r] + shape->group[r] - 1) /
			shape->group[r];
	}
	shape->nblocks = shape->first_block[nr];
}
