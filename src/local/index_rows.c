/*
 * index_rows.c
 *	  A backend's copies of the live rows of kdgpu indexes' trees, and the
 *	  tree over each, for the kd_* functions that take their rows from an
 *	  index (index_source.c); kdvec indexes' copies, with their own tree,
 *	  are kept among them (vector_source.c).
 *
 * A copy holds the live rows of every tree of an index at one version (the
 * metapage's generation, bumped by every merge and every VACUUM that marks
 * rows dead) in TID order, and is read once per version: whether the index
 * is one tree or a forest, the functions search one tree, built over the
 * copy on first use and named by the index and its generation, so that the
 * GPU service keeps one device copy of it for every session.  A backend
 * keeps KDG_INDEX_ROWS_CACHE copies; a copy a call of this transaction uses
 * is pinned, and one of an older version is dropped once unpinned (at the
 * end of the transaction).
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "am/kdam.h"
#include "local/local.h"
#include "service/service.h"

/* copies of indexes' rows a backend keeps */
#define KDG_INDEX_ROWS_CACHE	4

static KdgIndexRows *rows_cache[KDG_INDEX_ROWS_CACHE];
static uint64 rows_clock;
static bool rows_callback_registered;

/* Drop every unpinned stale copy, and unpin all at the end of a transaction. */
static void
rows_xact_callback(XactEvent event, void *arg)
{
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	for (int i = 0; i < KDG_INDEX_ROWS_CACHE; i++)
	{
		KdgIndexRows *r = rows_cache[i];

		if (r == NULL)
			continue;
		r->pins = 0;
		if (r->stale)
		{
			MemoryContextDelete(r->cxt);
			rows_cache[i] = NULL;
		}
	}
}

/* Reset callback: free a copy's trees' device copies. */
static void
rows_release_gpu(void *arg)
{
	KdgIndexRows *r = arg;

	if (r->tree)
		kde_gpu_release(r->tree);
	if (r->vp_tree)
		kde_gpu_vp_release(r->vp_tree);
}

/*
 * A new copy of index's rows at generation for src, empty, in a memory
 * context of its own (r->cxt) whose reset frees its trees' device copies;
 * the caller fills it there, and deletes r->cxt if that fails.
 */
KdgIndexRows *
kdg_index_rows_new(Relation index, uint64 generation, const KdSource *src)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext,
											  "kdgpu index rows",
											  ALLOCSET_SMALL_SIZES);
	KdgIndexRows *r = MemoryContextAllocZero(cxt, sizeof(KdgIndexRows));
	MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

	r->indexrelid = RelationGetRelid(index);
	r->node = index->rd_node;
	r->generation = generation;
	r->keyattnum = src->keyattnum;
	r->cxt = cxt;
	strlcpy(r->indexname, RelationGetRelationName(index), NAMEDATALEN);
	cb->func = rows_release_gpu;
	cb->arg = r;
	MemoryContextRegisterResetCallback(cxt, cb);
	return r;
}

/*
 * The kept copy of index's rows at its metapage's generation, or NULL;
 * copies of older versions are dropped (or, while a call uses them,
 * dropped at the end of the transaction).
 */
KdgIndexRows *
kdg_index_rows_find(Relation index, uint64 generation, const KdSource *src)
{
	KdgIndexRows *found = NULL;

	for (int i = 0; i < KDG_INDEX_ROWS_CACHE; i++)
	{
		KdgIndexRows *r = rows_cache[i];

		if (r == NULL || r->indexrelid != RelationGetRelid(index) || r->stale)
			continue;
		if (RelFileNodeEquals(r->node, index->rd_node) &&
			r->generation == generation)
		{
			if (r->keyattnum == src->keyattnum)
				found = r;
			continue;
		}
		if (r->pins > 0)
			r->stale = true;
		else
		{
			MemoryContextDelete(r->cxt);
			rows_cache[i] = NULL;
		}
	}
	return found;
}

/* Keep r, in place of the least recently used unpinned copy. */
void
kdg_index_rows_keep(KdgIndexRows *r)
{
	int			slot = -1;

	if (!rows_callback_registered)
	{
		RegisterXactCallback(rows_xact_callback, NULL);
		rows_callback_registered = true;
	}
	for (int i = 0; i < KDG_INDEX_ROWS_CACHE; i++)
	{
		if (rows_cache[i] == NULL)
		{
			slot = i;
			break;
		}
		if (rows_cache[i]->pins == 0 &&
			(slot < 0 || rows_cache[i]->last_use < rows_cache[slot]->last_use))
			slot = i;
	}
	if (slot < 0)
		elog(ERROR, "kdgpu: every kept copy of an index's rows is in use");
	if (rows_cache[slot])
		MemoryContextDelete(rows_cache[slot]->cxt);
	rows_cache[slot] = r;
}

/*
 * Read the key of every row of the copy from the table (src names the
 * column), page by page: the key of a HOT chain's rows is one, since the
 * column has a unique index and HOT never changes an indexed column.  A
 * row whose root leads to no tuple (dead and pruned) has no key: it is
 * visible to no snapshot, and its page is not all-visible while the index
 * holds it.
 */
