/*
 * pairs_within.c
 *	  The pairs of a source's points within a distance of each other,
 *	  exact in the metric of the type's distance operator, handed to a
 *	  consumer slice by slice.
 *
 * The pairs come from the engine's radius search over the source's tree
 * (its kdgpu index's when the source's rows are the index's, else one
 * built now, on the GPU for large inputs as any build), run for slices of
 * the points as queries in the tree's in-order, so that neighbouring
 * queries walk the same nodes.  A candidate is kept only when the
 * operator's distance (kdg_metric) is <= the distance: the boundary is
 * inclusive and decided as `<->` and ST_DWithin decide it, whatever the
 * engine's rounding.  Geography's sphere distance is not symmetric to the
 * last bit: a pair is within the distance when it is in either order, so
 * that the relation is symmetric, and its distance is the lower of the two;
 * but each pair once (upper) is decided and measured as query <->
 * neighbour, the lower row being the query.
 * Each slice's engine answer is freed once its
 * consumer returns, and a slice's queries grow or shrink so that its
 * candidates stay near KDG_PAIRS_SLICE_HITS: memory is bounded by the
 * slice, not by the pairs.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "local/local.h"

/* a slice's engine candidates, about (16 bytes each) */
#define KDG_PAIRS_SLICE_HITS	(INT64CONST(8) << 20)
/* the first slice's queries: few, as the density is not known yet */
#define KDG_PAIRS_FIRST_SLICE	256
/* and the most any slice has */
#define KDG_PAIRS_MAX_SLICE		(INT64CONST(4) << 20)

/* What the threads of filter_range share: one slice's engine answer. */
typedef struct KdgFilter
{
	const KdSource *src;
	KdRangeResult *res;
	const uint64 *ords;			/* the tree's references: ordinals by node */
	int64		first;			/* the slice's first node */
	double		distance;
	const uint64 *refs;			/* upper: keep only neighbours of higher
								 * identity (NULL: every neighbour) */
	int32	   *kept;			/* per query of the slice */
} KdgFilter;

/*
 * kdg_parallel_for body: keep the candidates of queries [begin, end) of a
 * slice whose operator distance is <= the distance, in place at the start
 * of each query's run with that distance in d2, and count them.
 */
static void
filter_range(void *arg, int64 begin, int64 end)
{
	KdgFilter  *f = arg;
	const KdSource *src = f->src;

	for (int64 q = begin; q < end; q++)
	{
		uint64		self = f->ords[f->first + q];
		const double *p = kdg_row_coords(src, self);
		KdNeighbor *cand = f->res->hits + f->res->offsets[q];
		int64		nc = f->res->offsets[q + 1] - f->res->offsets[q];
		int32		n = 0;

		for (int64 c = 0; c < nc; c++)
		{
			double		d;

			if (f->refs && f->refs[cand[c].ref] <= f->refs[self])
				continue;
			d = kdg_metric(src->type, p, kdg_row_coords(src, cand[c].ref), src->dim);
			if (src->type == KD_TYPE_GEOGRAPHY)
			{
				/* query <-> neighbour: kdg_metric(x, y) is y <-> x */
				double		back = kdg_metric(src->type, kdg_row_coords(src, cand[c].ref),
											  p, src->dim);

				d = f->refs ? back : Min(d, back);
			}
			if (d <= f->distance)
			{
				cand[n].ref = cand[c].ref;
				cand[n++].d2 = d;
			}
		}
		f->kept[q] = n;
	}
}

/*
 * The tree's points in its in-order (a walk of the implicit tree: left
 * subtree, node, right subtree), which is their order along the splits:
 * consecutive queries lie close together and walk the same nodes, where
 * the node order (level by level) scatters them.  *centers gets their
 * coordinates, *ords their ordinals.
 */
