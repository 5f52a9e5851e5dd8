/*
 * kd_split.c
 *	  One tree's device copy split across several GPUs, searched on all of
 *	  them at once; its placement and the multi-GPU build are in
 *	  kd_split_build.c.
 *
 * Every subtree of a left-balanced tree is a left-balanced tree itself:
 * the subtree of node r of a tree of n nodes has kde_subtree_size(r, n)
 * nodes, and its level l (its nodes 2^l - 1 .. 2^(l+1) - 2) is the run of
 * the whole tree's nodes that starts at (r + 1) * 2^l - 1.  A split copy
 * keeps the top `levels` levels of a tree (2^levels - 1 nodes) on the host
 * and makes each of the 2^levels subtrees below them (the parts) an
 * ordinary device copy; refs stay the whole tree's.  There are at least
 * twice as many parts as devices (levels is one more than the least with
 * 2^levels >= the device count; kd_split_build.c places them): the
 * subtrees of one level differ in size by up to half, and two parts per
 * device keep the devices' shares within 3:2, while more parts would cost
 * every query a search of each.
 *
 * Searches run on the parts at once, one host thread per device (a
 * device's parts one after another), and on the host's nodes by brute
 * force.  Each part answers exactly for its own points, so the whole
 * tree's answer is a merge in (d2, ref) order: the k best of the union are
 * among the parts' k best; range hits are the union.  A kNN query first
 * searches its home part (the one the host's nodes lead it to), then only
 * the parts whose bounding box lies within its k-th distance so far (or
 * every part while it has fewer than k): a part farther away holds no
 * point that could enter its answer, ties included, since the box bound
 * never exceeds a point's distance (kdtree.h).  All-kNN does the same from
 * each part's own All-kNN, querying with the host's copy of its points.
 * Distances are computed alike everywhere (kdtree.h), so answers are
 * bit-identical to the whole tree's on one device or the CPU, refs being
 * unique.
 *
 * Threads.  The GPU object's device selection holds per calling thread
 * (kd_gpu_abi.h), and each device is driven by one thread at a time.  The
 * threads run with the caller's plan less its interrupt callback, which
 * only the calling thread polls (between devices' work, kde_parallel_for),
 * so a cancel waits for the work in flight.  The caller's selected device
 * is restored before return.
 */
#include <stdlib.h>
#include <string.h>

#include "kd_internal.h"

/* The levels of the subtree of root in a tree of n nodes; returns how many. */
int
kde_split_level_runs(int64_t root, int64_t n, LevelRun *runs)
{
	int			nruns = 0;
	int64_t		width = 1;
	int64_t		local = 0;

	for (int64_t whole = root; whole < n; whole = 2 * whole + 1, width *= 2)
	{
		runs[nruns].local = local;
		runs[nruns].whole = whole;
		runs[nruns].len = whole + width <= n ? width : n - whole;
		nruns++;
		local += width;
	}
	return nruns;
}

/* The whole tree's node of node j of the subtree of root. */
static int64_t
whole_node(int64_t root, int64_t j)
{
	int			level = kde_tree_depth(j + 1) - 1;

	return ((root + 1) << level) - 1 + (j - (((int64_t) 1 << level) - 1));
}

/*
 * Levels above the parts for ndevices devices: one more than the least
 * with 2^levels >= ndevices, so that each device holds two parts or more.
 */
int
kde_split_levels(int ndevices)
{
	int			levels = 0;

	while ((1 << levels) < ndevices)
		levels++;
	return levels + 1;
}

/* ---- work on every device at once ---------------------------------------- */

/* KdDeviceFn: device d runs fn on its parts in turn. */
static KdStatus
device_parts(void *arg, int d, const KdExec *exec, KdError *err)
{
	DeviceWork *w = arg;
	KdStatus	st = KD_OK;

	for (int p = 0; p < w->split->nparts && st == KD_OK; p++)
		if (w->split->parts[p].device == d)
			st = w->fn(w, p, exec, err);
	return st;
}

/*
 * Run fn on every part with one thread per device (kde_parallel_devices);
 * the first failure is returned.  GPU times are added to the caller's.
 */
KdStatus
kde_split_on_devices(KdSplitCopy *split, PartFn fn, void *arg, KdExec *exec,
		   KdError *err)
{
	DeviceWork	w = {split, fn, arg};

	return kde_parallel_devices(exec, split->ndevices, device_parts, &w, err);
}

