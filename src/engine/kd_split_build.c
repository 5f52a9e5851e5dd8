/*
 * kd_split_build.c
 *	  Placing a split copy's parts on the devices, uploading them, and a
 *	  tree build that uses several GPUs.
 *
 * A split copy's parts (kd_split.c) are placed largest first on the device
 * with the fewest points (place_parts), so that every device holds about
 * its share; a part's device copy is an ordinary one, of the subtree's
 * points in its own node order.  kde_split_build builds the top levels on
 * the CPU (kde_build_top) and each part on its device, then puts the parts
 * in place: the tree kde_build makes, bit for bit, since a subtree is built
 * from its own points alone.  The caller's selected device is restored
 * before return, and every allocation is released on every error path
 * (kde_split_release).
 */
#include <stdlib.h>
#include <string.h>

#include "kd_internal.h"

/*
 * Give each part of s a device: the largest part not yet placed goes to
 * the device with the fewest points so far (the lowest among equals).
 */
static void
place_parts(KdSplitCopy *s)
{
	int64_t		load[KD_SPLIT_MAX_DEVICES] = {0};
	bool		placed[KD_SPLIT_MAX_PARTS] = {false};

	for (int i = 0; i < s->nparts; i++)
	{
		int			big = -1;
		int			d = 0;

		for (int p = 0; p < s->nparts; p++)
			if (!placed[p] && (big < 0 || s->parts[p].n > s->parts[big].n))
				big = p;
		for (int j = 1; j < s->ndevices; j++)
			if (load[j] < load[d])
				d = j;
		s->parts[big].device = d;
		placed[big] = true;
		load[d] += s->parts[big].n;
	}
}

/* Lay out s for a tree of n points over ndevices: its parts, placed. */
static void
split_plan(KdSplitCopy *s, int64_t n, int dim, int ndevices)
{
	s->n = n;
	s->dim = dim;
	s->ndevices = ndevices;
	s->nparts = 1 << kde_split_levels(ndevices);
	s->ntop = s->nparts - 1;
	for (int p = 0; p < s->nparts; p++)
	{
		s->parts[p].root = s->ntop + p;
		s->parts[p].n = kde_subtree_size(s->ntop + p, n);
	}
	place_parts(s);
}

/*
 * kde_split_plan_points (kdtree.h): the points that a split of a tree of n
 * points over ndevices puts on device; -1 when such a tree is not split.
 */
int64_t
kde_split_plan_points(int64_t n, int ndevices, int device)
{
	KdSplitCopy s;
	int64_t		points = 0;

	if (ndevices < 1 || ndevices > KD_SPLIT_MAX_DEVICES ||
		n < ((int64_t) 2 << kde_split_levels(ndevices)) - 1)
		return -1;
	memset(&s, 0, sizeof(s));
	split_plan(&s, n, 1, ndevices);
	for (int p = 0; p < s.nparts; p++)
		if (s.parts[p].device == device)
			points += s.parts[p].n;
	return points;
}

/* A split copy's shell for a tree of n points: the parts placed, nothing copied. */
static KdStatus
split_alloc(int64_t n, int dim, int ndevices, KdSplitCopy **out, KdError *err)
{
	int			levels;
	KdSplitCopy *s;

	*out = NULL;
	if (ndevices < 1 || ndevices > KD_SPLIT_MAX_DEVICES)
		return kde_set_error(err, KD_ERR_ARG, -1,
							"a tree can be split over 1 to %d devices, not %d",
							KD_SPLIT_MAX_DEVICES, ndevices);
	levels = kde_split_levels(ndevices);
	if (n < ((int64_t) 2 << levels) - 1)
		return kde_set_error(err, KD_ERR_ARG, -1,
							"a tree of %lld points is too small to split over %d devices",
							(long long) n, ndevices);
	if ((s = calloc(1, sizeof(KdSplitCopy))) == NULL)
		return kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
	split_plan(s, n, dim, ndevices);
	s->top_coords = malloc(sizeof(double) * (size_t) (s->ntop * dim));
	s->top_refs = malloc(sizeof(uint64_t) * (size_t) s->ntop);
	s->top_split = malloc((size_t) s->ntop);
	if (s->top_coords == NULL || s->top_refs == NULL || s->top_split == NULL)
	{
		kde_split_release(s);
		return kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
	}
	*out = s;
	return KD_OK;
}

