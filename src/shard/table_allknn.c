/*
 * table_allknn.c
 *	  All-kNN over the leaves of a partitioned table, local or foreign: each
 *	  leaf answers its own points' All-kNN, and a point is asked of another
 *	  leaf only when its ball reaches that leaf's region.
 *
 * Every leaf first answers the All-kNN of its own points (a local leaf
 * through the engine, a foreign one on its server, which sends its points
 * and their answers in binary chunks: chunks_funcs.c, remote.c, read as
 * they arrive where every foreign leaf has a connection of its own:
 * remote_stream.c), which gives
 * each point p its k-th distance d(p) within its own leaf (infinite when
 * the leaf has k points or fewer).  p's k nearest rows of the whole table
 * lie within d(p), so another leaf can hold one only if its bounding box
 * (of its points' coordinates) comes within d(p) of p: only then is p sent
 * there as a kNN query (local leaves are searched here, foreign ones get
 * the queries as one kd_knn_join on their server).  The answers merge by
 * (distance, ref) as in table_search.c.  Spatially split leaves need few
 * such queries, leaves split by hash need nearly all; the count is
 * reported at DEBUG1.
 *
 * The box test is made in the coordinates of the engine, which are those
 * of the metric for point, float8[] and geometry; for geography (unit
 * vectors, distances in metres), and for leaves searched flat (vectors of
 * many dimensions, or another metric: flat_search.c), every point is sent
 * to every other leaf and no box is made.
 * The test is loose by a relative KD_LEAF_BOX_REL (exactness.h), far above
 * the rounding of both sides, so a leaf that may hold a neighbour is never
 * skipped.  All
 * foreign leaves' calls of one round are sent before any answer is read
 * (partitions on one server take turns on its connection).
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "portability/instr_time.h"

#include "shard/shard.h"

/* The bounding box of a leaf's points, in engine coordinates. */
typedef struct KdBox
{
	double		lo[KD_MAX_DIM];
	double		hi[KD_MAX_DIM];
} KdBox;

/* The bounding box of src's points. */
static void
kdg_leaf_box(const KdSource *src, KdBox *box)
{
	for (int d = 0; d < src->dim; d++)
	{
		box->lo[d] = INFINITY;
		box->hi[d] = -INFINITY;
	}
	for (int64 i = 0; i < src->n; i++)
	{
		const double *c = kdg_row_coords(src, i);

		for (int d = 0; d < src->dim; d++)
		{
			box->lo[d] = Min(box->lo[d], c[d]);
			box->hi[d] = Max(box->hi[d], c[d]);
		}
	}
}

/* Whether a point within r of p may lie in box (the test is loose). */
static bool
kdg_ball_reaches(const double *p, int dim, const KdBox *box, double r)
{
	double		d2 = 0;

	for (int d = 0; d < dim; d++)
	{
		double		gap = Max(box->lo[d] - p[d], p[d] - box->hi[d]);

		if (gap > 0)
			d2 += gap * gap;
	}
	return sqrt(d2) <= r * (1.0 + KD_LEAF_BOX_REL);
}

/*
 * The answers of every point of the table, gathered with room for k hits a
 * point: point g's hits are hits[g * k .. g * k + count[g]).  Answers from
 * other leaves merge into them in place; kdg_gather_answer closes the gaps.
 */
typedef struct KdGather
{
	KdHit	   *hits;
	int		   *count;
	int64		n;
	int			k;
	KdHit	   *merged;			/* room for one point's merge */
} KdGather;

/* Room for n points' answers of k hits each, none yet. */
static void
kdg_gather_init(KdGather *g, int64 n, int k)
{
	g->hits = kdg_alloc_large(CurrentMemoryContext, sizeof(KdHit) * n * k, false);
	g->count = kdg_alloc_large(CurrentMemoryContext, sizeof(int) * n, true);
	g->n = n;
	g->k = k;
	g->merged = palloc(sizeof(KdHit) * k);
}

/* What the threads of kdg_gather_own share. */
typedef struct KdGatherOwn
{
	KdGather   *g;
	const KdAnswer *own;
	int64		first;
} KdGatherOwn;