/* The calling thread's selected device, to restore after placing parts. */
int
kde_split_selected_device(void)
{
	KdGpuInfo	info;
	KdError		err;

	return kde_gpu_probe(&info, &err) == KD_OK ? info.device : 0;
}

/* Select device again for the calling thread, as it was. */
void
kde_split_restore_device(int device)
{
	KdError		err;

	(void) kde_gpu_select_device(device, &err);
}

/* ---- merging ----------------------------------------------------------- */

/*
 * The k best in (d2, ref) order of nlists sorted lists, less any entry of
 * ref skip_ref when skip, into dst (which may be one of the lists).
 * Returns how many.
 */
static int32_t
merge_best(const KdNeighbor **lists, const int32_t *lens, int nlists, int k,
		   bool skip, uint64_t skip_ref, KdNeighbor *dst)
{
	KdNeighbor	best[KD_MAX_K];
	int32_t		pos[KD_SPLIT_MAX_PARTS + 2] = {0};
	int32_t		m = 0;

	while (m < k)
	{
		int			b = -1;

		for (int i = 0; i < nlists; i++)
			if (pos[i] < lens[i] &&
				(b < 0 || kde_neighbor_less(lists[i][pos[i]].d2, lists[i][pos[i]].ref,
										   lists[b][pos[b]].d2, lists[b][pos[b]].ref)))
				b = i;
		if (b < 0)
			break;
		if (!skip || lists[b][pos[b]].ref != skip_ref)
			best[m++] = lists[b][pos[b]];
		pos[b]++;
	}
	memcpy(dst, best, sizeof(KdNeighbor) * (size_t) m);
	return m;
}

/* The host's nodes as a list sorted by (d2, ref) from q; returns its length. */
static int32_t
top_list(const KdSplitCopy *s, const double *q, KdNeighbor *list)
{
	for (int64_t i = 0; i < s->ntop; i++)
	{
		KdNeighbor	nb = {kde_dist2(q, s->top_coords + i * s->dim, s->dim), s->top_refs[i]};
		int64_t		j = i;

		for (; j > 0 && kde_neighbor_less(nb.d2, nb.ref, list[j - 1].d2, list[j - 1].ref); j--)
			list[j] = list[j - 1];
		list[j] = nb;
	}
	return (int32_t) s->ntop;
}

/* ---- kNN ----------------------------------------------------------------- */

/*
 * A round of queries sent to some of the parts each: every part's kNN of
 * the queries sent to it, merged into the queries' rows of the answer.
 */
typedef struct Targets
{
	KdSplitCopy *split;
	const double *queries;
	const int64_t *rows;		/* the answer's row of each query; NULL: its
								 * index */
	int			k;
	KdNeighbor *out;			/* the answer, merged into */
	int32_t    *count;
	int			home;			/* the part the queries belong to; -1: each
								 * its home part; -2: the host's nodes */
	bool		include_self;	/* All-kNN: a host node is its own neighbour */
	int64_t		n[KD_SPLIT_MAX_PARTS];	/* queries sent to each part */
	int64_t    *idx[KD_SPLIT_MAX_PARTS];	/* which ones */
	double	   *coords[KD_SPLIT_MAX_PARTS]; /* theirs, gathered */
	KdNeighbor *res[KD_SPLIT_MAX_PARTS];
	int32_t    *cnt[KD_SPLIT_MAX_PARTS];
	int			part;			/* the part merge_part works on */
	int64_t		nq;				/* queries of the round */
	uint32_t   *mask;			/* per query: the parts it goes to */
	int64_t    *chunk_n;		/* per chunk of queries and part: how many go
								 * there, then where the first goes */
	bool		(*wanted) (const struct Targets *t, int64_t q, int p);
} Targets;

/* The answer's row of query q. */
static int64_t
target_row(const Targets *t, int64_t q)
{
	return t->rows ? t->rows[q] : q;
}

/* The part that the host's nodes lead point q to. */
static int
home_part(const KdSplitCopy *s, const double *q)
{
	int64_t		node = 0;

	while (node < s->ntop)
		node = q[s->top_split[node]] < s->top_coords[node * s->dim + s->top_split[node]] ?
			2 * node + 1 : 2 * node + 2;
	return (int) (node - s->ntop);
}

/*
 * Whether part p may hold a point of query q's answer that its row lacks:
 * the row has fewer than k, or p's box is within its k-th distance.
 */
static bool
may_improve(const Targets *t, int64_t q, int p)
{
	int64_t		row = target_row(t, q);

	return t->count[row] < t->k ||
		kde_box_dist2(t->queries + q * t->split->dim, t->split->parts[p].box,
					 t->split->dim) <= t->out[row * t->k + t->k - 1].d2;
}

