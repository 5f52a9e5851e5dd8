/*
 * flat_compare.cu
 *	  kdgpu's exact flat kNN of vectors (kde_flat_knn, float8) beside a
 *	  float32 cuBLAS brute force, in one run, on the same vectors (make
 *	  flat-bench; bench/README.md).
 *
 * For each dimension given, n vectors and nq queries are generated from a
 * fixed seed (uniform in [-0.5, 0.5), or "clustered": a few random
 * directions with a little noise, so low intrinsic dimension), rounded to
 * float so that both sides read identical values.  Timed, medians of
 * --reps runs after one warm-up, end to end from host memory to host
 * memory:
 *
 *   kdgpu   kde_flat_knn on the GPU (L2, or cosine with a sixth argument
 *           "cosine"; k as given), vectors and queries copied in for the
 *           call, results out.
 *   cuBLAS  the float32 brute force: |p|^2 + |q|^2 - 2 p.q, the dot
 *           products by cublasSgemm over chunks of queries against all
 *           vectors, each query's k least picked by a block-wide pass;
 *           vectors copied in once per call, results out.  Under cosine
 *           it ranks the vectors normalized (in float, beforehand), which
 *           orders them as cosine distance does.
 *
 *   FAISS   built with KD_WITH_FAISS (make flat-compare-faiss): under L2
 *           with a seventh argument "faiss", Debian's FAISS, its exact
 *           IndexFlatL2 (float32) on the host's CPUs, all its OpenMP
 *           threads: the vectors added and the queries searched, timed
 *           once (it is the slowest by far), on the same float vectors.
 *           FLAT_FAISS_QUERIES=m searches only the first m queries and
 *           scales the time to all of them: FAISS takes queries in
 *           independent blocks, so its time grows with their number.
 *           OMP_WAIT_POLICY=PASSIVE keeps its OpenMP threads from
 *           spinning while OpenBLAS's own threads multiply.
 *
 * It reports the time of each, their ratio, how many queries each
 * float32 answer gets wrong (a different set of k refs than the exact
 * one), which form of kdgpu's search ran (its last_run note) with the
 * queries its filter left to the exact tiles, and how many of the first
 * CPU_CHECKED queries' answers differ from the engine's CPU path's.  The
 * environment's FLAT_DIMS (e.g. "16,64") picks the dimensions, and
 * FLAT_FORMS ("tiles,tree") times kdgpu again in each named form alone:
 * the tiles (or the filter) without a vantage-point tree, and the tree
 * for every query, which shows whether the per-call choice chose well.
 * Without a CUDA device it prints "skipped: ..." and exits 0.  Each
 * result is a table line and a RESULT {...} line.
 */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <unistd.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#ifdef KD_WITH_FAISS
#include <faiss/IndexFlat.h>
#include <omp.h>
#endif

extern "C"
{
#include "bench_time.h"
#include "datagen.h"
#include "kdtree.h"
#include "kd_metric.h"
}

#define PEER_K_MAX 16
#define PEER_THREADS 256

/* queries whose GPU answers are checked against the CPU's */
#define CPU_CHECKED 100

/*
 * How many of the first CPU_CHECKED queries' GPU answers (got) differ from
 * the engine's CPU path's, bit for bit.
 */
static int64_t
cpu_mismatches(const KdVectors *set, bool cosine, const double *queries,
			   int64_t nq, int k, const KdNeighbor *got)
{
	int64_t		m = nq < CPU_CHECKED ? nq : CPU_CHECKED;
	std::vector<KdNeighbor> want((size_t) m * k);
	std::vector<int32_t> cnt(m);
	KdExec		exec;
	KdError		err;
	int64_t		differ = 0;

	kde_exec_init(&exec);
	exec.device = KD_DEVICE_CPU;
	exec.threads = (int) sysconf(_SC_NPROCESSORS_ONLN);
	if (kde_flat_knn_cpu(set, cosine ? KD_METRIC_COSINE : KD_METRIC_L2, queries,
						 m, k, NULL, want.data(), cnt.data(), &exec, &err) != KD_OK)
		return m;
	for (int64_t q = 0; q < m; q++)
		differ += memcmp(got + q * k, want.data() + q * k, sizeof(KdNeighbor) * k) != 0;
	return differ;
}

