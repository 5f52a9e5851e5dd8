/*
 * remote_readers.c
 *	  Read the results of several servers' connections at once, on threads.
 *
 * A coordinator that has sent calls to its shards (remote.c) waits until
 * every result is complete in libpq's buffers.  libpq reads a connection's
 * bytes and parses them into its result (two copies of every byte, into
 * memory it has just allocated), and one backend doing that for all the
 * shards in turn is bound by it: at 10M points a shard, the four shards'
 * All-kNN answers are 7.8 GB.  Here each connection is read by a thread of
 * its own (up to KD_READER_THREADS, each then serving several), which
 * calls only libpq on connections no other thread touches (libpq is
 * thread-safe across connections) and blocks every signal, so that the
 * backend's signal handlers run on its own thread.  The backend waits on
 * its latch meanwhile, and a reader sets that latch when its connections
 * are complete or one fails; before it processes an interrupt or reports a
 * failure, the backend stops the readers (each notices within
 * KD_READER_POLL_MS), so that only it touches the connections then.
 */
#include "postgres.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/wait_event.h"

#include "shard/shard.h"
#include "shard/remote_libpq.h"

/* libpq's functions, filled by remote.c (kdg_remote_load) before any reader starts */
KdLibpq		kdg_pq;

/* At most this many reader threads. */
#define KD_READER_THREADS 16

/* How long a reader waits on its sockets before it looks at stop. */
#define KD_READER_POLL_MS 50

/* One reader thread and the connections it reads. */
typedef struct KdReader
{
	pthread_t	thread;
	bool		started;
	PGconn	  **conns;			/* its connections */
	int		   *index;			/* each one's place in the set's */
	int			nconns;
	struct KdReaders *set;
} KdReader;

/* The readers of a set of connections, and what they report. */
struct KdReaders
{
	KdReader	readers[KD_READER_THREADS];
	int			nreaders;
	PGconn	  **conns;
	int			nconns;
	KdReaderFn	fn;				/* what takes each result, or NULL */
	void	  **args;			/* fn's argument for each connection */
	int			failed;			/* a connection whose read failed, or -1 */
	int			busy;			/* connections not complete yet */
	bool		stop;			/* the backend asks the readers to end */
};

/*
 * One step of reading conn: take what its socket holds and, with fn, pass
 * every result complete by then to fn(arg, res) (which frees it).
 * Returns 1 when conn's results are complete (without fn) or all taken
 * (with fn: libpq returned no more), 0 when more is to come, -1 when the
 * connection failed and -2 when fn refused a result.  Calls only libpq and
 * fn, so that a reader thread may run it.
 */
int
kdg_reader_step(PGconn *conn, KdReaderFn fn, void *arg)
{
	if (!kdg_pq.consumeInput(conn))
		return -1;
	while (!kdg_pq.isBusy(conn))
	{
		PGresult   *res;

		if (fn == NULL)
			return 1;
		res = kdg_pq.getResult(conn);
		if (res == NULL)
			return 1;
		if (!fn(arg, res))
			return -2;
	}
	return 0;
}

/* A reader thread: read its connections (kdg_reader_step) until they are done. */
static void *
kdg_reader_main(void *arg)
{
	KdReader   *rd = arg;
	KdReaders  *set = rd->set;
	struct pollfd fds[KD_MAX_PARTS / KD_READER_THREADS + 1];
	bool		done[KD_MAX_PARTS / KD_READER_THREADS + 1] = {false};
	int			left = rd->nconns;

	while (left > 0 && !__atomic_load_n(&set->stop, __ATOMIC_RELAXED))
	{
		int			nfds = 0;

		for (int i = 0; i < rd->nconns; i++)
		{
			int			st;

			if (done[i])
				continue;
			st = kdg_reader_step(rd->conns[i], set->fn,
								 set->args ? set->args[rd->index[i]] : NULL);
			if (st < 0)
			{
				int			failed = -1;

				__atomic_compare_exchange_n(&set->failed, &failed, rd->index[i], false,
											__ATOMIC_RELAXED, __ATOMIC_RELAXED);
				__atomic_store_n(&set->stop, true, __ATOMIC_RELAXED);
				SetLatch(MyLatch);
				return NULL;
			}
			if (st == 1)
			{
				done[i] = true;
				left--;
				__atomic_sub_fetch(&set->busy, 1, __ATOMIC_RELAXED);
				continue;
			}
			fds[nfds].fd = kdg_pq.socket(rd->conns[i]);
			fds[nfds].events = POLLIN;
			fds[nfds].revents = 0;
			nfds++;
		}
		if (nfds > 0)
			(void) poll(fds, nfds, KD_READER_POLL_MS);
	}
	SetLatch(MyLatch);
	return NULL;
}

