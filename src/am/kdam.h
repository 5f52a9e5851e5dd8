/*
 * kdam.h
 *	  The kdgpu index access method: on-disk layout and the functions shared
 *	  by its phases (handler, build, insert, scan, vacuum, pages, cache).
 *
 * Layout.  Block 0 is the metapage.  The points sit in a forest of trees
 * (kdam_forest.c): each tree on its own pages in a page-blocked layout
 * (kdam_tree.c), each page a subtree, which scans read in place through
 * shared buffers.  The forest's list of trees, with each tree's bounding
 * box, sits on a chain of forest pages.  CREATE INDEX builds one tree when
 * the points fit in maintenance_work_mem, else it sorts them along a
 * Z-order curve and builds a tree per memory-sized run of the sorted
 * points, so that the trees cover disjoint parts of space (kdam_build.c).
 * Rows inserted after the build sit in KDAM_LANES insert lanes, chains of
 * pending pages of fixed-size records (ref, coords, payload) whose header
 * pages are blocks 1 to KDAM_LANES (kdam_lanes.c); when they hold
 * KDAM_FLUSH_ROWS records the inserter seals every lane's chain and turns
 * the records into a tree of their own, then merges trees of like size,
 * the logarithmic method of the Bkd-tree (kdam_merge.c).  The kd_* functions, kd_index_check and merges
 * read trees into the engine's arrays (kdam_cache.c).
 * NULL rows sit in another chain as (ref, payload) records: ordered scans
 * return them last, as a sort by distance does.
 * Rows whose value the tree cannot hold (empty, not a point, not finite,
 * another kind of point) sit in a chain of their own (kdam_outside.c).
 * The payload holds the values of INCLUDE columns (kdam_include.c).  Every
 * page carries a KdamPageOpaque in its special space.
 *
 * Row references are heap TIDs packed as block << 16 | offset, so that ties
 * in distance are broken by ctid.  VACUUM marks the reference of a dead tree
 * row KDAM_DEAD_REF in place and removes dead pending records.
 *
 * Generations.  Each change to what the index holds other than an insert
 * (dead marks, a tree added or merged) bumps meta->generation; each tree
 * gets a new tree_id, which its pages carry.  The kd_* functions cache
 * trees read into memory keyed by (index, relfile, generation).  A scan
 * reads the metapage, the forest's list and the pending records under a
 * share lock on the metapage.  A merge never changes a tree: it writes a
 * new one and moves the trees it replaces to the list of retired trees,
 * each with the next transaction ID at that moment (retire_xid); their
 * pages stay as they are until no snapshot that could have read the list
 * before is left (retire_xid is older than every backend's xmin, as for
 * nbtree's deleted pages), and VACUUM frees them.  VACUUM marks dead
 * references a page at a time while scans run.
 *
 * The VACUUM interlock.  A scan holds references it read before VACUUM
 * marked them (a range scan's matches, an ordered scan's queue, its copy
 * of the pending, outside and NULL records).  VACUUM takes a cleanup lock
 * on the metapage, which waits for every scan pinning it, after removing
 * references and before it returns (so before the heap frees their line
 * pointers and sets pages all-visible), and before it frees retired trees.
 * A plain scan under an MVCC snapshot drops the pin once started: it may
 * return a reference VACUUM removed, and the heap may have reused its TID,
 * but the executor's heap check rejects that row, which the snapshot
 * cannot see.  An index-only scan keeps the pin for its whole life, as
 * nbtree keeps its leaf page's: the executor returns a row without the
 * heap when its page is all-visible, which VACUUM makes it after removing
 * a row the scan still holds.  So does a scan under a snapshot that is
 * not MVCC, which has no heap check to rely on.
 */
#ifndef KDAM_H
#define KDAM_H

#include "postgres.h"

#include <math.h>

#include "access/amapi.h"
#include "access/genam.h"
#include "access/generic_xlog.h"
#include "nodes/execnodes.h"
#include "storage/bufmgr.h"
#include "utils/relcache.h"

#include "core/core.h"
#include "point/point.h"

#define KDAM_MAGIC			0x4B444731	/* "KDG1" */
#define KDAM_FORMAT_VERSION	10
#define KDAM_METAPAGE_BLKNO	0
#define KDAM_PAGE_ID		0xFF8B
#define KDAM_DEAD_REF		UINT64_MAX
/* a dead row in a ranked tree's TIDs: after every TID */
#define KDAM_NO_TID			UINT64_MAX

