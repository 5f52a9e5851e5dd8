/*
 * box_flags.cu
 *	  Which subtrees' bounding boxes a kNN walk tests on entering them.
 *
 * Design.  Without closest-point bounds (All-kNN), a kNN walk bounds a
 * subtree it takes from its stack by the distance to the splitting planes
 * on its way, and tests the subtree's stored bounding box on entering it
 * (knn.cu).  On clustered data the box is what prunes: a subtree holding
 * one cluster sits in a cell that is mostly empty.  On uniform data the box
 * is its cell less a sliver, and the test only costs: its 16 or 32 bytes
 * are a load that the walk waits on, made by few lanes of a warp at a time.
 * Dropping every box test makes uniform data faster and clustered data
 * many times slower.
 *
 * So each child with a box is judged once, when its tree reaches the
 * device: its cell is the root's box cut by the splits on its path, its
 * points' spacing is (box volume / points)^(1 / dim), and it is loose when
 * in every dimension the cell is wider than the box by at most
 * BOX_FLAGS_SPACINGS spacings.  A loose child's bit is set in its parent's
 * split byte (KDC_LOOSE_LEFT, KDC_LOOSE_RIGHT), where the walk has it when
 * it pushes the child; a box with a dimension of width 0 is never loose.
 * The bits only choose which boxes are tested: every bound stays a lower
 * bound, so results are the same with any of them set.
 */
#include <math.h>

#include "common.cuh"
#include "../src/engine/kd_shape.h"

/* how much wider than its box, in point spacings, a loose child's cell is */
#define BOX_FLAGS_SPACINGS 2.0

/*
 * Whether child c's box (of a tree of n points, whose root's box is
 * bounds[0 .. 2 * dim)) is loose, as the header says.
 */
static __device__ bool
box_flags_loose(const double *coords, const uint8_t *split,
				const double *bounds, int64_t n, int dim, int64_t c)
{
	double		lo[KD_MAX_DIM];
	double		hi[KD_MAX_DIM];
	const double *box = bounds + c * 2 * dim;
	double		logvol = -log((double) kde_subtree_size(c, n));
	int			depth = 63 - __clzll(c + 1);

	for (int j = 0; j < dim; j++)
	{
		lo[j] = bounds[j];
		hi[j] = bounds[dim + j];
	}
	for (int l = 0; l < depth; l++)
	{
		int64_t		a = ((c + 1) >> (depth - l)) - 1;
		int64_t		next = ((c + 1) >> (depth - l - 1)) - 1;
		int			s = split[a] & KDC_SPLIT_DIM;
		double		v = coords[a * dim + s];

		if (next == 2 * a + 1)
			hi[s] = fmin(hi[s], v);
		else
			lo[s] = fmax(lo[s], v);
	}
	for (int j = 0; j < dim; j++)
	{
		double		w = box[dim + j] - box[j];

		if (!(w > 0))
			return false;
		logvol += log(w);
	}
	for (int j = 0; j < dim; j++)
	{
		double		margin = (hi[j] - lo[j]) - (box[dim + j] - box[j]);

		if (!(margin <= BOX_FLAGS_SPACINGS * exp(logvol / dim)))
			return false;
	}
	return true;
}

/*
 * Set the loose bits of parents [0, parents) from their children's boxes:
 * both children of each carry one.
 */
static __global__ void
box_flags_kernel(const double *coords, uint8_t *split, const double *bounds,
				 int64_t n, int dim, int64_t parents)
{
	int64_t		p = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	uint8_t		bits = 0;

	if (p >= parents)
		return;
	if (box_flags_loose(coords, split, bounds, n, dim, 2 * p + 1))
		bits |= KDC_LOOSE_LEFT;
	if (box_flags_loose(coords, split, bounds, n, dim, 2 * p + 2))
		bits |= KDC_LOOSE_RIGHT;
	/* other threads read only this byte's split dimension, which stays */
	split[p] = (split[p] & KDC_SPLIT_DIM) | bits;
}

/*
 * Mark the loose children of gtree (whose split bytes hold their dimension
 * alone) in their parents' split bytes.  Errors are the device's.
 */
KdStatus
kdc_tree_box_flags(KdGpuTree *gtree, const KdExec *exec, KdError *err)
{
	/*
	 * nbounds is a number of full levels (2^L - 1): its first nbounds / 2
	 * nodes are the parents of the others
	 */
	int64_t		parents = gtree->nbounds / 2;

	if (parents == 0)
		return KD_OK;
	box_flags_kernel <<< kdc_blocks(parents), KDC_BLOCK >>> (gtree->coords, gtree->split,
															gtree->bounds, gtree->n,
															gtree->dim, parents);
	return kdc_sync(exec, "marking loose boxes", err);
}
