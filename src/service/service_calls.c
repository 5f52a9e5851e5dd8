/*
 * service_calls.c
 *	  A backend's round trip to the GPU service: one call in a segment of
 *	  its own, through a slot, until the service replies.
 *
 * A call copies its arguments into a new dynamic shared memory segment
 * (KdgCall and the arrays after it, kdg_call_begin; a tree's arrays by
 * kdg_ship_tree), takes a free slot, wakes the service and waits on the
 * backend's latch until the slot says DONE (kdg_call_run).  A call given
 * up on (cancel, timeout, termination, or the backend's exit) leaves its
 * slot ABANDONED, for the service to free; a slot is never reused while
 * the service may still write into its call's segment.
 *
 * A backend keeps the segment of its last large call (kept) for the
 * next: a new segment is zero-filled when made and each of its pages
 * faulted in again, which for an All-kNN answer costs more than the GPU's
 * work.  It is used again only after a call on it ended with the reply
 * (kdg_call_end): one given up on might still be written by the service,
 * so it is let go instead.  The service keeps its own mapping of a kept
 * segment too (service_maps.c).
 */
#include "postgres.h"

#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "engine/kd_error.h"
#include "engine/kd_gpu_abi.h"
#include "core/core.h"
#include "service.h"

static bool exit_callback_registered = false;

/* the last large call's segment; busy until a call on it has its reply */
static KdgKeptSegment kept;

/* The service's state, read under its lock. */
KdgServiceState
kdg_service_state(uint64 *epoch)
{
	KdgServiceState state;

	SpinLockAcquire(&kdg_service->mutex);
	state = kdg_service->state;
	if (epoch)
		*epoch = kdg_service->epoch;
	SpinLockRelease(&kdg_service->mutex);
	return state;
}

/* Give up the call in slot i: the service frees what it still holds. */
static void
slot_abandon(int i)
{
	KdgSlot    *slot = &kdg_service->slots[i];
	dsm_handle	range = DSM_HANDLE_INVALID;

	SpinLockAcquire(&kdg_service->mutex);
	if (slot->state == KDG_SLOT_DONE)
	{
		range = slot->range;
		slot->state = KDG_SLOT_FREE;
	}
	else if (slot->state != KDG_SLOT_FREE)
		slot->state = KDG_SLOT_ABANDONED;
	SpinLockRelease(&kdg_service->mutex);
	if (range != DSM_HANDLE_INVALID)
		dsm_unpin_segment(range);
}

/* Exit callback: abandon a call this backend left in flight. */
static void
client_exit(int code, Datum arg)
{
	for (int i = 0; i < kdg_service->nslots; i++)
		if (kdg_service->slots[i].pid == MyProcPid &&
			kdg_service->slots[i].state != KDG_SLOT_FREE)
			slot_abandon(i);
}

/*
 * The kept segment, of at least size bytes, marked busy; NULL when none can
 * be made.  One still busy (its call given up on) is let go first.
 */
static dsm_segment *
kept_segment(Size size)
{
	if (kept.busy)
		kdg_kept_segment_drop(&kept);
	return kdg_kept_segment_take(&kept, size);
}

/*
 * A new call's segment of size bytes (the kept one for a large call), its
 * header zeroed; NULL if none.
 */
dsm_segment *
kdg_call_begin(Size size, KdgOp op, KdgCall **call, KdError *err)
{
	dsm_segment *seg = size >= KDG_KEPT_SEGMENT_MIN ? kept_segment(size) : NULL;

	if (seg == NULL)
		seg = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);

	if (seg == NULL)
	{
		kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
					 "no free shared memory segment for a kdgpu GPU service call");
		return NULL;
	}
	*call = dsm_segment_address(seg);
	memset(*call, 0, sizeof(KdgCall));
	(*call)->op = op;
	(*call)->kept = seg == kept.seg;
	(*call)->size = size;
	(*call)->resident = -1;
	(*call)->resident_out = -1;
	return seg;
}

/*
 * Queue the call, wait for its reply and return its status (the error is
 * copied to err).  The caller detaches the segment.  When
 * kdgpu.service_queue_limit calls are in line already, the call is not
 * queued: it fails as if no GPU were usable, and the engine runs the work
 * on the CPU under kdgpu.device = 'auto'.
 */
