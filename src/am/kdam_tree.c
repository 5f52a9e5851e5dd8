/*
 * kdam_tree.c
 *	  The tree of a kdgpu index on its pages: a page-blocked layout read in
 *	  place through shared buffers.
 *
 * The engine's tree is left-balanced and pointer-free (node i has children
 * 2i+1 and 2i+2).  On disk its levels are cut into ranges from the bottom,
 * and each node at the first level of a range roots a block: its subtree
 * down to the range's last level, so a root-to-leaf search touches one page
 * per range.  A range whose nodes carry a box is as deep as fits on a page;
 * one without takes the depth that fills pages best, a page holding the
 * blocks of several consecutive roots (neighbours in space).  A last level
 * less than half full gets a range of its own; one fuller keeps the bottom
 * range, and the roots whose subtrees end above it get a tail range one
 * level shorter, so that every size of tree fills its pages.
 *
 * A block's page holds, after a KdamBlockHeader, one record per slot in the
 * engine's node order (coordinates, a 6-byte reference: heap TID or dead
 * mark, split dimension), so that a node is read on one or two cache lines
 * and its children's records are prefetched while it is worked on; then the
 * payload words and the boxes of its first slots.  Only subtrees of at
 * least KDAM_BOX_MIN_SUBTREE points keep a box on disk (smaller ones cost
 * pages and prune little beside the split planes); kdam_read_tree computes
 * them again for the engine.  Empty slots are zero.  Blocks are numbered
 * range by range; a directory maps them to pages, except for a tree written
 * to consecutive pages, whose readers add to its first page instead.
 *
 * VACUUM marks dead references in place under an exclusive page lock while
 * scans run, so readers take a share lock per read.  A retired tree's pages
 * are freed only once no scan is in flight on the primary; a standby replays
 * frees at once, so there a reader checks each page's kind against its tree
 * and asks to be retried when the tree was freed.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/xlog.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "utils/rel.h"

#include "kdam.h"

/*
 * Store a reference (block << 16 | offset, 48 bits, or KDAM_DEAD_REF) in
 * KDAM_REF_BYTES bytes, little end first.
 */
static inline void
ref_store(char *at, uint64 ref)
{
	for (int i = 0; i < KDAM_REF_BYTES; i++)
		at[i] = (char) ((ref >> (8 * i)) & 0xFF);
}

/* Read a reference that ref_store wrote. */
static inline uint64
ref_load(const char *at)
{
	uint64		ref = 0;

	for (int i = 0; i < KDAM_REF_BYTES; i++)
		ref |= (uint64) (uint8) at[i] << (8 * i);
	return ref == KDAM_REF_MASK ? KDAM_DEAD_REF : ref;
}

/*
 * Where a node lives: its block number and slot.  A block holds the
 * subtrees of group consecutive roots of its range, one after the other;
 * the roots past the bottom range's are its tail range's.
 */
static inline void
locate(const KdamTreeShape *shape, int64 node, int64 *block, int *slot)
{
	int			level = kdam_node_level(node);
	int			r = shape->range_of_level[level];
	int			depth = level - shape->start[r];
	int64		root = (((node + 1) >> depth) - 1) - (((int64) 1 << shape->start[r]) - 1);
	int			g;

	if (r + 1 < shape->nranges && shape->start[r + 1] == shape->start[r] &&
		root >= shape->roots_from[r + 1])
		r++;
	root -= shape->roots_from[r];
	g = shape->group[r];
	*block = shape->first_block[r] + root / g;
	*slot = (int) ((root % g) * (((int64) 1 << shape->levels[r]) - 1) +
				   ((int64) 1 << depth) - 1 + ((node + 1) & (((int64) 1 << depth) - 1)));
}

/* The range of a block. */
static int
block_range(const KdamTreeShape *shape, int64 block)
{
	int			r = 0;

	while (r + 1 < shape->nranges && shape->first_block[r + 1] <= block)
		r++;
	return r;
}

