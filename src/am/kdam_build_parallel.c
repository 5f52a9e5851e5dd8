/*
 * kdam_build_parallel.c
 *	  A parallel CREATE INDEX: parallel workers and the leader scan the
 *	  table together and write its points to files of their cells of the
 *	  curve; the leader builds the forest from every participant's files.
 *
 * A build goes parallel when the planner grants workers for the table
 * (plan_create_index_workers: max_parallel_maintenance_workers, the
 * table's size and its parallel_workers option, and index expressions and
 * predicates safe to run in a worker) and the table's points
 * would not fit in maintenance_work_mem, so that the build would spill
 * them anyway.  The leader first reads the table's first blocks
 * (KDAM_BOX_BLOCKS) for the box of the curve (and the kind of point the
 * index holds, where kdam_build_kind.c found none), the part the serial
 * build takes from the points it read before it spilled.  Then every participant, the leader too, reads blocks
 * of a parallel heap scan and writes each point to its own file of the
 * point's cell, in a shared file set, and the NULL rows and the rows
 * outside the trees to a file of its own (kdam_build_cells.c); the
 * participants' file buffers take at most a quarter of
 * maintenance_work_mem.  The leader then builds the forest from every
 * participant's files as the serial build does from its own, on the GPU
 * where it builds there: only the leader builds trees and writes pages.
 *
 * The shape follows nbtree's parallel build (nbtsort.c): the same lock
 * modes in the workers, the same snapshot (SnapshotAny, or an MVCC
 * snapshot for CONCURRENTLY), and a condition variable on which the
 * leader waits for every participant's files.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "kdam_build.h"

/* keys of the parallel build's shared memory */
#define KDAM_KEY_SHARED		UINT64CONST(0xA000000000000001)
#define KDAM_KEY_QUERY		UINT64CONST(0xA000000000000003)

/* table blocks the leader reads first, for the curve's box */
#define KDAM_BOX_BLOCKS		1024

/* What the participants share; a parallel heap scan follows it. */
typedef struct KdamParallelShared
{
	Oid			heaprelid;
	Oid			indexrelid;
	bool		isconcurrent;
	int			cellbits;		/* the cells' bits (kdam_cells_bits) */
	int			dim;			/* the points the index holds */
	int32		srid;
	int32		zm;
	double		lo[KD_MAX_DIM]; /* the curve's box */
	double		hi[KD_MAX_DIM];
	SharedFileSet fileset;		/* the participants' files of cells */

	ConditionVariable donecv;	/* signalled as each participant ends */
	slock_t		mutex;			/* protects the fields below */
	int			ndone;
	double		reltuples;
	int64		counts[KDAM_MAX_CELLS]; /* every participant's points by cell */
} KdamParallelShared;

#define ParallelTableScanFromShared(shared) \
	((ParallelTableScanDesc) ((char *) (shared) + \
							  BUFFERALIGN(sizeof(KdamParallelShared))))

/* A parallel build in flight, as the leader holds it. */
struct KdamParallelBuild
{
	ParallelContext *pcxt;
	Snapshot	snapshot;
};

/* The first blocks' points: their kind and their box. */
typedef struct KdamBoxScan
{
	KdPointType type;
	int			dim;
	int32		srid;
	int32		zm;
	int64		npoints;
	double		lo[KD_MAX_DIM];
	double		hi[KD_MAX_DIM];
} KdamBoxScan;

PGDLLEXPORT void kdam_parallel_build_main(dsm_segment *seg, shm_toc *toc);

/* table_index_build_range_scan callback: widen the box to a row's point. */
static void
box_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			 bool tupleIsAlive, void *state)
{
	KdamBoxScan *b = state;
	double		coords[KD_MAX_DIM + 2];
	double		rec[KDAM_OUTSIDE_COORDS];

	if (isnull[0] ||
		!kdam_classify_row(b->type, values[0], &b->dim, &b->srid, &b->zm,
						   coords, rec))
		return;
	for (int j = 0; j < b->dim; j++)
	{
		b->lo[j] = b->npoints ? Min(b->lo[j], coords[j]) : coords[j];
		b->hi[j] = b->npoints ? Max(b->hi[j], coords[j]) : coords[j];
	}
	b->npoints++;
}

/*
 * Read the table's rows in a parallel heap scan and write each to this
 * participant's files (kdam_build_callback, every row); then add its
 * counts and count it done.  progress: report the scan's blocks (the
 * leader, participant 0).
 */