/*
 * Put part p's host tree on its device (selected) and keep its points for
 * All-kNN; part tree's arrays are freed either way.
 */
static KdStatus
part_place(KdSplitCopy *s, int p, KdTree *pt, const KdExec *exec, KdError *err)
{
	KdSplitPart *part = &s->parts[p];
	KdStatus	st = kde_gpu_select_device(part->device, err);

	if (st == KD_OK)
		st = kde_gpu_upload_copy(pt, &part->copy, exec, err);
	if (st == KD_OK)
	{
		part->bytes = kde_tree_bytes(pt->n, pt->dim, pt->nbounds);
		memcpy(part->box, pt->coords, sizeof(double) * pt->dim);
		memcpy(part->box + pt->dim, pt->coords, sizeof(double) * pt->dim);
		for (int64_t i = 1; i < pt->n; i++)
			kde_box_take(part->box, pt->coords + i * pt->dim, pt->dim);
		part->coords = pt->coords;
		pt->coords = NULL;
	}
	kde_tree_free(pt);
	return st;
}

/* PartFn: copy a part out of the whole tree (arg) and upload it. */
static KdStatus
part_upload(DeviceWork *w, int p, const KdExec *exec, KdError *err)
{
	const KdTree *t = w->arg;
	KdSplitPart *part = &w->split->parts[p];
	LevelRun	runs[KD_STACK_DEPTH];
	int			nruns = kde_split_level_runs(part->root, t->n, runs);
	KdTree		pt;
	KdStatus	st = kde_tree_alloc(&pt, part->n, t->dim, err);

	if (st != KD_OK)
		return st;
	for (int i = 0; i < nruns; i++)
	{
		memcpy(pt.coords + runs[i].local * t->dim, t->coords + runs[i].whole * t->dim,
			   sizeof(double) * (size_t) (runs[i].len * t->dim));
		memcpy(pt.refs + runs[i].local, t->refs + runs[i].whole,
			   sizeof(uint64_t) * (size_t) runs[i].len);
		memcpy(pt.split + runs[i].local, t->split + runs[i].whole, (size_t) runs[i].len);
	}
	kde_tree_fill_bounds(&pt, 0);
	pt.ref_order = t->ref_order;
	return part_place(w->split, p, &pt, exec, err);
}

/* kde_split_upload (kdtree.h): split tree's device copy over ndevices devices. */
KdStatus
kde_split_upload(const KdTree *tree, int ndevices, KdSplitCopy **out,
				KdExec *exec, KdError *err)
{
	KdSplitCopy *s;
	int			selected;
	KdStatus	st;

	*out = NULL;
	if (tree->coords == NULL)
		return kde_set_error(err, KD_ERR_ARG, -1,
							"only a tree in host memory can be split");
	if ((st = split_alloc(tree->n, tree->dim, ndevices, &s, err)) != KD_OK)
		return st;
	memcpy(s->top_coords, tree->coords, sizeof(double) * (size_t) (s->ntop * tree->dim));
	memcpy(s->top_refs, tree->refs, sizeof(uint64_t) * (size_t) s->ntop);
	memcpy(s->top_split, tree->split, (size_t) s->ntop);
	selected = kde_split_selected_device();
	st = kde_split_on_devices(s, part_upload, (void *) tree, exec, err);
	kde_split_restore_device(selected);
	if (st != KD_OK)
		kde_split_release(s);
	else
		*out = s;
	return st;
}

/* Free a split copy: its parts' device copies and its host arrays. */
void
kde_split_release(KdSplitCopy *split)
{
	if (split == NULL)
		return;
	for (int p = 0; p < split->nparts; p++)
	{
		kde_gpu_release_copy(split->parts[p].copy);
		free(split->parts[p].coords);
	}
	free(split->top_coords);
	free(split->top_refs);
	free(split->top_split);
	free(split);
}