/* wanted: query q's home part. */
static bool
in_home(const Targets *t, int64_t q, int p)
{
	return home_part(t->split, t->queries + q * t->split->dim) == p;
}

/* wanted: any other part that may improve q's answer. */
static bool
elsewhere(const Targets *t, int64_t q, int p)
{
	int			home = t->home >= 0 ? t->home :
		home_part(t->split, t->queries + q * t->split->dim);

	return p != home && may_improve(t, q, p);
}

/* wanted: every part. */
static bool
everywhere(const Targets *t, int64_t q, int p)
{
	return true;
}

/* Parallel body: chunks [begin, end) of queries: each one's parts, counted. */
static void
mark_parts(void *arg, int64_t begin, int64_t end)
{
	Targets    *t = arg;
	int			np = t->split->nparts;

	for (int64_t c = begin; c < end; c++)
	{
		int64_t    *counts = t->chunk_n + c * np;
		int64_t		last = Min64((c + 1) * KD_SPLIT_CHOOSE_CHUNK, t->nq);

		memset(counts, 0, sizeof(int64_t) * np);
		for (int64_t q = c * KD_SPLIT_CHOOSE_CHUNK; q < last; q++)
		{
			uint32_t	m = 0;

			for (int p = 0; p < np; p++)
				if (t->wanted(t, q, p))
				{
					m |= (uint32_t) 1 << p;
					counts[p]++;
				}
			t->mask[q] = m;
		}
	}
}

/*
 * Parallel body: chunks [begin, end) of queries gathered into the lists of
 * their parts, from each chunk's place in them (t->chunk_n, summed).
 */
static void
gather_parts(void *arg, int64_t begin, int64_t end)
{
	Targets    *t = arg;
	int			np = t->split->nparts;
	int			dim = t->split->dim;

	for (int64_t c = begin; c < end; c++)
	{
		int64_t    *pos = t->chunk_n + c * np;
		int64_t		last = Min64((c + 1) * KD_SPLIT_CHOOSE_CHUNK, t->nq);

		for (int64_t q = c * KD_SPLIT_CHOOSE_CHUNK; q < last; q++)
			for (int p = 0; p < np; p++)
				if (t->mask[q] & ((uint32_t) 1 << p))
				{
					t->idx[p][pos[p]] = q;
					memcpy(t->coords[p] + pos[p] * dim, t->queries + q * dim,
						   sizeof(double) * dim);
					pos[p]++;
				}
	}
}

/*
 * Each part's list of the queries it wants: marked and counted by chunks
 * of queries in parallel, then gathered in parallel into lists in query
 * order.
 */
static KdStatus
choose_parts(Targets *t, KdExec *exec, KdError *err)
{
	KdSplitCopy *s = t->split;
	int64_t		nchunks = (t->nq + KD_SPLIT_CHOOSE_CHUNK - 1) / KD_SPLIT_CHOOSE_CHUNK;
	KdStatus	st = KD_OK;

	t->mask = malloc(sizeof(uint32_t) * (size_t) t->nq + 1);
	t->chunk_n = malloc(sizeof(int64_t) * (size_t) (nchunks * s->nparts) + 1);
	if (t->mask == NULL || t->chunk_n == NULL)
		st = kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
	if (st == KD_OK)
		st = kde_parallel_for(exec, nchunks, 1, mark_parts, t, err);
	for (int p = 0; st == KD_OK && p < s->nparts; p++)
	{
		int64_t		sum = 0;

		for (int64_t c = 0; c < nchunks; c++)
		{
			int64_t		m = t->chunk_n[c * s->nparts + p];

			t->chunk_n[c * s->nparts + p] = sum;
			sum += m;
		}
		t->n[p] = sum;
		t->idx[p] = malloc(sizeof(int64_t) * (size_t) sum + 1);
		t->coords[p] = malloc(sizeof(double) * (size_t) (sum * s->dim) + 1);
		t->res[p] = malloc(sizeof(KdNeighbor) * (size_t) (sum * t->k) + 1);
		t->cnt[p] = malloc(sizeof(int32_t) * (size_t) sum + 1);
		if (!t->idx[p] || !t->coords[p] || !t->res[p] || !t->cnt[p])
			st = kde_set_error(err, KD_ERR_NOMEM, -1,
							  "out of memory for the queries of a split tree's part");
	}
	if (st == KD_OK)
		st = kde_parallel_for(exec, nchunks, 1, gather_parts, t, err);
	free(t->mask);
	free(t->chunk_n);
	t->mask = NULL;
	t->chunk_n = NULL;
	return st;
}

