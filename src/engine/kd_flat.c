/*
 * kd_flat.c
 *	  Exact kNN and radius searches of vectors of any dimension under a
 *	  metric (kd_metric.h): every query compared with every vector, on the
 *	  CPU threads, or on the GPU (cuda/flat.cu) when exec chooses it; the
 *	  GPU's L2 kNN from KD_FLAT_FILTER_MIN_DIM dimensions picks candidates
 *	  by a matrix-form filter with proven error bounds and ranks them by
 *	  the exact distances (cuda/flat_filter.cu), which last_run names.
 *
 * The flat loop compares every query with every vector, so its answers
 * are exact by construction: a kNN query keeps the k least (distance, ref)
 * pairs, ties by ref as kde_knn's; a radius query every vector within its
 * radius, bounds included, sorted the same way.  The CPU loop takes the
 * queries in blocks and the vectors in tiles small enough to stay in cache
 * while a block's queries pass over them; a radius search passes twice,
 * counting the hits and then filling them in.  The work of a call is n *
 * nq * dim terms, which the GPU's choice counts.
 *
 * On the CPU, a kNN batch of FLAT_TREE_MIN_QUERIES queries or more over
 * FLAT_TREE_MIN_ROWS vectors or more (not cosine) first builds a
 * vantage-point tree (kd_vptree.c), whose walk leaves a node only when its
 * bound, lowered past rounding, exceeds the k-th distance: the same
 * answers.  A tree of FLAT_TREE_PILOT of the rows is tried first, cheaply:
 * unless its searches of the first FLAT_TREE_SAMPLE queries compare at most
 * FLAT_TREE_SHARE of its rows, no tree is built.  Else the whole tree
 * answers those queries, and the rest too where they compared at most that
 * share of all the rows (data with structure); else the rest go through
 * the flat loop.  The note says which.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_internal.h"
#include "kd_metric.h"

/* queries that pass over a tile of vectors together */
#define FLAT_QUERY_BLOCK 8
/* bytes of vectors in one tile */
#define FLAT_TILE_BYTES (32 * 1024)
/* a CPU kNN batch tries a vantage-point tree from these sizes */
#define FLAT_TREE_MIN_ROWS 4096
#define FLAT_TREE_MIN_QUERIES 256
/* queries the tree answers before the rest are given to it */
#define FLAT_TREE_SAMPLE 32
/* rows of the small tree that must prune before the whole one is built */
#define FLAT_TREE_PILOT 4096
/* the largest share of the rows those may compare for the rest to go on */
#define FLAT_TREE_SHARE 0.25

/* What a pass over the vectors does with each distance. */
typedef enum FlatMode
{
	FLAT_KNN,					/* offer it to the query's list */
	FLAT_COUNT,					/* count it when within the radius */
	FLAT_FILL					/* write it out when within the radius */
} FlatMode;

/* What the CPU loop's threads share. */
typedef struct FlatBatch
{
	const KdVectors *set;
	KdMetric	metric;
	FlatMode	mode;
	const double *queries;
	int64_t		nq;
	/* kNN */
	int			k;
	const uint64_t *skip;
	KdNeighbor *out;
	int32_t    *count;
	/* radius: offsets[q + 1] counts, then offsets and hits */
	const double *radii;
	int64_t		nradii;
	KdRangeResult *res;
	/* cosine: each vector's squared norm (kde_metric_norm2), or NULL */
	double	   *norms;
} FlatBatch;

/* A metric's name, for messages and kd_status(). */
const char *
kde_metric_name(KdMetric metric)
{
	switch (metric)
	{
		case KD_METRIC_L2:
			return "l2";
		case KD_METRIC_L1:
			return "l1";
		case KD_METRIC_LINF:
			return "linf";
		case KD_METRIC_COSINE:
			return "cosine";
	}
	return "unknown";
}

/* The distance between a and b (dim coordinates each) under metric. */
KD_INLINE double
metric_distance(const int metric, const double *a, const double *b, int dim)
{
	KdMetricSum sum = kde_metric_zero();

	for (int j = 0; j < dim; j++)
		kde_metric_add(metric, &sum, a[j], b[j]);
	return kde_metric_finish(metric, &sum);
}

