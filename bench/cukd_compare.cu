/*
 * cukd_compare.cu
 *	  kdgpu's GPU engine beside cudaKDTree, in one run, on the same points
 *	  and queries (make cukd-bench; bench/README.md).
 *
 * cudaKDTree (Ingo Wald's header-only CUDA kd-trees) is built from the
 * copy in ../shared/peers/cudaKDTree; nothing of it is part of kdgpu.  Each
 * named set (bench_sets.h) is generated once and rounded to float, so that
 * cudaKDTree (float2/float3) and kdgpu (float8) index identical values.
 * For every set this times, medians of --reps runs after one warm-up:
 *
 *   cudaKDTree  buildTree_thrust (its fastest builder); kNN with k = 10
 *               (FixedCandidateList<10>) for each traversal (stackBased,
 *               cct) and each query order: for All-kNN sets the points in
 *               input order and in the built tree's order, for sets with
 *               their own queries the input order and Morton order (the
 *               sort's time is reported beside).  Kernel time (CUDA
 *               events) and end to end: queries copied in, results (k
 *               ids and distances per query) copied out to pageable memory;
 *               the Morton sort's time is not in it.
 *   kdgpu       kde_build on the GPU, end to end (tree back in host
 *               memory); then, with the tree resident, kde_all_knn
 *               (include_self) or kde_knn of the set's queries, end to end
 *               into pageable memory with one copy thread per core, and
 *               the query kernels' time (KdExec.times).
 *
 * Checks, on --check sampled queries against a float8 brute force on the
 * GPU (distances summed in dimension order without FMA, ties by row
 * reference): kdgpu's ten distances and references must be equal; the
 * peer's k-th distance, computed in float, must be within a relative 1e-5.
 * A failed check makes the exit status 1.
 *
 * Without a CUDA device it prints "skipped: ..." and exits 0.  Each result
 * is a table line and a line RESULT {...} that bench/run reads.
 */
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cukd/builder.h"
#include "cukd/knn.h"

#include <thrust/device_ptr.h>
#include <thrust/gather.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include "bench_sets.h"
#include "kdtree.h"

#define K 10

/* a CUDA call that must succeed */
#define CUDA_OK(call) cuda_ok((call), #call, __LINE__)

static void
cuda_ok(cudaError_t e, const char *what, int line)
{
	if (e != cudaSuccess)
	{
		fprintf(stderr, "cukd_compare.cu:%d: %s: %s\n", line, what, cudaGetErrorString(e));
		exit(1);
	}
}

static double
now_ms()
{
	return std::chrono::duration<double, std::milli>(
		std::chrono::steady_clock::now().time_since_epoch()).count();
}

