/*
 * kd_gpu_abi.h
 *	  The plain C ABI of kdgpu_cuda.so, the GPU side of the kd-tree engine.
 *
 * The engine owns this interface: cuda/ implements it (and the GPU
 * service's client table stands in for it in backends), and only kd_gpu.c
 * reads the table, behind the wrappers that kdtree.h declares (kde_gpu_build,
 * kde_gpu_knn, ...), which the engine's searches and the GPU service call.
 *
 * kdgpu_cuda.so is linked with the static CUDA runtime and opened by the
 * engine (src/engine/kd_gpu.c) with dlopen(RTLD_NOW | RTLD_LOCAL).  Its one
 * exported symbol, kdgpu_cuda_api(), returns a table of entry points; the
 * engine checks abi_version before using it.  Every entry point returns a
 * KdStatus and fills a KdError; none of them exits, and every device
 * allocation made by a call is freed before it returns (the device copy of a
 * tree lives until release()).  Types and result orders are those of
 * src/engine/kdtree.h, and results are bit-identical to the CPU path's.
 */
#ifndef KD_GPU_ABI_H
#define KD_GPU_ABI_H

#include "kdtree.h"

#ifdef __cplusplus
extern "C"
{
#endif

#define KDGPU_CUDA_ABI_VERSION 10

typedef struct KdCudaApi
{
	int			abi_version;

	/*
	 * Describe the selected device (device 0 unless select_device chose
	 * another), with the number of devices; KD_ERR_GPU_UNAVAILABLE says why
	 * there is none.
	 */
	KdStatus	(*probe) (KdGpuInfo *info, KdError *err);

	/*
	 * Select the device that the calling thread's uploads and builds place
	 * trees on and its probe describes; a call on a tree runs on the tree's
	 * device.  Per thread: the GPU service places trees on every device of
	 * the host this way, and a split copy (kd_split.c) drives each device
	 * from a thread of its own.  Calls may come from several threads at
	 * once as long as no two of them use the same device at the same time.
	 */
	KdStatus	(*select_device) (int device, KdError *err);

	/* copy a host tree to the device; *out is freed with release() */
	KdStatus	(*upload) (const KdTree *tree, KdGpuTree **out,
						   const KdExec *exec, KdError *err);
	void		(*release) (KdGpuTree *gtree);

	/*
	 * Build a tree over points (n * dim, input order) on the device and
	 * copy it into tree, whose arrays are allocated by the caller
	 * (kde_tree_alloc).  If out is not NULL the device copy is kept there.
	 */
	KdStatus	(*build) (const double *points, const uint64_t *refs,
						  int64_t n, int dim, KdTree *tree, KdGpuTree **out,
						  const KdExec *exec, KdError *err);

	/*
	 * the same contracts as kde_knn, kde_all_knn, kde_radius, kde_box and
	 * kde_dbscan
	 */
	KdStatus	(*knn) (const KdGpuTree *gtree, const double *queries,
						int64_t nq, int k, KdNeighbor *out, int32_t *count,
						const KdExec *exec, KdError *err);
	KdStatus	(*all_knn) (const KdGpuTree *gtree, int k, bool include_self,
							KdNeighbor *out, int32_t *count,
							const KdExec *exec, KdError *err);
	KdStatus	(*radius) (const KdGpuTree *gtree, const double *centers,
						   int64_t nq, const double *radii, int64_t nradii,
						   KdRangeResult *res, const KdExec *exec,
						   KdError *err);
	KdStatus	(*box) (const KdGpuTree *gtree, const double *lows,
						const double *highs, int64_t nq, KdRangeResult *res,
						const KdExec *exec, KdError *err);
	KdStatus	(*dbscan) (const KdGpuTree *gtree, const KdDbscan *args,
						   int32_t *labels, int64_t *undecided,
						   const KdExec *exec, KdError *err);

	/*
	 * kde_flat_knn's contract, on host arrays copied for the call (the GPU
	 * service's table ships them to the service); a NULL entry means the
	 * table does not offer it
	 */
	KdStatus	(*flat_knn) (const KdVectors *set, KdMetric metric,
							 const double *queries, int64_t nq, int k,
							 const uint64_t *skip, KdNeighbor *out,
							 int32_t *count, const KdExec *exec,
							 KdError *err);

	/*
	 * kde_flat_radius's contract, but each query's hits in any order (the
	 * engine sorts them); a NULL entry as for flat_knn
	 */
	KdStatus	(*flat_radius) (const KdVectors *set, KdMetric metric,
								const double *centers, int64_t nq,
								const double *radii, int64_t nradii,
								KdRangeResult *res, const KdExec *exec,
								KdError *err);

	/*
	 * kde_vp_build_cpu's tree of set under metric, built on the device
	 * into host arrays (kde_vp_free frees them); a NULL entry as for
	 * flat_knn
	 */
	KdStatus	(*vp_build) (const KdVectors *set, KdMetric metric,
							 int leaf_rows, KdVpTree *tree,
							 const KdExec *exec, KdError *err);

	/*
	 * kde_vp_knn's answers through a tree given on the host (its nodes,
	 * order and vantage points copied to the device for the call); a NULL
	 * entry as for flat_knn
	 */
	KdStatus	(*vp_knn) (const KdVectors *set, KdMetric metric,
						   const KdVpTree *tree, const double *queries,
						   int64_t nq, int k, const uint64_t *skip,
						   KdNeighbor *out, int32_t *count,
						   const KdExec *exec, KdError *err);

	/*
	 * set's vectors and refs and tree kept on the selected device in *gpu
	 * for the searches that follow (vp_search: vp_knn's answers, the
	 * queries alone copied) until vp_release; NULL entries as for
	 * flat_knn, all three or none
	 */
	KdStatus	(*vp_upload) (const KdVectors *set, KdMetric metric,
							  const KdVpTree *tree, KdVpGpu **gpu,
							  const KdExec *exec, KdError *err);
	KdStatus	(*vp_search) (const KdVpGpu *gpu, const double *queries,
							  int64_t nq, int k, const uint64_t *skip,
							  KdNeighbor *out, int32_t *count,
							  const KdExec *exec, KdError *err);
	void		(*vp_release) (KdVpGpu *gpu);
} KdCudaApi;

/* the one exported symbol */
extern const KdCudaApi *kdgpu_cuda_api(void);

#ifdef __cplusplus
}
#endif

#endif							/* KD_GPU_ABI_H */
