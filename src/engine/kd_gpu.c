/*
 * kd_gpu.c
 *	  Opening the GPU object and choosing between the GPU and the CPU.
 *
 * kdgpu_cuda.so is opened with dlopen(RTLD_NOW | RTLD_LOCAL) on the first
 * call that could use it, never before, so a process that never asks for
 * the GPU never initializes CUDA (a PostgreSQL postmaster must not: CUDA
 * state does not survive fork).  The outcome is remembered for the life of
 * the process: either a usable function table and the device's description,
 * or the reason there is none (no library, no driver, no device, driver too
 * old), which kde_gpu_available reports and KdExec.note repeats.
 *
 * Device choice: KD_DEVICE_CPU never opens the library; KD_DEVICE_GPU fails
 * with the reason when no GPU is usable; KD_DEVICE_AUTO uses the GPU for work
 * of at least gpu_min_work items and falls back to the CPU when the GPU
 * fails for want of memory or with a CUDA error.
 *
 * A provider (kde_gpu_set_provider) stands in for the library: when it
 * returns a function table at the first use, that table serves the process
 * for its life and the library is never opened.  The extension's GPU
 * service client is one: its table forwards every call to the service
 * process, so a backend never creates a CUDA context of its own.  Whether
 * a provided table has a usable GPU is asked again at each use (its probe),
 * since a service comes and goes.
 *
 * Only this file reads the function table: the engine's build and queries
 * and the GPU service alike call the wrappers at its end (kde_gpu_probe,
 * kde_gpu_upload_copy, kde_gpu_knn and the others of kdtree.h), which go to
 * the table that made the process's device copies.  The service runs the
 * library itself: its process has no provided table.
 *
 * Test-only fault injection: KDGPU_FAULT=absent makes the library count as
 * not loadable, as on a server without a GPU; the other KDGPU_FAULT values
 * are read by the GPU object itself (cuda/api.cu).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_internal.h"
#include "kd_gpu_abi.h"

static char gpu_library[1024] = "";
static KdGpuProvider gpu_provider = NULL;
static const KdCudaApi *provided_api = NULL;	/* the provider's table */
static bool gpu_loaded = false;
static const KdCudaApi *gpu_api = NULL;
static KdGpuInfo gpu_info;
static char gpu_why[256] = "";

/*
 * Set the path of kdgpu_cuda.so; takes effect if the library has not been
 * opened yet.  $KDGPU_CUDA_LIB, when set, names another object instead (a
 * test's stand-in); with neither, the dynamic linker searches.
 */
void
kde_gpu_set_library(const char *path)
{
	snprintf(gpu_library, sizeof(gpu_library), "%s", path ? path : "");
}

/*
 * Set the provider consulted before the library; takes effect if the GPU
 * has not been wanted yet.
 */
void
kde_gpu_set_provider(KdGpuProvider provider)
{
	gpu_provider = provider;
}

/*
 * Open the library (or take the provider's table) and probe for a device,
 * once per process.
 */
static void
gpu_load(void)
{
	const char *path = gpu_library;
	void	   *handle;
	const KdCudaApi *(*entry) (void);
	const KdCudaApi *api;
	KdError		err;

	if (gpu_loaded)
		return;
	gpu_loaded = true;
	if (gpu_provider)
		provided_api = gpu_provider();
	if (provided_api)
		return;
	if (getenv("KDGPU_FAULT") && strcmp(getenv("KDGPU_FAULT"), "absent") == 0)
	{
		snprintf(gpu_why, sizeof(gpu_why),
				 "GPU library not loaded: KDGPU_FAULT=absent (fault injection)");
		return;
	}
	if (getenv("KDGPU_CUDA_LIB") && getenv("KDGPU_CUDA_LIB")[0] != '\0')
		path = getenv("KDGPU_CUDA_LIB");
	if (path == NULL || path[0] == '\0')
		path = "kdgpu_cuda.so";

	handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (handle == NULL)
	{
		snprintf(gpu_why, sizeof(gpu_why), "GPU library not loaded: %.200s",
				 dlerror());
		return;
	}
	*(void **) (&entry) = dlsym(handle, "kdgpu_cuda_api");
	api = entry ? entry() : NULL;
	if (api == NULL || api->abi_version != KDGPU_CUDA_ABI_VERSION)
	{
		snprintf(gpu_why, sizeof(gpu_why),
				 "GPU library %.190s does not match this build (ABI %d expected)",
				 path, KDGPU_CUDA_ABI_VERSION);
		return;
	}
	memset(&err, 0, sizeof(err));
	if (api->probe(&gpu_info, &err) != KD_OK)
	{
		snprintf(gpu_why, sizeof(gpu_why), "%s", err.message);
		return;
	}
	gpu_api = api;
}

