/*
 * vam_insert.c
 *	  aminsert of a kdvec index: a row's vector onto the pending chain, or
 *	  its ref onto the null chain when the vector is NULL or empty.
 *
 * The vector is checked as the build checks it (finite, one-dimensional,
 * no NULL coordinate, at most KDVAM_MAX_DIM coordinates) and must have
 * the index's dimension; the tree itself never changes.
 */
#include "postgres.h"

#include "utils/array.h"
#include "utils/rel.h"

#include "vam.h"

/* aminsert */
bool
kdvam_insert(Relation index, Datum *values, bool *isnull,
			 ItemPointer heap_tid, Relation heap,
			 IndexUniqueCheck checkUnique, bool indexUnchanged,
			 IndexInfo *indexInfo)
{
	KdWhere		where = {NULL, 0};
	ArrayType  *arr = NULL;
	uint64		ref = kdg_tid_to_ref(heap_tid);
	int			dim;

	where.tid = *heap_tid;
	where.relid = RelationGetRelid(heap);
	dim = isnull[0] ? 0 : kdg_array_view(values[0], KDVAM_MAX_DIM, &where, &arr);
	if (dim == 0)
		kdvam_chain_append(index, &ref, sizeof(uint64), KDVAM_NULLS, 0);
	else
	{
		Size		size = KDVAM_ROW_SIZE(dim);
		char	   *rec = palloc(size);

		memcpy(rec, &ref, sizeof(uint64));
		memcpy(rec + sizeof(uint64), ARR_DATA_PTR(arr), sizeof(double) * dim);
		kdvam_chain_append(index, rec, size, KDVAM_PENDING, dim);
		pfree(rec);
	}
	if (arr != NULL && (Pointer) arr != DatumGetPointer(values[0]))
		pfree(arr);
	return false;
}
