/*
 * flat_search.c
 *	  kNN and radius answers over vectors with no tree: every query
 *	  compared with every row of the source (the engine's kde_flat_knn and
 *	  kde_flat_radius), for float8[] columns of more than KD_MAX_DIM
 *	  coordinates and for the metrics the kd-tree does not walk (kdgpu.h:
 *	  KdSource.metric).
 *
 * The engine is given the source's rows in place (their coordinates lead
 * each row) and the rows' own refs (kdg_row_ref), so its tie-break by ref
 * is the answers' and its distances are the SQL operators' bit for bit
 * (kd_metric.h): its answers need no re-ranking.  All-kNN asks each row
 * for its k nearest other rows by skipping the row's own ref.  Under cosine
 * distance a row or query with no direction (a zero vector) is an error
 * that names it, raised before the search.
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
 * The engine's view of src's rows in place (set), their refs palloc'd
 * (the caller frees set->refs).
 */
static void
flat_vectors(const KdSource *src, KdVectors *set)
{
	uint64	   *refs = palloc_extended(sizeof(uint64) * src->n, MCXT_ALLOC_HUGE);

	for (int64 i = 0; i < src->n; i++)
		refs[i] = kdg_row_ref(src, i);
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
 * The k nearest rows of src to each of nq queries (src->dim coordinates
 * each), exact; with skip, query q never takes the row whose ref is
 * skip[q].
 */
static KdAnswer *
flat_knn(const KdSource *src, const double *queries, int64 nq, int k,
		 const uint64 *skip)
{
	KdVectors	set;
	KdNeighbor *raw;
	int32	   *count;
	KdExec		exec;
	KdError		err;
	KdStatus	st;
	char		what[96];

	if (nq == 0 || src->n == 0)
		return kdg_empty_answer(nq);
	check_rows_cosine(src);
	kdg_check_answer_memory(nq, k, "a kNN search");
	flat_vectors(src, &set);
	raw = palloc_extended(sizeof(KdNeighbor) * nq * k, MCXT_ALLOC_HUGE);
	count = palloc_extended(sizeof(int32) * nq, MCXT_ALLOC_HUGE);
	kdg_exec_prepare(&exec);
	st = kde_flat_knn(&set, src->metric, queries, nq, k, skip, raw, count,
					  &exec, &err);
	flat_what(src, "kNN", what, sizeof(what));
	kdg_check_status(st, &err, &exec, what);
	pfree((void *) set.refs);
	return kdg_knn_answer((KdHit *) raw, count, nq, k);
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
			self[q] = kdg_row_ref(src, from + q);
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
	return ans;
}
