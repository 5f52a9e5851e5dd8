/*
 * service_flat.c
 *	  The GPU service client's flat kNN (kd_gpu_abi.h's flat_knn): a
 *	  backend's vectors, their refs and its queries shipped to the service
 *	  in one call segment, searched there (KDG_OP_FLAT, service_ops.c), and
 *	  the neighbours taken back.
 *
 * Nothing of a flat search stays in the service: every call ships its
 * vectors, packed to their coordinates (a source's rows carry more), so
 * the call costs a copy of them beside the search.
 */
#include "postgres.h"

#include "service/service.h"

/*
 * flat_knn(): ship the vectors (packed), their refs and the queries, take
 * the neighbours back.
 */
KdStatus
kdg_client_flat_knn(const KdVectors *set, KdMetric metric,
					const double *queries, int64_t nq, int k,
					const uint64_t *skip, KdNeighbor *out, int32_t *count,
					const KdExec *exec, KdError *err)
{
	Size		head = MAXALIGN(sizeof(KdgCall));
	Size		vbytes = MAXALIGN(sizeof(double) * set->n * set->dim);
	Size		rbytes = MAXALIGN(sizeof(uint64) * set->n);
	Size		qbytes = MAXALIGN(sizeof(double) * nq * set->dim);
	Size		sbytes = skip ? MAXALIGN(sizeof(uint64) * nq) : 0;
	Size		obytes = MAXALIGN(sizeof(KdNeighbor) * nq * k);
	dsm_segment *seg;
	KdgCall    *call;
	KdStatus	st;
	char	   *base;

	seg = kdg_call_begin(head + vbytes + rbytes + qbytes + sbytes + obytes +
						 sizeof(int32) * nq, KDG_OP_FLAT, &call, err);
	if (seg == NULL)
		return err->code;
	base = (char *) call;
	call->n = set->n;
	call->dim = set->dim;
	call->metric = metric;
	call->nq = nq;
	call->k = k;
	call->points = head;
	call->point_refs = call->points + vbytes;
	call->in1 = call->point_refs + rbytes;
	call->skip = skip ? call->in1 + qbytes : 0;
	call->out = call->in1 + qbytes + sbytes;
	call->count = call->out + obytes;
	if (set->stride == set->dim)
		kdg_parallel_copy(base + call->points, set->coords,
						  sizeof(double) * set->n * set->dim);
	else
		for (int64 i = 0; i < set->n; i++)
			memcpy(base + call->points + sizeof(double) * i * set->dim,
				   set->coords + i * set->stride, sizeof(double) * set->dim);
	kdg_parallel_copy(base + call->point_refs, set->refs, sizeof(uint64) * set->n);
	kdg_parallel_copy(base + call->in1, queries, sizeof(double) * nq * set->dim);
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
