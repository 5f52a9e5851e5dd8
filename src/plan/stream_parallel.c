/*
 * stream_parallel.c
 *	  One answer of a kdgpu function in FROM, shared by the processes of a
 *	  parallel query, which hand its rows up in parallel.
 *
 * The parallel streaming scan (stream_scan.c) answers the call once, in
 * the leader, when the parallel query starts (before its workers do), and
 * copies the answer into a DSM segment: the hits (unless no participant
 * reads them: a count needs only how many each query has), their
 * offsets, the output order, the query rows' refs and what the identity
 * columns need of the tables (how rows are identified, the partitions'
 * OIDs).  A large answer goes into the segment the backend kept from its
 * last large one (kept_segment.c), whose pages are mapped already: a new
 * segment is zero-filled and faulted in page by page, which cost more
 * than the rows' own making.  The kept segment is busy until the scan
 * ends; a second parallel scan in the same query makes a segment of its
 * own, and one left busy by a query that failed is free again in the next
 * transaction (its workers have exited).  The copy runs on the engine's
 * threads.  Every participant, the
 * leader included, then reads the rows from that one copy: each claims
 * the next KD_STREAM_CHUNK queries (in output order, fewer for small
 * answers) from an atomic counter in the scan's fixed shared state and
 * returns their rows, until none are left.  The queries' rows are thus
 * made and passed up (to a partial aggregate, a filter, a join) by all
 * participants at once, while the search itself runs once.  A worker maps
 * only the pages of the queries it claims.  An answer made in slices is
 * not shared: the leader hands up all its rows.
 *
 * The fixed shared state (KdStreamShared) sits in the parallel query's
 * DSM; the answer's segment is created by the leader and attached by each
 * worker, each mapping ending with its query.  A rescan of the Gather
 * above reuses the answer (the call's arguments are constants) and starts
 * the counter again.
 */
#include "postgres.h"

#include "port/atomics.h"
#include "storage/dsm.h"
#include "storage/proc.h"

#include "core/core.h"
#include "plan/plan.h"

/* queries handed out at a time: at most this, and at most 1/64 of them */
#define KD_STREAM_CHUNK 2048

/* the leader's last large shared answer, and the transaction that took it */
static KdgKeptSegment kept;
static LocalTransactionId kept_lxid = InvalidLocalTransactionId;

/* The scan's fixed shared state. */
struct KdStreamShared
{
	dsm_handle	handle;			/* the answer's segment, or DSM_HANDLE_INVALID */
	int64		chunk;			/* queries handed out at a time */
	pg_atomic_uint64 next;		/* first query not yet claimed */
};

/* The head of the answer's segment; the arrays follow, each MAXALIGNed. */
typedef struct KdSharedRows
{
	int64		nq;
	int64		nhits;
	KdQueryKey	key;
	bool		arrays;
	bool		has_hits;		/* hits[] is there */
	bool		ordered;		/* order[] is there */
	bool		has_qrefs;		/* qrefs[] is there */
	KdIdent		ident;			/* of the table searched */
	KdIdent		qident;			/* of the query rows' table */
	int			nparts;			/* partition OIDs of each, when they */
	int			qnparts;		/* identify rows by partition */
} KdSharedRows;

/* The byte size of the fixed shared state. */
Size
kdg_stream_shared_size(void)
{
	return sizeof(KdStreamShared);
}

/* How many partition OIDs of t the identity columns need. */
static int
kdg_shared_nparts(const KdTable *t)
{
	return t->ident == KD_IDENT_PART ? t->nparts : 0;
}

/*
 * Lay out an answer of nq queries and nhits hits in a segment at base (NULL
 * to measure): set the array pointers, return the size.
 */
static Size
kdg_shared_layout(char *base, const KdSharedRows *head, int64 **offsets,
				  KdHit **hits, int64 **order, uint64 **qrefs, Oid **partoids,
				  Oid **qpartoids)
{
	Size		at = MAXALIGN(sizeof(KdSharedRows));

#define KDG_PLACE(ptr, type, count) \
	do { \
		*(ptr) = (count) > 0 && base ? (type *) (base + at) : NULL; \
		at = add_size(at, MAXALIGN(mul_size(sizeof(type), (count)))); \
	} while (0)

	KDG_PLACE(offsets, int64, head->nq + 1);
	KDG_PLACE(hits, KdHit, head->has_hits ? head->nhits : 0);
	KDG_PLACE(order, int64, head->ordered ? head->nq : 0);
	KDG_PLACE(qrefs, uint64, head->has_qrefs ? head->nq : 0);
	KDG_PLACE(partoids, Oid, head->nparts);
	KDG_PLACE(qpartoids, Oid, head->qnparts);
#undef KDG_PLACE
	return at;
}

/* Rows over the answer in the segment at base, in CurrentMemoryContext. */
static KdRows *
kdg_shared_rows(char *base)
{
	KdSharedRows *head = (KdSharedRows *) base;
	KdAnswer   *ans = palloc0(sizeof(KdAnswer));
	KdTable    *t = palloc0(sizeof(KdTable));
	KdTable    *qt = palloc0(sizeof(KdTable));
	uint64	   *qrefs;
	KdRows	   *rows;

	kdg_shared_layout(base, head, &ans->offsets, &ans->hits, &ans->order,
					  &qrefs, &t->partoids, &qt->partoids);
	ans->nq = head->nq;
	t->ident = head->ident;
	t->nparts = head->nparts;
	qt->ident = head->qident;
	qt->nparts = head->qnparts;
	rows = kdg_rows_make(t, ans, head->key, qt, qrefs, head->arrays);
	kdg_rows_seek(rows, 0, 0);
	return rows;
}

