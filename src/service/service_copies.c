/*
 * service_copies.c
 *	  The GPU service's table of device copies: finding, making room for,
 *	  uploading, replicating and freeing the copies it holds.
 *
 * Entry i of the shared table (kdg_service->resident) describes a copy;
 * kdg_held keeps what only the service process sees of it: the device copy
 * (or the copy split over every device), and for a ranked tree its rows,
 * references and points.  An entry is used only while its copy exists, a
 * copy is freed only when no device thread searches it (kdg_held.busy),
 * and the copies of one device never take more than its share of memory:
 * making room evicts the least recently used copies that no backend names
 * (kdg_entry_make_room).
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

KdgHeld		kdg_held;

/* Free entry i's device copy and the entry. */
void
kdg_entry_free(int i)
{
	KdgResident *e = &kdg_service->resident[i];

	kde_gpu_release_copy(kdg_held.copies[i]);
	kde_split_release(kdg_held.splits[i]);
	kdg_held.copies[i] = NULL;
	kdg_held.splits[i] = NULL;
	free(kdg_held.rows[i]);
	free(kdg_held.ranks[i]);
	free(kdg_held.points[i]);
	kdg_held.rows[i] = NULL;
	kdg_held.ranks[i] = NULL;
	kdg_held.points[i] = NULL;
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
bool
kdg_entry_quiet(int i)
{
	int			d = kdg_service->resident[i].device;

	if (kdg_held.busy[i])
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

		if (i != except && e->used && e->shared && kdg_entry_quiet(i) &&
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
int
kdg_entry_named(const uint64 *key, bool any_version)
{
	int			found = -1;

	for (int i = 0; i < KDG_RESIDENT_MAX; i++)
	{
		KdgResident *e = &kdg_service->resident[i];

		if (e->used && e->shared && !e->drop &&
			e->key[0] == key[0] && e->key[1] == key[1] && e->key[3] == key[3] &&
			(any_version || e->key[2] == key[2]) &&
			(found < 0 || (kdg_held.rows[i] != NULL && kdg_held.rows[found] == NULL)))
			found = i;
	}
	return found;
}

/*
 * Evict shared copies on device other than except, least recently used
 * first, until bytes more fit under the memory limit (or none is left to
 * evict).
 */
void
kdg_entries_trim(int device, int64 bytes, int except)
{
	while (kdg_service->memory_limit > 0 &&
		   kdg_service->device_used[device] + bytes > kdg_service->memory_limit)
	{
		int			lru = entry_lru(except, device);

		if (lru < 0)
			break;
		kdg_entry_free(lru);
	}
}

/*
 * The device for a new copy: of the devices not taken (taken NULL: none
 * is), the one whose copies take the least memory (the lowest number among
 * equals), selected in the GPU object.  -1 when every device is taken, or
 * the one chosen for a replica (taken) cannot be selected; device 0 when
 * another cannot.
 */
int
kdg_device_for_copy(const bool *taken)
{
	int			best = -1;
	KdError		err;

	for (int d = 0; d < kdg_service->ndevices; d++)
		if (!(taken && taken[d]) &&
			(best < 0 || kdg_service->device_used[d] < kdg_service->device_used[best]))
			best = d;
	if (best >= 0 && kde_gpu_select_device(best, &err) != KD_OK)
	{
		ereport(LOG,
				(errmsg("kdgpu GPU service could not select device %d: %s",
						best, err.message)));
		best = taken ? -1 : 0;
		if (best == 0)
			(void) kde_gpu_select_device(0, &err);
	}
	return best;
}

/*
 * Whether a named copy of bytes is to be split over every device: there
 * are several, and it is larger than one device's share (the memory limit,
 * or else the least free memory of a device when the service started).
 */
bool
kdg_copy_splits(int64 bytes)
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
int
kdg_entry_make_room(const uint64 *key, int64 bytes, bool split, int *device)
{
	int			freeslot = -1;

	for (int i = 0; key && i < KDG_RESIDENT_MAX; i++)
	{
		KdgResident *e = &kdg_service->resident[i];

		if (e->used && e->shared && e->key[0] == key[0] && e->key[3] == key[3])
			kdg_entry_free(i);
	}
	*device = split ? -1 : kdg_device_for_copy(NULL);
	if (*device >= 0)
		kdg_entries_trim(*device, bytes, -1);
	for (int i = 0; i < KDG_RESIDENT_MAX && freeslot < 0; i++)
		if (!kdg_service->resident[i].used)
			freeslot = i;
	if (freeslot < 0 && (freeslot = entry_lru(-1, -1)) >= 0)
		kdg_entry_free(freeslot);
	return freeslot;
}

/*
 * Record a new copy in entry i, on device or (split not NULL) split over
 * every device; the call's reply names it (if call is not NULL).
 */
void
kdg_entry_record(int i, int device, KdGpuTree *copy, KdSplitCopy *split,
			 const KdTree *t, bool shared, int owner_pid, KdgCall *call)
{
	KdgResident *e = &kdg_service->resident[i];
	TimestampTz now = GetCurrentTimestamp();

	kdg_held.copies[i] = copy;
	kdg_held.splits[i] = split;
	SpinLockAcquire(&kdg_service->mutex);
	e->used = true;
	e->shared = shared;
	e->drop = false;
	memcpy(e->key, t->key, sizeof(e->key));
	e->owner_pid = shared ? 0 : owner_pid;
	e->device = split ? -1 : device;
	e->n = t->n;
	e->dim = t->dim;
	e->bytes = kde_tree_bytes(t->n, t->dim, t->nbounds);
	for (int d = 0; d < KDG_MAX_DEVICES; d++)
		e->device_bytes[d] = split ? kde_split_device_bytes(split, d) :
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
 * Its copy is kdg_held.copies[] or kdg_held.splits[].
 */
int
kdg_entry_use(KdgCall *call)
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
KdTree
kdg_call_tree(KdgCall *call)
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

/*
 * Upload to device (selected), retrying after evicting shared copies there
 * while it is full.
 */
KdStatus
kdg_upload_evicting(const KdTree *t, int device, KdGpuTree **copy, int keep_entry,
				const KdExec *exec, KdError *err)
{
	for (;;)
	{
		KdStatus	st = kde_gpu_upload_copy(t, copy, exec, err);
		int			lru;

		if (st != KD_ERR_GPU_NOMEM || (lru = entry_lru(keep_entry, device)) < 0)
			return st;
		kdg_entry_free(lru);
	}
}

/*
 * Split t over every device, retrying after evicting shared copies
 * anywhere while one is full; then evict on each device what no longer
 * fits under the limit, keep_entry (the new copy's) aside.
 */
KdStatus
kdg_upload_split(const KdTree *t, KdSplitCopy **split, int keep_entry,
			 KdExec *exec, KdError *err)
{
	for (;;)
	{
		KdStatus	st = kde_split_upload(t, kdg_service->ndevices, split, exec, err);
		int			lru;

		if (st != KD_ERR_GPU_NOMEM || (lru = entry_lru(keep_entry, -1)) < 0)
			return st;
		kdg_entry_free(lru);
	}
}

/*
 * Copies of t, just uploaded to entry e, on other devices, up to
 * kdgpu.gpu_replicas in all: each on the device without one whose copies
 * take the least memory.  A replica that does not fit is left out.
 */
void
kdg_replicate(int e, const KdTree *t, int owner_pid, const KdExec *exec)
{
	int64		bytes = kde_tree_bytes(t->n, t->dim, t->nbounds);
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
			if (kdg_service->resident[i].used && kdg_held.copies[i] &&
				memcmp(kdg_service->resident[i].key, t->key, sizeof(t->key)) == 0)
				has[kdg_service->resident[i].device] = true;
		if ((device = kdg_device_for_copy(has)) < 0)
			return;
		kdg_entries_trim(device, bytes, e);
		for (int i = 0; i < KDG_RESIDENT_MAX && slot < 0; i++)
			if (!kdg_service->resident[i].used)
				slot = i;
		if (slot < 0)
			return;
		st = kde_gpu_upload_copy(t, &copy, exec, &err);
		if (st == KD_ERR_GPU)
			kdg_service_fatal = true;
		if (st != KD_OK)
			return;
		kdg_entry_record(slot, device, copy, NULL, t, true, owner_pid, NULL);
	}
}

/*
 * Another whole copy of the tree that call searches, whose device thread
 * is idle, or -1.
 */
int
kdg_replica_for(const KdgCall *call)
{
	const KdgResident *named = &kdg_service->resident[call->resident];

	for (int i = 0; i < KDG_RESIDENT_MAX; i++)
	{
		const KdgResident *e = &kdg_service->resident[i];

		if (i != call->resident && e->used && e->shared && !e->drop && kdg_held.copies[i] &&
			memcmp(e->key, named->key, sizeof(e->key)) == 0 &&
			e->device < kdg_service_threads_count() &&
			kdg_service_thread_idle(e->device))
			return i;
	}
	return -1;
}

/*
 * The copies of entry e's tree, e's first, each on its own device, into
 * out (KDG_MAX_DEVICES of room); how many.
 */
int
kdg_copies_of(int e, KdGpuTree **out)
{
	const KdgResident *named = &kdg_service->resident[e];
	bool		taken[KDG_MAX_DEVICES] = {false};
	int			n = 0;

	out[n++] = kdg_held.copies[e];
	taken[named->device] = true;
	for (int i = 0; i < KDG_RESIDENT_MAX && n < KDG_MAX_DEVICES; i++)
	{
		const KdgResident *r = &kdg_service->resident[i];

		if (i != e && r->used && r->shared && !r->drop && kdg_held.copies[i] &&
			r->device >= 0 && r->device < KDG_MAX_DEVICES && !taken[r->device] &&
			memcmp(r->key, named->key, sizeof(r->key)) == 0)
		{
			taken[r->device] = true;
			out[n++] = kdg_held.copies[i];
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
bool
kdg_call_spreads(const KdgCall *call)
{
	KdGpuTree  *reps[KDG_MAX_DEVICES];
	int			e = call->resident;

	return call->op == KDG_OP_KNN && e >= 0 && e < KDG_RESIDENT_MAX &&
		kdg_service->resident[e].used && kdg_held.copies[e] != NULL &&
		call->nq - call->done > KDG_SLICE_QUERIES &&
		kdg_copies_of(e, reps) > 1;
}

/*
 * Whether entry e keeps its rows and an ACQUIRE call's rows differ from
 * them within the call's limits (by TID, and by point too where the entry
 * keeps its rows' points: the call must then send its own); the difference
 * goes to the call's diff area (gone ranks, then added ordinals) and
 * counts, and the copy's points to ntree.
 */
bool
kdg_call_rows_fit(int e, KdgCall *call)
{
	char	   *base = (char *) call;
	uint64	   *gone = (uint64 *) (base + call->diff);
	const KdgResident *r = &kdg_service->resident[e];
	KdgRowsView tv = {kdg_held.rows[e], 1, kdg_held.points[e], r->dim, r->n};
	KdgRowsView cv = {(uint64 *) (base + call->in1), 1,
	call->points ? (double *) (base + call->points) : NULL, call->dim, call->n};
	KdgDiff		diff = {0, gone, 0, gone + call->max_gone};

	if (kdg_held.rows[e] == NULL || (call->ntree >= 0 && r->n != call->ntree) ||
		(kdg_held.points[e] && (call->points == 0 || call->dim != r->dim)) ||
		!kdg_rows_diff(&tv, &cv, r->dim, call->max_gone, call->max_added, &diff))
		return false;
	call->ngone = diff.ngone;
	call->nadded = diff.nadded;
	call->ntree = r->n;
	return true;
}
