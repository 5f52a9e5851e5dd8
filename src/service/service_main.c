/*
 * service_main.c
 *	  The GPU service's background worker: it opens the GPU once, holds the
 *	  device copies of trees, and runs the calls backends queue.
 *
 * The service reaches the GPU object only through the engine's API
 * (kdtree.h): kd_gpu_available opens it in this process, which has no
 * provided table, and kd_gpu_select_device, kd_gpu_upload_copy, kd_gpu_knn
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

static bool gpu_ready;			/* the GPU object is open, with a device */
static dsm_segment **segs;		/* per slot: the call's segment, attached */
static KdGpuTree *copies[KDG_RESIDENT_MAX]; /* per entry: the device copy */
static KdSplitCopy *splits[KDG_RESIDENT_MAX];	/* or the copy split over
												 * every device */
static uint64 *rows[KDG_RESIDENT_MAX];	/* per entry: its rows (TIDs in rank
										 * order), or NULL */
static uint64 *ranks[KDG_RESIDENT_MAX]; /* and its references (ranks in node
										 * order), with the rows */
static double *points[KDG_RESIDENT_MAX];	/* and, for a tree built from a
											 * call's rows, their coordinates
											 * in rank order */
static bool busy[KDG_RESIDENT_MAX]; /* per entry: a device thread searches it */
static uint64 built_versions;	/* versions given to trees built from rows */
static bool *seen;				/* per slot: next_slot looked at it */
static bool fatal;				/* a GPU error was met: exit once idle */
static volatile bool stopping;	/* the service exits: calls are to stop */

/* Whether the process pid is gone. */
static bool
gone(int pid)
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

/* Free entry i's device copy and the entry. */
static void
entry_free(int i)
{
	KdgResident *e = &kdg_service->resident[i];

	kd_gpu_release_copy(copies[i]);
	kd_split_release(splits[i]);
	copies[i] = NULL;
	splits[i] = NULL;
	free(rows[i]);
	free(ranks[i]);
	free(points[i]);
	rows[i] = NULL;
	ranks[i] = NULL;
	points[i] = NULL;
	SpinLockAcquire(&kdg_service->mutex);
	kdg_service->memory_used -= e->bytes;
	for (int d = 0; d < KDG_MAX_DEVICES; d++)
		kdg_service->device_used[d] -= e->device_bytes[d];
	e->used = false;
	e->drop = false;
	e->version++;
	SpinLockRelease(&kdg_service->mutex);
}

/*
 * Whether entry i may be freed now: no device thread searches it, nor
 * works on its device (each device has one caller at a time).
 */
static bool
entry_quiet(int i)
{
	int			d = kdg_service->resident[i].device;

	if (busy[i])
		return false;
	return d < 0 ? kdg_service_threads_idle() :
		(d >= kdg_service_threads_count() || kdg_service_thread_idle(d));
}

/*
 * The least recently used shared entry other than except, with bytes on
 * device (any device when device < 0), or -1.
 */
static int
entry_lru(int except, int device)
{
	int			lru = -1;

	for (int i = 0; i < KDG_RESIDENT_MAX; i++)
	{
		KdgResident *e = &kdg_service->resident[i];

		if (i != except && e->used && e->shared && entry_quiet(i) &&
			(device < 0 || e->device_bytes[device] > 0) &&
			(lru < 0 || e->last_use < kdg_service->resident[lru].last_use))
			lru = i;
	}
	return lru;
}

/*
 * The shared entry named key (with any_version, whatever its key[2]), or
 * -1: of several copies (replicas), one that keeps the tree's rows.
 */
static int
entry_named(const uint64 *key, bool any_version)
{
	int			found = -1;

	for (int i = 0; i < KDG_RESIDENT_MAX; i++)
	{
		KdgResident *e = &kdg_service->resident[i];

		if (e->used && e->shared && !e->drop &&
			e->key[0] == key[0] && e->key[1] == key[1] && e->key[3] == key[3] &&
			(any_version || e->key[2] == key[2]) &&
			(found < 0 || (rows[i] != NULL && rows[found] == NULL)))
			found = i;
	}
	return found;
}

