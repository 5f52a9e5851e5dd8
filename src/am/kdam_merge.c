/*
 * kdam_merge.c
 *	  Turning pending rows into trees and merging trees: the logarithmic
 *	  method of the Bkd-tree, which keeps the forest to a few trees per
 *	  size class while rows are inserted.
 *
 * When an insert lane reaches KDAM_LANE_ROWS records, the inserter that
 * made it so (or VACUUM, for whatever is pending) flushes: it seals the
 * lanes (moves their chains to the metapage's sealed chain, so that inserts
 * start new ones, kdam_lanes.c), builds a tree of the sealed records, and
 * adds the tree to the forest.  Then, while two live trees are of the same
 * size class (floor(log2(n / KDAM_LANE_ROWS))) and their points fit in the
 * memory given, it merges them: it builds one tree of their live points
 * and retires the two.  A retired tree's pages stay as they are, for the
 * scans that started before, until VACUUM frees them (kdam_drop_retired,
 * kdam_free_trees).  Trees never change: every step writes new pages, and
 * a short exclusive lock on the metapage switches the forest to them, so
 * scans and inserts wait for no more than that switch.
 *
 * Two work locks, heavyweight locks on block numbers (not buffers), which
 * inserters only try for and VACUUM waits for: one process at a time
 * flushes (KDAM_FLUSH_LOCK), one merges (KDAM_MERGE_LOCK), so a long merge
 * never holds back the flushes that keep the lanes short.  A flush adds a
 * tree and a merge retires only trees it read, so the two commute; VACUUM
 * takes both, so nothing copies a tree while it marks dead rows.  New
 * pages are unreachable until the switch, so each writer counts itself in
 * the metapage's orphans mark before it writes them: after a crash or an
 * error VACUUM finds and frees them.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "kdam.h"

/* A tree's size class. */
static int
size_class(int64 n)
{
	int			c = 0;

	while (n >= 2 * KDAM_LANE_ROWS)
	{
		n /= 2;
		c++;
	}
	return c;
}

/* Points (with payload) to be built into one tree. */
typedef struct MergeInput
{
	int64		n;
	int64		cap;
	double	   *coords;
	uint64	   *refs;
	uint64	   *payload;
} MergeInput;

static void
input_alloc(MergeInput *in, int64 cap, int dim, int words)
{
	in->n = 0;
	in->cap = Max(cap, 1);
	in->coords = palloc_extended(sizeof(double) * dim * in->cap, MCXT_ALLOC_HUGE);
	in->refs = palloc_extended(sizeof(uint64) * in->cap, MCXT_ALLOC_HUGE);
	in->payload = palloc_extended(sizeof(uint64) * Max(words, 1) * in->cap,
								  MCXT_ALLOC_HUGE);
}

/* Add a tree's live points to the input. */
static void
input_add_tree(Relation index, const KdamMetaPageData *meta,
			   const KdamTreeEntry *entry, MergeInput *in)
{
	KdamTree	t;
	int			dim = meta->dim;
	int			words = meta->payload_words;

	kdam_load_tree(index, meta, entry, &t);
	for (int64 i = 0; i < t.tree.n; i++)
		if (t.tree.refs[i] != KDAM_DEAD_REF && in->n < in->cap)
		{
			memcpy(in->coords + in->n * dim, t.tree.coords + i * dim,
				   sizeof(double) * dim);
			memcpy(in->payload + in->n * words, t.payload + i * words,
				   sizeof(uint64) * words);
			in->refs[in->n++] = t.tree.refs[i];
		}
	pfree(t.data);
}

/*
 * In a metapage being changed (registered in a Generic WAL record), count
 * one more writer of new pages in the orphans mark (a tree's pages are
 * about to be written) and take the tree's tree_id.
 */
static void
start_tree(KdamMetaPage meta, uint64 *tree_id)
{
	meta->orphans++;
	*tree_id = meta->next_tree_id++;
}

/*
 * Switch the forest, under an exclusive lock on the metapage: move the
 * trees of the given ids to the retired list, add the new tree (unless its
 * n is 0), drop the sealed chain (flushed) and count one writer less in
 * the orphans mark.  The trees to retire are live: only the holder of the
 * merge lock retires trees or marks their rows dead.  The old list's
 * pages, and a flushed chain, are freed.
 */
