/*
 * kdam_check.c
 *	  kd_index_check(index): verify a kdgpu index against its table;
 *	  kd_index_stats(index): what its metapage says, and a census of its
 *	  pages (in use, free, orphaned).
 *
 * It checks the metapage, that each tree's page layout puts every node
 * where scans look for it, reads the tree from its pages and runs the
 * engine's structural check (split dimensions, every point on the right
 * side of each ancestor's plane, bounding boxes containing their subtrees),
 * checks that no reference appears twice among the live tree and pending
 * entries, and then reads the table with table_index_build_scan (under a
 * ShareLock, so no rows change meanwhile) to check that every live row is
 * in the index with exactly its coordinates and INCLUDE values, in the null
 * chain when it is NULL, or in the outside chain with its kind and box when
 * the tree cannot hold its value.
 * Any failure is an ERROR that names it; success returns true.
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "commands/defrem.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "kdam.h"

PG_FUNCTION_INFO_V1(kd_index_check);
PG_FUNCTION_INFO_V1(kd_index_stats);

/* A live index entry: reference and where its coordinates are. */
#define CHECK_POINT		0		/* in the tree or pending */
#define CHECK_NULL		1		/* in the null chain */
#define CHECK_OUTSIDE	2		/* in the outside chain */

typedef struct CheckEntry
{
	uint64		ref;
	int			chain;			/* CHECK_* */
	const double *coords;		/* a point's, or an outside row's kind and box */
	const uint64 *payload;		/* INCLUDE values */
	bool		seen;			/* matched by a table row */
} CheckEntry;

typedef struct CheckState
{
	Relation	index;
	KdPointType type;
	int			dim;
	int32		srid;
	int32		zm;
	int			words;			/* payload words per point */
	CheckEntry *entries;
	int64		n;
	int64		rows;
} CheckState;

/* qsort comparator of entries by reference */
static int
cmp_entry(const void *a, const void *b)
{
	uint64		x = ((const CheckEntry *) a)->ref;
	uint64		y = ((const CheckEntry *) b)->ref;

	return (x > y) - (x < y);
}

/* Report corruption of the index: fmt names it, with detail and a hint. */
static void
check_fail(Relation index, const char *fmt, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg(fmt, RelationGetRelationName(index)),
			 detail ? errdetail("%s", detail) : 0,
			 errhint("REINDEX INDEX %s;", RelationGetRelationName(index))));
}

/* table_index_build_scan callback: the row must be indexed as it is. */
static void
check_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *state)
{
	CheckState *cs = state;
	double		coords[KD_MAX_DIM];
	CheckEntry	key;
	CheckEntry *e;

	double		box[KDAM_OUTSIDE_COORDS];
	int			dim = cs->dim;
	int32		srid = cs->srid;
	int32		zm = cs->zm;
	int			chain;
	static const char *const chains[] = {"the tree", "the null chain",
	"the outside chain"};

	if (!tupleIsAlive)
		return;
	chain = isnull[0] ? CHECK_NULL
		: kdam_classify_row(cs->type, values[0], &dim, &srid, &zm, coords, box)
		? CHECK_POINT : CHECK_OUTSIDE;
	cs->rows++;
	key.ref = kdg_tid_to_ref(tid);
	e = bsearch(&key, cs->entries, cs->n, sizeof(CheckEntry), cmp_entry);
	if (e == NULL)
		check_fail(index, "index \"%s\" is missing a row",
				   psprintf("row (%u,%u) is not in the index",
							ItemPointerGetBlockNumber(tid),
							ItemPointerGetOffsetNumber(tid)));
	if (chain != e->chain)
		check_fail(index, "index \"%s\" holds a row in the wrong place",
				   psprintf("row (%u,%u) belongs in %s, its index entry is in %s",
							ItemPointerGetBlockNumber(tid),
							ItemPointerGetOffsetNumber(tid), chains[chain],
							chains[e->chain]));
	if ((chain == CHECK_POINT &&
		 memcmp(e->coords, coords, sizeof(double) * cs->dim) != 0) ||
		(chain == CHECK_OUTSIDE && memcmp(e->coords, box, sizeof(box)) != 0))
		check_fail(index, "index \"%s\" holds a wrong point",
				   psprintf("row (%u,%u) has other coordinates in the index",
							ItemPointerGetBlockNumber(tid),
							ItemPointerGetOffsetNumber(tid)));
	if (cs->words > 0)
	{
		uint64		payload[INDEX_MAX_KEYS + 1];

		kdam_payload_from_values(index, values, isnull, payload);
		if (memcmp(e->payload, payload, sizeof(uint64) * cs->words) != 0)
			check_fail(index, "index \"%s\" holds wrong INCLUDE values",
					   psprintf("row (%u,%u) has other INCLUDE values in the index",
								ItemPointerGetBlockNumber(tid),
								ItemPointerGetOffsetNumber(tid)));
	}
	e->seen = true;
}

