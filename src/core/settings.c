/*
 * settings.c
 *	  The kdgpu.* settings: their variables and their definitions.
 *
 * Every layer reads the settings through the variables declared in
 * kdgpu.h; they are defined here, below every layer that reads them, and
 * registered once by _PG_init (kdgpu.c) through kdg_settings_define.
 * kdgpu_gpu_library is not a setting but where the GPU object lives,
 * filled in by _PG_init.
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "core/core.h"

int			kdgpu_device = KD_DEVICE_AUTO;
int			kdgpu_gpu_min_points = 100000;
int			kdgpu_gpu_memory_limit = 0;
int			kdgpu_cpu_threads = 0;
bool		kdgpu_stream_rows = true;
bool		kdgpu_index_rows = true;
bool		kdgpu_progress = false;
int			kdgpu_answer_memory_limit = 0;
int			kdgpu_service_queue_limit = 0;
int			kdgpu_gpu_replicas = 1;
bool		kdgpu_service_enabled = true;
char		kdgpu_gpu_library[MAXPGPATH];

static const struct config_enum_entry device_options[] = {
	{"auto", KD_DEVICE_AUTO, false},
	{"cpu", KD_DEVICE_CPU, false},
	{"gpu", KD_DEVICE_GPU, false},
	{NULL, 0, false}
};

/* Define the kdgpu.* settings, once, from _PG_init. */
void
kdg_settings_define(void)
{
	DefineCustomEnumVariable("kdgpu.device",
							 "Where kdgpu runs its work: auto, cpu or gpu.",
							 "auto uses a GPU when one is usable and the work is "
							 "at least kdgpu.gpu_min_points points; gpu fails "
							 "when no GPU is usable.",
							 &kdgpu_device,
							 KD_DEVICE_AUTO,
							 device_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("kdgpu.gpu_min_points",
							"Work smaller than this many points runs on the CPU "
							"when kdgpu.device is auto.",
							NULL,
							&kdgpu_gpu_min_points,
							100000, 0, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("kdgpu.gpu_memory_limit",
							"Device memory kdgpu may use; 0 means all free memory.",
							NULL,
							&kdgpu_gpu_memory_limit,
							0, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("kdgpu.answer_memory_limit",
							"Memory one batched call's neighbours may take; 0 means a quarter "
							"of the machine's memory.",
							"A call whose answer would need more is refused before it starts.",
							&kdgpu_answer_memory_limit,
							0, 0, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("kdgpu.cpu_threads",
							"CPU threads for batched work; 0 means one per core.",
							NULL,
							&kdgpu_cpu_threads,
							0, 0, 1024,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("kdgpu.stream_rows",
							 "Streams the rows of kdgpu's functions in FROM instead of "
							 "storing them in a tuplestore first.",
							 NULL,
							 &kdgpu_stream_rows,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	/*
	 * Read when the postmaster loads the library; PGC_SIGHUP rather than
	 * PGC_POSTMASTER, which a library loaded after startup may not define.
	 */
	DefineCustomBoolVariable("kdgpu.index_rows",
							 "Takes the rows of kdgpu's functions from the table's kdgpu "
							 "index and visibility map instead of reading the whole table.",
							 "Off: every call reads its table, as before.",
							 &kdgpu_index_rows,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("kdgpu.progress",
							 "Reports the progress of long clustering and pair searches "
							 "as NOTICEs.",
							 "One NOTICE per slice of the points searched.",
							 &kdgpu_progress,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("kdgpu.service",
							 "Starts the GPU service that runs every session's GPU work, "
							 "when kdgpu is in shared_preload_libraries.",
							 "Off: each backend opens the GPU itself.  Takes effect at "
							 "server start.",
							 &kdgpu_service_enabled,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("kdgpu.service_queue_limit",
							"Runs GPU work on the CPU in the backend instead of queueing "
							"it for the GPU service when this many calls are waiting or "
							"running there; 0 means no limit.",
							NULL,
							&kdgpu_service_queue_limit,
							0, 0, INT_MAX,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("kdgpu.gpu_replicas",
							"Device copies the GPU service keeps of each index's tree, "
							"each on a device of its own.",
							"Calls on the tree then run on whichever copy's device is "
							"free.  Read by the service from the server's configuration.",
							&kdgpu_gpu_replicas,
							1, 1, 16,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("kdgpu");
}