static void
switch_forest(Relation index, const uint64 *retire, int nretire,
			  const KdamTreeEntry *added, bool flushed)
{
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	Buffer		tailbuf = InvalidBuffer;
	KdamMetaPage meta;
	KdamMetaPageData old;
	KdamForest	forest;
	KdamForest	live = {0, NULL};
	KdamForest	gone = {0, NULL};
	GenericXLogState *state;
	BlockNumber head,
				rhead,
				rtail;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	old = *kdam_metapage(index, BufferGetPage(metabuf));
	kdam_forest_read(index, &old, &forest);
	for (int i = 0; i < forest.n; i++)
	{
		KdamTreeEntry *e = &forest.trees[i];
		bool		retiring = false;

		for (int r = 0; r < nretire; r++)
			retiring |= e->tree_id == retire[r];
		if (retiring)
		{
			old.ntree -= e->n;
			old.ndead -= e->ndead;
		}
		kdam_forest_add(retiring ? &gone : &live, e);
	}
	if (gone.n != nretire)
		elog(ERROR, "index \"%s\": a tree being merged left the forest",
			 RelationGetRelationName(index));
	if (added->n > 0)
	{
		kdam_forest_add(&live, added);
		old.ntree += added->n;
	}
	head = kdam_forest_write(index, &live, true, NULL);
	rhead = kdam_forest_write(index, &gone, true, &rtail);

	state = GenericXLogStart(index);
	meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	meta->forest_head = head;
	meta->ntrees = live.n;
	meta->ntree = old.ntree;
	meta->ndead = old.ndead;
	if (rhead != InvalidBlockNumber)
	{
		if (old.retired_tail != InvalidBlockNumber)
		{
			tailbuf = ReadBuffer(index, old.retired_tail);
			LockBuffer(tailbuf, BUFFER_LOCK_EXCLUSIVE);
			KdamPageGetOpaque(GenericXLogRegisterBuffer(state, tailbuf, 0))->next = rhead;
		}
		else
			meta->retired_head = rhead;
		meta->retired_tail = rtail;
		meta->nretired += gone.n;
	}
	if (flushed)
	{
		meta->flush_head = InvalidBlockNumber;
		meta->flush_tail = InvalidBlockNumber;
		meta->nflush = 0;
	}
	meta->orphans = Max(meta->orphans - 1, 0);
	meta->generation++;
	GenericXLogFinish(state);
	if (BufferIsValid(tailbuf))
		UnlockReleaseBuffer(tailbuf);

	kdam_free_chain(index, old.forest_head);
	if (flushed)
		kdam_free_chain(index, old.flush_head);
	UnlockReleaseBuffer(metabuf);
}

/*
 * Build and write a tree named tree_id of n points (none: no tree) and
 * switch the forest to it (switch_forest).
 */
static void
install_tree(Relation index, const KdamMetaPageData *m, uint64 tree_id,
			 const double *coords, const uint64 *refs, const uint64 *payload,
			 int64 n, const uint64 *retire, int nretire, bool flushed)
{
	KdamTreeEntry entry;

	memset(&entry, 0, sizeof(entry));
	if (n > 0)
		kdam_write_new_tree(index, coords, refs, payload, m->payload_words, n,
							m->dim, false, tree_id, &entry);
	switch_forest(index, retire, nretire, &entry, flushed);
}

/*
 * Seal the lanes (or take the records sealed by a flush that failed) and
 * turn the sealed records into a tree of the forest; false when none were
 * pending.  The caller holds the flush lock, so the sealed chain is its own.
 */
static bool
flush_once(Relation index)
{
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	KdamMetaPage meta;
	KdamMetaPageData m;
	GenericXLogState *state;
	KdamPending recs;
	uint64		tree_id;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	meta = kdam_metapage(index, BufferGetPage(metabuf));
	if (meta->flush_head == InvalidBlockNumber)
		kdam_lanes_seal(index, metabuf);
	if (meta->flush_head == InvalidBlockNumber)
	{
		UnlockReleaseBuffer(metabuf);
		return false;
	}
	state = GenericXLogStart(index);
	meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	start_tree(meta, &tree_id);
	m = *meta;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);

	kdam_read_records(index, m.flush_head, m.dim, m.payload_words, m.nflush,
					  &recs);
	install_tree(index, &m, tree_id, recs.coords, recs.refs, recs.payload,
				 recs.n, NULL, 0, true);
	return true;
}

/*
 * Replace the given live trees of the forest (read as meta m) by one tree
 * of their live points.  The caller holds the merge lock.
 */
static void
replace_trees(Relation index, const KdamMetaPageData *m,
			  const KdamTreeEntry *trees, int count)
{
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	MergeInput	in;
	uint64	   *retire = palloc(sizeof(uint64) * count);
	uint64		tree_id;
	int64		total = 0;
	GenericXLogState *state;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	start_tree(KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0)),
			   &tree_id);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);

	for (int i = 0; i < count; i++)
		total += trees[i].n;
	input_alloc(&in, total, m->dim, m->payload_words);
	for (int i = 0; i < count; i++)
	{
		input_add_tree(index, m, &trees[i], &in);
		retire[i] = trees[i].tree_id;
	}
	install_tree(index, m, tree_id, in.coords, in.refs, in.payload, in.n,
				 retire, count, false);
}