/* page kinds, in KdamPageOpaque.flags */
#define KDAM_META		(1 << 0)
#define KDAM_TREE		(1 << 1)
#define KDAM_PENDING	(1 << 2)
#define KDAM_FREE		(1 << 3)
#define KDAM_NULLS		(1 << 4)
#define KDAM_OUTSIDE	(1 << 5)
#define KDAM_TREEDIR	(1 << 6)
#define KDAM_FOREST		(1 << 7)
#define KDAM_LANE		(1 << 8)

/* subphases in pg_stat_progress_create_index (kdam_buildphasename) */
#define KDAM_PHASE_TREE		2
#define KDAM_PHASE_WRITE	3
#define KDAM_PHASE_SORT		4
#define KDAM_PHASE_SCAN		5
#define KDAM_PHASE_READ		6

/* strategies of the operator classes */
#define KDAM_STRATEGY_IN_BOX		1	/* point <@ box */
#define KDAM_STRATEGY_IN_CIRCLE		2	/* point <@ circle */
#define KDAM_STRATEGY_IN_BALL		3	/* point or float8[] <@ kd_ball */
#define KDAM_STRATEGY_IN_RECT		4	/* float8[] <@ kd_rect */
#define KDAM_STRATEGY_LEFT			5	/* << */
#define KDAM_STRATEGY_RIGHT			6	/* >> */
#define KDAM_STRATEGY_BELOW			7	/* <<| (and point's <^: 9) */
#define KDAM_STRATEGY_ABOVE			8	/* |>> (and point's >^: 10) */
#define KDAM_STRATEGY_OLD_BELOW		9	/* point <^ */
#define KDAM_STRATEGY_OLD_ABOVE		10	/* point >^ */
#define KDAM_STRATEGY_SAME			11	/* ~= */
#define KDAM_STRATEGY_IN_POLYGON	12	/* point <@ polygon */
#define KDAM_STRATEGY_CONTAINS		13	/* geometry ~ */
#define KDAM_STRATEGY_WITHIN		14	/* geometry @ */
#define KDAM_STRATEGY_DISTANCE		15	/* <-> or <<->> for ORDER BY */
#define KDAM_STRATEGY_OVERLEFT		16	/* geometry &< */
#define KDAM_STRATEGY_OVERRIGHT		17	/* geometry &> */
#define KDAM_STRATEGY_OVERBELOW		18	/* geometry &<| */
#define KDAM_STRATEGY_OVERABOVE		19	/* geometry |&> */
#define KDAM_STRATEGY_ND_OVERLAP	20	/* geometry &&& */
#define KDAM_STRATEGY_ND_CONTAINS	21	/* geometry ~~ */
#define KDAM_STRATEGY_ND_WITHIN		22	/* geometry @@ */
#define KDAM_STRATEGY_ND_SAME		23	/* geometry ~~= */
#define KDAM_STRATEGY_MAX			23

typedef struct KdamPageOpaqueData
{
	BlockNumber next;			/* next page of the same chain */
	uint16		flags;
	uint16		page_id;		/* KDAM_PAGE_ID */
} KdamPageOpaqueData;

typedef KdamPageOpaqueData *KdamPageOpaque;

typedef struct KdamMetaPageData
{
	uint32		magic;
	uint32		format_version;
	int32		dim;			/* 0 until the first point */
	int32		point_type;		/* KdPointType of the indexed column */
	int64		ntree;			/* points in the live trees */
	int64		ndead;			/* dead references in the live trees */
	BlockNumber forest_head;	/* first forest page, or InvalidBlockNumber */
	int32		ntrees;			/* live trees listed there */
	BlockNumber retired_head;	/* forest pages listing retired trees */
	BlockNumber retired_tail;
	int32		nretired;		/* retired trees listed there */
	uint64		next_tree_id;	/* the tree_id the next tree gets */
	uint32		lanes_used;		/* a bit per insert lane with a chain */
	BlockNumber flush_head;		/* sealed lanes' pages, being made a tree */
	BlockNumber flush_tail;
	int64		nflush;			/* records there */
	uint64		generation;
	int32		payload_words;	/* per point: INCLUDE values and NULL mask */
	int32		orphans;		/* writers of new pages no chain reaches yet
								 * (or that failed): when not 0, VACUUM
								 * looks for such pages */
	BlockNumber null_head;		/* first page of rows with no point */
	BlockNumber null_tail;
	int64		nnull;			/* records in the null pages */
	int32		srid;			/* PostGIS types: of every point */
	int32		zm;				/* PostGIS types: KD_HAS_Z | KD_HAS_M */
	BlockNumber outside_head;	/* first page of rows outside the tree */
	BlockNumber outside_tail;
	int64		noutside;		/* records in the outside pages */
	uint64		first_merge_id; /* trees of lower tree_id are a build's, each
								 * over its own part of space: merges by size
								 * class leave them be (0 in an index built
								 * before this field, whose trees all merge) */
} KdamMetaPageData;