static double
median_of(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

struct Options
{
	std::vector<std::string> sets;
	int64_t		n = 10000000;
	int			reps = 3;
	int			check = 2000;
};

/* One set, generated once: float values, also as float8 for kdgpu. */
struct SetData
{
	const BenchSet *set;
	int64_t		n;
	std::vector<float> pf, qf;	/* n * dim each */
	std::vector<double> pd, qd;
	std::vector<int64_t> sample;	/* query indexes checked */
	std::vector<double> bf_d2;	/* sample * K, brute force */
	std::vector<uint64_t> bf_ref;
};

static int	failures = 0;

/* Print one timing as a table line and a RESULT line. */
static void
report(const SetData &s, const char *system, const char *op, const std::string &config,
	   int64_t nq, const std::vector<double> &runs, double kernel_ms = -1)
{
	double		ms = median_of(runs);
	std::string list;

	for (double r : runs)
		list += (list.empty() ? "" : ",") + std::to_string(r);
	printf("%-4s %-18s %-6s %-26s %10.1f ms%s  %9.1fM q/s\n", s.set->name, system, op,
		   config.c_str(), ms, kernel_ms >= 0 ? "" : "          ",
		   nq / ms / 1e3);
	if (kernel_ms >= 0)
		printf("%-4s %-18s %-6s %-26s %10.1f ms kernel  %9.1fM q/s\n", s.set->name, system, op,
			   config.c_str(), kernel_ms, nq / kernel_ms / 1e3);
	printf("RESULT {\"set\":\"%s\",\"dim\":%d,\"n\":%lld,\"queries\":%lld,\"k\":%d,"
		   "\"system\":\"%s\",\"op\":\"%s\",\"config\":\"%s\",\"ms\":%.3f,\"runs_ms\":[%s]",
		   s.set->name, s.set->dim, (long long) s.n, (long long) nq, K, system, op,
		   config.c_str(), ms, list.c_str());
	if (kernel_ms >= 0)
		printf(",\"kernel_ms\":%.3f", kernel_ms);
	printf("}\n");
	fflush(stdout);
}

/* ---------------------------------------------------------------- brute force */

/* (d2, ref) order of results, as the engine's */
__device__ __forceinline__ bool
pair_less(double da, uint64_t ra, double db, uint64_t rb)
{
	return da < db || (da == db && ra < rb);
}

/*
 * One block per sampled query: each thread keeps the K best of a strided
 * share of the points in a sorted list, the lists meet in shared memory and
 * thread 0 merges them.  Distances as the engine rounds them: a sum in
 * dimension order of products, no FMA.
 */
template <int D>
__global__ void
brute_knn(const double *pts, int64_t n, const double *qs, const int64_t *sample,
		  double *out_d2, uint64_t *out_ref)
{
	__shared__ double sd2[256 * K];
	__shared__ uint64_t sref[256 * K];
	const double *q = qs + sample[blockIdx.x] * D;
	double		bd[K];
	uint64_t	br[K];

	for (int i = 0; i < K; i++)
	{
		bd[i] = INFINITY;
		br[i] = UINT64_MAX;
	}
	for (int64_t p = threadIdx.x; p < n; p += blockDim.x)
	{
		double		d2 = 0.0;

		for (int j = 0; j < D; j++)
		{
			double		t = __dadd_rn(q[j], -pts[p * D + j]);

			d2 = __dadd_rn(d2, __dmul_rn(t, t));
		}
		if (pair_less(d2, (uint64_t) p, bd[K - 1], br[K - 1]))
		{
			int			i = K - 1;

			for (; i > 0 && pair_less(d2, (uint64_t) p, bd[i - 1], br[i - 1]); i--)
			{
				bd[i] = bd[i - 1];
				br[i] = br[i - 1];
			}
			bd[i] = d2;
			br[i] = (uint64_t) p;
		}
	}
	for (int i = 0; i < K; i++)
	{
		sd2[threadIdx.x * K + i] = bd[i];
		sref[threadIdx.x * K + i] = br[i];
	}
	__syncthreads();
	if (threadIdx.x != 0)
		return;
	for (int t = 1; t < (int) blockDim.x; t++)
		for (int e = 0; e < K; e++)
		{
			double		d2 = sd2[t * K + e];
			uint64_t	ref = sref[t * K + e];
			int			i = K - 1;

			if (!pair_less(d2, ref, bd[K - 1], br[K - 1]))
				break;			/* the rest of this sorted list is worse */
			for (; i > 0 && pair_less(d2, ref, bd[i - 1], br[i - 1]); i--)
			{
				bd[i] = bd[i - 1];
				br[i] = br[i - 1];
			}
			bd[i] = d2;
			br[i] = ref;
		}
	for (int i = 0; i < K; i++)
	{
		out_d2[blockIdx.x * K + i] = bd[i];
		out_ref[blockIdx.x * K + i] = br[i];
	}
}

/* The K nearest points of each sampled query, by brute force on the GPU. */
static void
brute_force(SetData &s)
{
	int			dim = s.set->dim;
	int64_t		m = (int64_t) s.sample.size();
	double	   *d_pts,
			   *d_qs,
			   *d_d2;
	int64_t    *d_sample;
	uint64_t   *d_ref;
	const std::vector<double> &qd = s.set->own_queries ? s.qd : s.pd;

	CUDA_OK(cudaMalloc(&d_pts, sizeof(double) * s.pd.size()));
	CUDA_OK(cudaMalloc(&d_qs, sizeof(double) * qd.size()));
	CUDA_OK(cudaMalloc(&d_sample, sizeof(int64_t) * m));
	CUDA_OK(cudaMalloc(&d_d2, sizeof(double) * m * K));
	CUDA_OK(cudaMalloc(&d_ref, sizeof(uint64_t) * m * K));
	CUDA_OK(cudaMemcpy(d_pts, s.pd.data(), sizeof(double) * s.pd.size(), cudaMemcpyHostToDevice));
	CUDA_OK(cudaMemcpy(d_qs, qd.data(), sizeof(double) * qd.size(), cudaMemcpyHostToDevice));
	CUDA_OK(cudaMemcpy(d_sample, s.sample.data(), sizeof(int64_t) * m, cudaMemcpyHostToDevice));
	if (dim == 2)
		brute_knn<2><<<(unsigned) m, 256>>>(d_pts, s.n, d_qs, d_sample, d_d2, d_ref);
	else
		brute_knn<3><<<(unsigned) m, 256>>>(d_pts, s.n, d_qs, d_sample, d_d2, d_ref);
	CUDA_OK(cudaGetLastError());
	s.bf_d2.resize(m * K);
	s.bf_ref.resize(m * K);
	CUDA_OK(cudaMemcpy(s.bf_d2.data(), d_d2, sizeof(double) * m * K, cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(s.bf_ref.data(), d_ref, sizeof(uint64_t) * m * K, cudaMemcpyDeviceToHost));
	cudaFree(d_pts);
	cudaFree(d_qs);
	cudaFree(d_sample);
	cudaFree(d_d2);
	cudaFree(d_ref);
}

/* ---------------------------------------------------------------- cudaKDTree */

template <int D> struct Vec;
template <> struct Vec<2>
{
	using T = float2;
};
template <> struct Vec<3>
{
	using T = float3;
};

enum Traversal
{
	STACK_BASED,
	CCT
};

/*
 * k = K nearest of each query with one of cudaKDTree's traversals; entry e
 * of query i goes to out[e * nq + i]
 */
template <int D, Traversal TR>
__global__ void
peer_knn(const typename Vec<D>::T *tree, int n, const typename Vec<D>::T *qs, int nq,
		 const cukd::box_t<typename Vec<D>::T> *bounds, uint64_t *out)
{
	using P = typename Vec<D>::T;
	int			i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= nq)
		return;
	cukd::FixedCandidateList<K> best(INFINITY);

	if (TR == CCT)
		cukd::cct::knn<cukd::FixedCandidateList<K>, P>(best, qs[i], *bounds, tree, n);
	else
		cukd::stackBased::knn<cukd::FixedCandidateList<K>, P>(best, qs[i], tree, n);
	for (int e = 0; e < K; e++)
		out[(int64_t) e * nq + i] = best.entry[e];	/* coalesced */
}

/* 10-bit-per-axis Morton code of a point inside the box */
template <int D>
__global__ void
morton_keys(const typename Vec<D>::T *qs, int nq, const cukd::box_t<typename Vec<D>::T> *box,
			uint32_t *keys)
{
	int			i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= nq)
		return;
	const float *q = (const float *) &qs[i];
	const float *lo = (const float *) &box->lower;
	const float *hi = (const float *) &box->upper;
	uint32_t	key = 0;
	uint32_t	cell[3];

	for (int j = 0; j < D; j++)
	{
		float		w = hi[j] > lo[j] ? hi[j] - lo[j] : 1.0f;
		float		t = fminf(fmaxf((q[j] - lo[j]) / w, 0.0f), 0.999999f);

		cell[j] = (uint32_t) (t * 1024.0f);
	}
	for (int b = 9; b >= 0; b--)
		for (int j = 0; j < D; j++)
			key = (key << 1) | ((cell[j] >> b) & 1u);
	keys[i] = key;
}