/*
 * Merge the two smallest live trees of the smallest size class that has
 * two, when their points fit in mem bytes; false when no two qualify.
 */
static bool
merge_once(Relation index, Size mem)
{
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	KdamMetaPageData m;
	KdamForest	forest;
	KdamTreeEntry pair[2];
	int			a = -1,
				b = -1;

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	m = *kdam_metapage(index, BufferGetPage(metabuf));
	kdam_forest_read(index, &m, &forest);
	UnlockReleaseBuffer(metabuf);
	for (int i = 0; i < forest.n; i++)
	{
		const KdamTreeEntry *e = &forest.trees[i];

		for (int j = i + 1; j < forest.n; j++)
		{
			const KdamTreeEntry *f = &forest.trees[j];
			int64		n = e->n + f->n - e->ndead - f->ndead;

			if (size_class(e->n) != size_class(f->n) ||
				kdam_build_memory(n, m.dim, m.payload_words) +
				kdam_tree_stream_size(&m, e) + kdam_tree_stream_size(&m, f) > mem)
				continue;
			if (a < 0 || e->n + f->n < forest.trees[a].n + forest.trees[b].n)
			{
				a = i;
				b = j;
			}
		}
	}
	if (a < 0)
		return false;
	pair[0] = forest.trees[a];
	pair[1] = forest.trees[b];
	replace_trees(index, &m, pair, 2);
	return true;
}

/*
 * Replace live trees (of the forest read as meta m) by one tree of their
 * live points.  The caller holds the merge lock.
 */
void
kdam_rebuild_trees(Relation index, const KdamMetaPageData *m,
				   const KdamTreeEntry *trees, int count)
{
	replace_trees(index, m, trees, count);
}

/*
 * Take one of the index's work locks (KDAM_MERGE_LOCK, KDAM_FLUSH_LOCK):
 * with wait, wait for it (VACUUM); without, false when another holds it
 * (an insert).
 */
bool
kdam_work_lock(Relation index, BlockNumber which, bool wait)
{
	if (wait)
	{
		LockPage(index, which, ExclusiveLock);
		return true;
	}
	return ConditionalLockPage(index, which, ExclusiveLock);
}

/* Let a lock kdam_work_lock took go. */
void
kdam_work_unlock(Relation index, BlockNumber which)
{
	UnlockPage(index, which, ExclusiveLock);
}

/*
 * Turn the pending rows into a tree.  The caller holds the flush lock.
 */
void
kdam_flush(Relation index)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "kdgpu flush",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);

	flush_once(index);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/*
 * Merge trees of like size while two qualify, using at most mem bytes for
 * a merge.  The caller holds the merge lock.
 */
void
kdam_merge(Relation index, Size mem)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "kdgpu merge",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);

	while (merge_once(index, mem))
	{
		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(cxt);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/*
 * Empty the list of retired trees, putting them in retired for
 * kdam_free_trees; metabuf is the metapage, locked for cleanup, so no scan
 * that could read them is in flight, and none started later will.  Their
 * pages count in the orphans mark until kdam_free_trees has freed them.
 * The caller holds the merge lock.
 */
void
kdam_drop_retired(Relation index, Buffer metabuf, KdamForest *retired)
{
	KdamMetaPageData m = *KdamPageGetMeta(BufferGetPage(metabuf));
	GenericXLogState *state;
	KdamMetaPage meta;

	kdam_retired_read(index, &m, retired);
	if (m.retired_head == InvalidBlockNumber)
		return;
	state = GenericXLogStart(index);
	meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	meta->retired_head = InvalidBlockNumber;
	meta->retired_tail = InvalidBlockNumber;
	meta->nretired = 0;
	meta->orphans++;
	GenericXLogFinish(state);
	kdam_free_chain(index, m.retired_head);
}

/*
 * Free the pages of the trees kdam_drop_retired dropped, with no lock on
 * the metapage (nothing reaches them), then count them out of the orphans
 * mark: after a crash before, the next VACUUM finds them.
 */
void
kdam_free_trees(Relation index, const KdamForest *retired)
{
	Buffer		metabuf;

	if (retired->n == 0)
		return;
	for (int i = 0; i < retired->n; i++)
		kdam_free_tree_pages(index, &retired->trees[i]);
	metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	kdam_orphans_add(index, metabuf, -1);
	UnlockReleaseBuffer(metabuf);
}