/*
 * Evict shared copies on device other than except, least recently used
 * first, until bytes more fit under the memory limit (or none is left to
 * evict).
 */
static void
entries_trim(int device, int64 bytes, int except)
{
	while (kdg_service->memory_limit > 0 &&
		   kdg_service->device_used[device] + bytes > kdg_service->memory_limit)
	{
		int			lru = entry_lru(except, device);

		if (lru < 0)
			break;
		entry_free(lru);
	}
}

/*
 * The device for a new copy: of the devices not taken (taken NULL: none
 * is), the one whose copies take the least memory (the lowest number among
 * equals), selected in the GPU object.  -1 when every device is taken, or
 * the one chosen for a replica (taken) cannot be selected; device 0 when
 * another cannot.
 */
static int
device_for_copy(const bool *taken)
{
	int			best = -1;
	KdError		err;

	for (int d = 0; d < kdg_service->ndevices; d++)
		if (!(taken && taken[d]) &&
			(best < 0 || kdg_service->device_used[d] < kdg_service->device_used[best]))
			best = d;
	if (best >= 0 && kd_gpu_select_device(best, &err) != KD_OK)
	{
		ereport(LOG,
				(errmsg("kdgpu GPU service could not select device %d: %s",
						best, err.message)));
		best = taken ? -1 : 0;
		if (best == 0)
			(void) kd_gpu_select_device(0, &err);
	}
	return best;
}

/*
 * Whether a named copy of bytes is to be split over every device: there
 * are several, and it is larger than one device's share (the memory limit,
 * or else the least free memory of a device when the service started).
 */
static bool
copy_splits(int64 bytes)
{
	int64		room = kdg_service->memory_limit;

	if (kdg_service->ndevices < 2)
		return false;
	for (int d = 0; room <= 0 && d < kdg_service->ndevices; d++)
		if (d == 0 || kdg_service->devices[d].free_memory < room)
			room = kdg_service->devices[d].free_memory;
	return bytes > room;
}

/*
 * Make room for a copy of bytes: drop older versions of the same index,
 * choose the device (*device, selected; -1 for a split copy, whose room is
 * made after its upload), then evict shared copies there least recently
 * used first while the limit would be passed, and anywhere while no entry
 * is free.  Returns a free entry, or -1.
 */
static int
entry_make_room(const uint64 *key, int64 bytes, bool split, int *device)
{
	int			freeslot = -1;

	for (int i = 0; key && i < KDG_RESIDENT_MAX; i++)
	{
		KdgResident *e = &kdg_service->resident[i];

		if (e->used && e->shared && e->key[0] == key[0] && e->key[3] == key[3])
			entry_free(i);
	}
	*device = split ? -1 : device_for_copy(NULL);
	if (*device >= 0)
		entries_trim(*device, bytes, -1);
	for (int i = 0; i < KDG_RESIDENT_MAX && freeslot < 0; i++)
		if (!kdg_service->resident[i].used)
			freeslot = i;
	if (freeslot < 0 && (freeslot = entry_lru(-1, -1)) >= 0)
		entry_free(freeslot);
	return freeslot;
}

/*
 * Record a new copy in entry i, on device or (split not NULL) split over
 * every device; the call's reply names it (if call is not NULL).
 */
static void
entry_record(int i, int device, KdGpuTree *copy, KdSplitCopy *split,
			 const KdTree *t, bool shared, int owner_pid, KdgCall *call)
{
	KdgResident *e = &kdg_service->resident[i];
	TimestampTz now = GetCurrentTimestamp();

	copies[i] = copy;
	splits[i] = split;
	SpinLockAcquire(&kdg_service->mutex);
	e->used = true;
	e->shared = shared;
	e->drop = false;
	memcpy(e->key, t->key, sizeof(e->key));
	e->owner_pid = shared ? 0 : owner_pid;
	e->device = split ? -1 : device;
	e->n = t->n;
	e->dim = t->dim;
	e->bytes = kd_tree_bytes(t->n, t->dim, t->nbounds);
	for (int d = 0; d < KDG_MAX_DEVICES; d++)
		e->device_bytes[d] = split ? kd_split_device_bytes(split, d) :
			(d == device ? e->bytes : 0);
	e->hits = 0;
	e->loaded_at = now;
	e->last_use = now;
	kdg_service->memory_used += e->bytes;
	for (int d = 0; d < KDG_MAX_DEVICES; d++)
		kdg_service->device_used[d] += e->device_bytes[d];
	SpinLockRelease(&kdg_service->mutex);
	if (call)
	{
		call->resident_out = i;
		call->version_out = e->version;
	}
}

