/*
 * kd_parallel.c
 *	  A parallel loop over item ranges for batch work on the CPU.
 *
 * Workers (pthreads) and the calling thread take chunks of items from a
 * shared counter until none are left.  Only the calling thread polls the
 * interrupt callback, between its chunks, so the callback never runs on a
 * worker thread (PostgreSQL's interrupt flags are the caller's business).
 * When it asks to stop, no further chunks are handed out and the loop
 * returns KD_ERR_CANCELED once the chunks in flight are done.
 */
#include <pthread.h>
#include <stdlib.h>

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
kd_interrupted(KdExec *exec)
{
	return exec && exec->interrupt && exec->interrupt(exec->interrupt_arg);
}

/*
 * Run fn over [0, nitems) in chunks of chunk items on exec->threads threads
 * (the caller's included).  Threads that cannot be created are done without.
 */
KdStatus
kd_parallel_for(KdExec *exec, int64_t nitems, int64_t chunk,
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
		if (kd_interrupted(exec))
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
		return kd_set_error(err, KD_ERR_CANCELED, -1, "canceled");
	return KD_OK;
}
