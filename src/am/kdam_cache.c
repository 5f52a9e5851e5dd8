/*
 * kdam_cache.c
 *	  The per-backend cache of index trees read into memory, for the kd_*
 *	  functions' batched searches (index scans and merges read the
 *	  tree's pages in place and use no cache).
 *
 * Loading a tree is reading its pages into one allocation in the engine's
 * layout (kdam_read_tree).  Entries are keyed by the index, its relfilenode
 * (REINDEX and TRUNCATE give a new one), the tree's id and its dead count:
 * a tree's points and TIDs never change (merges and builds make new trees),
 * and the only change to its pages, VACUUM marking rows dead, is counted in
 * its forest entry.  The cache
 * keeps up to KDAM_CACHE_KEEP trees and evicts the least recently used one
 * that no scan holds; it grows past that only while more trees are pinned
 * (a query over many partitions, say).  Users pin the tree they use
 * (kdam_cache_get) and
 * unpin it when they end (kdam_cache_release), so a tree is never freed
 * under a running search; a superseded tree that is still pinned is marked
 * stale and freed when its last pin goes.  Pins do not outlive the
 * transaction: its end clears them, which also covers scans ended by an
 * error.
 * The caller holds a pin on the metapage, which keeps VACUUM from changing
 * the tree pages while they are read.
 *
 * The kd_* functions search a tree through a copy whose references are
 * ranks (kdam_ranked.c), kept in the same entry.  kd_load asks for that
 * copy's device copy to be kept: the entry is marked, and so is the entry
 * of each later version of the index, whose ranked tree is uploaded when a
 * function first uses it.  Device copies are dropped least recently used first when kdgpu.gpu_memory_limit
 * would be exceeded, and with their entry.
 *
 * A search touches a few dozen nodes spread over the whole tree, so the
 * tree lives in its own anonymous mapping with transparent huge pages asked
 * for: a tree of a few hundred megabytes then fits the TLB.  The mapping is
 * unmapped when the entry's memory context goes.
 */
#include "postgres.h"

#include <sys/mman.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "kdam.h"
#include "service/service.h"
#include "engine/kd_error.h"

#define KDAM_CACHE_KEEP 8

typedef struct KdamCacheEntry
{
	Oid			indexrelid;		/* InvalidOid: unused slot */
	RelFileNode node;
	uint64		tree_id;
	int64		ndead;
	uint64		last_use;
	int			pins;			/* scans using the tree */
	bool		stale;			/* superseded: free when unpinned */
	bool		keep_on_gpu;	/* kd_load: keep the ranked tree's device copy */
	uint64		gpu_use;		/* last use of the device copy */
	MemoryContext cxt;			/* holds tree; deleting it unmaps the data */
	KdamTree   *tree;
} KdamCacheEntry;

static KdamCacheEntry *cache = NULL;	/* cache_size slots, TopMemoryContext */
static int	cache_size = 0;
static uint64 cache_clock = 0;
static bool cache_callback_registered = false;

/* Memory context reset callback: unmap a tree's mapping. */
static void
unmap_tree(void *arg)
{
	KdamTree   *t = arg;

	if (t->data)
		munmap(t->data, t->size);
	t->data = NULL;
}

/* An anonymous mapping of size bytes, on huge pages where the kernel can. */
static char *
map_tree(Size size)
{
	void	   *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
						 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory for a kdgpu index tree of %zu bytes", size)));
#ifdef MADV_HUGEPAGE
	madvise(p, size, MADV_HUGEPAGE);
#endif
	return p;
}

/* Drop a slot's tree. */
static void
cache_drop(KdamCacheEntry *e)
{
	if (e->cxt)
		MemoryContextDelete(e->cxt);
	memset(e, 0, sizeof(*e));
}

