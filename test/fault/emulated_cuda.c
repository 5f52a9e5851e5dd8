/*
 * emulated_cuda.c
 *	  A stand-in for kdgpu_cuda.so that works, by running the CPU engine
 *	  behind the GPU object's table, so that the GPU service (src/service/)
 *	  is tested end to end on machines without a GPU.  Test-only: it is
 *	  built into build/test-bin/ and never installed.
 *
 * It exports the same entry table as the real object (kd_gpu_abi.h).  Its
 * "device" holds copies of trees in host memory and answers with the CPU
 * engine, so answers are those of the CPU path.  Settings, read from the
 * environment:
 *   KDGPU_FAKE_DEVICES    how many devices there are (default 1, at most 16)
 *   KDGPU_FAKE_MEMORY_MB  each device's memory (default 1024); an upload
 *                         past it fails with KD_ERR_GPU_NOMEM, as on a
 *                         full GPU
 *   KDGPU_FAKE_TRAP_FILE  when this file exists, the next kNN call removes
 *                         it and fails with KD_ERR_GPU, as a kernel that
 *                         traps does
 *   KDGPU_FAKE_DELAY_MS   each kNN and All-kNN call sleeps this long first,
 *                         polling the caller's interrupt callback, as long
 *                         GPU work does
 *   KDGPU_FAKE_CALL_LOG   each kNN call appends a line to this file: its
 *                         device, queries, and the start and end of its
 *                         work in milliseconds of CLOCK_MONOTONIC, so that
 *                         tests see which calls ran at once on which device
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../src/engine/kd_error.h"
#include "../../src/engine/kd_gpu_abi.h"

#define EMU_MAX_DEVICES 16

struct KdGpuTree
{
	KdTree		tree;
	int64_t		bytes;
	int			device;
};

static int64_t live_bytes[EMU_MAX_DEVICES];	/* per device */
static __thread int current = 0;	/* select_device's, per thread */

/* An integer setting from the environment, or dflt. */
static int64_t
setting(const char *var, int64_t dflt)
{
	const char *v = getenv(var);

	return v && v[0] ? atoll(v) : dflt;
}

/* Bytes of the emulated device's memory. */
static int64_t
memory_bytes(void)
{
	return setting("KDGPU_FAKE_MEMORY_MB", 1024) * 1024 * 1024;
}

/* A modifiable copy of the caller's plan, for the CPU engine. */
static KdExec
plan(const KdExec *exec)
{
	KdExec		e;

	kde_exec_init(&e);
	if (exec)
	{
		e.threads = exec->threads;
		e.interrupt = exec->interrupt;
		e.interrupt_arg = exec->interrupt_arg;
	}
	e.device = KD_DEVICE_CPU;
	return e;
}

/* Sleep KDGPU_FAKE_DELAY_MS, polling the interrupt; KD_ERR_CANCELED if asked. */
static KdStatus
delay(const KdExec *exec, KdError *err)
{
	int64_t		ms = setting("KDGPU_FAKE_DELAY_MS", 0);

	for (int64_t t = 0; t < ms; t += 10)
	{
		if (exec && exec->interrupt && exec->interrupt(exec->interrupt_arg))
			return kde_set_error(err, KD_ERR_CANCELED, -1, "canceled");
		usleep(10000);
	}
	return KD_OK;
}

/* The number of emulated devices. */
static int
device_count(void)
{
	int64_t		n = setting("KDGPU_FAKE_DEVICES", 1);

	return n < 1 ? 1 : (n > EMU_MAX_DEVICES ? EMU_MAX_DEVICES : (int) n);
}

/* probe(): the selected emulated device. */
static KdStatus
emu_probe(KdGpuInfo *info, KdError *err)
{
	memset(info, 0, sizeof(*info));
	info->device_count = device_count();
	info->device = current;
	snprintf(info->name, sizeof(info->name), "emulated GPU (CPU engine, tests only)");
	info->cc_major = 9;
	info->total_memory = memory_bytes();
	info->free_memory = memory_bytes() - live_bytes[current];
	info->multiprocessors = 1;
	info->driver_version = 13000;
	info->runtime_version = 13000;
	return KD_OK;
}

