/*
 * kdgpu.h
 *	  Declarations shared by the PostgreSQL-facing files of kdgpu.
 *
 * The extension reads points from tables and arguments (datum.c, source.c),
 * hands them to the engine (src/engine/kdtree.h) with an execution plan taken
 * from the GUCs (engine_call.c), turns the engine's squared distances into the
 * distances of the SQL operator the results stand in for (search.c), and
 * returns rows from the SQL functions (*_funcs.c).
 *
 * A row reference is the heap TID packed into 64 bits, block << 16 | offset,
 * so that ordering by reference is ordering by ctid: ties in distance are
 * broken by ctid, as a brute-force "ORDER BY distance, ctid" would.  What
 * the functions return as a row's identity (its "ref", kdg_row_ref) is that
 * TID, or with the partition's number in OID order above it (bits 48..63:
 * ties broken by tableoid, then ctid), or a user's integer key mapped to an
 * unsigned number of the same order (ties broken by key); table.c.
 */
#ifndef KDGPU_H
#define KDGPU_H

#include "postgres.h"

#include "fmgr.h"
#include "access/tupdesc.h"
#include "nodes/pg_list.h"
#include "storage/itemptr.h"
#include "utils/relcache.h"
#include "utils/tuplestore.h"

#include "engine/kdtree.h"
#include "exactness.h"

/* The point types the extension reads. */
typedef enum KdPointType
{
	KD_TYPE_NONE = 0,
	KD_TYPE_POINT,				/* built-in point, 2-D, metric pg_hypot */
	KD_TYPE_ARRAY,				/* float8[] of 1..KD_MAX_DIM, metric sqrt(d2) */
	KD_TYPE_GEOMETRY,			/* PostGIS geometry point: x, y [, z] [, m] */
	KD_TYPE_GEOMETRY_2D,		/* geometry point read as x, y (2-D <->) */
	KD_TYPE_GEOGRAPHY			/* geography point: unit vector, lon, lat */
} KdPointType;

/* Z and M flags of a geometry point (KdPointInfo.zm) */
#define KD_HAS_Z	1
#define KD_HAS_M	2

/* What a value says of itself beyond its coordinates: PostGIS's metadata. */
typedef struct KdPointInfo
{
	int32		srid;			/* 0 for types without one */
	int			zm;				/* KD_HAS_Z | KD_HAS_M */
	int			geotype;		/* PostGIS type number, 0 for other types */
} KdPointInfo;

/*
 * Coordinates a point carries after its engine coordinates, for the exact
 * metric: a geography point's longitude and latitude.
 */
static inline int
kdg_type_extra(KdPointType type)
{
	return type == KD_TYPE_GEOGRAPHY ? 2 : 0;
}

/* Whether a type is one of PostGIS's. */
static inline bool
kdg_type_is_postgis(KdPointType type)
{
	return type >= KD_TYPE_GEOMETRY;
}

/* Largest k accepted by the kNN functions. */
#define KD_SQL_MAX_K	KD_MAX_K

/* GUCs (kdgpu.c) */
extern int	kdgpu_device;
extern int	kdgpu_service_queue_limit;
extern int	kdgpu_gpu_replicas;
extern int	kdgpu_gpu_min_points;
extern int	kdgpu_gpu_memory_limit;
extern int	kdgpu_cpu_threads;
extern bool kdgpu_stream_rows;
extern char kdgpu_gpu_library[];

/*
 * What an index makes of a stored value (kdg_datum_classify): a point for
 * the tree, or a kind of value the tree cannot hold.
 */
typedef enum KdValueKind
{
	KD_VALUE_POINT,				/* finite point: coords and dim are set */
	KD_VALUE_EMPTY,				/* empty point or float8[] */
	KD_VALUE_NONFINITE,			/* a point with a NaN or infinite coordinate */
	KD_VALUE_NOT_POINT,			/* a PostGIS value that is not a point */
	KD_VALUE_OTHER				/* any other value the tree cannot hold */
} KdValueKind;