/*
 * The distance between query a and vector b under metric, their squared
 * norms (cosine) given: the same bits as metric_distance.
 */
KD_INLINE double
flat_distance(const int metric, const double *a, double anorm,
			  const double *b, double bnorm, int dim)
{
	KdMetricSum sum = kde_metric_zero();

	for (int j = 0; j < dim; j++)
		kde_metric_term(metric, &sum, a[j], b[j]);
	sum.na = anorm;
	sum.nb = bnorm;
	return kde_metric_finish(metric, &sum);
}

/* The distance between a and b under metric, as the search ranks it. */
double
kde_vector_distance(KdMetric metric, const double *a, const double *b,
					int dim)
{
	return metric_distance((int) metric, a, b, dim);
}

/*
 * Queries [q0, q1) against every vector, under a metric and in a mode
 * fixed inline.
 */
KD_INLINE void
flat_block(const FlatBatch *b, int64_t q0, int64_t q1, const int metric,
		   const FlatMode mode)
{
	const KdVectors *set = b->set;
	const int	dim = set->dim;
	int64_t		tile = FLAT_TILE_BYTES / ((int64_t) sizeof(double) * set->stride);
	int64_t		cursor[FLAT_QUERY_BLOCK];

	if (tile < 1)
		tile = 1;
	for (int64_t q = q0; q < q1; q++)
	{
		if (mode == FLAT_KNN)
			b->count[q] = 0;
		else if (mode == FLAT_COUNT)
			b->res->offsets[q + 1] = 0;
		else
			cursor[q - q0] = b->res->offsets[q];
	}
	for (int64_t p0 = 0; p0 < set->n; p0 += tile)
	{
		int64_t		p1 = p0 + tile < set->n ? p0 + tile : set->n;

		for (int64_t q = q0; q < q1; q++)
		{
			const double *query = b->queries + q * dim;
			double		qnorm = metric == KD_METRIC_COSINE ? kde_metric_norm2(query, dim) : 0.0;
			double		r = mode == FLAT_KNN ? 0.0 : b->radii[b->nradii == 1 ? 0 : q];
			uint64_t	skip = b->skip ? b->skip[q] : UINT64_MAX;
			bool		skipping = mode == FLAT_KNN && b->skip != NULL;

			for (int64_t p = p0; p < p1; p++)
			{
				double		d;

				if (skipping && set->refs[p] == skip)
					continue;
				d = flat_distance(metric, query, qnorm, set->coords + p * set->stride,
								  metric == KD_METRIC_COSINE ? b->norms[p] : 0.0, dim);
				if (mode == FLAT_KNN)
					kde_list_offer(b->out + q * b->k, &b->count[q], b->k, d, set->refs[p]);
				else if (!(d <= r))
					continue;
				else if (mode == FLAT_COUNT)
					b->res->offsets[q + 1]++;
				else
				{
					b->res->hits[cursor[q - q0]].d2 = d;
					b->res->hits[cursor[q - q0]++].ref = set->refs[p];
				}
			}
		}
	}
	if (mode == FLAT_FILL)
		for (int64_t q = q0; q < q1; q++)
			kde_sort_neighbors(b->res->hits + b->res->offsets[q],
							   b->res->offsets[q + 1] - b->res->offsets[q], false);
}

/* flat_block for a mode fixed inline, the metric chosen here. */
KD_INLINE void
flat_block_mode(const FlatBatch *b, int64_t q0, int64_t q1, const FlatMode mode)
{
	switch (b->metric)
	{
		case KD_METRIC_L2:
			flat_block(b, q0, q1, KD_METRIC_L2, mode);
			break;
		case KD_METRIC_L1:
			flat_block(b, q0, q1, KD_METRIC_L1, mode);
			break;
		case KD_METRIC_LINF:
			flat_block(b, q0, q1, KD_METRIC_LINF, mode);
			break;
		case KD_METRIC_COSINE:
			flat_block(b, q0, q1, KD_METRIC_COSINE, mode);
			break;
	}
}