static void
rows_read_keys(KdgIndexRows *r, const KdSource *src)
{
	Relation	heap = table_open(src->relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(heap);
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	int			stride = r->dim + 1;
	int64		i = 0;

	r->keys = palloc_extended(sizeof(uint64) * Max(r->n, 1), MCXT_ALLOC_HUGE);
	while (i < r->n)
	{
		BlockNumber block = (BlockNumber) (r->rows[i * stride + r->dim].tid >> 16);
		Buffer		buf = ReadBufferExtended(heap, MAIN_FORKNUM, block, RBM_NORMAL,
											 strategy);
		Page		page;

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		for (; i < r->n && (r->rows[i * stride + r->dim].tid >> 16) == block; i++)
		{
			OffsetNumber root = (OffsetNumber) (r->rows[i * stride + r->dim].tid & 0xFFFF);

			if (!kdg_root_key(page, root, src, desc, &r->keys[i]))
			{
				if (r->nokey == NULL)
					r->nokey = palloc_extended(sizeof(bool) * r->n,
											   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
				r->nokey[i] = true;
				r->keys[i] = 0;
			}
		}
		UnlockReleaseBuffer(buf);
	}
	FreeAccessStrategy(strategy);
	table_close(heap, NoLock);
}

/*
 * Read the live rows of index's trees at meta's generation, as forest
 * lists them, into a new copy (the caller holds the metapage's pin), with
 * their keys when src has a key column.
 */
KdgIndexRows *
kdg_index_rows_read(Relation index, const KdamMetaPageData *meta,
					const KdamForest *forest, const KdSource *src)
{
	KdgIndexRows *r = kdg_index_rows_new(index, meta->generation, src);
	MemoryContext old = MemoryContextSwitchTo(r->cxt);
	KdamLiveRows live;

	PG_TRY();
	{
		kdam_read_live_rows(index, meta, forest, &live);
		r->rows = live.rows;
		r->n = live.n;
		r->dim = meta->dim;
		if (src->keyattnum != InvalidAttrNumber)
			rows_read_keys(r, src);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(r->cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	return r;
}

/* How many copies of indexes' rows this backend keeps, and their rows. */
void
kdg_index_rows_usage(int *copies, int64 *rows, int64 *kept)
{
	*copies = 0;
	*rows = 0;
	*kept = 0;
	for (int i = 0; i < KDG_INDEX_ROWS_CACHE; i++)
		if (rows_cache[i] && !rows_cache[i]->stale)
		{
			KdgChanged *c = rows_cache[i]->changed;

			(*copies)++;
			*rows += rows_cache[i]->n;
			if (c && c->diff)
				*kept += c->n;
		}
}

/* Pin a copy for a call of this transaction, and note its use. */
void
kdg_index_rows_pin(KdgIndexRows *r)
{
	r->pins++;
	r->last_use = ++rows_clock;
}

/*
 * The copy's tree, built over its rows on first use (references are the
 * copy's ordinals) where the engine chooses, and kept; it is named by the
 * index and its generation, so that the GPU service keeps one device copy
 * for every session.
 */
static KdTree *
rows_tree(KdgIndexRows *r)
{
	KdSource	view;
	MemoryContext old;
	bool		used_gpu;

	if (r->tree || r->n == 0)
		return r->tree;
	memset(&view, 0, sizeof(view));
	view.n = r->n;
	view.dim = r->dim;
	view.stride = r->dim + 1;
	view.rows = r->rows;
	old = MemoryContextSwitchTo(r->cxt);
	r->tree = kdg_build_tree(&view, &used_gpu);
	MemoryContextSwitchTo(old);
	/* the build's own device copy is this backend's: the named one replaces it */
	kde_gpu_release(r->tree);
	kdg_service_key_of_index(r->tree->key, r->indexrelid, r->node.relNode,
							 r->generation, 0, KDG_KEY_ROWS);
	return r->tree;
}

/*
 * The tree to search for a source whose rows were taken from an index, for
 * work of that many items: the copy's tree, as it is when the source's rows
 * are the copy's, else beside the difference (tree_delta.c) when it is
 * within the limits (but for All-kNN, where a build costs less); else one
 * built over the source's rows.  Work for the GPU keeps the copy's device
 * copy.
 */
KdgTree *
kdg_index_source_tree(const KdSource *src, int64 work, bool all_knn)
{
	KdgIndexRows *r = src->index_rows;
	KdTree	   *tree = NULL;
	bool		used_gpu;

	if (src->n == 0)
		return kdg_tree_plain(NULL);
	if (src->rows == r->rows || !all_knn)
		tree = rows_tree(r);
	if (tree && kdg_gpu_wanted(work))
	{
		KdExec		exec;
		KdError		err;

		kdg_exec_prepare(&exec);
		if (exec.device != KD_DEVICE_CPU && kde_gpu_upload(tree, &exec, &err) != KD_OK)
			elog(DEBUG1, "kdgpu: index rows' tree not uploaded: %s", err.message);
	}
	elog(DEBUG1, "kdgpu: searching the tree of the rows of index \"%s\"%s%s",
		 r->indexname, tree && tree->gpu ? ", on its device copy" : "",
		 src->rows == r->rows ? "" : ", beside the rows changed since");
	if (src->rows == r->rows)
		return kdg_tree_plain(tree);
	if (tree)
	{
		int64		maxdiff = kdg_delta_max(src->n);
		const KdgDiff *diff = src->index_diff;
		KdgChanged *kept = src->index_changed;
		MemoryContext old;

		if (diff->ngone > maxdiff || diff->nadded > maxdiff)
			return kdg_tree_plain(kdg_build_tree(src, &used_gpu));
		if (kept == NULL)
			return kdg_tree_delta(src, tree, diff);
		/* rows kept across calls keep the tree searched beside them */
		if (kept->delta == NULL)
		{
			old = MemoryContextSwitchTo(kept->cxt);
			kept->delta = kdg_tree_delta(src, tree, diff);
			MemoryContextSwitchTo(old);
		}
		kdg_changed_use_delta(kept);
		return kept->delta;
	}
	return kdg_tree_plain(kdg_build_tree(src, &used_gpu));
}