/*
 * The function table, or NULL when no GPU is usable (a provided table's
 * probe says whether it is, now).
 */
static const KdCudaApi *
kde_gpu_api(void)
{
	KdError		err;

	gpu_load();
	if (provided_api)
	{
		memset(&err, 0, sizeof(err));
		if (provided_api->probe(&gpu_info, &err) == KD_OK)
			gpu_api = provided_api;
		else
		{
			snprintf(gpu_why, sizeof(gpu_why), "%s", err.message);
			gpu_api = NULL;
		}
	}
	return gpu_api;
}

/*
 * Whether a GPU is usable; fills info (if given) or, when there is none,
 * the reason (if why is given).
 */
bool
kde_gpu_available(KdGpuInfo *info, char *why, size_t whylen)
{
	(void) kde_gpu_api();
	if (gpu_api && info)
		*info = gpu_info;
	if (!gpu_api && why && whylen > 0)
		snprintf(why, whylen, "%s", gpu_why);
	return gpu_api != NULL;
}

/*
 * Whether exec's work of `work` items goes to the GPU.  When it cannot,
 * exec->note says why; *st is an error only when the GPU was required.
 */
bool
kde_gpu_chosen(KdExec *exec, int64_t work, KdError *err, KdStatus *st)
{
	*st = KD_OK;
	exec->used_gpu = false;
	exec->note[0] = '\0';
	if (exec->device == KD_DEVICE_CPU)
	{
		snprintf(exec->note, sizeof(exec->note), "CPU requested");
		return false;
	}
	if (kde_gpu_api() == NULL)
	{
		snprintf(exec->note, sizeof(exec->note), "%s", gpu_why);
		if (exec->device == KD_DEVICE_GPU)
			*st = kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1, "%s", gpu_why);
		return false;
	}
	if (exec->device == KD_DEVICE_AUTO && work < exec->gpu_min_work)
	{
		snprintf(exec->note, sizeof(exec->note),
				 "%lld items are below the GPU threshold of %lld",
				 (long long) work, (long long) exec->gpu_min_work);
		return false;
	}
	exec->used_gpu = true;
	return true;
}

/*
 * After a GPU failure: true when the CPU should redo the work (AUTO mode
 * and a failure of the GPU itself, not of the arguments), noting why.
 */
bool
kde_gpu_fallback(KdExec *exec, KdStatus st, const KdError *err)
{
	exec->used_gpu = false;
	if (exec->device != KD_DEVICE_AUTO ||
		(st != KD_ERR_GPU && st != KD_ERR_GPU_NOMEM &&
		 st != KD_ERR_GPU_UNAVAILABLE))
		return false;
	snprintf(exec->note, sizeof(exec->note), "GPU failed, CPU used: %.200s",
			 err ? err->message : "");
	return true;
}

/*
 * See kd_internal.h.  A tree only on the device (no host arrays) has no CPU
 * path: when the GPU is not chosen or fails, the call fails.
 */
bool
kde_gpu_run(const KdTree *tree, int64_t work, KdGpuFn fn, void *arg,
		   KdExec *exec, KdError *err, KdStatus *st)
{
	KdGpuTree  *gtree = tree->gpu;
	bool		on_host = tree->coords != NULL;

	if (!kde_gpu_chosen(exec, work, err, st))
	{
		if (*st == KD_OK && !on_host)
			*st = kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
							   "the tree is on the GPU only: %s", exec->note);
		return *st != KD_OK;
	}
	if (gtree == NULL)
		*st = kde_gpu_upload_copy(tree, &gtree, exec, err);
	if (*st == KD_OK)
	{
		*st = fn(gtree, arg, exec, err);
		if (gtree != tree->gpu)
			kde_gpu_release_copy(gtree);
	}
	if (*st == KD_OK)
		return true;
	return !kde_gpu_fallback(exec, *st, err) || !on_host;
}

/* Keep a device copy of tree in tree->gpu for the queries that follow. */
KdStatus
kde_gpu_upload(KdTree *tree, KdExec *exec, KdError *err)
{
	if (tree->gpu)
		return KD_OK;
	if (kde_gpu_api() == NULL)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1, "%s", gpu_why);
	return kde_gpu_upload_copy(tree, &tree->gpu, exec, err);
}

/*
 * The table that made this process's device copies, and that runs its GPU
 * calls once kde_gpu_chosen or kde_gpu_run has found a GPU usable (a
 * provided table is not probed again between the two).
 */
static const KdCudaApi *
kde_gpu_made(void)
{
	return provided_api ? provided_api : gpu_api;
}