/* select_device(): where uploads and builds go. */
static KdStatus
emu_select_device(int device, KdError *err)
{
	if (device < 0 || device >= device_count())
		return kde_set_error(err, KD_ERR_ARG, -1, "no emulated device %d", device);
	current = device;
	return KD_OK;
}

/* upload(): copy the tree, within the selected device's memory. */
static KdStatus
emu_upload(const KdTree *tree, KdGpuTree **out, const KdExec *exec,
		   KdError *err)
{
	int64_t		bytes = kde_tree_bytes(tree->n, tree->dim, tree->nbounds);
	KdGpuTree  *g;
	KdStatus	st;

	if (live_bytes[current] + bytes > memory_bytes())
		return kde_set_error(err, KD_ERR_GPU_NOMEM, -1,
							"out of emulated device memory");
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return kde_set_error(err, KD_ERR_NOMEM, -1, "out of memory");
	st = kde_tree_alloc(&g->tree, tree->n, tree->dim, err);
	if (st != KD_OK)
	{
		free(g);
		return st;
	}
	memcpy(g->tree.coords, tree->coords, sizeof(double) * tree->n * tree->dim);
	memcpy(g->tree.refs, tree->refs, sizeof(uint64_t) * tree->n);
	memcpy(g->tree.split, tree->split, tree->n);
	memcpy(g->tree.bounds, tree->bounds,
		   sizeof(double) * 2 * tree->dim * tree->nbounds);
	g->tree.ref_order = tree->ref_order;
	g->bytes = bytes;
	g->device = current;
	live_bytes[current] += bytes;
	*out = g;
	return KD_OK;
}

/* release(): free a copy. */
static void
emu_release(KdGpuTree *g)
{
	if (g == NULL)
		return;
	live_bytes[g->device] -= g->bytes;
	kde_tree_free(&g->tree);
	free(g);
}

/* build(): the CPU build, into the caller's arrays. */
static KdStatus
emu_build(const double *points, const uint64_t *refs, int64_t n, int dim,
		  KdTree *tree, KdGpuTree **out, const KdExec *exec, KdError *err)
{
	KdExec		e = plan(exec);
	KdTree		built;
	KdStatus	st = kde_build_cpu(points, refs, n, dim, &built, &e, err);

	if (st != KD_OK)
		return st;
	memcpy(tree->coords, built.coords, sizeof(double) * n * dim);
	memcpy(tree->refs, built.refs, sizeof(uint64_t) * n);
	memcpy(tree->split, built.split, n);
	memcpy(tree->bounds, built.bounds, sizeof(double) * 2 * dim * built.nbounds);
	tree->ref_order = built.ref_order;
	kde_tree_free(&built);
	if (out)
		return emu_upload(tree, out, exec, err);
	return KD_OK;
}

/* Milliseconds of CLOCK_MONOTONIC. */
static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* Append a kNN call's line to KDGPU_FAKE_CALL_LOG, when set. */
static void
log_call(int device, int64_t nq, double start, double end)
{
	const char *path = getenv("KDGPU_FAKE_CALL_LOG");
	FILE	   *f;

	if (!path || !path[0] || (f = fopen(path, "a")) == NULL)
		return;
	fprintf(f, "%d %lld %.3f %.3f\n", device, (long long) nq, start, end);
	fclose(f);
}

