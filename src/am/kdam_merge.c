/*
 * kdam_merge.c
 *	  Turning pending rows into trees and merging trees: the logarithmic
 *	  method of the Bkd-tree, which keeps the forest to a few trees per
 *	  size class while rows are inserted.
 *
 * When the insert lanes hold KDAM_FLUSH_ROWS records, the inserter that
 * made it so (or VACUUM, for whatever is pending) flushes: it seals the
 * lanes (moves their chains to the metapage's sealed chain, so that inserts
 * start new ones, kdam_lanes.c), builds a tree of the sealed records, and
 * adds the tree to the forest.  Then, while two live trees made since the
 * build are of the same size class (floor(log8(n / KDAM_FLUSH_ROWS)), see
 * KDAM_MERGE_FANOUT) and their points fit in the memory given, it merges
 * them: it builds one tree of their live points and retires the two.  The
 * build's trees each cover their own part of space (kdam_build.c), and
 * merging two would make a tree that every query near either part enters:
 * they stay out of these merges (VACUUM still rebuilds the whole forest as
 * one tree when it fits).  A retired tree's pages stay as they are, for the
 * scans that started before, until no snapshot is that old; then the next
 * merge, or VACUUM, frees them (kdam_reclaim_retired).  Trees never
 * change: every step writes new pages, and a short exclusive lock on the
 * metapage switches the forest to them, so scans and inserts wait for no
 * more than that switch.
 *
 * Work locks, heavyweight locks on block numbers (not buffers), which
 * inserters only try for and VACUUM waits for: one process at a time
 * flushes (KDAM_FLUSH_LOCK), and one at a time merges the trees of each
 * size class (KDAM_CLASS_LOCK), so neither a long merge of big trees nor a
 * flush holds back the merges of small ones that keep the forest to a few
 * trees; merging inserts, and VACUUM's merges, hold KDAM_MERGE_LOCK in
 * share mode.  A flush adds a tree and a merge retires only trees of its
 * class, read under that class's lock, so they commute; VACUUM takes
 * KDAM_MERGE_LOCK exclusively (and the flush lock) while it marks dead rows,
 * so that nothing copies a tree meanwhile, and while it rebuilds trees of
 * several classes.  New pages are unreachable until the switch, so each
 * writer counts itself in the metapage's orphans mark before it writes
 * them (and out of it once it has freed the pages the switch left): after a
 * crash or an error VACUUM finds and frees them.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/transam.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "kdam.h"

/*
 * Trees of sizes within a factor of KDAM_MERGE_FANOUT are of one size class
 * and merge.  Every query enters each tree made since the build, whose
 * points lie anywhere, so fewer classes make cheaper queries at the price
 * of more merging.  Once appends cost little (KDAM_APPEND_FILL), merges are
 * the larger part of an insert's cost; a fanout of 4 leaves as few trees
 * as 8 does for a bulk insert and merges less.  Merging inserted rows per
 * region of the build's trees instead (each inserted tree over one build
 * tree's part of space, so that a query enters only those near it) reads
 * no fewer pages: a query still enters a tree per size class, of its
 * region and often of a neighbour's.
 */
#define KDAM_MERGE_FANOUT	4

