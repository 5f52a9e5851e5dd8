/*
 * service_client.c
 *	  The backend's side of the GPU service: a GPU function table
 *	  (kd_gpu_abi.h) whose entries forward each call to the service.
 *
 * The engine consults its provider (kde_gpu_set_provider) the first time a
 * backend wants the GPU.  When the postmaster started the service, the
 * provider returns this table and the backend uses it for its life, so it
 * never opens the GPU object or creates a CUDA context itself; while the
 * service is stopped or restarting, the table's probe says so and the
 * engine runs the work on the CPU.  Without the service (no preload, or
 * kdgpu.service off at server start), the provider returns NULL and the
 * engine opens the GPU object in the backend.
 *
 * A call goes to the service through service_calls.c.  If the service
 * stops while a call waits, or is idle, the call fails with
 * KD_ERR_GPU_UNAVAILABLE, after which kdgpu.device = 'auto' runs the work
 * on the CPU in the backend, with the same answer.
 *
 * A device copy is a KdGpuTree here: the service's entry, its version and
 * the host tree it came from.  A named tree (an index's, KdTree.key) is
 * first looked up by name, so a session finds the copy another session
 * uploaded and ships nothing; when the service has evicted it or restarted,
 * the call uploads it again from the host tree.  Releasing a named copy
 * leaves it resident for other sessions; releasing an unnamed one asks the
 * service to free it, without waiting.
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

/* A device copy held by the service, as the backend names it. */
struct KdGpuTree
{
	int			resident;
	uint64		version;
	uint64		epoch;			/* the service run that holds it */
	bool		shared;
	int64		n;				/* the tree's points and dimension */
	int			dim;
	const KdTree *host;			/* to upload again (named trees only: an
								 * index's tree, which outlives its copy),
								 * or NULL (kdg_service_find) */
	bool		has_rows;		/* the service keeps the tree's rows */
};

static object_access_hook_type prev_object_access_hook = NULL;

/*
 * A new handle for the service's entry named in a reply, of a tree of n
 * points of dim, from host (or NULL).
 */
static KdGpuTree *
handle_new(const KdgCall *call, const KdTree *host, int64 n, int dim,
		   bool shared)
{
	KdGpuTree  *g = MemoryContextAlloc(TopMemoryContext, sizeof(KdGpuTree));

	g->resident = call->resident_out;
	g->version = call->version_out;
	g->shared = shared;
	g->n = n;
	g->dim = dim;
	g->host = host;
	g->has_rows = call->has_rows;
	kdg_service_state(&g->epoch);
	return g;
}

/* Look the named tree up, or ship it; *found tells which. */
static KdStatus
acquire_or_upload(const KdTree *tree, KdGpuTree **out, const KdExec *exec,
				  KdError *err)
{
	bool		named = tree->key[3] != 0;
	dsm_segment *seg;
	KdgCall    *call;
	KdStatus	st;

	if (named)
	{
		if ((seg = kdg_call_begin(sizeof(KdgCall), KDG_OP_ACQUIRE, &call, err)) == NULL)
			return err->code;
		memcpy(call->key, tree->key, sizeof(call->key));
		st = kdg_call_run(seg, call, exec, err);
		if (st == KD_OK && !call->missing)
			*out = handle_new(call, tree, tree->n, tree->dim, true);
		kdg_call_end(seg);
		if (st != KD_OK || *out)
			return st;
	}
	seg = kdg_call_begin(MAXALIGN(sizeof(KdgCall)) +
					 kdg_tree_shipped_size(tree->n, tree->dim, tree->nbounds),
					 KDG_OP_UPLOAD, &call, err);
	if (seg == NULL)
		return err->code;
	memcpy(call->key, tree->key, sizeof(call->key));
	kdg_ship_tree(call, tree, MAXALIGN(sizeof(KdgCall)), true);
	st = kdg_call_run(seg, call, exec, err);
	if (st == KD_OK)
		*out = handle_new(call, tree, tree->n, tree->dim, named);
	kdg_call_end(seg);
	return st;
}