/* Evict least recently used unpinned trees until KDAM_CACHE_KEEP remain. */
static void
cache_trim(void)
{
	for (;;)
	{
		KdamCacheEntry *lru = NULL;
		int			loaded = 0;

		for (int i = 0; i < cache_size; i++)
		{
			KdamCacheEntry *e = &cache[i];

			if (e->indexrelid == InvalidOid)
				continue;
			loaded++;
			if (e->pins == 0 && (lru == NULL || e->last_use < lru->last_use))
				lru = e;
		}
		if (loaded <= KDAM_CACHE_KEEP || lru == NULL)
			return;
		cache_drop(lru);
	}
}

/* Transaction end: no scan is left, so no pin is either. */
static void
cache_xact_callback(XactEvent event, void *arg)
{
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT &&
		event != XACT_EVENT_PARALLEL_ABORT && event != XACT_EVENT_PREPARE)
		return;
	for (int i = 0; i < cache_size; i++)
	{
		cache[i].pins = 0;
		if (cache[i].stale)
			cache_drop(&cache[i]);
	}
	cache_trim();
}

/*
 * A free slot for a new tree: an unused one, after evicting the least
 * recently used unpinned tree once KDAM_CACHE_KEEP are loaded, or a new one.
 */
static KdamCacheEntry *
cache_free_slot(void)
{
	KdamCacheEntry *free_slot = NULL;
	KdamCacheEntry *lru = NULL;
	int			loaded = 0;

	for (int i = 0; i < cache_size; i++)
	{
		KdamCacheEntry *e = &cache[i];

		if (e->indexrelid == InvalidOid)
			free_slot = free_slot ? free_slot : e;
		else
		{
			loaded++;
			if (e->pins == 0 && (lru == NULL || e->last_use < lru->last_use))
				lru = e;
		}
	}
	if (loaded >= KDAM_CACHE_KEEP && lru != NULL)
	{
		cache_drop(lru);
		return lru;
	}
	if (free_slot)
		return free_slot;
	cache = cache
		? repalloc(cache, sizeof(KdamCacheEntry) * cache_size * 2)
		: MemoryContextAlloc(TopMemoryContext, sizeof(KdamCacheEntry) * KDAM_CACHE_KEEP);
	free_slot = &cache[cache_size];
	cache_size = cache_size ? cache_size * 2 : KDAM_CACHE_KEEP;
	memset(free_slot, 0, sizeof(KdamCacheEntry) * (cache + cache_size - free_slot));
	return free_slot;
}

/*
 * Error unless the index is still at meta's generation (on a hot standby).
 * On a primary the caller's pin on the metapage keeps VACUUM from changing
 * the tree while it is read; on a hot standby, replay takes no cleanup
 * lock, so a VACUUM replayed meanwhile could have changed the pages read.
 */
static void
check_unchanged(Relation index, const KdamMetaPageData *meta)
{
	Buffer		buf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	uint64		generation;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	generation = kdam_metapage(index, BufferGetPage(buf))->generation;
	UnlockReleaseBuffer(buf);
	if (generation != meta->generation)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("index \"%s\" changed while its tree was being read",
						RelationGetRelationName(index)),
				 errhint("Retry the query; this happens on a standby replaying VACUUM of the index.")));
}

/*
 * The tree of index that its forest entry describes, pinned for the caller,
 * loading it into the cache unless it is there.  The kd_* functions use one
 * tree of an index (the largest), so the cache holds one tree per index.
 */
