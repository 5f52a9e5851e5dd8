/*
 * index_tree.c
 *	  The kd_* functions search a kdgpu index's tree, when its rows are the
 *	  rows they read or differ from them by a few, instead of building a
 *	  tree.
 *
 * A function reads the rows of its table visible to the query (source.c),
 * which makes its answers exact.  A kdgpu index on the same plain column
 * may hold rows the query cannot see and lack rows inserted since; its
 * largest tree stands in for a build when, in one pass over the ranked
 * tree's TIDs (kdam_ranked.c) beside the rows read, both in ctid order, at
 * most a few are gone and a few added (tree_delta.c).  The same TID means
 * the same point: tuples never change in place, and a TID is reused only
 * after VACUUM has marked it dead in the tree, after which an older copy
 * of the tree is never used (kdg_index_base).  Otherwise the function
 * builds a tree; either way the answer is the same.
 *
 * kd_load keeps the ranked tree's device copy (kdam_cache.c).  With the
 * GPU service the copy is the service's, named by the index and the tree's
 * id, and the service keeps its TIDs, so a later call sends its rows and
 * searches the copy beside the difference without reading the tree
 * (kdg_index_device_tree).  An index no tree of which can stand in (a
 * forest) gets the copy of a tree a call built, kept with its rows' TIDs
 * and points (kdg_index_keep_built); with no index tree to vouch for its
 * TIDs, its rows are compared by TID and point.
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
#include "local/local.h"
#include "service/service.h"
#include "vam/vam.h"

/*
 * Whether index is a valid index of the access method whose amgettuple is
 * gettuple on exactly column attnum, with no predicate, that the query's snapshot may use: like the planner, not one
 * built over broken HOT chains (indcheckxmin) by a transaction the
 * snapshot cannot see yet.
 */
static bool
kdg_index_usable(Relation index, AttrNumber attnum, amgettuple_function gettuple)
{
	if (index->rd_index->indcheckxmin &&
		!TransactionIdPrecedes(HeapTupleHeaderGetXmin(index->rd_indextuple->t_data),
							   TransactionXmin))
		return false;
	return index->rd_indam->amgettuple == gettuple &&
		index->rd_index->indisvalid &&
		index->rd_index->indnatts == 1 &&
		index->rd_index->indkey.values[0] == attnum &&
		RelationGetIndexPredicate(index) == NIL;
}

/*
 * Whether index is a kdgpu index usable (kdg_index_usable) on the source's column and
 * holds the coordinates the source reads (a 2-D geometry index holds those
 * of XY points, which a source not read yet, of dimension 0, may be).
 */
bool
kdg_index_fits(Relation index, const KdSource *src)
{
	KdPointType type;

	if (!kdg_index_usable(index, src->attnum, kdam_gettuple))
		return false;
	type = kdam_index_type(index);
	return type == src->type ||
		(type == KD_TYPE_GEOMETRY_2D && src->type == KD_TYPE_GEOMETRY &&
		 (src->dim == 0 || src->dim == 2));
}

/*
 * Whether index is a kdvec index usable (kdg_index_usable) on the
 * source's float8[] column whose operator class orders by the source's
 * metric.
 */
bool
kdg_vector_index_fits(Relation index, const KdSource *src)
{
	return src->type == KD_TYPE_ARRAY &&
		kdg_index_usable(index, src->attnum, kdvam_gettuple) &&
		kdvam_index_metric(index) == src->metric;
}

/*
 * Read index's metapage (left pinned in *metabuf, for the caller to
 * release) and forest, and choose the tree that may stand in for the
 * source's rows: the largest live tree, of the source's dimension, and of a
 * size that a difference of at most maxdiff rows each way allows.  *tree is
 * then its entry; false when there is none.  Its rows marked dead count as
 * rows the
 * source does not hold: their TIDs may have been reused, so the tree's copy
 * must have been made with as many marked (the cache's and the service's
 * names of a tree include the count).
 */
static bool
kdg_index_base(Relation index, const KdSource *src, int64 maxdiff,
			   Buffer *metabuf, KdamMetaPageData *meta, KdamTreeEntry *tree)
{
	return kdam_largest_tree(index, metabuf, meta, tree) && meta->dim == src->dim &&
		tree->n - src->n <= maxdiff && src->n - tree->n <= maxdiff;
}

