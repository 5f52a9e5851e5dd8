/*
 * output.c
 *	  Returning answers as rows: one row producer for every function that
 *	  returns neighbours, and the columns that identify a row.
 *
 * A KdRows walks an answer in output order, one row per call of
 * kdg_rows_next: in the order of the queries and then of their hits, one
 * row per hit ("pairs"), or one row per query with its hits as arrays
 * (kd_all_knn_arrays).  Two consumers drive it: kdg_rows_materialize fills
 * the tuplestore of a set-returning function called the usual way, and the
 * streaming scan (stream_scan.c) hands each row to the executor as it is
 * made, without a tuplestore.  The columns are those of the function's
 * declared result: an optional query key (query_ord, or the query row's
 * identity), then the neighbour's identity, and when declared, distance and
 * then rank.  A row's identity is one column, its ctid or its key, or two, its
 * partition and ctid (table.c).  Columns the caller does not need (a false
 * entry in "needed") are returned as NULL without being made.
 *
 * Answers of All-kNN are stored in the tree's node order and read in the
 * rows' order through ans->order, so the next queries' hits are prefetched.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "funcs/funcs.h"

/* how many queries ahead of the current one have their hits prefetched */
#define KD_PREFETCH_AHEAD 8

/*
 * Set the identity columns of the row of t whose ref is ref at values; tid
 * is room for its TID.  Returns the number of columns set.
 */
static int
ident_datums(const KdTable *t, uint64 ref, Datum *values, ItemPointer tid)
{
	switch (t->ident)
	{
		case KD_IDENT_KEY:
			values[0] = Int64GetDatum(kdg_ref_to_key(ref));
			return 1;
		case KD_IDENT_PART:
			values[0] = ObjectIdGetDatum(t->partoids[ref >> KD_PART_SHIFT]);
			kdg_ref_to_tid(ref & ((UINT64CONST(1) << KD_PART_SHIFT) - 1), tid);
			values[1] = PointerGetDatum(tid);
			return 2;
		case KD_IDENT_CTID:
			break;
	}
	kdg_ref_to_tid(ref, tid);
	values[0] = PointerGetDatum(tid);
	return 1;
}

/* The number of columns that identify a row of t (ident_datums). */
static int
ident_ncols(const KdTable *t)
{
	return t->ident == KD_IDENT_PART ? 2 : 1;
}

/* The first result column made from a query's hits, not its identity. */
static int
kdg_rows_first_hit_column(const KdRows *rows)
{
	if (rows->arrays)
		return ident_ncols(rows->t);
	if (rows->key == KD_KEY_ORD)
		return 1;
	if (rows->key == KD_KEY_ROW)
		return ident_ncols(rows->query_t);
	return 0;
}

/*
 * Whether a caller that reads the columns in needed (NULL: every column)
 * of desc reads the hits themselves, not only how many each query has.
 */
bool
kdg_rows_read_hits(const KdRows *rows, TupleDesc desc, const bool *needed)
{
	for (int c = kdg_rows_first_hit_column(rows); c < desc->natts; c++)
		if (needed == NULL || needed[c])
			return true;
	return false;
}

/*
 * A row producer over ans, for queries identified as key says; for
 * KD_KEY_ROW, qrefs are the query rows' refs in output order.  The tables,
 * the answer and qrefs must outlive it.
 */
KdRows *
kdg_rows_make(const KdTable *t, const KdAnswer *ans, KdQueryKey key,
			  const KdTable *query_t, uint64 *qrefs, bool arrays)
{
	KdRows	   *rows = palloc0(sizeof(KdRows));

	rows->t = t;
	rows->ans = ans;
	rows->nq = ans ? ans->nq : 0;
	rows->key = key;
	rows->query_t = query_t;
	rows->qrefs = qrefs;
	rows->arrays = arrays;
	rows->rowcxt = AllocSetContextCreate(CurrentMemoryContext, "kdgpu row",
										 ALLOCSET_SMALL_SIZES);
	if (ans)
		kdg_rows_rewind(rows);
	return rows;
}

