/*
 * kdam_build.c
 *	  CREATE INDEX for the kdgpu access method.
 *
 * The heap is read with table_index_build_scan into arrays of coordinates,
 * packed TIDs and payloads (INCLUDE values).  When the points and their
 * tree fit in maintenance_work_mem (kdam_build_memory: 61 bytes a 2-D
 * point, so 1M points at the default 64 MB), one tree is built by the
 * engine (on the GPU when kdgpu.device allows and the table is large
 * enough, else on the CPU, sorting the arrays read in place) and written
 * to block pages after the metapage (kdam_tree.c).
 *
 * When they do not, every point goes to a file of its cell of a Z-order
 * curve over the box of the points read so far (kdam_build_cells.c; with
 * workers, kdam_build_parallel.c), and the forest is built a group of
 * consecutive cells at a time.  A cell too large for one tree, and the
 * points outside the box, go through a tuplesort along the curve in half of
 * maintenance_work_mem, cut into runs that fit in the other half, each
 * ended where the curve leaves the largest cell of its binary partition
 * that it can (tree_cut).  So every tree covers a compact cell of space,
 * not a cell and part of the next, and a search enters few trees.
 *
 * The trees' pages and the chains after them are built in memory and
 * written straight to the relation's storage, each logged as a new page,
 * as nbtree's build does (kdam_pages.c); the metapage and the lanes'
 * headers, which go through shared buffers, are logged at the end with
 * log_newpage_range.  NULL rows go to the null chain, and rows whose value
 * the tree cannot hold to the outside chain (kdam_outside.c).  pg_stat_progress_create_index shows the table scan,
 * the reading of each group of cells or the sort of a cell, and each
 * tree's build and write, with points done and total.
 */
#include "postgres.h"

#include <float.h>

#include "access/tableam.h"
#include "access/tupdesc.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type_d.h"
#include "commands/progress.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/pg_bitutils.h"
#include "utils/backend_progress.h"
#include "utils/float.h"
#include "storage/bufmgr.h"
#include "storage/smgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "kdam_build.h"

/*
 * Bytes a build of n points of dim dimensions (with words payload words
 * each) needs at its peak (kdam_write_new_tree): the points with their TIDs
 * and payloads as read, the tree, and either the ordinals the engine sorts
 * in place with the points or, after the build, the payloads in node order.
 */