KdamTree *
kdam_cache_get(Relation index, const KdamMetaPageData *meta,
			   const KdamTreeEntry *entry)
{
	KdamCacheEntry *slot = NULL;
	MemoryContext cxt;
	KdamTree   *t;
	MemoryContextCallback *cb;
	bool		keep_on_gpu = false;

	if (!cache_callback_registered)
	{
		RegisterXactCallback(cache_xact_callback, NULL);
		cache_callback_registered = true;
	}
	for (int i = 0; i < cache_size; i++)
	{
		KdamCacheEntry *e = &cache[i];

		if (e->indexrelid != RelationGetRelid(index) || e->stale)
			continue;
		if (RelFileNodeEquals(e->node, index->rd_node) &&
			e->tree_id == entry->tree_id && e->ndead == entry->ndead)
		{
			e->last_use = ++cache_clock;
			e->pins++;
			return e->tree;
		}
		keep_on_gpu |= e->keep_on_gpu;
		if (e->pins == 0)
			cache_drop(e);
		else
			e->stale = true;
	}
	cxt = AllocSetContextCreate(TopMemoryContext, "kdgpu index tree",
								ALLOCSET_SMALL_SIZES);
	t = MemoryContextAllocZero(cxt, sizeof(KdamTree));
	cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));
	cb->func = unmap_tree;
	cb->arg = t;
	MemoryContextRegisterResetCallback(cxt, cb);
	PG_TRY();
	{
		Size		size = kdam_tree_stream_size(meta, entry);

		t->data = map_tree(Max(size, 1));
		t->size = Max(size, 1);
		if (entry->n > 0)
			kdam_read_tree(index, meta, entry, t->data);
		kdam_stream_to_tree(t, meta, entry);
		kdg_service_key_of_index(t->tree.key, RelationGetRelid(index),
								 index->rd_node.relNode, entry->tree_id,
								 entry->ndead, KDG_KEY_TREE);
		t->ndead = entry->ndead;
		if (RecoveryInProgress())
			check_unchanged(index, meta);
	}
	PG_CATCH();
	{
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();

	slot = cache_free_slot();
	slot->indexrelid = RelationGetRelid(index);
	slot->node = index->rd_node;
	slot->tree_id = entry->tree_id;
	slot->ndead = entry->ndead;
	slot->last_use = ++cache_clock;
	slot->pins = 1;
	slot->keep_on_gpu = keep_on_gpu;
	slot->cxt = cxt;
	slot->tree = t;
	return slot->tree;
}

/* Unpin a tree kdam_cache_get returned. */
void
kdam_cache_release(KdamTree *tree)
{
	for (int i = 0; i < cache_size; i++)
	{
		KdamCacheEntry *e = &cache[i];

		if (e->tree != tree || e->pins == 0)
			continue;
		if (--e->pins == 0 && e->stale)
			cache_drop(e);
		cache_trim();
		return;
	}
}

/* Drop the cached trees of an index, once no scan holds them. */
void
kdam_cache_forget(Oid indexrelid)
{
	for (int i = 0; i < cache_size; i++)
		if (cache[i].indexrelid == indexrelid)
		{
			if (cache[i].pins == 0)
				cache_drop(&cache[i]);
			else
				cache[i].stale = true;
		}
}

/* The entry holding tree. */
static KdamCacheEntry *
cache_entry_of(KdamTree *tree)
{
	for (int i = 0; i < cache_size; i++)
		if (cache[i].tree == tree)
			return &cache[i];
	elog(ERROR, "kdgpu index tree is not in the cache");
	return NULL;
}

/* Device bytes held by views other than except's. */
static Size
gpu_bytes_held(KdamCacheEntry *except)
{
	Size		held = 0;

	for (int i = 0; i < cache_size; i++)
	{
		KdamCacheEntry *e = &cache[i];

		if (e != except && e->tree && e->tree->ranked && e->tree->ranked->tree.gpu)
			held += kdam_ranked_gpu_bytes(e->tree->ranked);
	}
	return held;
}

/*
 * Give a tree's ranked tree (made already) a device copy when kd_load has
 * asked for one to be kept, or keep is true (kd_load itself).  Other views'
 * copies are dropped, least recently used first, until all fit in
 * exec->gpu_memory_limit (when set).
 */