/*
 * A tree of the forest, as the forest pages list it.  Its block pages are
 * chained from head; its directory chain starts with a page listing the
 * directory pages (ndir of them, which follow it in the chain), each of
 * which maps KDAM_DIR_ENTRIES block numbers to pages.  A tree of one
 * directory page is written with ndir 0 and dirhead naming that page, so
 * that a search reads one page fewer (trees written before that have the
 * list page and ndir 1).  box is the
 * bounding box of its points, low corner then high.  A retired tree (on
 * the retired list) was replaced by a merge: no new scan reads it, and
 * VACUUM frees its pages.
 */
typedef struct KdamTreeEntry
{
	uint64		tree_id;
	int64		n;
	int64		nbounds;
	int64		ndead;
	BlockNumber head;
	BlockNumber dirhead;
	int32		ndir;			/* 0: dirhead is the directory page */
	BlockNumber contig;			/* block b is on page contig + b, when the
								 * tree's pages are consecutive; else
								 * InvalidBlockNumber and the directory says */
	uint64		retire_xid;		/* retired: the next FullTransactionId then */
	double		box[2 * KD_MAX_DIM];
} KdamTreeEntry;

/*
 * What a backend keeps of an index in its relation cache (rd_amcache,
 * kdam_relcache): what inserts need of the index's definition, set on an
 * insert's first use, and the list of live trees as the last scan read it,
 * with the metapage's generation and forest head then, so that a scan of
 * the same list reads no forest page (kdam_forest_read_cached).  A relcache
 * rebuild drops it; a build drops it too (kdam_relcache_forget).
 */
typedef struct KdamRelCache
{
	KdPointType type;			/* KD_TYPE_NONE until kdam_index_type */
	bool		insert_ready;	/* the insert fields below are set */
	int			words;			/* payload words per row */
	int			dim;			/* 0 until the first point */
	int32		srid;
	int32		zm;
	uint64		forest_generation;
	BlockNumber forest_head;
	int			forest_n;		/* -1 until a scan reads the list */
	KdamTreeEntry *forest_trees;	/* in rd_indexcxt */
} KdamRelCache;

/* tree entries per forest page */
#define KDAM_FOREST_ENTRIES	((int) (KDAM_PAGE_BYTES / sizeof(KdamTreeEntry)))
/* directory pages a tree may have: one page lists them */
#define KDAM_MAX_DIR		((int) (KDAM_PAGE_BYTES / sizeof(BlockNumber)))
/* block numbers per directory page */
#define KDAM_DIR_ENTRIES	((int64) (KDAM_PAGE_BYTES / sizeof(BlockNumber)))
/*
 * Insert lanes, their header pages' blocks, how often (in a lane's records)
 * an inserter counts the pending rows, and how many make it flush.
 */
#define KDAM_LANES			8
#define KDAM_LANE_BLKNO(i)	(KDAM_METAPAGE_BLKNO + 1 + (i))
#define KDAM_LANE_ROWS		128
#define KDAM_FLUSH_ROWS		(KDAM_LANES * KDAM_LANE_ROWS)
/*
 * How far (pd_lower) records appended one at a time fill a chain page
 * (kdam_chain_append): Generic WAL finds what a record changed by comparing
 * every byte of the page below pd_lower, one byte at a time, so an append
 * costs in proportion to what the page already holds.  A quarter page
 * keeps bulk inserts cheap while a search still reads pending rows from
 * about as few pages as with full ones.
 */
#define KDAM_APPEND_FILL	2048

/*
 * Work locks (heavyweight locks on these block numbers, not on buffers,
 * kdam_merge.c): merging, flushing the lanes, merging trees of size class
 * c.  kdam_work_lock takes one exclusively.
 */