static void
participate(KdamParallelShared *shared, int participant, Relation heap,
			Relation index, IndexInfo *indexInfo, bool progress)
{
	KdamBuildState ps;
	TableScanDesc scan;
	double		reltuples;

	memset(&ps, 0, sizeof(ps));
	ps.index = index;
	ps.type = kdam_index_type(index);
	ps.words = kdam_payload_words(index);
	ps.dim = shared->dim;
	ps.srid = shared->srid;
	ps.zm = shared->zm;
	memcpy(ps.lo, shared->lo, sizeof(ps.lo));
	memcpy(ps.hi, shared->hi, sizeof(ps.hi));
	kdam_cells_begin(&ps, shared->cellbits, &shared->fileset, participant);

	scan = table_beginscan_parallel(heap, ParallelTableScanFromShared(shared));
	reltuples = table_index_build_scan(heap, index, indexInfo, true, progress,
									   kdam_build_callback, &ps, scan);
	kdam_cells_close(&ps);

	SpinLockAcquire(&shared->mutex);
	shared->ndone++;
	shared->reltuples += reltuples;
	for (int c = 0; c < KDAM_MAX_CELLS; c++)
		shared->counts[c] += ps.cells->counts[c];
	SpinLockRelease(&shared->mutex);
	ConditionVariableSignal(&shared->donecv);
	pfree(ps.cells);
}

/* A parallel worker's part of the build. */
void
kdam_parallel_build_main(dsm_segment *seg, shm_toc *toc)
{
	KdamParallelShared *shared = shm_toc_lookup(toc, KDAM_KEY_SHARED, false);
	LOCKMODE	heaplock = shared->isconcurrent ? ShareUpdateExclusiveLock : ShareLock;
	LOCKMODE	indexlock = shared->isconcurrent ? RowExclusiveLock : AccessExclusiveLock;
	Relation	heap;
	Relation	index;
	IndexInfo  *indexInfo;

	debug_query_string = shm_toc_lookup(toc, KDAM_KEY_QUERY, true);
	pgstat_report_activity(STATE_RUNNING, debug_query_string);

	/* the lock modes the leader's index.c took */
	heap = table_open(shared->heaprelid, heaplock);
	index = index_open(shared->indexrelid, indexlock);
	indexInfo = BuildIndexInfo(index);
	indexInfo->ii_Concurrent = shared->isconcurrent;
	SharedFileSetAttach(&shared->fileset, seg);
	participate(shared, ParallelWorkerNumber + 1, heap, index, indexInfo, false);
	index_close(index, indexlock);
	table_close(heap, heaplock);
}

/*
 * The workers the planner grants a build of index on heap, counted as for
 * a btree build but without its rule of 32 MB of maintenance_work_mem for
 * each participant: a btree participant sorts in its share, where ours
 * only write files.
 */