/*
 * The entry of the copy a call names, counted as used; -1 when it is gone.
 * Its copy is copies[] or splits[].
 */
static int
entry_use(KdgCall *call)
{
	KdgResident *e;

	if (call->resident < 0 || call->resident >= KDG_RESIDENT_MAX)
		return -1;
	e = &kdg_service->resident[call->resident];
	if (!e->used || e->drop || e->version != call->version)
		return -1;
	if (call->done == 0)
	{
		SpinLockAcquire(&kdg_service->mutex);
		e->hits++;
		e->last_use = GetCurrentTimestamp();
		SpinLockRelease(&kdg_service->mutex);
	}
	return call->resident;
}

/* The call's tree, whose arrays lie in its segment. */
static KdTree
call_tree(KdgCall *call)
{
	char	   *base = (char *) call;
	KdTree		t;

	memset(&t, 0, sizeof(t));
	t.n = call->n;
	t.dim = call->dim;
	t.nbounds = call->nbounds;
	t.coords = (double *) (base + call->coords);
	t.refs = (uint64_t *) (base + call->refs);
	t.split = (uint8_t *) (base + call->split);
	t.bounds = (double *) (base + call->bounds);
	t.ref_order = call->ref_order;
	memcpy(t.key, call->key, sizeof(t.key));
	return t;
}

/* Engine interrupt callback: stop when the caller gave up or the service must. */
static int
call_interrupted(void *arg)
{
	KdgSlot    *slot = &kdg_service->slots[(int) (intptr_t) arg];

	return slot->state == KDG_SLOT_ABANDONED || gone(slot->pid) ||
		ProcDiePending || stopping;
}

/*
 * Upload to device (selected), retrying after evicting shared copies there
 * while it is full.
 */
static KdStatus
upload_evicting(const KdTree *t, int device, KdGpuTree **copy, int keep_entry,
				const KdExec *exec, KdError *err)
{
	for (;;)
	{
		KdStatus	st = kd_gpu_upload_copy(t, copy, exec, err);
		int			lru;

		if (st != KD_ERR_GPU_NOMEM || (lru = entry_lru(keep_entry, device)) < 0)
			return st;
		entry_free(lru);
	}
}

/*
 * Split t over every device, retrying after evicting shared copies
 * anywhere while one is full; then evict on each device what no longer
 * fits under the limit, keep_entry (the new copy's) aside.
 */
static KdStatus
upload_split(const KdTree *t, KdSplitCopy **split, int keep_entry,
			 KdExec *exec, KdError *err)
{
	for (;;)
	{
		KdStatus	st = kd_split_upload(t, kdg_service->ndevices, split, exec, err);
		int			lru;

		if (st != KD_ERR_GPU_NOMEM || (lru = entry_lru(keep_entry, -1)) < 0)
			return st;
		entry_free(lru);
	}
}

/*
 * Copies of t, just uploaded to entry e, on other devices, up to
 * kdgpu.gpu_replicas in all: each on the device without one whose copies
 * take the least memory.  A replica that does not fit is left out.
 */