/* the float k-th squared distance of a cudaKDTree result entry */
static float
entry_dist2(uint64_t e)
{
	uint32_t	bits = (uint32_t) (e >> 32);
	float		f;

	memcpy(&f, &bits, sizeof f);
	return f;
}

template <int D>
static void
run_peer(const SetData &s, const Options &o)
{
	using P = typename Vec<D>::T;
	int			n = (int) s.n;
	int			nq = (int) s.n;
	P		   *d_input,
			   *d_tree,
			   *d_qs,
			   *d_sorted;
	cukd::box_t<P> *d_bounds;
	uint64_t   *d_out;
	uint32_t   *d_keys;
	int		   *d_perm;
	std::vector<uint64_t> host_out((size_t) nq * K);
	std::vector<double> runs;
	cudaEvent_t e0,
				e1;

	CUDA_OK(cudaMalloc(&d_input, sizeof(P) * n));
	CUDA_OK(cudaMalloc(&d_tree, sizeof(P) * n));
	CUDA_OK(cudaMalloc(&d_qs, sizeof(P) * nq));
	CUDA_OK(cudaMalloc(&d_sorted, sizeof(P) * nq));
	CUDA_OK(cudaMalloc(&d_bounds, sizeof(*d_bounds)));
	CUDA_OK(cudaMalloc(&d_out, sizeof(uint64_t) * nq * K));
	CUDA_OK(cudaMalloc(&d_keys, sizeof(uint32_t) * nq));
	CUDA_OK(cudaMalloc(&d_perm, sizeof(int) * nq));
	CUDA_OK(cudaEventCreate(&e0));
	CUDA_OK(cudaEventCreate(&e1));
	CUDA_OK(cudaMemcpy(d_input, s.pf.data(), sizeof(P) * n, cudaMemcpyHostToDevice));

	/* build: copy the input in place, then build; the copy is not timed */
	for (int r = -1; r < o.reps; r++)
	{
		CUDA_OK(cudaMemcpy(d_tree, d_input, sizeof(P) * n, cudaMemcpyDeviceToDevice));
		CUDA_OK(cudaDeviceSynchronize());
		double		t0 = now_ms();

		cukd::buildTree_thrust<P>(d_tree, n, d_bounds);
		CUDA_OK(cudaDeviceSynchronize());
		if (r >= 0)
			runs.push_back(now_ms() - t0);
	}
	report(s, "cudaKDTree", "build", "builder_thrust", n, runs);

	/* the query orders of this set */
	std::vector<std::string> orders = {"input order"};

	orders.push_back(s.set->own_queries ? "Morton order" : "tree order");
	CUDA_OK(cudaMemcpy(d_qs, s.set->own_queries ? s.qf.data() : s.pf.data(), sizeof(P) * nq,
					   cudaMemcpyHostToDevice));

	/* Morton order: sort a permutation of the queries by their codes */
	if (s.set->own_queries)
	{
		thrust::device_ptr<uint32_t> keys(d_keys);
		thrust::device_ptr<int> perm(d_perm);

		runs.clear();
		for (int r = -1; r < o.reps; r++)
		{
			CUDA_OK(cudaDeviceSynchronize());
			double		t0 = now_ms();

			morton_keys<D><<<(nq + 255) / 256, 256>>>(d_qs, nq, d_bounds, d_keys);
			thrust::sequence(perm, perm + nq);
			thrust::sort_by_key(keys, keys + nq, perm);
			thrust::gather(perm, perm + nq, thrust::device_ptr<P>(d_qs),
						   thrust::device_ptr<P>(d_sorted));
			CUDA_OK(cudaDeviceSynchronize());
			if (r >= 0)
				runs.push_back(now_ms() - t0);
		}
		report(s, "cudaKDTree", "sort", "Morton order of the queries", nq, runs);
	}

	for (int tr = 0; tr < 2; tr++)
		for (const std::string &order : orders)
		{
			const P    *q = order == "input order" ? d_qs
				: (order == "tree order" ? d_tree : d_sorted);
			std::string config = std::string(tr == CCT ? "cct" : "stackBased") + ", " + order;
			std::vector<double> kernel;

			runs.clear();
			for (int r = -1; r < o.reps; r++)
			{
				const P    *host_q = s.set->own_queries ? (const P *) s.qf.data()
					: (const P *) s.pf.data();
				double		t0 = now_ms();
				float		kms;

				/*
				 * end to end: the queries in (the same bytes whatever the
				 * order: a sorted copy would cost the same), the kernel,
				 * the results out
				 */
				CUDA_OK(cudaMemcpy(d_qs, host_q, sizeof(P) * nq, cudaMemcpyHostToDevice));
				CUDA_OK(cudaEventRecord(e0));
				if (tr == CCT)
					peer_knn<D, CCT><<<(nq + 127) / 128, 128>>>(d_tree, n, q, nq, d_bounds, d_out);
				else
					peer_knn<D, STACK_BASED><<<(nq + 127) / 128, 128>>>(d_tree, n, q, nq, d_bounds, d_out);
				CUDA_OK(cudaEventRecord(e1));
				CUDA_OK(cudaEventSynchronize(e1));
				CUDA_OK(cudaGetLastError());
				CUDA_OK(cudaMemcpy(host_out.data(), d_out, sizeof(uint64_t) * nq * K,
								   cudaMemcpyDeviceToHost));
				CUDA_OK(cudaEventElapsedTime(&kms, e0, e1));
				if (r >= 0)
				{
					runs.push_back(now_ms() - t0);
					kernel.push_back(kms);
				}
			}
			report(s, "cudaKDTree", "knn", config, nq, runs, median_of(kernel));

			/* check the input-order run (the same traversal answers the others) */
			if (order == "input order")
			{
				double		worst = 0.0;
				int			bad = 0;

				for (size_t i = 0; i < s.sample.size(); i++)
				{
					double		peer = entry_dist2(host_out[(int64_t) (K - 1) * nq + s.sample[i]]);
					double		ref = s.bf_d2[i * K + K - 1];
					double		rel = peer == ref ? 0.0 : fabs(peer - ref) / std::max(ref, 1e-300);

					worst = std::max(worst, rel);
					bad += rel > 1e-5;
				}
				printf("CHECK %s cudaKDTree %s: k-th distance of %zu sampled queries against float8 "
					   "brute force: %d beyond a relative 1e-5 (largest %.2g)\n",
					   s.set->name, config.c_str(), s.sample.size(), bad, worst);
				failures += bad > 0;
			}
		}
	cudaFree(d_input);
	cudaFree(d_tree);
	cudaFree(d_qs);
	cudaFree(d_sorted);
	cudaFree(d_bounds);
	cudaFree(d_out);
	cudaFree(d_keys);
	cudaFree(d_perm);
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
}