#define KDAM_MERGE_LOCK		KDAM_METAPAGE_BLKNO
#define KDAM_FLUSH_LOCK		KDAM_LANE_BLKNO(0)
#define KDAM_CLASS_LOCK(c)	((BlockNumber) (MaxBlockNumber - (c)))
#define kdam_work_lock(index, which, wait) \
	kdam_work_lock_mode((index), (which), ExclusiveLock, (wait))
#define kdam_work_unlock(index, which) \
	kdam_work_unlock_mode((index), (which), ExclusiveLock)

/* An insert lane's header (kdam_lanes.c): its chain of pending pages. */
typedef struct KdamLaneData
{
	BlockNumber head;			/* first pending page, or InvalidBlockNumber */
	BlockNumber tail;
	int64		n;				/* records in the chain */
} KdamLaneData;

typedef KdamLaneData *KdamLane;

/* What a tree page says of itself, before its block's arrays. */
typedef struct KdamBlockHeader
{
	uint64		tree_id;
	int64		block;
} KdamBlockHeader;

/* The page layout of a tree (kdam_tree.c). */
typedef struct KdamTreeShape
{
	int64		n;
	int			dim;
	int			words;
	int64		nbounds;		/* nodes that keep their box on pages */
	int			nranges;		/* ranges of levels, top down */
	int			start[64];		/* first level of each range */
	int			levels[64];		/* levels of each range */
	int			boxed[64];		/* slots of each range's blocks with a box */
	int			group[64];		/* roots whose subtrees share a block */
	int64		roots_from[64];	/* each range's roots: these of its first */
	int64		roots_to[64];	/* level's nodes, counted from its first */
	int64		first_block[65];	/* first block of each range, then nblocks */
	int			range_of_level[64];
	int64		nblocks;
} KdamTreeShape;

/* A node read from a tree page. */
typedef struct KdamNode
{
	double		coords[KD_MAX_DIM];
	uint64		ref;
	uint8		split;
	const double *box;			/* boxdata, or NULL: no box */
	double		boxdata[2 * KD_MAX_DIM];
} KdamNode;

/*
 * Where the arrays of a range's blocks lie on their pages (kdam_tree.c):
 * the node records (coordinates, reference and split dimension of a slot
 * together), then the payload words and the boxes.
 */
typedef struct KdamBlockLayout
{
	int64		nbounds;		/* nodes below this keep their box */
	Size		record;			/* bytes of a node record */
	Size		payload;		/* offsets from the block's data */
	Size		bounds;
	Size		end;			/* bytes of the block */
	int			slots;
} KdamBlockLayout;

/*
 * A tree's blocks on pages (kdam_tree.c, kdam_tree_shape.c).
 */
/* Bytes of a page's contents after the block header. */
#define KDAM_BLOCK_BYTES	(KDAM_PAGE_BYTES - MAXALIGN(sizeof(KdamBlockHeader)))

/* The start of a block's arrays on its page. */
#define KdamBlockData(page) (PageGetContents(page) + MAXALIGN(sizeof(KdamBlockHeader)))

/* bytes of a reference on a page: a heap TID, or the dead mark */
#define KDAM_REF_BYTES		6
#define KDAM_REF_MASK		((UINT64CONST(1) << (8 * KDAM_REF_BYTES)) - 1)

/* boxes are kept on pages for subtrees of at least this many points */
#define KDAM_BOX_MIN_SUBTREE 256

/* the fewest levels a range of levels without boxes is cut to, for fill */
#define KDAM_MIN_RANGE_LEVELS 5

/*
 * A node record holds its coordinates, then its reference, then its split
 * dimension, unaligned (read with memcpy).  The offset of its reference:
 */
static inline Size
kdam_record_ref(int dim)
{
	return sizeof(double) * dim;
}

/* The offset of a node record's split dimension. */
static inline Size
kdam_record_split(int dim)
{
	return kdam_record_ref(dim) + KDAM_REF_BYTES;
}

/* Bytes of a node record. */
static inline Size
kdam_record_bytes(int dim)
{
	return kdam_record_split(dim) + 1;
}

/* The level of node i: floor(log2(i + 1)). */
static inline int
kdam_node_level(int64 i)
{
	return 63 - __builtin_clzll((uint64) i + 1);
}

/* block pages a tree reader keeps pinned */
#define KDAM_READER_PINS	16

