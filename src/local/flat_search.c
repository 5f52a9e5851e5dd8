/*
 * flat_search.c
 *	  kNN and radius answers over vectors with no kd-tree (the engine's
 *	  kde_flat_knn, kde_flat_knn_tree and kde_flat_radius), for float8[]
 *	  columns of more than KD_MAX_DIM coordinates and for the metrics the
 *	  kd-tree does not walk (kdgpu.h: KdSource.metric).
 *
 * The engine is given the source's rows in place (their coordinates lead
 * each row) and the rows' own refs (kdg_row_ref), so its tie-break by ref
 * is the answers' and its distances are the SQL operators' bit for bit
 * (kd_metric.h): its answers need no re-ranking.  Rows taken from an index
 * are named by their HOT chain's root, which the engine ranks by instead,
 * so as not to read every heap page for the rows' own TIDs: each answer's
 * refs are then mapped to the rows' own (hot_chains.c) and ranked again,
 * and a kNN query asks for one neighbour more than it needs, and more
 * again until its k-th distance is below the last one it was given, so
 * that no row tying the k-th is left out.  A source with a kdvec index's
 * tree (vector_source.c) is searched through it where the engine finds it
 * pays; where the tree and rows are a kept copy's, the GPU keeps them for
 * the calls that follow.  All-kNN asks each row for its k nearest other
 * rows by skipping the row's own ref.  Under cosine distance a row or
 * query with no direction (a zero vector) is an error that names it,
 * raised before the search.
 */
#include "postgres.h"

#include <math.h>

#include "local/local.h"

/* Whether src's kNN searches run flat (see the top of this file). */
bool
kdg_source_flat(const KdSource *src)
{
	return src->dim > KD_MAX_DIM || src->metric != KD_METRIC_L2;
}

/* Under cosine distance, error unless every row of src has a direction. */
static void
check_rows_cosine(const KdSource *src)
{
	KdWhere		where = {NULL, 0};

	if (src->metric != KD_METRIC_COSINE)
		return;
	where.relid = src->relid;
	for (int64 i = 0; i < src->n; i++)
	{
		const double *v = kdg_row_coords(src, i);
		double		norm = 0.0;

		for (int j = 0; j < src->dim; j++)
			norm += v[j] * v[j];
		if (norm > 0.0 && isfinite(norm))
			continue;
		kdg_ref_to_tid(kdg_row_tid(src, i), &where.tid);
		kdg_check_cosine(v, src->dim, &where);
	}
}

/*
 * Whether the engine ranks src's rows by their HOT chains' roots, which
 * the answers map to the rows' own TIDs (see the top of the file).
 */
static bool
flat_roots(const KdSource *src)
{
	return src->hot != NULL && src->keyattnum == InvalidAttrNumber;
}

/* The ref the engine ranks row i of src by. */
static uint64
flat_ref(const KdSource *src, int64 i)
{
	return flat_roots(src) ? src->refbase | kdg_row_tid(src, i) :
		kdg_row_ref(src, i);
}

/* Map n hits' refs from their roots to the rows' own, and sort them. */
static void
flat_own_refs(const KdSource *src, KdHit *hits, int64 n)
{
	uint64		tidmask = (UINT64CONST(1) << KD_PART_SHIFT) - 1;

	for (int64 i = 0; i < n; i++)
		hits[i].ref = src->refbase |
			kdg_hot_tid(src->hot, hits[i].ref & tidmask);
	kdg_sort_hits(hits, n);
}

/*
 * The engine's view of src's rows in place (set), their refs palloc'd
 * (the caller frees set->refs).
 */
static void
flat_vectors(const KdSource *src, KdVectors *set)
{
	uint64	   *refs = palloc_extended(sizeof(uint64) * src->n, MCXT_ALLOC_HUGE);

	for (int64 i = 0; i < src->n; i++)
		refs[i] = flat_ref(src, i);
	set->n = src->n;
	set->dim = src->dim;
	set->stride = src->stride;
	set->coords = kdg_row_coords(src, 0);
	set->refs = refs;
}

