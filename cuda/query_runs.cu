/*
 * query_runs.cu
 *	  kNN queries at one place are walked once: runs of equal query points
 *	  in their spatial order, and each run member's answer made from its
 *	  run's.
 *
 * Design.  Two query points equal in every coordinate have the same
 * distance to every point of the tree, so they have the same k nearest
 * points: a run of equal queries needs one walk (kdc_query_runs finds the
 * runs, knn.cu walks one point of each, kdc_runs_expand copies its answer
 * to every member).  All-kNN excludes each query's own point, so there the
 * run's walk counts its own place too and finds k + 1 neighbours L, and a
 * member m's answer is L without m if m is in L, else L's first k: the k
 * best of all points but m.  (Where two points have the same coordinates
 * and the same reference, dropping either leaves the same (d2, ref) list.)
 *
 * Equal points have the same Morton code, and the sort of the codes is
 * stable, so in a spatial order of the queries (kdc_spatial_order) they
 * are adjacent unless other points share their code; such a run is then
 * split, which costs walks, not exactness.  Data with many copies
 * of each place (addresses of one building, points snapped to a grid)
 * then walks once per place rather than once per point, and those are the
 * long walks: every copy of the place ties at distance 0.  Every batch
 * first compares a sample of adjacent pairs of queries; where many are
 * equal, one pass and one scan over the queries number the runs, and
 * only where at most half the queries head one are they used (for
 * All-kNN's order in segments, found again over one order of all the
 * queries, see kdc_query_runs).
 */
#include <cub/cub.cuh>

#include "common.cuh"

/*
 * Pairs of adjacent queries sampled before looking for runs: where fewer
 * than a quarter are equal, fewer than half the queries could share a walk.
 */
#define RUNS_SAMPLE 65536

/* Whether the query at position i of order (i > 0) equals the one before. */
static __device__ __forceinline__ bool
runs_repeats(const double *qpts, const uint32_t *order, int64_t i, int dim)
{
	const double *a = qpts + (int64_t) order[i] * dim;
	const double *b = qpts + (int64_t) order[i - 1] * dim;
	bool		same = true;

	for (int j = 0; j < dim; j++)
		same &= a[j] == b[j];
	return same;
}

/* run[i] = 1 where the query at position i of order differs from the one before. */
static __global__ void
runs_mark_kernel(const double *qpts, const uint32_t *order, int64_t m, int dim,
				 uint32_t *run)
{
	int64_t		i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;

	if (i < m)
		run[i] = i == 0 || !runs_repeats(qpts, order, i, dim);
}

/*
 * Count into *equal the pairs of adjacent equal queries in order among
 * nsample pairs, every stride-th: a cheap estimate of how many queries
 * would not head a run.
 */
static __global__ void
runs_sample_kernel(const double *qpts, const uint32_t *order, int64_t nsample,
				   int64_t stride, int dim, unsigned int *equal)
{
	int64_t		s = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;

	if (s < nsample && runs_repeats(qpts, order, 1 + s * stride, dim))
		atomicAdd(equal, 1u);
}

/*
 * For each run of order (numbered from 1 in run): its first query's point
 * to heads[run - 1], and the run's number to run_of[query] for each query.
 */
static __global__ void
runs_index_kernel(const double *qpts, const uint32_t *order, const uint32_t *run,
				  int64_t m, int dim, double *heads, uint32_t *run_of)
{
	int64_t		i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;

	if (i >= m)
		return;
	run_of[order[i]] = run[i];
	if (i > 0 && run[i] == run[i - 1])
		return;
	for (int j = 0; j < dim; j++)
		heads[(int64_t) (run[i] - 1) * dim + j] = qpts[(int64_t) order[i] * dim + j];
}

/*
 * Slot t % k of the answer of query start + t / k, from its run's answer
 * (run_of, head_res; see kdc_runs_expand): one thread a slot, so that a
 * warp writes whole answers, one after the other.
 */