/* ---------------------------------------------------------------- kdgpu */

/* kdgpu's answers for the sampled queries against the brute force */
static void
check_kdgpu(const SetData &s, const KdNeighbor *out, const std::vector<int64_t> &slot,
			const char *what)
{
	int			bad = 0;

	for (size_t i = 0; i < s.sample.size(); i++)
	{
		const KdNeighbor *nb = out + slot[i] * K;
		bool		same = true;

		for (int e = 0; e < K; e++)
			same = same && nb[e].d2 == s.bf_d2[i * K + e] && nb[e].ref == s.bf_ref[i * K + e];
		if (!same && bad++ < 3)
			printf("MISMATCH %s kdgpu %s, query %lld: 10th neighbour %.17g ref %llu, brute force "
				   "%.17g ref %llu\n", s.set->name, what, (long long) s.sample[i], nb[K - 1].d2,
				   (unsigned long long) nb[K - 1].ref, s.bf_d2[i * K + K - 1],
				   (unsigned long long) s.bf_ref[i * K + K - 1]);
	}
	printf("CHECK %s kdgpu %s: %zu sampled queries against float8 brute force, distances and "
		   "references: %d differ\n", s.set->name, what, s.sample.size(), bad);
	failures += bad > 0;
}

static void
run_kdgpu(const SetData &s, const Options &o)
{
	int64_t		n = s.n;
	int			dim = s.set->dim;
	std::vector<uint64_t> refs(n);
	std::vector<KdNeighbor> out((size_t) n * K);
	std::vector<int32_t> count(n);
	std::vector<double> runs;
	std::vector<double> kernel_runs;
	std::vector<int64_t> slot(s.sample.size());
	KdGpuTimes	times;
	KdExec		exec;
	KdError		err;
	KdTree		tree;

	for (int64_t i = 0; i < n; i++)
		refs[i] = (uint64_t) i;
	kde_exec_init(&exec);
	exec.device = KD_DEVICE_GPU;
	exec.gpu_min_work = 0;
	exec.threads = (int) std::thread::hardware_concurrency();
	exec.times = &times;
	for (int r = -1; r < o.reps; r++)
	{
		double		t0 = now_ms();

		if (kde_build(s.pd.data(), refs.data(), n, dim, &tree, &exec, &err) != KD_OK)
		{
			printf("FAILED %s kdgpu build: %s\n", s.set->name, err.message);
			failures++;
			return;
		}
		if (r >= 0)
			runs.push_back(now_ms() - t0);
		if (r + 1 < o.reps)
			kde_tree_free(&tree);
	}
	report(s, "kdgpu-engine-gpu", "build", "kde_build, end to end", n, runs);
	if (kde_gpu_upload(&tree, &exec, &err) != KD_OK)
	{
		printf("FAILED %s kdgpu upload: %s\n", s.set->name, err.message);
		failures++;
		kde_tree_free(&tree);
		return;
	}

	runs.clear();
	for (int r = -1; r < o.reps; r++)
	{
		double		t0;
		KdStatus	st;

		times.kernel_ms = 0;
		t0 = now_ms();
		st = s.set->own_queries
			? kde_knn(&tree, s.qd.data(), n, K, out.data(), count.data(), &exec, &err)
			: kde_all_knn(&tree, K, true, out.data(), count.data(), &exec, &err);

		if (st != KD_OK)
		{
			printf("FAILED %s kdgpu kNN: %s\n", s.set->name, err.message);
			failures++;
			kde_tree_free(&tree);
			return;
		}
		if (r >= 0)
		{
			runs.push_back(now_ms() - t0);
			kernel_runs.push_back(times.kernel_ms);
		}
	}
	if (s.set->own_queries)
	{
		report(s, "kdgpu-engine-gpu", "knn", "kde_knn, end to end", n, runs,
			   median_of(kernel_runs));
		for (size_t i = 0; i < s.sample.size(); i++)
			slot[i] = s.sample[i];
		check_kdgpu(s, out.data(), slot, "kde_knn");
	}
	else
	{
		/* All-kNN answers are in node order: find each sampled point's node */
		std::vector<int64_t> node_of(n);

		report(s, "kdgpu-engine-gpu", "knn", "kde_all_knn, end to end", n, runs,
			   median_of(kernel_runs));
		for (int64_t i = 0; i < n; i++)
			node_of[tree.refs[i]] = i;
		for (size_t i = 0; i < s.sample.size(); i++)
			slot[i] = node_of[s.sample[i]];
		check_kdgpu(s, out.data(), slot, "kde_all_knn");
	}
	kde_tree_free(&tree);
}