/* probe(): the service's device, or why it has none. */
static KdStatus
client_probe(KdGpuInfo *info, KdError *err)
{
	KdStatus	st = KD_OK;

	SpinLockAcquire(&kdg_service->mutex);
	if (kdg_service->state == KDG_SERVICE_READY)
		*info = kdg_service->info;
	else if (kdg_service->state == KDG_SERVICE_IDLE)
		st = kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
						  "kdgpu GPU service: %s", kdg_service->why);
	else
		st = kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
						  "the kdgpu GPU service is not running");
	SpinLockRelease(&kdg_service->mutex);
	return st;
}

/* select_device(): the service places copies itself. */
static KdStatus
client_select_device(int device, KdError *err)
{
	return kde_set_error(err, KD_ERR_ARG, -1,
						"the kdgpu GPU service chooses the device of each copy");
}

/* upload(): find or make the service's copy of tree. */
static KdStatus
client_upload(const KdTree *tree, KdGpuTree **out, const KdExec *exec,
			  KdError *err)
{
	*out = NULL;
	return acquire_or_upload(tree, out, exec, err);
}

/* release(): let go of a copy; an unnamed one is freed by the service. */
static void
client_release(KdGpuTree *g)
{
	int			procno = -1;

	if (g == NULL)
		return;
	if (!g->shared && kdg_service)
	{
		SpinLockAcquire(&kdg_service->mutex);
		if (g->epoch == kdg_service->epoch &&
			kdg_service->resident[g->resident].version == g->version)
		{
			kdg_service->resident[g->resident].drop = true;
			procno = kdg_service->procno;
		}
		SpinLockRelease(&kdg_service->mutex);
		if (procno >= 0)
			SetLatch(&ProcGlobal->allProcs[procno].procLatch);
	}
	pfree(g);
}

/*
 * Point call at g's entry; when the service restarted since g was made, a
 * named tree is found or uploaded again first.
 */
static KdStatus
call_target(KdgCall *call, KdGpuTree *g, const KdExec *exec, KdError *err)
{
	uint64		epoch;

	kdg_service_state(&epoch);
	if (epoch != g->epoch)
	{
		KdGpuTree  *fresh = NULL;
		KdStatus	st;

		if (!g->shared || g->host == NULL)
			return kde_set_error(err, KD_ERR_GPU, -1,
								"the kdgpu GPU service restarted and lost this device copy");
		st = acquire_or_upload(g->host, &fresh, exec, err);
		if (st != KD_OK)
			return st;
		g->resident = fresh->resident;
		g->version = fresh->version;
		g->epoch = fresh->epoch;
		pfree(fresh);
	}
	call->resident = g->resident;
	call->version = g->version;
	return KD_OK;
}

/*
 * Run a query call on g's copy; when the service no longer holds it, a
 * named tree is uploaded again and the call run once more.
 */
static KdStatus
call_on_copy(dsm_segment *seg, KdgCall *call, KdGpuTree *g,
			 const KdExec *exec, KdError *err)
{
	for (int attempt = 0;; attempt++)
	{
		KdStatus	st = call_target(call, g, exec, err);

		if (st == KD_OK)
			st = kdg_call_run(seg, call, exec, err);
		if (st != KD_OK || !call->missing)
			return st;
		if (attempt > 0 || !g->shared || g->host == NULL)
			return kde_set_error(err, KD_ERR_GPU, -1,
								"the kdgpu GPU service no longer holds this device copy");
		g->epoch = 0;			/* look it up or upload it again */
		call->missing = false;
		call->done = 0;
	}
}

