/*
 * remote_stream.c
 *	  A coordinator's All-kNN over foreign leaves: each leaf's own answer
 *	  read a chunk at a time as its server sends it, and filled into place
 *	  on reader threads while the servers are still making the rest.
 *
 * Read whole, the shards' answers would sit in libpq's results until the
 * last chunk of the last server arrived, and only then be put in place:
 * both on top of the time the shards take to make them.  Here each call
 * is sent in libpq's single-row mode, so that every chunk is its own
 * result.  The backend first reads each leaf's first chunk, whose header
 * gives the entries of the whole answer (kdg_answer_stream_begin); once
 * every leaf's count is known, the caller makes room for all the
 * neighbours, and kdg_remote_all_knn_stream fills the first chunks and
 * reads the rest on a thread per connection (remote_readers.c), each
 * chunk filled into place (kdg_answer_stream_chunk) and freed as it comes.
 * Used only when no two foreign leaves share a connection, so that every
 * leaf's call is in flight at once; otherwise table_allknn.c reads whole
 * answers in turns.  An interrupt stops the readers before it is
 * processed (kdg_readers_wait); a server's error, a lost connection or a chunk out of shape
 * is raised by the backend once they are stopped.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "shard/shard.h"
#include "shard/remote_libpq.h"

/*
 * The chunk of a single-row result (*value, *len); false when the row is
 * not one value.  Any thread may call it.
 */
static bool
kdg_stream_value(const PGresult *res, const char **value, int64 *len)
{
	if (kdg_pq.nfields(res) != 1 || kdg_pq.getisnull(res, 0, 0))
		return false;
	*value = kdg_pq.getvalue(res, 0, 0);
	*len = kdg_pq.getlength(res, 0, 0);
	return true;
}

/*
 * Read the first result of every foreign leaf's own All-kNN, sent with
 * stream: streams[p] begins with its first chunk (kdg_answer_stream_begin),
 * or with none when the server sent none.  A server's error is raised.
 */
void
kdg_remote_all_knn_heads(const KdTable *t, int k, KdChunkStream *streams)
{
	kdg_remote_drain(t, false);
	for (int p = 0; p < t->nparts; p++)
	{
		KdSource   *src = &t->parts[p];
		PGresult   *res;
		const char *value;
		int64		len;
		bool		ok;

		if (src->remote == NULL)
			continue;
		res = kdg_pq.getResult(kdg_remote_conn(src));
		switch (kdg_pq.resultStatus(res))
		{
			case PGRES_SINGLE_TUPLE:
				ok = kdg_stream_value(res, &value, &len) &&
					kdg_answer_stream_begin(&streams[p], src, k, value, len);
				kdg_pq.clear(res);
				if (!ok)
					kdg_remote_raise_read(src, false);
				break;
			case PGRES_TUPLES_OK:
				/* no chunks: a table without points */
				kdg_pq.clear(res);
				(void) kdg_answer_stream_begin(&streams[p], src, k, NULL, 0);
				streams[p].ended = true;
				break;
			default:
				kdg_remote_raise(src, res);
		}
	}
}

/* KdReaderFn of the streams: fill a chunk in place, note the end or keep an error. */
static bool
kdg_stream_result(void *arg, PGresult *res)
{
	KdChunkStream *s = arg;
	const char *value;
	int64		len;
	bool		ok;

	switch (kdg_pq.resultStatus(res))
	{
		case PGRES_SINGLE_TUPLE:
			ok = kdg_stream_value(res, &value, &len) &&
				kdg_answer_stream_chunk(s, value, len);
			kdg_pq.clear(res);
			s->bad = !ok;
			return ok;
		case PGRES_TUPLES_OK:
			kdg_pq.clear(res);
			s->ended = true;
			return true;
		default:
			s->error = res;
			return false;
	}
}

/*
 * Read the connections of the leaves whose streams are not ended in the
 * backend itself (their reader threads could not all start), until every
 * one is read or one fails; returns the index of a failed one, or -1.
 */
