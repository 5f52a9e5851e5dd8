/*
 * chunks_funcs.c
 *	  A shard's answers sent to the coordinator in a few large binary
 *	  values: its own All-kNN with its points, and a kNN join's answers.
 *
 * A coordinator over foreign partitions (table_allknn.c, table_search.c)
 * reads each shard's answers through postgres_fdw's connection.  Sent as
 * rows, that is a row per point or per hit: the shard makes and sends
 * every row, and the coordinator's libpq parses and stores every row and
 * field before the coordinator decodes them one value at a time, which
 * made the coordinator many times slower than a shard's own search.
 *
 * kd_all_knn_chunks(rel, col, k, key_col, include_self) answers the shard's
 * All-kNN as kd_all_knn_arrays does, and kd_knn_join_chunks(rel, col,
 * queries, k, key_col) a kNN join of an array of points as kd_knn_join
 * does; each returns its answers as SETOF bytea, a value per call (called
 * in the SELECT list, it is not stored in a tuplestore), each value holding
 * about KD_CHUNK_BYTES of entries.  An entry is a point of the table
 * (All-kNN) or a query (the join), in order.  A chunk is a header (see
 * KdChunkField: KD_CHUNK_MAGIC, k, the rows' dimension, extra coordinates
 * and whether they carry a key, the PostGIS metadata of the points, the
 * slots of an entry's row, 0 for a query, the number of its entries and
 * that of every chunk of the answer, so that a coordinator knows the room
 * the answer needs from its first chunk), then
 * for each entry the slots of its source row as the coordinator keeps them
 * (coordinates, extra coordinates, packed TID, key ref: source.c), the
 * number of its neighbours and each neighbour's ref and distance.  Every
 * field is a big-endian integer, a float8 sent as its bits, so the
 * coordinator gets every coordinate and distance bit for bit whatever the
 * servers' byte orders.  The chunks are written a batch at a time on the
 * engine's threads, one chunk per thread.
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "utils/lsyscache.h"

#include "funcs/funcs.h"

/* About this many bytes of entries a chunk. */
#define KD_CHUNK_BYTES	(4 * 1024 * 1024)

/* At most this many chunks made at a time, one per engine thread. */
#define KD_CHUNK_BATCH	64

/* Where a chunk's entries start, how many there are and its bytes. */
typedef struct KdChunkPlan
{
	int			leaf;			/* its first entry's row, with rows */
	int64		row;
	int64		entry;			/* its first entry */
	int64		nentries;
	Size		len;			/* of the bytea, header included */
	bytea	   *chunk;			/* in the batch's buffer */
} KdChunkPlan;

/*
 * What the chunk functions keep between calls: the answer, whether its
 * entries are the table's rows, where the next batch of chunks starts, and
 * the batch made (one chunk per engine thread, filled at once, returned one
 * per call).  Every batch is written into one buffer, kept for the next
 * batches (and grown when one needs more), since writing into memory just
 * allocated is bound by mapping its pages.
 */
typedef struct KdChunkState
{
	KdTable    *t;
	KdAnswer   *ans;
	int			k;
	bool		rows;			/* entries are t's rows (All-kNN) */
	int			leaf;			/* the next batch's first entry's leaf */
	int64		row;			/* and its row there */
	int64		entry;			/* the next batch's first entry */
	KdChunkPlan *batch;
	int			nbatch;
	int			maxbatch;
	int			next;			/* the next chunk of the batch to return */
	char	   *buf;			/* the batch's chunks */
	Size		bufsize;
} KdChunkState;

/*
 * Open rel's col for a chunk function named fname, k at argument karg,
 * key_col at argument keyarg (NULL for ctids); a partitioned table needs a
 * key.
 */
static KdChunkState *
kdg_chunks_open(FunctionCallInfo fcinfo, int karg, int keyarg, const char *fname)
{
	KdChunkState *st = palloc0(sizeof(KdChunkState));
	Oid			relid = PG_GETARG_OID(0);
	bool		keyed = !PG_ARGISNULL(keyarg);

	if (!keyed && get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a partitioned table", get_rel_name(relid)),
				 errdetail("ctid does not identify a row across partitions."),
				 errhint("Name a key column: %s(..., key_col => 'id').", fname)));
	st->k = PG_GETARG_INT32(karg);
	st->t = palloc0(sizeof(KdTable));
	kdg_table_open(st->t, relid, PG_GETARG_NAME(1),
				   keyed ? PG_GETARG_NAME(keyarg) : NULL,
				   keyed ? KD_IDENT_KEY : KD_IDENT_CTID, fname);
	st->maxbatch = Min(kdg_cpu_threads(), KD_CHUNK_BATCH);
	st->batch = palloc(sizeof(KdChunkPlan) * st->maxbatch);
	return st;
}