static void
replicate(int e, const KdTree *t, int owner_pid, const KdExec *exec)
{
	int64		bytes = kd_tree_bytes(t->n, t->dim, t->nbounds);
	int			want = Min(kdg_service->replicas, kdg_service->ndevices);

	for (int r = 1; r < want; r++)
	{
		bool		has[KDG_MAX_DEVICES] = {false};
		int			device;
		int			slot = -1;
		KdGpuTree  *copy;
		KdError		err;
		KdStatus	st;

		for (int i = 0; i < KDG_RESIDENT_MAX; i++)
			if (kdg_service->resident[i].used && copies[i] &&
				memcmp(kdg_service->resident[i].key, t->key, sizeof(t->key)) == 0)
				has[kdg_service->resident[i].device] = true;
		if ((device = device_for_copy(has)) < 0)
			return;
		entries_trim(device, bytes, e);
		for (int i = 0; i < KDG_RESIDENT_MAX && slot < 0; i++)
			if (!kdg_service->resident[i].used)
				slot = i;
		if (slot < 0)
			return;
		st = kd_gpu_upload_copy(t, &copy, exec, &err);
		if (st == KD_ERR_GPU)
			fatal = true;
		if (st != KD_OK)
			return;
		entry_record(slot, device, copy, NULL, t, true, owner_pid, NULL);
	}
}

/*
 * Another whole copy of the tree that call searches, whose device thread
 * is idle, or -1.
 */
static int
replica_for(const KdgCall *call)
{
	const KdgResident *named = &kdg_service->resident[call->resident];

	for (int i = 0; i < KDG_RESIDENT_MAX; i++)
	{
		const KdgResident *e = &kdg_service->resident[i];

		if (i != call->resident && e->used && e->shared && !e->drop && copies[i] &&
			memcmp(e->key, named->key, sizeof(e->key)) == 0 &&
			e->device < kdg_service_threads_count() &&
			kdg_service_thread_idle(e->device))
			return i;
	}
	return -1;
}

/* Put a range result in a pinned segment of its own, named in the reply. */
static KdStatus
reply_range(KdgCall *call, KdRangeResult *res, KdError *err)
{
	Size		offsets = sizeof(int64) * (res->nq + 1);
	Size		hits = sizeof(KdNeighbor) * res->offsets[res->nq];
	dsm_segment *seg = dsm_create(offsets + hits + 1,
								  DSM_CREATE_NULL_IF_MAXSEGMENTS);
	char	   *p;

	if (seg == NULL)
		return kd_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
							"the kdgpu GPU service found no free shared memory segment for a result");
	p = dsm_segment_address(seg);
	memcpy(p, res->offsets, offsets);
	memcpy(p + offsets, res->hits, hits);
	dsm_pin_segment(seg);
	call->range = dsm_segment_handle(seg);
	dsm_detach(seg);
	return KD_OK;
}

/*
 * The copies of entry e's tree, e's first, each on its own device, into
 * out (KDG_MAX_DEVICES of room); how many.
 */
static int
copies_of(int e, KdGpuTree **out)
{
	const KdgResident *named = &kdg_service->resident[e];
	bool		taken[KDG_MAX_DEVICES] = {false};
	int			n = 0;

	out[n++] = copies[e];
	taken[named->device] = true;
	for (int i = 0; i < KDG_RESIDENT_MAX && n < KDG_MAX_DEVICES; i++)
	{
		const KdgResident *r = &kdg_service->resident[i];

		if (i != e && r->used && r->shared && !r->drop && copies[i] &&
			r->device >= 0 && r->device < KDG_MAX_DEVICES && !taken[r->device] &&
			memcmp(r->key, named->key, sizeof(r->key)) == 0)
		{
			taken[r->device] = true;
			out[n++] = copies[i];
		}
	}
	return n;
}

/*
 * Whether a kNN call is spread over the copies of its tree on several
 * devices (kdgpu.gpu_replicas): its queries left fill more than a slice,
 * and its tree has copies on several devices.  Such a call is served on
 * the main thread while every device is free, like a split copy's.
 */
static bool
call_spreads(const KdgCall *call)
{
	KdGpuTree  *reps[KDG_MAX_DEVICES];
	int			e = call->resident;

	return call->op == KDG_OP_KNN && e >= 0 && e < KDG_RESIDENT_MAX &&
		kdg_service->resident[e].used && copies[e] != NULL &&
		call->nq - call->done > KDG_SLICE_QUERIES &&
		copies_of(e, reps) > 1;
}

/*
 * Whether entry e keeps its rows and an ACQUIRE call's rows differ from
 * them within the call's limits (by TID, and by point too where the entry
 * keeps its rows' points: the call must then send its own); the difference
 * goes to the call's diff area (gone ranks, then added ordinals) and
 * counts, and the copy's points to ntree.
 */
