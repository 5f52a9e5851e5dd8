/*
 * answer_chunks.c
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
 * slots of an entry's row, 0 for a query, and the number of entries), then
 * for each entry the slots of its source row as the coordinator keeps them
 * (coordinates, extra coordinates, packed TID, key ref: source.c), the
 * number of its neighbours and each neighbour's ref and distance.  Every
 * field is a big-endian integer, a float8 sent as its bits, so the
 * coordinator gets every coordinate and distance bit for bit whatever the
 * servers' byte orders.  The chunks are written a batch at a time on the
 * engine's threads, one chunk per thread.
 *
 * The coordinator counts the entries from the headers
 * (kdg_answer_chunks_count) and then copies the chunks into place on its
 * threads: an All-kNN's points' slots into the foreign partition's rows,
 * without parsing a value, and their neighbours into room for k per point
 * (kdg_answer_chunks_fill); a join's neighbours into an answer sized by a
 * first pass over their counts (kdg_answer_chunks_answer).  Every length
 * is checked against the bytes received.  The shard checked each point's
 * type, dimension and metadata as it read them, and the coordinator checks
 * the shards against one another (table_allknn.c); the chunks do not say
 * the column's type, so a shard whose column has another type of the same
 * dimension goes unnoticed.
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/pg_bswap.h"
#include "utils/lsyscache.h"

#include "kdgpu.h"

/* The first word of every chunk: "KDC1". */
#define KD_CHUNK_MAGIC	0x4B444331

/* About this many bytes of entries a chunk. */
#define KD_CHUNK_BYTES	(4 * 1024 * 1024)

/* At most this many chunks made at a time, one per engine thread. */
#define KD_CHUNK_BATCH	64

/* The header of a chunk, each field a big-endian int32. */
typedef enum KdChunkField
{
	KD_CH_MAGIC,
	KD_CH_K,
	KD_CH_DIM,
	KD_CH_EXTRA,
	KD_CH_KEYED,
	KD_CH_SRID,
	KD_CH_ZM,
	KD_CH_GEOTYPE,
	KD_CH_SLOTS,
	KD_CH_NENTRIES,
	KD_CH_FIELDS
} KdChunkField;

#define KD_CHUNK_HEAD	(KD_CH_FIELDS * (int) sizeof(uint32))

/* Where a chunk's entries start, how many there are and its bytes. */
typedef struct KdChunkPlan
{
	int			leaf;			/* its first entry's row, with rows */
	int64		row;
	int64		entry;			/* its first entry */
	int64		nentries;
	Size		len;			/* of the bytea, header included */
	bytea	   *chunk;
} KdChunkPlan;

/*
 * What the chunk functions keep between calls: the answer, whether its
 * entries are the table's rows, where the next batch of chunks starts, and
 * the batch made (one chunk per engine thread, filled at once, returned one
 * per call).
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
 * KD_CHUNK_BYTES (at least one), measured before they are written.
 */
