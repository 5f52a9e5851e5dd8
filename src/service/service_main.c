/*
 * service_main.c
 *	  The GPU service's background worker: start-up, and the loop that
 *	  schedules the calls backends queue.
 *
 * The service holds the device copies of trees (service_copies.c), maps
 * the calls' segments (service_maps.c) and serves each call with one
 * function per operation (service_ops.c).
 *
 * The service reaches the GPU object only through the engine's API
 * (kdtree.h): kde_gpu_available opens it in this process, which has no
 * provided table, and kde_gpu_select_device, kde_gpu_upload_copy, kde_gpu_knn
 * and the other entry wrappers run the calls on the device copies it keeps.
 *
 * The loop: reply for the calls the device threads have served, drop the
 * copies asked to go (and those of backends that have exited), and take
 * the queued calls by turn: a query on a copy that lives whole on one
 * device goes to that device's thread (service_workers.c) when it is idle,
 * and later calls may pass it meanwhile; any other call (an upload, a
 * build, a query on a split copy) waits until every thread is idle and
 * runs on the main thread, and no later call passes it.  Wait on the
 * latch when nothing can start.  A kNN call of many queries is
 * served a slice (KDG_SLICE_QUERIES) at a time and goes back in line after
 * each slice, so a 10M-query join does not hold back a 1k-query one; other
 * calls run whole.  The engine polls the call's interrupt callback during
 * long work, which stops it when its caller has given up or exited.
 *
 * Faults: when a GPU call fails with a CUDA error, the service replies and
 * then exits with status 1, so that the postmaster starts it again with a
 * fresh CUDA context (a sticky error poisons the context for good).  Every
 * start bumps the epoch: callers waiting on the old run see it and stop
 * waiting, and their copies' names are uploaded again on next use.  The
 * service holds no locks and writes no data, so its exit never loses any.
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

bool		kdg_am_service = false;	/* this process is the service */
bool		kdg_service_fatal;	/* a GPU error was met: exit once idle */
volatile bool kdg_service_stopping;	/* the service exits: calls are to stop */

static bool gpu_ready;			/* the GPU object is open, with a device */
static dsm_segment **segs;		/* per slot: the call's segment, attached */
static bool *seen;				/* per slot: next_slot looked at it */

/* Whether the process pid is gone. */
bool
kdg_pid_gone(int pid)
{
	return pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH);
}