/* Parallel body: query blocks [begin, end). */
static void
flat_range(void *arg, int64_t begin, int64_t end)
{
	const FlatBatch *b = arg;

	for (int64_t blk = begin; blk < end; blk++)
	{
		int64_t		q0 = blk * FLAT_QUERY_BLOCK;
		int64_t		q1 = q0 + FLAT_QUERY_BLOCK < b->nq ? q0 + FLAT_QUERY_BLOCK : b->nq;

		switch (b->mode)
		{
			case FLAT_KNN:
				flat_block_mode(b, q0, q1, FLAT_KNN);
				break;
			case FLAT_COUNT:
				flat_block_mode(b, q0, q1, FLAT_COUNT);
				break;
			case FLAT_FILL:
				flat_block_mode(b, q0, q1, FLAT_FILL);
				break;
		}
	}
}

/* Parallel body: the squared norms of vectors [begin, end). */
static void
norms_range(void *arg, int64_t begin, int64_t end)
{
	FlatBatch  *b = arg;

	for (int64_t i = begin; i < end; i++)
		b->norms[i] = kde_metric_norm2(b->set->coords + i * b->set->stride,
									   b->set->dim);
}

/*
 * Run the CPU loop of b over its queries in a mode, cosine's vector norms
 * summed first (and kept for b's next run).
 */
static KdStatus
flat_run(FlatBatch *b, FlatMode mode, KdExec *exec, KdError *err)
{
	KdStatus	st;

	if (b->metric == KD_METRIC_COSINE && b->norms == NULL)
	{
		b->norms = malloc(sizeof(double) * (size_t) (b->set->n + 1));
		if (b->norms == NULL)
			return kde_set_error(err, KD_ERR_NOMEM, -1,
								 "out of memory for the norms of %lld vectors",
								 (long long) b->set->n);
		if ((st = kde_parallel_for(exec, b->set->n, 65536, norms_range, b, err)) != KD_OK)
			return st;
	}
	b->mode = mode;
	return kde_parallel_for(exec, (b->nq + FLAT_QUERY_BLOCK - 1) / FLAT_QUERY_BLOCK,
							1, flat_range, b, err);
}

/* The checks of the vectors and queries, shared by every path. */
static KdStatus
flat_check_vectors(const KdVectors *set, KdMetric metric,
				   const double *queries, int64_t nq, KdError *err)
{
	KdStatus	st;

	if (set->n < 0 || nq < 0)
		return kde_set_error(err, KD_ERR_ARG, -1, "negative vector count");
	if ((st = kde_flat_check(set->coords, set->n, set->dim, set->stride,
							 metric, "vector", err)) != KD_OK)
		return st;
	return kde_flat_check(queries, nq, set->dim, set->dim, metric, "query",
						  err);
}

/*
 * The GPU's threshold counts a query against 64k coordinates as one
 * item, about what one tree query costs.
 */
static int64_t
flat_work(const KdVectors *set, int64_t nq)
{
	double		work = (double) nq * ceil((double) set->n * set->dim / 65536.0);

	return work > 1e18 ? INT64_MAX : (int64_t) work;
}

/*
 * Add a line to exec's note (after the reason the work stayed on the CPU,
 * where there is one).
 */
static void
flat_note(KdExec *exec, const char *line)
{
	size_t		used = strlen(exec->note);

	snprintf(exec->note + used, sizeof(exec->note) - used, "%s%s",
			 used ? "; " : "", line);
}

/*
 * The share of the rows a vantage-point tree's kNN searches of the first
 * FLAT_TREE_SAMPLE queries compare, over the tree of set (sample NULL) or
 * of FLAT_TREE_PILOT rows taken evenly from it (sample not NULL, which
 * costs little and foretells the whole tree's share); the tree is left in
 * *tree when sample is NULL, with the queries' answers in out and count.
 */