/* Where the arrays of range r's blocks lie, from KdamBlockData. */
static void
block_layout(const KdamTreeShape *shape, int r, KdamBlockLayout *l)
{
	int			s = ((1 << shape->levels[r]) - 1) * shape->group[r];

	l->slots = s;
	l->nbounds = shape->nbounds;
	l->record = kdam_record_bytes(shape->dim);
	l->payload = l->record * s;
	l->bounds = l->payload + sizeof(uint64) * shape->words * s;
	l->end = l->bounds + sizeof(double) * 2 * shape->dim * shape->boxed[r];
}

/*
 * Copy a node's fields between slot s of a block's arrays (blk) and the
 * engine's arrays of tree and payload (words per node): into the block
 * with to_page, out of it without.  Boxes are copied for the nodes that
 * keep one on pages.
 */
static void
slot_copy(const KdamBlockLayout *l, char *blk, int s, KdTree *tree,
		  uint64 *payload, int words, int64 node, bool to_page)
{
	int			dim = tree->dim;
	char	   *rec = blk + l->record * s;
	struct
	{
		char	   *page;
		char	   *mem;
		Size		len;
	}			f[4] = {
		{rec, (char *) (tree->coords + node * dim), sizeof(double) * dim},
		{rec + kdam_record_split(dim), (char *) &tree->split[node], 1},
		{blk + l->payload + sizeof(uint64) * words * s,
		words > 0 ? (char *) (payload + node * words) : NULL,
		sizeof(uint64) * words},
		{blk + l->bounds + sizeof(double) * 2 * dim * s,
		node < l->nbounds ? (char *) (tree->bounds + node * 2 * dim) : NULL,
		sizeof(double) * 2 * dim},
	};

	for (int i = 0; i < lengthof(f); i++)
		if (f[i].mem != NULL)
			memcpy(to_page ? f[i].page : f[i].mem,
				   to_page ? f[i].mem : f[i].page, f[i].len);
	if (to_page)
		ref_store(rec + kdam_record_ref(dim), tree->refs[node]);
	else
		tree->refs[node] = ref_load(rec + kdam_record_ref(dim));
}

/*
 * The node in a block's slot, or -1 when the slot is past the last node or
 * belongs to a root past the range's last (the last block of a range whose
 * pages hold several roots' subtrees may have room for more).
 */
static int64
slot_node(const KdamTreeShape *shape, int r, int64 block, int slot)
{
	int			per = (1 << shape->levels[r]) - 1;
	int64		root = shape->roots_from[r] +
		(block - shape->first_block[r]) * shape->group[r] + slot / per;
	int			j = slot % per;
	int			l = kdam_node_level(j);
	int64		node = ((((int64) 1 << shape->start[r]) + root) << l) +
		(j + 1 - ((int64) 1 << l)) - 1;

	return root < shape->roots_to[r] && node < shape->n ? node : -1;
}

/*
 * Whether the layout of a tree of n nodes (dim dimensions, words payload
 * words) puts every node in exactly one slot, and scans (locate) look for
 * it in the slot it is written to and read from (slot_node).
 */
bool
kdam_tree_layout_sound(int64 n, int dim, int words)
{
	KdamTreeShape shape;
	int64		placed = 0;

	kdam_tree_shape(n, dim, words, &shape);
	for (int r = 0; r < shape.nranges; r++)
	{
		KdamBlockLayout l;

		block_layout(&shape, r, &l);
		for (int64 b = shape.first_block[r]; b < shape.first_block[r + 1]; b++)
			for (int s = 0; s < l.slots; s++)
			{
				int64		node = slot_node(&shape, r, b, s);
				int64		block;
				int			slot;

				if (node < 0)
					continue;
				locate(&shape, node, &block, &slot);
				if (block != b || slot != s)
					return false;
				placed++;
			}
	}
	return placed == n;
}