/*
 * Rows of nq queries whose answer fn makes slice by slice, as the rows
 * reach them (kdg_rows_make's other arguments): only the current slice is
 * held, so the memory stays bounded by a slice whatever the answer's size.
 * fn's allocations live until the next slice is made.
 */
KdRows *
kdg_rows_sliced(const KdTable *t, KdQueryKey key, const KdTable *query_t,
				uint64 *qrefs, bool arrays, int64 nq, KdRowsSliceFn fn,
				void *arg)
{
	KdRows	   *rows = kdg_rows_make(t, NULL, key, query_t, qrefs, arrays);

	rows->nq = nq;
	rows->slice = fn;
	rows->slice_arg = arg;
	rows->slicecxt = AllocSetContextCreate(CurrentMemoryContext, "kdgpu answer slice",
										   ALLOCSET_DEFAULT_SIZES);
	kdg_rows_rewind(rows);
	return rows;
}

/* The answer number of the query at output position i. */
static inline int64
kdg_rows_query(const KdRows *rows, int64 i)
{
	return rows->ans->order ? rows->ans->order[i - rows->base] : i - rows->base;
}

/* Make the slice whose first query is at output position from. */
static void
kdg_rows_load(KdRows *rows, int64 from)
{
	MemoryContext oldcxt;

	rows->ans = NULL;
	MemoryContextReset(rows->slicecxt);
	oldcxt = MemoryContextSwitchTo(rows->slicecxt);
	rows->ans = rows->slice(rows->slice_arg, from);
	MemoryContextSwitchTo(oldcxt);
	rows->base = from;
}

/* Whether output position i lies outside the current slice (or answer). */
static inline bool
kdg_rows_outside(const KdRows *rows, int64 i)
{
	return rows->ans == NULL || i < rows->base || i >= rows->base + rows->ans->nq;
}

/*
 * Rows of neighbours of t, one per hit.  For KD_KEY_ROW, query i is the
 * i-th point of query_t.
 */
KdRows *
kdg_rows_pairs(const KdTable *t, const KdAnswer *ans, KdQueryKey key,
			   const KdTable *query_t)
{
	return kdg_rows_make(t, ans, key, query_t,
						 key == KD_KEY_ROW ? kdg_table_refs(query_t) : NULL, false);
}

/*
 * Rows of an All-kNN of t, one per point: its identity, its neighbours'
 * identities and distances as arrays in rank order.
 */
KdRows *
kdg_rows_arrays(const KdTable *t, const KdAnswer *ans)
{
	return kdg_rows_make(t, ans, KD_KEY_ROW, t, kdg_table_refs(t), true);
}

/* Start again from the first row. */
void
kdg_rows_rewind(KdRows *rows)
{
	kdg_rows_seek(rows, 0, rows->nq);
}

/*
 * Make the rows those of the queries from, ..., to - 1 (in output order),
 * starting with the first of them.
 */
void
kdg_rows_seek(KdRows *rows, int64 from, int64 to)
{
	rows->i = from;
	rows->end = Min(to, rows->nq);
	rows->j = 0;
	if (from >= rows->end)
		return;
	if (rows->slice && kdg_rows_outside(rows, from))
		kdg_rows_load(rows, from);
	rows->j = rows->ans->offsets[kdg_rows_query(rows, from)];
}


/*
 * Prefetch the hits of the query KD_PREFETCH_AHEAD after i, whose offsets
 * were prefetched KD_PREFETCH_AHEAD queries before, and the offsets of the
 * query twice as far ahead: a prefetch of the hits at once would wait for
 * its offset to load, as randomly placed as the hits (at 1M points, two
 * thirds of the time of making pairs went to those two loads).  Always
 * inlined: GCC takes a separate function that only reads memory and
 * prefetches for one without effects, and drops its calls.
 */