/*
 * Open a kdgpu index and lock its table in heaplock mode; errors if indexoid
 * is not a kdgpu index, or if the caller may not read the table (checked
 * before taking the lock, so that no one can block a table they cannot
 * read).
 */
static Relation
open_kdgpu_index(Oid indexoid, LOCKMODE heaplock, Relation *heap)
{
	Oid			heapoid = IndexGetRelation(indexoid, true);
	Relation	index;

	if (get_rel_name(indexoid) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", indexoid)));
	if (!OidIsValid(heapoid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an index", get_rel_name(indexoid))));
	if (pg_class_aclcheck(heapoid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(heapoid));
	*heap = table_open(heapoid, heaplock);
	index = index_open(indexoid, AccessShareLock);
	if (index->rd_rel->relam != get_index_am_oid("kdgpu", false))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a kdgpu index",
						RelationGetRelationName(index))));
	return index;
}

/*
 * Read a live tree into memory, check its structure, its counts and that
 * its box holds its points, and add its live rows to the check's entries;
 * adds its dead rows to *dead.  The tree's memory stays with the entries.
 */
static void
check_tree(CheckState *cs, const KdamMetaPageData *meta,
		   const KdamTreeEntry *entry, int64 *dead)
{
	KdamTree	t;
	KdError		err;
	int			dim = meta->dim;
	int64		tdead = 0;

	if (entry->n <= 0 || entry->nbounds != kde_tree_nbounds(entry->n))
		check_fail(cs->index, "index \"%s\" has an inconsistent forest", NULL);
	if (!kdam_tree_layout_sound(entry->n, dim, meta->payload_words))
		check_fail(cs->index, "index \"%s\" has a tree whose pages scans read amiss",
				   NULL);
	kdam_load_tree(cs->index, meta, entry, &t);
	if (kde_tree_check(&t.tree, &err) != KD_OK)
		check_fail(cs->index, "index \"%s\" has a malformed tree", err.message);
	for (int64 i = 0; i < t.tree.n; i++)
	{
		for (int j = 0; j < dim; j++)
			if (!(t.tree.coords[i * dim + j] >= entry->box[j] &&
				  t.tree.coords[i * dim + j] <= entry->box[dim + j]))
				check_fail(cs->index, "index \"%s\" has a tree whose box misses a point",
						   NULL);
		if (t.tree.refs[i] == KDAM_DEAD_REF)
		{
			tdead++;
			continue;
		}
		cs->entries[cs->n].ref = t.tree.refs[i];
		cs->entries[cs->n].chain = CHECK_POINT;
		cs->entries[cs->n].coords = t.tree.coords + i * dim;
		cs->entries[cs->n].payload = t.payload + i * meta->payload_words;
		cs->entries[cs->n++].seen = false;
	}
	if (tdead != entry->ndead)
		check_fail(cs->index, "index \"%s\" has a wrong count of dead rows", NULL);
	*dead += tdead;
}

/* kd_index_check(index regclass) returns boolean */
Datum
kd_index_check(PG_FUNCTION_ARGS)
{
	Relation	heap;
	Relation	index = open_kdgpu_index(PG_GETARG_OID(0), ShareLock, &heap);
	Buffer		metabuf;
	KdamMetaPageData meta;
	KdamForest	forest;
	KdamRecords pending;
	KdamRecords nulls;
	KdamRecords outside;
	int64		npending;
	CheckState	cs;
	IndexInfo  *info;
	int64		points = 0,
				dead = 0;

	metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	meta = *kdam_metapage(index, BufferGetPage(metabuf));
	kdam_forest_read(index, &meta, &forest);
	npending = kdam_read_pending(index, &meta, &pending);
	kdam_read_nulls(index, &meta, &nulls);
	kdam_read_outside(index, &meta, &outside);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);

	if (pending.n != npending)
		check_fail(index, "index \"%s\" has a wrong count of pending rows", NULL);
	if (nulls.n != meta.nnull)
		check_fail(index, "index \"%s\" has a wrong count of NULL rows", NULL);
	if (outside.n != meta.noutside)
		check_fail(index, "index \"%s\" has a wrong count of rows outside its tree", NULL);
	if (meta.payload_words != kdam_payload_words(index))
		check_fail(index, "index \"%s\" has a wrong payload size", NULL);
	for (int i = 0; i < forest.n; i++)
		points += forest.trees[i].n;

	memset(&cs, 0, sizeof(cs));
	cs.index = index;
	cs.type = kdam_index_type(index);
	cs.dim = meta.dim;
	cs.srid = meta.srid;
	cs.zm = meta.zm;
	cs.words = meta.payload_words;
	cs.entries = palloc_extended(sizeof(CheckEntry) * (points + pending.n + nulls.n +
											   outside.n + 1),
								 MCXT_ALLOC_HUGE);
	for (int i = 0; i < forest.n; i++)
		check_tree(&cs, &meta, &forest.trees[i], &dead);
	ReleaseBuffer(metabuf);
	if (points != meta.ntree || dead != meta.ndead)
		check_fail(index, "index \"%s\" has an inconsistent metapage", NULL);
	for (int64 i = 0; i < pending.n; i++)
	{
		cs.entries[cs.n].ref = pending.refs[i];
		cs.entries[cs.n].chain = CHECK_POINT;
		cs.entries[cs.n].coords = pending.coords + i * meta.dim;
		cs.entries[cs.n].payload = pending.payload + i * meta.payload_words;
		cs.entries[cs.n++].seen = false;
	}
	for (int64 i = 0; i < nulls.n; i++)
	{
		cs.entries[cs.n].ref = nulls.refs[i];
		cs.entries[cs.n].chain = CHECK_NULL;
		cs.entries[cs.n].coords = NULL;
		cs.entries[cs.n].payload = nulls.payload + i * meta.payload_words;
		cs.entries[cs.n++].seen = false;
	}
	for (int64 i = 0; i < outside.n; i++)
	{
		cs.entries[cs.n].ref = outside.refs[i];
		cs.entries[cs.n].chain = CHECK_OUTSIDE;
		cs.entries[cs.n].coords = outside.coords + i * KDAM_OUTSIDE_COORDS;
		cs.entries[cs.n].payload = outside.payload + i * meta.payload_words;
		cs.entries[cs.n++].seen = false;
	}
	qsort(cs.entries, cs.n, sizeof(CheckEntry), cmp_entry);
	for (int64 i = 1; i < cs.n; i++)
		if (cs.entries[i].ref == cs.entries[i - 1].ref)
		{
			ItemPointerData tid;

			kdg_ref_to_tid(cs.entries[i].ref, &tid);
			check_fail(index, "index \"%s\" holds a row twice",
					   psprintf("row (%u,%u)", ItemPointerGetBlockNumber(&tid),
								ItemPointerGetOffsetNumber(&tid)));
		}

	info = BuildIndexInfo(index);
	table_index_build_scan(heap, index, info, true, false, check_callback,
						   &cs, NULL);

	index_close(index, AccessShareLock);
	table_close(heap, ShareLock);
	PG_RETURN_BOOL(true);
}