/* Room for a difference of at most maxdiff rows each way. */
static void
kdg_diff_alloc(KdgDiff *diff, int64 maxdiff)
{
	diff->gone = palloc_extended(sizeof(uint64) * Max(maxdiff, 1), MCXT_ALLOC_HUGE);
	diff->added = palloc_extended(sizeof(uint64) * Max(maxdiff, 1), MCXT_ALLOC_HUGE);
	diff->ngone = 0;
	diff->nadded = 0;
}

/* Log which tree of index a function searches, and beside what. */
static void
kdg_index_note(Relation index, const KdgTree *t, bool device)
{
	const char *what = t->tree->key[3] == KDG_KEY_BUILT + 1 ?
		"the GPU service's copy of the tree built from the rows of" :
		device ? "the GPU service's copy of the tree of" : "the tree of";

	if (t->rank_ord == NULL)
		elog(DEBUG1, "kdgpu: searching %s index \"%s\"",
			 what, RelationGetRelationName(index));
	else
		elog(DEBUG1, "kdgpu: searching %s index \"%s\" beside " INT64_FORMAT " rows added since, without " INT64_FORMAT " gone",
			 what, RelationGetRelationName(index),
			 t->n - (t->tree->n - t->ngone), t->ngone);
}

/*
 * The tree of index to search for the source, from the cache, when its rows
 * differ from the source's by at most maxdiff each way; NULL otherwise.
 * *cached is the cache's tree, pinned until the end of the transaction.
 */
static KdgTree *
kdg_index_host_tree(Relation index, const KdSource *src, int64 maxdiff,
					KdamTree **cached)
{
	Buffer		metabuf;
	KdamMetaPageData meta;
	KdamTreeEntry entry;
	KdamTree   *t = NULL;
	KdamRankedTree *ranked = NULL;
	KdgDiff		diff;

	StaticAssertStmt(sizeof(KdSlot) == sizeof(uint64), "source slots are words");

	if (kdg_index_base(index, src, maxdiff, &metabuf, &meta, &entry))
		t = kdam_cache_get(index, &meta, &entry);
	ReleaseBuffer(metabuf);
	if (t == NULL)
		return NULL;
	ranked = kdam_ranked_get(t);
	kdg_diff_alloc(&diff, maxdiff);
	if (ranked)
	{
		KdgRowsView tv = {ranked->tids, 1, NULL, 0, ranked->tree.n};
		KdgRowsView rv = {&src->rows[src->dim + src->extra].tid, src->stride, NULL, 0, src->n};

		if (!kdg_rows_diff(&tv, &rv, src->dim, maxdiff, maxdiff, &diff))
			ranked = NULL;
	}
	if (ranked == NULL)
	{
		kdam_cache_release(t);
		return NULL;
	}
	*cached = t;
	return kdg_tree_delta(src, &ranked->tree, &diff);
}

/*
 * The GPU service's copy of a tree of index to search for the source, when
 * the service holds one whose rows differ from the source's by at most
 * maxdiff each way (it compares them with the rows it keeps for the copy):
 * the copy of the index's ranked tree when a tree of it can stand in for
 * the source's rows, else the tree last built from the rows a call read
 * (kdg_index_keep_built), whose rows are compared by TID and point (its
 * TIDs may have been reused since: VACUUM, or pruning of a page's HOT
 * chains, frees them).  A tree on the device only, with its references in
 * memory when with_refs, freed with the current memory context.  NULL
 * otherwise.
 */
