/*
 * remote.c
 *	  Foreign partitions: a leaf of a partitioned table that is a
 *	  postgres_fdw foreign table answers through its own server, where the
 *	  same kd_* function runs on the remote table (with its kdgpu index).
 *
 * The connection is postgres_fdw's own, taken with its GetConnection for
 * the foreign table's user mapping, so the remote work runs in the remote
 * transaction postgres_fdw opened for this local transaction (the same
 * snapshot as the foreign scans of the same query), with the remote role's
 * rights, and postgres_fdw's abort handling cancels what is in flight.
 * postgres_fdw is loaded when the first foreign leaf is met; a server that
 * is down raises its error naming the server, a connection lost during a
 * call names its server, and a cancel or statement_timeout while results
 * are awaited names, in its context, the servers that had not answered.
 *
 * The remote call is the function called here, in its plain-table form on
 * the remote table and column (the foreign table's table_name, schema_name
 * and column_name options), with the same arguments after them as
 * parameters in text, cast to their types, and the key column when a key is
 * used (a _parts
 * form becomes the ctid form: the remote table is not partitioned).  Like
 * postgres_fdw's extensions option, it assumes kdgpu (and PostGIS) live in
 * the same schemas there as here.  Each leaf's query is sent before any
 * result is read, so the shards work at once (table_search.c), except that
 * partitions on one server share its connection and so take turns.  Query
 * points made here (a query table's rows, All-kNN's cross-leaf queries) go
 * as one array parameter, in binary for point and float8[] and as hex EWKB
 * text for PostGIS points, every coordinate's bits kept either way.
 * Results come back in binary (the types' send formats, float8 bit for
 * bit), so neither side prints or parses a number in decimal; a leaf's own
 * All-kNN comes as kd_all_knn_chunks's few large values (funcs/chunks_funcs.c),
 * held in libpq's result until its points are copied into the rows that
 * table_allknn.c gathers for the whole table.
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "foreign/foreign.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "port/pg_bswap.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "shard/shard.h"
#include "shard/remote_libpq.h"

/* postgres_fdw's connection functions (connection.c) */
typedef PGconn *(*KdGetConnection) (UserMapping *user, bool will_prep_stmt,
									void **state);
typedef PGresult *(*KdGetResult) (PGconn *conn, const char *query);
typedef void (*KdReportError) (int elevel, PGresult *res, PGconn *conn,
							   bool clear, const char *sql);

static KdAnswer *kdg_remote_chunks_answer(KdSource *src, int64 nq, int k);

static KdGetConnection fdw_get_connection;
static KdGetResult fdw_get_result;
static KdReportError fdw_report_error;

/* A foreign leaf: its connection, remote names and the query in flight. */
struct KdRemote
{
	PGconn	   *conn;
	char	   *server;			/* the foreign server's name */
	char	   *relname;		/* remote table, qualified and quoted */
	char	   *colname;		/* remote point column */
	char	   *keyname;		/* remote key column, or NULL */
	char	   *sql;			/* the query sent, until its result is read */
	bool		chunks_sent;	/* it returns chunks (answer_chunks.c) */
	/* a result of chunks, held while its values are copied */
	PGresult   *res;
	char	   *res_sql;		/* the query it answers */
	const char **chunks;		/* its values */
	int64	   *lens;
	int64	   *chunk_first;	/* entries before each */
	int			nchunks;
	bool		res_callback;	/* remote_free_result is registered */
	MemoryContextCallback free_res;
};

/* The function of that name in postgres_fdw's library or the libpq it links. */
static void *
kdg_fdw_function(void *handle, const char *name)
{
	void	   *fn = lookup_external_function(handle, name);

	if (fn == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("could not find function \"%s\" in postgres_fdw's library or its libpq",
						name)));
	return fn;
}

/*
 * Load postgres_fdw's connection functions, and the libpq functions of the
 * libpq it links (remote_libpq.h), once.
 */
