/*
 * local.h
 *	  The local search path: sources, index trees and the searches.
 *
 * A source's rows are taken from a kdgpu index and the visibility map
 * (index_source.c, index_rows.c, hot_chains.c), or a kdvec index's rows
 * and tree (vector_source.c), or read from the table (source.c), a tree
 * found among the indexes or built (index_tree.c, tree_delta.c,
 * source_tree.c), and searched (search.c and flat_search.c, kd-tree kNN
 * answers made exact by knn_refine.c); calls am/, vam/, service/, point/
 * and core/, never the shard layer or the functions.
 */
#ifndef KDGPU_LOCAL_H
#define KDGPU_LOCAL_H

#include "core/core.h"
#include "point/point.h"
#include "access/htup.h"
#include "access/xlogdefs.h"
#include "storage/relfilenode.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

/* source.c */
extern void kdg_source_open(KdSource *src, Oid relid, Name colname);
extern void kdg_source_open_leaf(KdSource *src, Oid relid, const KdSource *head);
extern void kdg_source_scan(KdSource *src);
extern void kdg_source_add(KdSource *src, Datum value, bool isnull,
						   ItemPointer tid, Datum key, bool keynull);
extern KdSlot *kdg_source_append(KdSource *src, const double *coords, int dim,
								 const KdPointInfo *info, const KdWhere *where,
								 uint64 ref);
extern void kdg_source_sort(KdSource *src);
extern void kdg_source_set_key(KdSource *src, const char *keyname);
extern bool kdg_source_key_unique(const KdSource *src);
extern int	kdg_source_stride(const KdSource *src, int dim);
extern void kdg_sources_spi(KdSource *srcs, const Oid *oids, int n, Oid relid);
extern void kdg_source_check_query(const KdSource *src, KdPointType qtype,
								  Oid argtype, const char *arg);
extern void kdg_source_check_dims(const KdSource *src, const KdSource *other);
extern const char *kdg_source_type_name(const KdSource *src);
extern double *kdg_source_coords(const KdSource *src);
extern uint64 *kdg_source_tids(const KdSource *src);

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
 * An index tree is searched for a source when at most kdg_delta_max(n) of
 * its rows are gone and as many of the source's n rows are added: the
 * larger of these (tree_delta.c)
 */
#define KDG_DELTA_MIN		1024
#define KDG_DELTA_DIVISOR	8

/* tree_delta.c */
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
extern bool kdg_vector_index_fits(Relation index, const KdSource *src);
extern KdgTree *kdg_index_tree(const KdSource *src, int64 work, bool all_knn,
							   Oid *fitting);
extern void kdg_index_keep_built(const KdSource *src, KdTree *tree, int64 work,
								 Oid fitting);
extern KdgTree *kdg_index_device_tree(const KdSource *src, bool all_knn);
extern KdgTree *kdg_index_tree_load(const KdSource *src, Oid *indexoid);

/*
 * One slice of the pairs within a distance (pairs_within.c): the queries
 * are the points at positions first .. first + len - 1 of the search order
 * (the tree's in-order), the point at position u being ordinal ords[u] (n
 * of them); query q's neighbours
 * are hits[offsets[q] .. offsets[q] + kept[q]), each with its ordinal in
 * ref and its operator distance in d2.  With upper, refs holds every
 * ordinal's row identity (kdg_row_ref), and a query keeps only neighbours
 * of higher identity, at the distance query <-> neighbour.
 */
typedef struct KdgPairSlice
{
	const KdSource *src;
	int64		n;
	const uint64 *refs;
	const uint64 *ords;
	int64		first;
	int64		len;
	const int64 *offsets;
	const KdNeighbor *hits;
	const int32 *kept;
} KdgPairSlice;
typedef void (*KdgPairSliceFn) (void *arg, const KdgPairSlice *slice);

/* pairs_within.c */
extern KdgTree *kdg_pairs_tree(const KdSource *src);
extern void kdg_pairs_within(const KdSource *src, const KdgTree *tree,
							 double distance, bool upper, const char *what,
							 KdgPairSliceFn fn, void *arg);

/* flat_search.c */
extern bool kdg_source_flat(const KdSource *src);
extern KdAnswer *kdg_flat_search_knn(const KdSource *src, const double *queries,
									 int64 nq, int k);
extern KdAnswer *kdg_flat_search_all_knn(const KdSource *src, int k,
										 bool include_self, int64 from,
										 int64 nq);
extern KdAnswer *kdg_flat_search_radius(const KdSource *src,
										const double *centers, int64 nq,
										const double *radii, int64 nradii);

/* cluster.c */
extern int32 *kdg_cluster_dbscan(const KdSource *src, double eps,
								 int minpoints, const char *what);

/* source_tree.c */
extern KdTree *kdg_build_tree(const KdSource *src, bool *used_gpu);

/*
 * The engine radius that holds every candidate whose engine distance is
 * about d (in the metric of type's operator, within rounding).
 */