static KdgTree *
kdg_index_device_copy(Relation index, const KdSource *src, int64 maxdiff,
					  bool with_refs)
{
	Buffer		metabuf;
	KdamMetaPageData meta;
	KdamTreeEntry entry;
	uint64		key[4];
	uint64	   *rows;
	double	   *points = NULL;
	uint64	   *refs = NULL;
	int64		ntree = -1;
	KdGpuTree  *copy = NULL;
	KdTree	   *tree;
	KdgDiff		diff;
	KdError		err;

	/* the metapage is let go before waiting on the service */
	bool		base = kdg_index_base(index, src, maxdiff, &metabuf, &meta, &entry);

	ReleaseBuffer(metabuf);
	if (base)
	{
		kdg_service_key_of_index(key, RelationGetRelid(index), index->rd_node.relNode,
								 entry.tree_id, entry.ndead, KDG_KEY_RANKED);
		ntree = entry.n;
	}
	else
	{
		kdg_service_key_of_index(key, RelationGetRelid(index), index->rd_node.relNode,
								 0, 0, KDG_KEY_BUILT);
		points = kdg_source_coords(src);
	}
	rows = kdg_source_tids(src);
	if (with_refs)
		refs = palloc_extended(sizeof(uint64) * (src->n + maxdiff), MCXT_ALLOC_HUGE);
	kdg_diff_alloc(&diff, maxdiff);
	memset(&err, 0, sizeof(err));
	copy = kdg_service_find(key, rows, points, src->n, &ntree, src->dim, refs,
							maxdiff, maxdiff, &diff, &err);
	pfree(rows);
	if (points)
		pfree(points);
	if (err.code == KD_ERR_CANCELED)
		CHECK_FOR_INTERRUPTS();
	if (copy == NULL)
		return NULL;
	tree = kdg_tree_new();
	tree->n = ntree;
	tree->dim = src->dim;
	tree->refs = refs;
	tree->gpu = copy;
	memcpy(tree->key, key, sizeof(tree->key));
	return kdg_tree_delta(src, tree, &diff);
}

/*
 * The tree of a kdgpu index on the source's column whose rows are the
 * source's, or differ from them within the limits (tree_delta.c), or NULL
 * when there is none; *indexoid is set to the index.  For All-kNN, only a
 * tree of exactly the source's rows, with its references in memory: there
 * a build costs less than searching every row beside the added ones
 * (bench/service/delta).  With device_only, only the GPU service's copy of
 * such a tree is looked for, and none is read; else *cached is the cache's
 * tree, pinned until the end of the transaction.
 */
static KdgTree *
kdg_index_find(const KdSource *src, Oid *indexoid, bool device_only,
			   bool all_knn, KdamTree **cached, Oid *fitting)
{
	Relation	heap;
	List	   *indexes;
	ListCell   *lc;
	KdgTree    *t = NULL;
	int64		maxdiff = all_knn ? 0 : kdg_delta_max(src->n);

	*indexoid = InvalidOid;
	if (fitting)
		*fitting = InvalidOid;
	if (src->n == 0)
		return NULL;
	heap = table_open(src->relid, AccessShareLock);
	indexes = RelationGetIndexList(heap);
	table_close(heap, NoLock);
	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		if (!kdg_index_fits(index, src))
		{
			index_close(index, NoLock);
			continue;
		}
		if (fitting && !OidIsValid(*fitting))
			*fitting = RelationGetRelid(index);
		t = device_only ? kdg_index_device_copy(index, src, maxdiff, all_knn) :
			kdg_index_host_tree(index, src, maxdiff, cached);
		if (t)
		{
			kdg_index_note(index, t, device_only);
			*indexoid = RelationGetRelid(index);
		}
		else if (!device_only)
			elog(DEBUG1, "kdgpu: the rows of index \"%s\" differ too much from the table's; building a tree",
				 RelationGetRelationName(index));
		index_close(index, NoLock);
		if (t)
			break;
	}
	list_free(indexes);
	return t;
}

/*
 * The GPU service's copy of the tree of a kdgpu index on the source's
 * column, when its rows are the source's or differ from them within the
 * limits (for All-kNN: are the source's): a tree on the device only
 * (kdtree.h), searched without reading the index, with its references
 * (ranks in node order) in memory for All-kNN.  NULL when the service does
 * not hold one, or does not run the GPU work of this backend.
 */
KdgTree *
kdg_index_device_tree(const KdSource *src, bool all_knn)
{
	Oid			indexoid;

	if (kdgpu_device == KD_DEVICE_CPU || !kdg_service_serving())
		return NULL;
	return kdg_index_find(src, &indexoid, true, all_knn, NULL, NULL);
}

