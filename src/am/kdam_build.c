/*
 * kdam_build.c
 *	  CREATE INDEX for the kdgpu access method.
 *
 * The heap is read with table_index_build_scan into arrays of coordinates,
 * packed TIDs and payloads (INCLUDE values).  When the points and their
 * tree fit in maintenance_work_mem, one tree is built by the engine (on the
 * GPU when kdgpu.device allows and the table is large enough, else on the
 * CPU) and written to block pages after the metapage (kdam_tree.c).
 *
 * When they do not, every point goes to a tuplesort keyed by its place on
 * a Z-order curve (the coordinates' bits, made to sort as the numbers do,
 * interleaved), which spills to disk within half of maintenance_work_mem;
 * the sorted points are then cut into runs that fit in the other half, and
 * each run is built and written as a tree of the forest.  Consecutive
 * points on the curve lie close together, so each tree covers its own part
 * of space and a search enters few of them.
 *
 * The pages are written without WAL and logged at the end with
 * log_newpage_range, as other index builds do.  NULL rows go to the null
 * chain, and rows whose value the tree cannot hold to the outside chain
 * (kdam_outside.c).  pg_stat_progress_create_index shows the table scan,
 * the sort, and each tree's build and write, with points done and total.
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
#include "utils/tuplesort.h"
#include "utils/typcache.h"

#include "kdam.h"

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
	int64		nsorted;
} KdamBuildState;

/* Bytes a build of n points of dim dimensions needs at its peak. */
Size
kdam_build_memory(int64 n, int dim, int words)
{
	/* input arrays, the engine's scratch copy and tree, the node-ordered payload */
	return (Size) n * (sizeof(double) * dim + sizeof(uint64)) * 4 +
		(Size) n * sizeof(uint64) * words * 3;
}

/*
 * The 64 bits of v in an order that sorts as the numbers do: the sign bit
 * flipped for positive numbers, every bit for negative ones.
 */
static inline uint64
ordered_bits(double v)
{
	uint64		u;

	memcpy(&u, &v, sizeof(u));
	return (u & ((uint64) 1 << 63)) ? ~u : u | ((uint64) 1 << 63);
}

/* A point's place on the Z-order curve: its ordered bits interleaved. */
static uint64
zorder_key(const double *p, int dim)
{
	uint64		u[KD_MAX_DIM];
	uint64		key = 0;
	int			pos = 63;

	for (int j = 0; j < dim; j++)
		u[j] = ordered_bits(p[j]);
	for (int b = 63; pos >= 0; b--)
		for (int j = 0; j < dim && pos >= 0; j++, pos--)
			key |= ((u[j] >> b) & 1) << pos;
	return key;
}

/* Put a point into the sort as a bytea: its key (big-endian), then its record. */
static void
sort_put(KdamBuildState *bs, const double *coords, uint64 ref,
		 const uint64 *payload)
{
	Size		recsize = kdam_pending_record_size(bs->dim, bs->words);
	bytea	   *v = palloc(VARHDRSZ + sizeof(uint64) + recsize);
	char	   *d = VARDATA(v);
	uint64		key = zorder_key(coords, bs->dim);

	SET_VARSIZE(v, VARHDRSZ + sizeof(uint64) + recsize);
	for (int i = 0; i < 8; i++)
		d[i] = (char) (key >> (56 - 8 * i));
	memcpy(d + 8, &ref, sizeof(uint64));
	memcpy(d + 16, coords, sizeof(double) * bs->dim);
	memcpy(d + 16 + sizeof(double) * bs->dim, payload, sizeof(uint64) * bs->words);
	tuplesort_putdatum(bs->sort, PointerGetDatum(v), false);
	pfree(v);
	bs->nsorted++;
}

/*
 * The points have outgrown memory: start the sort, within half of
 * maintenance_work_mem, and move the points read so far into it.
 */