static void
kdg_remote_load(void)
{
	void	   *handle;

	if (fdw_get_connection)
		return;
	fdw_get_result = (KdGetResult)
		load_external_function("$libdir/postgres_fdw", "pgfdw_get_result", true,
							   &handle);
	fdw_report_error = (KdReportError)
		kdg_fdw_function(handle, "pgfdw_report_error");
	kdg_pq.clear = kdg_fdw_function(handle, "PQclear");
	kdg_pq.consumeInput = kdg_fdw_function(handle, "PQconsumeInput");
	kdg_pq.errorMessage = kdg_fdw_function(handle, "PQerrorMessage");
	kdg_pq.getisnull = kdg_fdw_function(handle, "PQgetisnull");
	kdg_pq.getlength = kdg_fdw_function(handle, "PQgetlength");
	kdg_pq.getResult = kdg_fdw_function(handle, "PQgetResult");
	kdg_pq.getvalue = kdg_fdw_function(handle, "PQgetvalue");
	kdg_pq.isBusy = kdg_fdw_function(handle, "PQisBusy");
	kdg_pq.nfields = kdg_fdw_function(handle, "PQnfields");
	kdg_pq.ntuples = kdg_fdw_function(handle, "PQntuples");
	kdg_pq.resultStatus = kdg_fdw_function(handle, "PQresultStatus");
	kdg_pq.sendQueryParams = kdg_fdw_function(handle, "PQsendQueryParams");
	kdg_pq.setSingleRowMode = kdg_fdw_function(handle, "PQsetSingleRowMode");
	kdg_pq.socket = kdg_fdw_function(handle, "PQsocket");
	/* last: it marks the others loaded */
	fdw_get_connection = (KdGetConnection)
		kdg_fdw_function(handle, "GetConnection");
}

/* The value of option name in options, or dflt. */
static char *
kdg_option(List *options, const char *name, char *dflt)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, name) == 0)
			return defGetString(def);
	}
	return dflt;
}

/* The remote name of column attnum of foreign table relid. */
static char *
kdg_remote_column(Oid relid, AttrNumber attnum)
{
	return kdg_option(GetForeignColumnOptions(relid, attnum), "column_name",
					  get_attname(relid, attnum, false));
}

/*
 * Make leaf, a postgres_fdw foreign table, answer through its server: take
 * postgres_fdw's connection for the current user's mapping.
 */
void
kdg_remote_open(KdSource *leaf)
{
	ForeignTable *ft = GetForeignTable(leaf->relid);
	ForeignServer *server = GetForeignServer(ft->serverid);
	ForeignDataWrapper *fdw = GetForeignDataWrapper(server->fdwid);
	KdRemote   *r = palloc0(sizeof(KdRemote));

	if (strcmp(fdw->fdwname, "postgres_fdw") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("partition \"%s\" is a foreign table of foreign-data wrapper \"%s\"",
						get_rel_name(leaf->relid), fdw->fdwname),
				 errhint("The kd_* functions read foreign partitions of postgres_fdw only.")));
	kdg_remote_load();
	r->server = server->servername;
	r->relname = psprintf("%s.%s",
						  quote_identifier(kdg_option(ft->options, "schema_name",
													  get_namespace_name(get_rel_namespace(leaf->relid)))),
						  quote_identifier(kdg_option(ft->options, "table_name",
													  get_rel_name(leaf->relid))));
	r->colname = kdg_remote_column(leaf->relid, leaf->attnum);
	if (leaf->keyattnum != InvalidAttrNumber)
		r->keyname = kdg_remote_column(leaf->relid, leaf->keyattnum);
	r->conn = fdw_get_connection(GetUserMapping(GetUserId(), server->serverid), false, NULL);
	leaf->remote = r;
}

/*
 * kdgpu's schema here, quoted: where the shards have the functions that
 * only kdgpu defines (the _chunks functions), whichever extension's
 * function was called (kdgpu_postgis may live in another schema).
 */
char *
kdg_remote_kdgpu_schema(void)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			nsp = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("kdgpu"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	if (!OidIsValid(nsp))
		elog(ERROR, "extension \"kdgpu\" is not installed");
	return pstrdup(quote_identifier(get_namespace_name(nsp)));
}

/*
 * Whether a call may be sent for leaf now: no other leaf's call is in
 * flight on the same connection (two partitions on one server share it).
 */
bool
kdg_remote_can_send(const KdTable *t, int leaf)
{
	for (int p = 0; p < t->nparts; p++)
		if (p != leaf && t->parts[p].remote &&
			t->parts[p].remote->conn == t->parts[leaf].remote->conn &&
			t->parts[p].remote->sql)
			return false;
	return true;
}

/* Whether leaf's call has been sent and its result not read yet. */
bool
kdg_remote_in_flight(const KdSource *leaf)
{
	return leaf->remote->sql != NULL;
}

/* Error context of a call to a remote leaf (arg is its KdRemote). */
static void
remote_call_context(void *arg)
{
	const KdRemote *r = arg;

	errcontext("call to server \"%s\"", r->server);
}