static bool
call_rows_fit(int e, KdgCall *call)
{
	char	   *base = (char *) call;
	uint64	   *gone = (uint64 *) (base + call->diff);
	const KdgResident *r = &kdg_service->resident[e];
	KdgRowsView tv = {rows[e], 1, points[e], r->dim, r->n};
	KdgRowsView cv = {(uint64 *) (base + call->in1), 1,
	call->points ? (double *) (base + call->points) : NULL, call->dim, call->n};
	KdgDiff		diff = {0, gone, 0, gone + call->max_gone};

	if (rows[e] == NULL || (call->ntree >= 0 && r->n != call->ntree) ||
		(points[e] && (call->points == 0 || call->dim != r->dim)) ||
		!kdg_rows_diff(&tv, &cv, r->dim, call->max_gone, call->max_added, &diff))
		return false;
	call->ngone = diff.ngone;
	call->nadded = diff.nadded;
	call->ntree = r->n;
	return true;
}

/*
 * Serve (a slice of) call, from slot i; true when it is done.  The reply's
 * status and error are set when it is.  On a device thread (range not
 * NULL) only queries on whole copies come here, and a range result is left
 * in *range for the main thread to reply with.
 */
static bool
serve(KdgCall *call, int i, KdRangeResult *range)
{
	char	   *base = (char *) call;
	KdExec		exec;
	KdGpuTree  *copy = NULL;
	KdSplitCopy *split = NULL;
	KdStatus	st = KD_OK;
	KdError    *err = &call->err;
	KdTree		t;
	KdGpuTimes	times = {0};
	int			e = -1;
	int			device = 0;
	bool		splits_copy;

	kd_exec_init(&exec);
	exec.device = KD_DEVICE_GPU;
	exec.threads = 1;
	exec.interrupt = call_interrupted;
	exec.interrupt_arg = (void *) (intptr_t) i;
	exec.times = &times;

	switch (call->op)
	{
		case KDG_OP_ACQUIRE:
			/* a tree built from rows read is found only by its rows */
			e = call->key[3] == KDG_KEY_BUILT + 1 && !call->any_version ? -1 :
				entry_named(call->key, call->any_version);
			if (e >= 0 && call->in1 && !call_rows_fit(e, call))
				e = -1;
			call->missing = e < 0;
			call->has_rows = e >= 0 && rows[e] != NULL;
			if (e >= 0 && call->in1 && call->out)
				memcpy(base + call->out, ranks[e], sizeof(uint64) * call->ntree);
			if (e >= 0)
			{
				SpinLockAcquire(&kdg_service->mutex);
				kdg_service->resident[e].last_use = GetCurrentTimestamp();
				SpinLockRelease(&kdg_service->mutex);
				call->resident_out = e;
				call->version_out = kdg_service->resident[e].version;
			}
			break;
		case KDG_OP_ROWS:
			e = call->resident;
			if (e >= 0 && e < KDG_RESIDENT_MAX && kdg_service->resident[e].used &&
				kdg_service->resident[e].version == call->version && rows[e] == NULL &&
				kdg_service->resident[e].n == call->n)
			{
				Size		pbytes = sizeof(double) * call->dim * Max(call->n, 1);

				rows[e] = malloc(sizeof(uint64) * Max(call->n, 1));
				ranks[e] = malloc(sizeof(uint64) * Max(call->n, 1));
				points[e] = call->points ? malloc(pbytes) : NULL;
				if (rows[e] && ranks[e] && (points[e] || !call->points))
				{
					memcpy(rows[e], base + call->in1, sizeof(uint64) * call->n);
					memcpy(ranks[e], base + call->in2, sizeof(uint64) * call->n);
					if (call->points)
						memcpy(points[e], base + call->points, pbytes);
				}
				else
				{
					free(rows[e]);
					free(ranks[e]);
					free(points[e]);
					rows[e] = ranks[e] = NULL;
					points[e] = NULL;
				}
			}
			break;
		case KDG_OP_UPLOAD:
			t = call_tree(call);
			/* each tree built from rows read is a version of its own */
			if (call->key[3] == KDG_KEY_BUILT + 1)
				t.key[2] = ++built_versions;
			if ((e = entry_named(t.key, false)) >= 0)
			{
				call->resident_out = e;
				call->version_out = kdg_service->resident[e].version;
				break;
			}
			splits_copy = call->key[3] != 0 &&
				copy_splits(kd_tree_bytes(t.n, t.dim, t.nbounds));
			e = entry_make_room(call->key[3] ? call->key : NULL,
								kd_tree_bytes(t.n, t.dim, t.nbounds),
								splits_copy, &device);
			if (e < 0)
			{
				st = kd_set_error(err, KD_ERR_GPU_NOMEM, -1,
								  "the kdgpu GPU service holds as many device copies as it can");
				break;
			}
			if (splits_copy)
				st = upload_split(&t, &split, e, &exec, err);
			else
				st = upload_evicting(&t, device, &copy, e, &exec, err);
			if (st == KD_OK)
				entry_record(e, device, copy, split, &t, call->key[3] != 0,
							 kdg_service->slots[i].pid, call);
			if (st == KD_OK && copy && call->key[3] != 0)
				replicate(e, &t, kdg_service->slots[i].pid, &exec);
			for (int d = 0; st == KD_OK && splits_copy && d < kdg_service->ndevices; d++)
				entries_trim(d, 0, e);
			break;
		case KDG_OP_BUILD:
			t = call_tree(call);
			memset(t.key, 0, sizeof(t.key));
			if (call->keep)
				e = entry_make_room(NULL, kd_tree_bytes(t.n, t.dim, t.nbounds),
									false, &device);
			else
				device = device_for_copy(NULL);
			st = kd_gpu_build((double *) (base + call->points),
							  (uint64_t *) (base + call->point_refs), t.n, t.dim,
							  &t, e >= 0 ? &copy : NULL, &exec, err);
			/* a build one device cannot hold: every device's part */
			if (st == KD_ERR_GPU_NOMEM && !call->keep && kdg_service->ndevices > 1)
				st = kd_split_build((double *) (base + call->points),
									(uint64_t *) (base + call->point_refs), t.n, t.dim,
									kdg_service->ndevices, &t, &exec, err);
			call->ref_order_out = t.ref_order;
			if (st == KD_OK && copy)
				entry_record(e, device, copy, NULL, &t, false,
							 kdg_service->slots[i].pid, call);
			else
				call->resident_out = -1;
			break;
		case KDG_OP_KNN:
			if ((e = entry_use(call)) >= 0)
			{
				KdGpuTree  *reps[KDG_MAX_DEVICES];
				int			nreps = !kdg_service_on_device_thread() && call_spreads(call) ?
					copies_of(e, reps) : 1;
				int64		from = call->done;
				int64		to = Min(call->nq, from + KDG_SLICE_QUERIES * nreps);
				double	   *queries = (double *) (base + call->in1) + from * call->dim;
				KdNeighbor *out = (KdNeighbor *) (base + call->out) + from * call->k;
				int32_t    *count = (int32_t *) (base + call->count) + from;

				if (splits[e])
					st = kd_split_knn(splits[e], queries, to - from, call->k,
									  out, count, &exec, err);
				else if (nreps > 1)
					st = kd_replicas_knn(reps, nreps, queries, to - from, call->dim,
										 call->k, out, count, &exec, err);
				else
					st = kd_gpu_knn(copies[e], queries, to - from, call->k,
									out, count, &exec, err);
				call->done = to;
				if (st == KD_OK && to < call->nq)
				{
					call->kernel_ms += times.kernel_ms;
					return false;
				}
			}
			break;
		case KDG_OP_ALL_KNN:
			if ((e = entry_use(call)) >= 0 && splits[e])
				st = kd_split_all_knn(splits[e], call->k, call->include_self,
									  (KdNeighbor *) (base + call->out),
									  (int32_t *) (base + call->count), &exec, err);
			else if (e >= 0)
				st = kd_gpu_all_knn(copies[e], call->k, call->include_self,
									(KdNeighbor *) (base + call->out),
									(int32_t *) (base + call->count), &exec, err);
			break;
		case KDG_OP_RADIUS:
		case KDG_OP_BOX:
			if ((e = entry_use(call)) >= 0)
			{
				KdRangeResult res = {0};
				double	   *in1 = (double *) (base + call->in1);
				double	   *in2 = (double *) (base + call->in2);

				if (call->op == KDG_OP_RADIUS && splits[e])
					st = kd_split_radius(splits[e], in1, call->nq, in2, call->nradii,
										 &res, &exec, err);
				else if (call->op == KDG_OP_RADIUS)
					st = kd_gpu_radius(copies[e], in1, call->nq, in2, call->nradii,
									   &res, &exec, err);
				else if (splits[e])
					st = kd_split_box(splits[e], in1, in2, call->nq, &res, &exec, err);
				else
					st = kd_gpu_box(copies[e], in1, in2, call->nq, &res, &exec, err);
				if (st == KD_OK && range)
					*range = res;
				else
				{
					if (st == KD_OK)
						st = reply_range(call, &res, err);
					kd_range_result_free(&res);
				}
			}
			break;
	}
	if (call->op >= KDG_OP_KNN && e < 0)
		call->missing = true;
	call->kernel_ms += times.kernel_ms;
	call->status = st;
	return true;
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
		segs[i] = dsm_attach(kdg_service->slots[i].handle);
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
	if (abandoned || gone(slot->pid))
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
	dsm_detach(segs[i]);
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
					  serve(call, i, NULL));
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
		copies[call->resident] == NULL || e->device >= kdg_service_threads_count() ||
		call_spreads(call))
		return -1;
	return e->device;
}

