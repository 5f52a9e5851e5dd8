/*
 * kdam_build.c
 *	  CREATE INDEX for the kdgpu access method.
 *
 * The heap is read with table_index_build_scan into arrays of coordinates,
 * packed TIDs and payloads (INCLUDE values), the tree is built by the engine (on the GPU when
 * kdgpu.device allows and the table is large enough, else on the CPU) and
 * written to block pages after the metapage (kdam_tree.c).  The
 * pages are written without WAL and logged at the end with
 * log_newpage_range, as other index builds do.  NULL rows go to the null
 * chain, and rows whose value the tree cannot hold to the outside chain
 * (kdam_outside.c).  The points and the tree
 * must fit in maintenance_work_mem; the error says how much is needed.
 */
#include "postgres.h"

#include "access/tableam.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "commands/progress.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/backend_progress.h"
#include "storage/bufmgr.h"
#include "storage/smgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "kdam.h"

/* subphases reported in pg_stat_progress_create_index */
#define KDAM_PHASE_TREE		2
#define KDAM_PHASE_WRITE	3

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
} KdamBuildState;

/* Bytes a build of n points of dim dimensions needs at its peak. */
static Size
build_memory(int64 n, int dim, int words)
{
	/* input arrays, the engine's scratch copy and tree, the node-ordered payload */
	return (Size) n * (sizeof(double) * dim + sizeof(uint64)) * 4 +
		(Size) n * sizeof(uint64) * words * 3;
}

/* table_index_build_scan callback: collect one row's point. */
static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *state)
{
	KdamBuildState *bs = state;
	double		coords[KD_MAX_DIM + 2];
	double		box[KDAM_OUTSIDE_COORDS];
	/* ref, kind and box, payload */
	uint64		outrec[1 + KDAM_OUTSIDE_COORDS + INDEX_MAX_KEYS + 1];

	if (isnull[0])
	{
		uint64		rec[INDEX_MAX_KEYS + 2];

		rec[0] = kdg_tid_to_ref(tid);
		if (bs->words > 0)
			kdam_payload_from_values(index, values, isnull, rec + 1);
		appendBinaryStringInfo(&bs->nulls, (const char *) rec,
							   sizeof(uint64) * (1 + bs->words));
		bs->nnull++;
		return;
	}
	if (!kdam_classify_row(bs->type, values[0], &bs->dim, &bs->srid, &bs->zm,
						   coords, box))
	{
		outrec[0] = kdg_tid_to_ref(tid);
		memcpy(outrec + 1, box, sizeof(box));
		if (bs->words > 0)
			kdam_payload_from_values(index, values, isnull,
									 outrec + 1 + KDAM_OUTSIDE_COORDS);
		appendBinaryStringInfo(&bs->outside, (const char *) outrec,
							   kdam_pending_record_size(KDAM_OUTSIDE_COORDS,
														bs->words));
		bs->noutside++;
		bs->nodd += KdamOutsideKind(box) != KDAM_OUT_EMPTY;
		return;
	}
	if (bs->n == bs->cap)
	{
		int64		cap = Max(bs->cap * 2, 1024);

		if (build_memory(cap / 2 + 1, bs->dim, bs->words) > bs->limit)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("kdgpu index build needs more than maintenance_work_mem (%zu kB)",
							bs->limit / 1024),
					 errdetail("%lld points of dimension %d read so far need about %zu kB.",
							   (long long) bs->n, bs->dim,
							   build_memory(bs->n + 1, bs->dim, bs->words) / 1024),
					 errhint("Raise maintenance_work_mem to about %zu MB per million points of this dimension.",
							 build_memory(1000000, bs->dim, bs->words) >> 20)));
		bs->coords = bs->coords
			? repalloc_huge(bs->coords, sizeof(double) * bs->dim * cap)
			: palloc_extended(sizeof(double) * bs->dim * cap, MCXT_ALLOC_HUGE);
		bs->refs = bs->refs
			? repalloc_huge(bs->refs, sizeof(uint64) * cap)
			: palloc_extended(sizeof(uint64) * cap, MCXT_ALLOC_HUGE);
		if (bs->words > 0)
			bs->payload = bs->payload
				? repalloc_huge(bs->payload, sizeof(uint64) * bs->words * cap)
				: palloc_extended(sizeof(uint64) * bs->words * cap, MCXT_ALLOC_HUGE);
		bs->cap = cap;
	}
	memcpy(bs->coords + bs->n * bs->dim, coords, sizeof(double) * bs->dim);
	bs->refs[bs->n] = kdg_tid_to_ref(tid);
	if (bs->words > 0)
		kdam_payload_from_values(index, values, isnull,
								 bs->payload + bs->n * bs->words);
	bs->n++;
}

/*
 * Build a tree over n points (with words payload words each) with the
 * engine and write it to new block and directory pages (kdam_tree.c) named
 * tree_id; returns its first block page, or InvalidBlockNumber for no
 * points, and sets *nbounds, the directory (dir, *ndir, *dirhead).  For
 * CREATE INDEX (for_build) the pages are written without WAL and progress
 * is reported; for VACUUM they are WAL-logged.
 *
 * The engine is given the points' ordinals as references, so that each
 * node's TID and payload can then be put in node order.
 */