/* Where a value came from, for error messages (where.c). */
typedef struct KdWhere
{
	const char *arg;			/* argument name, or NULL for a table row */
	int64		ord;			/* 1-based array position, or 0 */
	ItemPointerData tid;		/* the row, when arg is NULL */
	Oid			relid;			/* the row's table, when arg is NULL */
} KdWhere;

/* One neighbour in the results: final distance and packed heap TID. */
typedef struct KdHit
{
	double		dist;
	uint64		ref;
} KdHit;

/* A foreign partition answering through its server (remote.c). */
typedef struct KdRemote KdRemote;

/* One slot of a source row: a coordinate, the packed TID or the key. */
typedef union KdSlot
{
	double		coord;
	uint64		tid;
} KdSlot;

/*
 * Points read from a table (source.c), in ctid order.  Row i is the stride
 * slots at rows + i * stride: the point's dim engine coordinates, its extra
 * coordinates (kdg_type_extra), then its packed heap TID, and its key when
 * the function was given a key column, so that a lookup by ordinal touches
 * one place.  A row's coordinates, engine and extra, are its "full"
 * coordinates: what the type's exact metric reads.
 */
typedef struct KdSource
{
	Oid			relid;
	AttrNumber	attnum;
	char	   *colname;
	AttrNumber	keyattnum;		/* the key column, or InvalidAttrNumber */
	char	   *keyname;
	Oid			keytype;		/* INT2OID, INT4OID or INT8OID */
	uint64		refbase;		/* the partition's number << 48 (table.c) */
	KdRemote   *remote;			/* a foreign partition's server, or NULL */
	KdPointType type;
	int			dim;			/* 0 until a non-empty row is read */
	int			extra;			/* kdg_type_extra(type) */
	int			stride;			/* dim + extra + 1, + 1 with a key */
	KdPointInfo info;			/* of the first row: all rows must agree */
	const char *fname;			/* the SQL function, for PostGIS's messages */
	int64		n;
	int64		cap;
	KdSlot	   *rows;			/* n * stride */
	bool		unsorted;		/* rows arrived out of ctid order */
	MemoryContext mcxt;			/* where the rows live */
} KdSource;

/* The coordinates of row i of a source. */
static inline const double *
kdg_row_coords(const KdSource *src, int64 i)
{
	return &src->rows[i * src->stride].coord;
}

/* The packed TID of row i of a source. */
static inline uint64
kdg_row_tid(const KdSource *src, int64 i)
{
	return src->rows[i * src->stride + src->dim + src->extra].tid;
}

/* The identity the functions return for row i of a source (kdgpu.h top). */
static inline uint64
kdg_row_ref(const KdSource *src, int64 i)
{
	if (src->keyattnum != InvalidAttrNumber)
		return src->rows[i * src->stride + src->dim + src->extra + 1].tid;
	return src->refbase | kdg_row_tid(src, i);
}

/* How result rows identify the rows of a table (table.c). */
typedef enum KdIdent
{
	KD_IDENT_CTID,				/* nn_ctid: a plain table's heap TID */
	KD_IDENT_PART,				/* nn_rel, nn_ctid: partition and heap TID */
	KD_IDENT_KEY				/* nn_key: a user's integer key column */
} KdIdent;

/* Bits of a ref below the partition's number (KD_IDENT_PART). */
#define KD_PART_SHIFT	48
#define KD_MAX_PARTS	65536

/*
 * A table the functions read: a plain table, or the leaf partitions of a
 * partitioned one, each a source whose rows name it through refbase.
 * head describes the table as given (its column, type, and after reading
 * the dimension, PostGIS metadata and number of points of all leaves);
 * for a plain table it is its only leaf.
 */
/*
 * Values sent with a remote call as its parameters $1, $2, ... (remote.c),
 * each in text or binary.
 */
#define KD_MAX_PARAMS 16
typedef struct KdParams
{
	int			n;
	const char *values[KD_MAX_PARAMS];
	int			lengths[KD_MAX_PARAMS];
	int			formats[KD_MAX_PARAMS];
} KdParams;