/* build(): ship the points, take the tree back, keep the copy if asked. */
static KdStatus
client_build(const double *points, const uint64_t *refs, int64_t n, int dim,
			 KdTree *tree, KdGpuTree **out, const KdExec *exec, KdError *err)
{
	Size		head = MAXALIGN(sizeof(KdgCall));
	Size		pts = MAXALIGN(sizeof(double) * n * dim);
	Size		prefs = MAXALIGN(sizeof(uint64) * n);
	dsm_segment *seg;
	KdgCall    *call;
	KdStatus	st;
	char	   *base;

	seg = kdg_call_begin(head + pts + prefs + kdg_tree_shipped_size(n, dim, tree->nbounds),
					 KDG_OP_BUILD, &call, err);
	if (seg == NULL)
		return err->code;
	base = (char *) call;
	call->points = head;
	call->point_refs = head + pts;
	kdg_parallel_copy(base + call->points, points, sizeof(double) * n * dim);
	kdg_parallel_copy(base + call->point_refs, refs, sizeof(uint64) * n);
	kdg_ship_tree(call, tree, head + pts + prefs, false);
	call->keep = out != NULL;
	st = kdg_call_run(seg, call, exec, err);
	if (st == KD_OK)
	{
		kdg_parallel_copy(tree->coords, base + call->coords, sizeof(double) * n * dim);
		kdg_parallel_copy(tree->refs, base + call->refs, sizeof(uint64) * n);
		memcpy(tree->split, base + call->split, n);
		memcpy(tree->bounds, base + call->bounds,
			   sizeof(double) * 2 * dim * tree->nbounds);
		tree->ref_order = call->ref_order_out;
		if (out)
			*out = call->resident_out >= 0 ? handle_new(call, tree, n, dim, false) : NULL;
	}
	kdg_call_end(seg);
	return st;
}

/*
 * Run a kNN or All-kNN call on g's copy (call_on_copy), take back its
 * nrows neighbour lists of k (at call->out) and their counts (at
 * call->count), and detach the segment.
 */
static KdStatus
call_take_neighbours(dsm_segment *seg, KdgCall *call, KdGpuTree *g,
					 int64 nrows, int k, KdNeighbor *out, int32_t *count,
					 const KdExec *exec, KdError *err)
{
	KdStatus	st = call_on_copy(seg, call, g, exec, err);

	if (st == KD_OK)
	{
		kdg_parallel_copy(out, (char *) call + call->out,
						  sizeof(KdNeighbor) * nrows * k);
		memcpy(count, (char *) call + call->count, sizeof(int32) * nrows);
	}
	kdg_call_end(seg);
	return st;
}

/* knn(): ship the queries, take the neighbours back. */
static KdStatus
client_knn(const KdGpuTree *gtree, const double *queries, int64_t nq, int k,
		   KdNeighbor *out, int32_t *count, const KdExec *exec, KdError *err)
{
	KdGpuTree  *g = (KdGpuTree *) gtree;
	Size		head = MAXALIGN(sizeof(KdgCall));
	Size		qbytes = sizeof(double) * nq * g->dim;
	Size		obytes = sizeof(KdNeighbor) * nq * k;
	dsm_segment *seg;
	KdgCall    *call;
	char	   *base;

	seg = kdg_call_begin(head + MAXALIGN(qbytes) + MAXALIGN(obytes) + sizeof(int32) * nq,
					 KDG_OP_KNN, &call, err);
	if (seg == NULL)
		return err->code;
	base = (char *) call;
	call->dim = g->dim;
	call->nq = nq;
	call->k = k;
	call->in1 = head;
	call->out = head + MAXALIGN(qbytes);
	call->count = call->out + MAXALIGN(obytes);
	kdg_parallel_copy(base + call->in1, queries, qbytes);
	return call_take_neighbours(seg, call, g, nq, k, out, count, exec, err);
}

/* all_knn(): take every point's neighbours back. */
static KdStatus
client_all_knn(const KdGpuTree *gtree, int k, bool include_self,
			   KdNeighbor *out, int32_t *count, const KdExec *exec,
			   KdError *err)
{
	KdGpuTree  *g = (KdGpuTree *) gtree;
	int64		n = g->n;
	Size		head = MAXALIGN(sizeof(KdgCall));
	Size		obytes = sizeof(KdNeighbor) * n * k;
	dsm_segment *seg;
	KdgCall    *call;

	seg = kdg_call_begin(head + MAXALIGN(obytes) + sizeof(int32) * n,
					 KDG_OP_ALL_KNN, &call, err);
	if (seg == NULL)
		return err->code;
	call->k = k;
	call->include_self = include_self;
	call->out = head;
	call->count = head + MAXALIGN(obytes);
	return call_take_neighbours(seg, call, g, n, k, out, count, exec, err);
}