/* Reading a tree in place (kdam_tree.c). */
typedef struct KdamTreeReader
{
	Relation	index;
	uint64		tree_id;
	bool		standby;		/* started during recovery: check page kinds */
	KdamTreeShape shape;
	BlockNumber dirhead;		/* the page listing the directory pages */
	BlockNumber contig;			/* the entry's contig */
	int			ndir;
	BlockNumber *dir;			/* the directory pages, NULL until read */
	Buffer	   *dirbufs;		/* pinned directory pages */
	MemoryContext cxt;			/* where the directory is read to */
	Buffer		pinned[KDAM_READER_PINS];	/* recently used block pages */
	int64		pinblock[KDAM_READER_PINS]; /* their blocks, or -1 */
	uint64		pinuse[KDAM_READER_PINS];	/* when each was last used */
	uint64		clock;
	Buffer		buf;			/* the current block page, one of pinned */
	int64		block;			/* its block, or -1 */
	int			range;
	int			slot;			/* of the node read last */
	KdamBlockLayout layout;		/* of the current block's range */
	BufferAccessStrategy strategy;	/* NULL for scans */
	int64		pages_read;		/* block pages pinned */
	bool		hold;			/* keep the current page share-locked between
								 * reads (kdam_reader_hold) */
	bool		locked;			/* buf is share-locked */
} KdamTreeReader;

/*
 * Rows outside the tree (kdam_outside.c): the coordinate part of their
 * records is the kind, the box's dimension, and its low and high corners.
 */
#define KDAM_OUTSIDE_COORDS	(2 + 2 * KD_MAX_DIM)
#define KDAM_OUT_EMPTY		0
#define KDAM_OUT_EXACT		1
#define KDAM_OUT_BOX		2
#define KDAM_OUT_UNKNOWN	3
#define KdamOutsideKind(rec)	((int) (rec)[0])
#define KdamOutsideDim(rec)		((int) (rec)[1])
#define KdamOutsideLow(rec)		((rec) + 2)
#define KdamOutsideHigh(rec)	((rec) + 2 + KD_MAX_DIM)

typedef KdamMetaPageData *KdamMetaPage;

#define KdamPageGetOpaque(page) ((KdamPageOpaque) PageGetSpecialPointer(page))
#define KdamPageGetMeta(page) ((KdamMetaPage) PageGetContents(page))
/* bytes of payload a tree or pending page holds */
#define KDAM_PAGE_BYTES \
	(BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - MAXALIGN(sizeof(KdamPageOpaqueData)))

/*
 * A tree whose references are ranks, for the kd_* functions
 * (kdam_ranked.c): the tree's arrays, with references replaced by their
 * ranks in ctid order.
 */
typedef struct KdamRankedTree
{
	KdTree		tree;			/* tree.gpu: device copy kept by kd_load */
	uint64	   *tids;			/* the tree's TIDs in rank order, dead rows
								 * last (KDAM_NO_TID) */
} KdamRankedTree;

/* A row's packed TID and its place, for sorting by TID (kdam_tid_sort.c). */
typedef struct KdamTidNode
{
	uint64		tid;
	uint64		node;
} KdamTidNode;

/*
 * The live rows of an index's trees (kdam_rows.c): n points of dim
 * coordinates and their packed TIDs, in TID order.
 */
typedef struct KdamLiveRows
{
	int64		n;
	int			dim;
	KdSlot	   *rows;			/* n * (dim + 1): coordinates, then the TID */
} KdamLiveRows;

/* A tree loaded into memory, as the cache holds it. */
typedef struct KdamTree
{
	KdTree		tree;			/* arrays point into data */
	uint64	   *payload;		/* tree.n * words, node order; into data */
	int			words;			/* payload words per point */
	char	   *data;			/* the byte stream */
	Size		size;
	KdamRankedTree *ranked;		/* made on first use by a kd_* function */
	int64		ndead;			/* rows marked dead, as its forest entry
								 * said when it was read */
} KdamTree;

/* Where the arrays lie in a tree stream, and its size (end). */
typedef struct KdamSlices
{
	Size		coords;
	Size		refs;
	Size		split;
	Size		bounds;
	Size		payload;
	Size		end;
} KdamSlices;