static pg_attribute_always_inline void
kdg_rows_prefetch(const KdRows *rows, int64 i)
{
	const KdAnswer *ans = rows->ans;

	if (ans->order == NULL)
		return;
	if (i + 2 * KD_PREFETCH_AHEAD < ans->nq)
		__builtin_prefetch(&ans->offsets[ans->order[i + 2 * KD_PREFETCH_AHEAD]]);
	/* hits are not shared with a parallel scan that does not read them */
	if (i + KD_PREFETCH_AHEAD < ans->nq && ans->hits != NULL)
	{
		int64		q = ans->order[i + KD_PREFETCH_AHEAD];
		const char *from = (const char *) &ans->hits[ans->offsets[q]];
		const char *to = (const char *) &ans->hits[ans->offsets[q + 1]];

		/* a few lines: the hardware prefetcher follows longer runs */
		for (int line = 0; line < 4 && from + 64 * line < to; line++)
			__builtin_prefetch(from + 64 * line);
	}
}

/*
 * A one-dimensional array of n elements of elemtype, each elemlen bytes
 * (a fixed length whose alignment adds no padding between elements), with
 * its elements left to fill at ARR_DATA_PTR.
 */
static ArrayType *
kdg_array_new(Oid elemtype, int elemlen, int n)
{
	Size		size = ARR_OVERHEAD_NONULLS(1) + (Size) elemlen * n;
	ArrayType  *arr = palloc(size);

	SET_VARSIZE(arr, size);
	arr->ndim = 1;
	arr->dataoffset = 0;
	arr->elemtype = elemtype;
	ARR_DIMS(arr)[0] = n;
	ARR_LBOUND(arr)[0] = 1;
	return arr;
}

/*
 * The identities of n neighbours as arrays at values (one, or for
 * partitions two: regclass[] and tid[]); returns how many arrays.
 */
static int
kdg_ident_arrays(const KdTable *t, const KdHit *hits, int n, Datum *values)
{
	int			col = 0;
	uint64		mask = ~UINT64CONST(0);
	ArrayType  *tids;
	ItemPointer tid;

	if (t->ident == KD_IDENT_KEY)
	{
		ArrayType  *keys = kdg_array_new(INT8OID, sizeof(int64), n);
		int64	   *key = (int64 *) ARR_DATA_PTR(keys);

		for (int j = 0; j < n; j++)
			key[j] = kdg_ref_to_key(hits[j].ref);
		values[0] = PointerGetDatum(keys);
		return 1;
	}
	if (t->ident == KD_IDENT_PART)
	{
		ArrayType  *rels = kdg_array_new(REGCLASSOID, sizeof(Oid), n);
		Oid		   *rel = (Oid *) ARR_DATA_PTR(rels);

		for (int j = 0; j < n; j++)
			rel[j] = t->partoids[hits[j].ref >> KD_PART_SHIFT];
		values[col++] = PointerGetDatum(rels);
		mask = (UINT64CONST(1) << KD_PART_SHIFT) - 1;
	}
	tids = kdg_array_new(TIDOID, sizeof(ItemPointerData), n);
	tid = (ItemPointer) ARR_DATA_PTR(tids);
	for (int j = 0; j < n; j++)
		kdg_ref_to_tid(hits[j].ref & mask, &tid[j]);
	values[col++] = PointerGetDatum(tids);
	return col;
}

/* The distances of n hits as a float8[]. */
static Datum
kdg_distance_array(const KdHit *hits, int n)
{
	ArrayType  *arr = kdg_array_new(FLOAT8OID, sizeof(float8), n);
	float8	   *d = (float8 *) ARR_DATA_PTR(arr);

	for (int j = 0; j < n; j++)
		d[j] = hits[j].dist;
	return PointerGetDatum(arr);
}

/*
 * The row of query i in array form; its arrays go in rows->rowcxt, and are
 * made only when needed (a count of the rows reads no answer at all).
 */