static KdStatus
flat_tree_share(const KdVectors *set, KdMetric metric, const double *queries,
				int k, const uint64_t *skip, KdNeighbor *out, int32_t *count,
				bool sample, KdVpTree *tree, double *share, KdExec *exec,
				KdError *err)
{
	KdVectors	pilot = *set;
	double	   *coords = NULL;
	uint64_t   *refs = NULL;
	int64_t		compared[FLAT_TREE_SAMPLE];
	int64_t		total = 0;
	KdStatus	st;

	if (sample)
	{
		pilot.n = FLAT_TREE_PILOT;
		pilot.stride = set->dim;
		coords = malloc(sizeof(double) * FLAT_TREE_PILOT * set->dim);
		refs = malloc(sizeof(uint64_t) * FLAT_TREE_PILOT);
		if (coords == NULL || refs == NULL)
		{
			free(coords);
			free(refs);
			return kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
		}
		for (int64_t i = 0; i < FLAT_TREE_PILOT; i++)
		{
			memcpy(coords + i * set->dim,
				   set->coords + (i * set->n / FLAT_TREE_PILOT) * set->stride,
				   sizeof(double) * set->dim);
			refs[i] = set->refs[i * set->n / FLAT_TREE_PILOT];
		}
		pilot.coords = coords;
		pilot.refs = refs;
	}
	if ((st = kde_vp_build_cpu(&pilot, metric, KD_VP_LEAF_ROWS, tree, exec, err)) == KD_OK)
	{
		st = kde_vp_knn(&pilot, metric, tree, queries, FLAT_TREE_SAMPLE, k,
						skip, out, count, compared, exec, err);
		if (sample)
			kde_vp_free(tree);
	}
	for (int i = 0; i < FLAT_TREE_SAMPLE; i++)
		total += compared[i];
	*share = (double) total / FLAT_TREE_SAMPLE / (double) pilot.n;
	free(coords);
	free(refs);
	return st;
}

/*
 * The CPU kNN of queries [0, nq) through a vantage-point tree of the
 * vectors, when exec asks for it (KD_TREE_ALWAYS), or when the batch is
 * large enough to pay for its build and the tree prunes (AUTO): a tree of
 * FLAT_TREE_PILOT of the rows must prune first;
 * then the whole tree answers the first FLAT_TREE_SAMPLE queries, and the
 * rest too if those compared at most FLAT_TREE_SHARE of the rows.  Sets
 * *done to the queries answered, which the flat loop leaves out.
 */
static KdStatus
flat_tree_knn(const KdVectors *set, KdMetric metric, const double *queries,
			  int64_t nq, int k, const uint64_t *skip, KdNeighbor *out,
			  int32_t *count, int64_t *done, KdExec *exec, KdError *err)
{
	KdVpTree	tree;
	double		share;
	char		line[128];
	KdStatus	st;

	*done = 0;
	if (metric == KD_METRIC_COSINE || exec->vector_tree == KD_TREE_NEVER ||
		set->n == 0 || nq == 0)
		return KD_OK;
	if (exec->vector_tree == KD_TREE_ALWAYS)
	{
		if ((st = kde_vp_build_cpu(set, metric, KD_VP_LEAF_ROWS, &tree,
								   exec, err)) != KD_OK)
			return st;
		st = kde_vp_knn(set, metric, &tree, queries, nq, k, skip, out, count,
						NULL, exec, err);
		kde_vp_free(&tree);
		*done = nq;
		if (st == KD_OK)
			flat_note(exec, "through a vantage-point tree");
		return st;
	}
	if (set->n < FLAT_TREE_MIN_ROWS || nq < FLAT_TREE_MIN_QUERIES)
		return KD_OK;
	if ((st = flat_tree_share(set, metric, queries, k, skip, out, count, true,
							  &tree, &share, exec, err)) != KD_OK)
		return st;
	if (share > FLAT_TREE_SHARE)
	{
		snprintf(line, sizeof(line),
				 "every vector (a tree of %d of the rows compared %.1f%% of them)",
				 FLAT_TREE_PILOT, 100.0 * share);
		flat_note(exec, line);
		return KD_OK;
	}
	if ((st = flat_tree_share(set, metric, queries, k, skip, out, count, false,
							  &tree, &share, exec, err)) != KD_OK)
		return st;
	*done = FLAT_TREE_SAMPLE;
	if (share <= FLAT_TREE_SHARE)
	{
		st = kde_vp_knn(set, metric, &tree, queries + FLAT_TREE_SAMPLE * set->dim,
						nq - FLAT_TREE_SAMPLE, k,
						skip ? skip + FLAT_TREE_SAMPLE : NULL,
						out + FLAT_TREE_SAMPLE * k, count + FLAT_TREE_SAMPLE,
						NULL, exec, err);
		*done = nq;
	}
	kde_vp_free(&tree);
	snprintf(line, sizeof(line), "%s (the tree's searches compared %.1f%% of the rows)",
			 *done == nq ? "through a vantage-point tree" : "every vector",
			 100.0 * share);
	if (st == KD_OK)
		flat_note(exec, line);
	return st;
}

