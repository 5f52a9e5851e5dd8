/*
 * kdam_scan.h
 *	  The state of a kdgpu index scan, shared by kdam_scan.c (the scan's
 *	  life, rows with no distance and the rows returned),
 *	  kdam_scan_ordered.c (the best-first search of ordered scans),
 *	  kdam_scan_range.c (the matches of range and bitmap scans),
 *	  kdam_quals.c (WHERE quals as regions) and kdam_order.c (ORDER BY
 *	  keys as distances and lower bounds).
 *
 * A scan sees the index's points in four places, each given a location:
 * the nodes of the forest's live trees [0, ntree), tree t's from base[t]
 * (read in place, kdam_tree.c), pending records [ntree, ntree + npending),
 * outside records next (kdam_outside.c), and the null chain last.
 */
#ifndef KDAM_SCAN_H
#define KDAM_SCAN_H

#include "kdam.h"

/* How a qual tests a point (KdamQual.kind). */
#define KDAM_QUAL_BOX		0	/* lo <= p <= hi in every dimension */
#define KDAM_QUAL_BALL		1	/* within radius of center */
#define KDAM_QUAL_NULL		2	/* IS NULL */
#define KDAM_QUAL_NOT_NULL	3	/* IS NOT NULL */

/* One WHERE qual of the scan, as a region of space (kdam_quals.c). */
typedef struct KdamQual
{
	int			kind;			/* KDAM_QUAL_* */
	bool		lossy;			/* the region holds more than the operator
								 * accepts: the executor rechecks */
	bool		own;			/* a kdgpu operator (kd_ball, kd_rect), which
								 * rejects values the tree cannot hold */
	bool		metric;			/* ball: test points with the type's metric */
	int			dim;			/* the region's dimension, to match the
								 * index's; 0 when it fits any */
	double		lo[KD_MAX_DIM]; /* box: -inf/+inf where unbounded */
	double		hi[KD_MAX_DIM];
	double		center[KD_MAX_DIM]; /* ball */
	double		radius;
	double		r2max;			/* squared radius, widened */
} KdamQual;

/* One ORDER BY key of the scan (kdam_order.c). */
typedef struct KdamOrderKey
{
	bool		null;			/* the argument is NULL or empty: every row's
								 * distance is NULL */
	bool		box;			/* bounds from the argument's box, not a point */
	int			bdim;			/* box: dimensions it bounds */
	double		q[KD_MAX_DIM + 2];	/* point: full coordinates */
	double		lo[KD_MAX_DIM]; /* box */
	double		hi[KD_MAX_DIM];
} KdamOrderKey;

/*
 * A best-first heap entry: a subtree (node >= 0) or a point (node is -1 -
 * its location).  key and lb2 are the first ORDER BY key's value (exact or
 * a lower bound) and, for subtrees, squared distance bound; more holds the
 * other keys' values and squared bounds (NULL with one key).  A subtree is
 * pushed with the bounds its parent knows; its own box, on its own page,
 * tightens them when it is first popped.
 */
typedef struct KdamHeapItem
{
	double		key;
	double		lb2;
	uint64		ref;
	int64		node;
	double	   *more;
	int32		tree;			/* subtree: its tree */
	bool		boxed;			/* subtree: its own box is in the bounds */
} KdamHeapItem;

/*
 * An entry of a heap that an ordered scan keeps apart from its main heap
 * and enters lazily (kdam_scan_ordered.c): a pending row, ordered by its
 * squared distance to the first ORDER BY key's argument, i its place in
 * so->pending; or a tree's root, ordered by its box's bound for the first
 * key, i the tree.
 */
typedef struct KdamLazyRow
{
	double		v;
	int64		i;
} KdamLazyRow;

/* the trees of the main heap's items standing for the heaps apart */
#define KDAM_SIDE_TREE		(-1)
#define KDAM_ROOTS_TREE		(-2)

/* A match of a range scan: its reference and its location. */
typedef struct KdamHit
{
	uint64		ref;
	int64		loc;
} KdamHit;

/*
 * How a scan turns engine distances into ORDER BY values: chosen once, when
 * the scan begins, by the index's point type (kdam_order_metric).
 */
typedef struct KdamMetric
{
	/* a point's value for a point argument: the operator's, or a bound */
	double		(*value) (const double *p, const double *q, int dim);
	/* a lower bound of the value of points at squared distance >= lb2 */
	double		(*bound) (double lb2);
	bool		lower_bounds;	/* values are lower bounds that the executor
								 * rechecks (PostGIS types) */
} KdamMetric;

/* A live tree of the forest, as a scan reads it. */
typedef struct KdamScanTree
{
	KdamTreeEntry entry;
	int64		base;			/* location of its node 0 */
	KdamTreeReader *reader;		/* NULL until the scan first reads the tree */
} KdamScanTree;

