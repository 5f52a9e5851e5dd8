/*
 * source.c
 *	  Reading the points of a table: finding its point column, checking the
 *	  caller's rights, and scanning the rows visible to the query's snapshot.
 *
 * The points are kept in ctid order, each beside its heap TID packed into
 * 64 bits (refs.c: the packed order is the ctid order).  The engine is given each point's ordinal as its row reference,
 * so the engine's tie-break on references is the tie-break on ctid, and an
 * answer's reference leads straight to the point's coordinates and TID.
 *
 * A table is read directly with a heap scan under the active snapshot,
 * unless row-level security applies to the caller: then the rows are read
 * through SPI with "SELECT tableoid, ctid, col FROM ONLY tab" so that the
 * policies apply (ONLY: the ctids of inheritance children would collide).
 * A partitioned table's leaves are read the same way (table.c), through
 * SPI on the partitioned table itself when its policies apply, each row
 * going to its leaf by tableoid.  Either way only rows visible to the
 * query are read; NULL and empty points are skipped.
 *
 * With a key column (an integer column the caller names), each row also
 * keeps its key, mapped to an unsigned number of the same order.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "local/local.h"

/*
 * Error unless the relation is a table kdgpu can read (a partitioned table's
 * leaves are checked by table.c).
 */
static void
kdg_check_relkind(Relation rel)
{
	char		relkind = rel->rd_rel->relkind;

	if (relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW &&
		relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table or materialized view",
						RelationGetRelationName(rel))));
	if (!RelationIsScannable(rel))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("materialized view \"%s\" has not been populated",
						RelationGetRelationName(rel)),
				 errhint("Use the REFRESH MATERIALIZED VIEW command.")));
}

/*
 * The only point, float8[] or real[] column of rel (or PostGIS point
 * column), or an error with a hint.
 */
static AttrNumber
kdg_find_column(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	AttrNumber	found = InvalidAttrNumber;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || kdg_point_type(att->atttypid) == KD_TYPE_NONE)
			continue;
		if (found != InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_AMBIGUOUS_COLUMN),
					 errmsg("table \"%s\" has more than one point column",
							RelationGetRelationName(rel)),
					 errdetail("Columns \"%s\" and \"%s\" both hold points.",
							   NameStr(TupleDescAttr(desc, found - 1)->attname),
							   NameStr(att->attname)),
					 errhint("Name the column: kd_knn('%s', '%s', ...).",
							 RelationGetRelationName(rel),
							 NameStr(TupleDescAttr(desc, found - 1)->attname))));
		found = att->attnum;
	}
	if (found == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("table \"%s\" has no column of type point, float8[], real[], geometry or geography",
						RelationGetRelationName(rel)),
				 errhint("Name the column: kd_knn('%s', 'column', ...).",
						 RelationGetRelationName(rel))));
	return found;
}

/* The column called colname, which must be of a point type. */
static AttrNumber
kdg_named_column(Relation rel, const char *colname)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || strcmp(NameStr(att->attname), colname) != 0)
			continue;
		if (kdg_point_type(att->atttypid) == KD_TYPE_NONE)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of table \"%s\" is of type %s, not point or float8[]",
							colname, RelationGetRelationName(rel),
							format_type_be(att->atttypid))));
		return att->attnum;
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("column \"%s\" of table \"%s\" does not exist",
					colname, RelationGetRelationName(rel))));
	return InvalidAttrNumber;	/* keep compiler quiet */
}

/*
 * The integer key column called keyname of rel, or an error; *keytype is
 * set to its type (smallint, integer or bigint, or a domain over one).
 */
static AttrNumber
kdg_key_column(Relation rel, const char *keyname, Oid *keytype)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Oid			base;

		if (att->attisdropped || strcmp(NameStr(att->attname), keyname) != 0)
			continue;
		base = getBaseType(att->atttypid);
		if (base != INT2OID && base != INT4OID && base != INT8OID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("key column \"%s\" of table \"%s\" is of type %s, not an integer type",
							keyname, RelationGetRelationName(rel),
							format_type_be(att->atttypid)),
					 errhint("A key column must be of type smallint, integer or bigint, such as an identity column.")));
		*keytype = base;
		return att->attnum;
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_COLUMN),
			 errmsg("key column \"%s\" of table \"%s\" does not exist",
					keyname, RelationGetRelationName(rel))));
	return InvalidAttrNumber;	/* keep compiler quiet */
}