/*
 * kNN of vectors on the CPU threads of exec: through a vantage-point
 * tree where it pays (flat_tree_knn), else every query against every
 * vector; see kdtree.h.
 */
KdStatus
kde_flat_knn_cpu(const KdVectors *set, KdMetric metric, const double *queries,
				 int64_t nq, int k, const uint64_t *skip, KdNeighbor *out,
				 int32_t *count, KdExec *exec, KdError *err)
{
	FlatBatch	b = {set, metric, FLAT_KNN, queries, nq, k, skip, out, count};
	int64_t		done;
	KdStatus	st;

	if ((st = kde_check_k(k, err)) != KD_OK ||
		(st = flat_check_vectors(set, metric, queries, nq, err)) != KD_OK ||
		(st = flat_tree_knn(set, metric, queries, nq, k, skip, out, count,
							&done, exec, err)) != KD_OK)
		return st;
	if (done == nq)
		return KD_OK;
	b.queries = queries + done * set->dim;
	b.nq = nq - done;
	b.skip = skip ? skip + done : NULL;
	b.out = out + done * k;
	b.count = count + done;
	st = flat_run(&b, FLAT_KNN, exec, err);
	free(b.norms);
	return st;
}

/*
 * Say in exec's note how the GPU answered nq queries of dim coordinates
 * under metric: through its vantage-point tree, or the tiles (the
 * filter's where it ran), with the share of the rows a tree's sample (or
 * failing that, a pilot tree's) compared where one was tried.
 */
static void
flat_gpu_note(KdExec *exec, KdMetric metric, int dim, int64_t nq,
			  const KdGpuTimes *times)
{
	const char *tiles = kde_flat_filtered(metric, dim) ?
		"float8 tensor-core filter, exact re-rank" : "every vector";
	char		line[160];

	exec->note[0] = '\0';
	if (nq > 0 && times->flat_tree == nq)
		snprintf(line, sizeof(line),
				 "through a GPU vantage-point tree (its searches compared %.1f%% of the rows)",
				 100.0 * times->flat_sampled_share / times->flat_sampled);
	else if (times->flat_sampled > 0)
		snprintf(line, sizeof(line),
				 "%s (a GPU vantage-point tree's searches compared %.1f%% of the rows)",
				 tiles, 100.0 * times->flat_sampled_share / times->flat_sampled);
	else if (times->flat_piloted > 0)
		snprintf(line, sizeof(line),
				 "%s (a pilot GPU vantage-point tree's searches compared %.1f%% of its rows)",
				 tiles, 100.0 * times->flat_piloted_share / times->flat_piloted);
	else if (kde_flat_filtered(metric, dim))
		snprintf(line, sizeof(line), "%s", tiles);
	else
		return;
	flat_note(exec, line);
}

