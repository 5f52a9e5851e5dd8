/*
 * source_tree.c
 *	  Building a tree over a source's points.
 *
 * The engine is given each point's ordinal as its reference, so that its
 * tie-break on references is the tie-break on the source's order, and an
 * answer's reference leads straight to the row (search.c).  Both the
 * search of a source (search.c) and the tree over an index's rows
 * (index_rows.c) build through here.
 */
#include "postgres.h"

#include "local/local.h"

/* kde_parallel_for body: ordinals begin .. end, in place. */
static void
ordinals_range(void *arg, int64_t begin, int64_t end)
{
	uint64	   *ords = arg;

	for (int64 i = begin; i < end; i++)
		ords[i] = i;
}

/*
 * Build the tree over a source's points, refs being their ordinals; NULL
 * when there are none.  *used_gpu tells where it was built.
 */
KdTree *
kdg_build_tree(const KdSource *src, bool *used_gpu)
{
	KdTree	   *tree;
	double	   *coords;
	uint64	   *ords;
	KdExec		exec;
	KdError		err;

	if (src->n == 0)
		return NULL;
	tree = kdg_tree_new();
	coords = kdg_source_coords(src);
	ords = palloc_extended(sizeof(uint64) * src->n, MCXT_ALLOC_HUGE);
	kdg_parallel_for(src->n, 65536, ordinals_range, ords);
	kdg_exec_prepare(&exec);
	kdg_check_status(kde_build_in_place(coords, ords, src->n, src->dim, tree,
									   &exec, &err),
					 &err, &exec, "tree build");
	*used_gpu = exec.used_gpu;
	pfree(ords);
	pfree(coords);
	return tree;
}