/* Free the tree's device copy, if any, through the table that made it. */
void
kde_gpu_release(KdTree *tree)
{
	kde_gpu_release_copy(tree->gpu);
	tree->gpu = NULL;
}

/* The GPU object's probe of the selected device (kd_gpu_abi.h). */
KdStatus
kde_gpu_probe(KdGpuInfo *info, KdError *err)
{
	return kde_gpu_made()->probe(info, err);
}

/* The GPU object's device selection (kd_gpu_abi.h). */
KdStatus
kde_gpu_select_device(int device, KdError *err)
{
	return kde_gpu_made()->select_device(device, err);
}

/* The GPU object's upload of a host tree into *out (kd_gpu_abi.h). */
KdStatus
kde_gpu_upload_copy(const KdTree *tree, KdGpuTree **out, const KdExec *exec,
				   KdError *err)
{
	return kde_gpu_made()->upload(tree, out, exec, err);
}

/*
 * Free a device copy, if any, through the table that made it (none when no
 * table was ever usable, and then there is no copy).
 */
void
kde_gpu_release_copy(KdGpuTree *gtree)
{
	const KdCudaApi *api = kde_gpu_made();

	if (gtree && api)
		api->release(gtree);
}

/* The GPU object's build (kd_gpu_abi.h). */
KdStatus
kde_gpu_build(const double *points, const uint64_t *refs, int64_t n, int dim,
			 KdTree *tree, KdGpuTree **out, const KdExec *exec, KdError *err)
{
	return kde_gpu_made()->build(points, refs, n, dim, tree, out, exec, err);
}

/* The GPU object's kNN (kd_gpu_abi.h). */
KdStatus
kde_gpu_knn(const KdGpuTree *gtree, const double *queries, int64_t nq, int k,
		   KdNeighbor *out, int32_t *count, const KdExec *exec, KdError *err)
{
	return kde_gpu_made()->knn(gtree, queries, nq, k, out, count, exec, err);
}

/* The GPU object's All-kNN (kd_gpu_abi.h). */
KdStatus
kde_gpu_all_knn(const KdGpuTree *gtree, int k, bool include_self,
			   KdNeighbor *out, int32_t *count, const KdExec *exec,
			   KdError *err)
{
	return kde_gpu_made()->all_knn(gtree, k, include_self, out, count, exec, err);
}

/* The GPU object's radius queries (kd_gpu_abi.h). */
KdStatus
kde_gpu_radius(const KdGpuTree *gtree, const double *centers, int64_t nq,
			  const double *radii, int64_t nradii, KdRangeResult *res,
			  const KdExec *exec, KdError *err)
{
	return kde_gpu_made()->radius(gtree, centers, nq, radii, nradii, res, exec, err);
}

/* The GPU object's box queries (kd_gpu_abi.h). */
KdStatus
kde_gpu_box(const KdGpuTree *gtree, const double *lows, const double *highs,
		   int64_t nq, KdRangeResult *res, const KdExec *exec, KdError *err)
{
	return kde_gpu_made()->box(gtree, lows, highs, nq, res, exec, err);
}

/* The GPU object's density clusters (kd_gpu_abi.h). */
KdStatus
kde_gpu_dbscan(const KdGpuTree *gtree, const KdDbscan *args, int32_t *labels,
			  int64_t *undecided, const KdExec *exec, KdError *err)
{
	return kde_gpu_made()->dbscan(gtree, args, labels, undecided, exec, err);
}

/*
 * The GPU object's flat kNN (kd_gpu_abi.h); KD_ERR_GPU_UNAVAILABLE from a
 * table without one, so that AUTO falls back to the CPU.
 */
KdStatus
kde_gpu_flat_knn(const KdVectors *set, KdMetric metric, const double *queries,
				 int64_t nq, int k, const uint64_t *skip, KdNeighbor *out,
				 int32_t *count, const KdExec *exec, KdError *err)
{
	const KdCudaApi *api = kde_gpu_api();

	if (api == NULL || api->flat_knn == NULL)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
							 "this GPU provider does not search vectors");
	return api->flat_knn(set, metric, queries, nq, k, skip, out, count, exec,
						 err);
}

/*
 * The GPU object's flat radius search (kd_gpu_abi.h), each query's hits in
 * any order; KD_ERR_GPU_UNAVAILABLE from a table without one.
 */
KdStatus
kde_gpu_flat_radius(const KdVectors *set, KdMetric metric,
					const double *centers, int64_t nq, const double *radii,
					int64_t nradii, KdRangeResult *res, const KdExec *exec,
					KdError *err)
{
	const KdCudaApi *api = kde_gpu_api();

	if (api == NULL || api->flat_radius == NULL)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
							 "this GPU provider does not search vectors");
	return api->flat_radius(set, metric, centers, nq, radii, nradii, res, exec,
							err);
}