/* kde_parallel_for body of kdg_gather_own: the leaf's points begin .. end. */
static void
kdg_gather_own_range(void *arg, int64_t begin, int64_t end)
{
	KdGatherOwn *o = arg;
	KdGather   *g = o->g;

	for (int64 i = begin; i < end; i++)
	{
		int64		nb;
		const KdHit *b = kdg_answer_hits(o->own, i, &nb);

		nb = Min(nb, g->k);
		memcpy(g->hits + (o->first + i) * g->k, b, sizeof(KdHit) * nb);
		g->count[o->first + i] = (int) nb;
	}
}

/*
 * Put a local leaf's own answers, those of points first .. first + nq, in
 * place, on the engine's threads (bound by mapping the new pages).
 */
static void
kdg_gather_own(KdGather *g, const KdAnswer *own, int64 first, int64 nq)
{
	KdGatherOwn o = {g, own, first};

	kdg_parallel_for(nq, 16384, kdg_gather_own_range, &o);
}

/*
 * Merge part, the answers to nq queries of which query i is point idx[i],
 * into the gathered answers.
 */
static void
kdg_gather_merge(KdGather *g, const KdAnswer *part, const int64 *idx, int64 nq)
{
	for (int64 i = 0; i < nq; i++)
	{
		int64		p = idx[i];
		KdHit	   *mine = g->hits + p * g->k;
		int64		nb;
		const KdHit *b = kdg_answer_hits(part, i, &nb);

		if (nb == 0)
			continue;
		g->count[p] = kdg_hits_merge(mine, g->count[p], b, nb, g->merged, g->k);
		memcpy(mine, g->merged, sizeof(KdHit) * g->count[p]);
	}
}

/*
 * The gathered answers as one answer, the gaps closed in place.  Points
 * before the first gap are where they stay and are not moved: when every
 * point has k hits (a table of more than k rows), that is all of them.
 */
static KdAnswer *
kdg_gather_answer(KdGather *g)
{
	KdAnswer   *out = palloc0(sizeof(KdAnswer));
	int64		at = 0;

	out->nq = g->n;
	out->offsets = kdg_alloc_large(CurrentMemoryContext, sizeof(int64) * (g->n + 1), false);
	for (int64 p = 0; p < g->n; p++)
	{
		out->offsets[p] = at;
		if (at != p * g->k)
			memmove(g->hits + at, g->hits + p * g->k, sizeof(KdHit) * g->count[p]);
		at += g->count[p];
	}
	out->offsets[g->n] = at;
	out->hits = g->hits;
	pfree(g->count);
	pfree(g->merged);
	return out;
}

/* What the threads of kdg_leaf_boxes and kdg_cross_plan share. */
typedef struct KdCrossPlan
{
	const KdTable *t;
	KdBox	   *boxes;
	const KdGather *all;
	const int64 *first;
	int64	  **idx;
	bool		everywhere;		/* every point is asked of every leaf */
	char	   *asked;			/* per point: asked of another leaf */
	int			nseg;			/* segments of the points, per leaf asked */
	int64	   *at;				/* per (leaf, segment): its points, then its
								 * next place in idx[leaf] */
	bool		write;			/* the second pass: fill idx and asked */
} KdCrossPlan;

/* kde_parallel_for body of kdg_leaf_boxes: leaves begin .. end. */
static void
kdg_leaf_boxes_range(void *arg, int64_t begin, int64_t end)
{
	KdCrossPlan *c = arg;

	for (int64 p = begin; p < end; p++)
		if (c->t->parts[p].n > 0)
			kdg_leaf_box(&c->t->parts[p], &c->boxes[p]);
}

/* The bounding box of each leaf's points, leaves on the engine's threads. */
static void
kdg_leaf_boxes(const KdTable *t, KdBox *boxes)
{
	KdCrossPlan c = {t, boxes};

	kdg_parallel_for(t->nparts, 1, kdg_leaf_boxes_range, &c);
}

