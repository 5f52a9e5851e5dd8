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
 * work on an indexed table skips both the build and the upload.  With the
 * GPU service, the copy is the service's, for every session, and the
 * service also keeps the tree's TIDs in rank order: a later call whose rows
 * are exactly those (the service compares them) searches that copy without
 * reading the tree at all (kdg_index_device_tree).  The check is the same
 * one pass over the same TIDs, made by the service.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "catalog/index.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "am/kdam.h"
#include "kdgpu.h"
#include "service/service.h"

/*
 * Whether index is a kdgpu index on exactly the source's column, holding
 * the coordinates the source reads (a 2-D geometry index holds those of
 * XY points), and that the query's snapshot may use: like the planner, not
 * one built over broken HOT chains (indcheckxmin) by a transaction the
 * snapshot cannot see yet.
 */
bool
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
 * Read index's metapage (left pinned in *metabuf, for the caller to
 * release) and say whether its forest may hold exactly the source's rows:
 * one tree of as many points and the same dimension, with no pending rows
 * and none marked dead.  *tree is then the tree's entry.
 */
static bool
kdg_index_candidate(Relation index, const KdSource *src, Buffer *metabuf,
					KdamMetaPageData *meta, KdamTreeEntry *tree)
{
	KdamForest	forest;
	bool		ok;

	*metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	LockBuffer(*metabuf, BUFFER_LOCK_SHARE);
	*meta = *kdam_metapage(index, BufferGetPage(*metabuf));
	kdam_forest_read(index, meta, &forest);
	LockBuffer(*metabuf, BUFFER_LOCK_UNLOCK);
	ok = forest.n == 1 && meta->nflush == 0 && kdam_lanes_count(index) == 0 &&
		meta->ndead == 0 && meta->ntree == src->n && meta->dim == src->dim;
	if (ok)
		*tree = forest.trees[0];
	pfree(forest.trees);
	return ok;
}

/*
 * The cached tree of index, pinned, when its rows are exactly the source's
 * rows; NULL otherwise.
 */
static KdamTree *
kdg_index_matching_tree(Relation index, const KdSource *src)
{
	Buffer		metabuf;
	KdamMetaPageData meta;
	KdamTreeEntry entry;
	KdamTree   *t = NULL;
	KdamRankedTree *ranked;

	if (kdg_index_candidate(index, src, &metabuf, &meta, &entry))
		t = kdam_cache_get(index, &meta, &entry);
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
 * The GPU service's copy of index's ranked tree, when the service holds one
 * whose rows are exactly the source's (it checks them against the rows it
 * keeps for the copy): a tree on the device only, with its references in
 * memory when with_refs, freed with the current memory context.  NULL
 * otherwise.
 */
static KdTree *
kdg_index_device_copy(Relation index, const KdSource *src, bool with_refs)
{
	Buffer		metabuf;
	KdamMetaPageData meta;
	KdamTreeEntry entry;
	uint64		key[4];
	uint64	   *rows;
	uint64	   *refs = NULL;
	KdGpuTree  *copy = NULL;
	KdTree	   *tree;
	KdError		err;

	/* the metapage is let go before waiting on the service */
	bool		candidate = kdg_index_candidate(index, src, &metabuf, &meta, &entry);

	ReleaseBuffer(metabuf);
	if (candidate)
	{
		kdg_service_key_of_index(key, RelationGetRelid(index),
								 index->rd_node.relNode, meta.generation,
								 KDG_KEY_RANKED);
		rows = palloc_extended(sizeof(uint64) * src->n, MCXT_ALLOC_HUGE);
		for (int64 i = 0; i < src->n; i++)
			rows[i] = kdg_row_tid(src, i);
		if (with_refs)
			refs = palloc_extended(sizeof(uint64) * src->n, MCXT_ALLOC_HUGE);
		memset(&err, 0, sizeof(err));
		copy = kdg_service_find(key, rows, src->n, src->dim, refs, &err);
		pfree(rows);
		if (copy == NULL && refs)
			pfree(refs);
		if (err.code == KD_ERR_CANCELED)
			CHECK_FOR_INTERRUPTS();
	}
	if (copy == NULL)
		return NULL;
	tree = kdg_tree_new();
	tree->n = src->n;
	tree->dim = src->dim;
	tree->refs = refs;
	tree->gpu = copy;
	return tree;
}