/* kd_all_knn_chunks's answer: every point of rel's col with its own. */
static KdChunkState *
kdg_all_knn_chunks_answer(FunctionCallInfo fcinfo)
{
	KdChunkState *st;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("kd_all_knn_chunks needs a table, a column, k and include_self")));
	kdg_check_k(PG_GETARG_INT32(2));
	st = kdg_chunks_open(fcinfo, 2, 3, "kd_all_knn_chunks");
	st->rows = true;
	kdg_table_read(st->t);
	st->ans = kdg_table_all_knn(st->t, st->k, PG_GETARG_BOOL(4));
	return st;
}

/* kd_knn_join_chunks's answer: the k nearest rows to each query point. */
static KdChunkState *
kdg_knn_join_chunks_answer(FunctionCallInfo fcinfo)
{
	KdChunkState *st;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("kd_knn_join_chunks needs a table, a column, queries and k")));
	st = kdg_chunks_open(fcinfo, 3, 4, "kd_knn_join_chunks");
	st->ans = kdg_knn_join_answer(st->t, PG_GETARG_DATUM(2),
								  get_fn_expr_argtype(fcinfo->flinfo, 2), st->k);
	return st;
}

/* Write v big-endian at *p and move past it. */
static inline void
kdg_put32(char **p, uint32 v)
{
	v = pg_hton32(v);
	memcpy(*p, &v, sizeof(v));
	*p += sizeof(v);
}

/* Write v big-endian at *p and move past it. */
static inline void
kdg_put64(char **p, uint64 v)
{
	v = pg_hton64(v);
	memcpy(*p, &v, sizeof(v));
	*p += sizeof(v);
}

/* The slots of an entry's row in st's chunks: none for queries. */
static int
kdg_chunks_slots(const KdChunkState *st)
{
	return st->rows ? kdg_source_stride(&st->t->head, Max(st->t->head.dim, 1)) : 0;
}

/*
 * Plan the next batch of st's chunks: each as many entries as fit
 * KD_CHUNK_BYTES (at least one), measured before they are written, and
 * placed in st's buffer (the chunks returned before are done with).
 */
static void
kdg_chunks_plan(KdChunkState *st)
{
	const KdTable *t = st->t;
	Size		slots = kdg_chunks_slots(st) * sizeof(uint64);
	Size		need = 0;
	Size		at = 0;

	st->nbatch = 0;
	st->next = 0;
	while (st->nbatch < st->maxbatch && st->entry < st->ans->nq)
	{
		KdChunkPlan *c = &st->batch[st->nbatch++];

		c->leaf = st->leaf;
		c->row = st->row;
		c->entry = st->entry;
		c->nentries = 0;
		c->len = VARHDRSZ + KD_CHUNK_HEAD;
		while (st->entry < st->ans->nq && (c->nentries == 0 || c->len < KD_CHUNK_BYTES))
		{
			int64		nhits;

			if (st->rows && st->row >= t->parts[st->leaf].n)
			{
				st->leaf++;
				st->row = 0;
				continue;
			}
			kdg_answer_hits(st->ans, st->entry, &nhits);
			c->len += slots + sizeof(uint32) + nhits * 2 * sizeof(uint64);
			st->row++;
			st->entry++;
			c->nentries++;
		}
		need += MAXALIGN(c->len);
	}
	if (need > st->bufsize)
	{
		if (st->buf)
			pfree(st->buf);
		st->buf = kdg_alloc_large(CurrentMemoryContext, need, false);
		st->bufsize = need;
	}
	for (int i = 0; i < st->nbatch; i++)
	{
		st->batch[i].chunk = (bytea *) (st->buf + at);
		at += MAXALIGN(st->batch[i].len);
	}
}

/* Write one planned chunk of st's entries. */
static void
kdg_chunk_write(const KdChunkState *st, KdChunkPlan *c)
{
	const KdTable *t = st->t;
	const KdSource *head = &t->head;
	int			leaf = c->leaf;
	int64		row = c->row;
	char	   *p;

	SET_VARSIZE(c->chunk, c->len);
	p = VARDATA(c->chunk);
	kdg_put32(&p, KD_CHUNK_MAGIC);
	kdg_put32(&p, st->k);
	kdg_put32(&p, head->dim);
	kdg_put32(&p, head->extra);
	kdg_put32(&p, head->keyattnum != InvalidAttrNumber);
	kdg_put32(&p, head->info.srid);
	kdg_put32(&p, head->info.zm);
	kdg_put32(&p, head->info.geotype);
	kdg_put32(&p, kdg_chunks_slots(st));
	kdg_put32(&p, (uint32) c->nentries);
	kdg_put32(&p, (uint32) st->ans->nq);
	for (int64 i = 0; i < c->nentries; i++)
	{
		const KdHit *hits;
		int64		nhits;

		if (st->rows)
		{
			const KdSource *src = &t->parts[leaf];
			const KdSlot *slots;

			while (row >= src->n)
			{
				src = &t->parts[++leaf];
				row = 0;
			}
			/*
			 * The coordinates, the row's own TID and its key: rows taken
			 * from an index name a HOT chain's root and keep their keys
			 * apart (kdgpu.h), which the chunk does not
			 */
			slots = src->rows + row * src->stride;
			for (int s = 0; s < src->dim + src->extra; s++)
				kdg_put64(&p, slots[s].tid);
			kdg_put64(&p, src->hot ?
					  kdg_hot_tid(src->hot, kdg_row_tid(src, row)) :
					  kdg_row_tid(src, row));
			if (src->keyattnum != InvalidAttrNumber)
				kdg_put64(&p, kdg_row_ref(src, row));
			row++;
		}
		hits = kdg_answer_hits(st->ans, c->entry + i, &nhits);
		kdg_put32(&p, (uint32) nhits);
		for (int64 j = 0; j < nhits; j++)
		{
			uint64		bits;

			memcpy(&bits, &hits[j].dist, sizeof(bits));
			kdg_put64(&p, hits[j].ref);
			kdg_put64(&p, bits);
		}
	}
	Assert(p == (char *) c->chunk + c->len);
}

