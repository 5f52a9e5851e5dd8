/*
 * shard.h
 *	  Tables and partitions: local leaves and foreign shards.
 *
 * A table is read leaf by leaf (table.c); a search runs the local path on
 * each local leaf and sends each foreign leaf's part to its server
 * (remote.c), then merges (table_search.c, table_allknn.c).  Calls local/
 * and below, never the functions.
 */
#ifndef KDGPU_SHARD_H
#define KDGPU_SHARD_H

#include "local/local.h"

/* table.c */
extern void kdg_table_open(KdTable *t, Oid relid, Name colname,
						   Name keyname, KdIdent ident, const char *fname);
extern void kdg_table_read(KdTable *t);
extern void kdg_table_read_all(KdTable *t);
extern void kdg_check_keys_unique(const KdTable *t);
extern uint64 *kdg_table_refs(const KdTable *t);
extern double *kdg_table_queries(const KdTable *t);

struct pg_conn;					/* libpq's PGconn */
struct pg_result;				/* libpq's PGresult */
typedef struct KdChunkStream KdChunkStream;	/* answer_chunks.c */

/* remote.c */
extern void kdg_remote_open(KdSource *leaf);
extern char *kdg_remote_kdgpu_schema(void);
extern bool kdg_remote_can_send(const KdTable *t, int leaf);
extern bool kdg_remote_in_flight(const KdSource *leaf);
extern char *kdg_remote_param(KdParams *params, Datum value, Oid type);
extern char *kdg_remote_points(KdParams *params, const KdSource *src,
							   const double *coords, int64 nq);
extern void kdg_remote_send(const KdTable *t, int leaf, const char *fn,
							const char *args, const KdParams *params,
							bool batched, bool distance, bool chunks);
/* Answers to this many queries or more are read from the servers on threads. */
#define KD_LARGE_ANSWER 65536
extern void kdg_remote_drain(const KdTable *t, bool large);
extern KdAnswer *kdg_remote_answer(const KdTable *t, int leaf, int64 nq,
								   int k, bool batched, bool distance);
extern void kdg_remote_all_knn_send(const KdTable *t, int leaf, const char *fn,
									int k, bool include_self, bool stream);
extern struct pg_conn *kdg_remote_conn(const KdSource *leaf);
extern void kdg_remote_raise(const KdSource *leaf, struct pg_result *res);
extern void kdg_remote_raise_read(const KdSource *leaf, bool lost);
extern void kdg_remote_read_done(const KdSource *leaf);
extern void kdg_remote_all_knn_points(const KdTable *t, int leaf, int k);
extern void kdg_remote_all_knn_fill(const KdTable *t, int leaf, int k,
									KdHit *hits, int *count);

/* remote_stream.c */
extern void kdg_remote_all_knn_heads(const KdTable *t, int k,
									 KdChunkStream *streams);
extern void kdg_remote_all_knn_stream(const KdTable *t, KdChunkStream *streams);

/* remote_readers.c */
typedef struct KdReaders KdReaders;
/* Takes a result read on a reader thread (and frees it); false refuses it. */
typedef bool (*KdReaderFn) (void *arg, struct pg_result *res);
extern int	kdg_reader_step(struct pg_conn *conn, KdReaderFn fn, void *arg);
extern KdReaders *kdg_readers_start(struct pg_conn **conns, int n,
									KdReaderFn fn, void **args);
extern bool kdg_readers_started(const KdReaders *set);
extern int	kdg_readers_busy(KdReaders *set, int *failed);
extern int	kdg_readers_wait(KdReaders *set, int *failed);
extern void kdg_wait_readable(struct pg_conn **conns, int n);
extern void kdg_readers_stop(KdReaders *set);

/* answer_chunks.c; the chunks are written by funcs/chunks_funcs.c */
/* The first word of every chunk: "KDC2". */
#define KD_CHUNK_MAGIC	0x4B444332

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
	KD_CH_TOTAL,				/* entries of every chunk of the answer */
	KD_CH_FIELDS
} KdChunkField;

#define KD_CHUNK_HEAD	(KD_CH_FIELDS * (int) sizeof(uint32))


extern int64 kdg_answer_chunks_count(KdSource *src, int k, bool rows,
									 const char *const *chunks,
									 const int64 *lens, int nchunks,
									 int64 *chunk_first);
extern bool kdg_answer_chunks_fill(KdSource *src, int k,
								   const char *const *chunks,
								   const int64 *lens,
								   const int64 *chunk_first, int nchunks,
								   KdHit *hits, int *count);
/*
 * A foreign leaf's own All-kNN read a chunk at a time as it arrives:
 * its points' slots go to src's rows, their neighbours to hits and count
 * (point i's at hits[i * k ..]), from the reader threads.
 */
struct KdChunkStream
{
	KdSource   *src;
	int			k;
	KdHit	   *hits;
	int		   *count;
	int64		total;			/* the entries the chunks say they hold */
	int64		next;			/* the next entry to fill */
	char	   *first;			/* the first chunk, copied, until filled */
	int64		first_len;
	bool		ended;			/* the server said its result is complete */
	bool		bad;			/* a chunk was out of shape */
	struct pg_result *error;	/* the server's error result, for the backend */
};
extern bool kdg_answer_stream_begin(KdChunkStream *s, KdSource *src, int k,
									const char *chunk, int64 len);
extern bool kdg_answer_stream_chunk(KdChunkStream *s, const char *chunk,
									int64 len);
extern KdAnswer *kdg_answer_chunks_answer(KdSource *src, int k,
										  const char *const *chunks,
										  const int64 *lens, int nchunks,
										  int64 *chunk_first, int64 nq);

/* table_search.c */
extern KdAnswer *kdg_table_knn(const KdTable *t, const double *queries,
							   int64 nq, int k);
extern const KdHit *kdg_answer_hits(const KdAnswer *ans, int64 i, int64 *n);
extern int64 kdg_hits_merge(const KdHit *a, int64 na, const KdHit *b, int64 nb,
							KdHit *out, int limit);

/* table_allknn.c */
extern KdAnswer *kdg_table_all_knn(KdTable *t, int k, bool include_self);
extern KdAnswer *kdg_table_radius(const KdTable *t, const double *centers,
								  int64 nq, const double *radii, int64 nradii);
extern KdAnswer *kdg_table_box(const KdTable *t, const double *lows,
							   const double *highs, int64 nq);

/* table_args.c */
extern void kdg_args(FunctionCallInfo fcinfo, KdArgs *args, KdTable *t);
extern int	kdg_argno(const KdArgs *args, const char *name);

#endif							/* KDGPU_SHARD_H */