/*
 * The cached tree of a kdgpu index on the source's column that holds
 * exactly the source's rows, pinned until the end of the transaction, or
 * NULL when there is none; *indexoid is set to the index.  With device_only,
 * only the GPU service's copy of such a tree is looked for (*device_tree,
 * with its references in memory when with_refs), and none is read.
 */
static KdamTree *
kdg_index_find(const KdSource *src, Oid *indexoid, bool device_only,
			   bool with_refs, KdTree **device_tree)
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
		bool		found = false;

		if (!kdg_index_fits(index, src))
		{
			index_close(index, NoLock);
			continue;
		}
		if (device_only)
		{
			*device_tree = kdg_index_device_copy(index, src, with_refs);
			found = *device_tree != NULL;
			if (found)
				elog(DEBUG1, "kdgpu: searching the GPU service's copy of the tree of index \"%s\"",
					 RelationGetRelationName(index));
		}
		else
		{
			t = kdg_index_matching_tree(index, src);
			found = t != NULL;
			if (t)
				elog(DEBUG1, "kdgpu: searching the tree of index \"%s\"",
					 RelationGetRelationName(index));
			else
				elog(DEBUG1, "kdgpu: the rows of index \"%s\" differ from the table's; building a tree",
					 RelationGetRelationName(index));
		}
		if (found)
			*indexoid = RelationGetRelid(index);
		index_close(index, NoLock);
		if (found)
			break;
	}
	list_free(indexes);
	return t;
}

/*
 * The GPU service's copy of the tree of a kdgpu index on the source's
 * column, when its rows are exactly the source's: a tree on the device only
 * (kdtree.h), searched without reading the index, with its references (the
 * rows' ordinals in node order) in memory when with_refs.  NULL when the
 * service does not hold one, or does not run the GPU work of this backend.
 */
KdTree *
kdg_index_device_tree(const KdSource *src, bool with_refs)
{
	KdTree	   *tree = NULL;
	Oid			indexoid;

	if (kdgpu_device == KD_DEVICE_CPU || !kdg_service_serving())
		return NULL;
	(void) kdg_index_find(src, &indexoid, true, with_refs, &tree);
	return tree;
}

/*
 * The tree of a kdgpu index on the source's column that holds exactly the
 * source's rows, with ordinals as references, or NULL when there is none;
 * for work of that many items.
 * Its device copy is made first if kd_load asked for one to be kept.
 */
KdTree *
kdg_index_tree(const KdSource *src, int64 work)
{
	Oid			indexoid;
	KdamTree   *t = kdg_index_find(src, &indexoid, false, false, NULL);
	KdExec		exec;
	KdError		err;

	if (t == NULL)
		return NULL;
	kdg_exec_prepare(&exec);

	/*
	 * With the GPU service, work for the GPU keeps the copy for every
	 * session, and the service keeps its rows, so that later calls reading
	 * the same rows find it without reading the tree
	 * (kdg_index_device_tree).  A failed upload leaves the work to the
	 * engine's usual choice.
	 */
	if (kdg_gpu_wanted(work) && kdg_service_serving())
	{
		if (kd_gpu_upload(&t->ranked->tree, &exec, &err) == KD_OK)
			kdg_service_give_rows(t->ranked->tree.gpu, t->ranked->tids,
								  t->ranked->tree.refs, t->ranked->tree.n);
	}
	else if (exec.device != KD_DEVICE_CPU &&
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
	KdamTree   *t = kdg_index_find(src, indexoid, false, false, NULL);
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
	else if (kdg_service_in_use())
		kdg_service_give_rows(t->ranked->tree.gpu, t->ranked->tids,
							  t->ranked->tree.refs, t->ranked->tree.n);
	return &t->ranked->tree;
}
