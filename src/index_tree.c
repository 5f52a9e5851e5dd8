/*
 * index_tree.c
 *	  The kd_* functions search a kdgpu index's tree, when it holds exactly
 *	  the rows they read, instead of building a tree.
 *
 * A function reads the rows of its table visible to the query (source.c),
 * which is what makes its answers exact.  A kdgpu index on the same column
 * (a plain column index: no expression, no predicate) holds a forest of
 * trees plus pending rows inserted since, and may still hold rows the query
 * cannot see.  Its tree stands in for a build when the forest is one tree
 * whose rows are exactly the rows read: no pending rows, no rows marked
 * dead, and the same TIDs.  The check is one pass over the tree's
 * TIDs in ctid order (the ranked tree, kdam_ranked.c) beside the rows read,
 * also in ctid order.  The same TID means the same tuple version, and so
 * the same point: a tuple is never changed in place, and a TID is reused
 * only after VACUUM has marked the old row dead in the tree.  When the
 * check fails (rows inserted, deleted or updated since the last merge, or
 * row-level security hiding rows), the function builds a tree as before;
 * either way the answer is the same.
 *
 * kd_load keeps the ranked tree's device copy (kdam_cache.c), so that GPU
 * work on an indexed table skips both the build and the upload.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "catalog/index.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "am/kdam.h"
#include "kdgpu.h"

/*
 * Whether index is a kdgpu index on exactly the source's column, holding
 * the coordinates the source reads (a 2-D geometry index holds those of
 * XY points), and that the query's snapshot may use: like the planner, not
 * one built over broken HOT chains (indcheckxmin) by a transaction the
 * snapshot cannot see yet.
 */
static bool
kdg_index_fits(Relation index, const KdSource *src)
{
	KdPointType type;

	if (index->rd_index->indcheckxmin &&
		!TransactionIdPrecedes(HeapTupleHeaderGetXmin(index->rd_indextuple->t_data),
							   TransactionXmin))
		return false;
	if (index->rd_indam->amgettuple != kdam_gettuple ||
		!index->rd_index->indisvalid ||
		index->rd_index->indnatts != 1 ||
		index->rd_index->indkey.values[0] != src->attnum ||
		RelationGetIndexPredicate(index) != NIL)
		return false;
	type = kdam_index_type(index);
	return type == src->type ||
		(type == KD_TYPE_GEOMETRY_2D && src->type == KD_TYPE_GEOMETRY &&
		 src->dim == 2);
}

/*
 * The cached tree of index, pinned, when its rows are exactly the source's
 * rows; NULL otherwise.
 */
static KdamTree *
kdg_index_matching_tree(Relation index, const KdSource *src)
{
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	KdamMetaPageData meta;
	KdamForest	forest;
	KdamTree   *t = NULL;
	KdamRankedTree *ranked;

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	meta = *kdam_metapage(index, BufferGetPage(metabuf));
	kdam_forest_read(index, &meta, &forest);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	if (forest.n == 1 && meta.nflush == 0 && kdam_lanes_count(index) == 0 &&
		meta.ndead == 0 && meta.ntree == src->n && meta.dim == src->dim)
		t = kdam_cache_get(index, &meta, &forest.trees[0]);
	pfree(forest.trees);
	ReleaseBuffer(metabuf);
	if (t == NULL)
		return NULL;
	ranked = kdam_ranked_get(t);
	for (int64 i = 0; ranked && i < src->n; i++)
		if (ranked->tids[i] != kdg_row_tid(src, i))
			ranked = NULL;
	if (ranked == NULL)
	{
		kdam_cache_release(t);
		return NULL;
	}
	return t;
}

/*
 * The cached tree of a kdgpu index on the source's column that holds
 * exactly the source's rows, pinned until the end of the transaction, or
 * NULL when there is none; *indexoid is set to the index.
 */
static KdamTree *
kdg_index_find(const KdSource *src, Oid *indexoid)
{
	Relation	heap;
	List	   *indexes;
	ListCell   *lc;
	KdamTree   *t = NULL;

	*indexoid = InvalidOid;
	if (src->n == 0)
		return NULL;
	heap = table_open(src->relid, AccessShareLock);
	indexes = RelationGetIndexList(heap);
	table_close(heap, NoLock);
	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		if (kdg_index_fits(index, src))
		{
			t = kdg_index_matching_tree(index, src);
			if (t)
				elog(DEBUG1, "kdgpu: searching the tree of index \"%s\"",
					 RelationGetRelationName(index));
			else
				elog(DEBUG1, "kdgpu: the rows of index \"%s\" differ from the table's; building a tree",
					 RelationGetRelationName(index));
		}
		if (t)
			*indexoid = RelationGetRelid(index);
		index_close(index, NoLock);
		if (t)
			break;
	}
	list_free(indexes);
	return t;
}

/*
 * The tree of a kdgpu index on the source's column that holds exactly the
 * source's rows, with ordinals as references, or NULL when there is none.
 * Its device copy is made first if kd_load asked for one to be kept.
 */
KdTree *
kdg_index_tree(const KdSource *src)
{
	Oid			indexoid;
	KdamTree   *t = kdg_index_find(src, &indexoid);
	KdExec		exec;
	KdError		err;

	if (t == NULL)
		return NULL;
	kdg_exec_prepare(&exec);
	/* a failed upload leaves the work to the engine's usual choice */
	if (exec.device != KD_DEVICE_CPU &&
		kdam_cache_keep_on_gpu(t, false, &exec, &err) != KD_OK)
		elog(DEBUG1, "kdgpu: index tree not uploaded: %s", err.message);
	return &t->ranked->tree;
}

/*
 * kd_load on a table: find the index tree that holds exactly its rows (NULL
 * when none does; *indexoid is then InvalidOid), and unless kdgpu.device is
 * 'cpu', or 'auto' with no usable GPU, keep its device copy from now on.
 */
KdTree *
kdg_index_tree_load(const KdSource *src, Oid *indexoid)
{
	KdamTree   *t = kdg_index_find(src, indexoid);
	KdExec		exec;
	KdError		err;
	KdStatus	st;

	if (t == NULL)
		return NULL;
	kdg_exec_prepare(&exec);
	if (exec.device == KD_DEVICE_CPU ||
		(exec.device == KD_DEVICE_AUTO && !kd_gpu_available(NULL, NULL, 0)))
		return &t->ranked->tree;
	st = kdam_cache_keep_on_gpu(t, true, &exec, &err);
	if (st != KD_OK && exec.device == KD_DEVICE_GPU)
		kdg_check_status(st, &err, &exec, "index tree upload");
	if (st != KD_OK)
		ereport(NOTICE,
				(errmsg("kdgpu: the tree stays on the CPU: %s", err.message)));
	return &t->ranked->tree;
}