static inline double
kdg_slack(KdPointType type, double d)
{
	if (type == KD_TYPE_GEOGRAPHY)
		return d * (1.0 + KD_GEO_SLACK_REL) + KD_GEO_SLACK_ABS;
	return d * (1.0 + KD_SLACK_REL) + KD_SLACK_ABS;
}

/* knn_refine.c */
extern void kdg_refine_knn(const KdSource *src, const KdgTree *tree,
						   KdNeighbor *raw, int32 *count, int64 nq, int k,
						   int kk, const double *queries,
						   const uint64 *exclude, int64 avail);
extern KdAnswer *kdg_knn_answer(KdHit *hits, const int32 *count, int64 nq,
								int kk);

/* search.c */
extern int64 kdg_rank(const KdSource *src, const double *q,
					  const KdNeighbor *cand, int64 ncand, int64 exclude,
					  KdHit *out);
extern void kdg_exec_for(KdExec *exec, const KdgTree *tree);
extern KdgTree *kdg_source_tree(const KdSource *src, int64 work, bool all_knn);
extern KdgTree *kdg_source_search_tree(const KdSource *src, int64 work,
									 bool all_knn);
extern double kdg_engine_radius(KdPointType type, double r);
extern double kdg_engine_radius_sure(KdPointType type, double r);
extern void kdg_engine_tie_margins(KdPointType type, double *rel, double *abs);
extern KdAnswer *kdg_empty_answer(int64 nq);
extern void kdg_sort_hits(KdHit *hits, int64 n);
extern KdAnswer *kdg_search_knn(const KdSource *src, const KdgTree *tree,
							   const double *queries, int64 nq, int k);
extern KdAnswer *kdg_search_all_knn_slice(const KdSource *src,
										  const KdgTree *tree, int k,
										  bool include_self, int64 from,
										  int64 nq);
extern KdAnswer *kdg_search_all_knn(const KdSource *src, const KdgTree *tree,
								   int k, bool include_self);
extern KdAnswer *kdg_search_radius(const KdSource *src, const KdgTree *tree,
								  const double *centers, int64 nq,
								  const double *radii, int64 nradii);
extern KdAnswer *kdg_search_box(const KdSource *src, const KdgTree *tree,
							   const double *lows, const double *highs,
							   int64 nq);

/*
 * A copy of the live rows of a kdgpu index's trees at one generation, in
 * TID order, and the tree over them (index_source.c).  A source taking
 * its rows from the index uses rows in place when they are its rows.
 */
typedef struct KdgPageMaps KdgPageMaps;
struct KdamMetaPageData;
struct KdamForest;
struct KdamRecords;

struct KdgIndexRows
{
	Oid			indexrelid;
	RelFileNode node;
	uint64		generation;
	char		indexname[NAMEDATALEN];
	int			dim;
	AttrNumber	keyattnum;		/* the key column read, or InvalidAttrNumber */
	int64		n;
	KdSlot	   *rows;			/* n * (dim + 1): coordinates, then TID */
	uint64	   *keys;			/* with a key column: n keys (kdg_key_to_ref) */
	bool	   *nokey;			/* rows whose key was not read: dead when the
								 * copy was made; NULL if none */
	KdTree	   *tree;			/* references are ordinals; NULL until used */
	struct KdVpTree *vp_tree;	/* a kdvec index's tree, its order naming
								 * ordinals; NULL for a kdgpu index */
	double		vp_share;		/* the share of rows its searches compare */
	KdgPageMaps *pages;			/* what all-visible heap pages' line
								 * pointers said, or NULL */
	XLogRecPtr *vm_lsn;			/* per visibility map page: its LSN when
								 * those of its heap pages were read */
	int			nvm;
	int			pins;			/* calls of this transaction using it */
	bool		stale;			/* the index has changed: drop when unpinned */
	uint64		last_use;
	struct KdgChanged *changed; /* the rows of its table's pages read last,
								 * or NULL (changed_pages.c) */
	MemoryContext cxt;			/* holds it all */
};

/*
 * The rows a call read from the pages its table's visibility map does not
 * mark all-visible, and the rows it assembled and the tree it searched,
 * kept for the next call that finds those pages unchanged
 * (changed_pages.c).
 */
typedef struct KdgChanged
{
	MemoryContext cxt;			/* holds it all */
	int			refs;			/* sources using its rows */
	bool		owned;			/* a copy of index rows points to it */
	bool		usable;			/* (while read) every tuple's fate is final */
	TransactionId snapshot_xmin;	/* of the call that read the pages */
	TransactionId horizon;		/* the latest transaction deciding them */
	bool		has_horizon;
	AttrNumber	keyattnum;		/* the key column read, or InvalidAttrNumber */
	BlockNumber nblocks;		/* of the table */
	BlockNumber npages;			/* the pages read, ascending: */
	BlockNumber *blocks;
	XLogRecPtr *lsns;			/* each one's LSN when read */
	bool	   *has_rows;		/* whether it had rows visible */
	int64	   *first_pair;		/* npages + 1: each one's first pair */
	OffsetNumber *pairs;		/* (root, row) of chains whose visible row
								 * is not their root */
	int64		npairs;
	int64		cappairs;
	int64		npending;		/* the index's pending rows then */
	uint64	   *pending_refs;
	double	   *pending_coords;
	KdSlot	   *rows;			/* the call's rows (the source's fields) */
	const uint64 *keys;
	int64		n;
	int			dim;
	int			stride;
	KdPointInfo info;
	KdgDiff    *diff;			/* or NULL: the rows are the copy's */
	KdgTree    *delta;			/* the tree searched beside diff, once made */
} KdgChanged;

