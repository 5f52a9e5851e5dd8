/*
 * kdgpu.h
 *	  The module's settings and the types its layers share.
 *
 * The backend is in layers, each a folder with one header, each calling
 * only the layers below it (scripts/check-layers):
 *
 *	 kdgpu.c	module entry point (_PG_init)
 *	 plan/		planner and executor hooks: streaming scans, ORDER BY
 *	 funcs/		the SQL functions and the rows they return
 *	 shard/		tables and partitions: local leaves and foreign shards
 *	 local/		the local search path: sources, index trees, searches
 *	 am/		the index access method
 *	 service/	the GPU service
 *	 point/		reading points: datums, refs, regions, PostGIS values
 *	 core/		settings, engine calls, row differences
 *	 engine/, geo/	PostgreSQL-free: the kd-tree engine, PostGIS decoding
 *
 * A row reference is the heap TID packed into 64 bits, block << 16 | offset,
 * so that ordering by reference is ordering by ctid: ties in distance are
 * broken by ctid, as a brute-force "ORDER BY distance, ctid" would.  What
 * the functions return as a row's identity (its "ref", kdg_row_ref) is that
 * TID, or with the partition's number in OID order above it (bits 48..63:
 * ties broken by tableoid, then ctid), or a user's integer key mapped to an
 * unsigned number of the same order (ties broken by key); shard/table.c.
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
	KD_TYPE_ARRAY,				/* float8[] or real[] of 1..KD_MAX_DIM, metric
								 * sqrt(d2) */
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

/* Settings (core/settings.c) */
extern int	kdgpu_device;
extern int	kdgpu_service_queue_limit;
extern int	kdgpu_gpu_replicas;
extern bool kdgpu_service_enabled;
extern int	kdgpu_gpu_min_points;
extern int	kdgpu_gpu_memory_limit;
extern int	kdgpu_cpu_threads;
extern bool kdgpu_stream_rows;
extern bool kdgpu_index_rows;
extern bool kdgpu_progress;
extern int	kdgpu_answer_memory_limit;
extern char kdgpu_gpu_library[MAXPGPATH];

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

/* A kdgpu index's rows as a backend keeps them (local/index_source.c). */
typedef struct KdgIndexRows KdgIndexRows;

/* Where rows named by their HOT chain's root lie (local/index_source.c). */
typedef struct KdgHotMap KdgHotMap;

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
	KdMetric	metric;			/* what kNN searches rank by: a metric
								 * other than L2, or a float8[] of more
								 * than KD_MAX_DIM coordinates, is
								 * searched flat (flat_search.c) */
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
	KdgIndexRows *index_rows;	/* rows taken from this copy of an index's
								 * rows, or NULL: read from the table */
	KdgHotMap  *hot;			/* rows from an index: TIDs are HOT chains'
								 * roots, which this maps to the rows' own */
	const uint64 *keys;			/* the rows' keys by ordinal, when rows are
								 * index_rows' own: not in the rows then */
	struct KdgDiff *index_diff; /* with index_rows, rows not its own: how
								 * they differ from its rows */
	struct KdgChanged *index_changed;	/* with index_rows: the kept rows
										 * of changed pages it uses, or NULL */
	struct KdVpTree *vp_tree;	/* a kdvec index's tree over the rows
								 * (vector_source.c), or NULL */
	double		vp_share;		/* the share of the rows its searches compare */
	bool		vp_kept;		/* vp_tree and the rows are a kept copy's:
								 * its device copy may stay */
} KdSource;

extern uint64 kdg_hot_tid(KdgHotMap *hot, uint64 root);

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
		return src->keys ? src->keys[i] :
			src->rows[i * src->stride + src->dim + src->extra + 1].tid;
	if (src->hot)
		return src->refbase | kdg_hot_tid(src->hot, kdg_row_tid(src, i));
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
 * The answer of the queries from output position from on (as many as it
 * chooses, at least one), for rows whose answer is made in slices.
 */
typedef KdAnswer *(*KdRowsSliceFn) (void *arg, int64 from);

/*
 * The rows of an answer, made one at a time (output.c): pairs of query and
 * neighbour, or one row per query with arrays.  An answer too large to hold
 * is made in slices: ans is then the current slice, whose query 0 is output
 * position base.
 */
typedef struct KdRows
{
	const KdTable *t;			/* the table searched */
	const KdAnswer *ans;
	int64		nq;				/* queries in all */
	int64		base;			/* the output position of ans's query 0 */
	KdRowsSliceFn slice;		/* makes the next slice, or NULL */
	void	   *slice_arg;
	MemoryContext slicecxt;		/* where the current slice lives */
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

#endif							/* KDGPU_H */
