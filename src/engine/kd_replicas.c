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
 * tree's, so nothing is merged.  One host thread drives each copy (copies
 * are on distinct devices, and each device takes one caller at a time,
 * kd_gpu_abi.h); the threads run with the caller's plan less its
 * interrupt callback, which only the calling thread polls, as in
 * kd_split.c.
 */
#include <string.h>

#include "kd_internal.h"

/* copies one batch is spread over, at most */
#define KD_REPLICAS_MAX 16

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
	KdExec		exec[KD_REPLICAS_MAX];
	KdGpuTimes	times[KD_REPLICAS_MAX];
	KdStatus	st[KD_REPLICAS_MAX];
	KdError		err[KD_REPLICAS_MAX];
} ReplicaWork;

/* Parallel body: copies [begin, end) answer their shares. */
static void
replica_body(void *arg, int64_t begin, int64_t end)
{
	ReplicaWork *w = arg;

	for (int64_t c = begin; c < end; c++)
	{
		int64_t		from = c * w->share;
		int64_t		n = w->nq - from < w->share ? w->nq - from : w->share;

		if (n > 0)
			w->st[c] = kd_gpu_knn(w->copies[c], w->queries + from * w->dim, n,
								  w->k, w->out + from * w->k, w->count + from,
								  &w->exec[c], &w->err[c]);
	}
}

/*
 * kNN of nq queries (of dim) on ncopies device copies of one tree, each on
 * its own device: query q's k neighbours at out + q * k, count[q] of them,
 * as kd_gpu_knn on any one copy gives them.  The first failure is
 * returned; GPU times are added to the caller's.
 */
KdStatus
kd_replicas_knn(KdGpuTree *const *copies, int ncopies, const double *queries,
				int64_t nq, int dim, int k, KdNeighbor *out, int32_t *count,
				KdExec *exec, KdError *err)
{
	ReplicaWork w;
	KdExec		loop = *exec;
	KdStatus	st;

	if (ncopies < 1 || ncopies > KD_REPLICAS_MAX)
		return kd_set_error(err, KD_ERR_ARG, -1, "%d copies to spread a batch over (1 to %d)",
							ncopies, KD_REPLICAS_MAX);
	memset(&w, 0, sizeof(w));
	w.copies = copies;
	w.share = (nq + ncopies - 1) / ncopies;
	w.nq = nq;
	w.dim = dim;
	w.k = k;
	w.queries = queries;
	w.out = out;
	w.count = count;
	for (int c = 0; c < ncopies; c++)
	{
		w.exec[c] = *exec;
		w.exec[c].interrupt = NULL;
		w.exec[c].times = &w.times[c];
	}
	loop.threads = ncopies;
	st = kd_parallel_for(&loop, ncopies, 1, replica_body, &w, err);
	for (int c = 0; c < ncopies; c++)
	{
		if (exec->times)
			exec->times->kernel_ms += w.times[c].kernel_ms;
		if (st == KD_OK && w.st[c] != KD_OK)
		{
			*err = w.err[c];
			st = w.st[c];
		}
	}
	if (st == KD_OK)
		exec->used_gpu = true;
	return st;
}