/* PartFn: the kNN of the queries sent to a part. */
static KdStatus
part_targets(DeviceWork *w, int p, const KdExec *exec, KdError *err)
{
	Targets    *t = w->arg;

	if (t->n[p] == 0)
		return KD_OK;
	return kde_gpu_knn(w->split->parts[p].copy, t->coords[p], t->n[p], t->k,
					  t->res[p], t->cnt[p], exec, err);
}

/* Parallel body: merge part t->part's answers [begin, end) into their rows. */
static void
merge_part(void *arg, int64_t begin, int64_t end)
{
	Targets    *t = arg;
	int			p = t->part;

	for (int64_t j = begin; j < end; j++)
	{
		int64_t		row = target_row(t, t->idx[p][j]);
		const KdNeighbor *lists[2] = {t->out + row * t->k, t->res[p] + j * t->k};
		int32_t		lens[2] = {t->count[row], t->cnt[p][j]};

		t->count[row] = merge_best(lists, lens, 2, t->k, false, 0, t->out + row * t->k);
	}
}

/*
 * A round: each part gets the queries wanted there (all nq of t->queries
 * are looked at), searches them on its device, and its answers are merged
 * into their rows, part after part.
 */
static KdStatus
targets_run(Targets *t, int64_t nq,
			bool (*wanted) (const Targets *t, int64_t q, int p),
			KdExec *exec, KdError *err)
{
	KdSplitCopy *s = t->split;
	KdStatus	st;

	t->nq = nq;
	t->wanted = wanted;
	memset(t->n, 0, sizeof(t->n));
	st = choose_parts(t, exec, err);
	if (st == KD_OK)
		st = kde_split_on_devices(s, part_targets, t, exec, err);
	for (int p = 0; st == KD_OK && p < s->nparts; p++)
	{
		t->part = p;
		st = kde_parallel_for(exec, t->n[p], 4096, merge_part, t, err);
	}
	for (int p = 0; p < s->nparts; p++)
	{
		free(t->idx[p]);
		free(t->coords[p]);
		free(t->res[p]);
		free(t->cnt[p]);
		t->idx[p] = NULL;
		t->coords[p] = NULL;
		t->res[p] = NULL;
		t->cnt[p] = NULL;
	}
	return st;
}

/*
 * Parallel body: the host's nodes nearest each query, merged into its row:
 * the row starts with them for a kNN query or a host node of All-kNN
 * (which leaves itself out unless include_self), and gets them added to
 * its part's own All-kNN answer for a part's point (t->home >= 0).
 */
static void
merge_host_nodes(void *arg, int64_t begin, int64_t end)
{
	Targets    *t = arg;
	KdNeighbor	top[KD_SPLIT_MAX_PARTS];
	bool		self = t->home == -2 && !t->include_self;

	for (int64_t q = begin; q < end; q++)
	{
		int64_t		row = target_row(t, q);
		const KdNeighbor *lists[2] = {top, t->out + row * t->k};
		int32_t		lens[2] = {top_list(t->split, t->queries + q * t->split->dim, top),
		t->home >= 0 ? t->count[row] : 0};

		t->count[row] = merge_best(lists, lens, t->home >= 0 ? 2 : 1, t->k, self,
								   self ? t->split->top_refs[q] : 0,
								   t->out + row * t->k);
	}
}

/* kde_knn on a split copy (kdtree.h). */
KdStatus
kde_split_knn(const KdSplitCopy *split, const double *queries, int64_t nq,
			 int k, KdNeighbor *out, int32_t *count, KdExec *exec,
			 KdError *err)
{
	Targets		t;
	KdStatus	st = kde_check_k(k, err);

	if (st != KD_OK)
		return st;
	memset(&t, 0, sizeof(t));
	t.split = (KdSplitCopy *) split;
	t.queries = queries;
	t.k = k;
	t.out = out;
	t.count = count;
	t.home = -1;
	st = kde_parallel_for(exec, nq, 4096, merge_host_nodes, &t, err);
	if (st == KD_OK)
		st = targets_run(&t, nq, in_home, exec, err);
	if (st == KD_OK)
		st = targets_run(&t, nq, elsewhere, exec, err);
	return st;
}

/* ---- All-kNN ------------------------------------------------------------- */