typedef struct KdTable
{
	KdSource	head;
	KdIdent		ident;
	bool		partitioned;
	int			nparts;
	KdSource   *parts;			/* leaves in OID order */
	Oid		   *partoids;
	int			nremote;		/* how many leaves are foreign (remote.c) */
	char	   *rschema;		/* kdgpu's schema there (quoted) */
	const char *rfn;			/* the function they run, and its */
	char	   *rargs;			/* arguments after the table and column */
	KdParams	rparams;		/* the parameters they name */
	bool		rbatched;		/* it returns query_ord */
	bool		rdistance;		/* it returns distances */
	bool		rchunks;		/* it returns chunks (answer_chunks.c) */
} KdTable;

/*
 * Exact answers to nq queries (search.c): query q's hits are
 * hits[offsets[q] .. offsets[q + 1]), in result order.  For All-kNN, order
 * maps a point's ordinal to its query number; otherwise it is NULL.
 */
typedef struct KdAnswer
{
	int64		nq;
	int64	   *offsets;
	KdHit	   *hits;
	int64	   *order;
} KdAnswer;

/* How the batched functions identify a query in their output (output.c). */
typedef enum KdQueryKey
{
	KD_KEY_NONE,				/* one query: no query column */
	KD_KEY_ORD,					/* query_ord: 1-based array position */
	KD_KEY_ROW					/* a row of a table, as its KdIdent says */
} KdQueryKey;

/*
 * The rows of an answer, made one at a time (output.c): pairs of query and
 * neighbour, or one row per query with arrays.
 */
typedef struct KdRows
{
	const KdTable *t;			/* the table searched */
	const KdAnswer *ans;
	KdQueryKey	key;
	const KdTable *query_t;		/* KD_KEY_ROW: the query rows' table */
	uint64	   *qrefs;			/* KD_KEY_ROW: their refs */
	bool		arrays;			/* one row per query */
	int64		i;				/* the current query, in output order */
	int64		j;				/* pairs: its next hit */
	int64		end;			/* the rows stop before this query */
	MemoryContext rowcxt;		/* arrays of the current row */
	ItemPointerData qtid;		/* TIDs of the current row */
	ItemPointerData tid;
} KdRows;

/* The leading arguments of a table-reading function (table_args.c). */
typedef struct KdArgs
{
	Oid			relid;
	Name		colname;		/* NULL: the column is found by its type */
	int			next;			/* index of the first argument after them */
	Oid		   *argtypes;
	char	  **argnames;
	int			nargs;
	KdIdent		ident;			/* how the result identifies rows */
} KdArgs;

/* datum.c */
extern KdPointType kdg_point_type(Oid typid);
extern KdPointType kdg_array_point_type(Oid arraytype);
extern const char *kdg_point_type_name(KdPointType type);
extern int	kdg_datum_coords(KdPointType type, Datum value, double *coords,
							const KdWhere *where);
extern int	kdg_datum_read(KdPointType type, Datum value, double *coords,
						  const KdWhere *where, KdPointInfo *info);
extern KdValueKind kdg_datum_classify(KdPointType type, Datum value,
									  double *coords, KdPointInfo *info,
									  int *dim);
extern int	kdg_query_read(KdPointType type, Datum value, double *coords,
						   const char *arg, KdPointInfo *info);
extern void kdg_query_check(int got, const KdPointInfo *info, int dim,
							const char *arg, const struct KdSource *src);
extern int64 kdg_array_points(KdPointType type, Datum array, double **coords,
							  int *dim, KdPointInfo **infos, const char *arg);
extern void kdg_array_check(int64 nq, int got, const KdPointInfo *infos,
							int dim, const char *arg,
							const struct KdSource *src);
extern void kdg_check_query_info(const struct KdSource *src,
								const KdPointInfo *info, const KdWhere *where);
