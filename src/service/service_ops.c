/*
 * service_ops.c
 *	  The GPU service's operations: one function per kind of call.
 *
 * kdg_serve runs (a slice of) a call on the copies of service_copies.c and
 * sets its reply.  A kNN call of many queries is served a slice
 * (KDG_SLICE_QUERIES) at a time, so that it goes back in line after each;
 * every other call runs whole.  The engine polls call_interrupted during
 * long work, which stops it when the caller has given up or exited, or the
 * service is stopping.
 */
#include "postgres.h"

#include <signal.h>
#include <unistd.h>

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "engine/kd_error.h"
#include "core/core.h"
#include "service.h"

/* versions given to trees built from rows */
static uint64 built_versions;

/* Engine interrupt callback: stop when the caller gave up or the service must. */
static int
call_interrupted(void *arg)
{
	KdgSlot    *slot = &kdg_service->slots[(int) (intptr_t) arg];

	return slot->state == KDG_SLOT_ABANDONED || kdg_pid_gone(slot->pid) ||
		ProcDiePending || kdg_service_stopping;
}

/* Put a range result in a pinned segment of its own, named in the reply. */
KdStatus
kdg_reply_range(KdgCall *call, KdRangeResult *res, KdError *err)
{
	Size		offsets = sizeof(int64) * (res->nq + 1);
	Size		hits = sizeof(KdNeighbor) * res->offsets[res->nq];
	dsm_segment *seg = dsm_create(offsets + hits + 1,
								  DSM_CREATE_NULL_IF_MAXSEGMENTS);
	char	   *p;

	if (seg == NULL)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
							"the kdgpu GPU service found no free shared memory segment for a result");
	p = dsm_segment_address(seg);
	/* fresh shared memory: its page faults are taken on several threads */
	kdg_parallel_copy(p, res->offsets, offsets);
	kdg_parallel_copy(p + offsets, res->hits, hits);
	dsm_pin_segment(seg);
	call->range = dsm_segment_handle(seg);
	dsm_detach(seg);
	return KD_OK;
}

/*
 * ACQUIRE: look up a copy by name (and rows), and take its references when
 * the call asks for them; *ep is the entry found, or -1.
 */
static KdStatus
serve_acquire(KdgCall *call, int *ep)
{
	char	   *base = (char *) call;
	int			e;

	/* a tree built from rows read is found only by its rows */
	e = call->key[3] == KDG_KEY_BUILT + 1 && !call->any_version ? -1 :
		kdg_entry_named(call->key, call->any_version);
	if (e >= 0 && call->in1 && !kdg_call_rows_fit(e, call))
		e = -1;
	call->missing = e < 0;
	call->has_rows = e >= 0 && kdg_held.rows[e] != NULL;
	if (e >= 0 && call->in1 && call->out)
		memcpy(base + call->out, kdg_held.ranks[e], sizeof(uint64) * call->ntree);
	if (e >= 0)
	{
		SpinLockAcquire(&kdg_service->mutex);
		kdg_service->resident[e].last_use = GetCurrentTimestamp();
		SpinLockRelease(&kdg_service->mutex);
		call->resident_out = e;
		call->version_out = kdg_service->resident[e].version;
	}
	*ep = e;
	return KD_OK;
}

/* ROWS: keep the rows, references and points of a copy just uploaded. */
static KdStatus
serve_rows(KdgCall *call, int *ep)
{
	char	   *base = (char *) call;
	int			e;

	e = call->resident;
	if (e >= 0 && e < KDG_RESIDENT_MAX && kdg_service->resident[e].used &&
		kdg_service->resident[e].version == call->version && kdg_held.rows[e] == NULL &&
		kdg_service->resident[e].n == call->n)
	{
		Size		pbytes = sizeof(double) * call->dim * Max(call->n, 1);

		kdg_held.rows[e] = malloc(sizeof(uint64) * Max(call->n, 1));
		kdg_held.ranks[e] = malloc(sizeof(uint64) * Max(call->n, 1));
		kdg_held.points[e] = call->points ? malloc(pbytes) : NULL;
		if (kdg_held.rows[e] && kdg_held.ranks[e] && (kdg_held.points[e] || !call->points))
		{
			memcpy(kdg_held.rows[e], base + call->in1, sizeof(uint64) * call->n);
			memcpy(kdg_held.ranks[e], base + call->in2, sizeof(uint64) * call->n);
			if (call->points)
				memcpy(kdg_held.points[e], base + call->points, pbytes);
		}
		else
		{
			free(kdg_held.rows[e]);
			free(kdg_held.ranks[e]);
			free(kdg_held.points[e]);
			kdg_held.rows[e] = kdg_held.ranks[e] = NULL;
			kdg_held.points[e] = NULL;
		}
	}
	*ep = e;
	return KD_OK;
}