typedef struct AllKnn
{
	int			k;
	bool		include_self;
	KdNeighbor *out;
	int32_t    *count;
} AllKnn;

/* PartFn: a part's own All-kNN, put at its nodes' places in the answer. */
static KdStatus
part_all_knn(DeviceWork *w, int p, const KdExec *exec, KdError *err)
{
	AllKnn	   *a = w->arg;
	KdSplitPart *part = &w->split->parts[p];
	KdNeighbor *own = malloc(sizeof(KdNeighbor) * (size_t) (part->n * a->k) + 1);
	int32_t    *oc = malloc(sizeof(int32_t) * (size_t) part->n + 1);
	LevelRun	runs[KD_STACK_DEPTH];
	int			nruns = kde_split_level_runs(part->root, w->split->n, runs);
	KdStatus	st;

	if (own == NULL || oc == NULL)
		st = kde_set_error(err, KD_ERR_NOMEM, -1,
						  "out of memory for the All-kNN of %lld points",
						  (long long) part->n);
	else
		st = kde_gpu_all_knn(part->copy, a->k, a->include_self, own, oc, exec, err);
	for (int i = 0; st == KD_OK && i < nruns; i++)
	{
		memcpy(a->out + runs[i].whole * a->k, own + runs[i].local * a->k,
			   sizeof(KdNeighbor) * (size_t) (runs[i].len * a->k));
		memcpy(a->count + runs[i].whole, oc + runs[i].local,
			   sizeof(int32_t) * (size_t) runs[i].len);
	}
	free(own);
	free(oc);
	return st;
}

/* kde_all_knn on a split copy (kdtree.h): answers in the whole tree's node order. */
KdStatus
kde_split_all_knn(const KdSplitCopy *split, int k, bool include_self,
				 KdNeighbor *out, int32_t *count, KdExec *exec, KdError *err)
{
	KdSplitCopy *s = (KdSplitCopy *) split;
	AllKnn		a = {k, include_self, out, count};
	Targets		t;
	int64_t    *rows = malloc(sizeof(int64_t) * (size_t) KD_SPLIT_CHUNK);
	KdStatus	st = kde_check_k(k, err);

	if (st == KD_OK && rows == NULL)
		st = kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
	/* each part's own All-kNN */
	if (st == KD_OK)
		st = kde_split_on_devices(s, part_all_knn, &a, exec, err);

	/* the host's nodes: among themselves (less each itself), and in every part */
	memset(&t, 0, sizeof(t));
	t.split = s;
	t.k = k;
	t.out = out;
	t.count = count;
	t.queries = s->top_coords;
	t.home = -2;
	t.include_self = include_self;
	if (st == KD_OK)
		st = kde_parallel_for(exec, s->ntop, 4096, merge_host_nodes, &t, err);
	if (st == KD_OK)
		st = targets_run(&t, s->ntop, everywhere, exec, err);

	/* each part's points: the host's nodes, then the parts that may improve them */
	t.rows = rows;
	for (int p = 0; st == KD_OK && p < s->nparts; p++)
		for (int64_t first = 0; st == KD_OK && first < s->parts[p].n;
			 first += KD_SPLIT_CHUNK)
		{
			int64_t		nq = Min64(s->parts[p].n - first, KD_SPLIT_CHUNK);

			for (int64_t j = 0; j < nq; j++)
				rows[j] = whole_node(s->parts[p].root, first + j);
			t.queries = s->parts[p].coords + first * s->dim;
			t.home = p;
			st = kde_parallel_for(exec, nq, 4096, merge_host_nodes, &t, err);
			if (st == KD_OK)
				st = targets_run(&t, nq, elsewhere, exec, err);
		}
	free(rows);
	return st;
}

/* ---- radius and box -------------------------------------------------------- */

typedef struct RangeWork
{
	bool		box;
	const double *a;			/* centres or lows */
	const double *b;			/* radii or highs */
	int64_t		nq;
	int64_t		nradii;
	KdRangeResult parts[KD_SPLIT_MAX_PARTS];
	KdSplitCopy *split;
	KdRangeResult *res;
} RangeWork;

/* PartFn: a part's range result. */
static KdStatus
part_range(DeviceWork *w, int p, const KdExec *exec, KdError *err)
{
	RangeWork  *r = w->arg;
	const KdGpuTree *copy = w->split->parts[p].copy;

	if (r->box)
		return kde_gpu_box(copy, r->a, r->b, r->nq, &r->parts[p], exec, err);
	return kde_gpu_radius(copy, r->a, r->nq, r->b, r->nradii, &r->parts[p],
						 exec, err);
}