static void
kdg_chunks_plan(KdChunkState *st)
{
	const KdTable *t = st->t;
	Size		slots = kdg_chunks_slots(st) * sizeof(uint64);

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
		c->chunk = palloc(c->len);
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
			slots = src->rows + row * src->stride;
			for (int s = 0; s < src->stride; s++)
				kdg_put64(&p, slots[s].tid);
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

/* kd_parallel_for body of kdg_chunks_next: write chunks begin .. end. */
static void
kdg_chunks_write_range(void *arg, int64_t begin, int64_t end)
{
	KdChunkState *st = arg;

	for (int64 i = begin; i < end; i++)
		kdg_chunk_write(st, &st->batch[i]);
}

/*
 * The next chunk of st's entries as a bytea, NULL after the last.  Chunks
 * are made a batch at a time, written at once on the engine's threads,
 * since one thread writing a large All-kNN took longer than its search.
 * The chunk returned before is freed.
 */
static bytea *
kdg_chunks_next(KdChunkState *st)
{
	if (st->next > 0)
		pfree(st->batch[st->next - 1].chunk);
	if (st->next == st->nbatch)
	{
		kdg_chunks_plan(st);
		if (st->nbatch == 0)
			return NULL;
		kdg_parallel_for(st->nbatch, 1, kdg_chunks_write_range, st);
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

/* The big-endian 32-bit word at p. */
static uint32
kdg_get32(const char *p)
{
	uint32		v;

	memcpy(&v, p, sizeof(v));
	return pg_ntoh32(v);
}

/* The big-endian 64-bit word at p. */
static uint64
kdg_get64(const char *p)
{
	uint64		v;

	memcpy(&v, p, sizeof(v));
	return pg_ntoh64(v);
}

/* Header field f of a chunk. */
static int32
kdg_chunk_field(const char *chunk, KdChunkField f)
{
	return (int32) kdg_get32(chunk + sizeof(uint32) * f);
}

/*
 * Count the entries of a server's chunks, chunks[c] of lens[c] bytes, for
 * src (a foreign leaf) and k; chunk_first[c] is set to the number of
 * entries before chunk c.  With rows (All-kNN) the entries are src's
 * points: src gets their dimension and PostGIS metadata and room for them.
 * Returns the number of entries, -1 when a header is out of shape (or
 * claims more entries than its bytes can hold).
 */
int64
kdg_answer_chunks_count(KdSource *src, int k, bool rows,
						const char *const *chunks, const int64 *lens,
						int nchunks, int64 *chunk_first)
{
	int64		total = 0;

	for (int c = 0; c < nchunks; c++)
	{
		const char *h = chunks[c];
		int64		n;
		int			dim;
		int			slots;

		if (lens[c] < KD_CHUNK_HEAD ||
			(uint32) kdg_chunk_field(h, KD_CH_MAGIC) != KD_CHUNK_MAGIC ||
			kdg_chunk_field(h, KD_CH_K) != k ||
			kdg_chunk_field(h, KD_CH_EXTRA) != src->extra ||
			(kdg_chunk_field(h, KD_CH_KEYED) != 0) != (src->keyattnum != InvalidAttrNumber))
			return -1;
		dim = kdg_chunk_field(h, KD_CH_DIM);
		n = kdg_chunk_field(h, KD_CH_NENTRIES);
		slots = kdg_chunk_field(h, KD_CH_SLOTS);
		if (n < 0 || dim < 0 || dim > KD_MAX_DIM || slots < 0 ||
			n > (lens[c] - KD_CHUNK_HEAD) / ((int64) slots * 8 + 4))
			return -1;
		if (rows && n > 0)
		{
			if (src->dim == 0)
			{
				src->dim = dim;
				src->info.srid = kdg_chunk_field(h, KD_CH_SRID);
				src->info.zm = kdg_chunk_field(h, KD_CH_ZM);
				src->info.geotype = kdg_chunk_field(h, KD_CH_GEOTYPE);
				src->stride = kdg_source_stride(src, dim);
			}
			if (dim == 0 || dim != src->dim || slots != src->stride)
				return -1;
		}
		else if (!rows && slots != 0)
			return -1;
		chunk_first[c] = total;
		total += n;
	}
	if (rows)
	{
		src->n = total;
		src->cap = Max(total, 1);
		src->rows = MemoryContextAllocExtended(src->mcxt,
											   sizeof(KdSlot) * Max(src->stride, 1) * src->cap,
											   MCXT_ALLOC_HUGE);
	}
	return total;
}

/*
 * Decode the entry at *p, before end: its row's slots into row (none when
 * slots is 0), its neighbours into hits (room for k), their refs made the
 * coordinator's (a TID gets src's refbase); *p moves past it.  Returns the
 * number of neighbours, -1 when the entry is out of shape.
 */
static int
kdg_chunk_entry(const KdSource *src, int k, int slots, const char **p,
				const char *end, KdSlot *row, KdHit *hits)
{
	bool		keyed = src->keyattnum != InvalidAttrNumber;
	const char *q = *p;
	uint32		nn;

	if (end - q < (int64) slots * 8 + 4)
		return -1;
	for (int s = 0; s < slots; s++, q += 8)
		row[s].tid = kdg_get64(q);
	/* a row's packed TID is that of a plain table */
	if (slots > 0 && (row[src->dim + src->extra].tid >> KD_PART_SHIFT) != 0)
		return -1;
	nn = kdg_get32(q);
	q += 4;
	if (nn > (uint32) k || end - q < (int64) nn * 16)
		return -1;
	for (uint32 j = 0; j < nn; j++, q += 16)
	{
		uint64		ref = kdg_get64(q);
		uint64		bits = kdg_get64(q + 8);

		if (!keyed && (ref >> KD_PART_SHIFT) != 0)
			return -1;
		hits[j].ref = keyed ? ref : src->refbase | ref;
		memcpy(&hits[j].dist, &bits, sizeof(bits));
	}
	*p = q;
	return (int) nn;
}

/* What the threads of the chunk readers share. */
typedef struct KdChunkFill
{
	KdSource   *src;
	int			k;
	const char *const *chunks;
	const int64 *lens;
	const int64 *chunk_first;
	KdHit	   *hits;
	int		   *count;			/* rows: entry i's number of neighbours */
	KdAnswer   *ans;			/* or the answer to fill, its offsets set */
	bool		bad;			/* a chunk was out of shape */
} KdChunkFill;

/*
 * Fill the entries of chunk c: with count, the rows' slots and each
 * entry's neighbours at hits[e * k ..]; with ans, each entry's neighbours
 * at ans->hits[ans->offsets[e] ..].  False when it is out of shape.
 */
static bool
kdg_chunk_fill(KdChunkFill *f, int c)
{
	const KdSource *src = f->src;
	int			slots = f->count ? src->stride : 0;
	const char *p = f->chunks[c] + KD_CHUNK_HEAD;
	const char *end = f->chunks[c] + f->lens[c];
	int64		n = kdg_chunk_field(f->chunks[c], KD_CH_NENTRIES);

	for (int64 i = 0; i < n; i++)
	{
		int64		e = f->chunk_first[c] + i;
		int			nn;

		if (f->count)
		{
			nn = kdg_chunk_entry(src, f->k, slots, &p, end,
								 src->rows + e * src->stride, f->hits + e * f->k);
			f->count[e] = nn;
		}
		else
			nn = kdg_chunk_entry(src, f->k, 0, &p, end, NULL,
								 f->ans->hits + f->ans->offsets[e]);
		if (nn < 0 || (f->ans && nn != f->ans->offsets[e + 1] - f->ans->offsets[e]))
			return false;
	}
	return p == end;
}

/* kd_parallel_for body of the chunk readers: chunks begin .. end. */
static void
kdg_chunks_fill_range(void *arg, int64_t begin, int64_t end)
{
	KdChunkFill *f = arg;

	for (int64 c = begin; c < end; c++)
		if (!kdg_chunk_fill(f, (int) c))
			__atomic_store_n(&f->bad, true, __ATOMIC_RELAXED);
}

/* Run f over its nchunks chunks on the engine's threads; false when one is out of shape. */
static bool
kdg_chunks_fill(KdChunkFill *f, int nchunks)
{
	kdg_parallel_for(nchunks, 1, kdg_chunks_fill_range, f);
	return !f->bad;
}

/*
 * Copy the points of the chunks of a foreign leaf's All-kNN, counted by
 * kdg_answer_chunks_count with rows, into src's rows in the order sent,
 * and their neighbours into hits and count as table_allknn.c gathers them:
 * point i's at hits[i * k ..], their number in count[i].  The chunks are
 * decoded at once on the engine's threads, since copying into memory just
 * allocated is bound by mapping its pages.  Returns false when a chunk is
 * out of shape.
 */
bool
kdg_answer_chunks_fill(KdSource *src, int k, const char *const *chunks,
					   const int64 *lens, const int64 *chunk_first, int nchunks,
					   KdHit *hits, int *count)
{
	KdChunkFill f = {src, k, chunks, lens, chunk_first, hits, count, NULL, false};

	return kdg_chunks_fill(&f, nchunks);
}

/*
 * The answers to nq queries in the chunks of a foreign leaf's kNN join
 * (kd_knn_join_chunks), with refs made the coordinator's: the neighbour
 * counts are read first (one pass over the chunks), so that the answer
 * takes the room its hits need, then the chunks are decoded on the
 * engine's threads.  chunk_first has room for nchunks entries (as for
 * kdg_answer_chunks_count).  Returns NULL when a chunk is out of shape.
 */
KdAnswer *
kdg_answer_chunks_answer(KdSource *src, int k, const char *const *chunks,
						 const int64 *lens, int nchunks, int64 *chunk_first,
						 int64 nq)
{
	KdAnswer   *ans;
	KdChunkFill f = {src, k, chunks, lens, chunk_first, NULL, NULL, NULL, false};
	int64		e = 0;

	if (kdg_answer_chunks_count(src, k, false, chunks, lens, nchunks, chunk_first) != nq)
		return NULL;
	ans = kdg_empty_answer(nq);
	for (int c = 0; c < nchunks; c++)
	{
		const char *p = chunks[c] + KD_CHUNK_HEAD;
		const char *end = chunks[c] + lens[c];
		int64		n = kdg_chunk_field(chunks[c], KD_CH_NENTRIES);

		for (int64 i = 0; i < n; i++, e++)
		{
			uint32		nn;

			if (end - p < 4)
				return NULL;
			nn = kdg_get32(p);
			if (nn > (uint32) k || (end - p - 4) / 16 < nn)
				return NULL;
			p += 4 + (int64) nn * 16;
			ans->offsets[e + 1] = ans->offsets[e] + nn;
		}
	}
	ans->hits = palloc_extended(sizeof(KdHit) * Max(ans->offsets[nq], 1), MCXT_ALLOC_HUGE);
	f.ans = ans;
	if (!kdg_chunks_fill(&f, nchunks))
		return NULL;
	return ans;
}