/* Rows of a source take one more slot for their key when it has one. */
int
kdg_source_stride(const KdSource *src, int dim)
{
	return dim + src->extra + 1 + (src->keyattnum != InvalidAttrNumber ? 1 : 0);
}

/*
 * Open the table relid for reading its point column (colname, or the only
 * one): check its kind and the caller's SELECT right on the column.
 */
void
kdg_source_open(KdSource *src, Oid relid, Name colname)
{
	Relation	rel;
	Oid			userid = GetUserId();
	bool		table_priv;

	memset(src, 0, sizeof(*src));
	src->mcxt = CurrentMemoryContext;
	if (get_rel_name(relid) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	rel = table_open(relid, AccessShareLock);
	kdg_check_relkind(rel);
	table_priv = pg_class_aclcheck(relid, userid, ACL_SELECT) == ACLCHECK_OK;
	if (!table_priv &&
		pg_attribute_aclcheck_all(relid, userid, ACL_SELECT, ACLMASK_ANY) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, get_relkind_objtype(rel->rd_rel->relkind),
					   RelationGetRelationName(rel));

	src->relid = relid;
	src->attnum = colname ? kdg_named_column(rel, NameStr(*colname)) : kdg_find_column(rel);
	src->colname = pstrdup(NameStr(TupleDescAttr(RelationGetDescr(rel), src->attnum - 1)->attname));
	src->type = kdg_point_type(TupleDescAttr(RelationGetDescr(rel), src->attnum - 1)->atttypid);
	src->extra = kdg_type_extra(src->type);
	if (!table_priv &&
		pg_attribute_aclcheck(relid, src->attnum, userid, ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_COLUMN,
					   psprintf("%s.%s", RelationGetRelationName(rel), src->colname));
	table_close(rel, NoLock);
}

/*
 * Give an opened source the key column keyname: an integer column whose
 * value the functions return instead of the ctid.  The caller needs the
 * SELECT right on it too.
 */
void
kdg_source_set_key(KdSource *src, const char *keyname)
{
	Relation	rel = table_open(src->relid, AccessShareLock);
	Oid			userid = GetUserId();

	src->keyattnum = kdg_key_column(rel, keyname, &src->keytype);
	src->keyname = pstrdup(keyname);
	if (pg_class_aclcheck(src->relid, userid, ACL_SELECT) != ACLCHECK_OK &&
		pg_attribute_aclcheck(src->relid, src->keyattnum, userid, ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_COLUMN,
					   psprintf("%s.%s", RelationGetRelationName(rel), keyname));
	table_close(rel, NoLock);
}

/*
 * Open a leaf partition of the partitioned table head describes (a table,
 * or a foreign table: remote.c): the same columns, found by name (a
 * partition may number them differently).  The
 * rights checked on the partitioned table are the ones that count, as for
 * a query of it; the leaf is locked by the caller.
 */
void
kdg_source_open_leaf(KdSource *src, Oid relid, const KdSource *head)
{
	Relation	rel = table_open(relid, NoLock);

	*src = *head;
	src->relid = relid;
	if (rel->rd_rel->relkind != RELKIND_FOREIGN_TABLE)
		kdg_check_relkind(rel);
	src->attnum = kdg_named_column(rel, head->colname);
	if (head->keyattnum != InvalidAttrNumber)
		src->keyattnum = kdg_key_column(rel, head->keyname, &src->keytype);
	table_close(rel, NoLock);
}

/*
 * The SQL name of src's column type, for messages: its point type's, or
 * real[] for a real[] column (read as float8[]).
 */
const char *
kdg_source_type_name(const KdSource *src)
{
	if (src->type == KD_TYPE_ARRAY &&
		getBaseType(get_atttype(src->relid, src->attnum)) == FLOAT4ARRAYOID)
		return "real[]";
	return kdg_point_type_name(src->type);
}

/*
 * Error unless query points of type qtype (given as argument arg of SQL
 * type argtype) fit the column.
 */
void
kdg_source_check_query(const KdSource *src, KdPointType qtype, Oid argtype,
					  const char *arg)
{
	if (qtype != src->type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("argument \"%s\" is of type %s but column \"%s\" of table \"%s\" is of type %s",
						arg, format_type_be(argtype), src->colname,
						get_rel_name(src->relid), kdg_source_type_name(src)),
				 errhint("Give the query points as %s.", kdg_point_type_name(src->type))));
}

/*
 * Error unless the points of two sources have the same dimension (and, for
 * PostGIS types, the same SRID and Z/M flags).
 */
void
kdg_source_check_dims(const KdSource *src, const KdSource *other)
{
	if (src->dim > 0 && other->dim > 0 && src->dim != other->dim)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("points of table \"%s\" have dimension %d, those of table \"%s\" have dimension %d",
						get_rel_name(other->relid), other->dim,
						get_rel_name(src->relid), src->dim)));
	if (kdg_type_is_postgis(src->type) && src->n > 0 && other->n > 0)
	{
		KdWhere		where = {NULL, 0};

		where.relid = other->relid;
		kdg_ref_to_tid(kdg_row_tid(other, 0), &where.tid);
		kdg_check_query_info(src, &other->info, &where);
	}
}