/* Whether the pages of blocks 0 .. n-1 follow one another. */
static bool
blocks_contiguous(const BlockNumber *blocks, int64 n)
{
	for (int64 b = 1; b < n; b++)
		if (blocks[b] != blocks[0] + b)
			return false;
	return n > 0;
}

/*
 * Write a tree (the engine's arrays, and words payload words per node in
 * node order) to new block pages and directory pages, and set the entry's
 * n, nbounds, head, dirhead and ndir.  With wal every page is logged as a
 * full image; without, pages are only dirtied and the build logs them all.
 */
void
kdam_write_tree(Relation index, const KdTree *tree, const uint64 *payload,
				int words, bool wal, KdamTreeEntry *entry)
{
	KdamTreeShape shape;
	BlockNumber *blocks;
	KdamPageChain chain = KDAM_PAGE_CHAIN(index, wal);
	KdamPageChain dirchain = KDAM_PAGE_CHAIN(index, wal);
	KdamPageChain listchain = KDAM_PAGE_CHAIN(index, wal);
	BlockNumber listblk;
	BlockNumber first;
	BlockNumber *dirs;
	Page		list;
	int			ndir;

	kdam_tree_shape(tree->n, tree->dim, words, &shape);
	ndir = (int) ((shape.nblocks + KDAM_DIR_ENTRIES - 1) / KDAM_DIR_ENTRIES);
	if (ndir > KDAM_MAX_DIR)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("kdgpu index tree of %lld points needs %d directory pages, more than the limit of %d",
						(long long) tree->n, ndir, (int) KDAM_MAX_DIR),
				 errhint("Lower maintenance_work_mem, so that the build makes more, smaller trees.")));
	blocks = palloc_extended(sizeof(BlockNumber) * Max(shape.nblocks, 1),
							 MCXT_ALLOC_HUGE);
	for (int r = 0; r < shape.nranges; r++)
	{
		KdamBlockLayout l;

		block_layout(&shape, r, &l);
		for (int64 b = shape.first_block[r]; b < shape.first_block[r + 1]; b++)
		{
			Page		page;
			char	   *data;
			KdamBlockHeader *hdr;

			/*
			 * a merge in VACUUM pauses as vacuum_cost_delay asks, with no
			 * page locked (its interrupts are served, and a census of the
			 * index's pages does not wait behind the pause)
			 */
			kdam_chain_finish(&chain);
			vacuum_delay_point();
			page = kdam_chain_push(&chain, KDAM_TREE, &blocks[b]);
			hdr = (KdamBlockHeader *) PageGetContents(page);
			hdr->tree_id = entry->tree_id;
			hdr->block = b;
			data = KdamBlockData(page);
			memset(data, 0, l.end);
			for (int s = 0; s < l.slots; s++)
			{
				int64		node = slot_node(&shape, r, b, s);

				/* to_page only reads the tree */
				if (node >= 0)
					slot_copy(&l, data, s, (KdTree *) tree, (uint64 *) payload,
							  words, node, true);
			}
			((PageHeader) page)->pd_lower =
				(data + l.end) - (char *) page;
		}
	}
	entry->head = kdam_chain_end(&chain);

	/* the directory pages, then the page listing them, linked to them */
	dirs = palloc(sizeof(BlockNumber) * Max(ndir, 1));
	for (int d = 0; d < ndir; d++)
	{
		int64		from = (int64) d * KDAM_DIR_ENTRIES;
		int64		count = Min(KDAM_DIR_ENTRIES, shape.nblocks - from);
		Page		page = kdam_chain_add(&dirchain, KDAM_TREEDIR, &dirs[d]);

		memcpy(PageGetContents(page), blocks + from, sizeof(BlockNumber) * count);
		((PageHeader) page)->pd_lower += sizeof(BlockNumber) * count;
	}
	first = kdam_chain_end(&dirchain);
	if (ndir == 1)
	{
		/* a reader goes to the one directory page straight from the entry */
		entry->dirhead = first;
		ndir = 0;
	}
	else
	{
		list = kdam_chain_add(&listchain, KDAM_TREEDIR, &listblk);
		KdamPageGetOpaque(list)->next = first;
		memcpy(PageGetContents(list), dirs, sizeof(BlockNumber) * ndir);
		((PageHeader) list)->pd_lower += sizeof(BlockNumber) * ndir;
		entry->dirhead = kdam_chain_end(&listchain);
	}
	pfree(dirs);
	entry->n = tree->n;
	entry->nbounds = tree->nbounds;
	entry->ndir = ndir;
	entry->contig = blocks_contiguous(blocks, shape.nblocks) ? blocks[0] :
		InvalidBlockNumber;
	pfree(blocks);
}