/*
 * The result of the call in flight on r's connection; postgres_fdw's error,
 * naming the server in its context, unless it is rows.
 */
static PGresult *
remote_result(KdRemote *r)
{
	ErrorContextCallback context;
	PGresult   *res;

	context.callback = remote_call_context;
	context.arg = r;
	context.previous = error_context_stack;
	error_context_stack = &context;
	res = fdw_get_result(r->conn, r->sql);
	if (kdg_pq.resultStatus(res) != PGRES_TUPLES_OK)
		fdw_report_error(ERROR, res, r->conn, true, r->sql);
	error_context_stack = context.previous;
	return res;
}

/*
 * Send r->sql with params (NULL: none) on r's connection, its result asked
 * for in binary.
 */
static void
kdg_remote_exec(KdRemote *r, const KdParams *params)
{
	if (!kdg_pq.sendQueryParams(r->conn, r->sql, params ? params->n : 0, NULL,
								params ? params->values : NULL,
								params ? params->lengths : NULL,
								params ? params->formats : NULL, 1))
		fdw_report_error(ERROR, NULL, r->conn, false, r->sql);
}

/*
 * Error context while waiting for foreign leaves (arg is the KdTable): the
 * servers whose results are not complete yet, so that a statement_timeout
 * or a cancel names the shards it was waiting for.
 */
static void
remote_wait_context(void *arg)
{
	const KdTable *t = arg;
	StringInfoData names;

	initStringInfo(&names);
	for (int p = 0; p < t->nparts; p++)
	{
		KdRemote   *r = t->parts[p].remote;

		if (r && r->sql && kdg_pq.isBusy(r->conn))
			appendStringInfo(&names, "%s\"%s\"", names.len ? ", " : "", r->server);
	}
	if (names.len)
		errcontext("waiting for the answer of server %s", names.data);
	pfree(names.data);
}

/* Raise the error of r's connection lost while its result was read. */
static void
kdg_remote_lost(const KdRemote *r)
{
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("lost the connection to server \"%s\"", r->server),
			 errdetail_internal("%s", pchomp(kdg_pq.errorMessage(r->conn)))));
}

/*
 * Read the results of the calls in flight on t's foreign leaves on a
 * thread per connection (remote_readers.c), until every one is complete or
 * an interrupt is pending: the threads are stopped first, so that
 * processing it (and the error context naming the servers not done) finds
 * the connections to itself, and kdg_remote_drain reads what is left.
 */
static void
kdg_remote_drain_threads(const KdTable *t)
{
	KdRemote  **remotes = palloc(sizeof(KdRemote *) * t->nparts);
	PGconn	  **conns = palloc(sizeof(PGconn *) * t->nparts);
	KdReaders  *readers;
	int			n = 0;
	int			failed = -1;

	for (int p = 0; p < t->nparts; p++)
	{
		KdRemote   *r = t->parts[p].remote;

		if (r && r->sql)
		{
			remotes[n] = r;
			conns[n++] = r->conn;
		}
	}
	readers = kdg_readers_start(conns, n, NULL, NULL);
	PG_TRY();
	{
		if (kdg_readers_started(readers))
			(void) kdg_readers_wait(readers, &failed);
	}
	PG_FINALLY();
	{
		kdg_readers_stop(readers);
	}
	PG_END_TRY();
	if (failed >= 0)
		kdg_remote_lost(remotes[failed]);
	pfree(remotes);
	pfree(conns);
}

/*
 * Read what the servers of t's foreign leaves send for the calls in flight,
 * from all of them at once, until every one of those results is complete
 * in libpq's buffers (where kdg_remote_answer and the All-kNN readers then
 * find it).  Read one after another, a server whose result is large would
 * wait, its socket full, while an earlier server's result is read and
 * decoded.  With large answers expected (large), each connection is read
 * on a thread of its own: libpq's reading and parsing of the answers, not
 * the shards, then bound the wait (at 10M points a shard, 7.8 GB of
 * All-kNN chunks).
 */
