/*
 * vam_build.c
 *	  CREATE INDEX of a kdvec index: the table's vectors read into memory,
 *	  their vantage-point tree built by the engine (kde_vp_build), and its
 *	  nodes and leaves written on consecutive pages.
 *
 * The tree is built, and probed, on kdgpu.cpu_threads threads.  The pages
 * go through shared buffers in block order, the metapage first,
 * then the node pages, the leaf pages and the null chain, each block's
 * number known before it is written; log_newpage_range then logs them all,
 * as GiST's sorted build does.  Every vector must be finite and of the
 * same dimension; rows whose value is NULL or an empty array go to the
 * null chain.  The whole table's vectors sit in memory during the build.
 * The build probes the tree (kde_vp_probe) and keeps the share of rows a
 * search compared for the cost estimate.
 */
#include "postgres.h"

#include <math.h>

#include "access/tableam.h"
#include "access/xloginsert.h"
#include "commands/progress.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/array.h"

#include "vam.h"

/* What the table scan gathers. */
typedef struct KdvamBuildState
{
	Relation	heap;
	int			dim;
	int64		n;				/* vectors */
	int64		cap;
	double	   *coords;
	uint64	   *refs;
	int64		nnull;			/* rows with no vector */
	int64		nullcap;
	uint64	   *nulls;
} KdvamBuildState;

/* Where the tree goes on pages: each engine node's child ref. */
typedef struct KdvamLayout
{
	KdvamChild *child;			/* of engine node i: a node number or leaf */
	int64		ninner;
	BlockNumber node_first;
	BlockNumber leaf_first;
	int			rows_per_page;
} KdvamLayout;

/* table_index_build_scan's callback: gather one row. */
static void
kdvam_build_callback(Relation index, ItemPointer tid, Datum *values,
					 bool *isnull, bool tupleIsAlive, void *state)
{
	KdvamBuildState *bs = (KdvamBuildState *) state;
	KdWhere		where = {NULL, 0};
	ArrayType  *arr = NULL;
	int			dim;

	where.tid = *tid;
	where.relid = RelationGetRelid(bs->heap);
	dim = isnull[0] ? 0 : kdg_array_view(values[0], KDVAM_MAX_DIM, &where, &arr);
	if (dim == 0)
	{
		if (bs->nnull == bs->nullcap)
		{
			bs->nullcap *= 2;
			bs->nulls = repalloc_huge(bs->nulls, sizeof(uint64) * bs->nullcap);
		}
		bs->nulls[bs->nnull++] = kdg_tid_to_ref(tid);
	}
	else
	{
		if (bs->dim == 0)
		{
			bs->dim = dim;
			bs->coords = palloc_extended(sizeof(double) * bs->cap * dim,
										 MCXT_ALLOC_HUGE);
		}
		else if (dim != bs->dim)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("%s has %d coordinates, the vectors before it %d",
							kdg_where_text(&where), dim, bs->dim),
					 errhint("A kdvec index holds vectors of one dimension.")));
		if (bs->n == bs->cap)
		{
			bs->cap *= 2;
			bs->refs = repalloc_huge(bs->refs, sizeof(uint64) * bs->cap);
			bs->coords = repalloc_huge(bs->coords, sizeof(double) * bs->cap * dim);
		}
		memcpy(bs->coords + bs->n * dim, ARR_DATA_PTR(arr), sizeof(double) * dim);
		bs->refs[bs->n++] = kdg_tid_to_ref(tid);
	}
	if (arr != NULL && (Pointer) arr != DatumGetPointer(values[0]))
		pfree(arr);
}

/*
 * Place tree's nodes: inner nodes numbered in preorder on node pages from
 * block 1, then each leaf's rows on its own run of pages.
 */
static void
kdvam_layout(const KdVpTree *tree, int dim, KdvamLayout *lay)
{
	int			per_node_page = KDVAM_NODES_PER_PAGE(dim);
	BlockNumber next;

	lay->child = palloc_extended(sizeof(KdvamChild) * tree->nnodes, MCXT_ALLOC_HUGE);
	lay->ninner = 0;
	for (int64 i = 0; i < tree->nnodes; i++)
		if (tree->nodes[i].vp >= 0)
			lay->child[i] = lay->ninner++;
	lay->node_first = KDVAM_METAPAGE_BLKNO + 1;
	lay->leaf_first = lay->node_first +
		(BlockNumber) ((lay->ninner + per_node_page - 1) / per_node_page);
	next = lay->leaf_first;
	for (int64 i = 0; i < tree->nnodes; i++)
		if (tree->nodes[i].vp < 0)
		{
			lay->child[i] = KDVAM_LEAF_CHILD(next);
			next += (BlockNumber) ((tree->nodes[i].count + lay->rows_per_page - 1) /
								   lay->rows_per_page);
		}
}