static void
start_sort(KdamBuildState *bs)
{
	TypeCacheEntry *tc = lookup_type_cache(BYTEAOID, TYPECACHE_LT_OPR);

	bs->sort = tuplesort_begin_datum(BYTEAOID, tc->lt_opr, InvalidOid, false,
									 Max(64, (int) (bs->limit / 2048)), NULL,
									 TUPLESORT_NONE);
	for (int64 i = 0; i < bs->n; i++)
		sort_put(bs, bs->coords + i * bs->dim, bs->refs[i],
				 bs->payload + i * bs->words);
	pfree(bs->coords);
	pfree(bs->refs);
	if (bs->payload)
		pfree(bs->payload);
	bs->coords = NULL;
	bs->refs = NULL;
	bs->payload = NULL;
	bs->n = bs->cap = 0;
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
	if (bs->sort == NULL && bs->n == bs->cap &&
		kdam_build_memory(bs->n + 1, bs->dim, bs->words) > bs->limit)
		start_sort(bs);
	if (bs->sort)
	{
		uint64		payload[INDEX_MAX_KEYS + 1];

		if (bs->words > 0)
			kdam_payload_from_values(index, values, isnull, payload);
		sort_put(bs, coords, kdg_tid_to_ref(tid), payload);
		return;
	}
	if (bs->n == bs->cap)
	{
		int64		cap = Max(bs->cap * 2, 1024);

		/* grow by less where doubling would pass the limit */
		while (cap > bs->n + 1 && kdam_build_memory(cap, bs->dim, bs->words) > bs->limit)
			cap = bs->n + (cap - bs->n) / 2;
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
 * tree_id, and fill in its forest entry.  For CREATE INDEX (for_build) the
 * pages are written without WAL and progress is reported; otherwise they
 * are WAL-logged.
 *
 * The engine is given the points' ordinals as references, so that each
 * node's TID and payload can then be put in node order.
 */
void
kdam_write_new_tree(Relation index, const double *coords, const uint64 *refs,
					const uint64 *payload, int words, int64 n, int dim,
					bool for_build, uint64 tree_id, KdamTreeEntry *entry)
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

	Assert(n > 0);
	memset(entry, 0, sizeof(*entry));
	entry->tree_id = tree_id;
	kdam_tree_box(coords, n, dim, entry->box);
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
	kdam_write_tree(index, tree, node_payload, words, !for_build, entry);
	kd_tree_free(tree);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
}

/* points of a sorted run, however small maintenance_work_mem is */
#define KDAM_MIN_RUN 1024

/*
 * Build the forest of the points sorted along the curve: one tree per run
 * of points that fits in half of maintenance_work_mem.
 */
static void
build_sorted_forest(KdamBuildState *bs, KdamForest *forest, uint64 *tree_id)
{
	Size		per = kdam_build_memory(1, bs->dim, bs->words);
	int64		run = Max((int64) (bs->limit / 2 / per), KDAM_MIN_RUN);
	double	   *coords;
	uint64	   *refs;
	uint64	   *payload;
	int64		done = 0;

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, KDAM_PHASE_SORT);
	tuplesort_performsort(bs->sort);
	run = Min(run, bs->nsorted);
	coords = palloc_extended(sizeof(double) * bs->dim * run, MCXT_ALLOC_HUGE);
	refs = palloc_extended(sizeof(uint64) * run, MCXT_ALLOC_HUGE);
	payload = palloc_extended(sizeof(uint64) * Max(bs->words, 1) * run,
							  MCXT_ALLOC_HUGE);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL, bs->nsorted);
	while (done < bs->nsorted)
	{
		int64		m = 0;
		KdamTreeEntry entry;
		Datum		v;
		bool		isnull;

		while (m < run && tuplesort_getdatum(bs->sort, true, &v, &isnull, NULL))
		{
			const char *d = VARDATA_ANY(DatumGetPointer(v));

			memcpy(refs + m, d + 8, sizeof(uint64));
			memcpy(coords + m * bs->dim, d + 16, sizeof(double) * bs->dim);
			memcpy(payload + m * bs->words, d + 16 + sizeof(double) * bs->dim,
				   sizeof(uint64) * bs->words);
			pfree(DatumGetPointer(v));
			m++;
		}
		if (m == 0)
			break;
		kdam_write_new_tree(bs->index, coords, refs, payload, bs->words, m,
							bs->dim, true, (*tree_id)++, &entry);
		kdam_forest_add(forest, &entry);
		done += m;
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, done);
	}
	tuplesort_end(bs->sort);
	pfree(coords);
	pfree(refs);
	pfree(payload);
}