static void reader_pin(KdamTreeReader *rd, int64 b);
static void reader_unlock(KdamTreeReader *rd);
static void tree_changed(Relation index) pg_attribute_noreturn();

/*
 * Read a tree of the index into the in-memory stream layout
 * (kdam_tree_stream_slices) at data, for the kd_* functions, merges and
 * kd_index_check, through a reader with a bulk-read strategy.  The caller
 * holds a pin on the metapage.
 */
void
kdam_read_tree(Relation index, const KdamMetaPageData *meta,
			   const KdamTreeEntry *entry, char *data)
{
	KdamTreeReader rd;
	KdamTree	t;

	t.data = data;
	kdam_stream_to_tree(&t, meta, entry);
	kdam_reader_init(&rd, index, meta, entry);
	rd.strategy = GetAccessStrategy(BAS_BULKREAD);
	for (int r = 0; r < rd.shape.nranges; r++)
		for (int64 b = rd.shape.first_block[r]; b < rd.shape.first_block[r + 1]; b++)
		{
			CHECK_FOR_INTERRUPTS();
			reader_pin(&rd, b);
			for (int s = 0; s < rd.layout.slots; s++)
			{
				int64		node = slot_node(&rd.shape, r, b, s);

				if (node >= 0)
					slot_copy(&rd.layout, KdamBlockData(BufferGetPage(rd.buf)), s,
							  &t.tree, t.payload, t.words, node, false);
			}
			reader_unlock(&rd);
		}
	kdam_reader_end(&rd);
	FreeAccessStrategy(rd.strategy);
	/* the engine's boxes that pages do not keep */
	kde_tree_fill_bounds(&t.tree, rd.shape.nbounds);
}

/*
 * Read a tree of the index into memory palloc'd in CurrentMemoryContext,
 * its arrays pointed at by t (kdam_read_tree).
 */
void
kdam_load_tree(Relation index, const KdamMetaPageData *meta,
			   const KdamTreeEntry *entry, KdamTree *t)
{
	t->size = kdam_tree_stream_size(meta, entry);
	t->data = palloc_extended(Max(t->size, 1), MCXT_ALLOC_HUGE);
	kdam_read_tree(index, meta, entry, t->data);
	kdam_stream_to_tree(t, meta, entry);
}

/*
 * Whether page is block b of the reader's tree: on a hot standby, recovery
 * may free a retired tree under a running scan, which should then be
 * retried (tree_changed), and the page may since hold anything, so there
 * its kind is checked too.
 */
static bool
check_block(const KdamTreeReader *rd, Page page, int64 b)
{
	KdamBlockHeader *hdr = (KdamBlockHeader *) PageGetContents(page);

	if (rd->standby && !(KdamPageGetOpaque(page)->flags & KDAM_TREE))
		return false;
	return hdr->tree_id == rd->tree_id && hdr->block == b;
}