/*
 * UPLOAD: make a device copy of the call's tree (split over every device
 * when one cannot hold it), unless one of that name exists; for process
 * pid.
 */
static KdStatus
serve_upload(KdgCall *call, int pid, KdExec *exec, int *ep)
{
	KdError    *err = &call->err;
	KdGpuTree  *copy = NULL;
	KdSplitCopy *split = NULL;
	KdStatus	st = KD_OK;
	KdTree		t;
	int			device = 0;
	int			e;
	bool		splits_copy;

	t = kdg_call_tree(call);
	/* each tree built from rows read is a version of its own */
	if (call->key[3] == KDG_KEY_BUILT + 1)
		t.key[2] = ++built_versions;
	if ((*ep = e = kdg_entry_named(t.key, false)) >= 0)
	{
		call->resident_out = e;
		call->version_out = kdg_service->resident[e].version;
		return KD_OK;
	}
	splits_copy = call->key[3] != 0 &&
		kdg_copy_splits(kde_tree_bytes(t.n, t.dim, t.nbounds));
	*ep = e = kdg_entry_make_room(call->key[3] ? call->key : NULL,
						kde_tree_bytes(t.n, t.dim, t.nbounds),
						splits_copy, &device);
	if (e < 0)
		return kde_set_error(err, KD_ERR_GPU_NOMEM, -1,
							"the kdgpu GPU service holds as many device copies as it can");
	if (splits_copy)
		st = kdg_upload_split(&t, &split, e, exec, err);
	else
		st = kdg_upload_evicting(&t, device, &copy, e, exec, err);
	if (st == KD_OK)
		kdg_entry_record(e, device, copy, split, &t, call->key[3] != 0,
					 pid, call);
	if (st == KD_OK && copy && call->key[3] != 0)
		kdg_replicate(e, &t, pid, exec);
	for (int d = 0; st == KD_OK && splits_copy && d < kdg_service->ndevices; d++)
		kdg_entries_trim(d, 0, e);
	return st;
}

/* BUILD: build the call's points into a tree, kept as a copy if asked. */
static KdStatus
serve_build(KdgCall *call, int pid, KdExec *exec, int *ep)
{
	char	   *base = (char *) call;
	KdError    *err = &call->err;
	KdGpuTree  *copy = NULL;
	KdStatus	st;
	KdTree		t;
	int			device = 0;
	int			e = -1;

	t = kdg_call_tree(call);
	memset(t.key, 0, sizeof(t.key));
	if (call->keep)
		e = kdg_entry_make_room(NULL, kde_tree_bytes(t.n, t.dim, t.nbounds),
							false, &device);
	else
		device = kdg_device_for_copy(NULL);
	st = kde_gpu_build((double *) (base + call->points),
					  (uint64_t *) (base + call->point_refs), t.n, t.dim,
					  &t, e >= 0 ? &copy : NULL, exec, err);
	/* a build one device cannot hold: every device's part */
	if (st == KD_ERR_GPU_NOMEM && !call->keep && kdg_service->ndevices > 1)
		st = kde_split_build((double *) (base + call->points),
							(uint64_t *) (base + call->point_refs), t.n, t.dim,
							kdg_service->ndevices, &t, exec, err);
	call->ref_order_out = t.ref_order;
	if (st == KD_OK && copy)
		kdg_entry_record(e, device, copy, NULL, &t, false,
					 pid, call);
	else
		call->resident_out = -1;
	*ep = e;
	return st;
}

