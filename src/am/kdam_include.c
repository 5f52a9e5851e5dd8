/*
 * kdam_include.c
 *	  INCLUDE columns of a kdgpu index, and index-only scans.
 *
 * `CREATE INDEX ... USING kdgpu (p) INCLUDE (id, ...)` stores the values of
 * the INCLUDE columns beside each point, so that a query needing only them
 * (and the point) runs as an index-only scan and skips the heap where the
 * visibility map allows.  The columns must be of fixed-width types passed
 * by value (integers, float8, date, timestamp, ...): each value is one
 * 64-bit payload word, and one more word holds a bit per column for NULLs.
 * A point's payload lives in the tree stream (node order) or in its pending
 * record.
 *
 * Index-only scans return the INCLUDE values and, for the point opclass,
 * the point itself, rebuilt from its coordinates.  Without INCLUDE columns
 * every such tuple has one shape, so a scan forms one and rewrites its
 * point for each row (kdam_tuple_set_point) instead of forming a tuple per
 * row, since forming tuples dominated large index-only counts.
 *
 * A float8[] key cannot be rebuilt exactly (the array's lower bound is not
 * kept), so it is not returned, and the planner reads such columns from
 * the heap.
 */
#include "postgres.h"

#include "access/itup.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/geo_decls.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "kdam.h"

/* Payload words per point: one per INCLUDE column and a NULL mask; 0 if none. */
int
kdam_payload_words(Relation index)
{
	int			ninclude = IndexRelationGetNumberOfAttributes(index) -
		IndexRelationGetNumberOfKeyAttributes(index);

	return ninclude > 0 ? ninclude + 1 : 0;
}

/* Error unless every INCLUDE column fits a payload word (CREATE INDEX). */
void
kdam_check_include_types(Relation index)
{
	TupleDesc	desc = RelationGetDescr(index);

	for (int i = IndexRelationGetNumberOfKeyAttributes(index); i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attbyval || att->attlen <= 0 || att->attlen > (int) sizeof(uint64))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("kdgpu INCLUDE column \"%s\" is of type %s, which is not a fixed-width type of at most 8 bytes",
							NameStr(att->attname), format_type_be(att->atttypid)),
					 errhint("INCLUDE columns of integer, bigint, float8, date, timestamp and other fixed-width types are supported; index a key such as the primary key.")));
	}
}

/* Fill out[0..words) with the payload of an index row's INCLUDE values. */
void
kdam_payload_from_values(Relation index, Datum *values, bool *isnull,
						 uint64 *out)
{
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	int			ninclude = kdam_payload_words(index) - 1;
	uint64		nulls = 0;

	for (int i = 0; i < ninclude; i++)
	{
		if (isnull[nkeys + i])
		{
			nulls |= UINT64CONST(1) << i;
			out[i] = 0;
		}
		else
			out[i] = (uint64) values[nkeys + i];
	}
	out[ninclude] = nulls;
}

/*
 * amcanreturn: INCLUDE columns always, the key column for point only (see
 * the file header); nothing on a hot standby, whose replay of VACUUM (in
 * Generic WAL) takes no cleanup lock that would wait for an index-only
 * scan's pin, so that such a scan could return rows VACUUM removed after
 * it read them and whose pages it then marked all-visible (kdam.h).
 */
bool
kdam_canreturn(Relation index, int attno)
{
	if (RecoveryInProgress())
		return false;
	if (attno > IndexRelationGetNumberOfKeyAttributes(index))
		return true;
	return kdam_index_type(index) == KD_TYPE_POINT;
}

/*
 * Form the index tuple an index-only scan returns for a point with the
 * given coordinates (NULL for a row with no point; returned as the key only
 * by a point index, is_point) and payload (NULL when the index has no
 * INCLUDE columns), in the current memory context.
 */
IndexTuple
kdam_form_tuple(Relation index, bool is_point, const double *coords,
				const uint64 *payload)
{
	TupleDesc	desc = RelationGetDescr(index);
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];

	if (coords != NULL && is_point)
	{
		Point	   *p = palloc(sizeof(Point));

		p->x = coords[0];
		p->y = coords[1];
		values[0] = PointPGetDatum(p);
		isnull[0] = false;
	}
	else
	{
		values[0] = (Datum) 0;
		isnull[0] = true;
	}
	for (int i = nkeys; i < desc->natts; i++)
	{
		int			j = i - nkeys;

		values[i] = (Datum) payload[j];
		isnull[i] = (payload[desc->natts - nkeys] >> j) & 1;
	}
	return index_form_tuple(desc, values, isnull);
}

/*
 * Put a point into a tuple that kdam_form_tuple made for a point of an
 * index without INCLUDE columns: such tuples differ in their data alone,
 * so an index-only scan forms one and rewrites its point for each row.
 */
void
kdam_tuple_set_point(IndexTuple itup, const double *coords)
{
	Point		p;

	p.x = coords[0];
	p.y = coords[1];
	memcpy((char *) itup + IndexInfoFindDataOffset(itup->t_info), &p, sizeof(Point));
}
