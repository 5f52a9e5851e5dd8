/*
 * engine_call.c
 *	  Running engine calls from a backend: the execution plan taken from the
 *	  GUCs, the interrupt callback, engine errors raised as ereport, and the
 *	  lifetime of memory the engine allocates.
 *
 * The engine allocates tree arrays and range results with malloc.  Each such
 * object is created here in palloc'd memory with a reset callback on the
 * current memory context, so it is freed when the context goes away, on
 * success and on error alike; callers release it earlier when they are done.
 *
 * The interrupt callback runs on the backend's own thread (the engine polls
 * it from the calling thread only) and only reads flags: it never raises an
 * error.  When it asks the engine to stop, the engine returns
 * KD_ERR_CANCELED and kdg_check_status lets CHECK_FOR_INTERRUPTS raise the
 * cancel or timeout error in the usual way.
 */
#include "postgres.h"

#include <unistd.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "core/core.h"

/*
 * Whether this backend's GPU work goes through the GPU service: set by the
 * service's client (service/service_client.c), which sits above this file,
 * and read here to say where a call ran.
 */
bool		kdg_gpu_by_service = false;

/* Nonzero when a pending interrupt would cancel or terminate the query. */
static int
kdg_interrupt(void *arg)
{
	return InterruptPending && (QueryCancelPending || ProcDiePending) &&
		INTERRUPTS_CAN_BE_PROCESSED();
}

/* Where the last batched work of this backend ran, and why (kd_status). */
char		kdg_last_run[512] = "";

/* where the last kd_* call took its rows from (local/index_source.c) */
char		kdg_last_source[256] = "";

/* The engine's CPU threads: kdgpu.cpu_threads, or every core when 0. */
int
kdg_cpu_threads(void)
{
	long		cores;

	if (kdgpu_cpu_threads > 0)
		return kdgpu_cpu_threads;
	cores = sysconf(_SC_NPROCESSORS_ONLN);
	return cores > 0 ? (int) Min(cores, 1024) : 1;
}

/* Fill exec from the kdgpu.* settings. */
void
kdg_exec_prepare(KdExec *exec)
{
	kde_exec_init(exec);
	exec->device = (KdDevice) kdgpu_device;
	exec->threads = kdg_cpu_threads();
	exec->gpu_min_work = kdgpu_gpu_min_points;
	exec->gpu_memory_limit = (int64) kdgpu_gpu_memory_limit * 1024 * 1024;
	exec->interrupt = kdg_interrupt;
	exec->interrupt_arg = NULL;
}

/*
 * Whether the settings send work of that many items to the GPU (when one is
 * usable): kdgpu.device = 'gpu', or 'auto' and at least
 * kdgpu.gpu_min_points.
 */
bool
kdg_gpu_wanted(int64 work)
{
	return kdgpu_device == KD_DEVICE_GPU ||
		(kdgpu_device == KD_DEVICE_AUTO && work >= kdgpu_gpu_min_points);
}

/*
 * Raise an engine error as a PostgreSQL error; "what" names the work (e.g.
 * "tree build").  Returns only when status is KD_OK.
 */
void
kdg_check_status(KdStatus status, const KdError *err, const KdExec *exec,
				const char *what)
{
	switch (status)
	{
		case KD_OK:
			if (exec)
			{
				snprintf(kdg_last_run, sizeof(kdg_last_run), "%s ran on the %s%s%s%s%s",
						 what,
						 !exec->used_gpu ? "CPU" :
						 kdg_gpu_by_service ? "GPU, through the GPU service" :
						 "GPU, from this backend",
						 exec->note[0] ? ": " : "", exec->note,
						 kdg_last_source[0] ? "; " : "", kdg_last_source);
				elog(DEBUG1, "kdgpu: %s", kdg_last_run);
			}
			return;
		case KD_ERR_CANCELED:
			CHECK_FOR_INTERRUPTS();
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("kdgpu %s was canceled", what)));
			break;
		case KD_ERR_ARG:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("kdgpu %s: %s", what, err->message)));
			break;
		case KD_ERR_NONFINITE:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("kdgpu %s: %s", what, err->message)));
			break;
		case KD_ERR_NOMEM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory in kdgpu %s", what),
					 errdetail("%s", err->message)));
			break;
		case KD_ERR_GPU_UNAVAILABLE:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("kdgpu.device is \"gpu\" but no GPU is usable"),
					 errdetail("%s", err->message),
					 errhint("Set kdgpu.device to 'auto' or 'cpu' to run on the CPU.")));
			break;
		case KD_ERR_GPU_NOMEM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of GPU memory in kdgpu %s", what),
					 errdetail("%s", err->message),
					 errhint("Raise kdgpu.gpu_memory_limit, or set kdgpu.device to 'auto' or 'cpu'.")));
			break;
		case KD_ERR_GPU:
			ereport(ERROR,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("GPU failure in kdgpu %s", what),
					 errdetail("%s", err->message),
					 errhint("Set kdgpu.device to 'cpu' to run on the CPU.")));
			break;
	}
	elog(ERROR, "kdgpu %s: unknown engine status %d", what, (int) status);
}

