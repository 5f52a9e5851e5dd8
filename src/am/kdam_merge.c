/*
 * kdam_merge.c
 *	  Turning pending rows into trees and merging trees: the logarithmic
 *	  method of the Bkd-tree, which keeps the forest to a few trees per
 *	  size class while rows are inserted.
 *
 * When an insert lane reaches KDAM_LANE_ROWS records, the inserter that
 * made it so (or VACUUM, for whatever is pending) seals the lanes (moves
 * their chains to the metapage's sealed chain, so that inserts start new
 * ones, kdam_lanes.c), builds a tree of the sealed records, and adds the
 * tree to the forest.  Then, while two
 * live trees are of the same size class (floor(log2(n / KDAM_LANE_ROWS)))
 * and their points fit in the memory given, it merges them: it builds one
 * tree of their live points and retires the two.  A retired tree's pages
 * stay as they are, for the scans that started before, until VACUUM frees
 * them (kdam_free_retired).  Trees never change: every step writes new
 * pages, and a short exclusive lock on the metapage switches the forest to
 * them, so scans and inserts wait for no more than that switch.
 *
 * One process at a time flushes or merges: a heavyweight lock on the
 * metapage's block (not its buffer), which inserters only try for and
 * VACUUM waits for.  What a tree is built from may change under it only
 * by VACUUM's dead marks, which bump the generation: a switch finding the
 * generation moved frees the new pages and leaves things as they were.
 * New pages are unreachable until the switch, so the metapage's orphans
 * mark is set before they are written: after a crash VACUUM finds and
 * frees them.
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
 * In a metapage being changed (registered in a Generic WAL record), set
 * the orphans mark (a tree's pages are about to be written) and take the
 * tree's tree_id; returns what the mark was.
 */
static int32
start_tree(KdamMetaPage meta, uint64 *tree_id)
{
	int32		was = meta->orphans;

	meta->orphans = 1;
	*tree_id = meta->next_tree_id++;
	return was;
}

/*
 * Switch the forest, under an exclusive lock on the metapage: when the
 * generation is still gen, retire the trees of the given ids, add the new
 * tree (unless n is 0) and drop the flush slot (flushed); returns false,
 * changing nothing, when it moved.  The old forest pages, and a flushed
 * chain, are freed.
 */
static bool
switch_forest(Relation index, uint64 gen, const uint64 *retire, int nretire,
			  const KdamTreeEntry *added, bool flushed, int32 orphans_was)
{
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	KdamMetaPage meta;
	KdamMetaPageData old;
	KdamForest	forest;
	GenericXLogState *state;
	BlockNumber head;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	old = *kdam_metapage(index, BufferGetPage(metabuf));
	if (old.generation != gen)
	{
		UnlockReleaseBuffer(metabuf);
		return false;
	}
	kdam_forest_read(index, &old, &forest);
	state = NULL;
	for (int i = 0; i < forest.n; i++)
		for (int r = 0; r < nretire; r++)
			if (forest.trees[i].tree_id == retire[r] && !forest.trees[i].retired)
			{
				forest.trees[i].retired = 1;
				old.ntree -= forest.trees[i].n;
				old.ndead -= forest.trees[i].ndead;
			}
	if (added && added->n > 0)
	{
		kdam_forest_add(&forest, added);
		old.ntree += added->n;
	}
	head = kdam_forest_write(index, &forest, true);

	state = GenericXLogStart(index);
	meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	meta->forest_head = head;
	meta->ntrees = forest.n;
	meta->ntree = old.ntree;
	meta->ndead = old.ndead;
	if (flushed)
	{
		meta->flush_head = InvalidBlockNumber;
		meta->flush_tail = InvalidBlockNumber;
		meta->nflush = 0;
	}
	meta->generation++;
	GenericXLogFinish(state);

	kdam_free_chain(index, old.forest_head);
	if (flushed)
		kdam_free_chain(index, old.flush_head);
	kdam_set_orphans(index, metabuf, orphans_was);
	UnlockReleaseBuffer(metabuf);
	pfree(forest.trees);
	return true;
}

/*
 * Build and write a tree named tree_id of n points (none: no tree) and
 * switch the forest to it (switch_forest, checking the generation of m);
 * when the generation moved, free its pages.
 */
static bool
install_tree(Relation index, const KdamMetaPageData *m, uint64 tree_id,
			 const double *coords, const uint64 *refs, const uint64 *payload,
			 int64 n, const uint64 *retire, int nretire, bool flushed,
			 int32 orphans_was)
{
	KdamTreeEntry entry;
	bool		done;

	memset(&entry, 0, sizeof(entry));
	if (n > 0)
		kdam_write_new_tree(index, coords, refs, payload, m->payload_words, n,
							m->dim, false, tree_id, &entry);
	done = switch_forest(index, m->generation, retire, nretire, &entry,
						 flushed, orphans_was);
	if (!done && n > 0)
		kdam_free_tree_pages(index, &entry);
	return done;
}