static __global__ void
runs_expand_kernel(const uint32_t *run_of, const KdNeighbor *head_res,
				   int head_k, int64_t start, int64_t count, int k, int cnt,
				   const uint64_t *self_refs, KdNeighbor *res)
{
	int64_t		t = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
	int64_t		qi = start + t / k;
	int			slot = (int) (t % k);
	const KdNeighbor *src;
	int			from = slot;

	if (t >= count * k || slot >= cnt)
		return;
	src = head_res + (int64_t) (run_of[qi] - 1) * head_k;
	if (self_refs != NULL)
	{
		/* skip the query's own entry if it is at or before this slot */
		uint64_t	self = self_refs[qi];

		for (int c = 0; c <= slot; c++)
			if (src[c].d2 == 0.0 && src[c].ref == self)
			{
				from = slot + 1;
				break;
			}
	}
	res[qi * k + slot] = src[from];
}

/*
 * Number the runs of equal points among the m queries of qpts in the
 * order of order into run (from 1, per position) and their count into
 * *nheads, with temp_bytes of scan space at temp.
 */
static cudaError_t
runs_count(const double *qpts, const uint32_t *order, int64_t m, int dim,
		   void *temp, size_t temp_bytes, uint32_t *run, uint32_t *nheads)
{
	cudaError_t e;

	runs_mark_kernel <<< kdc_blocks(m), KDC_BLOCK >>> (qpts, order, m, dim, run);
	e = cub::DeviceScan::InclusiveSum(temp, temp_bytes, run, run, m);
	if (e == cudaSuccess)
		e = cudaMemcpy(nheads, run + m - 1, sizeof(uint32_t), cudaMemcpyDeviceToHost);
	return e;
}

/*
 * Whether nheads runs among m queries are worth walking (at most half the
 * queries head one) and their arrays, with reserve bytes more, fit in room
 * bytes; head_k neighbours a run, dim coordinates a point.
 */
static bool
runs_pay(int64_t nheads, int64_t m, int dim, int head_k, size_t reserve,
		 size_t room)
{
	size_t		need = reserve + ((size_t) dim * sizeof(double) +
								  (size_t) head_k * sizeof(KdNeighbor)) * nheads;

	return nheads * 2 <= m && need <= room;
}

/*
 * Find the runs of equal points among the m queries qpts (dim coordinates
 * each), given their order (kdc_spatial_order, in segments of segment
 * queries if that is above 0).  If at most half the queries of order head
 * a run and the runs' arrays fit in room bytes, fill runs (nheads > 0),
 * allocated in a; else set runs->nheads to 0 (walk every query).  In
 * segments, copies of a place are apart, and a walk of each copy in its
 * segment would cost about what walks of all copies cost (a warp's lanes
 * on one path share their loads): the runs are then found again over one
 * spatial order of all the queries.  head_k is the number of neighbours a
 * run's walk will keep.  The device's time is added to exec->times.
 */
