/*
 * kdam_ranked.c
 *	  An index tree with ranks for references, through which the kd_*
 *	  functions search a kdgpu index's tree instead of building one.
 *
 * The functions give the engine each row's ordinal (its rank in ctid order
 * among the rows they read) as its reference, so that ties break by ctid
 * and an answer leads straight to the row (search.c).  An index tree's
 * references are packed heap TIDs instead.  The ranked tree shares the
 * tree's coordinates, split dimensions and bounds, and replaces its
 * references by their ranks; tids lists the tree's TIDs in rank order, so
 * that a function can check in one pass that the tree holds exactly the
 * rows it read, in which case ranks and ordinals coincide.
 *
 * Ranks come from a sort of (TID, node) pairs by TID (kdam_tid_sort.c).
 * Rows VACUUM has marked dead have lost their TIDs: they rank after every
 * other row, listed with KDAM_NO_TID, which no row read has, so that a
 * function counts them among the rows it does not hold (tree_delta.c).  The ranked tree lives in the cache entry of its tree (it
 * goes with it), and so does its device copy once kd_load has put one
 * there.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "kdam.h"
#include "service/service.h"

/* Reset callback: free a ranked tree's device copy. */
static void
release_view_gpu(void *arg)
{
	kde_gpu_release(&((KdamRankedTree *) arg)->tree);
}

/*
 * The ranked tree of a cached tree, made on first use; NULL when the tree
 * does not hold as many dead references as its forest entry counted when
 * it was read (VACUUM was marking rows meanwhile).
 */
KdamRankedTree *
kdam_ranked_get(KdamTree *t)
{
	MemoryContext cxt = GetMemoryChunkContext(t);
	const KdTree *tree = &t->tree;
	KdamRankedTree *ranked;
	KdamTidNode *pairs;
	KdamTidNode *tmp;
	MemoryContextCallback *cb;
	int64		ndead = 0;
	int64		nlive;

	if (t->ranked)
		return t->ranked;
	for (int64 i = 0; i < tree->n; i++)
		if (tree->refs[i] == KDAM_DEAD_REF)
			ndead++;
	if (ndead != t->ndead)
		return NULL;
	nlive = tree->n - ndead;

	ranked = MemoryContextAllocZero(cxt, sizeof(KdamRankedTree));
	ranked->tree = *tree;
	kdg_service_key_set_flavour(ranked->tree.key, KDG_KEY_RANKED);
	ranked->tree.owned = false;
	ranked->tree.gpu = NULL;
	ranked->tree.refs = MemoryContextAllocHuge(cxt, sizeof(uint64) * Max(tree->n, 1));
	ranked->tids = MemoryContextAllocHuge(cxt, sizeof(uint64) * Max(tree->n, 1));
	pairs = palloc_extended(sizeof(KdamTidNode) * Max(tree->n, 1), MCXT_ALLOC_HUGE);
	tmp = palloc_extended(sizeof(KdamTidNode) * Max(tree->n, 1), MCXT_ALLOC_HUGE);
	for (int64 i = 0, live = 0, dead = nlive; i < tree->n; i++)
	{
		if (tree->refs[i] == KDAM_DEAD_REF)
		{
			ranked->tids[dead] = KDAM_NO_TID;
			ranked->tree.refs[i] = dead++;
			continue;
		}
		pairs[live].tid = tree->refs[i];
		pairs[live].node = i;
		live++;
	}
	kdam_sort_tid_nodes(pairs, tmp, nlive);
	for (int64 i = 0; i < nlive; i++)
	{
		ranked->tids[i] = pairs[i].tid;
		ranked->tree.refs[pairs[i].node] = i;
	}
	pfree(tmp);
	pfree(pairs);

	cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));
	cb->func = release_view_gpu;
	cb->arg = ranked;
	MemoryContextRegisterResetCallback(cxt, cb);
	t->ranked = ranked;
	return ranked;
}

/*
 * Upload a ranked tree's copy (unless it has one) and give the GPU service
 * its rows and references, so that calls from any session find it by its
 * rows (index_tree.c).
 */
KdStatus
kdam_ranked_share(KdamRankedTree *ranked, KdExec *exec, KdError *err)
{
	KdStatus	st = kde_gpu_upload(&ranked->tree, exec, err);

	if (st == KD_OK)
		kdg_service_give_rows(ranked->tree.gpu, ranked->tids, ranked->tree.refs,
							  NULL, ranked->tree.n);
	return st;
}

/* Bytes of device memory a ranked tree's tree takes. */
Size
kdam_ranked_gpu_bytes(const KdamRankedTree *ranked)
{
	const KdTree *t = &ranked->tree;

	return (Size) kde_tree_bytes(t->n, t->dim, t->nbounds);
}
