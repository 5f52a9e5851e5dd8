/*
 * kdam_build.h
 *	  The state of a kdgpu index build, shared by the serial build
 *	  (kdam_build.c), the cells it spills its points to when they outgrow
 *	  memory (kdam_build_cells.c) and the parallel scan
 *	  (kdam_build_parallel.c).
 *
 * A build keeps the points in arrays while they fit in
 * maintenance_work_mem, else it writes each to a temporary file of its
 * cell of a Z-order curve (KdamCells), and the forest is built a group of
 * cells at a time.  The points of a cell too large for one tree, and those
 * outside the curve's box, go through a tuplesort along the curve instead:
 * each sorted item is a tuple (key int8, record bytea), the key with its
 * top bit flipped so that int8's own comparison, which tuplesort makes
 * without a function call, orders it as the unsigned key.
 */
#ifndef KDAM_BUILD_H
#define KDAM_BUILD_H

#include "access/genam.h"
#include "lib/stringinfo.h"
#include "storage/buffile.h"
#include "storage/sharedfileset.h"
#include "utils/tuplesort.h"

#include "kdam.h"

/* tags of a parallel participant's NULL and outside rows (KdamCells.extra) */
#define KDAM_EXTRA_NULL		1
#define KDAM_EXTRA_OUTSIDE	2

/* points of a tree, however small maintenance_work_mem is */
#define KDAM_MIN_RUN		1024

/* at most 2^KDAM_CELL_BITS cells inside the curve's box, then one outside */
#define KDAM_CELL_BITS		8
#define KDAM_MAX_CELLS		((1 << KDAM_CELL_BITS) + 1)

/*
 * One writer's files of the cells (kdam_build_cells.c): temporary files of
 * the serial build, or files of the parallel build's shared set, named by
 * participant and cell; the leader reads every participant's.
 */
typedef struct KdamCells
{
	int			bits;			/* 2^bits cells inside the box */
	int			participant;	/* this writer (0: the leader) */
	int			nparticipants;	/* writers whose files the leader reads */
	SharedFileSet *fileset;		/* NULL: the serial build's temporary files */
	BufFile    *files[KDAM_MAX_CELLS];	/* this writer's, once written to */
	BufFile    *extra;			/* a participant's NULL and outside rows */
	int64		counts[KDAM_MAX_CELLS]; /* points (the leader: everyone's) */
} KdamCells;

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
	int32		srid;			/* PostGIS types: of the points in the trees */
	int32		zm;
	KdamCells  *cells;			/* the points, once they outgrow memory */
	int64		ndone;			/* points in the trees written */
	Tuplesortstate *sort;		/* a sorted part of the cells' points */
	TupleTableSlot *putslot;	/* a sort item being put (virtual) */
	TupleTableSlot *getslot;	/* a sort item read back */
	double		lo[KD_MAX_DIM]; /* the curve's box */
	double		hi[KD_MAX_DIM];
} KdamBuildState;

extern void kdam_build_callback(Relation index, ItemPointer tid, Datum *values,
								bool *isnull, bool tupleIsAlive, void *state);
extern void kdam_build_widen_box(KdamBuildState *bs);
extern void kdam_build_keep_row(KdamBuildState *bs, int tag, const void *rec,
								Size size);
extern void kdam_build_sort_begin(KdamBuildState *bs);
extern void kdam_build_sort_put(KdamBuildState *bs, const char *rec);
extern void kdam_build_sorted_forest(KdamBuildState *bs, int64 npoints,
									 KdamForest *forest, uint64 *tree_id);
extern int	kdam_build_cell(const KdamBuildState *bs, const double *p);

/* kdam_build_kind.c */
extern void kdam_build_choose_kind(Relation heap, Relation index,
								   IndexInfo *indexInfo, KdamBuildState *bs);

/* kdam_build_cells.c */
extern int	kdam_cells_bits(Size limit, int nparticipants);
extern void kdam_cells_begin(KdamBuildState *bs, int bits,
							 SharedFileSet *fileset, int participant);
extern void kdam_cells_put_point(KdamBuildState *bs, const double *coords,
								 uint64 ref, const uint64 *payload);
extern void kdam_cells_put_extra(KdamBuildState *bs, int tag, const void *rec,
								 Size size);
extern void kdam_cells_close(KdamBuildState *bs);
extern int64 kdam_cells_points(const KdamCells *cells);
extern void kdam_cells_build_forest(KdamBuildState *bs, KdamForest *forest,
									uint64 *tree_id);

/* kdam_build_parallel.c */
typedef struct KdamParallelBuild KdamParallelBuild;

extern KdamParallelBuild *kdam_build_parallel_begin(Relation heap,
													Relation index,
													IndexInfo *indexInfo,
													KdamBuildState *bs,
													double *reltuples);
extern void kdam_build_parallel_end(KdamParallelBuild *pb);

#endif							/* KDAM_BUILD_H */