void
kdg_remote_drain(const KdTable *t, bool large)
{
	ErrorContextCallback context;
	PGconn	  **busy = palloc(sizeof(PGconn *) * Max(t->nparts, 1));

	context.callback = remote_wait_context;
	context.arg = (void *) t;
	context.previous = error_context_stack;
	error_context_stack = &context;
	if (large && t->nremote > 1)
		kdg_remote_drain_threads(t);
	for (;;)
	{
		int			nbusy = 0;

		for (int p = 0; p < t->nparts; p++)
		{
			KdRemote   *r = t->parts[p].remote;

			if (r == NULL || r->sql == NULL)
				continue;
			if (!kdg_pq.consumeInput(r->conn))
				kdg_remote_lost(r);
			if (kdg_pq.isBusy(r->conn))
				busy[nbusy++] = r->conn;
		}
		if (nbusy == 0)
			break;
		kdg_wait_readable(busy, nbusy);
	}
	pfree(busy);
	error_context_stack = context.previous;
}

/* Raise the error of a result from r's server that is not of its query's shape. */
static void
kdg_remote_shape_error(const KdRemote *r)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
			 errmsg("server \"%s\" returned a row out of shape", r->server),
			 errdetail("Remote query: %s", r->sql)));
}

/* Field col of row i of a binary result, not NULL and of len bytes (any: -1). */
static const char *
kdg_bin_field(const KdRemote *r, PGresult *res, int i, int col, int len)
{
	if (kdg_pq.getisnull(res, i, col) ||
		(len >= 0 && kdg_pq.getlength(res, i, col) != len))
		kdg_remote_shape_error(r);
	return kdg_pq.getvalue(res, i, col);
}

/* A binary int8 at v. */
static int64
kdg_bin_int8(const char *v)
{
	uint64		x;

	memcpy(&x, v, sizeof(x));
	return (int64) pg_ntoh64(x);
}

/* A binary float8 at v. */
static double
kdg_bin_float8(const char *v)
{
	uint64		x = (uint64) kdg_bin_int8(v);
	double		d;

	memcpy(&d, &x, sizeof(d));
	return d;
}

/* A binary tid at v (block number, then offset). */
static void
kdg_bin_tid(const char *v, ItemPointer tid)
{
	uint32		block;
	uint16		offset;

	memcpy(&block, v, sizeof(block));
	memcpy(&offset, v + sizeof(block), sizeof(offset));
	ItemPointerSet(tid, pg_ntoh32(block), pg_ntoh16(offset));
}

/* A binary integer of any width (2, 4 or 8 bytes) in field col of row i. */
static int64
kdg_bin_int(const KdRemote *r, PGresult *res, int i, int col)
{
	const char *v = kdg_bin_field(r, res, i, col, -1);
	uint32		x4;
	uint16		x2;

	switch (kdg_pq.getlength(res, i, col))
	{
		case 8:
			return kdg_bin_int8(v);
		case 4:
			memcpy(&x4, v, sizeof(x4));
			return (int32) pg_ntoh32(x4);
		case 2:
			memcpy(&x2, v, sizeof(x2));
			return (int16) pg_ntoh16(x2);
	}
	kdg_remote_shape_error(r);
	return 0;
}

/* The size of a binary tid: block number and offset. */
#define KD_BIN_TID	((int) (sizeof(uint32) + sizeof(uint16)))

/*
 * Send the call of kdgpu's function fn (schema-qualified) on a remote leaf:
 * fn(table, col, args [, key]), returning [query_ord,] the row's key or
 * ctid [, distance]; or, with chunks, fn(table, col, args, key or NULL) in
 * the SELECT list, returning the answers in chunks (answer_chunks.c).
 */
void
kdg_remote_send(const KdTable *t, int leaf, const char *fn, const char *args,
				const KdParams *params, bool batched, bool distance,
				bool chunks)
{
	KdRemote   *r = t->parts[leaf].remote;
	char	   *ident = r->keyname ? "nn_key" : "nn_ctid";

	if (chunks)
		r->sql = psprintf("SELECT %s(%s::pg_catalog.regclass, %s::pg_catalog.name, %s, %s::pg_catalog.name)",
						  fn, quote_literal_cstr(r->relname), quote_literal_cstr(r->colname), args,
						  r->keyname ? quote_literal_cstr(r->keyname) : "NULL");
	else
		r->sql = psprintf("SELECT %s%s%s FROM %s(%s::pg_catalog.regclass, %s::pg_catalog.name, %s%s%s%s)",
						  batched ? "query_ord, " : "", ident, distance ? ", distance" : "", fn,
						  quote_literal_cstr(r->relname), quote_literal_cstr(r->colname), args,
						  r->keyname ? ", " : "",
						  r->keyname ? quote_literal_cstr(r->keyname) : "",
						  r->keyname ? "::pg_catalog.name" : "");
	r->chunks_sent = chunks;
	kdg_remote_exec(r, params);
}