/* Take a range result from the pinned segment the service made. */
KdStatus
kdg_take_range(const KdgCall *call, int64 nq, KdRangeResult *res, KdError *err)
{
	dsm_segment *rseg = dsm_attach(call->range);
	const char *p;
	Size		offsets = sizeof(int64) * (nq + 1);
	int64		nhits;

	dsm_unpin_segment(call->range);
	if (rseg == NULL)
		return kde_set_error(err, KD_ERR_GPU, -1,
							"the kdgpu GPU service's result segment is gone");
	p = dsm_segment_address(rseg);
	nhits = ((const int64 *) p)[nq];
	res->nq = nq;
	res->offsets = malloc(offsets);
	res->hits = malloc(sizeof(KdNeighbor) * nhits + 1);
	if (res->offsets == NULL || res->hits == NULL)
	{
		kde_range_result_free(res);
		dsm_detach(rseg);
		return kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
	}
	memcpy(res->offsets, p, offsets);
	kdg_parallel_copy(res->hits, p + offsets, sizeof(KdNeighbor) * nhits);
	dsm_detach(rseg);
	return KD_OK;
}

/* radius() and box(): ship the queries, take the hits back. */
static KdStatus
client_range(KdgOp op, KdGpuTree *g, const double *in1, Size bytes1,
			 const double *in2, Size bytes2, int64 nq, int64 nradii,
			 KdRangeResult *res, const KdExec *exec, KdError *err)
{
	Size		head = MAXALIGN(sizeof(KdgCall));
	dsm_segment *seg;
	KdgCall    *call;
	KdStatus	st;
	char	   *base;

	seg = kdg_call_begin(head + MAXALIGN(bytes1) + MAXALIGN(bytes2), op, &call, err);
	if (seg == NULL)
		return err->code;
	base = (char *) call;
	call->dim = g->dim;
	call->nq = nq;
	call->nradii = nradii;
	call->in1 = head;
	call->in2 = head + MAXALIGN(bytes1);
	memcpy(base + call->in1, in1, bytes1);
	memcpy(base + call->in2, in2, bytes2);
	st = call_on_copy(seg, call, g, exec, err);
	if (st == KD_OK)
		st = kdg_take_range(call, nq, res, err);
	kdg_call_end(seg);
	return st;
}

/* radius(): see client_range. */
static KdStatus
client_radius(const KdGpuTree *gtree, const double *centers, int64_t nq,
			  const double *radii, int64_t nradii, KdRangeResult *res,
			  const KdExec *exec, KdError *err)
{
	KdGpuTree  *g = (KdGpuTree *) gtree;

	return client_range(KDG_OP_RADIUS, g, centers,
						sizeof(double) * nq * g->dim, radii,
						sizeof(double) * nradii, nq, nradii, res, exec, err);
}

/* box(): see client_range. */
static KdStatus
client_box(const KdGpuTree *gtree, const double *lows, const double *highs,
		   int64_t nq, KdRangeResult *res, const KdExec *exec, KdError *err)
{
	KdGpuTree  *g = (KdGpuTree *) gtree;
	Size		bytes = sizeof(double) * nq * g->dim;

	return client_range(KDG_OP_BOX, g, lows, bytes, highs, bytes, nq, 0,
						res, exec, err);
}

/* dbscan(): ship the arguments, take the labels back. */
static KdStatus
client_dbscan(const KdGpuTree *gtree, const KdDbscan *args, int32_t *labels,
			  int64_t *undecided, const KdExec *exec, KdError *err)
{
	KdGpuTree  *g = (KdGpuTree *) gtree;
	Size		head = MAXALIGN(sizeof(KdgCall));
	dsm_segment *seg;
	KdgCall    *call;
	KdStatus	st;

	seg = kdg_call_begin(head + sizeof(int32) * g->n, KDG_OP_DBSCAN, &call, err);
	if (seg == NULL)
		return err->code;
	call->dbscan = *args;
	call->out = head;
	st = call_on_copy(seg, call, g, exec, err);
	if (st == KD_OK)
	{
		*undecided = call->undecided;
		kdg_parallel_copy(labels, (char *) call + call->out, sizeof(int32) * g->n);
	}
	kdg_call_end(seg);
	return st;
}