/* Whether host node i is a hit of query q. */
static bool
top_hit(const RangeWork *r, int64_t q, int64_t i, double *d2)
{
	const KdSplitCopy *s = r->split;
	const double *p = s->top_coords + i * s->dim;

	if (r->box)
	{
		const double *lo = r->a + q * s->dim;
		const double *hi = r->b + q * s->dim;

		*d2 = 0.0;
		for (int j = 0; j < s->dim; j++)
			if (!(lo[j] <= p[j] && p[j] <= hi[j]))
				return false;
		return true;
	}
	else
	{
		double		rad = r->b[r->nradii == 1 ? 0 : q];

		*d2 = kde_dist2(r->a + q * s->dim, p, s->dim);
		return kde_within_radius(*d2, kde_radius_bound(rad), rad);
	}
}

/* Parallel body: each query's count of hits, in res->offsets[q + 1]. */
static void
range_count(void *arg, int64_t begin, int64_t end)
{
	RangeWork  *r = arg;
	double		d2;

	for (int64_t q = begin; q < end; q++)
	{
		int64_t		c = 0;

		for (int p = 0; p < r->split->nparts; p++)
			c += r->parts[p].offsets[q + 1] - r->parts[p].offsets[q];
		for (int64_t i = 0; i < r->split->ntop; i++)
			c += top_hit(r, q, i, &d2);
		r->res->offsets[q + 1] = c;
	}
}

/* Parallel body: each query's hits, gathered and sorted. */
static void
range_fill(void *arg, int64_t begin, int64_t end)
{
	RangeWork  *r = arg;

	for (int64_t q = begin; q < end; q++)
	{
		KdNeighbor *dst = r->res->hits + r->res->offsets[q];
		int64_t		c = 0;
		double		d2;

		for (int p = 0; p < r->split->nparts; p++)
		{
			const KdRangeResult *pr = &r->parts[p];
			int64_t		len = pr->offsets[q + 1] - pr->offsets[q];

			memcpy(dst + c, pr->hits + pr->offsets[q], sizeof(KdNeighbor) * (size_t) len);
			c += len;
		}
		for (int64_t i = 0; i < r->split->ntop; i++)
			if (top_hit(r, q, i, &d2))
			{
				dst[c].d2 = d2;
				dst[c++].ref = r->split->top_refs[i];
			}
		kde_sort_neighbors(dst, c, r->box);
	}
}

/* Radius or box queries on every part, their hits gathered per query. */
static KdStatus
split_range(RangeWork *r, KdExec *exec, KdError *err)
{
	KdStatus	st;

	memset(r->res, 0, sizeof(*r->res));
	st = kde_split_on_devices(r->split, part_range, r, exec, err);
	if (st == KD_OK)
		st = kde_range_result_alloc(r->res, r->nq, err);
	if (st == KD_OK)
		st = kde_parallel_for(exec, r->nq, 4096, range_count, r, err);
	if (st == KD_OK)
		st = kde_range_result_fill_offsets(r->res, err);
	if (st == KD_OK)
		st = kde_parallel_for(exec, r->nq, 4096, range_fill, r, err);
	if (st != KD_OK)
		kde_range_result_free(r->res);
	for (int p = 0; p < r->split->nparts; p++)
		kde_range_result_free(&r->parts[p]);
	return st;
}

/* kde_radius on a split copy (kdtree.h). */
KdStatus
kde_split_radius(const KdSplitCopy *split, const double *centers, int64_t nq,
				const double *radii, int64_t nradii, KdRangeResult *res,
				KdExec *exec, KdError *err)
{
	RangeWork	r;

	memset(&r, 0, sizeof(r));
	r.box = false;
	r.a = centers;
	r.b = radii;
	r.nq = nq;
	r.nradii = nradii;
	r.split = (KdSplitCopy *) split;
	r.res = res;
	return split_range(&r, exec, err);
}

/* kde_box on a split copy (kdtree.h). */
KdStatus
kde_split_box(const KdSplitCopy *split, const double *lows,
			 const double *highs, int64_t nq, KdRangeResult *res,
			 KdExec *exec, KdError *err)
{
	RangeWork	r;

	memset(&r, 0, sizeof(r));
	r.box = true;
	r.a = lows;
	r.b = highs;
	r.nq = nq;
	r.split = (KdSplitCopy *) split;
	r.res = res;
	return split_range(&r, exec, err);
}

/* ---- making a split copy ---------------------------------------------------- */