/* A tree's size class. */
static int
size_class(int64 n)
{
	int			c = 0;

	while (n >= KDAM_MERGE_FANOUT * KDAM_FLUSH_ROWS)
	{
		n /= KDAM_MERGE_FANOUT;
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

/* Make room in an empty input for cap points. */
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
 * Whether the forest and counts that a switch read in a are still those
 * of b: no switch and no marks since (each bumps the generation), and the
 * retired list, which VACUUM shortens without a bump, unchanged.
 */
static bool
forest_unchanged(const KdamMetaPageData *a, const KdamMetaPageData *b)
{
	return a->generation == b->generation &&
		a->retired_head == b->retired_head &&
		a->retired_tail == b->retired_tail && a->nretired == b->nretired;
}

/*
 * Switch the forest: move the trees of the given ids to the retired list,
 * add the new tree (unless its n is 0), drop the sealed chain (flushed),
 * free the pages of the old list of live trees and of that chain, and
 * only then count one writer less in the orphans mark.  The trees to
 * retire are live: trees are retired, and their rows marked dead, only
 * under the merge lock held exclusively or under the lock of the trees'
 * size class.
 *
 * Scans wait for an exclusive lock on the metapage, so it is held for the
 * switch itself and little else: the new list of live trees is written
 * before (read under a share lock, and written again under the exclusive
 * lock if another switch came between), and the old list's pages and a
 * flushed chain, which no scan reaches once the metapage leaves them, are
 * freed after.  Only the retired trees' entries are written under the
 * lock, as they carry the transaction id that was next at the switch
 * (a snapshot taken before it may still read them).  Holding the lock for
 * all of it made concurrent readers wait on every flush and merge.
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
	KdamForest	live;
	KdamForest	gone;
	GenericXLogState *state;
	BlockNumber head,
				rhead,
				rtail;
	uint64		retire_xid;

	for (int attempt = 0;; attempt++)
	{
		/* a second attempt holds the lock throughout: nothing overtakes it */
		bool		held = attempt > 0;

		live.n = gone.n = 0;
		live.trees = gone.trees = NULL;
		LockBuffer(metabuf, held ? BUFFER_LOCK_EXCLUSIVE : BUFFER_LOCK_SHARE);
		old = *kdam_metapage(index, BufferGetPage(metabuf));
		kdam_forest_read(index, &old, &forest);
		if (!held)
			LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
		for (int i = 0; i < forest.n; i++)
		{
			bool		retiring = false;

			for (int r = 0; r < nretire; r++)
				retiring |= forest.trees[i].tree_id == retire[r];
			kdam_forest_add(retiring ? &gone : &live, &forest.trees[i]);
		}
		if (gone.n != nretire)
			elog(ERROR, "index \"%s\": a tree being merged left the forest",
				 RelationGetRelationName(index));
		if (added->n > 0)
			kdam_forest_add(&live, added);
		head = kdam_forest_write(index, &live, true, NULL);
		if (held)
			break;
		LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
		if (forest_unchanged(&old, KdamPageGetMeta(BufferGetPage(metabuf))))
			break;
		LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
		kdam_free_chain(index, head);
	}

	retire_xid = U64FromFullTransactionId(ReadNextFullTransactionId());
	for (int i = 0; i < gone.n; i++)
	{
		gone.trees[i].retire_xid = retire_xid;
		old.ntree -= gone.trees[i].n;
		old.ndead -= gone.trees[i].ndead;
	}
	old.ntree += added->n;
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
	meta->generation++;
	GenericXLogFinish(state);
	if (BufferIsValid(tailbuf))
		UnlockReleaseBuffer(tailbuf);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);

	kdam_free_chain(index, old.forest_head);
	if (flushed)
		kdam_free_chain(index, old.flush_head);
	/* counted until now, so that a crash before leaves them to VACUUM */
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	kdam_orphans_add(index, metabuf, -1);
	UnlockReleaseBuffer(metabuf);
}

/*
 * Build and write a tree named tree_id of n points (none: no tree; coords
 * are reordered by the build) and switch the forest to it (switch_forest).
 */