/* ---------------------------------------------------------------- main */

/* Generate the set, rounded to float, and its brute-force sample. */
static SetData
make_set(const BenchSet *set, const Options &o)
{
	SetData		s;
	size_t		m = (size_t) (o.n * set->dim);

	s.set = set;
	s.n = o.n;
	s.pd.resize(m);
	s.qd.resize(set->own_queries ? m : 0);
	bench_set_points(set, s.n, s.pd.data());
	if (set->own_queries)
		bench_set_queries(set, s.pd.data(), s.n, s.qd.data());
	s.pf.assign(s.pd.begin(), s.pd.end());
	s.pd.assign(s.pf.begin(), s.pf.end());
	s.qf.assign(s.qd.begin(), s.qd.end());
	s.qd.assign(s.qf.begin(), s.qf.end());
	for (int i = 0; i < o.check; i++)
		s.sample.push_back((int64_t) (((uint64_t) i * 0x9e3779b97f4a7c15ULL) % (uint64_t) s.n));
	brute_force(s);
	return s;
}

static void
usage()
{
	fprintf(stderr, "usage: cukd-compare-bin [--sets %s] [--n 10M] [--reps 3] [--check 2000] "
			"[--only kdgpu|cudaKDTree]\n", bench_set_names());
	exit(2);
}