/* Whether the GPU provider builds vantage-point trees. */
bool
kde_gpu_builds_vp_trees(void)
{
	const KdCudaApi *api = kde_gpu_api();

	return api != NULL && api->vp_build != NULL;
}

/*
 * The GPU object's vantage-point tree build (kd_gpu_abi.h);
 * KD_ERR_GPU_UNAVAILABLE from a table without one.
 */
KdStatus
kde_gpu_vp_build(const KdVectors *set, KdMetric metric, int leaf_rows,
				 KdVpTree *tree, const KdExec *exec, KdError *err)
{
	const KdCudaApi *api = kde_gpu_api();

	if (api == NULL || api->vp_build == NULL)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
							 "this GPU provider does not build vantage-point trees");
	return api->vp_build(set, metric, leaf_rows, tree, exec, err);
}

/* Whether the GPU provider searches vantage-point trees given to it. */
bool
kde_gpu_searches_vp_trees(void)
{
	const KdCudaApi *api = kde_gpu_api();

	return api != NULL && api->vp_knn != NULL;
}

/*
 * The GPU object's kNN through a given vantage-point tree (kd_gpu_abi.h);
 * KD_ERR_GPU_UNAVAILABLE from a table without one.
 */
KdStatus
kde_gpu_vp_knn(const KdVectors *set, KdMetric metric, const KdVpTree *tree,
			   const double *queries, int64_t nq, int k, const uint64_t *skip,
			   KdNeighbor *out, int32_t *count, const KdExec *exec,
			   KdError *err)
{
	const KdCudaApi *api = kde_gpu_api();

	if (api == NULL || api->vp_knn == NULL)
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
							 "this GPU provider does not search vantage-point trees");
	return api->vp_knn(set, metric, tree, queries, nq, k, skip, out, count,
					   exec, err);
}

/* Whether the GPU provider keeps vantage-point trees on the device. */
bool
kde_gpu_keeps_vp_trees(void)
{
	const KdCudaApi *api = kde_gpu_api();

	return api != NULL && api->vp_upload != NULL && api->vp_search != NULL &&
		api->vp_release != NULL;
}

/*
 * Keep a device copy of tree and set's vectors in tree->gpu (none made
 * when it has one); KD_ERR_GPU_UNAVAILABLE from a table without one.
 */
KdStatus
kde_gpu_vp_keep(const KdVectors *set, KdMetric metric, KdVpTree *tree,
				const KdExec *exec, KdError *err)
{
	const KdCudaApi *api = kde_gpu_api();

	if (tree->gpu != NULL)
		return KD_OK;
	if (!kde_gpu_keeps_vp_trees())
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
							 "this GPU provider does not keep vantage-point trees");
	return api->vp_upload(set, metric, tree, &tree->gpu, exec, err);
}

/* kNN through tree's device copy (kde_gpu_vp_keep). */
KdStatus
kde_gpu_vp_search(const KdVpTree *tree, const double *queries, int64_t nq,
				  int k, const uint64_t *skip, KdNeighbor *out, int32_t *count,
				  const KdExec *exec, KdError *err)
{
	const KdCudaApi *api = kde_gpu_api();

	if (tree->gpu == NULL || !kde_gpu_keeps_vp_trees())
		return kde_set_error(err, KD_ERR_GPU_UNAVAILABLE, -1,
							 "no device copy of the vantage-point tree");
	return api->vp_search(tree->gpu, queries, nq, k, skip, out, count, exec,
						  err);
}

/* Free tree's device copy, if it has one. */
void
kde_gpu_vp_release(KdVpTree *tree)
{
	const KdCudaApi *api = kde_gpu_api();

	if (tree->gpu != NULL && api != NULL && api->vp_release != NULL)
		api->vp_release(tree->gpu);
	tree->gpu = NULL;
}

/* Add src's times and counts to dst's. */
void
kde_gpu_times_add(KdGpuTimes *dst, const KdGpuTimes *src)
{
	dst->kernel_ms += src->kernel_ms;
	dst->flat_filtered += src->flat_filtered;
	dst->flat_rechecked += src->flat_rechecked;
	dst->flat_tree += src->flat_tree;
	dst->flat_sampled += src->flat_sampled;
	dst->flat_sampled_share += src->flat_sampled_share;
	dst->flat_piloted += src->flat_piloted;
	dst->flat_piloted_share += src->flat_piloted_share;
}