/* Kinds of pages, as kdam_page_census classifies them. */
#define KDAM_PAGE_IN_USE	0	/* the metapage, or in the tree or pending chain */
#define KDAM_PAGE_FREE		1	/* flagged free, or never initialized */
#define KDAM_PAGE_ORPHAN	2	/* reached by no chain: an interrupted write's */

typedef struct KdamCensus
{
	BlockNumber nblocks;
	uint8	   *kind;			/* nblocks KDAM_PAGE_* */
	BlockNumber nfree;
	BlockNumber norphan;
} KdamCensus;

/*
 * Records of a chain read into memory: pending rows, NULL rows (no
 * coordinates) or rows outside the tree (their box as coordinates,
 * kdam_outside.c).
 */
typedef struct KdamRecords
{
	int64		n;
	int64		cap;			/* room for this many */
	double	   *coords;
	uint64	   *refs;
	uint64	   *payload;		/* n * meta->payload_words */
} KdamRecords;

/*
 * A chain of new pages, written one after the other (kdam_pages.c): with
 * wal in shared buffers, recycled where the free space map has pages, each
 * logged as a full image; without (CREATE INDEX), built in memory and
 * written straight to the relation's end.
 */
typedef struct KdamPageChain
{
	Relation	index;
	bool		wal;
	GenericXLogState *state;	/* the last page's, with wal */
	Buffer		last;			/* the last page's buffer, with wal */
	Page		lastpage;		/* its registered copy, or the page in memory */
	BlockNumber lastblk;		/* the unfinished last page, if any */
	BlockNumber head;
} KdamPageChain;

#define KDAM_PAGE_CHAIN(index, wal) \
	{(index), (wal), NULL, InvalidBuffer, NULL, InvalidBlockNumber, \
	 InvalidBlockNumber}

/* A list of trees as read from forest pages (kdam_forest.c). */
typedef struct KdamForest
{
	int			n;
	KdamTreeEntry *trees;
} KdamForest;

/* kdam_forest.c */
extern KdamRelCache *kdam_relcache(Relation index);
extern void kdam_relcache_forget(Relation index);
extern void kdam_forest_read(Relation index, const KdamMetaPageData *meta,
							 KdamForest *forest);
extern const KdamTreeEntry *kdam_forest_read_cached(Relation index,
													 const KdamMetaPageData *meta,
													 int *n);
extern void kdam_retired_read(Relation index, const KdamMetaPageData *meta,
							  KdamForest *retired);
extern BlockNumber kdam_forest_write(Relation index, const KdamForest *forest,
									 bool wal, BlockNumber *tail);
extern void kdam_forest_add(KdamForest *forest, const KdamTreeEntry *entry);
extern bool kdam_largest_tree(Relation index, Buffer *metabuf,
							  KdamMetaPageData *meta, KdamTreeEntry *entry);
extern void kdam_tree_box(const double *coords, int64 n, int dim, double *box);
extern void kdam_free_tree_pages(Relation index, const KdamTreeEntry *entry);

/* kdam_merge.c */
extern bool kdam_work_lock_mode(Relation index, BlockNumber which,
								LOCKMODE mode, bool wait);
extern void kdam_work_unlock_mode(Relation index, BlockNumber which,
								  LOCKMODE mode);
extern void kdam_flush(Relation index);
extern void kdam_merge(Relation index, Size mem);
extern void kdam_rebuild_trees(Relation index, const KdamMetaPageData *m,
							   const KdamTreeEntry *trees, int count);
extern void kdam_drop_retired(Relation index, Buffer metabuf,
							  KdamForest *retired);
extern void kdam_free_trees(Relation index, const KdamForest *retired);
extern void kdam_reclaim_retired(Relation index, Buffer metabuf, bool wait);

/* kdam_rows.c */
extern void kdam_read_live_rows(Relation index, const KdamMetaPageData *meta,
								const KdamForest *forest, KdamLiveRows *out);

/* kdam_handler.c */
extern KdPointType kdam_index_type(Relation index);

/* kdam_pages.c */
extern void kdam_tree_stream_slices(int64 n, int dim, int64 nbounds,
									int words, KdamSlices *slices);
extern Size kdam_tree_stream_size(const KdamMetaPageData *meta,
								  const KdamTreeEntry *entry);
extern Buffer kdam_new_buffer(Relation index, bool reuse);
extern void kdam_init_page(Page page, uint16 flags);
extern void kdam_init_metapage(Page page, int dim, KdPointType type,
							   int words);