/*
 * kde_parallel_for body of kdg_cross_plan: for each item begin .. end, a
 * segment of the table's points for leaf m = item / nseg, the points of
 * the segment in other leaves whose ball reaches m's box: counted in the
 * first pass, put in idx[m] in the second (ascending, from the item's
 * place).
 */
static void
kdg_cross_plan_range(void *arg, int64_t begin, int64_t end)
{
	KdCrossPlan *c = arg;
	const KdTable *t = c->t;
	const KdGather *all = c->all;
	int			k = all->k;
	int64		n = c->first[t->nparts];

	for (int64 item = begin; item < end; item++)
	{
		int			m = item / c->nseg;
		int			s = item % c->nseg;
		int64		hi = n * (s + 1) / c->nseg;
		int			p = 0;

		if (t->parts[m].n == 0)
			continue;
		for (int64 g = n * s / c->nseg; g < hi; g++)
		{
			double		r;

			while (g >= c->first[p + 1])
				p++;
			if (p == m)
			{
				/* the leaf's own points: on to the next leaf */
				g = c->first[p + 1] - 1;
				continue;
			}
			/* the k-th distance within its own leaf, when it has k */
			r = all->count[g] == k ? all->hits[g * k + k - 1].dist : INFINITY;
			if (!c->everywhere &&
				!kdg_ball_reaches(kdg_row_coords(&t->parts[p], g - c->first[p]),
								  t->head.dim, &c->boxes[m], r))
				continue;
			if (!c->write)
			{
				c->at[item]++;
				continue;
			}
			c->idx[m][c->at[item]++] = g;
			__atomic_store_n(&c->asked[g], 1, __ATOMIC_RELAXED);
		}
	}
}

/*
 * For each leaf m, the points of the other leaves that must be asked of it
 * (their own k-th distance reaches m's box, or all of them when there are
 * no boxes): idx[m][0 .. nidx[m]), in ascending order; *nasked is the
 * number of points asked of any.  The points are split into segments for
 * each leaf, so that every engine thread has work however few the leaves,
 * and each segment's points are counted, then placed.
 */
static void
kdg_cross_plan(const KdTable *t, const KdGather *all, KdBox *boxes,
			   const int64 *first, int64 **idx, int64 *nidx, int64 *nasked)
{
	int			np = t->nparts;
	KdCrossPlan c = {t, boxes, all, first, idx, boxes == NULL};
	int64		n = first[np];
	int64		nitems;

	c.nseg = Max(1, (4 * kdg_cpu_threads() + np - 1) / np);
	nitems = (int64) np * c.nseg;
	c.asked = kdg_alloc_large(CurrentMemoryContext, n, true);
	c.at = palloc0_array(int64, nitems);
	kdg_parallel_for(nitems, 1, kdg_cross_plan_range, &c);
	for (int m = 0; m < np; m++)
	{
		nidx[m] = 0;
		for (int s = 0; s < c.nseg; s++)
		{
			int64		count = c.at[(int64) m * c.nseg + s];

			c.at[(int64) m * c.nseg + s] = nidx[m];
			nidx[m] += count;
		}
		if (nidx[m] > 0)
			idx[m] = kdg_alloc_large(CurrentMemoryContext, sizeof(int64) * nidx[m], false);
	}
	c.write = true;
	kdg_parallel_for(nitems, 1, kdg_cross_plan_range, &c);
	*nasked = 0;
	for (int64 g = 0; g < n; g++)
		*nasked += c.asked[g];
	pfree(c.at);
	pfree(c.asked);
}

/*
 * Whether no two of t's foreign leaves share a connection, so that every
 * one's own All-kNN is in flight at once and can be read as it arrives.
 */
static bool
kdg_remote_conns_apart(const KdTable *t)
{
	for (int p = 0; p < t->nparts; p++)
		for (int q = p + 1; q < t->nparts; q++)
			if (t->parts[p].remote && t->parts[q].remote &&
				kdg_remote_conn(&t->parts[p]) == kdg_remote_conn(&t->parts[q]))
				return false;
	return true;
}