static void
in_order(const KdTree *t, double **centers, uint64 **ords)
{
	int64	   *stack = palloc(sizeof(int64) * 128);
	int			sp = 0;
	int64		node = 0;
	int64		i = 0;

	*centers = palloc_extended(sizeof(double) * t->dim * Max(t->n, 1), MCXT_ALLOC_HUGE);
	*ords = palloc_extended(sizeof(uint64) * Max(t->n, 1), MCXT_ALLOC_HUGE);
	while (sp > 0 || node < t->n)
	{
		if (node < t->n)
		{
			stack[sp++] = node;
			node = 2 * node + 1;
			continue;
		}
		node = stack[--sp];
		memcpy(*centers + i * t->dim, t->coords + node * t->dim, sizeof(double) * t->dim);
		(*ords)[i++] = t->refs[node];
		node = 2 * node + 2;
	}
	pfree(stack);
}

/*
 * The tree whose references are a source's ordinals, to search for its
 * pairs: a table's index's tree when the rows are its rows; else, and for
 * points of no table, one built now.
 */
KdgTree *
kdg_pairs_tree(const KdSource *src)
{
	KdgTree    *tree;
	bool		used_gpu;

	tree = OidIsValid(src->relid) ? kdg_source_tree(src, src->n, true) : NULL;
	if (tree == NULL || tree->tree->coords == NULL || tree->rank_ord != NULL ||
		tree->added != NULL)
		tree = kdg_tree_plain(kdg_build_tree(src, &used_gpu));
	return tree;
}

/*
 * Hand every point's neighbours within distance (itself included, or with
 * upper only those of higher identity: each pair once, under its lower
 * row) to fn, slice by slice (KdgPairSlice), searching tree
 * (kdg_pairs_tree's); "what" names the work in messages.
 */
void
kdg_pairs_within(const KdSource *src, const KdgTree *tree, double distance,
				 bool upper, const char *what, KdgPairSliceFn fn, void *arg)
{
	double	   *centers;
	uint64	   *ords;
	uint64	   *refs = NULL;
	double		radius = kdg_engine_radius(src->type, distance);
	int64		slice = KDG_PAIRS_FIRST_SLICE;

	if (src->n == 0)
		return;
	/* the identities, read here: the threads call nothing of PostgreSQL */
	if (upper)
	{
		refs = palloc_extended(sizeof(uint64) * src->n, MCXT_ALLOC_HUGE);
		for (int64 i = 0; i < src->n; i++)
			refs[i] = kdg_row_ref(src, i);
	}
	in_order(tree->tree, &centers, &ords);
	for (int64 first = 0, len; first < src->n; first += len)
	{
		KdRangeResult *res = kdg_range_result_new();
		KdgFilter	f = {src, res, ords, first, distance, refs, NULL};
		KdgPairSlice s;
		int64		ncand;
		KdExec		exec;
		KdError		err;

		len = Min(slice, src->n - first);
		kdg_exec_prepare(&exec);
		kdg_check_status(kdg_tree_range(tree, centers + first * src->dim,
										&radius, 1, NULL, NULL, len, res,
										&exec, &err),
						 &err, &exec, what);
		f.kept = palloc(sizeof(int32) * len);
		kdg_parallel_for(len, 1024, filter_range, &f);
		s.src = src;
		s.n = src->n;
		s.refs = refs;
		s.ords = ords;
		s.first = first;
		s.len = len;
		s.offsets = res->offsets;
		s.hits = res->hits;
		s.kept = f.kept;
		fn(arg, &s);
		if (kdgpu_progress)
			ereport(NOTICE,
					(errmsg("%s: " INT64_FORMAT " of " INT64_FORMAT " points searched",
							what, first + len, src->n)));
		ncand = res->offsets[len];
		kde_range_result_free(res);
		pfree(f.kept);
		/* the next slice: about KDG_PAIRS_SLICE_HITS candidates */
		slice = (int64) Min((double) len * 8,
							(double) len * KDG_PAIRS_SLICE_HITS / Max(ncand, 1));
		slice = Max(Min(slice, KDG_PAIRS_MAX_SLICE), 1);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(centers);
	pfree(ords);
	if (refs)
		pfree(refs);
}
