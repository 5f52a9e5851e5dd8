/*
 * kdgpu.c
 *	  Module entry point.
 *
 * _PG_init defines the settings (core/settings.c), records where the GPU
 * object lives, installs the executor hook of plan/orderby_hook.c, the
 * planner hooks of plan/stream_scan.c and plan/postgis_paths.c and the
 * log hook of am/kdam_hint.c, and, when
 * preloaded, registers the GPU service (src/service/).  It never touches a
 * GPU, because the library
 * may be preloaded into the postmaster and CUDA state does not survive
 * fork(); the engine opens the GPU object on first use in a backend.  This
 * file is the top of the module: nothing calls into it.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "am/kdam.h"
#include "core/core.h"
#include "plan/plan.h"
#include "service/service.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/* Define the settings, point the engine at $libdir/kdgpu_cuda.so, hook in. */
void
_PG_init(void)
{
	kdg_settings_define();
	snprintf(kdgpu_gpu_library, sizeof(kdgpu_gpu_library), "%s/kdgpu_cuda.so",
			 pkglib_path);
	kde_gpu_set_library(kdgpu_gpu_library);
	if (process_shared_preload_libraries_in_progress)
		kdg_service_register();
	kdg_service_client_install();
	kdg_orderby_hook_install();
	kdg_stream_scan_install();
	kdg_postgis_paths_install();
	kdam_opclass_hint_install();
}
