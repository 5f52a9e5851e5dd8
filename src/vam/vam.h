/*
 * vam.h
 *	  The kdvec index access method: exact ORDER BY v <-> q (L2) or
 *	  v <+> q (L1) over float8[] vectors of up to KDVAM_MAX_DIM coordinates,
 *	  through a vantage-point tree (src/engine/kd_vptree.c) kept on pages.
 *
 * Layout.  Block 0 is the metapage.  CREATE INDEX builds the tree of every
 * row with a vector and writes its inner nodes on consecutive node pages
 * from node_first, KDVAM_NODES_PER_PAGE(dim) to a page, node i on page
 * node_first + i / per page; then each leaf's rows on a run of consecutive
 * leaf pages, chained by next, the last one's next invalid.  A node names
 * its children by a KdvamChild: a node number (>= 0) or a leaf's first
 * page (KDVAM_LEAF_CHILD(blkno), < 0).  Rows inserted later sit on the pending
 * chain, and rows whose vector is NULL or empty (so is their distance) on
 * the null chain; both are appended at their tail under the metapage's
 * exclusive lock, which serializes inserts.  The tree never changes once
 * written: inserts make the pending chain longer, which every scan reads
 * whole, so a REINDEX pays once the pending rows are many.
 *
 * A record is a heap TID packed as a ref (kdg_tid_to_ref) and, on leaf
 * and pending pages, the vector.  VACUUM marks a dead row's ref
 * KDVAM_DEAD_REF in place.  Every page carries a KdvamPageOpaque.
 *
 * The metapage's generation names the tree's live rows: a backend's copy
 * of them (src/local/vector_source.c) is of one generation.  Indexes
 * written before it was kept read it as 0 (the space was zero).
 *
 * The VACUUM interlock.  A scan reads the pending and null chains when it
 * starts and the tree's pages as its search reaches them, and returns a
 * row later, by which time VACUUM may have removed it and the heap reused
 * its TID.  Under an MVCC snapshot the executor's heap check rejects such a
 * row, which the snapshot cannot see.  A scan under another snapshot keeps
 * the metapage pinned for its whole life, and VACUUM takes a cleanup lock
 * on the metapage after marking refs dead, before the heap frees them.
 * kdvec returns no index-only rows.
 */
#ifndef VAM_H
#define VAM_H

#include "postgres.h"

#include "access/amapi.h"
#include "access/genam.h"
#include "nodes/execnodes.h"
#include "storage/bufmgr.h"
#include "utils/relcache.h"

#include "core/core.h"
#include "point/point.h"

#define KDVAM_MAGIC			0x4B445631	/* "KDV1" */
#define KDVAM_FORMAT_VERSION 1
#define KDVAM_METAPAGE_BLKNO 0
#define KDVAM_PAGE_ID		0xFF8C
#define KDVAM_DEAD_REF		UINT64_MAX

/* a vector, or a node's vantage point, fits a page */
#define KDVAM_MAX_DIM		1000

/* page kinds, in KdvamPageOpaque.flags */
#define KDVAM_META		(1 << 0)
#define KDVAM_NODE		(1 << 1)
#define KDVAM_LEAF		(1 << 2)
#define KDVAM_PENDING	(1 << 3)
#define KDVAM_NULLS		(1 << 4)

/* strategies: the ORDER BY operator of each operator class */
#define KDVAM_STRATEGY_L2	1	/* <-> */
#define KDVAM_STRATEGY_L1	2	/* <+> */

/* subphases in pg_stat_progress_create_index */
#define KDVAM_PHASE_TREE	2
#define KDVAM_PHASE_WRITE	3

typedef struct KdvamPageOpaqueData
{
	BlockNumber next;			/* next page of the same leaf or chain */
	uint16		flags;
	uint16		page_id;		/* KDVAM_PAGE_ID */
} KdvamPageOpaqueData;

typedef KdvamPageOpaqueData *KdvamPageOpaque;

/* A child of a node: a node number, or a leaf's first page. */
typedef int64 KdvamChild;

#define KDVAM_NO_CHILD		PG_INT64_MIN
#define KDVAM_LEAF_CHILD(blkno) (-(int64) (blkno) - 1)
#define KDVAM_IS_LEAF(c)	((c) < 0 && (c) != KDVAM_NO_CHILD)
#define KDVAM_LEAF_BLOCK(c)	((BlockNumber) (-(c) - 1))