/*
 * Seal the lanes (or take the records sealed by a flush that failed) and
 * turn the sealed records into a tree of the forest; false when none were
 * pending, or the generation moved.
 */
static bool
flush_once(Relation index)
{
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	KdamMetaPage meta;
	KdamMetaPageData m;
	GenericXLogState *state;
	KdamPending recs;
	int32		orphans_was;
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
	orphans_was = start_tree(meta, &tree_id);
	m = *meta;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);

	/* only VACUUM changes the sealed chain, and it bumps the generation */
	kdam_read_records(index, m.flush_head, m.dim, m.payload_words, m.nflush,
					  &recs);
	return install_tree(index, &m, tree_id, recs.coords, recs.refs,
						recs.payload, recs.n, NULL, 0, true, orphans_was);
}

/*
 * Replace the given live trees of the forest (read as meta m) by one tree
 * of their live points; false when the generation moved.
 */
static bool
replace_trees(Relation index, const KdamMetaPageData *m,
			  const KdamTreeEntry *trees, int count)
{
	Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
	MergeInput	in;
	uint64	   *retire = palloc(sizeof(uint64) * count);
	uint64		tree_id;
	int64		total = 0;
	int32		orphans_was;
	GenericXLogState *state;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	if (kdam_metapage(index, BufferGetPage(metabuf))->generation != m->generation)
	{
		UnlockReleaseBuffer(metabuf);
		return false;
	}
	state = GenericXLogStart(index);
	orphans_was = start_tree(KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0)),
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
	return install_tree(index, m, tree_id, in.coords, in.refs, in.payload,
						in.n, retire, count, false, orphans_was);
}

/*
 * Merge the two smallest live trees of the smallest size class that has
 * two, when their points fit in mem bytes; false when no two qualify or
 * the generation moved.
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

		if (e->retired)
			continue;
		for (int j = i + 1; j < forest.n; j++)
		{
			const KdamTreeEntry *f = &forest.trees[j];
			int64		n = e->n + f->n - e->ndead - f->ndead;

			if (f->retired || size_class(e->n) != size_class(f->n) ||
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
	return replace_trees(index, &m, pair, 2);
}

/*
 * Replace live trees (of the forest read as meta m) by one tree of their
 * live points; false when the generation moved.  The caller holds the
 * merge lock.
 */
bool
kdam_rebuild_trees(Relation index, const KdamMetaPageData *m,
				   const KdamTreeEntry *trees, int count)
{
	return replace_trees(index, m, trees, count);
}

/*
 * Take the lock of the one process that flushes or merges; with wait,
 * wait for it (VACUUM); without, false when another holds it (an insert).
 */
bool
kdam_merge_lock(Relation index, bool wait)
{
	if (wait)
	{
		LockPage(index, KDAM_METAPAGE_BLKNO, ExclusiveLock);
		return true;
	}
	return ConditionalLockPage(index, KDAM_METAPAGE_BLKNO, ExclusiveLock);
}

/* Let the lock kdam_merge_lock took go. */
void
kdam_merge_unlock(Relation index)
{
	UnlockPage(index, KDAM_METAPAGE_BLKNO, ExclusiveLock);
}

/*
 * Turn the pending rows into a tree, then merge trees of like size, using
 * at most mem bytes for a merge.  The caller holds the merge lock.
 */
void
kdam_flush_and_merge(Relation index, Size mem)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "kdgpu merge",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);

	flush_once(index);
	MemoryContextReset(cxt);
	while (merge_once(index, mem))
	{
		CHECK_FOR_INTERRUPTS();
		MemoryContextReset(cxt);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/*
 * Drop the retired trees from the forest and free their pages; metabuf is
 * the metapage, locked for cleanup, so no scan that could read them is in
 * flight.  The caller holds the merge lock.
 */
void
kdam_free_retired(Relation index, Buffer metabuf)
{
	KdamMetaPageData m = *KdamPageGetMeta(BufferGetPage(metabuf));
	KdamForest	forest;
	KdamForest	live = {0, NULL};
	GenericXLogState *state;
	KdamMetaPage meta;
	BlockNumber head;
	int32		orphans_was;

	kdam_forest_read(index, &m, &forest);
	for (int i = 0; i < forest.n; i++)
		if (!forest.trees[i].retired)
			kdam_forest_add(&live, &forest.trees[i]);
	if (live.n == forest.n)
		return;
	orphans_was = kdam_set_orphans(index, metabuf, 1);
	head = kdam_forest_write(index, &live, true);
	state = GenericXLogStart(index);
	meta = KdamPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	meta->forest_head = head;
	meta->ntrees = live.n;
	meta->generation++;
	GenericXLogFinish(state);
	kdam_free_chain(index, m.forest_head);
	for (int i = 0; i < forest.n; i++)
		if (forest.trees[i].retired)
			kdam_free_tree_pages(index, &forest.trees[i]);
	kdam_set_orphans(index, metabuf, orphans_was);
}
