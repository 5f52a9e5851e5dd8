/*
 * vam_vacuum.c
 *	  VACUUM of a kdvec index: dead rows' refs marked KDVAM_DEAD_REF in
 *	  place on the leaf, pending and null pages, then the interlock with
 *	  scans that are not under MVCC and the functions' reads (vam.h), and
 *	  the metapage's generation bumped when any row was marked.
 *
 * A page at a time under its exclusive lock, in block order; pages added
 * while VACUUM runs hold rows it cannot have been asked to remove.  The
 * space of dead rows stays until REINDEX.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "commands/vacuum.h"

#include "vam.h"

/*
 * Count the live rows of every page that holds rows, marking dead first
 * those callback names.
 */
static void
kdvam_vacuum_pages(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
				   IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	Buffer		metabuf = ReadBuffer(index, KDVAM_METAPAGE_BLKNO);
	int			dim;
	bool		marked = false;

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	kdvam_check_meta(index, KdvamPageGetMeta(BufferGetPage(metabuf)));
	dim = KdvamPageGetMeta(BufferGetPage(metabuf))->dim;
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);

	for (BlockNumber blkno = KDVAM_METAPAGE_BLKNO + 1; blkno < nblocks; blkno++)
	{
		Buffer		buf;
		Page		page;
		uint16		flags;
		Size		size;
		int			n;
		bool		any = false;
		bool	   *dead;

		vacuum_delay_point();
		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL,
								 info->strategy);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		page = BufferGetPage(buf);
		flags = PageIsNew(page) ? 0 : KdvamPageGetOpaque(page)->flags;
		if (!(flags & (KDVAM_LEAF | KDVAM_PENDING | KDVAM_NULLS)))
		{
			UnlockReleaseBuffer(buf);
			continue;
		}
		size = (flags & KDVAM_NULLS) ? sizeof(uint64) : KDVAM_ROW_SIZE(dim);
		n = kdvam_page_count(page, size);
		dead = palloc0(sizeof(bool) * Max(n, 1));
		for (int i = 0; i < n; i++)
		{
			uint64		ref;
			ItemPointerData tid;

			memcpy(&ref, kdvam_page_record(page, size, i), sizeof(uint64));
			if (ref == KDVAM_DEAD_REF)
				continue;
			kdg_ref_to_tid(ref, &tid);
			if (callback(&tid, callback_state))
			{
				dead[i] = any = true;
				stats->tuples_removed += 1;
			}
			else
				stats->num_index_tuples += 1;
		}
		if (any)
		{
			GenericXLogState *state = GenericXLogStart(index);
			Page		wpage = GenericXLogRegisterBuffer(state, buf, 0);
			uint64		deadref = KDVAM_DEAD_REF;

			for (int i = 0; i < n; i++)
				if (dead[i])
					memcpy(kdvam_page_record(wpage, size, i), &deadref, sizeof(uint64));
			GenericXLogFinish(state);
			marked = true;
		}
		pfree(dead);
		UnlockReleaseBuffer(buf);
	}
	stats->num_pages = nblocks;

	/*
	 * wait out the scans that return rows without the heap's check, and
	 * the functions' reads of the rows; then name the rows left anew
	 */
	LockBufferForCleanup(metabuf);
	if (marked)
	{
		GenericXLogState *state = GenericXLogStart(index);
		Page		page = GenericXLogRegisterBuffer(state, metabuf, 0);
		KdvamMetaPageData *meta = KdvamPageGetMeta(page);

		meta->generation++;
		/* a metapage written before the generation was kept ends short */
		((PageHeader) page)->pd_lower =
			((char *) meta + sizeof(KdvamMetaPageData)) - (char *) page;
		GenericXLogFinish(state);
	}
	UnlockReleaseBuffer(metabuf);
}

/* ambulkdelete */
IndexBulkDeleteResult *
kdvam_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
				 IndexBulkDeleteCallback callback, void *callback_state)
{
	if (stats == NULL)
		stats = palloc0(sizeof(IndexBulkDeleteResult));
	stats->num_index_tuples = 0;
	kdvam_vacuum_pages(info, stats, callback, callback_state);
	return stats;
}

/*
 * amvacuumcleanup: when no bulkdelete counted the rows, the metapage's
 * counts as an estimate (dead rows included), so that a VACUUM with
 * nothing to remove does not read the whole index
 */
IndexBulkDeleteResult *
kdvam_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	Buffer		metabuf;
	KdvamMetaPageData *meta;

	if (info->analyze_only || stats != NULL)
		return stats;
	stats = palloc0(sizeof(IndexBulkDeleteResult));
	metabuf = ReadBuffer(info->index, KDVAM_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	meta = KdvamPageGetMeta(BufferGetPage(metabuf));
	kdvam_check_meta(info->index, meta);
	stats->num_index_tuples = (double) (meta->ntree + meta->npending + meta->nnull);
	UnlockReleaseBuffer(metabuf);
	stats->estimated_count = true;
	stats->num_pages = RelationGetNumberOfBlocks(info->index);
	return stats;
}