Size
kdam_build_memory(int64 n, int dim, int words)
{
	return (Size) n * (sizeof(double) * dim + sizeof(uint64) * (1 + words)) +
		(Size) kde_tree_bytes(n, dim, kde_tree_nbounds(n)) +
		(Size) n * sizeof(uint64) * Max(words, 1);
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

/*
 * A coordinate as 64 bits that sort as the coordinates do: values in
 * [lo, hi] spread evenly over [2^62, 2^63), others by their ordered bits
 * below or above.  A curve over the raw bits would follow the exponent
 * first: its first cells would be thin strips along the axes, each run of
 * them a tree whose box spans the whole table.
 */
static inline uint64
curve_coord(double v, double lo, double hi)
{
	const double span = 4611686018427387904.0;	/* 2^62 */

	if (v < lo)
		return ordered_bits(v) >> 2;
	if (v > hi)
		return ((uint64) 1 << 63) | (ordered_bits(v) >> 1);
	if (hi <= lo)
		return (uint64) 1 << 62;
	/* in halves, which cannot overflow between the largest finite values */
	return ((uint64) 1 << 62) |
		Min((uint64) ((v * 0.5 - lo * 0.5) / (hi * 0.5 - lo * 0.5) * span),
			((uint64) 1 << 62) - 1);
}

/* The 32 bits of v at the even bits of the result (bit i at bit 2i). */
static inline uint64
spread_bits(uint64 v)
{
	v = (v | v << 16) & UINT64CONST(0x0000FFFF0000FFFF);
	v = (v | v << 8) & UINT64CONST(0x00FF00FF00FF00FF);
	v = (v | v << 4) & UINT64CONST(0x0F0F0F0F0F0F0F0F);
	v = (v | v << 2) & UINT64CONST(0x3333333333333333);
	return (v | v << 1) & UINT64CONST(0x5555555555555555);
}

/*
 * A point's place on the Z-order curve: its coordinates' curve bits
 * (curve_coord, over the box of the points read before the sort)
 * interleaved, bit by bit from the top; in two dimensions by spreading
 * each coordinate's top 32 bits at once, the same key.
 */
static uint64
zorder_key(const KdamBuildState *bs, const double *p)
{
	uint64		u[KD_MAX_DIM];
	uint64		key = 0;
	int			pos = 63;

	for (int j = 0; j < bs->dim; j++)
		u[j] = curve_coord(p[j], bs->lo[j], bs->hi[j]);
	if (bs->dim == 2)
		return spread_bits(u[0] >> 32) << 1 | spread_bits(u[1] >> 32);
	for (int b = 63; pos >= 0; b--)
		for (int j = 0; j < bs->dim && pos >= 0; j++, pos--)
			key |= ((u[j] >> b) & 1) << pos;
	return key;
}

/* The sort's int8 key for a curve key: int8 order is the curve's. */
static inline int64
sort_key(uint64 key)
{
	return (int64) (key ^ ((uint64) 1 << 63));
}

/* The curve key of a sort key (sort_key's inverse). */
static inline uint64
curve_key(int64 key)
{
	return (uint64) key ^ ((uint64) 1 << 63);
}

/*
 * The cell of point p among the 2^bits cells of the curve inside its box
 * (bs->cells), or 2^bits for a point outside the box: the key's bits after
 * the 2 * dim bits that say where each coordinate lies against the box.
 */
int
kdam_build_cell(const KdamBuildState *bs, const double *p)
{
	uint64		key = zorder_key(bs, p);
	int			shift = 64 - 2 * bs->dim;
	int			bits = bs->cells->bits;

	/* inside the box: each coordinate's top two bits are 01 (curve_coord) */
	if ((key >> shift) != ((UINT64CONST(1) << bs->dim) - 1))
		return 1 << bits;
	return (int) ((key << (2 * bs->dim)) >> (64 - bits));
}

/*
 * Put a point's record (ref, coords, payload) into the sort, keyed by its
 * place on the curve.
 */
void
kdam_build_sort_put(KdamBuildState *bs, const char *rec)
{
	double		coords[KD_MAX_DIM];
	union
	{
		char		data[VARHDRSZ + sizeof(uint64) * (1 + KD_MAX_DIM + INDEX_MAX_KEYS)];
		int32		align;
	}			item;
	Size		size = kdam_pending_record_size(bs->dim, bs->words);

	Assert(size <= sizeof(item.data) - VARHDRSZ);
	memcpy(coords, rec + sizeof(uint64), sizeof(double) * bs->dim);
	SET_VARSIZE(item.data, VARHDRSZ + size);
	memcpy(VARDATA(item.data), rec, size);
	ExecClearTuple(bs->putslot);
	bs->putslot->tts_values[0] = Int64GetDatum(sort_key(zorder_key(bs, coords)));
	bs->putslot->tts_values[1] = PointerGetDatum(item.data);
	bs->putslot->tts_isnull[0] = false;
	bs->putslot->tts_isnull[1] = false;
	ExecStoreVirtualTuple(bs->putslot);
	tuplesort_puttupleslot(bs->sort, bs->putslot);
}

/*
 * Keep a NULL row's (KDAM_EXTRA_NULL) or an outside row's record in its
 * chain's buffer, counted.
 */
void
kdam_build_keep_row(KdamBuildState *bs, int tag, const void *rec, Size size)
{
	if (tag == KDAM_EXTRA_NULL)
	{
		appendBinaryStringInfo(&bs->nulls, rec, size);
		bs->nnull++;
	}
	else
	{
		double		kind;

		appendBinaryStringInfo(&bs->outside, rec, size);
		memcpy(&kind, (const char *) rec + sizeof(uint64), sizeof(double));
		bs->noutside++;
		bs->nodd += KdamOutsideKind(&kind) != KDAM_OUT_EMPTY;
	}
}

/*
 * Keep a NULL row's or an outside row's record (kdam_build_keep_row), or
 * write it to the participant's file for the leader in a parallel build.
 */
static void
keep_record(KdamBuildState *bs, int tag, const void *rec, Size size)
{
	if (bs->cells && bs->cells->fileset)
		kdam_cells_put_extra(bs, tag, rec, size);
	else
		kdam_build_keep_row(bs, tag, rec, size);
}

/*
 * Start a sort of points in half of maintenance_work_mem: tuples (key
 * int8, record bytea) ordered by key.
 */
void
kdam_build_sort_begin(KdamBuildState *bs)
{
	TupleDesc	desc = CreateTemplateTupleDesc(2);
	AttrNumber	keycol = 1;
	Oid			lt = Int8LessOperator;
	Oid			collation = InvalidOid;
	bool		nulls_first = false;

	TupleDescInitEntry(desc, 1, "key", INT8OID, -1, 0);
	TupleDescInitEntry(desc, 2, "record", BYTEAOID, -1, 0);
	bs->putslot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	bs->getslot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	bs->sort = tuplesort_begin_heap(desc, 1, &keycol, &lt, &collation,
									&nulls_first, Max(64, (int) (bs->limit / 2048)),
									NULL, TUPLESORT_NONE);
}

/*
 * Widen the box in lo and hi (of the points seen) by an eighth on each
 * side, for the points the box has not seen.
 */
void
kdam_build_widen_box(KdamBuildState *bs)
{
	for (int j = 0; j < bs->dim; j++)
	{
		double		margin = (bs->hi[j] * 0.5 - bs->lo[j] * 0.5) / 4;

		bs->lo[j] = Max(bs->lo[j] - margin, -DBL_MAX);
		bs->hi[j] = Min(bs->hi[j] + margin, DBL_MAX);
	}
}

/*
 * The points have outgrown memory: take the box of the points read so far
 * for the curve's, widened, and move them to the cells.
 */
static void
start_cells(KdamBuildState *bs)
{
	for (int j = 0; j < bs->dim; j++)
	{
		bs->lo[j] = get_float8_infinity();
		bs->hi[j] = -get_float8_infinity();
		for (int64 i = 0; i < bs->n; i++)
		{
			bs->lo[j] = Min(bs->lo[j], bs->coords[i * bs->dim + j]);
			bs->hi[j] = Max(bs->hi[j], bs->coords[i * bs->dim + j]);
		}
	}
	kdam_build_widen_box(bs);
	kdam_cells_begin(bs, kdam_cells_bits(bs->limit, 1), NULL, 0);
	for (int64 i = 0; i < bs->n; i++)
		kdam_cells_put_point(bs, bs->coords + i * bs->dim, bs->refs[i],
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

/*
 * table_index_build_scan callback: collect one row's point, or keep its
 * record as a NULL row or a row outside the trees.
 */
void
kdam_build_callback(Relation index, ItemPointer tid, Datum *values,
					bool *isnull, bool tupleIsAlive, void *state)
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
		keep_record(bs, KDAM_EXTRA_NULL, rec, sizeof(uint64) * (1 + bs->words));
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
		keep_record(bs, KDAM_EXTRA_OUTSIDE, outrec,
					kdam_pending_record_size(KDAM_OUTSIDE_COORDS, bs->words));
		return;
	}
	if (bs->cells == NULL && bs->n == bs->cap &&
		kdam_build_memory(bs->n + 1, bs->dim, bs->words) > bs->limit)
		start_cells(bs);
	if (bs->cells)
	{
		uint64		payload[INDEX_MAX_KEYS + 1];

		if (bs->words > 0)
			kdam_payload_from_values(index, values, isnull, payload);
		kdam_cells_put_point(bs, coords, kdg_tid_to_ref(tid), payload);
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
 * node's TID and payload can then be put in node order, and sorts them
 * with coords in place: coords are left in another order.
 */
void
kdam_write_new_tree(Relation index, double *coords, const uint64 *refs,
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
	uint64	   *node_payload = NULL;

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
	st = kde_build_in_place(coords, ords, n, dim, tree, &exec, &err);
	kdg_check_status(st, &err, &exec, "index build");
	kde_gpu_release(tree);
	pfree(ords);
	if (words > 0)
		node_payload = palloc_extended(sizeof(uint64) * words * n,
									   MCXT_ALLOC_HUGE);
	/* the tree keeps its (coordinate, ref) order where refs rise with ord */
	for (int64 i = 1; i < n && tree->ref_order; i++)
		tree->ref_order = refs[i - 1] < refs[i];
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
	kde_tree_free(tree);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
}

/*
 * Where to end a tree among the first n sorted points, of keys keys[]
 * (more: points follow them).  First where the keys' top 2 * dim bits
 * change: there the points pass from below, inside or above the box of
 * curve_coord to another of those in some dimension, and rows outside the
 * box get trees of their own instead of stretching their neighbours' boxes
 * across the table.  Else, when more points follow, at the most
 * significant change of key, the last such place when several tie: the
 * run ends where the curve leaves the largest cell of its binary partition
 * (each key bit halves a cell along one dimension) that it can, and when
 * it started at such a place (as runs of evenly spread points do) it is
 * one whole cell, whose box is compact, where a cut at a fixed count (or
 * only in the run's second half) would straddle cells.  Every size fills
 * its pages (kdam_tree_shape), so the cut need not prefer some.
 */
static int64
tree_cut(const uint64 *keys, int64 n, int dim, bool more)
{
	int			shift = 64 - 2 * dim;
	int64		best = n;
	int			best_level = -1;

	for (int64 c = 1; c < n; c++)
		if ((keys[c - 1] >> shift) != (keys[c] >> shift))
			return c;
	if (!more || n < 2)
		return n;
	for (int64 c = n - 1; c >= 1; c--)
	{
		uint64		diff = keys[c - 1] ^ keys[c];
		int			level = diff ? pg_leftmost_one_pos64(diff) : -1;

		if (best == n || level > best_level)
		{
			best_level = level;
			best = c;
		}
	}
	return best;
}

/*
 * Build trees of the npoints points in the sort (kdam_build_sort_begin),
 * sorted along the curve: trees of at most as many points as fit in half
 * of maintenance_work_mem, each ended where the curve leaves a cell
 * (tree_cut); the points after the cut start the next tree.  The sort is
 * ended.
 */
void
kdam_build_sorted_forest(KdamBuildState *bs, int64 npoints, KdamForest *forest,
						 uint64 *tree_id)
{
	/* a point's share of the build, and its key */
	Size		per = kdam_build_memory(1, bs->dim, bs->words) + sizeof(uint64);
	int64		run = Max((int64) (bs->limit / 2 / per), KDAM_MIN_RUN);
	int			words = Max(bs->words, 1);
	double	   *coords;
	uint64	   *refs;
	uint64	   *payload;
	uint64	   *keys;
	int64		have = 0;
	bool		more = true;

	tuplesort_performsort(bs->sort);
	run = Max(Min(run, npoints), 1);
	coords = palloc_extended(sizeof(double) * bs->dim * run, MCXT_ALLOC_HUGE);
	refs = palloc_extended(sizeof(uint64) * run, MCXT_ALLOC_HUGE);
	payload = palloc_extended(sizeof(uint64) * words * run, MCXT_ALLOC_HUGE);
	keys = palloc_extended(sizeof(uint64) * run, MCXT_ALLOC_HUGE);
	for (;;)
	{
		KdamTreeEntry entry;
		int64		cut;
		bool		isnull;

		/* the sort's final merge hands out the run */
		pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, KDAM_PHASE_SORT);
		while (have < run && more &&
			   (more = tuplesort_gettupleslot(bs->sort, true, false,
											  bs->getslot, NULL)))
		{
			Datum		item = slot_getattr(bs->getslot, 2, &isnull);
			const char *rec = VARDATA_ANY(DatumGetPointer(item));

			keys[have] = curve_key(DatumGetInt64(slot_getattr(bs->getslot, 1,
															  &isnull)));
			memcpy(refs + have, rec, sizeof(uint64));
			memcpy(coords + have * bs->dim, rec + 8, sizeof(double) * bs->dim);
			memcpy(payload + have * bs->words, rec + 8 + sizeof(double) * bs->dim,
				   sizeof(uint64) * bs->words);
			have++;
		}
		if (have == 0)
			break;
		cut = tree_cut(keys, have, bs->dim, more);
		kdam_write_new_tree(bs->index, coords, refs, payload, bs->words, cut,
							bs->dim, true, (*tree_id)++, &entry);
		kdam_forest_add(forest, &entry);
		have -= cut;
		memmove(keys, keys + cut, sizeof(uint64) * have);
		memmove(refs, refs + cut, sizeof(uint64) * have);
		memmove(coords, coords + cut * bs->dim, sizeof(double) * bs->dim * have);
		memmove(payload, payload + cut * bs->words, sizeof(uint64) * bs->words * have);
		bs->ndone += cut;
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, bs->ndone);
	}
	tuplesort_end(bs->sort);
	bs->sort = NULL;
	ExecDropSingleTupleTableSlot(bs->putslot);
	ExecDropSingleTupleTableSlot(bs->getslot);
	pfree(coords);
	pfree(refs);
	pfree(payload);
	pfree(keys);
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
	KdamParallelBuild *parallel;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data",
			 RelationGetRelationName(index));

	kdam_check_include_types(index);
	/* an in-place TRUNCATE rebuilds under the same relfilenode */
	kdam_cache_forget(RelationGetRelid(index));
	kdam_relcache_forget(index);
	memset(&bs, 0, sizeof(bs));
	bs.index = index;
	bs.type = kdam_index_type(index);
	bs.words = kdam_payload_words(index);
	initStringInfo(&bs.nulls);
	initStringInfo(&bs.outside);
	bs.limit = (Size) maintenance_work_mem * 1024;
	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, KDAM_PHASE_SCAN);
	kdam_build_choose_kind(heap, index, indexInfo, &bs);
	parallel = kdam_build_parallel_begin(heap, index, indexInfo, &bs,
										 &reltuples);
	if (parallel == NULL)
		reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
										   kdam_build_callback, &bs, NULL);

	/* block 0 first, so that the trees follow it */
	metabuf = kdam_new_buffer(index, false);
	Assert(BufferGetBlockNumber(metabuf) == KDAM_METAPAGE_BLKNO);
	kdam_init_metapage(BufferGetPage(metabuf), bs.dim, bs.type, bs.words);
	MarkBufferDirty(metabuf);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	kdam_lanes_create(index);

	npoints = bs.cells ? kdam_cells_points(bs.cells) : bs.n;
	if (bs.cells)
		kdam_cells_build_forest(&bs, &forest, &tree_id);
	else if (bs.n > 0)
	{
		KdamTreeEntry entry;

		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL, bs.n);
		kdam_write_new_tree(index, bs.coords, bs.refs, bs.payload, bs.words,
							bs.n, bs.dim, true, tree_id++, &entry);
		kdam_forest_add(&forest, &entry);
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, bs.n);
	}
	if (parallel)
		kdam_build_parallel_end(parallel);
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
	meta->first_merge_id = tree_id;
	meta->generation = 1;
	meta->srid = bs.srid;
	meta->zm = bs.zm;
	MarkBufferDirty(metabuf);
	UnlockReleaseBuffer(metabuf);

	/*
	 * The metapage and the lanes' headers went through shared buffers; the
	 * other pages went straight to storage, each logged as it was written,
	 * and no checkpoint knows of them: sync them, as nbtree's build does
	 */
	if (RelationNeedsWAL(index))
	{
		log_newpage_range(index, MAIN_FORKNUM, KDAM_METAPAGE_BLKNO,
						  KDAM_LANE_BLKNO(KDAM_LANES - 1) + 1, true);
		smgrimmedsync(RelationGetSmgr(index), MAIN_FORKNUM);
	}

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