/* The queries' k least of dist2 = pn + qn - 2 dot, one block a query. */
__global__ void
peer_topk(const float *dots, const float *pn, const float *qn, int64_t n,
		  int k, int64_t q0, KdNeighbor *out)
{
	__shared__ float cd[PEER_THREADS * PEER_K_MAX];
	__shared__ int64_t ci[PEER_THREADS * PEER_K_MAX];
	const float *col = dots + (int64_t) blockIdx.x * n;
	float		qd = qn[blockIdx.x];
	float		bd[PEER_K_MAX];
	int64_t		bi[PEER_K_MAX];
	int			m = 0;

	for (int64_t i = threadIdx.x; i < n; i += PEER_THREADS)
	{
		float		d = pn[i] + qd - 2.0f * col[i];
		int			at;

		if (m == k && d >= bd[k - 1])
			continue;
		at = m < k ? m++ : k - 1;
		while (at > 0 && bd[at - 1] > d)
		{
			bd[at] = bd[at - 1];
			bi[at] = bi[at - 1];
			at--;
		}
		bd[at] = d;
		bi[at] = i;
	}
	for (int j = 0; j < k; j++)
	{
		cd[threadIdx.x * k + j] = j < m ? bd[j] : INFINITY;
		ci[threadIdx.x * k + j] = j < m ? bi[j] : -1;
	}
	__syncthreads();
	if (threadIdx.x == 0)
	{
		KdNeighbor *o = out + (q0 + blockIdx.x) * k;

		for (int j = 0; j < k; j++)
		{
			int			best = 0;

			for (int c = 1; c < PEER_THREADS * k; c++)
				if (cd[c] < cd[best])
					best = c;
			o[j].d2 = cd[best];
			o[j].ref = (uint64_t) ci[best];
			cd[best] = INFINITY;
		}
	}
}

/* Squared norms of n rows of dim floats. */
__global__ void
peer_norms(const float *v, int64_t n, int dim, float *out)
{
	int64_t		i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	float		s = 0.0f;

	if (i >= n)
		return;
	for (int j = 0; j < dim; j++)
		s += v[i * dim + j] * v[i * dim + j];
	out[i] = s;
}

/* The float32 peer, end to end; false on a CUDA or cuBLAS error. */
static bool
peer_knn(cublasHandle_t h, const float *pts, int64_t n, const float *qs,
		 int64_t nq, int dim, int k, KdNeighbor *out)
{
	int64_t		chunk = std::min<int64_t>(nq, (int64_t) (4e9 / (4.0 * n)));
	float	   *dp,
			   *dq,
			   *dpn,
			   *dqn,
			   *dots;
	KdNeighbor *dout;
	const float one = 1.0f,
				zero = 0.0f;
	bool		ok = true;

	chunk = std::max<int64_t>(chunk, 1);
	if (cudaMalloc(&dp, sizeof(float) * n * dim) || cudaMalloc(&dq, sizeof(float) * nq * dim) ||
		cudaMalloc(&dpn, sizeof(float) * n) || cudaMalloc(&dqn, sizeof(float) * nq) ||
		cudaMalloc(&dots, sizeof(float) * n * chunk) ||
		cudaMalloc(&dout, sizeof(KdNeighbor) * nq * k))
		return false;
	cudaMemcpy(dp, pts, sizeof(float) * n * dim, cudaMemcpyHostToDevice);
	cudaMemcpy(dq, qs, sizeof(float) * nq * dim, cudaMemcpyHostToDevice);
	peer_norms <<< (n + 255) / 256, 256 >>> (dp, n, dim, dpn);
	peer_norms <<< (nq + 255) / 256, 256 >>> (dq, nq, dim, dqn);
	for (int64_t q0 = 0; q0 < nq && ok; q0 += chunk)
	{
		int			m = (int) std::min<int64_t>(chunk, nq - q0);

		/* dots (n x m, column-major) = P (n x dim) . Q^T */
		ok = cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, (int) n, m, dim, &one,
						 dp, dim, dq + q0 * dim, dim, &zero, dots,
						 (int) n) == CUBLAS_STATUS_SUCCESS;
		peer_topk <<< m, PEER_THREADS >>> (dots, dpn, dqn + q0, n, k, q0, dout);
	}
	ok = ok && cudaMemcpy(out, dout, sizeof(KdNeighbor) * nq * k,
						  cudaMemcpyDeviceToHost) == cudaSuccess;
	cudaFree(dp);
	cudaFree(dq);
	cudaFree(dpn);
	cudaFree(dqn);
	cudaFree(dots);
	cudaFree(dout);
	return ok;
}

#ifdef KD_WITH_FAISS
/*
 * FAISS's exact float32 IndexFlatL2 on the host's CPUs: n vectors of pts
 * added, nq queries qs searched for k each, into out; the seconds taken.
 */