/*
 * Start reading conns[0 .. n) on threads, connection i on reader
 * i % nreaders: until each result is complete in libpq's buffers, or with
 * fn, passing each result to fn(args[i], res) as it completes (fn runs on
 * the reader threads: it may call libpq and plain C, nothing of the
 * backend's).  When a reader could not be started (kdg_readers_started is
 * false), the caller stops them all and reads the connections itself.
 */
KdReaders *
kdg_readers_start(PGconn **conns, int n, KdReaderFn fn, void **args)
{
	KdReaders  *set = palloc0(sizeof(KdReaders));
	sigset_t	all;
	sigset_t	old;

	set->conns = conns;
	set->nconns = n;
	set->fn = fn;
	set->args = args;
	set->failed = -1;
	set->busy = n;
	set->nreaders = Min(n, KD_READER_THREADS);
	for (int r = 0; r < set->nreaders; r++)
	{
		KdReader   *rd = &set->readers[r];

		rd->set = set;
		rd->conns = palloc(sizeof(PGconn *) * (n / set->nreaders + 1));
		rd->index = palloc(sizeof(int) * (n / set->nreaders + 1));
		for (int i = r; i < n; i += set->nreaders)
		{
			rd->index[rd->nconns] = i;
			rd->conns[rd->nconns++] = conns[i];
		}
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int r = 0; r < set->nreaders; r++)
		set->readers[r].started =
			pthread_create(&set->readers[r].thread, NULL, kdg_reader_main,
						   &set->readers[r]) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return set;
}

/*
 * How many connections are not complete yet; *failed is a connection
 * whose read failed (then the readers stop), or -1.
 */
int
kdg_readers_busy(KdReaders *set, int *failed)
{
	*failed = __atomic_load_n(&set->failed, __ATOMIC_RELAXED);
	return __atomic_load_n(&set->busy, __ATOMIC_RELAXED);
}

/* Stop the readers and wait for them to end.  Safe to call more than once. */
void
kdg_readers_stop(KdReaders *set)
{
	__atomic_store_n(&set->stop, true, __ATOMIC_RELAXED);
	for (int r = 0; r < set->nreaders; r++)
		if (set->readers[r].started)
		{
			pthread_join(set->readers[r].thread, NULL);
			set->readers[r].started = false;
		}
}

/*
 * Wait on the backend's latch while the readers work, until every
 * connection is done, one failed (*failed), or an interrupt is pending
 * (the caller stops the readers before it processes it, so that only the
 * backend touches the connections then).  Returns the connections not
 * done.  On postmaster death the readers are stopped and the backend
 * exits, since exiting with them running would free what they read.
 */
int
kdg_readers_wait(KdReaders *set, int *failed)
{
	int			busy;

	while ((busy = kdg_readers_busy(set, failed)) > 0 && *failed < 0 &&
		   !INTERRUPTS_PENDING_CONDITION())
	{
		int			rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_POSTMASTER_DEATH,
								   100, PG_WAIT_EXTENSION);

		ResetLatch(MyLatch);
		if (rc & WL_POSTMASTER_DEATH)
		{
			kdg_readers_stop(set);
			proc_exit(1);
		}
	}
	return busy;
}

/*
 * The backend's wait when it reads connections itself: until one of
 * conns[0 .. n) has bytes to read, the latch is set or KD_READER_POLL_MS
 * pass (bytes libpq holds decrypted do not make a socket readable), then
 * process interrupts.  Exits on postmaster death.
 */
void
kdg_wait_readable(PGconn **conns, int n)
{
	WaitEventSet *set = CreateWaitEventSet(CurrentMemoryContext, n + 2);
	WaitEvent	event;

	/* a set is not a resource owner's: freed whatever happens */
	PG_TRY();
	{
		AddWaitEventToSet(set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
		if (IsUnderPostmaster)
			AddWaitEventToSet(set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
		for (int i = 0; i < n; i++)
			AddWaitEventToSet(set, WL_SOCKET_READABLE, kdg_pq.socket(conns[i]), NULL, NULL);
		(void) WaitEventSetWait(set, KD_READER_POLL_MS, &event, 1, PG_WAIT_EXTENSION);
	}
	PG_FINALLY();
	{
		FreeWaitEventSet(set);
	}
	PG_END_TRY();
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/* Whether every reader started. */
bool
kdg_readers_started(const KdReaders *set)
{
	for (int r = 0; r < set->nreaders; r++)
		if (!set->readers[r].started)
			return false;
	return true;
}