BlockNumber
kdam_write_new_tree(Relation index, const double *coords, const uint64 *refs,
					const uint64 *payload, int words, int64 n, int dim,
					bool for_build, uint64 tree_id, int64 *nbounds,
					BlockNumber *dir, int *ndir, BlockNumber *dirhead)
{
	MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext,
											  "kdgpu tree build",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(tmp);
	KdTree	   *tree = kdg_tree_new();
	KdExec		exec;
	KdError		err;
	KdStatus	st;
	uint64	   *ords;
	uint64	   *node_payload;
	BlockNumber head = InvalidBlockNumber;

	*nbounds = 0;
	*ndir = 0;
	*dirhead = InvalidBlockNumber;
	if (n > 0)
	{
		if (for_build)
			pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, KDAM_PHASE_TREE);
		ords = palloc_extended(sizeof(uint64) * n, MCXT_ALLOC_HUGE);
		for (int64 i = 0; i < n; i++)
			ords[i] = i;
		kdg_exec_prepare(&exec);
		st = kd_build(coords, ords, n, dim, tree, &exec, &err);
		kdg_check_status(st, &err, &exec, "index build");
		kd_gpu_release(tree);
		node_payload = palloc_extended(sizeof(uint64) * Max(words, 1) * n,
									   MCXT_ALLOC_HUGE);
		for (int64 node = 0; node < n; node++)
		{
			uint64		ord = tree->refs[node];

			tree->refs[node] = refs[ord];
			if (words > 0)
				memcpy(node_payload + node * words, payload + ord * words,
					   sizeof(uint64) * words);
		}

		if (for_build)
			pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, KDAM_PHASE_WRITE);
		*nbounds = tree->nbounds;
		*ndir = kdam_write_tree(index, tree, node_payload, words, tree_id,
								!for_build, dir, &head, dirhead);
		kd_tree_free(tree);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
	return head;
}

/* ambuild */
IndexBuildResult *
kdam_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result = palloc0(sizeof(IndexBuildResult));
	KdamBuildState bs;
	Buffer		metabuf;
	KdamMetaPage meta;
	BlockNumber head;
	BlockNumber null_head;
	BlockNumber null_tail;
	BlockNumber outside_head;
	BlockNumber outside_tail;
	BlockNumber dirhead;
	BlockNumber *dir = palloc(sizeof(BlockNumber) * KDAM_MAX_DIR);
	int			ndir;
	int64		nbounds;
	double		reltuples;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data",
			 RelationGetRelationName(index));

	kdam_check_include_types(index);
	/* an in-place TRUNCATE rebuilds under the same relfilenode */
	kdam_cache_forget(RelationGetRelid(index));
	memset(&bs, 0, sizeof(bs));
	bs.index = index;
	bs.type = kdam_index_type(index);
	bs.words = kdam_payload_words(index);
	initStringInfo(&bs.nulls);
	initStringInfo(&bs.outside);
	bs.limit = (Size) maintenance_work_mem * 1024;
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   build_callback, &bs, NULL);

	/* block 0 first, so that the tree follows it */
	metabuf = kdam_new_buffer(index, false);
	Assert(BufferGetBlockNumber(metabuf) == KDAM_METAPAGE_BLKNO);
	kdam_init_metapage(BufferGetPage(metabuf), bs.dim, bs.type, bs.words);
	MarkBufferDirty(metabuf);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);

	head = kdam_write_new_tree(index, bs.coords, bs.refs, bs.payload, bs.words,
							   bs.n, bs.dim, true, 1, &nbounds, dir, &ndir,
							   &dirhead);
	null_head = kdam_write_records(index, bs.nulls.data, bs.nnull,
								   kdam_pending_record_size(0, bs.words),
								   KDAM_NULLS, &null_tail);
	outside_head = kdam_write_records(index, bs.outside.data, bs.noutside,
									  kdam_pending_record_size(KDAM_OUTSIDE_COORDS,
															   bs.words),
									  KDAM_OUTSIDE, &outside_tail);

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	meta = KdamPageGetMeta(BufferGetPage(metabuf));
	meta->null_head = null_head;
	meta->null_tail = null_tail;
	meta->nnull = bs.nnull;
	meta->outside_head = outside_head;
	meta->outside_tail = outside_tail;
	meta->noutside = bs.noutside;
	meta->ntree = bs.n;
	meta->nbounds = nbounds;
	meta->tree_head = head;
	meta->tree_dir_head = dirhead;
	meta->tree_ndir = ndir;
	memcpy(KdamMetaDir(meta), dir, sizeof(BlockNumber) * ndir);
	meta->tree_id = 1;
	meta->generation = 1;
	meta->srid = bs.srid;
	meta->zm = bs.zm;
	MarkBufferDirty(metabuf);
	UnlockReleaseBuffer(metabuf);

	if (RelationNeedsWAL(index))
		log_newpage_range(index, MAIN_FORKNUM, 0,
						  RelationGetNumberOfBlocks(index), true);

	result->heap_tuples = reltuples;
	result->index_tuples = (double) (bs.n + bs.nnull + bs.noutside);
	kdam_outside_notice(index, bs.nodd);
	return result;
}

/* ambuildempty: the init fork of an unlogged index holds a metapage */
void
kdam_buildempty(Relation index)
{
	Page		page = (Page) palloc(BLCKSZ);

	kdam_init_metapage(page, 0, kdam_index_type(index), kdam_payload_words(index));
	PageSetChecksumInplace(page, KDAM_METAPAGE_BLKNO);
	smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, KDAM_METAPAGE_BLKNO,
			  (char *) page, true);
	log_newpage(&(RelationGetSmgr(index))->smgr_rnode.node, INIT_FORKNUM,
				KDAM_METAPAGE_BLKNO, page, true);
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
	pfree(page);
}