/* Reset callback: free a tree's engine memory (idempotent). */
static void
tree_free_callback(void *arg)
{
	kde_tree_free((KdTree *) arg);
}

/* Reset callback: free a range result's engine memory (idempotent). */
static void
range_free_callback(void *arg)
{
	kde_range_result_free((KdRangeResult *) arg);
}

/* A zeroed object of size bytes whose engine memory free_fn releases. */
static void *
kdg_guarded_alloc(Size size, MemoryContextCallbackFunction free_fn)
{
	MemoryContextCallback *cb;
	void	   *obj;

	obj = palloc0(size);
	cb = palloc0(sizeof(MemoryContextCallback));
	cb->func = free_fn;
	cb->arg = obj;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);
	return obj;
}

/* An empty tree, freed with the current memory context. */
KdTree *
kdg_tree_new(void)
{
	return kdg_guarded_alloc(sizeof(KdTree), tree_free_callback);
}

/* An empty range result, freed with the current memory context. */
KdRangeResult *
kdg_range_result_new(void)
{
	return kdg_guarded_alloc(sizeof(KdRangeResult), range_free_callback);
}

/* bytes of a parallel copy per task */
#define KD_COPY_CHUNK (4 * 1024 * 1024)

/* One range of a parallel copy: bytes [begin, end) of src to dst. */
typedef struct KdCopy
{
	char	   *dst;
	const char *src;
} KdCopy;

/* kde_parallel_for body of kdg_parallel_copy. */
static void
kdg_copy_range(void *arg, int64_t begin, int64_t end)
{
	KdCopy	   *c = arg;

	memcpy(c->dst + begin, c->src + begin, end - begin);
}

/*
 * Run fn over [0, nitems) in chunks of chunk items on the engine's threads
 * (the caller's included).  Not interruptible, and it cannot fail (without
 * threads the caller does it all), so it is for work that calls nothing of
 * PostgreSQL and cannot err: copies, merges, decoding.
 */
void
kdg_parallel_for(int64 nitems, int64 chunk, KdRangeFn fn, void *arg)
{
	KdExec		exec;
	KdError		err;

	kdg_exec_prepare(&exec);
	exec.interrupt = NULL;
	(void) kde_parallel_for(&exec, nitems, chunk, fn, arg, &err);
}

/*
 * Copy bytes from src to dst on the engine's threads: a large copy into
 * memory just mapped is bound by mapping its pages, which the threads do at
 * once.  The engine's callbacks may use it too (kdg_parallel_for).
 */
void
kdg_parallel_copy(void *dst, const void *src, Size bytes)
{
	KdCopy		c = {dst, src};

	if (bytes > 0)
		kdg_parallel_for((int64) bytes, KD_COPY_CHUNK, kdg_copy_range, &c);
}

/* kdgpu.answer_memory_limit in bytes (0: a quarter of the machine's memory). */
double
kdg_answer_memory_limit(void)
{
	if (kdgpu_answer_memory_limit == 0)
		return (double) sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) / 4;
	return (double) kdgpu_answer_memory_limit * 1024 * 1024;
}

/* The bytes the neighbours of nq queries take, kk each (see below). */
static double
answer_bytes(int64 nq, int kk)
{
	return (double) nq * kk * (sizeof(KdNeighbor) + sizeof(int64));
}

/* Whether the neighbours of nq queries, kk each, fit the limit below. */
bool
kdg_answer_fits(int64 nq, int kk)
{
	return answer_bytes(nq, kk) <= kdg_answer_memory_limit();
}

/*
 * How many queries of kk neighbours one slice of an answer too large to
 * hold at once takes: at most KDG_ANSWER_SLICE_BYTES, and a quarter of
 * kdgpu.answer_memory_limit, so that a streamed call's memory stays
 * bounded whatever its size.
 */
int64
kdg_answer_slice_queries(int kk)
{
	double		bytes = Min(kdg_answer_memory_limit() / 4, KDG_ANSWER_SLICE_BYTES);

	return Max((int64) (bytes / answer_bytes(1, kk)), 1);
}

/*
 * Error unless the neighbours of nq queries, kk each (the engine's lists,
 * then the answer's hits and the rows made of them), fit within
 * kdgpu.answer_memory_limit: a call that would not is refused before it
 * allocates, rather than left to the kernel's out-of-memory killer.
 */
void
kdg_check_answer_memory(int64 nq, int kk, const char *what)
{
	double		need = answer_bytes(nq, kk);
	double		limit = kdg_answer_memory_limit();

	if (need > limit)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s of " INT64_FORMAT " points needs about %.0f MB for its neighbours, more than kdgpu.answer_memory_limit (%.0f MB)",
						what, nq, need / (1024 * 1024), limit / (1024 * 1024)),
				 errhint("Lower k, search part of the points at a time with kd_knn_join, or raise kdgpu.answer_memory_limit.")));
}