static double
faiss_knn(const float *pts, int64_t n, const float *qs, int64_t nq, int dim,
		  int k, KdNeighbor *out)
{
	faiss::IndexFlatL2 index(dim);
	std::vector<float> dist((size_t) nq * k);
	std::vector<faiss::Index::idx_t> label((size_t) nq * k);
	double		t0 = bench_now();
	double		t;

	index.add(n, pts);
	index.search(nq, qs, k, dist.data(), label.data());
	t = bench_now() - t0;
	for (size_t i = 0; i < dist.size(); i++)
	{
		out[i].d2 = dist[i];
		out[i].ref = (uint64_t) label[i];
	}
	return t;
}
#endif

/* The queries of nq whose k refs in b are not the set of those in a. */
static int64_t
wrong_answers(const KdNeighbor *a, const KdNeighbor *b, int64_t nq, int k)
{
	int64_t		wrong = 0;

	for (int64_t q = 0; q < nq; q++)
	{
		std::vector<uint64_t> x(k),
					y(k);

		for (int j = 0; j < k; j++)
		{
			x[j] = a[q * k + j].ref;
			y[j] = b[q * k + j].ref;
		}
		std::sort(x.begin(), x.end());
		std::sort(y.begin(), y.end());
		wrong += x != y;
	}
	return wrong;
}

/* n + nq vectors of dim, rounded to float, into d (double) and f (float). */
static void
make_vectors(bool clustered, int64_t n, int dim, std::vector<double> &d,
			 std::vector<float> &f)
{
	Rng			rng = {0x1234567ULL + (uint64_t) dim};
	std::vector<double> dirs(8 * (size_t) dim);

	for (auto &x : dirs)
		x = rng_normal(&rng);
	d.resize((size_t) n * dim);
	f.resize((size_t) n * dim);
	for (int64_t i = 0; i < n; i++)
	{
		int			c = (int) (rng_next(&rng) % 8);
		double		t = rng_normal(&rng);

		for (int j = 0; j < dim; j++)
		{
			double		x = clustered ?
				t * dirs[c * dim + j] + 0.01 * rng_normal(&rng) :
				rng_uniform(&rng) - 0.5;

			f[i * dim + j] = (float) x;
			d[i * dim + j] = (double) f[i * dim + j];
		}
	}
}

/*
 * Time the GPU's vantage-point tree build alone (kde_vp_build: the
 * vectors copied in, the tree built, copied out), as the tree form's
 * kNN builds it (leaves of KD_VP_GPU_LEAF_ROWS).
 */
static bool
time_tree_build(const KdVectors *set, int reps)
{
	std::vector<double> t;
	KdExec		exec;
	KdError		err;

	kde_exec_init(&exec);
	exec.device = KD_DEVICE_GPU;
	for (int r = 0; r <= reps; r++)
	{
		KdVpTree	tree;
		double		t0 = bench_now();

		if (kde_vp_build(set, KD_METRIC_L2, KD_VP_GPU_LEAF_ROWS, &tree, &exec, &err) != KD_OK)
		{
			printf("kdgpu tree build failed: %s\n", err.message);
			return false;
		}
		if (r > 0)
			t.push_back(bench_now() - t0);
		kde_vp_free(&tree);
	}
	printf("          kdgpu tree build on the GPU, to host memory %9.1f ms\n",
		   bench_median(t.data(), (int) t.size()) * 1e3);
	return true;
}

/*
 * With FLAT_FORMS naming "tiles" and/or "tree", time kdgpu's kNN again in
 * each form alone (exec.vector_tree NEVER, ALWAYS), beside the cuBLAS
 * median peer_s, and check that its answers equal want (the AUTO run's).
 */