/* What kd_status() says a flat search of src was. */
static void
flat_what(const KdSource *src, const char *kind, char *what, size_t len)
{
	snprintf(what, len, "flat %s search (%s distance, %d dimensions)", kind,
			 kde_metric_name(src->metric), src->dim);
}

/*
 * The engine's kk nearest rows of set to each of nq queries (skip as
 * flat_knn's), through src's index tree where it has one, into raw and
 * count.
 */
static void
flat_engine_knn(const KdSource *src, const KdVectors *set,
				const double *queries, int64 nq, int kk, const uint64 *skip,
				KdNeighbor *raw, int32 *count)
{
	KdExec		exec;
	KdError		err;
	KdStatus	st;
	char		what[96];

	kdg_exec_prepare(&exec);
	if (src->vp_tree)
		st = kde_flat_knn_tree(set, src->metric, src->vp_tree, src->vp_share,
							   src->vp_kept, queries, nq, kk, skip, raw, count,
							   &exec, &err);
	else
		st = kde_flat_knn(set, src->metric, queries, nq, kk, skip, raw, count,
						  &exec, &err);
	flat_what(src, "kNN", what, sizeof(what));
	kdg_check_status(st, &err, &exec, what);
}

/*
 * The k nearest rows of src to each of nq queries (src->dim coordinates
 * each), exact; with skip (refs as flat_ref's), query q never takes the
 * row whose ref is skip[q].  Where the engine ranks by roots, queries
 * whose k-th distance ties the last of those it was given ask again for
 * twice as many (see the top of the file).
 */
static KdAnswer *
flat_knn(const KdSource *src, const double *queries, int64 nq, int k,
		 const uint64 *skip)
{
	KdVectors	set;
	KdHit	   *hits;
	int32	   *count;
	int64	   *todo;
	int64		ntodo = nq;
	int64		kk = Min((int64) k + 1, src->n);

	if (nq == 0 || src->n == 0)
		return kdg_empty_answer(nq);
	kk = Max(kk, k);
	check_rows_cosine(src);
	kdg_check_answer_memory(nq, k, "a kNN search");
	flat_vectors(src, &set);
	hits = palloc_extended(sizeof(KdHit) * nq * k, MCXT_ALLOC_HUGE);
	count = palloc_extended(sizeof(int32) * nq, MCXT_ALLOC_HUGE);
	if (!flat_roots(src))
	{
		/* the engine's answers are final: a KdNeighbor is a KdHit */
		flat_engine_knn(src, &set, queries, nq, k, skip, (KdNeighbor *) hits,
						count);
		pfree((void *) set.refs);
		return kdg_knn_answer(hits, count, nq, k);
	}
	todo = palloc_extended(sizeof(int64) * nq, MCXT_ALLOC_HUGE);
	for (int64 q = 0; q < nq; q++)
		todo[q] = q;
	while (ntodo > 0)
	{
		bool		all = ntodo == nq;
		double	   *qs = all ? (double *) queries :
			palloc_extended(sizeof(double) * src->dim * ntodo, MCXT_ALLOC_HUGE);
		uint64	   *sk = all || skip == NULL ? (uint64 *) skip :
			palloc_extended(sizeof(uint64) * ntodo, MCXT_ALLOC_HUGE);
		KdNeighbor *raw;
		int32	   *got;
		int64		left = 0;

		kdg_check_answer_memory(ntodo, (int) Min(kk, PG_INT32_MAX), "a kNN search");
		raw = palloc_extended(sizeof(KdNeighbor) * ntodo * kk, MCXT_ALLOC_HUGE);
		got = palloc_extended(sizeof(int32) * ntodo, MCXT_ALLOC_HUGE);
		for (int64 i = 0; !all && i < ntodo; i++)
		{
			memcpy(qs + i * src->dim, queries + todo[i] * src->dim,
				   sizeof(double) * src->dim);
			if (sk)
				sk[i] = skip[todo[i]];
		}
		flat_engine_knn(src, &set, qs, ntodo, (int) kk, sk, raw, got);
		for (int64 i = 0; i < ntodo; i++)
		{
			KdHit	   *h = (KdHit *) (raw + i * kk);
			int64		q = todo[i];

			flat_own_refs(src, h, got[i]);
			if (got[i] == kk && kk > k && kk < src->n &&
				h[k - 1].dist == h[kk - 1].dist)
			{
				todo[left++] = q;
				continue;
			}
			count[q] = Min(got[i], k);
			memcpy(hits + q * k, h, sizeof(KdHit) * count[q]);
		}
		if (!all)
			pfree(qs);
		if (sk && sk != skip)
			pfree(sk);
		pfree(raw);
		pfree(got);
		ntodo = left;
		kk = Min(kk * 2, src->n);
	}
	pfree((void *) set.refs);
	pfree(todo);
	return kdg_knn_answer(hits, count, nq, k);
}