/* A new page of kind flags, which must become block blkno. */
static Buffer
kdvam_build_page(Relation index, uint16 flags, BlockNumber blkno)
{
	Buffer		buf = kdvam_extend(index);

	if (BufferGetBlockNumber(buf) != blkno)
		elog(ERROR, "kdvec build of \"%s\" got block %u, not %u",
			 RelationGetRelationName(index), BufferGetBlockNumber(buf), blkno);
	kdvam_init_page(BufferGetPage(buf), flags);
	return buf;
}

/* Mark buf dirty and let it go. */
static void
kdvam_build_done(Buffer buf)
{
	MarkBufferDirty(buf);
	UnlockReleaseBuffer(buf);
}

/* Write tree's inner nodes on the node pages. */
static void
kdvam_write_nodes(Relation index, const KdVpTree *tree, const KdvamLayout *lay,
				  const KdvamBuildState *bs)
{
	Size		size = KDVAM_NODE_SIZE(bs->dim);
	KdvamNode  *rec = palloc(size);
	Buffer		buf = InvalidBuffer;
	BlockNumber blkno = lay->node_first;

	for (int64 i = 0; i < tree->nnodes; i++)
	{
		const KdVpNode *nd = &tree->nodes[i];

		if (nd->vp < 0)
			continue;
		rec->inside = lay->child[nd->inside];
		rec->outside = lay->child[nd->outside];
		rec->mu_in = nd->mu_in;
		rec->mu_out = nd->mu_out;
		memcpy(rec->vp, bs->coords + nd->vp * bs->dim, sizeof(double) * bs->dim);
		if (!BufferIsValid(buf) || !kdvam_page_add(BufferGetPage(buf), rec, size))
		{
			if (BufferIsValid(buf))
				kdvam_build_done(buf);
			CHECK_FOR_INTERRUPTS();
			buf = kdvam_build_page(index, KDVAM_NODE, blkno++);
			kdvam_page_add(BufferGetPage(buf), rec, size);
		}
	}
	if (BufferIsValid(buf))
		kdvam_build_done(buf);
	pfree(rec);
}

/* Write each leaf's rows on its run of leaf pages. */
static void
kdvam_write_leaves(Relation index, const KdVpTree *tree, const KdvamLayout *lay,
				   const KdvamBuildState *bs)
{
	Size		size = KDVAM_ROW_SIZE(bs->dim);
	char	   *rec = palloc(size);
	int64		done = 0;

	for (int64 i = 0; i < tree->nnodes; i++)
	{
		const KdVpNode *nd = &tree->nodes[i];
		BlockNumber blkno = KDVAM_LEAF_BLOCK(lay->child[i]);
		Buffer		buf = InvalidBuffer;

		if (nd->vp >= 0)
			continue;
		for (int64 r = nd->start; r < nd->start + nd->count; r++)
		{
			int64		row = tree->order[r];

			memcpy(rec, &bs->refs[row], sizeof(uint64));
			memcpy(rec + sizeof(uint64), bs->coords + row * bs->dim,
				   sizeof(double) * bs->dim);
			if (!BufferIsValid(buf) || !kdvam_page_add(BufferGetPage(buf), rec, size))
			{
				if (BufferIsValid(buf))
				{
					KdvamPageGetOpaque(BufferGetPage(buf))->next = blkno;
					kdvam_build_done(buf);
				}
				CHECK_FOR_INTERRUPTS();
				buf = kdvam_build_page(index, KDVAM_LEAF, blkno++);
				kdvam_page_add(BufferGetPage(buf), rec, size);
			}
		}
		kdvam_build_done(buf);
		done += nd->count;
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, done);
	}
	pfree(rec);
}

/* Write the null rows' refs as the null chain from block blkno on. */
static void
kdvam_write_nulls(Relation index, const KdvamBuildState *bs, BlockNumber blkno,
				  KdvamMetaPageData *meta)
{
	Buffer		buf = InvalidBuffer;

	for (int64 i = 0; i < bs->nnull; i++)
		if (!BufferIsValid(buf) ||
			!kdvam_page_add(BufferGetPage(buf), &bs->nulls[i], sizeof(uint64)))
		{
			if (BufferIsValid(buf))
			{
				KdvamPageGetOpaque(BufferGetPage(buf))->next = blkno;
				kdvam_build_done(buf);
			}
			else
				meta->null_head = blkno;
			meta->null_tail = blkno;
			buf = kdvam_build_page(index, KDVAM_NULLS, blkno++);
			kdvam_page_add(BufferGetPage(buf), &bs->nulls[i], sizeof(uint64));
		}
	if (BufferIsValid(buf))
		kdvam_build_done(buf);
	meta->nnull = bs->nnull;
}