/* Flat kNN on the device exec chooses; see kdtree.h. */
KdStatus
kde_flat_knn(const KdVectors *set, KdMetric metric, const double *queries,
			 int64_t nq, int k, const uint64_t *skip, KdNeighbor *out,
			 int32_t *count, KdExec *exec, KdError *err)
{
	KdStatus	st;

	if ((st = kde_check_k(k, err)) != KD_OK ||
		(st = flat_check_vectors(set, metric, queries, nq, err)) != KD_OK)
		return st;
	if (kde_gpu_chosen(exec, flat_work(set, nq), err, &st))
	{
		KdGpuTimes	times = {0};
		KdGpuTimes *caller = exec->times;

		exec->times = &times;
		st = kde_gpu_flat_knn(set, metric, queries, nq, k, skip, out, count,
							  exec, err);
		exec->times = caller;
		if (caller)
			kde_gpu_times_add(caller, &times);
		if (st == KD_OK)
			flat_gpu_note(exec, metric, set->dim, nq, &times);
		if (st == KD_OK || !kde_gpu_fallback(exec, st, err))
			return st;
	}
	else if (st != KD_OK)
		return st;
	return kde_flat_knn_cpu(set, metric, queries, nq, k, skip, out, count,
							exec, err);
}

/*
 * kde_flat_knn's answers through a tree of set's rows given with the share
 * of them its searches compare (an index's, kdtree.h), set's vectors
 * unchecked: the caller vouches that they are finite, as a tree's and an
 * index's are, so that a call costs what its search costs.  Where the
 * tree's work pays on the GPU (kde_vp_gpu_pays) and exec chooses the GPU
 * for it, the GPU searches the tree, or, from a provider that takes no
 * tree (the service), kde_flat_knn's GPU search answers; else the CPU
 * threads search it where the share is at most FLAT_TREE_SHARE and exec
 * does not ask for the GPU alone; exec's vector_tree ALWAYS takes it,
 * NEVER leaves it.  Else kde_flat_knn.  With keep, the GPU's search
 * keeps the tree and set on the device (tree->gpu) for the calls that
 * follow with the same set, which then copy their queries alone, and so
 * go to the GPU however small they are.
 */
KdStatus
kde_flat_knn_tree(const KdVectors *set, KdMetric metric, KdVpTree *tree,
				  double share, bool keep, const double *queries, int64_t nq,
				  int k, const uint64_t *skip, KdNeighbor *out, int32_t *count,
				  KdExec *exec, KdError *err)
{
	KdVectors	part = *set;
	int64_t		work;
	bool		always = exec->vector_tree == KD_TREE_ALWAYS;
	char		line[128];
	KdStatus	st = KD_OK;

	if (metric == KD_METRIC_COSINE || exec->vector_tree == KD_TREE_NEVER ||
		tree->nnodes == 0)
		return kde_flat_knn(set, metric, queries, nq, k, skip, out, count,
							exec, err);
	/* the shape and the queries: a tree's vectors were checked at its build */
	if ((st = kde_check_k(k, err)) != KD_OK ||
		(st = kde_flat_check(set->coords, 0, set->dim, set->stride, metric,
							 "vector", err)) != KD_OK ||
		(st = kde_flat_check(queries, nq, set->dim, set->dim, metric, "query",
							 err)) != KD_OK)
		return st;
	/* the GPU's choice counts the rows the tree's searches compare */
	part.n = (int64_t) ceil(share * set->n);
	work = flat_work(&part, nq);
	/* a tree already on the device costs a call its queries alone */
	if (keep && tree->gpu != NULL && work < exec->gpu_min_work)
		work = exec->gpu_min_work;
	if ((always || kde_vp_gpu_pays(share, metric, set->dim)) &&
		kde_gpu_chosen(exec, work, err, &st))
	{
		/* a provider that takes no tree (the service) searches its own way */
		if (!kde_gpu_searches_vp_trees())
			return kde_flat_knn(set, metric, queries, nq, k, skip, out, count,
								exec, err);
		if (keep && kde_gpu_keeps_vp_trees())
		{
			if ((st = kde_gpu_vp_keep(set, metric, tree, exec, err)) == KD_OK)
				st = kde_gpu_vp_search(tree, queries, nq, k, skip, out, count,
									   exec, err);
		}
		else
			st = kde_gpu_vp_knn(set, metric, tree, queries, nq, k, skip, out,
								count, exec, err);
		snprintf(line, sizeof(line),
				 "through the index's vantage-point tree on the GPU (its searches compare %.1f%% of the rows)",
				 100.0 * share);
		if (st == KD_OK)
			flat_note(exec, line);
		if (st == KD_OK || !kde_gpu_fallback(exec, st, err))
			return st;
	}
	else if (st != KD_OK)
		return st;
	if (exec->device == KD_DEVICE_GPU || (!always && share > FLAT_TREE_SHARE))
		return kde_flat_knn(set, metric, queries, nq, k, skip, out, count,
							exec, err);
	st = kde_vp_knn(set, metric, tree, queries, nq, k, skip, out, count, NULL,
					exec, err);
	snprintf(line, sizeof(line),
			 "through the index's vantage-point tree (its searches compare %.1f%% of the rows)",
			 100.0 * share);
	if (st == KD_OK)
		flat_note(exec, line);
	return st;
}