static bool
time_forms(const KdVectors *set, bool cosine, const double *qs, int64_t nq,
		   int k, int reps, double peer_s, bool clustered,
		   const KdNeighbor *want, const char *gpu)
{
	static const char *const names[] = {"tiles", "tree"};
	const char *forms = getenv("FLAT_FORMS");

	for (int f = 0; f < 2 && forms; f++)
	{
		std::vector<KdNeighbor> a((size_t) nq * k);
		std::vector<int32_t> cnt(nq);
		std::vector<double> t;
		KdExec		exec;
		KdError		err;
		double		m;

		if (strstr(forms, names[f]) == NULL || (cosine && f == 1))
			continue;
		kde_exec_init(&exec);
		exec.device = KD_DEVICE_GPU;
		exec.vector_tree = f == 0 ? KD_TREE_NEVER : KD_TREE_ALWAYS;
		for (int r = 0; r <= reps; r++)
		{
			double		t0 = bench_now();

			if (kde_flat_knn(set, cosine ? KD_METRIC_COSINE : KD_METRIC_L2, qs,
							 nq, k, NULL, a.data(), cnt.data(), &exec, &err) != KD_OK)
			{
				printf("kdgpu (%s) failed: %s\n", names[f], err.message);
				return false;
			}
			if (r > 0)
				t.push_back(bench_now() - t0);
		}
		m = bench_median(t.data(), (int) t.size());
		if (f == 1 && !time_tree_build(set, reps))
			return false;
		printf("          kdgpu %-5s only %9.1f ms  ratio to cuBLAS %.2f  answers %s; %s\n",
			   names[f], m * 1e3, m / peer_s,
			   memcmp(a.data(), want, sizeof(KdNeighbor) * (size_t) nq * k) == 0 ?
			   "equal" : "DIFFER", exec.note[0] ? exec.note : "exact tiles");
		printf("RESULT {\"op\":\"flat_knn_form\",\"form\":\"%s\",\"data\":\"%s\",\"n\":%lld,\"queries\":%lld,\"dim\":%d,\"k\":%d,\"kdgpu_ms\":%.3f,\"cublas_ms\":%.3f,\"gpu\":\"%s\"}\n",
			   names[f], clustered ? "clustered" : "uniform", (long long) set->n,
			   (long long) nq, set->dim, k, m * 1e3, peer_s * 1e3, gpu);
		fflush(stdout);
	}
	return true;
}