static const KdCudaApi client_api = {
	KDGPU_CUDA_ABI_VERSION,
	client_probe,
	client_select_device,
	client_upload,
	client_release,
	client_build,
	client_knn,
	client_all_knn,
	client_radius,
	client_box,
	client_dbscan,
	kdg_client_flat_knn,
	kdg_client_flat_radius,
	NULL,						/* vp_build: the backend's CPU builds */
	NULL						/* vp_knn: the service builds its own tree */
};

/*
 * The engine's GPU provider: this table when the postmaster started the
 * service (waiting a little for one that is starting), else NULL.  The
 * backend then never opens the GPU itself: while the service is stopped or
 * restarting, this table's probe says so and the work runs on the CPU.
 * The service itself opens the GPU object.
 */
static const KdCudaApi *
client_provider(void)
{
	if (kdg_service == NULL || kdg_am_service || !kdg_service->registered)
		return NULL;
	for (int waited = 0; waited < 1000; waited++)
	{
		if (kdg_service_state(NULL) != KDG_SERVICE_STARTING)
			break;
		pg_usleep(10000L);
	}
	kdg_gpu_by_service = true;
	return &client_api;
}

/*
 * Whether this backend's GPU work goes through the service.  When the
 * service is ready and the engine has not opened a GPU yet, the engine is
 * made to choose now (its provider then returns this table), so that a
 * copy found by kdg_service_find is used through the same table.
 */
bool
kdg_service_serving(void)
{
	if (kdg_service == NULL || kdg_am_service)
		return false;
	if (!kdg_gpu_by_service && kdg_service_state(NULL) != KDG_SERVICE_READY)
		return false;
	return kde_gpu_available(NULL, NULL, 0) && kdg_gpu_by_service;
}

/*
 * The service's copy of the tree named key (of *ntree points; -1: of any
 * number, and of any key[2]: a tree built from rows read, whose points
 * are compared too), when it holds one whose rows (TIDs in rank order)
 * differ from rows (n TIDs, ascending, with their points when given) by at
 * most max_gone rows missing from rows and max_added rows missing from the
 * copy; NULL otherwise, or when the wait was canceled (err says so).  The
 * difference goes to diff, whose arrays have room for the limits
 * (kdg_rows_diff), and the copy's size to *ntree.  The copy is a tree of
 * dim that only the GPU can search (kdtree.h).  When refs is given (room
 * for n + max_gone), the tree's references (ranks in node order) are
 * copied there.
 */
KdGpuTree *
kdg_service_find(const uint64 *key, const uint64 *rows, const double *points,
				 int64 n, int64 *ntree, int dim, uint64 *refs, int64 max_gone,
				 int64 max_added, KdgDiff *diff, KdError *err)
{
	Size		head = MAXALIGN(sizeof(KdgCall));
	Size		bytes = sizeof(uint64) * n;
	Size		pbytes = points ? sizeof(double) * dim * n : 0;
	Size		refbytes = refs ? sizeof(uint64) * (n + max_gone) : 0;
	Size		diffbytes = sizeof(uint64) * (max_gone + max_added);
	dsm_segment *seg;
	KdgCall    *call;
	KdExec		exec;
	KdGpuTree  *g = NULL;

	seg = kdg_call_begin(head + MAXALIGN(bytes) + MAXALIGN(pbytes) + MAXALIGN(refbytes) +
					 diffbytes, KDG_OP_ACQUIRE, &call, err);
	if (seg == NULL)
		return NULL;
	memcpy(call->key, key, sizeof(call->key));
	call->any_version = *ntree < 0;
	call->n = n;
	call->dim = dim;
	call->ntree = *ntree;
	call->max_gone = max_gone;
	call->max_added = max_added;
	call->in1 = head;
	call->points = points ? head + MAXALIGN(bytes) : 0;
	call->out = refs ? head + MAXALIGN(bytes) + MAXALIGN(pbytes) : 0;
	call->diff = head + MAXALIGN(bytes) + MAXALIGN(pbytes) + MAXALIGN(refbytes);
	kdg_parallel_copy((char *) call + head, rows, bytes);
	if (points)
		kdg_parallel_copy((char *) call + call->points, points, pbytes);
	kdg_exec_prepare(&exec);
	if (kdg_call_run(seg, call, &exec, err) == KD_OK && !call->missing)
	{
		const uint64 *gone = (const uint64 *) ((char *) call + call->diff);

		*ntree = call->ntree;
		g = handle_new(call, NULL, call->ntree, dim, true);
		if (refs)
			kdg_parallel_copy(refs, (char *) call + call->out,
							  sizeof(uint64) * call->ntree);
		diff->ngone = call->ngone;
		diff->nadded = call->nadded;
		memcpy(diff->gone, gone, sizeof(uint64) * call->ngone);
		memcpy(diff->added, gone + max_gone, sizeof(uint64) * call->nadded);
	}
	kdg_call_end(seg);
	return g;
}