extern KdamMetaPage kdam_metapage(Relation index, Page page);
extern void kdam_orphans_add(Relation index, Buffer metabuf, int32 delta);
extern void kdam_free_chain(Relation index, BlockNumber head);
extern Size kdam_pending_record_size(int dim, int words);
extern void kdam_chain_append(Relation index, GenericXLogState *state,
							  BlockNumber *head, BlockNumber *tailblk,
							  uint16 flags, const char *rec, Size recsize,
							  Buffer *tailbuf, Buffer *newbuf);
extern void kdam_read_records(Relation index, BlockNumber head, int dim,
							  int words, int64 count, KdamRecords *out);
extern void kdam_records_reserve(KdamRecords *out, int dim, int words,
								 int64 more);
extern void kdam_read_chain(Relation index, BlockNumber head, int dim,
							int words, int64 limit, KdamRecords *out);
extern int64 kdam_chain_delete(Relation index, BlockNumber head, Size recsize,
							   IndexBulkDeleteCallback callback,
							   void *callback_state);
extern void kdam_read_nulls(Relation index, const KdamMetaPageData *meta,
							KdamRecords *nulls);
extern BlockNumber kdam_write_records(Relation index, const char *recs,
									  int64 n, Size recsize, uint16 flags,
									  BlockNumber *tail);
extern void kdam_read_outside(Relation index, const KdamMetaPageData *meta,
							  KdamRecords *outside);
extern int64 kdam_read_pending(Relation index, const KdamMetaPageData *meta,
							  KdamRecords *pending);
extern void kdam_stream_to_tree(KdamTree *t, const KdamMetaPageData *meta,
								const KdamTreeEntry *entry);
extern void kdam_page_census(Relation index, const KdamMetaPageData *meta,
							 BufferAccessStrategy strategy, KdamCensus *census);
extern Page kdam_chain_add(KdamPageChain *c, uint16 flags, BlockNumber *blkno);
extern Page kdam_chain_push(KdamPageChain *c, uint16 flags, BlockNumber *blkno);
extern void kdam_chain_finish(KdamPageChain *c);
extern BlockNumber kdam_chain_end(KdamPageChain *c);

/* kdam_build.c */
extern Size kdam_build_memory(int64 n, int dim, int words);
extern IndexBuildResult *kdam_build(Relation heap, Relation index,
									IndexInfo *indexInfo);
extern void kdam_buildempty(Relation index);
extern void kdam_write_new_tree(Relation index, double *coords,
								const uint64 *refs, const uint64 *payload,
								int words, int64 n, int dim, bool for_build,
								uint64 tree_id, KdamTreeEntry *entry);

/* kdam_tree.c */
extern void kdam_tree_shape(int64 n, int dim, int words, KdamTreeShape *shape);
extern bool kdam_tree_layout_sound(int64 n, int dim, int words);
extern void kdam_write_tree(Relation index, const KdTree *tree,
							const uint64 *payload, int words, bool wal,
							KdamTreeEntry *entry);
extern void kdam_read_tree(Relation index, const KdamMetaPageData *meta,
						   const KdamTreeEntry *entry, char *data);
extern void kdam_load_tree(Relation index, const KdamMetaPageData *meta,
						   const KdamTreeEntry *entry, KdamTree *t);
extern int64 kdam_block_delete(Relation index, Buffer buf,
							   const KdamTreeShape *shape,
							   IndexBulkDeleteCallback callback,
							   void *callback_state);
extern void kdam_reader_init(KdamTreeReader *rd, Relation index,
							 const KdamMetaPageData *meta,
							 const KdamTreeEntry *entry);
extern void kdam_reader_node(KdamTreeReader *rd, int64 node, bool want_box,
							 KdamNode *out);
extern void kdam_reader_payload(KdamTreeReader *rd, int64 node, uint64 *out);
extern void kdam_reader_hold(KdamTreeReader *rd, bool hold);
extern void kdam_reader_prefetch_children(const KdamTreeReader *rd);
extern void kdam_reader_end(KdamTreeReader *rd);

/* kdam_outside.c */
extern bool kdam_classify_row(KdPointType type, Datum value, int *dim,
							  int32 *srid, int32 *zm, double *coords,
							  double *rec);
extern void kdam_outside_notice(Relation index, int64 n);

/* kdam_hint.c */
extern void kdam_opclass_hint_install(void);