int
main(int argc, char **argv)
{
	Options		o;
	int			ndev = 0;
	cudaError_t e = cudaGetDeviceCount(&ndev);
	cudaDeviceProp prop;
	KdGpuInfo	info;
	char		why[256];
	std::string list = "u2,u3,c3,d2,c3u,c2u";
	std::string only;

	for (int i = 1; i < argc; i++)
	{
		std::string a = argv[i];

		if (i + 1 >= argc)
			usage();
		if (a == "--sets")
			list = argv[++i];
		else if (a == "--n")
		{
			char	   *end;
			double		v = strtod(argv[++i], &end);

			o.n = (int64_t) (v * (*end == 'M' ? 1e6 : *end == 'k' ? 1e3 : 1));
		}
		else if (a == "--reps")
			o.reps = std::max(1, atoi(argv[++i]));
		else if (a == "--check")
			o.check = std::max(1, atoi(argv[++i]));
		else if (a == "--only")
			only = argv[++i];
		else
			usage();
	}
	for (size_t p = 0; p <= list.size();)
	{
		size_t		c = list.find(',', p);

		o.sets.push_back(list.substr(p, c == std::string::npos ? std::string::npos : c - p));
		p = c == std::string::npos ? list.size() + 1 : c + 1;
	}
	for (const std::string &name : o.sets)
		if (!bench_set_find(name.c_str()))
			usage();
	if (o.n < 2 || o.n > INT32_MAX ||
		(!only.empty() && only != "kdgpu" && only != "cudaKDTree"))
		usage();

	if (e != cudaSuccess || ndev == 0)
	{
		printf("skipped: no CUDA device (%s); cudaKDTree and kdgpu's GPU engine were not "
			   "timed\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
		return 0;
	}
	if (!kde_gpu_available(&info, why, sizeof why))
	{
		printf("FAILED: a CUDA device is here but kdgpu's GPU object is not usable: %s\n", why);
		return 1;
	}
	CUDA_OK(cudaGetDeviceProperties(&prop, 0));
	printf("# %s, %d SMs, %zu MiB; kdgpu GPU object on %s; k = %d, median of %d runs after "
		   "a warm-up; coordinates rounded to float for both\n", prop.name,
		   prop.multiProcessorCount, (size_t) (prop.totalGlobalMem >> 20), info.name, K, o.reps);
	for (const std::string &name : o.sets)
	{
		const BenchSet *set = bench_set_find(name.c_str());
		SetData		s = make_set(set, o);

		printf("\n# %s: %s, n = %lld\n", set->name, set->desc, (long long) s.n);
		if (only != "kdgpu")
		{
			if (set->dim == 2)
				run_peer<2>(s, o);
			else
				run_peer<3>(s, o);
		}
		if (only != "cudaKDTree")
			run_kdgpu(s, o);
	}
	printf("\n%s\n", failures ? "FAILED: some checks failed" : "every check passed");
	return failures ? 1 : 0;
}