/*
 * KNN: the next slice of the call's queries on entry e, on every copy of
 * the tree when the call is large and this is the main thread; *more when
 * queries are left.
 */
static KdStatus
serve_knn(KdgCall *call, int e, KdExec *exec, bool *more)
{
	char	   *base = (char *) call;
	KdError    *err = &call->err;
	KdStatus	st;
	KdGpuTree  *reps[KDG_MAX_DEVICES];
	int			nreps = !kdg_service_on_device_thread() && kdg_call_spreads(call) ?
		kdg_copies_of(e, reps) : 1;
	int64		from = call->done;
	int64		to = Min(call->nq, from + KDG_SLICE_QUERIES * nreps);
	double	   *queries = (double *) (base + call->in1) + from * call->dim;
	KdNeighbor *out = (KdNeighbor *) (base + call->out) + from * call->k;
	int32_t    *count = (int32_t *) (base + call->count) + from;

	if (kdg_held.splits[e])
		st = kde_split_knn(kdg_held.splits[e], queries, to - from, call->k,
						  out, count, exec, err);
	else if (nreps > 1)
		st = kde_replicas_knn(reps, nreps, queries, to - from, call->dim,
							 call->k, out, count, exec, err);
	else
		st = kde_gpu_knn(kdg_held.copies[e], queries, to - from, call->k,
						out, count, exec, err);
	call->done = to;
	*more = st == KD_OK && to < call->nq;
	return st;
}

/* ALL_KNN: the All-kNN of entry e's tree. */
static KdStatus
serve_all_knn(KdgCall *call, int e, KdExec *exec)
{
	char	   *base = (char *) call;

	if (kdg_held.splits[e])
		return kde_split_all_knn(kdg_held.splits[e], call->k, call->include_self,
								 (KdNeighbor *) (base + call->out),
								 (int32_t *) (base + call->count), exec, &call->err);
	return kde_gpu_all_knn(kdg_held.copies[e], call->k, call->include_self,
						   (KdNeighbor *) (base + call->out),
						   (int32_t *) (base + call->count), exec, &call->err);
}

/*
 * RADIUS and BOX on entry e: the range result goes to *range on a device
 * thread, or to a segment of its own (kdg_reply_range) on the main thread.
 */
static KdStatus
serve_range(KdgCall *call, int e, KdExec *exec, KdRangeResult *range)
{
	char	   *base = (char *) call;
	KdError    *err = &call->err;
	KdStatus	st;
	KdRangeResult res = {0};
	double	   *in1 = (double *) (base + call->in1);
	double	   *in2 = (double *) (base + call->in2);

	if (call->op == KDG_OP_RADIUS && kdg_held.splits[e])
		st = kde_split_radius(kdg_held.splits[e], in1, call->nq, in2, call->nradii,
							 &res, exec, err);
	else if (call->op == KDG_OP_RADIUS)
		st = kde_gpu_radius(kdg_held.copies[e], in1, call->nq, in2, call->nradii,
						   &res, exec, err);
	else if (kdg_held.splits[e])
		st = kde_split_box(kdg_held.splits[e], in1, in2, call->nq, &res, exec, err);
	else
		st = kde_gpu_box(kdg_held.copies[e], in1, in2, call->nq, &res, exec, err);
	if (st == KD_OK && range)
		*range = res;
	else
	{
		if (st == KD_OK)
			st = kdg_reply_range(call, &res, err);
		kde_range_result_free(&res);
	}
	return st;
}

/*
 * DBSCAN: the labels of entry e's points.  A copy split over devices has
 * no DBSCAN: the caller clusters its exact pairs instead.
 */
static KdStatus
serve_dbscan(KdgCall *call, int e, KdExec *exec)
{
	if (kdg_held.splits[e])
		return kde_set_error(&call->err, KD_ERR_GPU_UNAVAILABLE, -1,
							 "a tree split over devices has no DBSCAN");
	return kde_gpu_dbscan(kdg_held.copies[e], &call->dbscan,
						  (int32_t *) ((char *) call + call->out),
						  &call->undecided, exec, &call->err);
}