/* Hand slot i's call to device's thread. */
static void
dispatch(int i, KdgCall *call, int device)
{
	busy[call->resident] = true;
	slot_begin(i);
	kdg_service_thread_run(device, i, call, serve);
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
		busy[call->resident] = false;
		if (range.offsets)
		{
			if (call->status == KD_OK)
				call->status = reply_range(call, &range, &call->err);
			kd_range_result_free(&range);
		}
		if (slot_after(i, call, finished) == KD_ERR_GPU)
			fatal = true;
	}
}

/*
 * Drop the copies asked to go or whose owner has exited, and free the
 * slots of callers that are gone.
 */
static void
sweep(void)
{
	for (int i = 0; i < KDG_RESIDENT_MAX; i++)
	{
		KdgResident *e = &kdg_service->resident[i];

		if (e->used && (e->drop || (!e->shared && gone(e->owner_pid))) &&
			entry_quiet(i))
			entry_free(i);
	}
	for (int i = 0; i < kdg_service->nslots; i++)
	{
		KdgSlot    *slot = &kdg_service->slots[i];

		if (segs[i] != NULL || slot->state == KDG_SLOT_FREE ||
			kdg_service_thread_of_slot(i) >= 0)
			continue;
		if (slot->state == KDG_SLOT_ABANDONED || gone(slot->pid))
			slot_free(i, slot->state == KDG_SLOT_DONE ? slot->range : DSM_HANDLE_INVALID);
	}
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
			(r = replica_for(call)) >= 0)
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
		entries_trim(d, 0, -1);
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
	bool		usable = kd_gpu_available(&info, why, sizeof(why));
	int			ndevices = 0;
	KdError		err;

	gpu_ready = usable;
	for (int d = 0; gpu_ready && d < Min(info.device_count, KDG_MAX_DEVICES); d++)
	{
		if (kd_gpu_select_device(d, &err) != KD_OK ||
			kd_gpu_probe(&devices[d], &err) != KD_OK)
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
		(void) kd_gpu_select_device(0, &err);
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
	stopping = true;
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
		if (fatal && kdg_service_threads_idle())
		{
			ereport(LOG,
					(errmsg("kdgpu GPU service restarting after a GPU error, for a fresh CUDA context")));
			proc_exit(1);
		}
		sweep();
		i = gpu_ready && !fatal ? next_slot(&device) : -1;
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
			fatal = true;
	}
}