extern double kdg_metric(KdPointType type, const double *a, const double *b,
						int dim);
extern void kdg_check_k(int k);
extern void kdg_check_radius(double radius, const char *arg, int64 ord);

/* postgis.c */
extern KdPointType kdg_postgis_type(Oid typid);
extern int	kdg_postgis_coords(KdPointType type, Datum value, double *coords,
							  KdPointInfo *info, const KdWhere *where);
extern KdValueKind kdg_postgis_classify(KdPointType type, Datum value,
										double *coords, KdPointInfo *info,
										int *dim);
extern bool kdg_postgis_box(Datum value, double *lo, double *hi);
extern bool kdg_geography_box(Datum value, double *lo, double *hi);
extern double kdg_geography_distance(const double *a, const double *b);
extern double kdg_geography_chord(double metres);
extern double kdg_geography_lower_bound(double chord);
extern void kdg_check_geography_srid(int32 srid, const KdWhere *where);
extern void kdg_srid_mismatch(const char *fname, const KdPointInfo *a,
							 const KdPointInfo *b);
extern const char *kdg_zm_name(int zm);

/* region.c */
extern void kdg_check_corners(const double *low, const double *high, int dim);
extern int	kdg_ball_from_datum(Datum value, int dim, double *center,
								double *radius);
extern int	kdg_rect_from_datum(Datum value, int dim, double *low,
								double *high);

/* where.c */
extern char *kdg_where_text(const KdWhere *where);

/* refs.c */
extern uint64 kdg_tid_to_ref(ItemPointer tid);
extern BlockNumber kdg_ref_block(uint64 ref);
extern void kdg_ref_to_tid(uint64 ref, ItemPointer tid);
extern uint64 kdg_key_to_ref(Oid keytype, Datum key);
extern int64 kdg_ref_to_key(uint64 ref);

/* source.c */
extern void kdg_source_open(KdSource *src, Oid relid, Name colname);
extern void kdg_source_open_leaf(KdSource *src, Oid relid, const KdSource *head);
extern void kdg_source_read(KdSource *src);
extern void kdg_source_scan(KdSource *src);
extern void kdg_source_add(KdSource *src, Datum value, bool isnull,
						   ItemPointer tid, Datum key, bool keynull);
extern void kdg_source_sort(KdSource *src);
extern void kdg_source_set_key(KdSource *src, const char *keyname);
extern int	kdg_source_stride(const KdSource *src, int dim);
extern void kdg_sources_spi(KdSource *srcs, const Oid *oids, int n, Oid relid);
extern void kdg_source_check_query(const KdSource *src, KdPointType qtype,
								  Oid argtype, const char *arg);
extern void kdg_source_check_dims(const KdSource *src, const KdSource *other);
extern double *kdg_source_coords(const KdSource *src);
extern uint64 *kdg_source_tids(const KdSource *src);

/* engine_call.c */
extern char kdg_last_run[512];
extern int	kdg_cpu_threads(void);
extern void kdg_exec_prepare(KdExec *exec);
extern void kdg_parallel_for(int64 nitems, int64 chunk, KdRangeFn fn, void *arg);
extern bool kdg_gpu_wanted(int64 work);
extern void kdg_parallel_copy(void *dst, const void *src, Size bytes);
extern void kdg_check_status(KdStatus status, const KdError *err,
							const KdExec *exec, const char *what);
extern KdTree *kdg_tree_new(void);
extern KdRangeResult *kdg_range_result_new(void);

/* index_knn.c */
extern KdAnswer *kdg_index_knn(const KdTable *t, Datum query, Oid qtype,
							   int qdim, int k, Oid fn);

/* orderby_hook.c */
extern void kdg_orderby_hook_install(void);

/*
 * The tree a kd_* function searches over a source's rows (search.c): one
 * whose references are the rows' ordinals, or an index tree whose rows
 * differ from the source's by a few (tree_delta.c).  Then the tree's
 * references are ranks of its own rows, rank_ord maps them to ordinals (-1
 * for the ngone rows the source does not hold), and the source's rows the
 * tree lacks are in the tree added, whose references are their ordinals.
 */