/* Bytes of a split copy's parts on device. */
int64_t
kde_split_device_bytes(const KdSplitCopy *split, int device)
{
	int64_t		bytes = 0;

	for (int p = 0; p < split->nparts; p++)
		if (split->parts[p].device == device)
			bytes += split->parts[p].bytes;
	return bytes;
}

/* ---- building on several devices ------------------------------------------ */

typedef struct SplitBuild
{
	KdTree	   *tree;			/* the whole tree, top levels built */
	const double *pts;			/* the parts' points, each contiguous */
	const uint64_t *refs;
	int64_t		begin[KD_SPLIT_MAX_PARTS];
	bool		bounds_missing; /* a part had no box for a node that needs one */
} SplitBuild;

/* PartFn: build a part on its device and put it in place in the whole tree. */
static KdStatus
part_build(DeviceWork *w, int p, const KdExec *exec, KdError *err)
{
	SplitBuild *b = w->arg;
	KdTree	   *t = b->tree;
	KdSplitPart *part = &w->split->parts[p];
	LevelRun	runs[KD_STACK_DEPTH];
	int			nruns = kde_split_level_runs(part->root, t->n, runs);
	int			dim = t->dim;
	KdTree		pt;
	KdStatus	st = kde_tree_alloc(&pt, part->n, dim, err);

	if (st == KD_OK)
		st = kde_gpu_select_device(part->device, err);
	if (st == KD_OK)
		st = kde_gpu_build(b->pts + b->begin[p] * dim, b->refs + b->begin[p],
						  part->n, dim, &pt, NULL, exec, err);
	for (int i = 0; st == KD_OK && i < nruns; i++)
	{
		const LevelRun *r = &runs[i];

		memcpy(t->coords + r->whole * dim, pt.coords + r->local * dim,
			   sizeof(double) * (size_t) (r->len * dim));
		memcpy(t->refs + r->whole, pt.refs + r->local, sizeof(uint64_t) * (size_t) r->len);
		memcpy(t->split + r->whole, pt.split + r->local, (size_t) r->len);
		if (r->whole >= t->nbounds)
			continue;
		if (r->local + r->len > pt.nbounds)
			b->bounds_missing = true;
		else
			memcpy(t->bounds + r->whole * 2 * dim, pt.bounds + r->local * 2 * dim,
				   sizeof(double) * 2 * dim * (size_t) r->len);
	}
	kde_tree_free(&pt);
	return st;
}

/*
 * kde_split_build (kdtree.h): the tree kde_build makes, its top levels built
 * on the CPU and each part below them on a device of its own, into tree's
 * arrays, which the caller allocated (kde_tree_alloc), as the GPU object's
 * build does.
 */
KdStatus
kde_split_build(const double *points, const uint64_t *refs, int64_t n,
			   int dim, int ndevices, KdTree *tree, KdExec *exec,
			   KdError *err)
{
	KdSplitCopy *s;
	SplitBuild	b;
	double	   *pts = NULL;
	uint64_t   *prefs = NULL;
	int			selected = kde_split_selected_device();
	KdStatus	st;

	memset(&b, 0, sizeof(b));
	if ((st = split_alloc(n, dim, ndevices, &s, err)) != KD_OK)
		return st;
	st = kde_build_top(points, refs, n, dim, kde_split_levels(ndevices), tree,
					  &pts, &prefs, b.begin, exec, err);
	if (st == KD_OK)
	{
		b.tree = tree;
		b.pts = pts;
		b.refs = prefs;
		st = kde_split_on_devices(s, part_build, &b, exec, err);
		if (st == KD_OK && b.bounds_missing)
			kde_tree_fill_bounds(tree, s->ntop);
	}
	kde_split_restore_device(selected);
	free(pts);
	free(prefs);
	kde_split_release(s);
	return st;
}