typedef struct KdamScanOpaqueData
{
	MemoryContext cxt;			/* per-rescan allocations */
	Buffer		metabuf;		/* pinned for the scan's life */
	KdamMetaPageData meta;
	int			ntrees;			/* live trees */
	KdamScanTree *trees;
	int64		ntree;			/* their points */
	KdamRecords pending;
	KdamRecords outside;		/* rows outside the tree */
	KdPointType type;
	const KdamMetric *metric;	/* ORDER BY values of the point type */
	int			nquals;
	KdamQual   *quals;
	bool		empty;			/* a qual can match nothing */
	bool		recheck;		/* a lossy qual: the executor tests */
	bool		started;
	/* ordered scans */
	bool		ordered;
	int			norder;
	KdamOrderKey *keys;
	bool		all_null;		/* every key is null */
	double	   *more_free;		/* where the next item's "more" goes */
	int64		more_left;		/* how many more fit there */
	KdamHeapItem *heap;			/* NULL until the best-first search starts */
	int64		nheap;
	int64		capheap;
	KdamLazyRow *side;			/* the pending rows, a heap apart */
	int64		nside;
	KdamLazyRow *roots;			/* the trees not entered yet, a heap apart */
	int64		nroots;
	MemoryContext tupcxt;		/* index-only scans: the tuple returned */
	IndexTuple	pointtup;		/* in tupcxt: the last point-only tuple, reused */
	KdamRecords nulls;			/* NULL rows, read when reached */
	int64	   *nullorder;		/* locations of rows with no distance */
	int64		nnullorder;
	bool		nulls_read;
	int64		nullpos;
	/* range scans */
	KdamHit    *hits;			/* the matches */
	double	   *hitcoords;		/* index-only scans: the coordinates of each
								 * tree match (dim a hit, in hits' order),
								 * so that return_row need not read its page
								 * again; NULL otherwise */
	int64		nhits;
	int64		pos;
} KdamScanOpaqueData;

typedef KdamScanOpaqueData *KdamScanOpaque;

/* The outside record (kind and box) at an outside location. */
static inline const double *
kdam_scan_outside_rec(const KdamScanOpaque so, int64 i)
{
	return so->outside.coords + i * KDAM_OUTSIDE_COORDS;
}

/* Locations: where the outside rows and the NULL rows start. */
static inline int64
kdam_loc_outside(const KdamScanOpaque so)
{
	return so->ntree + so->pending.n;
}

static inline int64
kdam_loc_nulls(const KdamScanOpaque so)
{
	return kdam_loc_outside(so) + so->outside.n;
}

/* The outside record at a location, or NULL for any other location. */
static inline const double *
kdam_loc_outside_rec(const KdamScanOpaque so, int64 loc)
{
	if (loc < kdam_loc_outside(so) || loc >= kdam_loc_nulls(so))
		return NULL;
	return kdam_scan_outside_rec(so, loc - kdam_loc_outside(so));
}

/*
 * The reference of the row at a location other than a tree node: a pending
 * record, an outside record or a NULL row.
 */
static inline uint64
kdam_loc_ref(KdamScanOpaque so, int64 loc)
{
	Assert(loc >= so->ntree);
	if (loc < kdam_loc_outside(so))
		return so->pending.refs[loc - so->ntree];
	if (loc < kdam_loc_nulls(so))
		return so->outside.refs[loc - kdam_loc_outside(so)];
	return so->nulls.refs[loc - kdam_loc_nulls(so)];
}


/* kdam_scan.c */
extern KdamTreeReader *kdam_scan_tree_reader(KdamScanOpaque so, Relation index,
											 int t);
extern bool kdam_scan_outside_ordered(const KdamScanOpaque so, int64 i);
extern void kdam_scan_read_nulls(IndexScanDesc scan);

/* kdam_scan_ordered.c */
extern void kdam_ordered_start(IndexScanDesc scan);
extern bool kdam_ordered_next(IndexScanDesc scan, KdamHeapItem *out);

/* kdam_scan_range.c */
extern void kdam_range_collect(IndexScanDesc scan);
extern void kdam_range_group_by_vm_page(KdamScanOpaque so);

/* kdam_quals.c */
extern bool kdam_qual_from_key(KdamScanOpaque so, ScanKey key, KdamQual *q);
extern bool kdam_quals_match(const KdamScanOpaque so, const double *p, int dim);
extern bool kdam_quals_meet_box(const KdamScanOpaque so, const double *box,
								int dim);
extern bool kdam_quals_meet_side(const KdamScanOpaque so, int s, double v,
								 bool left);
extern bool kdam_quals_take_outside(const KdamScanOpaque so, const double *rec);
extern bool kdam_quals_take_null(const KdamScanOpaque so);

/* kdam_order.c */
extern const KdamMetric *kdam_order_metric(KdPointType type);
extern void kdam_order_key_init(IndexScanDesc scan, ScanKey sk,
								KdamOrderKey *key);
extern double kdam_order_point(const KdamScanOpaque so, const KdamOrderKey *key,
							   const double *p, int dim);
extern double kdam_order_bound(const KdamScanOpaque so, const KdamOrderKey *key,
							   double lb2);
extern double kdam_order_side2(const KdamOrderKey *key, const double *p, int s,
							   bool left);
extern double kdam_order_point2(const KdamOrderKey *key, const double *p,
								int dim);
extern double kdam_order_box2(const KdamOrderKey *key, const double *box,
							  int dim);
extern double kdam_order_outside(const KdamScanOpaque so,
								 const KdamOrderKey *key, const double *rec);

#endif							/* KDAM_SCAN_H */
