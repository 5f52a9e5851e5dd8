/*
 * index_knn.c
 *	  kd_knn of one query point through an ordered scan of a kdgpu index.
 *
 * The kd_* functions read every visible row of their table, which is what
 * batched work needs and what makes their answers exact for the caller's
 * snapshot; for one query point that costs the whole table, where an
 * ordered index scan reads a few pages.  kd_knn's answer is by definition
 * that of
 *
 *	SELECT ctid, col <-> q FROM rel WHERE col IS NOT NULL
 *	  ORDER BY col <-> q, ctid LIMIT k
 *
 * over rows the function accepts: finite points of one dimension.  So when
 * a kdgpu index on the column says that every row it holds is such a point
 * (its metapage counts no rows outside its trees: no NaN, infinite, empty
 * or other-dimension values, committed or not), an equivalent query is run
 * through SPI, with the caller's rights.  The planner orders by an index
 * only when the index gives the whole ORDER BY, so the query asks for
 * `ORDER BY col <-> q LIMIT k + 1`: its rows hold every row closer than its
 * last, and so every tie of the k-th unless the last row ties it too; then
 * it asks for KD_INDEX_KNN_TIES more, and if the last of those ties it
 * still, the table is read as before.  The rows are then ranked by
 * (distance, ctid) here, whatever order ties came in; the
 * distances are the operator's own, as the function's are.
 *
 * A float8[] column of any dimension with a kdvec index whose operator
 * class orders by the call's metric (L2 or L1) is served the same way
 * through that index: its rows are finite vectors of its one dimension,
 * or NULL or empty, which the query leaves out.
 *
 * The key form is served the same way, ties ranked by key, when the key
 * column is NOT NULL with an immediate unique index on it alone, so that
 * no key the snapshot sees is NULL or repeated (which the function must
 * refuse).  Served so are: a plain table or materialized view, a point or
 * float8[] column, or a geometry column of XY points queried by an XY point
 * of its SRID (where `<->` is the function's 2-D distance), rows
 * identified by ctid or by such a key, a caller with
 * SELECT on the whole table (ctid is not a column it may have been granted),
 * no row-level security, and kdgpu.device other than 'gpu' (which asks for
 * the GPU); everything else reads the table as before.
 *
 * The query's plan is prepared once (generic: the index orders whatever the
 * point) and kept by its text, which names the table, column and operator
 * by schema; the plan cache replans it when the table changes.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"

#include "am/kdam.h"
#include "local/local.h"
#include "vam/vam.h"

/* rows fetched past the k-th, for its ties */
#define KD_INDEX_KNN_TIES 32

/* prepared ordered scans a backend keeps */
#define KD_INDEX_KNN_PLANS 8

/* One kept plan: its query's text and parameter type. */
typedef struct IndexKnnPlan
{
	char	   *sql;			/* in TopMemoryContext; NULL: free */
	Oid			argtype;
	SPIPlanPtr	plan;
	uint64		last_use;
} IndexKnnPlan;

static IndexKnnPlan index_knn_plans[KD_INDEX_KNN_PLANS];
static uint64 index_knn_clock;

/*
 * The name of an index on src's column that the snapshot may use and
 * that orders by the source's metric rows that are all finite points of
 * dim dimensions (for PostGIS, XY points of the query's SRID, qinfo), or
 * rows with no point: a kdgpu index (L2, at most KD_MAX_DIM) or a kdvec
 * index; NULL when there is none.
 */
static char *
index_of_points(const KdSource *src, int dim, const KdPointInfo *qinfo)
{
	Relation	heap = table_open(src->relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(heap);
	ListCell   *lc;
	char	   *name = NULL;

	table_close(heap, NoLock);
	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		Buffer		metabuf;

		if (src->metric == KD_METRIC_L2 && dim <= KD_MAX_DIM &&
			kdg_index_fits(index, src))
		{
			KdamMetaPageData meta;

			metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
			LockBuffer(metabuf, BUFFER_LOCK_SHARE);
			meta = *kdam_metapage(index, BufferGetPage(metabuf));
			UnlockReleaseBuffer(metabuf);
			if (meta.noutside == 0 && meta.dim == dim &&
				(!kdg_type_is_postgis(src->type) ||
				 (meta.zm == 0 && qinfo->zm == 0 && meta.srid == qinfo->srid)))
				name = pstrdup(RelationGetRelationName(index));
		}
		else if (dim <= KDVAM_MAX_DIM && kdg_vector_index_fits(index, src))
		{
			KdvamMetaPageData meta;

			/* its inserts refuse what is not a finite vector of its dim */
			metabuf = ReadBuffer(index, KDVAM_METAPAGE_BLKNO);
			LockBuffer(metabuf, BUFFER_LOCK_SHARE);
			meta = *KdvamPageGetMeta(BufferGetPage(metabuf));
			UnlockReleaseBuffer(metabuf);
			kdvam_check_meta(index, &meta);
			if (meta.dim == dim || meta.dim == 0)
				name = pstrdup(RelationGetRelationName(index));
		}
		index_close(index, NoLock);
		if (name)
			break;
	}
	list_free(indexes);
	return name;
}

/*
 * The kept generic plan of sql, whose one parameter is of type argtype,
 * prepared on first use (the least recently used one makes room); within
 * an SPI connection.
 */
