/*
 * answer_chunks.c
 *	  The coordinator's side of a shard's answers sent in chunks: counting
 *	  their entries and copying them into place.
 *
 * The shard writes the chunks (funcs/chunks_funcs.c, the format in
 * shard.h).  The coordinator counts the entries from the headers
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

#include "shard/shard.h"

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
 * Check the header of chunk h, of len bytes, from src's server for k; with
 * rows (All-kNN) its entries carry src's rows, and the first chunk with
 * entries gives src their dimension, PostGIS metadata and stride.  *n
 * gets its entries.  False when the header is out of shape or claims more
 * entries than its bytes can hold.
 */
static bool
kdg_chunk_head(KdSource *src, int k, bool rows, const char *h, int64 len,
			   int64 *n)
{
	int			dim;
	int			slots;

	if (len < KD_CHUNK_HEAD ||
		(uint32) kdg_chunk_field(h, KD_CH_MAGIC) != KD_CHUNK_MAGIC ||
		kdg_chunk_field(h, KD_CH_K) != k ||
		kdg_chunk_field(h, KD_CH_EXTRA) != src->extra ||
		(kdg_chunk_field(h, KD_CH_KEYED) != 0) != (src->keyattnum != InvalidAttrNumber))
		return false;
	dim = kdg_chunk_field(h, KD_CH_DIM);
	*n = kdg_chunk_field(h, KD_CH_NENTRIES);
	slots = kdg_chunk_field(h, KD_CH_SLOTS);
	if (*n < 0 || dim < 0 || dim > KD_MAX_DIM || slots < 0 ||
		kdg_chunk_field(h, KD_CH_TOTAL) < *n ||
		*n > (len - KD_CHUNK_HEAD) / ((int64) slots * 8 + 4))
		return false;
	if (rows && *n > 0)
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
			return false;
	}
	else if (!rows && slots != 0)
		return false;
	return true;
}

/* Room in src for its n points. */
static void
kdg_chunks_room(KdSource *src, int64 n)
{
	src->n = n;
	src->cap = Max(n, 1);
	src->rows = kdg_alloc_large(src->mcxt, sizeof(KdSlot) * Max(src->stride, 1) * src->cap,
								false);
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
		int64		n;

		if (!kdg_chunk_head(src, k, rows, chunks[c], lens[c], &n))
			return -1;
		chunk_first[c] = total;
		total += n;
	}
	for (int c = 0; c < nchunks; c++)
		if (kdg_chunk_field(chunks[c], KD_CH_TOTAL) != total)
			return -1;
	if (rows)
		kdg_chunks_room(src, total);
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

/* kde_parallel_for body of the chunk readers: chunks begin .. end. */
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
 * Begin reading a foreign leaf's own All-kNN a chunk at a time: chunk (of
 * len bytes; NULL when the server sent none) is its first, whose header
 * gives the entries of them all, for which src gets room.  The chunk is
 * kept, copied, until kdg_answer_stream_chunk fills it in place with the
 * rest (the room for the neighbours is made once every leaf's count is
 * known).  False when the chunk is out of shape.
 */
bool
kdg_answer_stream_begin(KdChunkStream *s, KdSource *src, int k,
						const char *chunk, int64 len)
{
	int64		n;

	memset(s, 0, sizeof(KdChunkStream));
	s->src = src;
	s->k = k;
	if (chunk == NULL)
	{
		kdg_chunks_room(src, 0);
		return true;
	}
	if (!kdg_chunk_head(src, k, true, chunk, len, &n) || n == 0)
		return false;
	s->total = kdg_chunk_field(chunk, KD_CH_TOTAL);
	kdg_chunks_room(src, s->total);
	s->first = palloc(len);
	memcpy(s->first, chunk, len);
	s->first_len = len;
	return true;
}

/*
 * Fill the next chunk (of len bytes) of s's leaf in place: its entries
 * follow those filled before.  Any thread may call it (no allocation, no
 * error raised), one at a time for s.  False when the chunk is out of
 * shape: another dimension or total than the first's, or more entries
 * than the total.
 */
bool
kdg_answer_stream_chunk(KdChunkStream *s, const char *chunk, int64 len)
{
	KdSource   *src = s->src;
	const char *p = chunk + KD_CHUNK_HEAD;
	const char *end = chunk + len;
	int64		n;

	if (src->dim == 0 ||
		!kdg_chunk_head(src, s->k, true, chunk, len, &n) ||
		kdg_chunk_field(chunk, KD_CH_TOTAL) != s->total ||
		n > s->total - s->next)
		return false;
	for (int64 i = 0; i < n; i++, s->next++)
	{
		int			nn = kdg_chunk_entry(src, s->k, src->stride, &p, end,
										 src->rows + s->next * src->stride,
										 s->hits + s->next * s->k);

		if (nn < 0)
			return false;
		s->count[s->next] = nn;
	}
	return p == end;
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
	ans->hits = kdg_alloc_large(CurrentMemoryContext, sizeof(KdHit) * ans->offsets[nq], false);
	f.ans = ans;
	if (!kdg_chunks_fill(&f, nchunks))
		return NULL;
	return ans;
}