/*
 * A segment of size bytes for a shared answer: the kept one for a large
 * answer, unless another scan of this transaction holds it.
 */
static dsm_segment *
kdg_shared_segment(Size size)
{
	dsm_segment *seg = NULL;

	if (kept.busy && kept_lxid != MyProc->lxid)
		(void) kdg_kept_segment_done(&kept, kept.seg);
	if (size >= KDG_KEPT_SEGMENT_MIN && !kept.busy)
	{
		seg = kdg_kept_segment_take(&kept, size);
		kept_lxid = MyProc->lxid;
	}
	return seg ? seg : dsm_create(size, 0);
}

/*
 * In the leader, as the parallel query starts: copy the answer of rows
 * (NULL: the call returns no rows) into a segment named in sh, its hits
 * only when read_hits, and return rows over that copy for the leader's
 * own part.  *segp is the segment, for kdg_stream_unshare at the scan's
 * end (NULL without rows).  The caller
 * frees its private answer, unless the rows returned are rows themselves:
 * an answer made in slices (output.c) is never whole to copy, so the
 * leader returns all its rows and the workers none.
 */
KdRows *
kdg_stream_share(KdStreamShared *sh, const KdRows *rows, bool read_hits,
				 dsm_segment **segp)
{
	KdSharedRows head;
	dsm_segment *seg;
	char	   *base;
	int64	   *offsets;
	KdHit	   *hits;
	int64	   *order;
	uint64	   *qrefs;
	Oid		   *partoids;
	Oid		   *qpartoids;

	pg_atomic_init_u64(&sh->next, 0);
	sh->handle = DSM_HANDLE_INVALID;
	*segp = NULL;
	if (rows == NULL)
		return NULL;
	/* an answer made in slices is not shared: the leader claims it all */
	if (rows->slice)
	{
		sh->chunk = Max(rows->nq, 1);
		kdg_rows_seek((KdRows *) rows, 0, 0);
		return (KdRows *) rows;
	}

	memset(&head, 0, sizeof(head));
	head.nq = rows->ans->nq;
	head.nhits = rows->ans->offsets[rows->ans->nq];
	head.key = rows->key;
	head.arrays = rows->arrays;
	head.has_hits = read_hits;
	head.ordered = rows->ans->order != NULL;
	head.has_qrefs = rows->qrefs != NULL;
	head.ident = rows->t->ident;
	head.nparts = kdg_shared_nparts(rows->t);
	if (rows->query_t)
	{
		head.qident = rows->query_t->ident;
		head.qnparts = kdg_shared_nparts(rows->query_t);
	}

	seg = kdg_shared_segment(kdg_shared_layout(NULL, &head, &offsets, &hits, &order,
											   &qrefs, &partoids, &qpartoids));
	base = dsm_segment_address(seg);
	memcpy(base, &head, sizeof(head));
	kdg_shared_layout(base, &head, &offsets, &hits, &order, &qrefs, &partoids,
					  &qpartoids);
	kdg_parallel_copy(offsets, rows->ans->offsets, sizeof(int64) * (head.nq + 1));
	if (hits)
		kdg_parallel_copy(hits, rows->ans->hits, sizeof(KdHit) * head.nhits);
	if (order)
		kdg_parallel_copy(order, rows->ans->order, sizeof(int64) * head.nq);
	if (qrefs)
		kdg_parallel_copy(qrefs, rows->qrefs, sizeof(uint64) * head.nq);
	if (partoids)
		memcpy(partoids, rows->t->partoids, sizeof(Oid) * head.nparts);
	if (qpartoids)
		memcpy(qpartoids, rows->query_t->partoids, sizeof(Oid) * head.qnparts);
	sh->handle = dsm_segment_handle(seg);
	sh->chunk = Max(Min(KD_STREAM_CHUNK, head.nq / 64), 1);
	*segp = seg;
	return kdg_shared_rows(base);
}

/*
 * In a worker: rows over the answer the leader shared in sh (NULL when the
 * call returns no rows), with no query claimed yet; *segp as above.
 */
KdRows *
kdg_stream_attach(KdStreamShared *sh, dsm_segment **segp)
{
	dsm_segment *seg;

	*segp = NULL;
	if (sh->handle == DSM_HANDLE_INVALID)
		return NULL;
	seg = dsm_attach(sh->handle);
	if (seg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("could not map the shared answer of a parallel kdgpu scan")));
	*segp = seg;
	return kdg_shared_rows(dsm_segment_address(seg));
}

/* At the scan's end, in any participant: the end of its use of seg. */
void
kdg_stream_unshare(dsm_segment *seg)
{
	if (seg && !kdg_kept_segment_done(&kept, seg))
		dsm_detach(seg);
}

/*
 * Point rows (NULL: no rows) at the next unclaimed queries; false when
 * every query has been claimed.
 */
bool
kdg_stream_claim(KdStreamShared *sh, KdRows *rows)
{
	uint64		from;

	if (rows == NULL)
		return false;
	from = pg_atomic_fetch_add_u64(&sh->next, (uint64) sh->chunk);
	if (from >= (uint64) rows->nq)
		return false;
	kdg_rows_seek(rows, (int64) from, (int64) from + sh->chunk);
	return true;
}

/* Before a rescan's workers start: every query is unclaimed again. */
void
kdg_stream_restart(KdStreamShared *sh)
{
	pg_atomic_write_u64(&sh->next, 0);
}