/*
 * kd_index_stats(index regclass) returns (tree_rows, pending_rows,
 * dead_rows, dimension, generation, pages)
 */
Datum
kd_index_stats(PG_FUNCTION_ARGS)
{
	Relation	heap;
	Relation	index = open_kdgpu_index(PG_GETARG_OID(0), AccessShareLock, &heap);
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	KdamMetaPageData meta;
	TupleDesc	tupdesc;
	KdamCensus	census;
	KdamForest	forest;
	int64		npending;
	Datum		values[11];
	bool		nulls[11] = {false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	meta = *kdam_metapage(index, BufferGetPage(metabuf));
	kdam_page_census(index, &meta, NULL, &census);
	kdam_forest_read(index, &meta, &forest);
	npending = meta.nflush + kdam_lanes_count(index);
	UnlockReleaseBuffer(metabuf);
	values[0] = Int64GetDatum(meta.ntree);
	values[1] = Int64GetDatum(npending);
	values[2] = Int64GetDatum(meta.ndead);
	values[3] = Int32GetDatum(meta.dim);
	values[4] = Int64GetDatum((int64) meta.generation);
	values[5] = Int64GetDatum((int64) census.nblocks);
	values[6] = Int64GetDatum((int64) census.nfree);
	values[7] = Int64GetDatum((int64) census.norphan);
	values[8] = Int64GetDatum(meta.nnull);
	values[9] = Int64GetDatum(meta.noutside);
	values[10] = Int32GetDatum(forest.n);
	index_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