/* ambuild */
IndexBuildResult *
kdvam_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result = palloc0(sizeof(IndexBuildResult));
	KdvamBuildState bs;
	KdvamMetaPageData meta;
	KdvamLayout lay;
	KdVpTree	tree;
	Buffer		metabuf;
	BlockNumber next;
	double		reltuples;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data",
			 RelationGetRelationName(index));
	memset(&bs, 0, sizeof(bs));
	bs.heap = heap;
	bs.cap = bs.nullcap = 1024;
	bs.refs = palloc(sizeof(uint64) * bs.cap);
	bs.nulls = palloc(sizeof(uint64) * bs.nullcap);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   kdvam_build_callback, &bs, NULL);

	/*
	 * block 0 first, so that the tree follows it; not kept locked, which
	 * would hold off cancels through the build (no one else sees the index)
	 */
	metabuf = kdvam_extend(index);
	Assert(BufferGetBlockNumber(metabuf) == KDVAM_METAPAGE_BLKNO);
	kdvam_init_metapage(BufferGetPage(metabuf), kdvam_index_metric(index));
	meta = *KdvamPageGetMeta(BufferGetPage(metabuf));
	kdvam_build_done(metabuf);
	meta.dim = bs.dim;
	next = KDVAM_METAPAGE_BLKNO + 1;
	if (bs.n > 0)
	{
		KdVectors	set = {bs.n, bs.dim, bs.dim, bs.coords, NULL};
		KdError		err;
		KdExec		exec;
		int			per_page = KDVAM_PAGE_SPACE / KDVAM_ROW_SIZE(bs.dim);

		pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, KDVAM_PHASE_TREE);
		kdg_exec_prepare(&exec);
		kdg_check_status(kde_vp_build(&set, (KdMetric) meta.metric,
									  Max(per_page, 2), &tree, &exec, &err),
						 &err, NULL, "vantage-point tree build");
		PG_TRY();
		{
			pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, KDVAM_PHASE_WRITE);
			pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL, bs.n);
			lay.rows_per_page = per_page;
			kdvam_layout(&tree, bs.dim, &lay);
			meta.probe_share = kde_vp_probe(&set, (KdMetric) meta.metric, &tree,
											KDVAM_PROBE_K, KDVAM_PROBES, &exec);
			if (meta.probe_share < 0.0)
			{
				CHECK_FOR_INTERRUPTS();
				meta.probe_share = 1.0;
			}
			kdvam_write_nodes(index, &tree, &lay, &bs);
			kdvam_write_leaves(index, &tree, &lay, &bs);
		}
		PG_FINALLY();
		{
			kde_vp_free(&tree);
		}
		PG_END_TRY();
		meta.root = lay.child[0];
		meta.ntree = bs.n;
		meta.node_first = lay.node_first;
		next = RelationGetNumberOfBlocks(index);
	}
	kdvam_write_nulls(index, &bs, next, &meta);
	metabuf = ReadBuffer(index, KDVAM_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	*KdvamPageGetMeta(BufferGetPage(metabuf)) = meta;
	kdvam_build_done(metabuf);

	if (RelationNeedsWAL(index))
		log_newpage_range(index, MAIN_FORKNUM, 0, RelationGetNumberOfBlocks(index),
						  true);
	if (bs.n >= 1000 && meta.probe_share >= KDVAM_PROBE_POOR)
		ereport(NOTICE,
				(errmsg("a search of index \"%s\" compares about %d%% of its vectors",
						RelationGetRelationName(index),
						(int) Min(rint(meta.probe_share * 100.0), 100.0)),
				 errdetail("Its vectors have little structure a vantage-point tree can use."),
				 errhint("The planner weighs that share against a sequential scan of the table.")));
	result->heap_tuples = reltuples;
	result->index_tuples = (double) (bs.n + bs.nnull);
	return result;
}

/* ambuildempty: the init fork of an unlogged index holds an empty metapage */
void
kdvam_buildempty(Relation index)
{
	Page		page = (Page) palloc(BLCKSZ);

	kdvam_init_metapage(page, kdvam_index_metric(index));
	PageSetChecksumInplace(page, KDVAM_METAPAGE_BLKNO);
	smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, KDVAM_METAPAGE_BLKNO,
			  (char *) page, true);
	log_newpage(&(RelationGetSmgr(index))->smgr_rnode.node, INIT_FORKNUM,
				KDVAM_METAPAGE_BLKNO, page, true);
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
	pfree(page);
}
