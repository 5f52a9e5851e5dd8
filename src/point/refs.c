/*
 * refs.c
 *	  Row references: the 64-bit numbers that stand for rows in the trees,
 *	  the index and the answers.
 *
 * A heap TID packs into block << 16 | offset, so that references sort
 * like TIDs and the engine's tie-break on references is the tie-break on
 * ctid.  A key value (smallint, integer or bigint) maps to an unsigned
 * number of the same order by flipping its sign bit.  The index access
 * method (src/am/) and the table readers both use these.
 */
#include "postgres.h"

#include "catalog/pg_type.h"

#include "point/point.h"

/* Pack a heap TID into a row reference that sorts like the TID. */
uint64
kdg_tid_to_ref(ItemPointer tid)
{
	return ((uint64) ItemPointerGetBlockNumberNoCheck(tid) << 16) |
		ItemPointerGetOffsetNumberNoCheck(tid);
}

/* The heap block of a row reference. */
BlockNumber
kdg_ref_block(uint64 ref)
{
	return (BlockNumber) (ref >> 16);
}

/* Unpack a row reference into a heap TID. */
void
kdg_ref_to_tid(uint64 ref, ItemPointer tid)
{
	ItemPointerSet(tid, kdg_ref_block(ref), (OffsetNumber) (ref & 0xFFFF));
}

/*
 * A key value as an unsigned number of the same order (the sign bit
 * flipped), to serve as a row's ref.
 */
uint64
kdg_key_to_ref(Oid keytype, Datum key)
{
	int64		v;

	if (keytype == INT2OID)
		v = DatumGetInt16(key);
	else if (keytype == INT4OID)
		v = DatumGetInt32(key);
	else
		v = DatumGetInt64(key);
	return (uint64) v ^ (UINT64CONST(1) << 63);
}

/* The key a ref made by kdg_key_to_ref stands for. */
int64
kdg_ref_to_key(uint64 ref)
{
	return (int64) (ref ^ (UINT64CONST(1) << 63));
}