/* kde_parallel_for body of kdg_chunks_next: write chunks begin .. end. */
static void
kdg_chunks_write_range(void *arg, int64_t begin, int64_t end)
{
	KdChunkState *st = arg;

	for (int64 i = begin; i < end; i++)
		kdg_chunk_write(st, &st->batch[i]);
}

/*
 * Around the threads that write chunks with rows (before: true), which
 * look up the rows' own TIDs: read every page of each part's HOT chains
 * not known yet, then check that no thread met one unread.
 */
static void
chunks_hot_pages(KdChunkState *st, bool before)
{
	if (!st->rows)
		return;
	for (int p = 0; p < st->t->nparts; p++)
	{
		const KdSource *src = &st->t->parts[p];

		if (src->hot == NULL)
			continue;
		if (before)
			kdg_hot_read_all(src);
		else
			kdg_hot_threads_done(src->hot);
	}
}

/*
 * The next chunk of st's entries as a bytea, NULL after the last.  Chunks
 * are made a batch at a time, written at once on the engine's threads,
 * since one thread writing a large All-kNN took longer than its search.
 * A batch's chunks stay valid until the call after the batch's last.
 * Each lies inside st's buffer, not in a chunk of memory of its own, so
 * that nothing may free it: the executor frees no value a set-returning
 * function returns.
 */
static bytea *
kdg_chunks_next(KdChunkState *st)
{
	if (st->next == st->nbatch)
	{
		kdg_chunks_plan(st);
		if (st->nbatch == 0)
			return NULL;
		chunks_hot_pages(st, true);
		kdg_parallel_for(st->nbatch, 1, kdg_chunks_write_range, st);
		chunks_hot_pages(st, false);
	}
	return st->batch[st->next++].chunk;
}

/*
 * Return the chunks of the answer that answer(fcinfo) makes on the first
 * call, one per call.
 */
static Datum
kdg_chunks_srf(FunctionCallInfo fcinfo,
			   KdChunkState *(*answer) (FunctionCallInfo fcinfo))
{
	FuncCallContext *fc;
	MemoryContext oldcxt;
	bytea	   *chunk;

	if (SRF_IS_FIRSTCALL())
	{
		fc = SRF_FIRSTCALL_INIT();
		oldcxt = MemoryContextSwitchTo(fc->multi_call_memory_ctx);
		fc->user_fctx = answer(fcinfo);
		MemoryContextSwitchTo(oldcxt);
	}
	fc = SRF_PERCALL_SETUP();
	oldcxt = MemoryContextSwitchTo(fc->multi_call_memory_ctx);
	chunk = kdg_chunks_next(fc->user_fctx);
	MemoryContextSwitchTo(oldcxt);
	if (chunk)
		SRF_RETURN_NEXT(fc, PointerGetDatum(chunk));
	SRF_RETURN_DONE(fc);
}

/*
 * kd_all_knn_chunks(rel, col, k, key_col, include_self): rel's All-kNN with
 * its points, in chunks for a coordinator (a NULL key_col identifies rows
 * by ctid).
 */
PG_FUNCTION_INFO_V1(kdgpu_all_knn_chunks);
Datum
kdgpu_all_knn_chunks(PG_FUNCTION_ARGS)
{
	return kdg_chunks_srf(fcinfo, kdg_all_knn_chunks_answer);
}

/*
 * kd_knn_join_chunks(rel, col, queries, k, key_col): the k nearest rows of
 * rel to each point of an array of any point type, in chunks for a
 * coordinator (a NULL key_col identifies rows by ctid).
 */
PG_FUNCTION_INFO_V1(kdgpu_knn_join_chunks);
Datum
kdgpu_knn_join_chunks(PG_FUNCTION_ARGS)
{
	return kdg_chunks_srf(fcinfo, kdg_knn_join_chunks_answer);
}