typedef struct KdgTree
{
	const KdTree *tree;
	int64		n;				/* the source's rows it stands for */
	int64	   *rank_ord;		/* NULL: references are ordinals */
	int64		ngone;
	KdTree	   *added;			/* or NULL */
} KdgTree;

/*
 * Rows for kdg_rows_diff: n TIDs, tid_stride words apart, and their points'
 * coordinates, coord_stride doubles apart, or NULL.
 */
typedef struct KdgRowsView
{
	const uint64 *tids;
	int			tid_stride;
	const double *coords;
	int			coord_stride;
	int64		n;
} KdgRowsView;

/* How an index tree's rows differ from a source's (kdg_rows_diff). */
typedef struct KdgDiff
{
	int64		ngone;
	uint64	   *gone;			/* ranks of tree rows the source lacks */
	int64		nadded;
	uint64	   *added;			/* ordinals of rows the tree lacks */
} KdgDiff;

/*
 * An index tree is searched for a source when at most kdg_delta_max(n) of
 * its rows are gone and as many of the source's n rows are added: the
 * larger of these (tree_delta.c)
 */
#define KDG_DELTA_MIN		1024
#define KDG_DELTA_DIVISOR	8

/* tree_delta.c */
extern bool kdg_rows_diff(const KdgRowsView *tree, const KdgRowsView *rows,
						  int dim, int64 max_gone, int64 max_added,
						  KdgDiff *diff);
extern int64 kdg_delta_max(int64 n);
extern KdgTree *kdg_tree_plain(const KdTree *tree);
extern KdgTree *kdg_tree_delta(const KdSource *src, const KdTree *tree,
							   const KdgDiff *diff);
extern KdStatus kdg_tree_knn(const KdgTree *t, const double *queries, int64 nq,
							 int kk, KdNeighbor *out, int32 *count,
							 bool *complete, KdExec *exec, KdError *err);
extern KdStatus kdg_tree_range(const KdgTree *t, const double *centers,
							   const double *radii, int64 nradii,
							   const double *lows, const double *highs,
							   int64 nq, KdRangeResult *res, KdExec *exec,
							   KdError *err);

/* index_tree.c */
extern bool kdg_index_fits(Relation index, const KdSource *src);
extern KdgTree *kdg_index_tree(const KdSource *src, int64 work, bool all_knn,
							   Oid *fitting);
extern void kdg_index_keep_built(const KdSource *src, KdTree *tree, int64 work,
								 Oid fitting);
extern KdgTree *kdg_index_device_tree(const KdSource *src, bool all_knn);
extern KdgTree *kdg_index_tree_load(const KdSource *src, Oid *indexoid);

/* search.c */
extern KdTree *kdg_build_tree(const KdSource *src, bool *used_gpu);
extern KdgTree *kdg_source_tree(const KdSource *src, int64 work, bool all_knn);
extern KdAnswer *kdg_empty_answer(int64 nq);
extern void kdg_sort_hits(KdHit *hits, int64 n);
extern KdAnswer *kdg_search_knn(const KdSource *src, const KdgTree *tree,
							   const double *queries, int64 nq, int k);
extern KdAnswer *kdg_search_all_knn(const KdSource *src, const KdgTree *tree,
								   int k, bool include_self);
extern KdAnswer *kdg_search_radius(const KdSource *src, const KdgTree *tree,
								  const double *centers, int64 nq,
								  const double *radii, int64 nradii);
extern KdAnswer *kdg_search_box(const KdSource *src, const KdgTree *tree,
							   const double *lows, const double *highs,
							   int64 nq);

/* table.c */
extern void kdg_table_open(KdTable *t, Oid relid, Name colname,
						   Name keyname, KdIdent ident, const char *fname);
