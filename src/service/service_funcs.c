/*
 * service_funcs.c
 *	  kd_resident_copies(), behind the kd_resident view: the device copies
 *	  the GPU service holds, for all sessions and databases.
 *
 * The entries are copied out of the shared state under its lock, then
 * turned into rows.  A copy of an index tree names its database, index,
 * relfilenode and tree id (the generation column); the index column is filled only for the
 * current database, where the OID means something.  A copy split over
 * several devices has a row per device, with the bytes it holds there.
 * Without the service there are no rows.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "service.h"

PG_FUNCTION_INFO_V1(kdgpu_resident_copies);

/* A row of kd_resident: entry e's copy on device. */
static void
resident_row(ReturnSetInfo *rsinfo, const KdgResident *e, int device)
{
	Datum		values[13];
	bool		nulls[13] = {false};
	Oid			dboid;
	Oid			indexrelid;

	values[0] = Int32GetDatum(device);
	if (e->shared && kdg_service_key_index(e->key, &dboid, &indexrelid))
	{
		values[1] = ObjectIdGetDatum(dboid);
		values[2] = ObjectIdGetDatum(indexrelid);
		nulls[2] = dboid != MyDatabaseId;
		values[3] = ObjectIdGetDatum((Oid) e->key[1]);
		values[4] = Int64GetDatum((int64) e->key[2]);
		values[5] = CStringGetTextDatum(e->key[3] == KDG_KEY_RANKED + 1 ? "ranked" :
										e->key[3] == KDG_KEY_BUILT + 1 ? "built" :
										e->key[3] == KDG_KEY_ROWS + 1 ? "rows" : "tree");
	}
	else
	{
		for (int c = 1; c <= 5; c++)
			nulls[c] = true;
	}
	values[6] = Int32GetDatum(e->owner_pid);
	nulls[6] = e->shared;
	values[7] = Int64GetDatum(e->n);
	values[8] = Int32GetDatum(e->dim);
	values[9] = Int64GetDatum(e->device_bytes[device]);
	values[10] = Int64GetDatum(e->hits);
	values[11] = TimestampTzGetDatum(e->loaded_at);
	values[12] = TimestampTzGetDatum(e->last_use);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* One row per device copy the service holds. */
Datum
kdgpu_resident_copies(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	KdgResident copies[KDG_RESIDENT_MAX];

	InitMaterializedSRF(fcinfo, 0);
	if (kdg_service == NULL)
		return (Datum) 0;
	SpinLockAcquire(&kdg_service->mutex);
	memcpy(copies, kdg_service->resident, sizeof(copies));
	SpinLockRelease(&kdg_service->mutex);

	for (int i = 0; i < KDG_RESIDENT_MAX; i++)
		for (int d = 0; d < KDG_MAX_DEVICES; d++)
			if (copies[i].used &&
				(copies[i].device == d || copies[i].device_bytes[d] > 0))
				resident_row(rsinfo, &copies[i], d);
	return (Datum) 0;
}