/* kdam_lanes.c */
extern void kdam_init_lane_page(Page page);
extern void kdam_lanes_create(Relation index);
extern bool kdam_lane_insert(Relation index, const char *rec, Size recsize,
							 Buffer metabuf);
extern int64 kdam_lanes_count(Relation index);
extern int64 kdam_index_rows(Relation index, const KdamMetaPageData *meta);
extern int64 kdam_lanes_read(Relation index, uint32 used, int dim,
							 int words, KdamRecords *out);
extern void kdam_lanes_seal(Relation index);
extern void kdam_lanes_unmark(Relation index);
extern int64 kdam_lanes_delete(Relation index, Size recsize,
							   IndexBulkDeleteCallback callback,
							   void *callback_state);
extern void kdam_lanes_heads(Relation index, BlockNumber *heads);

/* kdam_insert.c */
extern bool kdam_insert(Relation index, Datum *values, bool *isnull,
						ItemPointer heap_tid, Relation heap,
						IndexUniqueCheck checkUnique, bool indexUnchanged,
						IndexInfo *indexInfo);

/* kdam_include.c */
extern int	kdam_payload_words(Relation index);
extern void kdam_check_include_types(Relation index);
extern void kdam_payload_from_values(Relation index, Datum *values,
									 bool *isnull, uint64 *out);
extern bool kdam_canreturn(Relation index, int attno);
extern IndexTuple kdam_form_tuple(Relation index, bool is_point,
								  const double *coords, const uint64 *payload);
extern void kdam_tuple_set_point(IndexTuple itup, const double *coords);

/* kdam_cache.c */
extern KdamTree *kdam_cache_get(Relation index, const KdamMetaPageData *meta,
								 const KdamTreeEntry *entry);
extern void kdam_cache_release(KdamTree *tree);
extern void kdam_cache_forget(Oid indexrelid);
extern KdStatus kdam_cache_keep_on_gpu(KdamTree *tree, bool keep,
									   KdExec *exec, KdError *err);
extern bool kdam_cache_gpu_forget(Oid indexrelid);
extern void kdam_cache_refresh_service(Relation index);
extern void kdam_cache_usage(int *trees, int *on_gpu, Size *gpu_bytes);

/* kdam_tid_sort.c */
extern void kdam_sort_tid_nodes(KdamTidNode *a, KdamTidNode *tmp, int64 n);

/* kdam_ranked.c */
extern KdamRankedTree *kdam_ranked_get(KdamTree *t);
extern Size kdam_ranked_gpu_bytes(const KdamRankedTree *ranked);
extern KdStatus kdam_ranked_share(KdamRankedTree *ranked, KdExec *exec,
								  KdError *err);

/* kdam_postgis.c */
extern KdPointType kdam_postgis_index_type(Relation index, KdPointType type);
extern void kdam_postgis_check_query(Relation index,
									 const KdamMetaPageData *meta,
									 const KdPointInfo *info,
									 const char *opname);
extern double kdam_geometry_lower_bound(double d2);
extern double kdam_geography_lower_bound(double d2);
extern int	kdam_postgis_box_qual(KdPointType type, Datum arg, double *lo,
								  double *hi);

/*
 * sqrt(d2) lowered past the rounding of any operator's own distance
 * (exactness.h).
 */
static inline double
kdam_sqrt_below(double d2)
{
	return Max(0.0, sqrt(d2) * (1.0 - KD_SQRT_BELOW_REL) - KD_SQRT_BELOW_ABS);
}

/* kdam_scan.c */
extern IndexScanDesc kdam_beginscan(Relation index, int nkeys, int norderbys);
extern void kdam_rescan(IndexScanDesc scan, ScanKey keys, int nkeys,
						ScanKey orderbys, int norderbys);
extern bool kdam_gettuple(IndexScanDesc scan, ScanDirection dir);
extern int64 kdam_getbitmap(IndexScanDesc scan, TIDBitmap *tbm);
extern void kdam_endscan(IndexScanDesc scan);

/* kdam_vacuum.c */
extern IndexBulkDeleteResult *kdam_bulkdelete(IndexVacuumInfo *info,
											  IndexBulkDeleteResult *stats,
											  IndexBulkDeleteCallback callback,
											  void *callback_state);
extern IndexBulkDeleteResult *kdam_vacuumcleanup(IndexVacuumInfo *info,
												 IndexBulkDeleteResult *stats);

#endif							/* KDAM_H */
