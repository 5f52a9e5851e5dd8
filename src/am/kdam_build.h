/*
 * kdam_build.h
 *	  The state of a kdgpu index build, shared by the serial build
 *	  (kdam_build.c) and the parallel scan and sort (kdam_build_parallel.c).
 *
 * A build keeps the points in arrays while they fit in
 * maintenance_work_mem, else in a tuplesort keyed by their place on a
 * Z-order curve.  Each sorted item is a tuple (key int8, item bytea): the
 * key with its top bit flipped, so that int8's own comparison, which
 * tuplesort makes without a function call, orders it as the unsigned key;
 * the item a tag byte (a point, a NULL row or a row outside the trees) and
 * the row's record.  The serial build sorts only points; the participants
 * of a parallel build sort every row, the NULL and outside rows with the
 * largest key, and the leader keeps them apart as the merged sort returns
 * them.
 */
#ifndef KDAM_BUILD_H
#define KDAM_BUILD_H

#include "access/genam.h"
#include "lib/stringinfo.h"
#include "utils/tuplesort.h"

#include "kdam.h"

/* tags of sorted items */
#define KDAM_SORT_POINT		0
#define KDAM_SORT_NULL		1
#define KDAM_SORT_OUTSIDE	2

typedef struct KdamBuildState
{
	Relation	index;
	KdPointType type;
	int			dim;
	int64		n;
	int64		cap;
	double	   *coords;
	uint64	   *refs;
	int			words;			/* payload words per point */
	uint64	   *payload;
	StringInfoData nulls;		/* (ref, payload) records of NULL rows */
	int64		nnull;
	StringInfoData outside;		/* records of rows outside the tree */
	int64		noutside;
	int64		nodd;			/* of those, rows with a non-empty value */
	Size		limit;			/* maintenance_work_mem in bytes */
	int32		srid;			/* PostGIS types: of the first point */
	int32		zm;
	Tuplesortstate *sort;		/* the points, once they outgrow memory */
	TupleTableSlot *putslot;	/* a sort item being put (virtual) */
	TupleTableSlot *getslot;	/* a sort item read back */
	bool		sort_all;		/* a parallel participant: every row */
	int64		nsorted;		/* points put in the sort */
	double		lo[KD_MAX_DIM]; /* the curve's box */
	double		hi[KD_MAX_DIM];
} KdamBuildState;

extern void kdam_build_callback(Relation index, ItemPointer tid, Datum *values,
								bool *isnull, bool tupleIsAlive, void *state);
extern void kdam_build_sort_begin(KdamBuildState *bs, int workmem,
								  SortCoordinate coordinate);
extern void kdam_build_widen_box(KdamBuildState *bs);

/* kdam_build_parallel.c */
typedef struct KdamParallelBuild KdamParallelBuild;

extern KdamParallelBuild *kdam_build_parallel_begin(Relation heap,
													Relation index,
													IndexInfo *indexInfo,
													KdamBuildState *bs,
													double *reltuples);
extern void kdam_build_parallel_end(KdamParallelBuild *pb);

#endif							/* KDAM_BUILD_H */