/* The error of a scan on a hot standby whose tree was freed under it. */
static void
tree_changed(Relation index)
{
	ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("the tree of index \"%s\" changed during the scan",
						RelationGetRelationName(index)),
				 errdetail("A merge or VACUUM freed a retired tree while a query on a hot standby read it."),
				 errhint("Run the query again.")));
}

/*
 * Mark dead the references of a block page (locked exclusively in buf) that
 * callback says are gone, through Generic WAL; returns how many.
 */
int64
kdam_block_delete(Relation index, Buffer buf, const KdamTreeShape *shape,
				  IndexBulkDeleteCallback callback, void *callback_state)
{
	Page		page = BufferGetPage(buf);
	int64		b = ((KdamBlockHeader *) PageGetContents(page))->block;
	int			r = block_range(shape, b);
	KdamBlockLayout l;
	GenericXLogState *state = NULL;
	char	   *data = KdamBlockData(page);
	int64		marked = 0;

	block_layout(shape, r, &l);
	for (int s = 0; s < l.slots; s++)
	{
		uint64		ref;
		ItemPointerData tid;

		if (slot_node(shape, r, b, s) < 0)
			continue;
		ref = ref_load(data + l.record * s + kdam_record_ref(shape->dim));
		if (ref == KDAM_DEAD_REF)
			continue;
		kdg_ref_to_tid(ref, &tid);
		if (!callback(&tid, callback_state))
			continue;
		if (state == NULL)
		{
			state = GenericXLogStart(index);
			data = KdamBlockData(GenericXLogRegisterBuffer(state, buf, 0));
		}
		ref_store(data + l.record * s + kdam_record_ref(shape->dim), KDAM_DEAD_REF);
		marked++;
	}
	if (state)
		GenericXLogFinish(state);
	return marked;
}

/*
 * Start reading a tree of the index in place (the caller pins the
 * metapage); its directory list is read when the first block is.
 */
void
kdam_reader_init(KdamTreeReader *rd, Relation index,
				 const KdamMetaPageData *meta, const KdamTreeEntry *entry)
{
	memset(rd, 0, sizeof(*rd));
	rd->index = index;
	rd->tree_id = entry->tree_id;
	rd->standby = RecoveryInProgress();
	kdam_tree_shape(entry->n, meta->dim, meta->payload_words, &rd->shape);
	rd->dirhead = entry->dirhead;
	rd->contig = entry->contig;
	rd->ndir = entry->ndir;
	rd->dir = NULL;
	rd->dirbufs = NULL;
	rd->cxt = CurrentMemoryContext;
	rd->buf = InvalidBuffer;
	rd->block = -1;
	for (int i = 0; i < KDAM_READER_PINS; i++)
	{
		rd->pinned[i] = InvalidBuffer;
		rd->pinblock[i] = -1;
	}
}

/*
 * Read the list of the tree's directory pages: the entry's dirhead itself
 * when the tree has one directory page and no list (ndir 0).
 */
static void
reader_read_dir(KdamTreeReader *rd)
{
	Buffer		buf;
	Page		page;

	if (rd->ndir == 0)
	{
		rd->ndir = 1;
		rd->dir = MemoryContextAlloc(rd->cxt, sizeof(BlockNumber));
		rd->dir[0] = rd->dirhead;
		rd->dirbufs = MemoryContextAlloc(rd->cxt, sizeof(Buffer));
		rd->dirbufs[0] = InvalidBuffer;
		return;
	}
	buf = ReadBufferExtended(rd->index, MAIN_FORKNUM, rd->dirhead,
							 RBM_NORMAL, rd->strategy);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (!(KdamPageGetOpaque(page)->flags & KDAM_TREEDIR) ||
		((PageHeader) page)->pd_lower <
		MAXALIGN(SizeOfPageHeaderData) + sizeof(BlockNumber) * rd->ndir)
	{
		UnlockReleaseBuffer(buf);
		tree_changed(rd->index);
	}
	rd->dir = MemoryContextAlloc(rd->cxt, sizeof(BlockNumber) * Max(rd->ndir, 1));
	memcpy(rd->dir, PageGetContents(page), sizeof(BlockNumber) * rd->ndir);
	UnlockReleaseBuffer(buf);
	rd->dirbufs = MemoryContextAlloc(rd->cxt, sizeof(Buffer) * Max(rd->ndir, 1));
	for (int d = 0; d < rd->ndir; d++)
		rd->dirbufs[d] = InvalidBuffer;
}