static int
kdg_stream_read_here(PGconn **conns, void **args, int n)
{
	bool	   *done = palloc0(sizeof(bool) * n);
	PGconn	  **busy = palloc(sizeof(PGconn *) * n);

	for (;;)
	{
		int			nbusy = 0;

		for (int i = 0; i < n; i++)
		{
			int			st;

			if (done[i])
				continue;
			st = kdg_reader_step(conns[i], kdg_stream_result, args[i]);
			if (st < 0)
				return i;
			if (st == 1)
				done[i] = true;
			else
				busy[nbusy++] = conns[i];
		}
		if (nbusy == 0)
			break;
		kdg_wait_readable(busy, nbusy);
	}
	pfree(busy);
	pfree(done);
	return -1;
}

/*
 * Fill every foreign leaf's own All-kNN in place through its stream, whose
 * hits and count the caller has set: the first chunks here, the rest as
 * they arrive, on reader threads.  Raises a server's error, a lost
 * connection or chunks out of shape (or too few for their count).
 */
void
kdg_remote_all_knn_stream(const KdTable *t, KdChunkStream *streams)
{
	PGconn	  **conns = palloc(sizeof(PGconn *) * Max(t->nparts, 1));
	void	  **args = palloc(sizeof(void *) * Max(t->nparts, 1));
	int		   *leaf = palloc(sizeof(int) * Max(t->nparts, 1));
	KdReaders  *readers;
	int			n = 0;
	int			failed = -1;

	for (int p = 0; p < t->nparts; p++)
	{
		KdChunkStream *s = &streams[p];

		if (t->parts[p].remote == NULL)
			continue;
		if (s->first)
		{
			bool		ok = kdg_answer_stream_chunk(s, s->first, s->first_len);

			pfree(s->first);
			s->first = NULL;
			if (!ok)
				kdg_remote_raise_read(&t->parts[p], false);
		}
		/* an ended one is read too: libpq has yet to say it is done */
		conns[n] = kdg_remote_conn(&t->parts[p]);
		args[n] = s;
		leaf[n++] = p;
	}
	readers = kdg_readers_start(conns, n, kdg_stream_result, args);
	PG_TRY();
	{
		if (!kdg_readers_started(readers))
		{
			kdg_readers_stop(readers);
			failed = kdg_stream_read_here(conns, args, n);
		}
		else if (kdg_readers_wait(readers, &failed) > 0 && failed < 0)
		{
			/* an interrupt: the connections back to the backend, which reads the rest */
			kdg_readers_stop(readers);
			CHECK_FOR_INTERRUPTS();
			failed = kdg_stream_read_here(conns, args, n);
		}
	}
	PG_CATCH();
	{
		/* the readers stopped, the error results kept so far are freed */
		kdg_readers_stop(readers);
		for (int i = 0; i < n; i++)
		{
			KdChunkStream *s = args[i];

			if (s->error)
				kdg_pq.clear(s->error);
			s->error = NULL;
		}
		PG_RE_THROW();
	}
	PG_END_TRY();
	kdg_readers_stop(readers);
	for (int i = 0; i < n; i++)
	{
		KdChunkStream *s = args[i];
		const KdSource *src = &t->parts[leaf[i]];

		if (!s->error && !s->bad && i != failed)
			continue;
		/* this leaf's failure is raised: the later ones' results are freed */
		for (int j = i + 1; j < n; j++)
		{
			KdChunkStream *later = args[j];

			if (later->error)
				kdg_pq.clear(later->error);
			later->error = NULL;
		}
		if (s->error)
			kdg_remote_raise(src, s->error);
		kdg_remote_raise_read(src, !s->bad);
	}
	for (int p = 0; p < t->nparts; p++)
		if (t->parts[p].remote)
		{
			if (!streams[p].ended || streams[p].next != streams[p].total)
				kdg_remote_raise_read(&t->parts[p], false);
			kdg_remote_read_done(&t->parts[p]);
		}
	pfree(conns);
	pfree(args);
	pfree(leaf);
}