static SPIPlanPtr
index_knn_plan(const char *sql, Oid argtype)
{
	IndexKnnPlan *slot = &index_knn_plans[0];
	SPIPlanPtr	plan;

	for (int i = 0; i < KD_INDEX_KNN_PLANS; i++)
	{
		IndexKnnPlan *p = &index_knn_plans[i];

		if (p->sql && p->argtype == argtype && strcmp(p->sql, sql) == 0)
		{
			p->last_use = ++index_knn_clock;
			return p->plan;
		}
		if (slot->sql && (p->sql == NULL || p->last_use < slot->last_use))
			slot = p;
	}
	plan = SPI_prepare_cursor(sql, 1, &argtype, CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "kdgpu: the index scan for kd_knn could not be prepared: %s",
			 SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "kdgpu: the index scan for kd_knn could not be kept");
	if (slot->sql)
	{
		SPI_freeplan(slot->plan);
		pfree(slot->sql);
	}
	slot->sql = MemoryContextStrdup(TopMemoryContext, sql);
	slot->argtype = argtype;
	slot->plan = plan;
	slot->last_use = ++index_knn_clock;
	return plan;
}

/*
 * Run sql (kept, index_knn_plan) for the query point query of type argtype
 * and put its rows, by ctid or key as t identifies them, in hits; returns
 * how many.
 */
static int64
index_knn_fetch(const KdTable *t, const char *sql, Oid argtype, Datum query,
				KdHit *hits)
{
	const KdSource *src = &t->head;
	int			ret;
	int64		n;

	SPI_connect();
	ret = SPI_execute_plan(index_knn_plan(sql, argtype), &query, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "kdgpu: the index scan for kd_knn failed: %s",
			 SPI_result_code_string(ret));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull[2];
		Datum		id = SPI_getbinval(row, desc, 1, &isnull[0]);
		Datum		dist = SPI_getbinval(row, desc, 2, &isnull[1]);

		if (isnull[0] || isnull[1])
			elog(ERROR, "kdgpu: the index scan for kd_knn returned a NULL");
		hits[i].ref = t->ident == KD_IDENT_KEY ? kdg_key_to_ref(src->keytype, id) :
			kdg_tid_to_ref((ItemPointer) DatumGetPointer(id));
		hits[i].dist = DatumGetFloat8(dist);
	}
	n = (int64) SPI_processed;
	SPI_finish();
	return n;
}

/*
 * kd_knn's answer for the query point query (of type qtype, qdim
 * coordinates) through an ordered scan of a kdgpu index, when the file's
 * header says it is the function's answer; NULL otherwise.  fn is the
 * calling function, whose schema is kdgpu's, where float8[]'s <-> is.
 */
KdAnswer *
kdg_index_knn(const KdTable *t, Datum query, Oid qtype, int qdim,
			  const KdPointInfo *qinfo, int k, Oid fn)
{
	const KdSource *src = &t->head;
	char		relkind = get_rel_relkind(src->relid);
	char	   *index;
	const char *opschema;
	const char *relname;
	Oid			argtype = getBaseType(qtype);
	KdAnswer   *ans;
	KdHit	   *hits;
	int64		n;

	/* the cheap tests first; the last two open the table's indexes */
	if (t->partitioned || t->ident == KD_IDENT_PART ||
		(src->metric != KD_METRIC_L2 && src->metric != KD_METRIC_L1) ||
		(relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW) ||
		(src->type != KD_TYPE_POINT && src->type != KD_TYPE_ARRAY &&
		 (src->type != KD_TYPE_GEOMETRY || qdim != 2)) ||
		kdgpu_device == KD_DEVICE_GPU ||
		check_enable_rls(src->relid, InvalidOid, false) == RLS_ENABLED ||
		/* ctid needs SELECT on the table, where the function needs columns */
		pg_class_aclcheck(src->relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK ||
		(t->ident == KD_IDENT_KEY && !kdg_source_key_unique(src)) ||
		(index = index_of_points(src, qdim, qinfo)) == NULL)
		return NULL;

	opschema = src->type == KD_TYPE_POINT ? "pg_catalog" :
		src->type == KD_TYPE_ARRAY ? get_namespace_name(get_func_namespace(fn)) :
		get_namespace_name(kdg_type_namespace(argtype));
	relname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(src->relid)),
										 get_rel_name(src->relid));
	hits = palloc(sizeof(KdHit) * (k + KD_INDEX_KNN_TIES));
	for (int limit = k + 1;; limit = k + KD_INDEX_KNN_TIES)
	{
		StringInfoData sql;

		initStringInfo(&sql);
		appendStringInfo(&sql,
						 "SELECT %s, %s OPERATOR(%s.%s) $1 FROM %s WHERE %s IS NOT NULL",
						 t->ident == KD_IDENT_KEY ? quote_identifier(src->keyname) : "ctid",
						 quote_identifier(src->colname), quote_identifier(opschema),
						 src->metric == KD_METRIC_L1 ? "<+>" : "<->", relname,
						 quote_identifier(src->colname));
		/* an empty array has no point, and no distance */
		if (src->type == KD_TYPE_ARRAY)
			appendStringInfo(&sql, " AND cardinality(%s) > 0",
							 quote_identifier(src->colname));
		appendStringInfo(&sql, " ORDER BY 2 LIMIT %d", limit);
		n = index_knn_fetch(t, sql.data, argtype, query, hits);
		/* the last row fetched may tie the k-th: rows past it could too */
		if (n < limit || hits[n - 1].dist != hits[k - 1].dist)
			break;
		if (limit == k + KD_INDEX_KNN_TIES)
			return NULL;
	}
	kdg_sort_hits(hits, n);
	ans = kdg_empty_answer(1);
	ans->hits = hits;
	ans->offsets[1] = Min(n, k);
	snprintf(kdg_last_run, sizeof(kdg_last_run),
			 "kd_knn ran as an ordered scan of index \"%s\"", index);
	return ans;
}