static void
install_tree(Relation index, const KdamMetaPageData *m, uint64 tree_id,
			 double *coords, const uint64 *refs, const uint64 *payload,
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
	KdamRecords recs;
	uint64		tree_id;
	bool		sealed;

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	meta = kdam_metapage(index, BufferGetPage(metabuf));
	sealed = meta->flush_head != InvalidBlockNumber;
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	if (!sealed)
		kdam_lanes_seal(index);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	meta = kdam_metapage(index, BufferGetPage(metabuf));
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
 * of their live points.  The caller holds the merge lock, and merges none
 * of them elsewhere: exclusively (VACUUM), or with the lock of their size
 * class.
 */
void
kdam_rebuild_trees(Relation index, const KdamMetaPageData *m,
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
 * Read the forest (as *m) and pick, into pair, the two smallest live trees
 * not from the build (whose trees, each over its own part of space, would
 * make a tree over two parts), of the smallest size class that has two
 * whose points fit in mem bytes,
 * among the classes not in skip (a bit per class) and, when only is not
 * -1, of class only; returns the class, or -1 when no two qualify.
 */
static int
pick_pair(Relation index, Size mem, uint64 skip, int only,
		  KdamMetaPageData *m, KdamTreeEntry *pair)
{
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	KdamForest	forest;
	int			a = -1,
				b = -1;

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	*m = *kdam_metapage(index, BufferGetPage(metabuf));
	kdam_forest_read(index, m, &forest);
	UnlockReleaseBuffer(metabuf);
	for (int i = 0; i < forest.n; i++)
	{
		const KdamTreeEntry *e = &forest.trees[i];
		int			c = size_class(e->n);

		if ((skip & (UINT64CONST(1) << c)) || (only >= 0 && c != only) ||
			e->tree_id < m->first_merge_id)
			continue;
		for (int j = i + 1; j < forest.n; j++)
		{
			const KdamTreeEntry *f = &forest.trees[j];
			int64		n = e->n + f->n - e->ndead - f->ndead;

			if (size_class(f->n) != c || f->tree_id < m->first_merge_id ||
				kdam_build_memory(n, m->dim, m->payload_words) +
				kdam_tree_stream_size(m, e) + kdam_tree_stream_size(m, f) > mem)
				continue;
			if (a < 0 || e->n + f->n < forest.trees[a].n + forest.trees[b].n)
			{
				a = i;
				b = j;
			}
		}
	}
	if (a < 0)
		return -1;
	pair[0] = forest.trees[a];
	pair[1] = forest.trees[b];
	return size_class(pair[0].n);
}

/*
 * Merge two trees of the smallest size class that has two to merge and
 * that no other process is merging (its class lock is free); false when
 * none qualifies.  The caller holds the merge lock in share mode.
 */
static bool
merge_once(Relation index, Size mem)
{
	uint64		skip = 0;
	KdamMetaPageData m;
	KdamTreeEntry pair[2];
	int			c;

	while ((c = pick_pair(index, mem, skip, -1, &m, pair)) >= 0)
	{
		if (kdam_work_lock(index, KDAM_CLASS_LOCK(c), false))
		{
			/* the class's trees, read again now that no one else merges them */
			bool		found = pick_pair(index, mem, 0, c, &m, pair) == c;

			if (found)
				kdam_rebuild_trees(index, &m, pair, 2);
			kdam_work_unlock(index, KDAM_CLASS_LOCK(c));
			if (found)
				return true;
		}
		skip |= UINT64CONST(1) << c;
	}
	return false;
}

/*
 * Take one of the index's work locks (KDAM_MERGE_LOCK, KDAM_FLUSH_LOCK,
 * KDAM_CLASS_LOCK): with wait, wait for it (VACUUM); without, false when
 * another holds it (an insert).  KDAM_MERGE_LOCK is taken in share mode by
 * merging inserts, which then each take the lock of the size class they
 * merge, and exclusively by VACUUM; the others are always exclusive.
 */
bool
kdam_work_lock_mode(Relation index, BlockNumber which, LOCKMODE mode,
					bool wait)
{
	if (wait)
	{
		LockPage(index, which, mode);
		return true;
	}
	return ConditionalLockPage(index, which, mode);
}

/* Let a lock kdam_work_lock_mode took go. */
void
kdam_work_unlock_mode(Relation index, BlockNumber which, LOCKMODE mode)
{
	UnlockPage(index, which, mode);
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
 * Free the pages of the retired trees no snapshot can still read, under a
 * cleanup lock on metabuf (the metapage, pinned by the caller), which waits
 * for the scans that pin it.  With wait false (a merging insert) it
 * frees nothing when a scan pins the metapage, so that a writer never waits
 * for a scan: steady writes reuse the pages of the trees their merges
 * retired instead of growing the index until the next VACUUM.  The caller
 * holds the merge lock.
 */
void
kdam_reclaim_retired(Relation index, Buffer metabuf, bool wait)
{
	KdamForest	retired;

	if (wait)
		LockBufferForCleanup(metabuf);
	else if (!ConditionalLockBufferForCleanup(metabuf))
		return;
	kdam_drop_retired(index, metabuf, &retired);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	kdam_free_trees(index, &retired);
}

/*
 * Merge trees of like size while two qualify, using at most mem bytes for
 * a merge, first freeing what earlier merges retired (not in VACUUM, which
 * pins the metapage already, so that the conditional cleanup lock fails,
 * and which reclaims after its merges itself).  The caller holds the merge
 * lock in share mode.
 */
void
kdam_merge(Relation index, Size mem)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "kdgpu merge",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	Buffer		metabuf;

	metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	kdam_reclaim_retired(index, metabuf, false);
	ReleaseBuffer(metabuf);
	while (merge_once(index, mem))
	{
		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(cxt);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/*
 * Drop from the list of retired trees those no snapshot can still read
 * (retired before every backend's xmin) and put them in retired, for
 * kdam_free_trees; metabuf is the metapage, locked for cleanup, so no scan
 * of another kind of snapshot is in flight.  Their pages count in the
 * orphans mark until kdam_free_trees has freed them.  The caller holds the
 * merge lock.
 */
void
kdam_drop_retired(Relation index, Buffer metabuf, KdamForest *retired)
{
	KdamMetaPageData m = *KdamPageGetMeta(BufferGetPage(metabuf));
	KdamForest	list;
	KdamForest	keep = {0, NULL};
	GenericXLogState *state;
	KdamMetaPage meta;
	BlockNumber head,
				tail;

	retired->n = 0;
	retired->trees = NULL;
	if (m.retired_head == InvalidBlockNumber)
		return;
	kdam_retired_read(index, &m, &list);
	for (int i = 0; i < list.n; i++)
		kdam_forest_add(GlobalVisCheckRemovableFullXid(NULL,
													   FullTransactionIdFromU64(list.trees[i].retire_xid))
						? retired : &keep, &list.trees[i]);
	if (retired->n == 0)
		return;
	kdam_orphans_add(index, metabuf, 1);
	head = kdam_forest_write(index, &keep, true, &tail);
	state = GenericXLogStart(index);
	meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	meta->retired_head = head;
	meta->retired_tail = tail;
	meta->nretired = keep.n;
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