typedef struct KdvamMetaPageData
{
	uint32		magic;
	uint32		format_version;
	int32		dim;			/* 0 until the first vector */
	int32		metric;			/* KdMetric of the operator class */
	KdvamChild	root;			/* KDVAM_NO_CHILD: no tree */
	int64		ntree;			/* rows in the tree, dead ones too */
	BlockNumber node_first;		/* the first node page */
	BlockNumber pending_head;	/* InvalidBlockNumber: none yet */
	BlockNumber pending_tail;
	int64		npending;
	BlockNumber null_head;
	BlockNumber null_tail;
	int64		nnull;
	double		probe_share;	/* the share of the tree's rows a kNN search
								 * compared at the build (kde_vp_probe) */
	uint64		generation;		/* bumped by every VACUUM that marks rows
								 * dead: copies of the rows are of one */
} KdvamMetaPageData;

/* An inner node: its children, their bounds, and the vantage point. */
typedef struct KdvamNode
{
	KdvamChild	inside;
	KdvamChild	outside;
	double		mu_in;
	double		mu_out;
	double		vp[FLEXIBLE_ARRAY_MEMBER];
} KdvamNode;

#define KdvamPageGetOpaque(page) \
	((KdvamPageOpaque) PageGetSpecialPointer(page))
#define KdvamPageGetMeta(page) \
	((KdvamMetaPageData *) PageGetContents(page))

/* Bytes of a page that records fill. */
#define KDVAM_PAGE_SPACE \
	(BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - MAXALIGN(sizeof(KdvamPageOpaqueData)))
/* A leaf or pending record: ref then dim coordinates; a null record: ref. */
#define KDVAM_ROW_SIZE(dim)		(sizeof(uint64) + sizeof(double) * (dim))
#define KDVAM_NODE_SIZE(dim)	(offsetof(KdvamNode, vp) + sizeof(double) * (dim))
#define KDVAM_NODES_PER_PAGE(dim)	((int) (KDVAM_PAGE_SPACE / KDVAM_NODE_SIZE(dim)))

/* vam_pages.c */
extern void kdvam_init_page(Page page, uint16 flags);
extern void kdvam_init_metapage(Page page, KdMetric metric);
extern void kdvam_check_meta(Relation index, const KdvamMetaPageData *meta);
extern int	kdvam_page_count(Page page, Size recsize);
extern char *kdvam_page_record(Page page, Size recsize, int i);
extern bool kdvam_page_add(Page page, const void *rec, Size recsize);
extern Buffer kdvam_extend(Relation index);
extern void kdvam_chain_append(Relation index, const void *rec, Size recsize,
							   uint16 flags, int dim);
typedef void (*KdvamRecordFn) (void *arg, uint64 ref, const char *rec);
extern void kdvam_chain_visit(Relation index, BlockNumber blkno, Size recsize,
							  KdvamRecordFn fn, void *arg);

/* vam_handler.c */
extern KdMetric kdvam_index_metric(Relation index);

/* the probe of kde_vp_probe at a build, and the share that earns a NOTICE */
#define KDVAM_PROBE_K		10
#define KDVAM_PROBES		16
#define KDVAM_PROBE_POOR	0.3

/* vam_build.c */
extern IndexBuildResult *kdvam_build(Relation heap, Relation index,
									 IndexInfo *indexInfo);
extern void kdvam_buildempty(Relation index);

/* vam_insert.c */
extern bool kdvam_insert(Relation index, Datum *values, bool *isnull,
						 ItemPointer heap_tid, Relation heap,
						 IndexUniqueCheck checkUnique, bool indexUnchanged,
						 IndexInfo *indexInfo);

/* vam_scan.c */
extern IndexScanDesc kdvam_beginscan(Relation index, int nkeys, int norderbys);
extern void kdvam_rescan(IndexScanDesc scan, ScanKey keys, int nkeys,
						 ScanKey orderbys, int norderbys);
extern bool kdvam_gettuple(IndexScanDesc scan, ScanDirection dir);
extern void kdvam_endscan(IndexScanDesc scan);

/* vam_vacuum.c */
extern IndexBulkDeleteResult *kdvam_bulkdelete(IndexVacuumInfo *info,
											   IndexBulkDeleteResult *stats,
											   IndexBulkDeleteCallback callback,
											   void *callback_state);
extern IndexBulkDeleteResult *kdvam_vacuumcleanup(IndexVacuumInfo *info,
												  IndexBulkDeleteResult *stats);

#endif							/* VAM_H */