/*
 * Give the service the rows (TIDs in rank order), references (ranks in node
 * order) and, for a tree built from rows read, the rows' points (in rank
 * order) of the named tree whose copy g is, unless it keeps them already;
 * a failure only means that later calls read the tree again.
 */
void
kdg_service_give_rows(KdGpuTree *g, const uint64 *rows, const uint64 *refs,
					  const double *points, int64 n)
{
	Size		head = MAXALIGN(sizeof(KdgCall));
	Size		bytes = sizeof(uint64) * n;
	Size		pbytes = points ? sizeof(double) * g->dim * n : 0;
	dsm_segment *seg;
	KdgCall    *call;
	KdExec		exec;
	KdError		err;
	uint64		epoch;

	kdg_service_state(&epoch);
	if (g == NULL || !g->shared || g->has_rows || g->epoch != epoch)
		return;
	if ((seg = kdg_call_begin(head + 2 * MAXALIGN(bytes) + pbytes, KDG_OP_ROWS, &call,
						  &err)) == NULL)
		return;
	call->resident = g->resident;
	call->version = g->version;
	call->n = n;
	call->dim = g->dim;
	call->in1 = head;
	call->in2 = head + MAXALIGN(bytes);
	call->points = points ? head + 2 * MAXALIGN(bytes) : 0;
	kdg_parallel_copy((char *) call + call->in1, rows, bytes);
	kdg_parallel_copy((char *) call + call->in2, refs, bytes);
	if (points)
		kdg_parallel_copy((char *) call + call->points, points, pbytes);
	kdg_exec_prepare(&exec);
	if (kdg_call_run(seg, call, &exec, &err) == KD_OK)
		g->has_rows = true;
	kdg_call_end(seg);
}

/*
 * The devices the service uses, described into devices (KDG_MAX_DEVICES of
 * room); how many, 0 when it does not run this backend's GPU work.
 */
int
kdg_service_devices(KdGpuInfo *devices)
{
	int			n = 0;

	if (!kdg_service_serving())
		return 0;
	SpinLockAcquire(&kdg_service->mutex);
	if (kdg_service->state == KDG_SERVICE_READY)
	{
		n = kdg_service->ndevices;
		memcpy(devices, kdg_service->devices, sizeof(KdGpuInfo) * n);
	}
	SpinLockRelease(&kdg_service->mutex);
	return n;
}

/* Whether this backend's GPU work goes through the service. */
bool
kdg_service_in_use(void)
{
	return kdg_gpu_by_service;
}

/*
 * Whether the service holds a shared copy named key, or, with key NULL, a
 * copy of any ranked tree of index indexrelid of database dboid.
 */