/* KD_OK, or the error for a radius that is not a number >= 0. */
static KdStatus
flat_check_radii(const double *radii, int64_t nradii, int64_t nq, KdError *err)
{
	if (nradii != 1 && nradii != nq)
		return kde_set_error(err, KD_ERR_ARG, -1,
							 "%lld radii for %lld queries", (long long) nradii,
							 (long long) nq);
	for (int64_t i = 0; i < nradii; i++)
		if (!(radii[i] >= 0))
			return kde_set_error(err, KD_ERR_ARG, i,
								 "radius %lld is not a number >= 0", (long long) i);
	return KD_OK;
}

/* Flat radius search on the CPU threads of exec; see kdtree.h. */
KdStatus
kde_flat_radius_cpu(const KdVectors *set, KdMetric metric,
					const double *centers, int64_t nq, const double *radii,
					int64_t nradii, KdRangeResult *res, KdExec *exec,
					KdError *err)
{
	FlatBatch	b = {set, metric, FLAT_COUNT, centers, nq};
	KdStatus	st;

	memset(res, 0, sizeof(*res));
	if ((st = flat_check_radii(radii, nradii, nq, err)) != KD_OK ||
		(st = flat_check_vectors(set, metric, centers, nq, err)) != KD_OK ||
		(st = kde_range_result_alloc(res, nq, err)) != KD_OK)
		return st;
	b.radii = radii;
	b.nradii = nradii;
	b.res = res;
	if ((st = flat_run(&b, FLAT_COUNT, exec, err)) == KD_OK &&
		(st = kde_range_result_fill_offsets(res, err)) == KD_OK)
		st = flat_run(&b, FLAT_FILL, exec, err);
	if (st != KD_OK)
		kde_range_result_free(res);
	free(b.norms);
	return st;
}

/* Parallel body: sort the hits of queries [begin, end) of the result. */
static void
sort_hits_range(void *arg, int64_t begin, int64_t end)
{
	KdRangeResult *res = arg;

	for (int64_t q = begin; q < end; q++)
		kde_sort_neighbors(res->hits + res->offsets[q],
						   res->offsets[q + 1] - res->offsets[q], false);
}

/*
 * Flat radius search on the device exec chooses; see kdtree.h.  The GPU
 * gives each query's hits in any order: they are sorted here.
 */
KdStatus
kde_flat_radius(const KdVectors *set, KdMetric metric, const double *centers,
				int64_t nq, const double *radii, int64_t nradii,
				KdRangeResult *res, KdExec *exec, KdError *err)
{
	KdStatus	st;

	memset(res, 0, sizeof(*res));
	if ((st = flat_check_radii(radii, nradii, nq, err)) != KD_OK ||
		(st = flat_check_vectors(set, metric, centers, nq, err)) != KD_OK)
		return st;
	if (kde_gpu_chosen(exec, flat_work(set, nq), err, &st))
	{
		st = kde_gpu_flat_radius(set, metric, centers, nq, radii, nradii, res,
								 exec, err);
		if (st == KD_OK)
			return kde_parallel_for(exec, nq, 256, sort_hits_range, res, err);
		if (!kde_gpu_fallback(exec, st, err))
			return st;
	}
	else if (st != KD_OK)
		return st;
	return kde_flat_radius_cpu(set, metric, centers, nq, radii, nradii, res,
							   exec, err);
}
