/*
 * kdgpu.c
 *	  Module entry point and the kdgpu.* settings.
 *
 * _PG_init defines GUCs, records where the GPU object lives, installs
 * the executor hook of orderby_hook.c and the planner hook of
 * stream_scan.c, and, when preloaded, registers the GPU service
 * (src/service/); it never touches a GPU, because the library may be preloaded into the
 * postmaster and CUDA state does not survive fork().  The GPU object is
 * opened by the engine on first use in a backend.
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "kdgpu.h"
#include "service/service.h"

PG_MODULE_MAGIC;

int			kdgpu_device = KD_DEVICE_AUTO;
int			kdgpu_gpu_min_points = 100000;
int			kdgpu_gpu_memory_limit = 0;
int			kdgpu_cpu_threads = 0;
bool		kdgpu_stream_rows = true;
int			kdgpu_service_queue_limit = 0;
int			kdgpu_gpu_replicas = 1;
char		kdgpu_gpu_library[MAXPGPATH];

static const struct config_enum_entry device_options[] = {
	{"auto", KD_DEVICE_AUTO, false},
	{"cpu", KD_DEVICE_CPU, false},
	{"gpu", KD_DEVICE_GPU, false},
	{NULL, 0, false}
};

void		_PG_init(void);

/* Define the GUCs and point the engine at $libdir/kdgpu_cuda.so. */
void
_PG_init(void)
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

	snprintf(kdgpu_gpu_library, sizeof(kdgpu_gpu_library), "%s/kdgpu_cuda.so",
			 pkglib_path);
	kd_gpu_set_library(kdgpu_gpu_library);
	if (process_shared_preload_libraries_in_progress)
		kdg_service_register();
	kdg_service_client_install();
	kdg_orderby_hook_install();
	kdg_stream_scan_install();
}