static void
kdg_rows_array_row(KdRows *rows, int64 i, TupleDesc desc, const bool *needed,
				   Datum *values, bool *nulls)
{
	const KdAnswer *ans = rows->ans;
	int			col = ident_datums(rows->t, rows->qrefs[i], values, &rows->qtid);
	int64		q;
	int64		off;
	int			n;
	MemoryContext oldcxt;

	if (!kdg_rows_read_hits(rows, desc, needed))
	{
		for (int c = col; c < desc->natts; c++)
			nulls[c] = true;
		return;
	}
	kdg_rows_prefetch(rows, i);
	q = kdg_rows_query(rows, i);
	off = ans->offsets[q];
	n = (int) (ans->offsets[q + 1] - off);
	MemoryContextReset(rows->rowcxt);
	oldcxt = MemoryContextSwitchTo(rows->rowcxt);
	col += kdg_ident_arrays(rows->t, ans->hits + off, n, values + col);
	values[col] = kdg_distance_array(ans->hits + off, n);
	MemoryContextSwitchTo(oldcxt);
}

/*
 * The next row into values and nulls (desc->natts of each), as desc
 * declares it; needed (or NULL for every column) says which columns the
 * caller reads.  False when there are no more rows.  Pass-by-reference
 * values stay valid until the next call.
 */
bool
kdg_rows_next(KdRows *rows, TupleDesc desc, const bool *needed, Datum *values,
			  bool *nulls)
{
	const KdAnswer *ans = rows->ans;
	int64		q;
	int			first = 0;
	int			col;
	const KdHit *hit;

	memset(nulls, 0, sizeof(bool) * desc->natts);
	if (rows->arrays)
	{
		if (rows->i >= rows->end)
			return false;
		if (rows->slice && kdg_rows_outside(rows, rows->i))
			kdg_rows_load(rows, rows->i);
		kdg_rows_array_row(rows, rows->i, desc, needed, values, nulls);
		rows->i++;
		return true;
	}

	/* pairs: skip queries with no hits left */
	while (rows->i < rows->end &&
		   rows->j >= ans->offsets[kdg_rows_query(rows, rows->i) + 1])
	{
		rows->i++;
		if (rows->i < rows->end)
		{
			if (rows->slice && kdg_rows_outside(rows, rows->i))
			{
				kdg_rows_load(rows, rows->i);
				ans = rows->ans;
			}
			kdg_rows_prefetch(rows, rows->i);
			rows->j = ans->offsets[kdg_rows_query(rows, rows->i)];
		}
	}
	if (rows->i >= rows->end)
		return false;
	q = kdg_rows_query(rows, rows->i);
	if (rows->key == KD_KEY_ORD)
	{
		values[0] = Int32GetDatum((int32) (rows->i + 1));
		first = 1;
	}
	else if (rows->key == KD_KEY_ROW)
		first = ident_datums(rows->query_t, rows->qrefs[rows->i], values, &rows->qtid);
	if (!kdg_rows_read_hits(rows, desc, needed))
	{
		/* only the query's columns are read (a count): no hit is */
		for (int c = first; c < desc->natts; c++)
			nulls[c] = true;
		rows->j++;
		return true;
	}
	hit = &ans->hits[rows->j];
	col = first + ident_datums(rows->t, hit->ref, values + first, &rows->tid);
	if (desc->natts > col)
		values[col] = Float8GetDatum(hit->dist);
	if (desc->natts > col + 1)
		values[col + 1] = Int32GetDatum((int32) (rows->j - ans->offsets[q] + 1));
	rows->j++;
	return true;
}

/*
 * Return every row of rows from the set-returning function called with
 * fcinfo, through a tuplestore.
 */
void
kdg_rows_materialize(FunctionCallInfo fcinfo, KdRows *rows)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TupleDesc	desc;
	Datum	   *values;
	bool	   *nulls;
	int64		n = 0;

	/* the expected descriptor also serves a single-column (scalar) result */
	InitMaterializedSRF(fcinfo, rows->arrays ? 0 : MAT_SRF_USE_EXPECTED_DESC);
	desc = rsinfo->setDesc;
	values = palloc(sizeof(Datum) * desc->natts);
	nulls = palloc(sizeof(bool) * desc->natts);
	while (kdg_rows_next(rows, desc, NULL, values, nulls))
	{
		tuplestore_putvalues(rsinfo->setResult, desc, values, nulls);
		if ((++n & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
	}
}