/* ambuild */
IndexBuildResult *
kdam_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result = palloc0(sizeof(IndexBuildResult));
	KdamBuildState bs;
	Buffer		metabuf;
	KdamMetaPage meta;
	KdamForest	forest = {0, NULL};
	BlockNumber null_head;
	BlockNumber null_tail;
	BlockNumber outside_head;
	BlockNumber outside_tail;
	BlockNumber forest_head;
	uint64		tree_id = 1;
	int64		npoints;
	double		reltuples;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data",
			 RelationGetRelationName(index));

	kdam_check_include_types(index);
	/* an in-place TRUNCATE rebuilds under the same relfilenode */
	kdam_cache_forget(RelationGetRelid(index));
	kdam_insert_forget(index);
	memset(&bs, 0, sizeof(bs));
	bs.index = index;
	bs.type = kdam_index_type(index);
	bs.words = kdam_payload_words(index);
	initStringInfo(&bs.nulls);
	initStringInfo(&bs.outside);
	bs.limit = (Size) maintenance_work_mem * 1024;
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   build_callback, &bs, NULL);

	/* block 0 first, so that the trees follow it */
	metabuf = kdam_new_buffer(index, false);
	Assert(BufferGetBlockNumber(metabuf) == KDAM_METAPAGE_BLKNO);
	kdam_init_metapage(BufferGetPage(metabuf), bs.dim, bs.type, bs.words);
	MarkBufferDirty(metabuf);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	kdam_lanes_create(index);

	npoints = bs.sort ? bs.nsorted : bs.n;
	if (bs.sort)
		build_sorted_forest(&bs, &forest, &tree_id);
	else if (bs.n > 0)
	{
		KdamTreeEntry entry;

		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL, bs.n);
		kdam_write_new_tree(index, bs.coords, bs.refs, bs.payload, bs.words,
							bs.n, bs.dim, true, tree_id++, &entry);
		kdam_forest_add(&forest, &entry);
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, bs.n);
	}
	forest_head = kdam_forest_write(index, &forest, false, NULL);
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
	meta->ntree = npoints;
	meta->forest_head = forest_head;
	meta->ntrees = forest.n;
	meta->next_tree_id = tree_id;
	meta->generation = 1;
	meta->srid = bs.srid;
	meta->zm = bs.zm;
	MarkBufferDirty(metabuf);
	UnlockReleaseBuffer(metabuf);

	if (RelationNeedsWAL(index))
		log_newpage_range(index, MAIN_FORKNUM, 0,
						  RelationGetNumberOfBlocks(index), true);

	result->heap_tuples = reltuples;
	result->index_tuples = (double) (npoints + bs.nnull + bs.noutside);
	kdam_outside_notice(index, bs.nodd);
	return result;
}

/* ambuildempty: the init fork of an unlogged index holds a metapage and empty lanes */
void
kdam_buildempty(Relation index)
{
	Page		page = (Page) palloc(BLCKSZ);

	for (BlockNumber blkno = KDAM_METAPAGE_BLKNO;
		 blkno <= KDAM_LANE_BLKNO(KDAM_LANES - 1); blkno++)
	{
		if (blkno == KDAM_METAPAGE_BLKNO)
			kdam_init_metapage(page, 0, kdam_index_type(index),
							   kdam_payload_words(index));
		else
			kdam_init_lane_page(page);
		PageSetChecksumInplace(page, blkno);
		smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, blkno, (char *) page,
				  true);
		log_newpage(&(RelationGetSmgr(index))->smgr_rnode.node, INIT_FORKNUM,
					blkno, page, true);
	}
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
	pfree(page);
}