KdStatus
kdc_query_runs(const double *qpts, const uint32_t *order, int64_t m, int dim,
			   int64_t segment, int head_k, size_t room, KdcAllocs *a,
			   KdcRuns *runs, const KdExec *exec, KdError *err)
{
	uint32_t	nheads = 0;
	unsigned int equal = 0;
	unsigned int *d_equal;
	int64_t		nsample;
	void	   *d_temp = NULL;
	size_t		temp_bytes = 0;
	size_t		run_bytes = sizeof(uint32_t) * (size_t) m;
	size_t		reserve;
	uint32_t   *run;
	uint32_t   *all_order = NULL;
	cudaEvent_t ev[2];
	float		ms = 0;
	KdStatus	st = KD_OK;
	cudaError_t e;

	runs->nheads = 0;
	if (m < 2 || m > UINT32_MAX)
		return KD_OK;
	if ((st = kdc_alloc(a, (void **) &d_equal, sizeof(unsigned int), "a count", err)) != KD_OK ||
		(st = kdc_event_pair(ev, err)) != KD_OK)
		return st;
	cudaEventRecord(ev[0]);
	nsample = m - 1 < RUNS_SAMPLE ? m - 1 : RUNS_SAMPLE;
	e = cudaMemsetAsync(d_equal, 0, sizeof(unsigned int));
	if (e == cudaSuccess)
	{
		runs_sample_kernel <<< kdc_blocks(nsample), KDC_BLOCK >>>
			(qpts, order, nsample, (m - 1) / nsample, dim, d_equal);
		e = cudaMemcpy(&equal, d_equal, sizeof(unsigned int), cudaMemcpyDeviceToHost);
	}
	if (e != cudaSuccess || (int64_t) equal * 4 < nsample)
		goto done;

	/* number the runs of order, and keep them if they pay */
	e = cub::DeviceScan::InclusiveSum(NULL, temp_bytes, (uint32_t *) NULL,
									  (uint32_t *) NULL, m);
	if (e != cudaSuccess || run_bytes + temp_bytes > room)
		goto done;
	room -= run_bytes + temp_bytes;
	if ((st = kdc_alloc(a, (void **) &run, run_bytes, "query runs", err)) != KD_OK ||
		(st = kdc_alloc(a, &d_temp, temp_bytes, "scan space", err)) != KD_OK)
		goto done;
	e = runs_count(qpts, order, m, dim, d_temp, temp_bytes, run, &nheads);
	reserve = run_bytes + (segment > 0 ? KDC_ORDER_BYTES(m) + run_bytes : 0);
	if (e != cudaSuccess || !runs_pay(nheads, m, dim, head_k, reserve, room))
		goto done;
	if (segment > 0)
	{
		if ((st = kdc_alloc(a, (void **) &all_order, sizeof(uint32_t) * m,
							"query order", err)) != KD_OK ||
			(st = kdc_spatial_order(qpts, m, dim, 0, all_order, a, err)) != KD_OK)
			goto done;
		order = all_order;
		e = runs_count(qpts, order, m, dim, d_temp, temp_bytes, run, &nheads);
		if (e != cudaSuccess || !runs_pay(nheads, m, dim, head_k, reserve, room))
			goto done;
	}
	if ((st = kdc_alloc(a, (void **) &runs->run_of, run_bytes, "query runs", err)) != KD_OK ||
		(st = kdc_alloc(a, (void **) &runs->heads, sizeof(double) * dim * (size_t) nheads,
						"run points", err)) != KD_OK ||
		(st = kdc_alloc(a, (void **) &runs->head_res,
						sizeof(KdNeighbor) * head_k * (size_t) nheads,
						"run answers", err)) != KD_OK)
		goto done;
	runs_index_kernel <<< kdc_blocks(m), KDC_BLOCK >>> (qpts, order, run, m, dim,
														runs->heads, runs->run_of);
	runs->nheads = nheads;
	runs->head_k = head_k;
done:
	cudaEventRecord(ev[1]);
	if (e == cudaSuccess)
		e = cudaEventSynchronize(ev[1]);
	if (e == cudaSuccess)
		e = cudaGetLastError();
	if (e == cudaSuccess)
		e = cudaEventElapsedTime(&ms, ev[0], ev[1]);
	cudaEventDestroy(ev[0]);
	cudaEventDestroy(ev[1]);
	if (e != cudaSuccess)
	{
		runs->nheads = 0;
		return kdc_cuda_error(err, e, "finding equal queries");
	}
	if (exec && exec->times)
		exec->times->kernel_ms += ms;
	if (st != KD_OK)
		runs->nheads = 0;
	return st;
}

/*
 * Enqueue the answers of queries [start, start + count), k slots each at
 * res + query * k, from their runs' answers (runs->head_res, runs->head_k
 * slots a run, cnt of them valid per query).  self_refs, where not NULL,
 * holds each query's own reference: All-kNN, whose runs' answers count
 * their own place (head_k = k + 1).
 */
void
kdc_runs_expand(const KdcRuns *runs, int64_t start, int64_t count, int k,
				int cnt, const uint64_t *self_refs, KdNeighbor *res)
{
	runs_expand_kernel <<< kdc_blocks(count * k), KDC_BLOCK >>>
		(runs->run_of, runs->head_res, runs->head_k, start, count, k, cnt,
		 self_refs, res);
}