/*
 * Every point's k nearest rows of the table, exact; answer i belongs to the
 * table's i-th point, leaf after leaf (through ans->order for a plain
 * table, as kdg_search_all_knn gives it).  A foreign leaf's points are read
 * from its server on the way.
 */
KdAnswer *
kdg_table_all_knn(KdTable *t, int k, bool include_self)
{
	int			np = t->nparts;
	KdAnswer  **own = palloc0(sizeof(KdAnswer *) * Max(np, 1));
	const KdgTree **trees = palloc0(sizeof(KdgTree *) * Max(np, 1));
	int64	   *first = palloc0(sizeof(int64) * (np + 1));
	KdBox	   *boxes = palloc(sizeof(KdBox) * Max(np, 1));
	int64	  **idx = palloc0(sizeof(int64 *) * Max(np, 1));
	int64	   *nidx = palloc0(sizeof(int64) * Max(np, 1));
	char	  **cross = palloc0(sizeof(char *) * Max(np, 1));
	KdParams   *crossp = palloc0(sizeof(KdParams) * Max(np, 1));
	/* what foreign leaves run: their own All-kNN, then kNN queries */
	char	   *schema = t->nremote ? kdg_remote_kdgpu_schema() : NULL;
	char	   *fn = t->nremote ? psprintf("%s.kd_all_knn_chunks", schema) : NULL;
	char	   *join = t->nremote ? psprintf("%s.kd_knn_join_chunks", schema) : NULL;
	/* foreign leaves' answers read as they arrive, when all are sent at once */
	bool		stream = t->nremote > 0 && kdg_remote_conns_apart(t);
	KdChunkStream *streams = stream ? palloc0(sizeof(KdChunkStream) * np) : NULL;
	KdSource   *lead = NULL;
	int			full;
	KdGather	all;
	int64		n;
	int64		nqueries = 0;
	int64		nasked = 0;
	instr_time	start;
	instr_time	read_at;		/* every leaf's own answer read, or begun */
	instr_time	filled_at;		/* every leaf's own answer in place */
	instr_time	merged_at;		/* the keys checked, the cross queries planned */
	instr_time	done_at;

	if (!t->partitioned)
		return kdg_search_all_knn(&t->head, kdg_source_search_tree(&t->head, t->head.n, true), k, include_self);

	INSTR_TIME_SET_CURRENT(start);
	/* each leaf's own All-kNN, the foreign leaves' on their servers */
	for (int p = 0; p < np; p++)
		if (t->parts[p].remote && kdg_remote_can_send(t, p))
			kdg_remote_all_knn_send(t, p, fn, k, include_self, stream);
	for (int p = 0; p < np; p++)
		if (t->parts[p].remote == NULL && t->parts[p].n > 0)
		{
			trees[p] = kdg_source_search_tree(&t->parts[p], t->parts[p].n, true);
			own[p] = kdg_search_all_knn(&t->parts[p], trees[p], k, include_self);
		}
	if (stream)
		kdg_remote_all_knn_heads(t, k, streams);
	else if (t->nremote > 0)
	{
		kdg_remote_drain(t, true);
		for (int p = 0; p < np; p++)
			if (t->parts[p].remote)
			{
				if (!kdg_remote_in_flight(&t->parts[p]))
					kdg_remote_all_knn_send(t, p, fn, k, include_self, false);
				kdg_remote_all_knn_points(t, p, k);
			}
	}
	INSTR_TIME_SET_CURRENT(read_at);

	/* the points, leaf after leaf, all of one dimension */
	for (int p = 0; p < np; p++)
	{
		first[p + 1] = first[p] + t->parts[p].n;
		if (t->parts[p].n == 0)
			continue;
		if (lead == NULL)
			lead = &t->parts[p];
		else
			kdg_source_check_dims(lead, &t->parts[p]);
	}
	n = first[np];
	t->head.n = n;
	if (n == 0)
		return kdg_empty_answer(0);
	t->head.dim = lead->dim;
	t->head.info = lead->info;

	/*
	 * each leaf's own answers in place, a foreign leaf's points with them;
	 * streamed ones (remote_stream.c) as the rest of their chunks arrive
	 */
	kdg_gather_init(&all, n, k);
	for (int p = 0; p < np; p++)
		if (t->parts[p].remote && stream)
		{
			streams[p].hits = all.hits + first[p] * k;
			streams[p].count = all.count + first[p];
		}
		else if (t->parts[p].remote)
			kdg_remote_all_knn_fill(t, p, k, all.hits + first[p] * k, all.count + first[p]);
		else if (t->parts[p].n > 0)
		{
			kdg_gather_own(&all, own[p], first[p], t->parts[p].n);
			pfree(own[p]->hits);
		}
	if (stream)
		kdg_remote_all_knn_stream(t, streams);
	INSTR_TIME_SET_CURRENT(filled_at);
	if (t->head.type == KD_TYPE_GEOGRAPHY || kdg_source_flat(lead))
		boxes = NULL;
	else
		kdg_leaf_boxes(t, boxes);
	/* with the foreign leaves' points read, keys are checked over them all */
	if (t->nremote > 0)
		kdg_check_keys_unique(t);
	full = t->head.dim + t->head.extra;

	/* the points whose ball reaches another leaf, for each leaf */
	kdg_cross_plan(t, &all, boxes, first, idx, nidx, &nasked);
	INSTR_TIME_SET_CURRENT(merged_at);

	/* those queries: sent to the foreign leaves, searched in the local ones */
	for (int m = 0; m < np; m++)
	{
		double	   *q;
		int			p = 0;

		if (nidx[m] == 0)
			continue;
		nqueries += nidx[m];
		q = palloc_extended(sizeof(double) * full * nidx[m], MCXT_ALLOC_HUGE);
		/* idx[m] ascends, so its points' leaves do too */
		for (int64 i = 0; i < nidx[m]; i++)
		{
			while (idx[m][i] >= first[p + 1])
				p++;
			memcpy(q + i * full, kdg_row_coords(&t->parts[p], idx[m][i] - first[p]),
				   sizeof(double) * full);
		}
		if (t->parts[m].remote)
		{
			cross[m] = psprintf("%s, %d", kdg_remote_points(&crossp[m], &t->head, q, nidx[m]), k);
			if (kdg_remote_can_send(t, m))
				kdg_remote_send(t, m, join, cross[m], &crossp[m], true, true, true);
		}
		else
			kdg_gather_merge(&all, kdg_search_knn(&t->parts[m], trees[m], q, nidx[m], k),
							 idx[m], nidx[m]);
		pfree(q);
		CHECK_FOR_INTERRUPTS();
	}
	if (t->nremote > 0)
		kdg_remote_drain(t, nqueries >= KD_LARGE_ANSWER);
	for (int m = 0; m < np; m++)
		if (cross[m])
		{
			if (!kdg_remote_in_flight(&t->parts[m]))
				kdg_remote_send(t, m, join, cross[m], &crossp[m], true, true, true);
			kdg_gather_merge(&all, kdg_remote_answer(t, m, nidx[m], k, true, true),
							 idx[m], nidx[m]);
		}
	INSTR_TIME_SET_CURRENT(done_at);
	INSTR_TIME_SUBTRACT(done_at, merged_at);
	INSTR_TIME_SUBTRACT(merged_at, filled_at);
	INSTR_TIME_SUBTRACT(filled_at, read_at);
	INSTR_TIME_SUBTRACT(read_at, start);
	elog(DEBUG1, "kdgpu: All-kNN over %d partitions: %lld of %lld points queried other partitions, %lld queries; "
		 "own answers read (or their first chunks, when streamed) in %.0f ms, put in place in %.0f ms, "
		 "keys checked and other partitions' queries planned in %.0f ms, their answers in %.0f ms",
		 np, (long long) nasked, (long long) n, (long long) nqueries,
		 INSTR_TIME_GET_MILLISEC(read_at), INSTR_TIME_GET_MILLISEC(filled_at),
		 INSTR_TIME_GET_MILLISEC(merged_at), INSTR_TIME_GET_MILLISEC(done_at));
	return kdg_gather_answer(&all);
}