/* knn(): the CPU search, after the trap and the delay. */
static KdStatus
emu_knn(const KdGpuTree *g, const double *queries, int64_t nq, int k,
		KdNeighbor *out, int32_t *count, const KdExec *exec, KdError *err)
{
	const char *trap = getenv("KDGPU_FAKE_TRAP_FILE");
	KdExec		e = plan(exec);
	KdStatus	st;
	double		start = now_ms();

	if (trap && trap[0] && access(trap, F_OK) == 0)
	{
		unlink(trap);
		return kde_set_error(err, KD_ERR_GPU, -1,
							"emulated kernel trap (KDGPU_FAKE_TRAP_FILE)");
	}
	if ((st = delay(exec, err)) != KD_OK)
		return st;
	st = kde_knn_cpu(&g->tree, queries, nq, k, out, count, &e, err);
	log_call(g->device, nq, start, now_ms());
	return st;
}

/* all_knn(): the CPU search, after the delay. */
static KdStatus
emu_all_knn(const KdGpuTree *g, int k, bool include_self, KdNeighbor *out,
			int32_t *count, const KdExec *exec, KdError *err)
{
	KdExec		e = plan(exec);
	KdStatus	st;

	if ((st = delay(exec, err)) != KD_OK)
		return st;
	return kde_all_knn_cpu(&g->tree, k, include_self, out, count, &e, err);
}

/* radius(): the CPU search. */
static KdStatus
emu_radius(const KdGpuTree *g, const double *centers, int64_t nq,
		   const double *radii, int64_t nradii, KdRangeResult *res,
		   const KdExec *exec, KdError *err)
{
	KdExec		e = plan(exec);

	return kde_radius_cpu(&g->tree, centers, nq, radii, nradii, res, &e, err);
}

/* box(): the CPU search. */
static KdStatus
emu_box(const KdGpuTree *g, const double *lows, const double *highs,
		int64_t nq, KdRangeResult *res, const KdExec *exec, KdError *err)
{
	KdExec		e = plan(exec);

	return kde_box_cpu(&g->tree, lows, highs, nq, res, &e, err);
}

/* dbscan(): the CPU passes. */
static KdStatus
emu_dbscan(const KdGpuTree *g, const KdDbscan *args, int32_t *labels,
		   int64_t *undecided, const KdExec *exec, KdError *err)
{
	KdExec		e = plan(exec);

	return kde_dbscan_cpu(&g->tree, args, labels, undecided, &e, err);
}

/* flat_knn(): the CPU loop. */
static KdStatus
emu_flat_knn(const KdVectors *set, KdMetric metric, const double *queries,
			 int64_t nq, int k, const uint64_t *skip, KdNeighbor *out,
			 int32_t *count, const KdExec *exec, KdError *err)
{
	KdExec		e = plan(exec);

	return kde_flat_knn_cpu(set, metric, queries, nq, k, skip, out, count, &e,
							err);
}

/* vp_build(): the CPU's build. */
static KdStatus
emu_vp_build(const KdVectors *set, KdMetric metric, int leaf_rows,
			 KdVpTree *tree, const KdExec *exec, KdError *err)
{
	KdExec		e = plan(exec);

	return kde_vp_build_cpu(set, metric, leaf_rows, tree, &e, err);
}

/* vp_knn(): the CPU's search of the same tree. */
static KdStatus
emu_vp_knn(const KdVectors *set, KdMetric metric, const KdVpTree *tree,
		   const double *queries, int64_t nq, int k, const uint64_t *skip,
		   KdNeighbor *out, int32_t *count, const KdExec *exec, KdError *err)
{
	KdExec		e = plan(exec);

	return kde_vp_knn(set, metric, tree, queries, nq, k, skip, out, count,
					  NULL, &e, err);
}

/* What vp_upload keeps: copies of the set's vectors and refs, and the tree. */
struct KdVpGpu
{
	KdVectors	set;
	KdMetric	metric;
	KdVpTree	tree;
};