/* Wake the backend waiting on slot i. */
static void
wake_caller(int procno)
{
	if (procno >= 0)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

/* Free slot i, letting go of its call's result segment if nobody took it. */
static void
slot_free(int i, dsm_handle range)
{
	if (range != DSM_HANDLE_INVALID)
		dsm_unpin_segment(range);
	SpinLockAcquire(&kdg_service->mutex);
	kdg_service->slots[i].state = KDG_SLOT_FREE;
	SpinLockRelease(&kdg_service->mutex);
}

/* Slot i's call, its segment attached; NULL when the caller already left. */
static KdgCall *
slot_call(int i)
{
	if (segs[i] == NULL)
	{
		segs[i] = kdg_service_map(kdg_service->slots[i].handle,
								  kdg_service->slots[i].pid);
		if (segs[i] == NULL)
		{
			/* the caller gave up before the call began, and detached */
			slot_free(i, DSM_HANDLE_INVALID);
			return NULL;
		}
	}
	return dsm_segment_address(segs[i]);
}

/* Mark slot i's call begun, unless its caller gave up. */
static void
slot_begin(int i)
{
	SpinLockAcquire(&kdg_service->mutex);
	if (kdg_service->slots[i].state == KDG_SLOT_QUEUED)
		kdg_service->slots[i].state = KDG_SLOT_RUNNING;
	SpinLockRelease(&kdg_service->mutex);
}

/*
 * After a slice of slot i's call: put an unfinished call back in line, or
 * reply for a finished one and let go of its segment.  Returns the status
 * of a finished GPU call (KD_OK while it goes on).
 */
static KdStatus
slot_after(int i, KdgCall *call, bool finished)
{
	KdgSlot    *slot = &kdg_service->slots[i];
	bool		abandoned;
	KdStatus	st;
	int			procno;

	SpinLockAcquire(&kdg_service->mutex);
	abandoned = slot->state == KDG_SLOT_ABANDONED;
	if (!finished && !abandoned)
		slot->turn = kdg_service->next_turn++;
	SpinLockRelease(&kdg_service->mutex);
	if (!finished && !abandoned)
		return KD_OK;

	st = call->status;
	kdg_service->calls++;
	if (abandoned || kdg_pid_gone(slot->pid))
		slot_free(i, call->range);
	else
	{
		SpinLockAcquire(&kdg_service->mutex);
		slot->state = KDG_SLOT_DONE;
		slot->range = call->range;
		procno = slot->procno;
		SpinLockRelease(&kdg_service->mutex);
		wake_caller(procno);
	}
	kdg_service_unmap(segs[i]);
	segs[i] = NULL;
	return st;
}

/*
 * Serve one slice of the call in slot i on the main thread.  Returns the
 * status of a finished GPU call (KD_OK while it goes on).
 */
static KdStatus
serve_slot(int i)
{
	KdgCall    *call = slot_call(i);

	if (call == NULL)
		return KD_OK;
	slot_begin(i);
	return slot_after(i, call,
					  kdg_service->slots[i].state == KDG_SLOT_ABANDONED ||
					  kdg_serve(call, i, NULL));
}

/*
 * The device whose thread is to serve call: that of the whole copy its
 * query searches, when the device has a thread; -1 for a call the main
 * thread serves.
 */
static int
call_device(const KdgCall *call)
{
	const KdgResident *e;

	if (call->op < KDG_OP_KNN || call->resident < 0 ||
		call->resident >= KDG_RESIDENT_MAX)
		return -1;
	e = &kdg_service->resident[call->resident];
	if (!e->used || e->drop || e->version != call->version ||
		kdg_held.copies[call->resident] == NULL || e->device >= kdg_service_threads_count() ||
		kdg_call_spreads(call))
		return -1;
	return e->device;
}

/* Hand slot i's call to device's thread. */
static void
dispatch(int i, KdgCall *call, int device)
{
	kdg_held.busy[call->resident] = true;
	slot_begin(i);
	kdg_service_thread_run(device, i, call, kdg_serve);
}

/*
 * Reply for the calls that the device threads have served; a GPU error
 * among them makes the service exit once every thread is idle.
 */
static void
collect(void)
{
	for (int d = 0; d < kdg_service_threads_count(); d++)
	{
		KdRangeResult range;
		bool		finished;
		int			i = kdg_service_thread_collect(d, &finished, &range);
		KdgCall    *call;

		if (i < 0)
			continue;
		call = dsm_segment_address(segs[i]);
		kdg_held.busy[call->resident] = false;
		if (range.offsets)
		{
			if (call->status == KD_OK)
				call->status = kdg_reply_range(call, &range, &call->err);
			kde_range_result_free(&range);
		}
		if (slot_after(i, call, finished) == KD_ERR_GPU)
			kdg_service_fatal = true;
	}
}

/*
 * Drop the copies asked to go or whose owner has exited, and free the
 * slots and kept segments of callers that are gone.
 */
static void
sweep(void)
{
	for (int i = 0; i < KDG_RESIDENT_MAX; i++)
	{
		KdgResident *e = &kdg_service->resident[i];

		if (e->used && (e->drop || (!e->shared && kdg_pid_gone(e->owner_pid))) &&
			kdg_entry_quiet(i))
			kdg_entry_free(i);
	}
	for (int i = 0; i < kdg_service->nslots; i++)
	{
		KdgSlot    *slot = &kdg_service->slots[i];

		if (segs[i] != NULL || slot->state == KDG_SLOT_FREE ||
			kdg_service_thread_of_slot(i) >= 0)
			continue;
		if (slot->state == KDG_SLOT_ABANDONED || kdg_pid_gone(slot->pid))
			slot_free(i, slot->state == KDG_SLOT_DONE ? slot->range : DSM_HANDLE_INVALID);
	}
	kdg_service_maps_sweep();
}

/* Whether slot i holds a call to serve (queued, or begun and not with a thread). */
static bool
slot_waiting(int i)
{
	KdgSlot    *slot = &kdg_service->slots[i];

	return (slot->state == KDG_SLOT_QUEUED || slot->state == KDG_SLOT_RUNNING ||
			(slot->state == KDG_SLOT_ABANDONED && segs[i] != NULL)) &&
		slot->epoch == kdg_service->epoch && kdg_service_thread_of_slot(i) < 0;
}

/*
 * The slot whose call can start now, by turn, or -1; *device is the device
 * thread to serve it, or -1 for the main thread.  A call for a busy device
 * thread is passed; a call for the main thread that uses a GPU (an upload,
 * a build, a query on a split copy) waits until every thread is idle, and
 * no later call passes it.
 */
static int
next_slot(int *device)
{
	int			n = kdg_service->nslots;

	memset(seen, 0, sizeof(bool) * n);
	for (;;)
	{
		int			best = -1;
		int			r;
		KdgCall    *call;

		SpinLockAcquire(&kdg_service->mutex);
		for (int i = 0; i < n; i++)
			if (!seen[i] && slot_waiting(i) &&
				(best < 0 || kdg_service->slots[i].turn < kdg_service->slots[best].turn))
				best = i;
		SpinLockRelease(&kdg_service->mutex);
		if (best < 0)
			return -1;
		seen[best] = true;
		if ((call = slot_call(best)) == NULL)
			continue;
		*device = kdg_service->slots[best].state == KDG_SLOT_ABANDONED ?
			-1 : call_device(call);
		if (*device >= 0 && kdg_service_thread_idle(*device))
			return best;
		if (*device >= 0 && kdg_service->slots[best].state != KDG_SLOT_ABANDONED &&
			(r = kdg_replica_for(call)) >= 0)
		{
			/* the same tree on a free device */
			call->resident = r;
			call->version = kdg_service->resident[r].version;
			*device = kdg_service->resident[r].device;
			return best;
		}
		if (*device >= 0)
			continue;
		/* finding a copy or keeping its rows uses no GPU: at any time */
		if (kdg_service->slots[best].state == KDG_SLOT_ABANDONED ||
			call->op == KDG_OP_ACQUIRE || call->op == KDG_OP_ROWS ||
			kdg_service_threads_idle())
			return best;
		return -1;
	}
}

/*
 * Take kdgpu.gpu_memory_limit from the configuration, and evict what no
 * longer fits under it.
 */
static void
read_settings(void)
{
	SpinLockAcquire(&kdg_service->mutex);
	kdg_service->memory_limit = (int64) kdgpu_gpu_memory_limit * 1024 * 1024;
	kdg_service->replicas = kdgpu_gpu_replicas;
	SpinLockRelease(&kdg_service->mutex);
	for (int d = 0; d < kdg_service->ndevices; d++)
		kdg_entries_trim(d, 0, -1);
}

/*
 * Open the GPU object, describe every device, and say whether the service
 * is ready or idle.
 */
static void
open_gpu(void)
{
	KdGpuInfo	info;
	KdGpuInfo	devices[KDG_MAX_DEVICES];
	char		why[256] = "";
	bool		usable = kde_gpu_available(&info, why, sizeof(why));
	int			ndevices = 0;
	KdError		err;

	gpu_ready = usable;
	for (int d = 0; gpu_ready && d < Min(info.device_count, KDG_MAX_DEVICES); d++)
	{
		if (kde_gpu_select_device(d, &err) != KD_OK ||
			kde_gpu_probe(&devices[d], &err) != KD_OK)
		{
			ereport(LOG,
					(errmsg("kdgpu GPU service leaves device %d out: %s", d, err.message)));
			break;
		}
		ndevices = d + 1;
	}
	if (gpu_ready && ndevices == 0)
	{
		snprintf(why, sizeof(why), "no device could be used");
		gpu_ready = false;
	}
	if (gpu_ready)
		(void) kde_gpu_select_device(0, &err);
	SpinLockAcquire(&kdg_service->mutex);
	if (gpu_ready)
	{
		kdg_service->info = info;
		kdg_service->ndevices = ndevices;
		memcpy(kdg_service->devices, devices, sizeof(KdGpuInfo) * ndevices);
		memset(kdg_service->device_used, 0, sizeof(kdg_service->device_used));
		kdg_service->state = KDG_SERVICE_READY;
	}
	else
	{
		snprintf(kdg_service->why, sizeof(kdg_service->why), "%s", why);
		kdg_service->state = KDG_SERVICE_IDLE;
	}
	SpinLockRelease(&kdg_service->mutex);
	if (gpu_ready && kdg_service_threads_start(ndevices) < ndevices)
		ereport(LOG,
				(errmsg("kdgpu GPU service could start only %d of %d device threads",
						kdg_service_threads_count(), ndevices)));
	if (gpu_ready)
		ereport(LOG,
				(errmsg("kdgpu GPU service ready on %d device%s: %s", ndevices,
						ndevices == 1 ? "" : "s", info.name)));
	else
		ereport(LOG,
				(errmsg("kdgpu GPU service idle: %s", why)));
}

/* Mark the service stopped, with no copies. */
static void
state_reset(void)
{
	SpinLockAcquire(&kdg_service->mutex);
	kdg_service->state = KDG_SERVICE_STOPPED;
	kdg_service->pid = 0;
	kdg_service->procno = -1;
	kdg_service->memory_used = 0;
	memset(kdg_service->device_used, 0, sizeof(kdg_service->device_used));
	for (int i = 0; i < KDG_RESIDENT_MAX; i++)
		if (kdg_service->resident[i].used)
		{
			kdg_service->resident[i].used = false;
			kdg_service->resident[i].version++;
		}
	SpinLockRelease(&kdg_service->mutex);
}

/*
 * As the service exits: once the device threads have let go of the calls'
 * segments (their calls are told to stop), mark it stopped.
 */
static void
service_exit(int code, Datum arg)
{
	kdg_service_stopping = true;
	kdg_service_threads_quiesce(30000);
	state_reset();
}

/* The background worker's entry point. */
void
kdg_service_main(Datum arg)
{
	kdg_am_service = true;
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	segs = MemoryContextAllocZero(TopMemoryContext,
								  sizeof(dsm_segment *) * kdg_service->nslots);
	seen = MemoryContextAllocZero(TopMemoryContext,
								  sizeof(bool) * kdg_service->nslots);
	/* a restart after a crash finds the entries of the run before */
	state_reset();
	SpinLockAcquire(&kdg_service->mutex);
	kdg_service->epoch++;
	kdg_service->pid = MyProcPid;
	kdg_service->procno = MyProc->pgprocno;
	kdg_service->state = KDG_SERVICE_STARTING;
	kdg_service->calls = 0;
	SpinLockRelease(&kdg_service->mutex);
	before_shmem_exit(service_exit, 0);
	read_settings();
	open_gpu();

	for (;;)
	{
		int			i;
		int			device = -1;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			read_settings();
		}
		collect();
		if (kdg_service_fatal && kdg_service_threads_idle())
		{
			ereport(LOG,
					(errmsg("kdgpu GPU service restarting after a GPU error, for a fresh CUDA context")));
			proc_exit(1);
		}
		sweep();
		i = gpu_ready && !kdg_service_fatal ? next_slot(&device) : -1;
		if (i < 0)
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 1000L, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			continue;
		}
		if (device >= 0)
			dispatch(i, slot_call(i), device);
		else if (serve_slot(i) == KD_ERR_GPU)
			kdg_service_fatal = true;
	}
}