/* The k nearest rows of src to each of nq queries, exact. */
KdAnswer *
kdg_flat_search_knn(const KdSource *src, const double *queries, int64 nq, int k)
{
	return flat_knn(src, queries, nq, k, NULL);
}

/*
 * All-kNN over rows from .. from + nq - 1 of src: answer q is row from +
 * q's k nearest rows, itself left out unless include_self.
 */
KdAnswer *
kdg_flat_search_all_knn(const KdSource *src, int k, bool include_self,
						int64 from, int64 nq)
{
	double	   *queries;
	uint64	   *self = NULL;

	if (nq == 0)
		return kdg_empty_answer(0);
	queries = palloc_extended(sizeof(double) * src->dim * nq, MCXT_ALLOC_HUGE);
	if (!include_self)
		self = palloc_extended(sizeof(uint64) * nq, MCXT_ALLOC_HUGE);
	for (int64 q = 0; q < nq; q++)
	{
		memcpy(queries + q * src->dim, kdg_row_coords(src, from + q),
			   sizeof(double) * src->dim);
		if (self)
			self[q] = flat_ref(src, from + q);
	}
	return flat_knn(src, queries, nq, k, self);
}

/*
 * The rows of src within radii (nradii: 1, or one per centre) of each of
 * nq centres, exact, each centre's by (distance, ref).
 */
KdAnswer *
kdg_flat_search_radius(const KdSource *src, const double *centers, int64 nq,
					   const double *radii, int64 nradii)
{
	KdVectors	set;
	KdRangeResult *res;
	KdAnswer   *ans;
	KdExec		exec;
	KdError		err;
	KdStatus	st;
	char		what[96];

	if (nq == 0 || src->n == 0)
		return kdg_empty_answer(nq);
	check_rows_cosine(src);
	flat_vectors(src, &set);
	res = kdg_range_result_new();
	kdg_exec_prepare(&exec);
	st = kde_flat_radius(&set, src->metric, centers, nq, radii, nradii, res,
						 &exec, &err);
	flat_what(src, "radius", what, sizeof(what));
	kdg_check_status(st, &err, &exec, what);
	pfree((void *) set.refs);
	ans = palloc0(sizeof(KdAnswer));
	ans->nq = nq;
	ans->offsets = palloc_extended(sizeof(int64) * (nq + 1), MCXT_ALLOC_HUGE);
	memcpy(ans->offsets, res->offsets, sizeof(int64) * (nq + 1));
	ans->hits = palloc_extended(sizeof(KdHit) * Max(res->offsets[nq], 1), MCXT_ALLOC_HUGE);
	/* a KdNeighbor's (distance, ref) is a KdHit's */
	kdg_parallel_copy(ans->hits, res->hits, sizeof(KdHit) * res->offsets[nq]);
	kde_range_result_free(res);
	for (int64 q = 0; flat_roots(src) && q < nq; q++)
		flat_own_refs(src, ans->hits + ans->offsets[q],
					  ans->offsets[q + 1] - ans->offsets[q]);
	return ans;
}