/*
 * FLAT: the k nearest of the shipped vectors to each shipped query, on the
 * main thread's device (no copy is involved).
 */
static KdStatus
serve_flat(KdgCall *call, KdExec *exec)
{
	char	   *base = (char *) call;
	KdVectors	set;

	set.n = call->n;
	set.dim = call->dim;
	set.stride = call->dim;
	set.coords = (const double *) (base + call->points);
	set.refs = (const uint64_t *) (base + call->point_refs);
	return kde_gpu_flat_knn(&set, call->metric, (const double *) (base + call->in1),
							call->nq, call->k,
							call->skip ? (const uint64_t *) (base + call->skip) : NULL,
							(KdNeighbor *) (base + call->out),
							(int32_t *) (base + call->count), exec, &call->err);
}

/*
 * FLAT_RADIUS: the shipped vectors within the radii of the shipped
 * centres, replied in a segment of their own (kdg_reply_range).
 */
static KdStatus
serve_flat_radius(KdgCall *call, KdExec *exec)
{
	char	   *base = (char *) call;
	KdVectors	set;
	KdRangeResult res = {0};
	KdStatus	st;

	set.n = call->n;
	set.dim = call->dim;
	set.stride = call->dim;
	set.coords = (const double *) (base + call->points);
	set.refs = (const uint64_t *) (base + call->point_refs);
	st = kde_gpu_flat_radius(&set, call->metric, (const double *) (base + call->in1),
							 call->nq, (const double *) (base + call->in2),
							 call->nradii, &res, exec, &call->err);
	if (st == KD_OK)
		st = kdg_reply_range(call, &res, &call->err);
	kde_range_result_free(&res);
	return st;
}

/*
 * Serve (a slice of) call, from slot i; true when it is done.  The reply's
 * status and error are set when it is.  On a device thread (range not
 * NULL) only queries on whole copies come here, and a range result is left
 * in *range for the main thread to reply with.
 */
bool
kdg_serve(KdgCall *call, int i, KdRangeResult *range)
{
	KdExec		exec;
	KdStatus	st = KD_OK;
	KdGpuTimes	times = {0};
	int			e = -1;
	bool		more = false;

	kde_exec_init(&exec);
	exec.device = KD_DEVICE_GPU;
	/* the caller's threads move its results: a copy on one thread is slow */
	exec.threads = Max(call->threads, 1);
	exec.interrupt = call_interrupted;
	exec.interrupt_arg = (void *) (intptr_t) i;
	exec.times = &times;

	switch (call->op)
	{
		case KDG_OP_ACQUIRE:
			st = serve_acquire(call, &e);
			break;
		case KDG_OP_ROWS:
			st = serve_rows(call, &e);
			break;
		case KDG_OP_UPLOAD:
			st = serve_upload(call, kdg_service->slots[i].pid, &exec, &e);
			break;
		case KDG_OP_BUILD:
			st = serve_build(call, kdg_service->slots[i].pid, &exec, &e);
			break;
		case KDG_OP_FLAT:
			st = serve_flat(call, &exec);
			break;
		case KDG_OP_FLAT_RADIUS:
			st = serve_flat_radius(call, &exec);
			break;
		case KDG_OP_KNN:
			if ((e = kdg_entry_use(call)) < 0)
				break;
			st = serve_knn(call, e, &exec, &more);
			if (more)
			{
				kde_gpu_times_add(&call->times, &times);
				return false;
			}
			break;
		case KDG_OP_ALL_KNN:
			if ((e = kdg_entry_use(call)) >= 0)
				st = serve_all_knn(call, e, &exec);
			break;
		case KDG_OP_RADIUS:
		case KDG_OP_BOX:
			if ((e = kdg_entry_use(call)) >= 0)
				st = serve_range(call, e, &exec, range);
			break;
		case KDG_OP_DBSCAN:
			if ((e = kdg_entry_use(call)) >= 0)
				st = serve_dbscan(call, e, &exec);
			break;
	}
	if (call->op >= KDG_OP_KNN && e < 0)
		call->missing = true;
	kde_gpu_times_add(&call->times, &times);
	call->status = st;
	return true;
}
