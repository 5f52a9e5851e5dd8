/*
 * kd_replicas.c
 *	  One batch of kNN queries spread over copies of the same tree on
 *	  several GPUs, each copy answering a contiguous share of the queries,
 *	  all at once.
 *
 * The GPU service keeps copies of a hot tree on several devices
 * (kdgpu.gpu_replicas).  Calls from different sessions already run on
 * different copies at once; this lets one large call use them all.  Each
 * copy gets an equal share of the queries in input order and answers it
 * into the matching share of the output: a copy's answer is the whole
 * tree's, so nothing is merged.  One thread drives each copy
 * (kde_parallel_devices: copies are on distinct devices, and each device
 * takes one caller at a time).
 */
#include "kd_internal.h"

typedef struct ReplicaWork
{
	KdGpuTree *const *copies;
	int64_t		share;			/* queries per copy */
	int64_t		nq;
	int			dim;
	int			k;
	const double *queries;
	KdNeighbor *out;
	int32_t    *count;
} ReplicaWork;

/* KdDeviceFn: copy c answers its share. */
static KdStatus
replica_share(void *arg, int c, const KdExec *exec, KdError *err)
{
	const ReplicaWork *w = arg;
	int64_t		from = c * w->share;
	int64_t		n = w->nq - from < w->share ? w->nq - from : w->share;

	if (n <= 0)
		return KD_OK;
	return kde_gpu_knn(w->copies[c], w->queries + from * w->dim, n, w->k,
					  w->out + from * w->k, w->count + from, exec, err);
}

/*
 * kNN of nq queries (of dim) on ncopies device copies of one tree, each on
 * its own device: query q's k neighbours at out + q * k, count[q] of them,
 * as kde_gpu_knn on any one copy gives them.  The first failure is
 * returned; GPU times are added to the caller's.
 */
KdStatus
kde_replicas_knn(KdGpuTree *const *copies, int ncopies, const double *queries,
				int64_t nq, int dim, int k, KdNeighbor *out, int32_t *count,
				KdExec *exec, KdError *err)
{
	ReplicaWork w = {copies, ncopies > 0 ? (nq + ncopies - 1) / ncopies : 0,
	nq, dim, k, queries, out, count};

	return kde_parallel_devices(exec, ncopies, replica_share, &w, err);
}
