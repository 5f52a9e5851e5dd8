/*
 * kd_parallel.c
 *	  A parallel loop over item ranges for batch work on the CPU, and work
 *	  on several GPUs at once, a thread driving each.
 *
 * Workers (pthreads) and the calling thread take chunks of items from a
 * shared counter until none are left.  Only the calling thread polls the
 * interrupt callback, between its chunks, so the callback never runs on a
 * worker thread (PostgreSQL's interrupt flags are the caller's business).
 * When it asks to stop, no further chunks are handed out and the loop
 * returns KD_ERR_CANCELED once the chunks in flight are done.
 *
 * kde_parallel_devices runs one item per thread, each driving a device (the
 * GPU object's device selection holds per calling thread, and each device
 * takes one caller at a time, kd_gpu_abi.h), with the caller's plan less
 * its interrupt callback and GPU times of its own: kd_split.c's parts and
 * kd_replicas.c's copies use it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kd_internal.h"

typedef struct KdLoop
{
	int64_t		nitems;
	int64_t		chunk;
	int64_t		next;			/* first item not yet handed out */
	int			stop;			/* set to stop handing out chunks */
	KdRangeFn	fn;
	void	   *arg;
} KdLoop;

/* Take the next chunk; false when none is left or the loop was stopped. */
static bool
loop_take(KdLoop *loop, int64_t *begin, int64_t *end)
{
	if (__atomic_load_n(&loop->stop, __ATOMIC_RELAXED))
		return false;
	*begin = __atomic_fetch_add(&loop->next, loop->chunk, __ATOMIC_RELAXED);
	if (*begin >= loop->nitems)
		return false;
	*end = *begin + loop->chunk < loop->nitems ? *begin + loop->chunk : loop->nitems;
	return true;
}

/* Body of a worker thread. */
static void *
loop_worker(void *p)
{
	KdLoop	   *loop = p;
	int64_t		begin,
				end;

	while (loop_take(loop, &begin, &end))
		loop->fn(loop->arg, begin, end);
	return NULL;
}

/* True when the caller's interrupt callback says stop. */
bool
kde_interrupted(KdExec *exec)
{
	return exec && exec->interrupt && exec->interrupt(exec->interrupt_arg);
}

/*
 * Run fn over [0, nitems) in chunks of chunk items on exec->threads threads
 * (the caller's included).  Threads that cannot be created are done without.
 */
KdStatus
kde_parallel_for(KdExec *exec, int64_t nitems, int64_t chunk,
				KdRangeFn fn, void *arg, KdError *err)
{
	KdLoop		loop = {nitems, chunk < 1 ? 1 : chunk, 0, 0, fn, arg};
	int			nthreads = exec && exec->threads > 1 ? exec->threads : 1;
	pthread_t  *threads = NULL;
	int			started = 0;
	bool		canceled = false;
	int64_t		begin,
				end;

	if ((nitems + loop.chunk - 1) / loop.chunk < nthreads)
		nthreads = (int) ((nitems + loop.chunk - 1) / loop.chunk);
	if (nthreads > 1)
		threads = malloc(sizeof(pthread_t) * (size_t) (nthreads - 1));
	for (int t = 0; threads && t < nthreads - 1; t++)
	{
		if (pthread_create(&threads[started], NULL, loop_worker, &loop) != 0)
			break;
		started++;
	}

	while (!canceled)
	{
		if (kde_interrupted(exec))
		{
			canceled = true;
			__atomic_store_n(&loop.stop, 1, __ATOMIC_RELAXED);
			break;
		}
		if (!loop_take(&loop, &begin, &end))
			break;
		fn(arg, begin, end);
	}

	for (int t = 0; t < started; t++)
		pthread_join(threads[t], NULL);
	free(threads);
	if (canceled)
		return kde_set_error(err, KD_ERR_CANCELED, -1, "canceled");
	return KD_OK;
}

/* What kde_parallel_devices shares with its threads. */
typedef struct KdDevices
{
	KdDeviceFn	fn;
	void	   *arg;
	KdExec		exec[KD_PARALLEL_MAX_DEVICES];
	KdGpuTimes	times[KD_PARALLEL_MAX_DEVICES];
	KdStatus	st[KD_PARALLEL_MAX_DEVICES];
	KdError		err[KD_PARALLEL_MAX_DEVICES];
} KdDevices;

/* Parallel body: items [begin, end), each with its own plan and error. */
static void
devices_body(void *arg, int64_t begin, int64_t end)
{
	KdDevices  *d = arg;

	for (int64_t i = begin; i < end; i++)
		d->st[i] = d->fn(d->arg, (int) i, &d->exec[i], &d->err[i]);
}

/*
 * Run fn on items 0 .. n - 1 at once, one thread each (n at most
 * KD_PARALLEL_MAX_DEVICES), each with the caller's plan less its interrupt
 * callback.  The first failure is returned; the items' GPU times are added
 * to the caller's, and exec->used_gpu is set when every item succeeded.
 */
KdStatus
kde_parallel_devices(KdExec *exec, int n, KdDeviceFn fn, void *arg,
					KdError *err)
{
	KdDevices	d;
	KdExec		loop = *exec;
	KdStatus	st;

	if (n < 1 || n > KD_PARALLEL_MAX_DEVICES)
		return kde_set_error(err, KD_ERR_ARG, -1, "%d devices to drive at once (1 to %d)",
							n, KD_PARALLEL_MAX_DEVICES);
	d.fn = fn;
	d.arg = arg;
	for (int i = 0; i < n; i++)
	{
		d.exec[i] = *exec;
		d.exec[i].interrupt = NULL;
		d.exec[i].times = &d.times[i];
		memset(&d.times[i], 0, sizeof(d.times[i]));
		d.st[i] = KD_OK;
	}
	loop.threads = n;
	st = kde_parallel_for(&loop, n, 1, devices_body, &d, err);
	for (int i = 0; i < n; i++)
	{
		if (exec->times)
			kde_gpu_times_add(exec->times, &d.times[i]);
		if (st == KD_OK && d.st[i] != KD_OK)
		{
			*err = d.err[i];
			st = d.st[i];
		}
	}
	if (st == KD_OK)
		exec->used_gpu = true;
	return st;
}
