/*
 * service_flat.c
 *	  The GPU service client's flat searches (kd_gpu_abi.h's flat_knn and
 *	  flat_radius): a backend's vectors, their refs and its queries shipped
 *	  to the service in one call segment, searched there (KDG_OP_FLAT and
 *	  KDG_OP_FLAT_RADIUS, service_ops.c), and the answers taken back.
 *
 * Nothing of a flat search stays in the service: every call ships its
 * vectors, packed to their coordinates (a source's rows carry more), so
 * the call costs a copy of them beside the search.  Radius hits come back
 * in a segment of their own, as a tree's do (kdg_take_range).
 */
#include "postgres.h"

#include "service/service.h"

/*
 * Begin a call of op with room for set's vectors and refs, nq queries,
 * and more bytes after them, and copy the vectors, refs and queries in;
 * *at is the offset of the room after the queries.  NULL when no segment
 * was made (err says why).
 */
static dsm_segment *
flat_call_begin(KdgOp op, const KdVectors *set, KdMetric metric,
				const double *queries, int64_t nq, Size more, KdgCall **callp,
				Size *at, KdError *err)
{
	Size		head = MAXALIGN(sizeof(KdgCall));
	Size		vbytes = MAXALIGN(sizeof(double) * set->n * set->dim);
	Size		rbytes = MAXALIGN(sizeof(uint64) * set->n);
	Size		qbytes = MAXALIGN(sizeof(double) * nq * set->dim);
	dsm_segment *seg;
	KdgCall    *call;
	char	   *base;

	seg = kdg_call_begin(head + vbytes + rbytes + qbytes + more, op, callp, err);
	if (seg == NULL)
		return NULL;
	call = *callp;
	base = (char *) call;
	call->n = set->n;
	call->dim = set->dim;
	call->metric = metric;
	call->nq = nq;
	call->points = head;
	call->point_refs = call->points + vbytes;
	call->in1 = call->point_refs + rbytes;
	*at = call->in1 + qbytes;
	if (set->stride == set->dim)
		kdg_parallel_copy(base + call->points, set->coords,
						  sizeof(double) * set->n * set->dim);
	else
		for (int64 i = 0; i < set->n; i++)
			memcpy(base + call->points + sizeof(double) * i * set->dim,
				   set->coords + i * set->stride, sizeof(double) * set->dim);
	kdg_parallel_copy(base + call->point_refs, set->refs, sizeof(uint64) * set->n);
	kdg_parallel_copy(base + call->in1, queries, sizeof(double) * nq * set->dim);
	return seg;
}

/* flat_knn(): ship the vectors and queries, take the neighbours back. */
KdStatus
kdg_client_flat_knn(const KdVectors *set, KdMetric metric,
					const double *queries, int64_t nq, int k,
					const uint64_t *skip, KdNeighbor *out, int32_t *count,
					const KdExec *exec, KdError *err)
{
	Size		sbytes = skip ? MAXALIGN(sizeof(uint64) * nq) : 0;
	Size		obytes = MAXALIGN(sizeof(KdNeighbor) * nq * k);
	Size		at;
	dsm_segment *seg;
	KdgCall    *call;
	KdStatus	st;
	char	   *base;

	seg = flat_call_begin(KDG_OP_FLAT, set, metric, queries, nq,
						  sbytes + obytes + sizeof(int32) * nq, &call, &at, err);
	if (seg == NULL)
		return err->code;
	base = (char *) call;
	call->k = k;
	call->skip = skip ? at : 0;
	call->out = at + sbytes;
	call->count = call->out + obytes;
	if (skip)
		memcpy(base + call->skip, skip, sizeof(uint64) * nq);
	st = kdg_call_run(seg, call, exec, err);
	if (st == KD_OK)
	{
		kdg_parallel_copy(out, base + call->out, sizeof(KdNeighbor) * nq * k);
		memcpy(count, base + call->count, sizeof(int32) * nq);
	}
	kdg_call_end(seg);
	return st;
}

/* flat_radius(): ship the vectors, centres and radii, take the hits back. */
KdStatus
kdg_client_flat_radius(const KdVectors *set, KdMetric metric,
					   const double *centers, int64_t nq, const double *radii,
					   int64_t nradii, KdRangeResult *res, const KdExec *exec,
					   KdError *err)
{
	Size		at;
	dsm_segment *seg;
	KdgCall    *call;
	KdStatus	st;

	seg = flat_call_begin(KDG_OP_FLAT_RADIUS, set, metric, centers, nq,
						  sizeof(double) * nradii, &call, &at, err);
	if (seg == NULL)
		return err->code;
	call->nradii = nradii;
	call->in2 = at;
	memcpy((char *) call + call->in2, radii, sizeof(double) * nradii);
	st = kdg_call_run(seg, call, exec, err);
	if (st == KD_OK)
		st = kdg_take_range(call, nq, res, err);
	kdg_call_end(seg);
	return st;
}