/*
 * Make block b's page the reader's current one, share-locked (the caller
 * holds no lock of the reader's).  The reader keeps the last
 * KDAM_READER_PINS pages pinned, so that a search going back and forth
 * between a few blocks (a depth-first walk returning to a parent's block,
 * a best-first search between neighbouring subtrees) does not look them up
 * again each time.  A page pinned anew keeps the lock its check took.
 */
static void
reader_pin(KdamTreeReader *rd, int64 b)
{
	int			victim = 0;
	int			d;
	BlockNumber blkno;
	Page		page;

	for (int i = 0; i < KDAM_READER_PINS; i++)
	{
		if (rd->pinblock[i] == b)
		{
			victim = i;
			LockBuffer(rd->pinned[victim], BUFFER_LOCK_SHARE);
			goto found;
		}
		if (rd->pinuse[i] < rd->pinuse[victim])
			victim = i;
	}
	if (BlockNumberIsValid(rd->contig))
		blkno = rd->contig + (BlockNumber) b;
	else
	{
		if (rd->dir == NULL)
			reader_read_dir(rd);
		d = (int) (b / KDAM_DIR_ENTRIES);
		if (!BufferIsValid(rd->dirbufs[d]))
			rd->dirbufs[d] = ReadBufferExtended(rd->index, MAIN_FORKNUM, rd->dir[d],
												RBM_NORMAL, rd->strategy);
		LockBuffer(rd->dirbufs[d], BUFFER_LOCK_SHARE);
		blkno = ((BlockNumber *) PageGetContents(BufferGetPage(rd->dirbufs[d])))[b % KDAM_DIR_ENTRIES];
		LockBuffer(rd->dirbufs[d], BUFFER_LOCK_UNLOCK);
	}
	if (BufferIsValid(rd->pinned[victim]))
		ReleaseBuffer(rd->pinned[victim]);
	rd->pinned[victim] = ReadBufferExtended(rd->index, MAIN_FORKNUM, blkno,
											RBM_NORMAL, rd->strategy);
	rd->pinblock[victim] = b;
	rd->pages_read++;
	LockBuffer(rd->pinned[victim], BUFFER_LOCK_SHARE);
	page = BufferGetPage(rd->pinned[victim]);
	if (!check_block(rd, page, b))
	{
		LockBuffer(rd->pinned[victim], BUFFER_LOCK_UNLOCK);
		tree_changed(rd->index);
	}
found:
	rd->locked = true;
	rd->pinuse[victim] = ++rd->clock;
	rd->buf = rd->pinned[victim];
	rd->block = b;
	rd->range = block_range(&rd->shape, b);
	block_layout(&rd->shape, rd->range, &rd->layout);
}

/* Release the share lock on the current page, if held. */
static void
reader_unlock(KdamTreeReader *rd)
{
	if (rd->locked)
		LockBuffer(rd->buf, BUFFER_LOCK_UNLOCK);
	rd->locked = false;
}

/* Make block b's page the current one, share-locked. */
static void
reader_lock(KdamTreeReader *rd, int64 b)
{
	if (b != rd->block)
	{
		reader_unlock(rd);
		reader_pin(rd, b);
	}
	else if (!rd->locked)
	{
		LockBuffer(rd->buf, BUFFER_LOCK_SHARE);
		rd->locked = true;
	}
}

/*
 * Read node i of the tree: its coordinates, reference, split dimension,
 * and with want_box its box when it has one (box is NULL otherwise).
 */
