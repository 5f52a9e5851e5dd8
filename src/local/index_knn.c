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
 * `ORDER BY col <-> q LIMIT k + KD_INDEX_KNN_TIES`: its rows hold every row
 * closer than its last, and so every tie of the k-th unless the last row
 * ties it too, in which case the table is read as before.  The rows are
 * then ranked by (distance, ctid) here, whatever order ties came in; the
 * distances are the operator's own, as the function's are.
 *
 * The key form is served the same way, ties ranked by key, when the key
 * column is NOT NULL with an immediate unique index on it alone, so that
 * no key the snapshot sees is NULL or repeated (which the function must
 * refuse).  Served so are: a plain table or materialized view, a point or
 * float8[] column, rows identified by ctid or by such a key, a caller with
 * SELECT on the whole table (ctid is not a column it may have been granted),
 * no row-level security, and kdgpu.device other than 'gpu' (which asks for
 * the GPU); everything else reads the table as before.
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
#include "utils/rel.h"
#include "utils/rls.h"

#include "am/kdam.h"
#include "local/local.h"

/* rows fetched past the k-th, for its ties */
#define KD_INDEX_KNN_TIES 32

/*
 * The name of a kdgpu index on src's column that the snapshot may use and
 * whose rows are all finite points of dim dimensions (or NULL); NULL when
 * the table has none.
 */
static char *
index_of_points(const KdSource *src, int dim)
{
	Relation	heap = table_open(src->relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(heap);
	ListCell   *lc;
	char	   *name = NULL;

	table_close(heap, NoLock);
	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		if (kdg_index_fits(index, src))
		{
			Buffer		metabuf = ReadBuffer(index, KDAM_METAPAGE_BLKNO);
			KdamMetaPageData meta;

			LockBuffer(metabuf, BUFFER_LOCK_SHARE);
			meta = *kdam_metapage(index, BufferGetPage(metabuf));
			UnlockReleaseBuffer(metabuf);
			if (meta.noutside == 0 && meta.dim == dim)
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
 * kd_knn's answer for the query point query (of type qtype, qdim
 * coordinates) through an ordered scan of a kdgpu index, when the file's
 * header says it is the function's answer; NULL otherwise.  fn is the
 * calling function, whose schema is kdgpu's, where float8[]'s <-> is.
 */
KdAnswer *
kdg_index_knn(const KdTable *t, Datum query, Oid qtype, int qdim, int k,
			  Oid fn)
{
	const KdSource *src = &t->head;
	char		relkind = get_rel_relkind(src->relid);
	char	   *index;
	const char *opschema;
	StringInfoData sql;
	Oid			argtype = getBaseType(qtype);
	KdAnswer   *ans;
	KdHit	   *hits;
	int			ret;
	int64		n;

	/* the cheap tests first; the last two open the table's indexes */
	if (t->partitioned || t->ident == KD_IDENT_PART ||
		(relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW) ||
		(src->type != KD_TYPE_POINT && src->type != KD_TYPE_ARRAY) ||
		kdgpu_device == KD_DEVICE_GPU ||
		check_enable_rls(src->relid, InvalidOid, false) == RLS_ENABLED ||
		/* ctid needs SELECT on the table, where the function needs columns */
		pg_class_aclcheck(src->relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK ||
		(t->ident == KD_IDENT_KEY && !kdg_source_key_unique(src)) ||
		(index = index_of_points(src, qdim)) == NULL)
		return NULL;

	opschema = src->type == KD_TYPE_POINT ? "pg_catalog" :
		get_namespace_name(get_func_namespace(fn));
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT %s, %s OPERATOR(%s.<->) $1 FROM %s WHERE %s IS NOT NULL ORDER BY 2 LIMIT %d",
					 t->ident == KD_IDENT_KEY ? quote_identifier(src->keyname) : "ctid",
					 quote_identifier(src->colname), quote_identifier(opschema),
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(src->relid)),
												get_rel_name(src->relid)),
					 quote_identifier(src->colname), k + KD_INDEX_KNN_TIES);
	hits = palloc(sizeof(KdHit) * (k + KD_INDEX_KNN_TIES));

	SPI_connect();
	ret = SPI_execute_with_args(sql.data, 1, &argtype, &query, NULL, true, 0);
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
	/* the last row fetched may tie the k-th: rows past it could too */
	if (n == k + KD_INDEX_KNN_TIES && hits[n - 1].dist == hits[k - 1].dist)
		return NULL;
	kdg_sort_hits(hits, n);
	ans = kdg_empty_answer(1);
	ans->hits = hits;
	ans->offsets[1] = Min(n, k);
	snprintf(kdg_last_run, sizeof(kdg_last_run),
			 "kd_knn ran as an ordered scan of index \"%s\"", index);
	return ans;
}