KdStatus
kdam_cache_keep_on_gpu(KdamTree *tree, bool keep, KdExec *exec, KdError *err)
{
	KdamCacheEntry *e = cache_entry_of(tree);
	KdamRankedTree   *ranked = tree->ranked;
	Size		need = kdam_ranked_gpu_bytes(ranked);

	e->keep_on_gpu |= keep;
	if (!e->keep_on_gpu)
		return KD_OK;
	e->gpu_use = ++cache_clock;
	if (ranked->tree.gpu)
		return KD_OK;
	if (exec->gpu_memory_limit > 0 && need > (Size) exec->gpu_memory_limit)
		return kde_set_error(err, KD_ERR_GPU_NOMEM, -1,
							"the tree needs %zu MB of device memory, more than kdgpu.gpu_memory_limit",
							need / (1024 * 1024) + 1);
	while (exec->gpu_memory_limit > 0 &&
		   gpu_bytes_held(e) + need > (Size) exec->gpu_memory_limit)
	{
		KdamCacheEntry *lru = NULL;

		for (int i = 0; i < cache_size; i++)
		{
			KdamCacheEntry *o = &cache[i];

			if (o != e && o->tree && o->tree->ranked && o->tree->ranked->tree.gpu &&
				(lru == NULL || o->gpu_use < lru->gpu_use))
				lru = o;
		}
		kde_gpu_release(&lru->tree->ranked->tree);
	}
	return kde_gpu_upload(&ranked->tree, exec, err);
}

/*
 * After VACUUM changed index: when the GPU service holds a copy of one of
 * its trees but not of the tree the kd_* functions would now search (a new
 * one, or one with more rows marked dead), read that tree and give the
 * service its copy and rows, so that their next call finds it.  VACUUM
 * runs this, in autovacuum in the background; a failure only leaves the
 * upload to the next call.
 */
void
kdam_cache_refresh_service(Relation index)
{
	Buffer		metabuf;
	KdamMetaPageData meta;
	KdamTreeEntry entry;
	uint64		key[4];
	KdamTree   *t = NULL;
	KdExec		exec;
	KdError		err;

	if (!kdg_service_serving() ||
		!kdg_service_holds_index(MyDatabaseId, RelationGetRelid(index)))
		return;
	if (kdam_largest_tree(index, &metabuf, &meta, &entry) && meta.dim > 0)
	{
		kdg_service_key_of_index(key, RelationGetRelid(index), index->rd_node.relNode,
								 entry.tree_id, entry.ndead, KDG_KEY_RANKED);
		if (!kdg_service_holds(key))
			t = kdam_cache_get(index, &meta, &entry);
	}
	ReleaseBuffer(metabuf);
	if (t == NULL)
		return;
	kdg_exec_prepare(&exec);
	if (kdam_ranked_get(t) != NULL && kdam_ranked_share(t->ranked, &exec, &err) == KD_OK)
		elog(DEBUG1, "kdgpu: VACUUM gave the GPU service the new tree of index \"%s\"",
			 RelationGetRelationName(index));
	kdam_cache_release(t);
}

/* kd_unload: stop keeping an index's trees on the GPU; whether one was. */
bool
kdam_cache_gpu_forget(Oid indexrelid)
{
	bool		found = false;

	for (int i = 0; i < cache_size; i++)
	{
		KdamCacheEntry *e = &cache[i];

		if (e->indexrelid != indexrelid)
			continue;
		found |= e->keep_on_gpu;
		e->keep_on_gpu = false;
		if (e->tree->ranked)
			kde_gpu_release(&e->tree->ranked->tree);
	}
	return found;
}

/* Trees cached in this backend, how many have a device copy, its bytes. */
void
kdam_cache_usage(int *trees, int *on_gpu, Size *gpu_bytes)
{
	*trees = 0;
	*on_gpu = 0;
	*gpu_bytes = gpu_bytes_held(NULL);
	for (int i = 0; i < cache_size; i++)
	{
		KdamCacheEntry *e = &cache[i];

		if (e->indexrelid == InvalidOid)
			continue;
		(*trees)++;
		if (e->tree->ranked && e->tree->ranked->tree.gpu)
			(*on_gpu)++;
	}
}