static bool
holds_copy(const uint64 *key, Oid dboid, Oid indexrelid)
{
	uint64		head = ((uint64) dboid << 32) | indexrelid;
	bool		found = false;

	SpinLockAcquire(&kdg_service->mutex);
	for (int i = 0; i < KDG_RESIDENT_MAX && !found; i++)
	{
		KdgResident *e = &kdg_service->resident[i];

		if (!e->used || !e->shared || e->drop)
			continue;
		found = key ? memcmp(e->key, key, sizeof(e->key)) == 0 :
			e->key[0] == head && e->key[3] == KDG_KEY_RANKED + 1;
	}
	SpinLockRelease(&kdg_service->mutex);
	return found;
}

/* Whether the service holds a shared copy named key. */
bool
kdg_service_holds(const uint64 *key)
{
	return holds_copy(key, InvalidOid, InvalidOid);
}

/* Whether the service holds a copy of a ranked tree of an index. */
bool
kdg_service_holds_index(Oid dboid, Oid indexrelid)
{
	return holds_copy(NULL, dboid, indexrelid);
}

/*
 * kd_unload, DROP INDEX, DROP TABLE, DROP DATABASE: the service drops the
 * copies of an index of database dboid (every index when indexrelid is
 * InvalidOid).  A drop that rolls back costs an upload on next use.
 */
void
kdg_service_forget(Oid dboid, Oid indexrelid)
{
	uint64		head = ((uint64) dboid << 32) | indexrelid;
	int			procno;

	if (kdg_service == NULL)
		return;
	SpinLockAcquire(&kdg_service->mutex);
	for (int i = 0; i < KDG_RESIDENT_MAX; i++)
	{
		KdgResident *e = &kdg_service->resident[i];

		if (e->used && e->shared &&
			(indexrelid == InvalidOid ? (e->key[0] >> 32) == dboid : e->key[0] == head))
			e->drop = true;
	}
	procno = kdg_service->procno;
	SpinLockRelease(&kdg_service->mutex);
	if (procno >= 0)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

/* object_access_hook: a dropped relation or database loses its copies. */
static void
client_object_access(ObjectAccessType access, Oid classId, Oid objectId,
					 int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (access != OAT_DROP || kdg_service == NULL)
		return;
	if (classId == RelationRelationId && subId == 0)
		kdg_service_forget(MyDatabaseId, objectId);
	else if (classId == DatabaseRelationId)
		kdg_service_forget(objectId, InvalidOid);
}

/*
 * From _PG_init: make the service the engine's GPU when it runs, and tell
 * it of dropped indexes.
 */
void
kdg_service_client_install(void)
{
	kde_gpu_set_provider(client_provider);
	prev_object_access_hook = object_access_hook;
	object_access_hook = client_object_access;
}

/* One line on the service for kd_status(). */
char *
kdg_service_describe(void)
{
	KdgService	copy;
	int			copies = 0;

	if (kdg_service == NULL)
		return pstrdup("not running: kdgpu is not in shared_preload_libraries");
	SpinLockAcquire(&kdg_service->mutex);
	memcpy(&copy, kdg_service, offsetof(KdgService, slots));
	SpinLockRelease(&kdg_service->mutex);
	for (int i = 0; i < KDG_RESIDENT_MAX; i++)
		copies += copy.resident[i].used;
	switch (copy.state)
	{
		case KDG_SERVICE_STOPPED:
			return pstrdup(copy.registered ?
						   "not running (starting or restarting): GPU work runs on the CPU meanwhile" :
						   "not running: kdgpu.service was off at server start");
		case KDG_SERVICE_STARTING:
			return psprintf("starting (pid %d)", copy.pid);
		case KDG_SERVICE_IDLE:
			return psprintf("idle (pid %d): %s", copy.pid, copy.why);
		case KDG_SERVICE_READY:
			break;
	}
	return psprintf("running (pid %d) on %s%s: %d device cop%s, %lld MB, %lld calls served; "
					"this backend's GPU work %s",
					copy.pid, copy.info.name,
					copy.ndevices > 1 ? psprintf(" and %d more devices", copy.ndevices - 1) : "",
					copies, copies == 1 ? "y" : "ies",
					(long long) ((copy.memory_used + (1 << 20) - 1) >> 20),
					(long long) copy.calls,
					kdg_gpu_by_service ? "goes through it" : "has not gone through it");
}