extern void kdg_table_read(KdTable *t);
extern void kdg_table_read_all(KdTable *t);
extern void kdg_check_keys_unique(const KdTable *t);
extern uint64 *kdg_table_refs(const KdTable *t);
extern double *kdg_table_queries(const KdTable *t);

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
									int k, bool include_self);
extern void kdg_remote_all_knn_points(const KdTable *t, int leaf, int k);
extern void kdg_remote_all_knn_fill(const KdTable *t, int leaf, int k,
									KdHit *hits, int *count);

/* remote_readers.c */
struct pg_conn;					/* libpq's PGconn */
typedef struct KdReaders KdReaders;
extern KdReaders *kdg_readers_start(struct pg_conn **conns, int n);
extern bool kdg_readers_started(const KdReaders *set);
extern int	kdg_readers_busy(KdReaders *set, int *failed);
extern void kdg_readers_stop(KdReaders *set);

/* answer_chunks.c */
extern int64 kdg_answer_chunks_count(KdSource *src, int k, bool rows,
									 const char *const *chunks,
									 const int64 *lens, int nchunks,
									 int64 *chunk_first);
extern bool kdg_answer_chunks_fill(KdSource *src, int k,
								   const char *const *chunks,
								   const int64 *lens,
								   const int64 *chunk_first, int nchunks,
								   KdHit *hits, int *count);
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

/* output.c */
extern KdRows *kdg_rows_pairs(const KdTable *t, const KdAnswer *ans,
							  KdQueryKey key, const KdTable *query_t);
extern KdRows *kdg_rows_arrays(const KdTable *t, const KdAnswer *ans);
extern KdRows *kdg_rows_make(const KdTable *t, const KdAnswer *ans,
							 KdQueryKey key, const KdTable *query_t,
							 uint64 *qrefs, bool arrays);
extern void kdg_rows_rewind(KdRows *rows);
extern void kdg_rows_seek(KdRows *rows, int64 from, int64 to);
extern bool kdg_rows_next(KdRows *rows, TupleDesc desc, const bool *needed,
						  Datum *values, bool *nulls);
extern void kdg_rows_materialize(FunctionCallInfo fcinfo, KdRows *rows);

/*
 * The functions returning rows of neighbours: each reads its arguments from
 * fcinfo and answers them (knn_funcs.c, range_funcs.c, allknn_funcs.c).
 */
typedef KdRows *(*KdRowsFn) (FunctionCallInfo fcinfo);
extern KdRows *kdg_knn_rows(FunctionCallInfo fcinfo);
extern KdAnswer *kdg_knn_join_answer(KdTable *t, Datum queries, Oid qtype, int k);
extern KdRows *kdg_knn_join_rows(FunctionCallInfo fcinfo);
extern KdRows *kdg_knn_join_table_rows(FunctionCallInfo fcinfo);
extern KdRows *kdg_all_knn_rows(FunctionCallInfo fcinfo);
extern KdRows *kdg_all_knn_arrays_rows(FunctionCallInfo fcinfo);
extern KdRows *kdg_range_rows(FunctionCallInfo fcinfo);
extern KdRows *kdg_range_join_rows(FunctionCallInfo fcinfo);
extern KdRows *kdg_box_rows(FunctionCallInfo fcinfo);

/* rows_funcs.c */
extern KdRowsFn kdg_rows_function(Oid funcoid);
struct FuncExpr;
extern double kdg_rows_hits(struct FuncExpr *call, double rows);

/* stream_scan.c */
extern void kdg_stream_scan_install(void);

/* stream_parallel.c */
typedef struct KdStreamShared KdStreamShared;
struct dsm_segment;
extern Size kdg_stream_shared_size(void);
extern KdRows *kdg_stream_share(KdStreamShared *sh, const KdRows *rows,
								struct dsm_segment **segp);
extern KdRows *kdg_stream_attach(KdStreamShared *sh, struct dsm_segment **segp);
extern bool kdg_stream_claim(KdStreamShared *sh, KdRows *rows);
extern void kdg_stream_restart(KdStreamShared *sh);

#endif							/* KDGPU_H */