void
kdam_reader_node(KdamTreeReader *rd, int64 node, bool want_box, KdamNode *out)
{
	int64		b;
	int			s;
	int			dim = rd->shape.dim;
	const char *data;
	const char *rec;

	locate(&rd->shape, node, &b, &s);
	reader_lock(rd, b);
	rd->slot = s;
	data = KdamBlockData(BufferGetPage(rd->buf));
	rec = data + rd->layout.record * s;
	/* a fixed-size memcpy per value: dim is small, a call showed in profiles */
	for (int d = 0; d < dim; d++)
		memcpy(&out->coords[d], rec + sizeof(double) * d, sizeof(double));
	out->ref = ref_load(rec + kdam_record_ref(dim));
	out->split = (uint8) rec[kdam_record_split(dim)];
	out->box = NULL;
	if (want_box && node < rd->shape.nbounds)
	{
		const char *box = data + rd->layout.bounds + sizeof(double) * 2 * dim * s;

		for (int d = 0; d < 2 * dim; d++)
			memcpy(&out->boxdata[d], box + sizeof(double) * d, sizeof(double));
		out->box = out->boxdata;
	}
	if (!rd->hold)
		reader_unlock(rd);
}

/*
 * Prefetch the records of the children of the node read last, when they
 * are on its page: a search reads one of them next, and the cache misses
 * on its record (most of a node's reading time, in profiles) then overlap
 * the work on the node.  The page stays pinned, so its memory does not go.
 */
void
kdam_reader_prefetch_children(const KdamTreeReader *rd)
{
	int			per = (1 << rd->shape.levels[rd->range]) - 1;
	int			j = rd->slot % per;
	const char *first;

	if (2 * j + 1 >= per)
		return;
	first = KdamBlockData(BufferGetPage(rd->buf)) +
		rd->layout.record * (rd->slot - j + 2 * j + 1);
	/* the two children's records are consecutive, over at most two lines */
	__builtin_prefetch(first);
	__builtin_prefetch(first + 2 * rd->layout.record - 1);
}

/* Copy node i's payload words to out (index-only scans). */
void
kdam_reader_payload(KdamTreeReader *rd, int64 node, uint64 *out)
{
	int64		b;
	int			s;
	int			words = rd->shape.words;

	locate(&rd->shape, node, &b, &s);
	reader_lock(rd, b);
	memcpy(out, KdamBlockData(BufferGetPage(rd->buf)) + rd->layout.payload +
		   sizeof(uint64) * words * s, sizeof(uint64) * words);
	if (!rd->hold)
		reader_unlock(rd);
}

/*
 * While hold is set, a read leaves its page share-locked for the next read
 * of the same page, so that a walk over a page's nodes locks it once; the
 * lock moves with the walk from page to page (never two at once), and
 * clearing hold releases it.  A caller holds it only while it reads nodes,
 * never across a return to the executor.
 */
void
kdam_reader_hold(KdamTreeReader *rd, bool hold)
{
	rd->hold = hold;
	if (!hold)
		reader_unlock(rd);
}

/* Release the reader's pins. */
void
kdam_reader_end(KdamTreeReader *rd)
{
	kdam_reader_hold(rd, false);
	for (int i = 0; i < KDAM_READER_PINS; i++)
	{
		if (BufferIsValid(rd->pinned[i]))
			ReleaseBuffer(rd->pinned[i]);
		rd->pinned[i] = InvalidBuffer;
		rd->pinblock[i] = -1;
	}
	rd->buf = InvalidBuffer;
	rd->block = -1;
	for (int d = 0; rd->dirbufs && d < rd->ndir; d++)
		if (BufferIsValid(rd->dirbufs[d]))
		{
			ReleaseBuffer(rd->dirbufs[d]);
			rd->dirbufs[d] = InvalidBuffer;
		}
}
