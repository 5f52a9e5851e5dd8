/*
 * kdam_cache.c
 *	  The per-backend cache of loaded index trees.
 *
 * Loading a tree is reading its pages into one allocation; scans then use
 * it in place.  Entries are keyed by the index, its relfilenode (REINDEX and
 * TRUNCATE give a new one) and the metapage's generation (bumped by every
 * change to the tree pages), so a scan never sees a stale tree.  The cache
 * holds up to KDAM_CACHE_SIZE trees and evicts the least recently used.
 * The caller holds a pin on the metapage, which keeps VACUUM from changing
 * the tree pages while they are read.
 *
 * A search touches a few dozen nodes spread over the whole tree, so the
 * tree lives in its own anonymous mapping with transparent huge pages asked
 * for: a tree of a few hundred megabytes then fits the TLB.  The mapping is
 * unmapped when the entry's memory context goes.
 */
#include "postgres.h"

#include <sys/mman.h>

#include "utils/memutils.h"
#include "utils/rel.h"

#include "kdam.h"

#define KDAM_CACHE_SIZE 8

typedef struct KdamCacheEntry
{
	Oid			indexrelid;		/* InvalidOid: unused slot */
	RelFileNode node;
	uint64		generation;
	uint64		last_use;
	MemoryContext cxt;			/* holds tree; deleting it unmaps the data */
	KdamTree   *tree;
} KdamCacheEntry;

static KdamCacheEntry cache[KDAM_CACHE_SIZE];
static uint64 cache_clock = 0;

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

/*
 * The tree of index as the metapage meta describes it, loading it into the
 * cache unless the current version is there already.
 */
KdamTree *
kdam_cache_get(Relation index, const KdamMetaPageData *meta)
{
	KdamCacheEntry *slot = NULL;
	MemoryContext cxt;
	KdamTree   *t;
	MemoryContextCallback *cb;

	for (int i = 0; i < KDAM_CACHE_SIZE; i++)
	{
		KdamCacheEntry *e = &cache[i];

		if (e->indexrelid != RelationGetRelid(index))
			continue;
		if (RelFileNodeEquals(e->node, index->rd_node) &&
			e->generation == meta->generation)
		{
			e->last_use = ++cache_clock;
			return e->tree;
		}
		cache_drop(e);
	}
	for (int i = 0; i < KDAM_CACHE_SIZE; i++)
		if (slot == NULL || cache[i].last_use < slot->last_use)
			slot = &cache[i];
	cache_drop(slot);

	cxt = AllocSetContextCreate(TopMemoryContext, "kdgpu index tree",
								ALLOCSET_SMALL_SIZES);
	t = MemoryContextAllocZero(cxt, sizeof(KdamTree));
	cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));
	cb->func = unmap_tree;
	cb->arg = t;
	MemoryContextRegisterResetCallback(cxt, cb);
	PG_TRY();
	{
		Size		size = kdam_tree_stream_size(meta->ntree, meta->dim, meta->nbounds);

		t->data = map_tree(Max(size, 1));
		t->size = Max(size, 1);
		if (meta->ntree > 0)
			kdam_read_tree_stream(index, meta->tree_head, t->data, size);
		kdam_stream_to_tree(t, meta->ntree, meta->dim, meta->nbounds);
	}
	PG_CATCH();
	{
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();

	slot->indexrelid = RelationGetRelid(index);
	slot->node = index->rd_node;
	slot->generation = meta->generation;
	slot->last_use = ++cache_clock;
	slot->cxt = cxt;
	slot->tree = t;
	return slot->tree;
}

/* Drop the cached tree of an index, if any. */
void
kdam_cache_forget(Oid indexrelid)
{
	for (int i = 0; i < KDAM_CACHE_SIZE; i++)
		if (cache[i].indexrelid == indexrelid)
			cache_drop(&cache[i]);
}
