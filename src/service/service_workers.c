/*
 * service_workers.c
 *	  The GPU service's device threads: one per device, each running the
 *	  queries of one call at a time on its device's copies, so that the
 *	  GPUs of a host work at once.
 *
 * The service's main thread (service_main.c) keeps everything that
 * touches PostgreSQL: slots, segments, replies, latches, the resident
 * entries' lifetimes.  It hands a device thread a call whose work is a
 * query on a copy that lives whole on that thread's device, and goes on
 * with other calls; the thread runs the engine's GPU entry points only
 * (pure C and CUDA, which the GPU object allows from several threads as
 * long as each device has one caller at a time, kd_gpu_abi.h), marks the
 * call finished and sets the service's latch.  The main thread then
 * replies for it.  A thread starts with every signal blocked, so that
 * PostgreSQL's handlers only ever run on the main thread.
 */
#include "postgres.h"

#include <pthread.h>
#include <signal.h>

#include "miscadmin.h"
#include "storage/latch.h"

#include "service.h"

typedef struct DeviceWorker
{
	pthread_t	thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int			slot;			/* the slot served, or -1: idle */
	KdgCall    *call;			/* its call, handed over under lock */
	KdgServeFn	serve;
	bool		finished;		/* serve's answer */
	KdRangeResult range;		/* a range result to reply with */
	int			done;			/* set by the thread when the call is served */
} DeviceWorker;

static DeviceWorker workers[KDG_MAX_DEVICES];
static int	nworkers;
static __thread bool on_device_thread = false;

/* Body of a device thread: serve the calls handed over, one at a time. */
static void *
worker_main(void *arg)
{
	DeviceWorker *w = arg;

	on_device_thread = true;
	for (;;)
	{
		KdgCall    *call;

		pthread_mutex_lock(&w->lock);
		while (w->call == NULL)
			pthread_cond_wait(&w->wake, &w->lock);
		call = w->call;
		pthread_mutex_unlock(&w->lock);

		memset(&w->range, 0, sizeof(w->range));
		w->finished = w->serve(call, w->slot, &w->range);
		pthread_mutex_lock(&w->lock);
		w->call = NULL;
		pthread_mutex_unlock(&w->lock);
		__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
		SetLatch(MyLatch);
	}
	return NULL;
}

/*
 * Start a thread for each of ndevices devices; returns how many started
 * (a device without one has its calls served on the main thread).
 */
int
kdg_service_threads_start(int ndevices)
{
	sigset_t	all;
	sigset_t	old;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (nworkers = 0; nworkers < ndevices; nworkers++)
	{
		DeviceWorker *w = &workers[nworkers];

		memset(w, 0, sizeof(*w));
		w->slot = -1;
		pthread_mutex_init(&w->lock, NULL);
		pthread_cond_init(&w->wake, NULL);
		if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
			break;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return nworkers;
}

/* Whether device's thread exists and serves nothing. */
bool
kdg_service_thread_idle(int device)
{
	return device >= 0 && device < nworkers && workers[device].slot < 0;
}

/* Whether no device thread serves a call. */
bool
kdg_service_threads_idle(void)
{
	for (int d = 0; d < nworkers; d++)
		if (workers[d].slot >= 0)
			return false;
	return true;
}

/* The device whose thread serves slot, or -1. */
int
kdg_service_thread_of_slot(int slot)
{
	for (int d = 0; d < nworkers; d++)
		if (workers[d].slot == slot)
			return d;
	return -1;
}

/* Hand call (of slot) to device's idle thread, to be served by serve. */
void
kdg_service_thread_run(int device, int slot, KdgCall *call, KdgServeFn serve)
{
	DeviceWorker *w = &workers[device];

	Assert(kdg_service_thread_idle(device));
	w->slot = slot;
	w->serve = serve;
	w->done = 0;
	pthread_mutex_lock(&w->lock);
	w->call = call;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

/*
 * If device's thread has served its call: the slot, whether the call is
 * finished (serve's answer) and its range result, and the thread is idle
 * again.  Returns -1 while it serves or is idle.
 */
int
kdg_service_thread_collect(int device, bool *finished, KdRangeResult *range)
{
	DeviceWorker *w = &workers[device];
	int			slot = w->slot;

	if (slot < 0 || !__atomic_load_n(&w->done, __ATOMIC_ACQUIRE))
		return -1;
	*finished = w->finished;
	*range = w->range;
	w->slot = -1;
	w->done = 0;
	return slot;
}

/*
 * Wait, at most timeout_ms, until no thread is in the middle of a call:
 * the service's exit calls it before its segments go away, after making
 * the calls' interrupt callbacks say stop.
 */
void
kdg_service_threads_quiesce(int timeout_ms)
{
	for (int t = 0; t < timeout_ms; t += 10)
	{
		bool		serving = false;

		for (int d = 0; d < nworkers; d++)
			if (workers[d].slot >= 0 && !__atomic_load_n(&workers[d].done, __ATOMIC_ACQUIRE))
				serving = true;
		if (!serving)
			return;
		pg_usleep(10000L);
	}
}

/* Whether the calling thread is a device thread (else the main thread). */
bool
kdg_service_on_device_thread(void)
{
	return on_device_thread;
}

/* The number of device threads. */
int
kdg_service_threads_count(void)
{
	return nworkers;
}