static int
planned_workers(Relation heap, Relation index)
{
	int			nestlevel = NewGUCNestLevel();
	int			nworkers;

	(void) set_config_option("maintenance_work_mem", "1TB", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	nworkers = plan_create_index_workers(RelationGetRelid(heap),
										 RelationGetRelid(index));
	AtEOXact_GUC(true, nestlevel);
	return nworkers;
}

/*
 * Start a parallel build when it pays (see the top of the file): read the
 * first blocks for the box, launch the workers, take part in the scan,
 * and wait for every participant's files; then bs holds the cells, to be
 * read from every participant's files, with the box, the kind of point
 * and the count of points, and *reltuples the table's rows.  NULL when the
 * build is to be serial (bs untouched).  kdam_build_parallel_end ends it,
 * once the leader has read the files.
 */
KdamParallelBuild *
kdam_build_parallel_begin(Relation heap, Relation index, IndexInfo *indexInfo,
						  KdamBuildState *bs, double *reltuples)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(heap);
	BlockNumber boxblocks = Min(nblocks, KDAM_BOX_BLOCKS);
	KdamBoxScan box;
	KdamParallelBuild *pb;
	KdamParallelShared *shared;
	ParallelContext *pcxt;
	int			nworkers;
	int			nparticipants;
	Size		estshared;

	if (!IsNormalProcessingMode() || nblocks == 0)
		return NULL;
	nworkers = planned_workers(heap, index);
	if (nworkers == 0)
		return NULL;
	memset(&box, 0, sizeof(box));
	box.type = bs->type;
	box.dim = bs->dim;
	box.srid = bs->srid;
	box.zm = bs->zm;
	table_index_build_range_scan(heap, index, indexInfo, false, false, false,
								 0, boxblocks, box_callback, &box, NULL);
	/* no point to sort by, or all of them fit in memory */
	if (box.npoints == 0 ||
		kdam_build_memory((int64) ((double) box.npoints * nblocks / boxblocks),
						  box.dim, bs->words) <= bs->limit)
		return NULL;

	bs->dim = box.dim;
	bs->srid = box.srid;
	bs->zm = box.zm;
	memcpy(bs->lo, box.lo, sizeof(bs->lo));
	memcpy(bs->hi, box.hi, sizeof(bs->hi));
	kdam_build_widen_box(bs);

	pb = palloc0(sizeof(KdamParallelBuild));
	EnterParallelMode();
	pcxt = CreateParallelContext("kdgpu", "kdam_parallel_build_main", nworkers);
	pb->pcxt = pcxt;
	pb->snapshot = indexInfo->ii_Concurrent
		? RegisterSnapshot(GetTransactionSnapshot()) : SnapshotAny;
	estshared = add_size(BUFFERALIGN(sizeof(KdamParallelShared)),
						 table_parallelscan_estimate(heap, pb->snapshot));
	shm_toc_estimate_chunk(&pcxt->estimator, estshared);
	shm_toc_estimate_keys(&pcxt->estimator, 1);
	if (debug_query_string)
	{
		shm_toc_estimate_chunk(&pcxt->estimator, strlen(debug_query_string) + 1);
		shm_toc_estimate_keys(&pcxt->estimator, 1);
	}
	InitializeParallelDSM(pcxt);

	shared = shm_toc_allocate(pcxt->toc, estshared);
	memset(shared, 0, sizeof(KdamParallelShared));
	shared->heaprelid = RelationGetRelid(heap);
	shared->indexrelid = RelationGetRelid(index);
	shared->isconcurrent = indexInfo->ii_Concurrent;
	shared->cellbits = kdam_cells_bits(bs->limit, nworkers + 1);
	shared->dim = bs->dim;
	shared->srid = bs->srid;
	shared->zm = bs->zm;
	memcpy(shared->lo, bs->lo, sizeof(shared->lo));
	memcpy(shared->hi, bs->hi, sizeof(shared->hi));
	SharedFileSetInit(&shared->fileset, pcxt->seg);
	ConditionVariableInit(&shared->donecv);
	SpinLockInit(&shared->mutex);
	table_parallelscan_initialize(heap, ParallelTableScanFromShared(shared),
								  pb->snapshot);
	shm_toc_insert(pcxt->toc, KDAM_KEY_SHARED, shared);
	if (debug_query_string)
	{
		char	   *query = shm_toc_allocate(pcxt->toc,
											 strlen(debug_query_string) + 1);

		strcpy(query, debug_query_string);
		shm_toc_insert(pcxt->toc, KDAM_KEY_QUERY, query);
	}

	LaunchParallelWorkers(pcxt);
	nparticipants = pcxt->nworkers_launched + 1;
	ereport(DEBUG1,
			(errmsg_internal("building index \"%s\" with %d parallel workers requested",
							 RelationGetRelationName(index), nworkers)));
	/* a worker that failed to start would never count itself done */
	WaitForParallelWorkersToAttach(pcxt);
	participate(shared, 0, heap, index, indexInfo, true);
	for (;;)
	{
		SpinLockAcquire(&shared->mutex);
		if (shared->ndone == nparticipants)
		{
			*reltuples = shared->reltuples;
			SpinLockRelease(&shared->mutex);
			break;
		}
		SpinLockRelease(&shared->mutex);
		ConditionVariableSleep(&shared->donecv,
							   WAIT_EVENT_PARALLEL_CREATE_INDEX_SCAN);
	}
	ConditionVariableCancelSleep();

	kdam_cells_begin(bs, shared->cellbits, &shared->fileset, 0);
	bs->cells->nparticipants = nparticipants;
	memcpy(bs->cells->counts, shared->counts, sizeof(shared->counts));
	return pb;
}

/* End a parallel build whose files the leader has read. */
void
kdam_build_parallel_end(KdamParallelBuild *pb)
{
	WaitForParallelWorkersToFinish(pb->pcxt);
	if (IsMVCCSnapshot(pb->snapshot))
		UnregisterSnapshot(pb->snapshot);
	DestroyParallelContext(pb->pcxt);
	ExitParallelMode();
}
