/*
 * allknn_chunks.c
 *	  A shard's part of a distributed All-kNN: its points and their own
 *	  All-kNN, sent to the coordinator in a few large binary chunks.
 *
 * A coordinator over foreign partitions (table_allknn.c) needs every point
 * of each shard with its identity and the shard's own answer to it, the k
 * nearest rows within the shard.  Sent as rows of kd_all_knn_arrays joined
 * back to the table for the points, that is a row per point: the shard
 * joins, builds two arrays a row and sends them, and the coordinator's
 * libpq parses and stores every row and field before a point is decoded
 * through its type's receive function.  On the H100 host, with four shards
 * of 1M points, the coordinator took 9.6 s where one shard's All-kNN took
 * 1.0 s, most of it in that row traffic.
 *
 * kd_all_knn_chunks(rel, col, k, key_col, include_self) answers the shard's
 * All-kNN as kd_all_knn_arrays does and returns it as SETOF bytea, a value
 * per call (called in the SELECT list, it is not stored in a tuplestore),
 * each value holding about KD_CHUNK_BYTES of points.  A chunk is a header
 * (KD_CHUNK_MAGIC, k, the rows' dimension, extra coordinates and whether
 * they carry a key, the PostGIS metadata of the points, the number of
 * points in it), then for each point the slots of its source row as the
 * coordinator keeps them (coordinates, extra coordinates, packed TID, key
 * ref: source.c), the number of its neighbours and each neighbour's ref and
 * distance.  Every field is a big-endian integer, a float8 sent as its
 * bits, so the coordinator gets every coordinate and distance bit for bit
 * whatever the servers' byte orders.  The coordinator copies the slots into
 * the foreign partition's rows (kdg_all_knn_chunks_read) without parsing a
 * value; the shard checked each point's type, dimension and metadata as it
 * read them, and the coordinator checks the shards against one another
 * (table_allknn.c).
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

/* About this many bytes of points a chunk. */
#define KD_CHUNK_BYTES	(4 * 1024 * 1024)

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
	KD_CH_NPOINTS,
	KD_CH_FIELDS
} KdChunkField;

#define KD_CHUNK_HEAD	(KD_CH_FIELDS * (int) sizeof(uint32))

/* Where a chunk's points start, how many there are and its bytes. */
typedef struct KdChunkPlan
{
	int			leaf;
	int64		row;
	int64		point;			/* its first point's answer */
	int64		npoints;
	Size		len;			/* of the bytea, header included */
	bytea	   *chunk;
} KdChunkPlan;

/*
 * What kd_all_knn_chunks keeps between calls: the answer, where the next
 * batch of chunks starts, and the batch made (one chunk per engine thread,
 * filled at once, returned one per call).
 */
typedef struct KdChunkState
{
	KdTable    *t;
	KdAnswer   *ans;
	int			k;
	int			leaf;			/* the next batch's first point's leaf */
	int64		row;			/* and its row there */
	int64		point;			/* the next batch's first point's answer */
	KdChunkPlan *batch;
	int			nbatch;
	int			maxbatch;
	int			next;			/* the next chunk of the batch to return */
} KdChunkState;

/* The shard's All-kNN of rel's col, the state of the calls that send it. */
static KdChunkState *
kdg_chunks_answer(FunctionCallInfo fcinfo)
{
	KdChunkState *st = palloc0(sizeof(KdChunkState));
	bool		include_self;
	KdExec		exec;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(4))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("kd_all_knn_chunks needs a table, a column, k and include_self")));
	if (PG_ARGISNULL(3) && get_rel_relkind(PG_GETARG_OID(0)) == RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a partitioned table", get_rel_name(PG_GETARG_OID(0))),
				 errdetail("ctid does not identify a row across partitions."),
				 errhint("Name a key column: kd_all_knn_chunks(..., key_col => 'id').")));
	st->k = PG_GETARG_INT32(2);
	include_self = PG_GETARG_BOOL(4);
	kdg_check_k(st->k);
	st->t = palloc0(sizeof(KdTable));
	kdg_table_open(st->t, PG_GETARG_OID(0), PG_GETARG_NAME(1),
				   PG_ARGISNULL(3) ? NULL : PG_GETARG_NAME(3),
				   PG_ARGISNULL(3) ? KD_IDENT_CTID : KD_IDENT_KEY,
				   "kd_all_knn_chunks");
	kdg_table_read(st->t);
	st->ans = kdg_table_all_knn(st->t, st->k, include_self);
	kdg_exec_prepare(&exec);
	st->maxbatch = Max(1, exec.threads);
	st->batch = palloc(sizeof(KdChunkPlan) * st->maxbatch);
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

/*
 * Plan the next batch of st's chunks: each as many points as fit
 * KD_CHUNK_BYTES (at least one), measured before they are written.
 */