/*
 * Error unless a PostGIS point of a row has the SRID and Z/M flags of the
 * column's first.
 */
static void
kdg_source_check_info(const KdSource *src, const KdPointInfo *info,
					  const KdWhere *where)
{
	if (info->srid != src->info.srid)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("point in %s has SRID %d, earlier rows have SRID %d",
						kdg_where_text(where), info->srid, src->info.srid),
				 errhint("All points of a column must have the same SRID.")));
	if (src->type == KD_TYPE_GEOMETRY && info->zm != src->info.zm)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("point in %s is %s, earlier rows are %s",
						kdg_where_text(where), kdg_zm_name(info->zm),
						kdg_zm_name(src->info.zm)),
				 errhint("All points of a column must have the same coordinates (XY, XYZ, XYM or XYZM).")));
}

/*
 * Append a point read from where (coords and info as kdg_datum_read gave
 * them, dim > 0) with its ref, and room for a key when the source has a key
 * column; returns the row.  Error unless its dimension, and for PostGIS
 * types its SRID and Z/M flags, are those of the earlier rows.
 */
KdSlot *
kdg_source_append(KdSource *src, const double *coords, int dim,
				  const KdPointInfo *info, const KdWhere *where, uint64 ref)
{
	KdSlot	   *row;

	if (src->dim == 0)
	{
		src->dim = dim;
		src->info = *info;
		src->stride = kdg_source_stride(src, dim);
		src->cap = 1024;
		src->rows = MemoryContextAllocExtended(src->mcxt,
											   sizeof(KdSlot) * src->stride * src->cap,
											   MCXT_ALLOC_HUGE);
	}
	else if (dim != src->dim)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("point in %s has dimension %d, earlier rows have dimension %d",
						kdg_where_text(where), dim, src->dim),
				 errhint("All points of a column must have the same number of coordinates.")));
	else
	{
		if (kdg_type_is_postgis(src->type))
			kdg_source_check_info(src, info, where);
		if (src->n == src->cap)
		{
			src->cap *= 2;
			src->rows = repalloc_huge(src->rows, sizeof(KdSlot) * src->stride * src->cap);
		}
	}
	row = src->rows + src->n * src->stride;
	for (int i = 0; i < dim + src->extra; i++)
		row[i].coord = coords[i];
	row[dim + src->extra].tid = ref;
	if (src->n > 0 && ref < kdg_row_tid(src, src->n - 1))
		src->unsorted = true;
	src->n++;
	return row;
}