/*
 * The tree of a kdgpu index on the source's column to search for the
 * source (its rows are the source's, or differ within the limits; for
 * All-kNN, are the source's), or NULL when there is none; for work of that
 * many items.  Its device copy is made first if kd_load asked for one to
 * be kept.
 */
KdgTree *
kdg_index_tree(const KdSource *src, int64 work, bool all_knn, Oid *fitting)
{
	Oid			indexoid;
	KdamTree   *t = NULL;
	KdgTree    *found = kdg_index_find(src, &indexoid, false, all_knn, &t, fitting);
	KdExec		exec;
	KdError		err;

	if (found == NULL)
		return NULL;
	kdg_exec_prepare(&exec);

	/*
	 * With the GPU service, work for the GPU keeps the copy for every
	 * session, and the service keeps its rows, so that later calls reading
	 * the same rows, or a few more or fewer, find it without reading the
	 * tree (kdg_index_device_tree).  A failed upload leaves the work to the
	 * engine's usual choice.
	 */
	if (kdg_gpu_wanted(work) && kdg_service_serving())
		(void) kdam_ranked_share(t->ranked, &exec, &err);
	else if (exec.device != KD_DEVICE_CPU &&
			 kdam_cache_keep_on_gpu(t, false, &exec, &err) != KD_OK)
		elog(DEBUG1, "kdgpu: index tree not uploaded: %s", err.message);
	return found;
}

/*
 * After a tree was built over the source's rows for GPU work of that many
 * items, the table's kdgpu index being fitting (whose trees could not
 * stand in for the rows: a forest built within maintenance_work_mem, or
 * rows changed past the limits): with the GPU service, give it the tree as
 * that index's copy built from rows read, with the rows' TIDs and points,
 * so that later calls search it beside what changed since instead of
 * building again (kdg_index_device_copy).  Its references are ordinals,
 * which are ranks in ctid order.  A failure only leaves the next call to
 * build.
 */
void
kdg_index_keep_built(const KdSource *src, KdTree *tree, int64 work, Oid fitting)
{
	Relation	index;
	uint64	   *rows;
	double	   *points;
	KdExec		exec;
	KdError		err;

	if (tree == NULL || !OidIsValid(fitting) || !kdg_gpu_wanted(work) ||
		!kdg_service_serving())
		return;
	index = index_open(fitting, AccessShareLock);
	kdg_service_key_of_index(tree->key, fitting, index->rd_node.relNode, 0, 0,
							 KDG_KEY_BUILT);
	index_close(index, AccessShareLock);
	/* the build's own copy is this backend's: the named one replaces it */
	kde_gpu_release(tree);
	kdg_exec_prepare(&exec);
	if (kde_gpu_upload(tree, &exec, &err) != KD_OK)
		return;
	rows = kdg_source_tids(src);
	points = kdg_source_coords(src);
	kdg_service_give_rows(tree->gpu, rows, tree->refs, points, src->n);
	pfree(points);
	pfree(rows);
}

/*
 * kd_load on a table: find the index tree to search for its rows (NULL
 * when there is none; *indexoid is then InvalidOid), and unless
 * kdgpu.device is 'cpu', or 'auto' with no usable GPU, keep its device copy
 * from now on.
 */
KdgTree *
kdg_index_tree_load(const KdSource *src, Oid *indexoid)
{
	KdamTree   *t = NULL;
	KdgTree    *found = kdg_index_find(src, indexoid, false, false, &t, NULL);
	KdExec		exec;
	KdError		err;
	KdStatus	st;

	if (found == NULL)
		return NULL;
	kdg_exec_prepare(&exec);
	if (exec.device == KD_DEVICE_CPU ||
		(exec.device == KD_DEVICE_AUTO && !kde_gpu_available(NULL, NULL, 0)))
		return found;
	st = kdam_cache_keep_on_gpu(t, true, &exec, &err);
	if (st != KD_OK && exec.device == KD_DEVICE_GPU)
		kdg_check_status(st, &err, &exec, "index tree upload");
	if (st != KD_OK)
		ereport(NOTICE,
				(errmsg("kdgpu: the tree stays on the CPU: %s", err.message)));
	else if (kdg_service_in_use())
		(void) kdam_ranked_share(t->ranked, &exec, &err);
	return found;
}