/* The ref of a remote row, its key (int8) or ctid (tid) in binary at v. */
static uint64
kdg_remote_ref(const KdSource *leaf, const char *v)
{
	ItemPointerData tid;

	if (leaf->keyattnum != InvalidAttrNumber)
		return kdg_key_to_ref(INT8OID, Int64GetDatum(kdg_bin_int8(v)));
	kdg_bin_tid(v, &tid);
	return leaf->refbase | kdg_tid_to_ref(&tid);
}

/*
 * Read the result of the call sent to a remote leaf as the answers to nq
 * queries of at most k neighbours (batched: the first column numbers them
 * from 1; they come in query order and, within one, in result order).
 */
KdAnswer *
kdg_remote_answer(const KdTable *t, int leaf, int64 nq, int k, bool batched,
				  bool distance)
{
	KdSource   *src = &t->parts[leaf];
	KdRemote   *r = src->remote;
	PGresult   *res;
	KdAnswer   *ans;
	int			nrows;
	int			col = batched ? 1 : 0;
	int			refsize = r->keyname ? sizeof(int64) : KD_BIN_TID;

	if (r->chunks_sent)
		return kdg_remote_chunks_answer(src, nq, k);
	res = remote_result(r);
	nrows = kdg_pq.ntuples(res);
	ans = kdg_empty_answer(nq);
	ans->hits = palloc_extended(sizeof(KdHit) * Max(nrows, 1), MCXT_ALLOC_HUGE);
	PG_TRY();
	{
		for (int i = 0; i < nrows; i++)
		{
			int64		q = batched ? kdg_bin_int(r, res, i, 0) - 1 : 0;

			if (q < 0 || q >= nq)
				elog(ERROR, "query %lld of server \"%s\" is out of range",
					 (long long) q + 1, r->server);
			ans->hits[i].ref = kdg_remote_ref(src, kdg_bin_field(r, res, i, col, refsize));
			ans->hits[i].dist = distance ?
				kdg_bin_float8(kdg_bin_field(r, res, i, col + 1, sizeof(double))) : 0.0;
			ans->offsets[q + 1]++;
		}
	}
	PG_FINALLY();
	{
		kdg_pq.clear(res);
	}
	PG_END_TRY();
	for (int64 q = 0; q < nq; q++)
		ans->offsets[q + 1] += ans->offsets[q];
	r->sql = NULL;
	return ans;
}

/*
 * Reset callback of the memory context of a KdRemote: free the libpq result
 * of chunks still held (an error between reading and copying them).
 */
static void
remote_free_result(void *arg)
{
	KdRemote   *r = arg;

	if (r->res)
		kdg_pq.clear(r->res);
	r->res = NULL;
}

/* Raise the error of chunks from r's server out of shape. */
static void
kdg_remote_chunks_error(const KdRemote *r)
{
	ereport(ERROR,
			(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
			 errmsg("server \"%s\" returned chunks out of shape", r->server),
			 errdetail("Remote query: %s", r->res_sql)));
}

/*
 * Read the result of chunks sent to r and hold it, its values listed in
 * r->chunks, until remote_release_chunks.
 */
static void
remote_hold_chunks(KdRemote *r)
{
	PGresult   *res = remote_result(r);

	if (!r->res_callback)
	{
		r->free_res.func = remote_free_result;
		r->free_res.arg = r;
		MemoryContextRegisterResetCallback(GetMemoryChunkContext(r), &r->free_res);
		r->res_callback = true;
	}
	r->res = res;
	r->res_sql = r->sql;
	r->sql = NULL;
	if (kdg_pq.nfields(res) != 1)
		kdg_remote_chunks_error(r);
	r->nchunks = kdg_pq.ntuples(res);
	r->chunks = palloc(sizeof(char *) * Max(r->nchunks, 1));
	r->lens = palloc(sizeof(int64) * Max(r->nchunks, 1));
	r->chunk_first = palloc(sizeof(int64) * Max(r->nchunks, 1));
	for (int i = 0; i < r->nchunks; i++)
	{
		if (kdg_pq.getisnull(res, i, 0))
			kdg_remote_chunks_error(r);
		r->chunks[i] = kdg_pq.getvalue(res, i, 0);
		r->lens[i] = kdg_pq.getlength(res, i, 0);
	}
}