int
main(int argc, char **argv)
{
	int64_t		n = argc > 1 ? atoll(argv[1]) : 1000000;
	int64_t		nq = argc > 2 ? atoll(argv[2]) : 100000;
	int			k = argc > 3 ? atoi(argv[3]) : 10;
	int			reps = argc > 4 ? atoi(argv[4]) : 3;
	const char *kinds = argc > 5 ? argv[5] : "uniform,clustered";
	bool		cosine = argc > 6 && strcmp(argv[6], "cosine") == 0;
	bool		faiss = argc > 7 && strcmp(argv[7], "faiss") == 0 && !cosine;
	std::vector<int> dims = {16, 64, 256};
	KdGpuInfo	info;
	char		why[256];
	cublasHandle_t h;

	if (getenv("FLAT_DIMS"))
	{
		dims.clear();
		for (const char *p = getenv("FLAT_DIMS"); *p; p += strspn(p, ","))
		{
			dims.push_back(atoi(p));
			p += strcspn(p, ",");
		}
	}
	if (!kde_gpu_available(&info, why, sizeof(why)))
	{
		printf("skipped: %s\n", why);
		return 0;
	}
	if (k > PEER_K_MAX || cublasCreate(&h) != CUBLAS_STATUS_SUCCESS)
	{
		printf("k at most %d, and cuBLAS must start\n", PEER_K_MAX);
		return 1;
	}
	printf("# GPU: %s; n=%lld queries=%lld k=%d, medians of %d\n", info.name,
		   (long long) n, (long long) nq, k, reps);
	for (int c = 0; c < 2; c++)
	{
		bool		clustered = c == 1;

		if (strstr(kinds, clustered ? "clustered" : "uniform") == NULL)
			continue;
		for (int dim : dims)
		{
			std::vector<double> d;
			std::vector<float> f;
			std::vector<uint64_t> refs(n);
			std::vector<KdNeighbor> a((size_t) nq * k),
						b((size_t) nq * k);
			std::vector<int32_t> cnt(nq);
			std::vector<double> ta,
						tb;
			KdVectors	set;
			KdExec		exec;
			KdGpuTimes	times = {0};
			KdError		err;
			int64_t		wrong = 0;
			int64_t		mismatched;

			make_vectors(clustered, n + nq, dim, d, f);
			/* cosine: the peer ranks the vectors normalized, by L2 */
			for (int64_t i = 0; cosine && i < n + nq; i++)
			{
				double		s = 0.0;

				for (int j = 0; j < dim; j++)
					s += d[i * dim + j] * d[i * dim + j];
				for (int j = 0; j < dim; j++)
					f[i * dim + j] = (float) (d[i * dim + j] / sqrt(s));
			}
			for (int64_t i = 0; i < n; i++)
				refs[i] = (uint64_t) i;
			set = {n, dim, dim, d.data(), refs.data()};
			kde_exec_init(&exec);
			exec.device = KD_DEVICE_GPU;
			exec.times = &times;
			for (int r = 0; r <= reps; r++)
			{
				double		t0 = bench_now();

				if (kde_flat_knn(&set, cosine ? KD_METRIC_COSINE : KD_METRIC_L2,
								 d.data() + n * dim, nq, k,
								 NULL, a.data(), cnt.data(), &exec, &err) != KD_OK)
				{
					printf("kdgpu failed: %s\n", err.message);
					return 1;
				}
				if (r > 0)
					ta.push_back(bench_now() - t0);
				t0 = bench_now();
				if (!peer_knn(h, f.data(), n, f.data() + n * dim, nq, dim, k, b.data()))
				{
					printf("cuBLAS peer failed\n");
					return 1;
				}
				if (r > 0)
					tb.push_back(bench_now() - t0);
			}
			wrong = wrong_answers(a.data(), b.data(), nq, k);
			mismatched = cpu_mismatches(&set, cosine, d.data() + n * dim, nq, k, a.data());
			if (!time_forms(&set, cosine, d.data() + n * dim, nq, k, reps,
							bench_median(tb.data(), (int) tb.size()),
							clustered, a.data(), info.name))
				return 1;
#ifdef KD_WITH_FAISS
			if (faiss)
			{
				int64_t		fq = getenv("FLAT_FAISS_QUERIES") ?
					std::min(nq, (int64_t) atoll(getenv("FLAT_FAISS_QUERIES"))) : nq;
				double		tf = faiss_knn(f.data(), n, f.data() + n * dim, fq, dim, k,
										   b.data()) * nq / fq;
				int64_t		fwrong = wrong_answers(a.data(), b.data(), fq, k);

				printf("%-9s %-6s d=%-4d FAISS IndexFlatL2 float32, %d CPU threads %9.1f ms (%lld queries timed)  kdgpu faster %.2fx  float32 wrong on %lld of %lld queries\n",
					   clustered ? "clustered" : "uniform", "l2", dim, omp_get_max_threads(),
					   tf * 1e3, (long long) fq, tf / bench_median(ta.data(), (int) ta.size()),
					   (long long) fwrong, (long long) fq);
				printf("RESULT {\"op\":\"flat_knn_faiss\",\"data\":\"%s\",\"n\":%lld,\"queries\":%lld,\"timed_queries\":%lld,\"dim\":%d,\"k\":%d,\"faiss_ms\":%.3f,\"threads\":%d,\"float32_wrong\":%lld}\n",
					   clustered ? "clustered" : "uniform", (long long) n, (long long) nq,
					   (long long) fq, dim, k, tf * 1e3, omp_get_max_threads(), (long long) fwrong);
			}
#else
			if (faiss)
				printf("FAISS: not built in (make flat-compare-faiss)\n");
#endif
			{
				double		ma = bench_median(ta.data(), (int) ta.size());
				double		mb = bench_median(tb.data(), (int) tb.size());

				printf("%-9s %-6s d=%-4d kdgpu float8 exact %9.1f ms  cuBLAS float32 %9.1f ms  ratio %.2f  float32 wrong on %lld of %lld queries\n",
					   clustered ? "clustered" : "uniform", cosine ? "cosine" : "l2", dim, ma * 1e3,
					   mb * 1e3, ma / mb, (long long) wrong, (long long) nq);
				printf("          kdgpu: %s; %lld of %lld queries through the matrix filter searched again exactly; %lld of the first %d differ from the CPU's\n",
					   exec.note[0] ? exec.note : "exact tiles",
					   (long long) (times.flat_rechecked / (reps + 1)),
					   (long long) (times.flat_filtered / (reps + 1)),
					   (long long) mismatched, CPU_CHECKED);
				printf("RESULT {\"op\":\"flat_knn\",\"metric\":\"%s\",\"data\":\"%s\",\"n\":%lld,\"queries\":%lld,\"dim\":%d,\"k\":%d,\"kdgpu_ms\":%.3f,\"cublas_ms\":%.3f,\"float32_wrong\":%lld,\"gpu\":\"%s\"}\n",
					   cosine ? "cosine" : "l2", clustered ? "clustered" : "uniform", (long long) n,
					   (long long) nq, dim, k, ma * 1e3, mb * 1e3,
					   (long long) wrong, info.name);
				fflush(stdout);
			}
		}
	}
	cublasDestroy(h);
	return 0;
}