KdStatus
kdg_call_run(dsm_segment *seg, KdgCall *call, const KdExec *exec, KdError *err)
{
	int			i = -1;
	int			queued = 0;
	int			procno;
	uint64		epoch;

	if (!exit_callback_registered)
	{
		before_shmem_exit(client_exit, 0);
		exit_callback_registered = true;
	}
	call->threads = exec ? Max(exec->threads, 1) : 1;
	SpinLockAcquire(&kdg_service->mutex);
	for (int s = 0; s < kdg_service->nslots; s++)
	{
		KdgSlotState state = kdg_service->slots[s].state;

		if (state == KDG_SLOT_FREE && i < 0)
			i = s;
		else if (state == KDG_SLOT_QUEUED || state == KDG_SLOT_RUNNING)
			queued++;
	}
	if (kdgpu_service_queue_limit > 0 && queued >= kdgpu_service_queue_limit)
	{
		SpinLockRelease(&kdg_service->mutex);
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
							"the kdgpu GPU service has %d calls in line (kdgpu.service_queue_limit)",
							queued);
	}
	if (i >= 0)
	{
		KdgSlot    *slot = &kdg_service->slots[i];

		slot->state = KDG_SLOT_QUEUED;
		slot->pid = MyProcPid;
		slot->procno = MyProc->pgprocno;
		slot->handle = dsm_segment_handle(seg);
		slot->turn = kdg_service->next_turn++;
		slot->epoch = kdg_service->epoch;
		slot->range = DSM_HANDLE_INVALID;
	}
	procno = kdg_service->procno;
	epoch = kdg_service->epoch;
	SpinLockRelease(&kdg_service->mutex);
	if (i < 0)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
							"the kdgpu GPU service has no free call slot");
	if (procno >= 0)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);

	for (;;)
	{
		KdgSlotState state;
		uint64		now_epoch;
		KdgServiceState sstate;

		SpinLockAcquire(&kdg_service->mutex);
		state = kdg_service->slots[i].state;
		SpinLockRelease(&kdg_service->mutex);
		if (state == KDG_SLOT_DONE)
			break;
		sstate = kdg_service_state(&now_epoch);
		if (sstate != KDG_SERVICE_READY || now_epoch != epoch)
		{
			slot_abandon(i);
			return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
								"the kdgpu GPU service stopped while serving this call");
		}
		if (exec && exec->interrupt && exec->interrupt(exec->interrupt_arg))
		{
			slot_abandon(i);
			return kde_set_error(err, KD_ERR_CANCELED, -1, "canceled");
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	SpinLockAcquire(&kdg_service->mutex);
	kdg_service->slots[i].state = KDG_SLOT_FREE;
	SpinLockRelease(&kdg_service->mutex);
	(void) kdg_kept_segment_done(&kept, seg);
	if (exec && exec->times)
		kde_gpu_times_add(exec->times, &call->times);
	if (call->status != KD_OK)
		*err = call->err;
	return call->status;
}

/*
 * The end of a call's use of its segment: detached, but for the kept one,
 * which stays mapped for the next call (let go then if the call was given
 * up on).
 */
void
kdg_call_end(dsm_segment *seg)
{
	if (seg != kept.seg)
		dsm_detach(seg);
}

/* Copy a tree's arrays into a call's segment, after the header. */
void
kdg_ship_tree(KdgCall *call, const KdTree *t, Size at, bool copy)
{
	char	   *base = (char *) call;

	call->n = t->n;
	call->dim = t->dim;
	call->nbounds = t->nbounds;
	call->ref_order = t->ref_order;
	call->coords = at;
	call->refs = call->coords + MAXALIGN(sizeof(double) * t->n * t->dim);
	call->split = call->refs + MAXALIGN(sizeof(uint64) * t->n);
	call->bounds = call->split + MAXALIGN(t->n);
	if (!copy)
		return;
	kdg_parallel_copy(base + call->coords, t->coords, sizeof(double) * t->n * t->dim);
	kdg_parallel_copy(base + call->refs, t->refs, sizeof(uint64) * t->n);
	memcpy(base + call->split, t->split, t->n);
	memcpy(base + call->bounds, t->bounds, sizeof(double) * 2 * t->dim * t->nbounds);
}

/* Bytes kdg_ship_tree puts after the header. */
Size
kdg_tree_shipped_size(int64 n, int dim, int64 nbounds)
{
	return MAXALIGN(sizeof(double) * n * dim) + MAXALIGN(sizeof(uint64) * n) +
		MAXALIGN(n) + MAXALIGN(sizeof(double) * 2 * dim * nbounds);
}