/* Free the chunks held by remote_hold_chunks. */
static void
remote_release_chunks(KdRemote *r)
{
	kdg_pq.clear(r->res);
	r->res = NULL;
	pfree(r->chunks);
	pfree(r->lens);
	pfree(r->chunk_first);
}

/*
 * The answers to nq queries of at most k neighbours that src's server
 * returned in chunks (kd_knn_join_chunks).
 */
static KdAnswer *
kdg_remote_chunks_answer(KdSource *src, int64 nq, int k)
{
	KdRemote   *r = src->remote;
	KdAnswer   *ans;

	remote_hold_chunks(r);
	ans = kdg_answer_chunks_answer(src, k, r->chunks, r->lens, r->nchunks,
								   r->chunk_first, nq);
	if (ans == NULL)
		kdg_remote_chunks_error(r);
	remote_release_chunks(r);
	return ans;
}

/*
 * Send a remote leaf's own All-kNN: fn (kd_all_knn_chunks, in the schema
 * of the function called) on its table, its points with their answers in
 * binary chunks (answer_chunks.c); with stream, its result is read a chunk
 * at a time (remote_stream.c).
 */
void
kdg_remote_all_knn_send(const KdTable *t, int leaf, const char *fn, int k,
						bool include_self, bool stream)
{
	KdRemote   *r = t->parts[leaf].remote;

	r->sql = psprintf("SELECT %s(%s::pg_catalog.regclass, %s::pg_catalog.name, %d, %s::pg_catalog.name, %s)",
					  fn, quote_literal_cstr(r->relname), quote_literal_cstr(r->colname), k,
					  r->keyname ? quote_literal_cstr(r->keyname) : "NULL",
					  include_self ? "true" : "false");
	r->chunks_sent = true;
	kdg_remote_exec(r, NULL);
	if (stream && !kdg_pq.setSingleRowMode(r->conn))
		elog(ERROR, "could not read the answer of server \"%s\" row by row", r->server);
}

/*
 * Read the result of a remote leaf's own All-kNN, sent by
 * kdg_remote_all_knn_send: the leaf gets room for its points (its n set),
 * and the result is held until kdg_remote_all_knn_fill copies them.
 */
void
kdg_remote_all_knn_points(const KdTable *t, int leaf, int k)
{
	KdSource   *src = &t->parts[leaf];
	KdRemote   *r = src->remote;

	remote_hold_chunks(r);
	if (kdg_answer_chunks_count(src, k, true, r->chunks, r->lens, r->nchunks,
								r->chunk_first) < 0)
		kdg_remote_chunks_error(r);
}

/*
 * Copy the points read by kdg_remote_all_knn_points into the leaf's rows,
 * and their answers into hits and count (point i's at hits[i * k ..], as
 * kdg_answer_chunks_fill), then free the result.
 */
void
kdg_remote_all_knn_fill(const KdTable *t, int leaf, int k, KdHit *hits,
						int *count)
{
	KdSource   *src = &t->parts[leaf];
	KdRemote   *r = src->remote;

	if (!kdg_answer_chunks_fill(src, k, r->chunks, r->lens, r->chunk_first,
								r->nchunks, hits, count))
		kdg_remote_chunks_error(r);
	remote_release_chunks(r);
}

/* The connection of a foreign leaf. */
struct pg_conn *
kdg_remote_conn(const KdSource *leaf)
{
	return leaf->remote->conn;
}

/*
 * Raise the error a foreign leaf's server returned for its call in flight
 * (res, freed), as postgres_fdw does, naming the server in its context.
 */
void
kdg_remote_raise(const KdSource *leaf, struct pg_result *res)
{
	KdRemote   *r = leaf->remote;
	ErrorContextCallback context;

	context.callback = remote_call_context;
	context.arg = r;
	context.previous = error_context_stack;
	error_context_stack = &context;
	fdw_report_error(ERROR, res, r->conn, true, r->sql);
}

/* Raise a foreign leaf's connection lost while read (lost), or its chunks out of shape. */
void
kdg_remote_raise_read(const KdSource *leaf, bool lost)
{
	if (lost)
		kdg_remote_lost(leaf->remote);
	leaf->remote->res_sql = leaf->remote->sql;
	kdg_remote_chunks_error(leaf->remote);
}

/* Mark a foreign leaf's call as read to its end (no result is left). */
void
kdg_remote_read_done(const KdSource *leaf)
{
	leaf->remote->sql = NULL;
}
