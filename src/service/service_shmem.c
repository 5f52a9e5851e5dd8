/*
 * service_shmem.c
 *	  The GPU service's shared state: its size, its creation, the background
 *	  worker's registration, and the names of index trees.
 *
 * Everything here runs in the postmaster (while shared_preload_libraries
 * are loaded) or while a process attaches to shared memory; nothing touches
 * a GPU.  Without the preload the state does not exist, kdg_service stays
 * NULL, and every backend runs its GPU work itself.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "service.h"

KdgService *kdg_service = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void service_attach(void);

/* Bytes of the shared state, one slot per backend. */
static Size
service_size(void)
{
	return add_size(offsetof(KdgService, slots),
					mul_size(MaxBackends, sizeof(KdgSlot)));
}

/* shmem_request_hook: ask for the shared state's memory. */
static void
service_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(service_size());
}

/* shmem_startup_hook: create the shared state, or find it. */
static void
service_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	service_attach();
}

/* Find (or, the first time, create) the shared state. */
static void
service_attach(void)
{
	bool		found;
	KdgService *svc;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	svc = ShmemInitStruct("kdgpu GPU service", service_size(), &found);
	if (!found)
	{
		memset(svc, 0, service_size());
		SpinLockInit(&svc->mutex);
		svc->registered = kdgpu_service_enabled;
		svc->nslots = MaxBackends;
		svc->procno = -1;
	}
	LWLockRelease(AddinShmemInitLock);
	kdg_service = svc;
}

/*
 * From _PG_init while shared_preload_libraries are loaded: ask for the
 * shared state and register the service (unless kdgpu.service is off).
 */
void
kdg_service_register(void)
{
	BackgroundWorker worker;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = service_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = service_shmem_startup;
	if (!kdgpu_service_enabled)
		return;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	worker.bgw_start_time = BgWorkerStart_PostmasterStart;
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "kdgpu");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "kdg_service_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "kdgpu GPU service");
	snprintf(worker.bgw_type, BGW_MAXLEN, "kdgpu GPU service");
	RegisterBackgroundWorker(&worker);
}

/*
 * The name of an index tree: its index's database and OID, relfilenode
 * (REINDEX and TRUNCATE give a new one), the tree's id (a tree's points
 * never change: merges and builds make new trees) and the rows VACUUM has
 * marked dead in it (above the relfilenode); flavour tells copies of the
 * same tree apart (the ranked tree's references differ from the tree's).
 */
void
kdg_service_key_of_index(uint64 *key, Oid indexrelid, Oid relnode,
						 uint64 tree_id, int64 ndead, int flavour)
{
	key[0] = ((uint64) MyDatabaseId << 32) | indexrelid;
	key[1] = relnode | ((uint64) ndead << 32);
	key[2] = tree_id;
	key[3] = (uint64) flavour + 1;
}

/* The name of another flavour of the same version, if key names one. */
void
kdg_service_key_set_flavour(uint64 *key, int flavour)
{
	if (key[3] != 0)
		key[3] = (uint64) flavour + 1;
}

/* The database and index a tree's name gives; false for an unnamed tree. */
bool
kdg_service_key_index(const uint64 *key, Oid *dboid, Oid *indexrelid)
{
	if (key[3] == 0)
		return false;
	*dboid = (Oid) (key[0] >> 32);
	*indexrelid = (Oid) (key[0] & 0xFFFFFFFF);
	return true;
}