/* index_source.c */
extern void kdg_source_read(KdSource *src);
typedef bool (*KdgIndexFits) (Relation index, const KdSource *src);
extern Relation kdg_source_index(const KdSource *src, Relation heap,
								 KdgIndexFits fits);
extern const char *kdg_table_read_reason(const KdSource *src, Relation heap);
extern BlockNumber kdg_visibility_scan(Relation heap, BlockNumber nblocks,
									   KdgIndexRows *r, KdgHotMap *hot,
									   bool *notall, BlockNumber *notall_list);
extern void kdg_read_heap_pages(Relation heap, const KdSource *src,
								Snapshot snapshot, const BlockNumber *blocks,
								BlockNumber nblocks, KdgChanged *changed,
								KdSource *nv);

/* vector_source.c */
extern bool kdg_vector_source_read(KdSource *src, char *note, size_t notelen);

/* changed_pages.c */
extern KdgChanged *kdg_changed_begin(Relation heap, const KdSource *src,
									 Snapshot snapshot, BlockNumber nread,
									 BlockNumber nblocks);
extern void kdg_changed_tuple(KdgChanged *c, HeapTupleHeader tup);
extern void kdg_changed_page(KdgChanged *c, BlockNumber block, XLogRecPtr lsn,
							 const OffsetNumber *byroot, OffsetNumber maxoff,
							 int nvisible);
extern bool kdg_changed_usable(const KdgChanged *c);
extern void kdg_changed_keep(KdgIndexRows *r, KdgChanged *c, KdSource *src,
							 const struct KdamRecords *pending);
extern KdgChanged *kdg_changed_find(const KdgIndexRows *r, Relation heap,
									const KdSource *src, Snapshot snapshot,
									const BlockNumber *notall,
									BlockNumber nnotall, BlockNumber nblocks,
									const struct KdamRecords *pending);
extern void kdg_changed_use(KdgChanged *c, KdSource *src);
extern void kdg_changed_use_delta(KdgChanged *c);

/* index_rows.c */
extern KdgIndexRows *kdg_index_rows_find(Relation index, uint64 generation,
										 const KdSource *src);
extern KdgIndexRows *kdg_index_rows_new(Relation index, uint64 generation,
										const KdSource *src);
extern KdgIndexRows *kdg_index_rows_read(Relation index,
										 const struct KdamMetaPageData *meta,
										 const struct KdamForest *forest,
										 const KdSource *src);
extern void kdg_index_rows_keep(KdgIndexRows *r);
extern void kdg_index_rows_pin(KdgIndexRows *r);
extern void kdg_index_rows_usage(int *copies, int64 *rows, int64 *kept);
extern KdgTree *kdg_index_source_tree(const KdSource *src, int64 work,
									  bool all_knn);

/*
 * Heap pages one visibility map page covers (visibilitymap.c): two bits
 * each on the page's contents.
 */
#define KDG_VM_HEAP_PAGES \
	((BlockNumber) ((BLCKSZ - MAXALIGN(SizeOfPageHeaderData)) * 4))


/* hot_chains.c */
extern KdgHotMap *kdg_hot_map_new(Relation heap, BlockNumber nblocks,
								  KdgIndexRows *r);
extern bool kdg_hot_keeps(const KdgHotMap *hot);
extern void kdg_hot_keep_vm_range(KdgIndexRows *r, BlockNumber vmpage,
								  XLogRecPtr lsn);
extern OffsetNumber *kdg_hot_map_page(KdgHotMap *hot, BlockNumber block);
extern void kdg_hot_map_set(KdgHotMap *hot, BlockNumber block,
							const OffsetNumber *pairs, int npairs);
extern bool kdg_root_key(Page page, OffsetNumber root, const KdSource *src,
						 TupleDesc desc, uint64 *key);
extern void kdg_hot_read_pages(const KdSource *src, const KdNeighbor *raw,
							   const int32 *count, int64 nq, int kk);
extern void kdg_hot_read_hits(const KdSource *src, const KdNeighbor *hits,
							  int64 n);
extern void kdg_hot_read_all(const KdSource *src);
extern void kdg_hot_threads_done(KdgHotMap *hot);

/* index_knn.c */
extern KdAnswer *kdg_index_knn(const KdTable *t, Datum query, Oid qtype,
							   int qdim, const KdPointInfo *qinfo, int k,
							   Oid fn);

#endif							/* KDGPU_LOCAL_H */
