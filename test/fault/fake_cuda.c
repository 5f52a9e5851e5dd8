/*
 * fake_cuda.c
 *	  A stand-in for kdgpu_cuda.so that fails on purpose, so that the
 *	  engine's GPU fallback paths (src/engine/kd_gpu.c and its callers) are
 *	  tested on machines without a GPU.
 *
 * It exports the same entry table as the real object (src/engine/kd_gpu_abi.h).
 * probe() finds one device called "fake".  upload() succeeds and allocates
 * a host token as the "device tree", which release() frees; the number of
 * tokens not yet released is fake_live_trees(), so a test can see that
 * every path gives back what it took.  KDGPU_FAKE_UPLOAD names a status
 * for upload() to fail with instead.  build() and every query fail with
 * the status named by KDGPU_FAKE_FAIL (default "gpu").  Both variables are
 * read at every call.  Status names: nomem, gpu, unavailable, canceled,
 * arg.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/engine/kd_gpu_abi.h"

struct KdGpuTree
{
	int64_t		n;
};

static int	live_trees = 0;

/* Uploaded trees not yet released. */
__attribute__((visibility("default"))) int
fake_live_trees(void)
{
	return live_trees;
}

/* The status named by an environment variable, or dflt when unset. */
static KdStatus
fake_status(const char *var, KdStatus dflt)
{
	const char *v = getenv(var);

	if (v == NULL || v[0] == '\0')
		return dflt;
	if (strcmp(v, "nomem") == 0)
		return KD_ERR_GPU_NOMEM;
	if (strcmp(v, "unavailable") == 0)
		return KD_ERR_GPU_UNAVAILABLE;
	if (strcmp(v, "canceled") == 0)
		return KD_ERR_CANCELED;
	if (strcmp(v, "arg") == 0)
		return KD_ERR_ARG;
	return KD_ERR_GPU;
}

/* Fail with the configured status and a message naming the call. */
static KdStatus
fake_fail(KdError *err, const char *what)
{
	KdStatus	st = fake_status("KDGPU_FAKE_FAIL", KD_ERR_GPU);

	err->code = st;
	err->item = -1;
	snprintf(err->message, sizeof(err->message), "fake GPU failure in %s", what);
	return st;
}

static KdStatus
fake_probe(KdGpuInfo *info, KdError *err)
{
	(void) err;
	memset(info, 0, sizeof(*info));
	info->device_count = 1;
	snprintf(info->name, sizeof(info->name), "fake");
	info->cc_major = 9;
	return KD_OK;
}

/* Its one device, 0. */
static KdStatus
fake_select_device(int device, KdError *err)
{
	if (device == 0)
		return KD_OK;
	err->code = KD_ERR_ARG;
	err->item = -1;
	snprintf(err->message, sizeof(err->message), "no fake device %d", device);
	return KD_ERR_ARG;
}

static KdStatus
fake_upload(const KdTree *tree, KdGpuTree **out, const KdExec *exec,
			KdError *err)
{
	KdStatus	st = fake_status("KDGPU_FAKE_UPLOAD", KD_OK);

	(void) exec;
	*out = NULL;
	if (st != KD_OK)
	{
		err->code = st;
		err->item = -1;
		snprintf(err->message, sizeof(err->message), "fake GPU failure in upload");
		return st;
	}
	*out = malloc(sizeof(KdGpuTree));
	(*out)->n = tree->n;
	live_trees++;
	return KD_OK;
}

static void
fake_release(KdGpuTree *gtree)
{
	if (gtree == NULL)
		return;
	free(gtree);
	live_trees--;
}

static KdStatus
fake_build(const double *points, const uint64_t *refs, int64_t n, int dim,
		   KdTree *tree, KdGpuTree **out, const KdExec *exec, KdError *err)
{
	(void) points, (void) refs, (void) n, (void) dim, (void) tree, (void) exec;
	if (out)
		*out = NULL;
	return fake_fail(err, "build");
}

static KdStatus
fake_knn(const KdGpuTree *g, const double *q, int64_t nq, int k,
		 KdNeighbor *out, int32_t *count, const KdExec *exec, KdError *err)
{
	(void) g, (void) q, (void) nq, (void) k, (void) out, (void) count, (void) exec;
	return fake_fail(err, "knn");
}

static KdStatus
fake_all_knn(const KdGpuTree *g, int k, bool self, KdNeighbor *out,
			 int32_t *count, const KdExec *exec, KdError *err)
{
	(void) g, (void) k, (void) self, (void) out, (void) count, (void) exec;
	return fake_fail(err, "all_knn");
}

static KdStatus
fake_radius(const KdGpuTree *g, const double *c, int64_t nq, const double *r,
			int64_t nr, KdRangeResult *res, const KdExec *exec, KdError *err)
{
	(void) g, (void) c, (void) nq, (void) r, (void) nr, (void) res, (void) exec;
	return fake_fail(err, "radius");
}

static KdStatus
fake_box(const KdGpuTree *g, const double *lo, const double *hi, int64_t nq,
		 KdRangeResult *res, const KdExec *exec, KdError *err)
{
	(void) g, (void) lo, (void) hi, (void) nq, (void) res, (void) exec;
	return fake_fail(err, "box");
}

static KdStatus
fake_dbscan(const KdGpuTree *g, const KdDbscan *args, int32_t *labels,
			int64_t *undecided, const KdExec *exec, KdError *err)
{
	(void) g, (void) args, (void) labels, (void) undecided, (void) exec;
	return fake_fail(err, "dbscan");
}

static const KdCudaApi fake_api = {
	KDGPU_CUDA_ABI_VERSION,
	fake_probe,
	fake_select_device,
	fake_upload,
	fake_release,
	fake_build,
	fake_knn,
	fake_all_knn,
	fake_radius,
	fake_box,
	fake_dbscan
};

__attribute__((visibility("default"))) const KdCudaApi *
kdgpu_cuda_api(void)
{
	return &fake_api;
}