/* vp_upload(): copies in host memory, as the device would hold them. */
static KdStatus
emu_vp_upload(const KdVectors *set, KdMetric metric, const KdVpTree *tree,
			  KdVpGpu **gpu, const KdExec *exec, KdError *err)
{
	KdVpGpu    *g = calloc(1, sizeof(KdVpGpu));
	int64_t		nrows = 0;
	double	   *coords;
	uint64_t   *refs;
	KdVpNode   *nodes;
	int64_t    *order;
	double	   *vps = NULL;

	(void) exec;
	for (int64_t i = 0; i < tree->nnodes; i++)
		if (tree->nodes[i].vp < 0)
			nrows += tree->nodes[i].count;
	coords = malloc(sizeof(double) * set->dim * (set->n + 1));
	refs = malloc(sizeof(uint64_t) * (set->n + 1));
	nodes = malloc(sizeof(KdVpNode) * (tree->nnodes + 1));
	order = malloc(sizeof(int64_t) * (nrows + 1));
	if (tree->vps)
		vps = malloc(sizeof(double) * set->dim * tree->nnodes);
	if (g == NULL || coords == NULL || refs == NULL || nodes == NULL ||
		order == NULL || (tree->vps && vps == NULL))
	{
		free(g);
		free(coords);
		free(refs);
		free(nodes);
		free(order);
		free(vps);
		return kde_set_error(err, KD_ERR_GPU_NOMEM, -1, "out of memory");
	}
	for (int64_t i = 0; i < set->n; i++)
		memcpy(coords + i * set->dim, set->coords + i * set->stride,
			   sizeof(double) * set->dim);
	memcpy(refs, set->refs, sizeof(uint64_t) * set->n);
	memcpy(nodes, tree->nodes, sizeof(KdVpNode) * tree->nnodes);
	memcpy(order, tree->order, sizeof(int64_t) * nrows);
	if (vps)
		memcpy(vps, tree->vps, sizeof(double) * set->dim * tree->nnodes);
	g->set = (KdVectors) {set->n, set->dim, set->dim, coords, refs};
	g->metric = metric;
	g->tree.nnodes = tree->nnodes;
	g->tree.nodes = nodes;
	g->tree.order = order;
	g->tree.vps = vps;
	*gpu = g;
	return KD_OK;
}

/* vp_search(): the CPU's search of the kept copies. */
static KdStatus
emu_vp_search(const KdVpGpu *g, const double *queries, int64_t nq, int k,
			  const uint64_t *skip, KdNeighbor *out, int32_t *count,
			  const KdExec *exec, KdError *err)
{
	KdExec		e = plan(exec);

	return kde_vp_knn(&g->set, g->metric, &g->tree, queries, nq, k, skip, out,
					  count, NULL, &e, err);
}

/* vp_release(): free the copies. */
static void
emu_vp_release(KdVpGpu *g)
{
	if (g == NULL)
		return;
	free((void *) g->set.coords);
	free((void *) g->set.refs);
	free(g->tree.nodes);
	free(g->tree.order);
	free((void *) g->tree.vps);
	free(g);
}

/* flat_radius(): the CPU loop. */
static KdStatus
emu_flat_radius(const KdVectors *set, KdMetric metric, const double *centers,
				int64_t nq, const double *radii, int64_t nradii,
				KdRangeResult *res, const KdExec *exec, KdError *err)
{
	KdExec		e = plan(exec);

	return kde_flat_radius_cpu(set, metric, centers, nq, radii, nradii, res,
							   &e, err);
}

static const KdCudaApi emulated_api = {
	KDGPU_CUDA_ABI_VERSION,
	emu_probe,
	emu_select_device,
	emu_upload,
	emu_release,
	emu_build,
	emu_knn,
	emu_all_knn,
	emu_radius,
	emu_box,
	emu_dbscan,
	emu_flat_knn,
	emu_flat_radius,
	emu_vp_build,
	emu_vp_knn,
	emu_vp_upload,
	emu_vp_search,
	emu_vp_release
};

__attribute__((visibility("default"))) const KdCudaApi *
kdgpu_cuda_api(void)
{
	return &emulated_api;
}