static void
kdg_chunks_plan(KdChunkState *st)
{
	const KdTable *t = st->t;

	st->nbatch = 0;
	st->next = 0;
	while (st->nbatch < st->maxbatch && st->point < st->ans->nq)
	{
		KdChunkPlan *c = &st->batch[st->nbatch++];

		c->npoints = 0;
		c->len = VARHDRSZ + KD_CHUNK_HEAD;
		while (st->leaf < t->nparts && (c->npoints == 0 || c->len < KD_CHUNK_BYTES))
		{
			const KdSource *src = &t->parts[st->leaf];
			int64		nhits;

			if (st->row >= src->n)
			{
				st->leaf++;
				st->row = 0;
				continue;
			}
			if (c->npoints == 0)
			{
				c->leaf = st->leaf;
				c->row = st->row;
				c->point = st->point;
			}
			kdg_answer_hits(st->ans, st->point, &nhits);
			c->len += src->stride * sizeof(uint64) + sizeof(uint32) + nhits * 2 * sizeof(uint64);
			st->row++;
			st->point++;
			c->npoints++;
		}
		c->chunk = palloc(c->len);
	}
}

/* Write one planned chunk of st's points. */
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
	kdg_put32(&p, (uint32) c->npoints);
	for (int64 i = 0; i < c->npoints; i++)
	{
		const KdSource *src = &t->parts[leaf];
		const KdSlot *slots;
		const KdHit *hits;
		int64		nhits;

		while (row >= src->n)
		{
			src = &t->parts[++leaf];
			row = 0;
		}
		slots = src->rows + row * src->stride;
		for (int s = 0; s < src->stride; s++)
			kdg_put64(&p, slots[s].tid);
		hits = kdg_answer_hits(st->ans, c->point + i, &nhits);
		kdg_put32(&p, (uint32) nhits);
		for (int64 j = 0; j < nhits; j++)
		{
			uint64		bits;

			memcpy(&bits, &hits[j].dist, sizeof(bits));
			kdg_put64(&p, hits[j].ref);
			kdg_put64(&p, bits);
		}
		row++;
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
 * The next chunk of st's points as a bytea, NULL after the last.  Chunks
 * are made a batch at a time, written at once on the engine's threads: on
 * the H200 host, one thread took 3 s to write the 1.9 GB of 10M points'
 * answers.  The chunk returned before is freed.
 */
static bytea *
kdg_chunks_next(KdChunkState *st)
{
	if (st->next > 0)
		pfree(st->batch[st->next - 1].chunk);
	if (st->next == st->nbatch)
	{
		KdExec		exec;
		KdError		err;

		kdg_chunks_plan(st);
		if (st->nbatch == 0)
			return NULL;
		kdg_exec_prepare(&exec);
		exec.interrupt = NULL;
		(void) kd_parallel_for(&exec, st->nbatch, 1, kdg_chunks_write_range, st, &err);
	}
	return st->batch[st->next++].chunk;
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
	FuncCallContext *fc;
	KdChunkState *st;
	MemoryContext oldcxt;
	bytea	   *chunk;

	if (SRF_IS_FIRSTCALL())
	{
		fc = SRF_FIRSTCALL_INIT();
		oldcxt = MemoryContextSwitchTo(fc->multi_call_memory_ctx);
		fc->user_fctx = kdg_chunks_answer(fcinfo);
		MemoryContextSwitchTo(oldcxt);
	}
	fc = SRF_PERCALL_SETUP();
	st = fc->user_fctx;
	oldcxt = MemoryContextSwitchTo(fc->multi_call_memory_ctx);
	chunk = kdg_chunks_next(st);
	MemoryContextSwitchTo(oldcxt);
	if (chunk)
		SRF_RETURN_NEXT(fc, PointerGetDatum(chunk));
	SRF_RETURN_DONE(fc);
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

/*
 * Whether chunk, len bytes, has a header that src (a foreign leaf) and k
 * accept; *npoints is its number of points.
 */
static bool
kdg_chunk_head(const KdSource *src, int k, const char *chunk, int64 len,
			   int64 *npoints)
{
	int			dim;

	if (len < KD_CHUNK_HEAD ||
		kdg_get32(chunk + 4 * KD_CH_MAGIC) != KD_CHUNK_MAGIC ||
		(int) kdg_get32(chunk + 4 * KD_CH_K) != k ||
		(int) kdg_get32(chunk + 4 * KD_CH_EXTRA) != src->extra ||
		(kdg_get32(chunk + 4 * KD_CH_KEYED) != 0) != (src->keyattnum != InvalidAttrNumber))
		return false;
	dim = (int) kdg_get32(chunk + 4 * KD_CH_DIM);
	*npoints = (int32) kdg_get32(chunk + 4 * KD_CH_NPOINTS);
	return *npoints >= 0 && dim >= 0 && dim <= KD_MAX_DIM &&
		(*npoints == 0 || dim > 0);
}

/*
 * Make room in src (a foreign leaf) for the points of a server's answer to
 * kd_all_knn_chunks, the chunks[c] of lens[c] bytes, from their headers:
 * the rows' dimension and PostGIS metadata, src->n the number of points.
 * chunk_first[c] is set to the number of points before chunk c.  Returns
 * false when a header is out of shape.
 */
bool
kdg_all_knn_chunks_count(KdSource *src, int k, const char *const *chunks,
						 const int64 *lens, int nchunks, int64 *chunk_first)
{
	int64		total = 0;

	for (int c = 0; c < nchunks; c++)
	{
		int64		np;
		int			dim;

		if (!kdg_chunk_head(src, k, chunks[c], lens[c], &np))
			return false;
		dim = (int) kdg_get32(chunks[c] + 4 * KD_CH_DIM);
		if (np > 0 && src->dim == 0)
		{
			src->dim = dim;
			src->info.srid = (int32) kdg_get32(chunks[c] + 4 * KD_CH_SRID);
			src->info.zm = (int) kdg_get32(chunks[c] + 4 * KD_CH_ZM);
			src->info.geotype = (int) kdg_get32(chunks[c] + 4 * KD_CH_GEOTYPE);
			src->stride = kdg_source_stride(src, dim);
		}
		else if (np > 0 && dim != src->dim)
			return false;
		chunk_first[c] = total;
		total += np;
	}
	src->n = total;
	src->cap = Max(total, 1);
	src->rows = MemoryContextAllocExtended(src->mcxt,
										   sizeof(KdSlot) * Max(src->stride, 1) * src->cap,
										   MCXT_ALLOC_HUGE);
	return true;
}

/* What the threads of kdg_all_knn_chunks_fill share. */
typedef struct KdChunkFill
{
	KdSource   *src;
	int			k;
	const char *const *chunks;
	const int64 *lens;
	const int64 *chunk_first;
	KdHit	   *hits;
	int		   *count;
	bool		bad;			/* a chunk was out of shape */
} KdChunkFill;

/* Fill the rows and answers of one chunk; false when it is out of shape. */
static bool
kdg_chunk_fill(KdChunkFill *f, int c)
{
	const KdSource *src = f->src;
	bool		keyed = src->keyattnum != InvalidAttrNumber;
	const char *p = f->chunks[c] + KD_CHUNK_HEAD;
	const char *end = f->chunks[c] + f->lens[c];
	int64		np = (int32) kdg_get32(f->chunks[c] + 4 * KD_CH_NPOINTS);

	for (int64 i = 0; i < np; i++)
	{
		int64		point = f->chunk_first[c] + i;
		KdSlot	   *row = src->rows + point * src->stride;
		KdHit	   *hits = f->hits + point * f->k;
		uint32		nn;

		if (end - p < (int64) src->stride * 8 + 4)
			return false;
		for (int s = 0; s < src->stride; s++, p += 8)
			row[s].tid = kdg_get64(p);
		nn = kdg_get32(p);
		p += 4;
		if (nn > (uint32) f->k || end - p < (int64) nn * 16)
			return false;
		for (uint32 j = 0; j < nn; j++, p += 16)
		{
			uint64		ref = kdg_get64(p);
			uint64		bits = kdg_get64(p + 8);

			if (!keyed && (ref >> KD_PART_SHIFT) != 0)
				return false;
			hits[j].ref = keyed ? ref : src->refbase | ref;
			memcpy(&hits[j].dist, &bits, sizeof(bits));
		}
		f->count[point] = (int) nn;
	}
	return p == end;
}

/* kd_parallel_for body of kdg_all_knn_chunks_fill: chunks begin .. end. */
static void
kdg_chunks_fill_range(void *arg, int64_t begin, int64_t end)
{
	KdChunkFill *f = arg;

	for (int64 c = begin; c < end; c++)
		if (!kdg_chunk_fill(f, (int) c))
			__atomic_store_n(&f->bad, true, __ATOMIC_RELAXED);
}

/*
 * Copy the points of the chunks, counted by kdg_all_knn_chunks_count, into
 * src's rows in the order sent, and their answers into hits and count as
 * table_allknn.c gathers them: point i's neighbours at hits[i * k ..], their
 * number in count[i], the refs made the coordinator's (a TID gets the
 * leaf's refbase).  The chunks are decoded at once on the engine's threads,
 * since copying into memory just allocated is bound by mapping its pages.
 * Returns false when a chunk is out of shape.
 */
bool
kdg_all_knn_chunks_fill(KdSource *src, int k, const char *const *chunks,
						const int64 *lens, const int64 *chunk_first,
						int nchunks, KdHit *hits, int *count)
{
	KdChunkFill f = {src, k, chunks, lens, chunk_first, hits, count, false};
	KdExec		exec;
	KdError		err;

	kdg_exec_prepare(&exec);
	exec.interrupt = NULL;
	(void) kd_parallel_for(&exec, nchunks, 1, kdg_chunks_fill_range, &f, &err);
	return !f.bad;
}