/*
 * Append one row's point, unless it is NULL or empty, with its key when the
 * source has a key column (a NULL key is an error).  A float8[] or real[]
 * (converted to float8) may have up to KD_FLAT_MAX_DIM coordinates: the
 * kNN functions search such rows flat, the others refuse them (search.c).
 */
void
kdg_source_add(KdSource *src, Datum value, bool isnull, ItemPointer tid,
			   Datum key, bool keynull)
{
	double		buf[KD_MAX_DIM];
	const double *coords = buf;
	ArrayType  *arr = NULL;
	KdWhere		where = {NULL, 0};
	KdPointInfo info;
	KdSlot	   *row;
	int			dim;

	if (isnull)
		return;
	where.tid = *tid;
	where.relid = src->relid;
	if (src->type == KD_TYPE_ARRAY)
	{
		memset(&info, 0, sizeof(info));
		dim = kdg_array_view(value, KD_FLAT_MAX_DIM, &where, &arr);
		coords = (const double *) ARR_DATA_PTR(arr);
	}
	else
		dim = kdg_datum_read(src->type, value, buf, &where, &info);
	if (dim == 0)
		return;
	if (src->keyattnum != InvalidAttrNumber && keynull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("key column \"%s\" is NULL in %s", src->keyname,
						kdg_where_text(&where)),
				 errhint("Every row with a point needs a key.")));
	row = kdg_source_append(src, coords, dim, &info, &where, kdg_tid_to_ref(tid));
	if (src->keyattnum != InvalidAttrNumber)
		row[dim + src->extra + 1].tid = kdg_key_to_ref(src->keytype, key);
	if (arr && (Pointer) arr != DatumGetPointer(value))
		pfree(arr);
}

/* Read the visible rows with a heap scan under the active snapshot. */
void
kdg_source_scan(KdSource *src)
{
	Relation	rel = table_open(src->relid, AccessShareLock);
	TableScanDesc scan;
	TupleTableSlot *slot;

	/* no synchronized scan: rows then arrive in ctid order */
	scan = table_beginscan_strat(rel, GetActiveSnapshot(), 0, NULL, true, false);
	slot = table_slot_create(rel, NULL);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		bool		keynull = true;
		Datum		value = slot_getattr(slot, src->attnum, &isnull);
		Datum		key = (Datum) 0;

		CHECK_FOR_INTERRUPTS();
		if (src->keyattnum != InvalidAttrNumber)
			key = slot_getattr(slot, src->keyattnum, &keynull);
		kdg_source_add(src, value, isnull, &slot->tts_tid, key, keynull);
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	table_close(rel, NoLock);
}

/*
 * Read the rows of relid through SPI, so that row-level security policies
 * apply: "SELECT tableoid, ctid, col [, key] FROM [ONLY] relid" (ONLY for a
 * table that is not partitioned: the ctids of inheritance children would
 * collide).  Each row goes to the source of oids[] (sorted) that is its
 * tableoid; srcs[0] names the columns.
 */
void
kdg_sources_spi(KdSource *srcs, const Oid *oids, int n, Oid relid)
{
	bool		partitioned = get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE;
	char	   *query;
	Portal		portal;

	query = psprintf("SELECT tableoid, ctid, %s%s%s FROM %s%s",
					 quote_identifier(srcs[0].colname),
					 srcs[0].keyattnum != InvalidAttrNumber ? ", " : "",
					 srcs[0].keyattnum != InvalidAttrNumber ? quote_identifier(srcs[0].keyname) : "",
					 partitioned ? "" : "ONLY ",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
												get_rel_name(relid)));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	portal = SPI_cursor_open_with_args(NULL, query, 0, NULL, NULL, NULL, true, 0);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, 10000);
		if (SPI_processed == 0)
			break;
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tuple = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			bool		isnull;
			bool		keynull = true;
			Oid			tableoid = DatumGetObjectId(SPI_getbinval(tuple, desc, 1, &isnull));
			Datum		tid = SPI_getbinval(tuple, desc, 2, &isnull);
			Datum		value = SPI_getbinval(tuple, desc, 3, &isnull);
			Datum		key = (Datum) 0;
			Oid		   *leaf = bsearch(&tableoid, oids, n, sizeof(Oid), oid_cmp);

			if (leaf == NULL)
				elog(ERROR, "row of unexpected partition %u", tableoid);
			if (srcs[0].keyattnum != InvalidAttrNumber)
				key = SPI_getbinval(tuple, desc, 4, &keynull);
			kdg_source_add(&srcs[leaf - oids], value, isnull,
						   (ItemPointer) DatumGetPointer(tid), key, keynull);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_finish();
}

/* qsort_arg comparator of source rows by TID; arg points to its slot. */
static int
kdg_row_cmp(const void *a, const void *b, void *arg)
{
	int			slot = *(const int *) arg;
	uint64		x = ((const KdSlot *) a)[slot].tid;
	uint64		y = ((const KdSlot *) b)[slot].tid;

	return (x > y) - (x < y);
}

/* Put the rows in ctid order (rows read through SPI may come unordered). */
void
kdg_source_sort(KdSource *src)
{
	int			slot = src->dim + src->extra;

	qsort_arg(src->rows, src->n, sizeof(KdSlot) * src->stride, kdg_row_cmp, &slot);
	src->unsorted = false;
}

/* What the threads of kdg_source_coords and kdg_source_tids share. */
typedef struct KdSourceCopy
{
	const KdSource *src;
	double	   *coords;
	uint64	   *tids;
} KdSourceCopy;

/* kde_parallel_for body: the coordinates of rows begin .. end. */
static void
source_coords_range(void *arg, int64_t begin, int64_t end)
{
	const KdSourceCopy *c = arg;
	int			dim = c->src->dim;

	for (int64 i = begin; i < end; i++)
		memcpy(c->coords + i * dim, kdg_row_coords(c->src, i), sizeof(double) * dim);
}

/* kde_parallel_for body: the packed TIDs of rows begin .. end. */
static void
source_tids_range(void *arg, int64_t begin, int64_t end)
{
	const KdSourceCopy *c = arg;

	for (int64 i = begin; i < end; i++)
		c->tids[i] = kdg_row_tid(c->src, i);
}

/*
 * A palloc'd copy of the source's coordinates, n * dim, in row order,
 * copied on the engine's threads (a large copy into new memory is bound by
 * mapping its pages).
 */
double *
kdg_source_coords(const KdSource *src)
{
	KdSourceCopy c = {src, NULL, NULL};

	c.coords = palloc_extended(sizeof(double) * src->dim * Max(src->n, 1),
							   MCXT_ALLOC_HUGE);
	if (src->n > 0)
		kdg_parallel_for(src->n, 65536, source_coords_range, &c);
	return c.coords;
}

/* The packed TIDs of a source's rows, in ordinal order, palloc'd. */
uint64 *
kdg_source_tids(const KdSource *src)
{
	KdSourceCopy c = {src, NULL, NULL};

	c.tids = palloc_extended(sizeof(uint64) * Max(src->n, 1), MCXT_ALLOC_HUGE);
	if (src->n > 0)
		kdg_parallel_for(src->n, 65536, source_tids_range, &c);
	return c.tids;
}

/*
 * Whether src's key column can hold no NULL and no value twice among the
 * rows a snapshot sees, as the function requires of it: NOT NULL, with an
 * immediate unique index on it alone.
 */
bool
kdg_source_key_unique(const KdSource *src)
{
	Relation	heap = table_open(src->relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(heap);
	ListCell   *lc;
	bool		unique = false;

	if (TupleDescAttr(RelationGetDescr(heap), src->keyattnum - 1)->attnotnull)
		foreach(lc, indexes)
		{
			Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
			Form_pg_index form = index->rd_index;

			unique = form->indisunique && form->indimmediate && form->indisvalid &&
				form->indnatts == 1 && form->indkey.values[0] == src->keyattnum &&
				RelationGetIndexPredicate(index) == NIL;
			index_close(index, NoLock);
			if (unique)
				break;
		}
	table_close(heap, NoLock);
	list_free(indexes);
	return unique;
}
