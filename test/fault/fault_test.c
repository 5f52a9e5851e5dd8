/*
 * fault_test.c
 *	  The engine's behaviour when the GPU is absent or fails: AUTO work falls
 *	  back to the CPU with the CPU's exact answer and a note saying why; GPU
 *	  work fails with the GPU's status and message; cancellation and
 *	  argument errors are never retried; every device tree that was
 *	  uploaded is released; and the next piece of work succeeds.
 *
 *	   fault-test fake		KDGPU_CUDA_LIB is fake_cuda.so (failures on
 *							purpose, see fake_cuda.c)
 *	   fault-test absent	KDGPU_FAULT=absent, or a library that is missing
 *	   fault-test real		the real kdgpu_cuda.so on a GPU, with a fault
 *							injected by KDGPU_FAULT=nomem:N, kernel:N or
 *							trap:N (cuda/api.cu); test/gpu/faults.sh sweeps N
 *							under compute-sanitizer; the kd-tree's work, and
 *							the vantage-point tree's build and kNN
 *
 * Prints one line per failed check and ends with "N passed, N failed".
 * Runs without a GPU; make fault-check runs both modes.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kdtree.h"

#define NPTS 600
#define DIM 3
#define NQ 7
#define K 9

static int	passed = 0;
static int	failed = 0;
static double pts[NPTS * DIM];
static uint64_t refs[NPTS];
static double queries[NQ * DIM];

/* Record one check. */
static void
check(int ok, const char *what, const char *ctx)
{
	if (ok)
		passed++;
	else
	{
		failed++;
		printf("not ok - %s [%s]\n", what, ctx);
	}
}

/*
 * Clustered points, two of every three a copy of the one before them (so
 * that the GPU's All-kNN walks runs of equal points: cuda/query_runs.cu;
 * the far coordinates are near enough that copies keep Morton codes of
 * their own), and queries on and off the data.
 */
static void
make_data(void)
{
	uint64_t	s = 12345;

	for (int i = 0; i < NPTS * DIM; i++)
	{
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		pts[i] = (double) ((s >> 33) % 1000) / 10.0 + (i % 7 == 0 ? 1e3 : 0.0);
		if (i / DIM % 3 != 0)
			pts[i] = pts[i - DIM];
	}
	for (int i = 0; i < NPTS; i++)
		refs[i] = (uint64_t) (NPTS - i) * 3;
	for (int i = 0; i < NQ * DIM; i++)
		queries[i] = pts[(i * 37) % (NPTS * DIM)] + (i % 2 ? 0.25 : 0.0);
}

static void
exec_for(KdExec *exec, KdDevice device)
{
	kde_exec_init(exec);
	exec->device = device;
	exec->gpu_min_work = 0;
}

/* Uploaded fake trees not yet released (0 when the library is not fake). */
static int
live_trees(void)
{
	void	   *h = dlopen(getenv("KDGPU_CUDA_LIB"), RTLD_NOW | RTLD_NOLOAD);
	int			(*fn) (void);

	if (h == NULL)
		return 0;
	*(void **) (&fn) = dlsym(h, "fake_live_trees");
	return fn ? fn() : 0;
}

/* The answers of one device setting, to compare with the CPU's. */
typedef struct Answers
{
	KdStatus	st[5];
	char		note[5][256];
	bool		used_gpu[5];
	KdNeighbor	knn[NQ * K];
	int32_t		knn_count[NQ];
	KdNeighbor *all;
	int32_t    *all_count;
	KdRangeResult radius;
	KdRangeResult box;
	KdStatus	build_st;
	char		build_note[256];
	bool		build_gpu;
} Answers;

enum
{
	OP_KNN, OP_ALL, OP_RADIUS, OP_BOX, OP_UPLOAD
};
static const char *const op_names[] = {"knn", "all_knn", "radius", "box", "upload"};

/*
 * Build a tree (on the CPU, so that the queries find it built) and run
 * every query kind with the given device.
 */
static void
run_all(KdDevice device, const KdTree *tree, Answers *a)
{
	KdExec		exec;
	KdError		err;
	double		radii[NQ];
	double		lows[NQ * DIM],
				highs[NQ * DIM];

	for (int q = 0; q < NQ; q++)
	{
		radii[q] = 5.0 + q;
		for (int j = 0; j < DIM; j++)
		{
			lows[q * DIM + j] = queries[q * DIM + j] - 20;
			highs[q * DIM + j] = queries[q * DIM + j] + 20;
		}
	}
	memset(&a->radius, 0, sizeof(a->radius));
	memset(&a->box, 0, sizeof(a->box));
	a->all = malloc(sizeof(KdNeighbor) * NPTS * K);
	a->all_count = malloc(sizeof(int32_t) * NPTS);

#define RUN(op, call) \
	do { exec_for(&exec, device); memset(&err, 0, sizeof(err)); \
		 a->st[op] = (call); a->used_gpu[op] = exec.used_gpu; \
		 snprintf(a->note[op], sizeof(a->note[op]), "%s", \
				  a->st[op] == KD_OK ? exec.note : err.message); } while (0)

	RUN(OP_KNN, kde_knn(tree, queries, NQ, K, a->knn, a->knn_count, &exec, &err));
	RUN(OP_ALL, kde_all_knn(tree, K, false, a->all, a->all_count, &exec, &err));
	RUN(OP_RADIUS, kde_radius(tree, queries, NQ, radii, NQ, &a->radius, &exec, &err));
	RUN(OP_BOX, kde_box(tree, lows, highs, NQ, &a->box, &exec, &err));
#undef RUN
}

static void
free_answers(Answers *a)
{
	free(a->all);
	free(a->all_count);
	kde_range_result_free(&a->radius);
	kde_range_result_free(&a->box);
}

static bool
same_range(const KdRangeResult *x, const KdRangeResult *y)
{
	if (x->nq != y->nq || memcmp(x->offsets, y->offsets, sizeof(int64_t) * (x->nq + 1)) != 0)
		return false;
	return memcmp(x->hits, y->hits, sizeof(KdNeighbor) * x->offsets[x->nq]) == 0;
}

/* Whether query op's answer in a equals the CPU's in cpu. */
static bool
same_answer(int op, const Answers *a, const Answers *cpu)
{
	switch (op)
	{
		case OP_KNN:
			return memcmp(a->knn_count, cpu->knn_count, sizeof(a->knn_count)) == 0 &&
				memcmp(a->knn, cpu->knn, sizeof(a->knn)) == 0;
		case OP_ALL:
			return memcmp(a->all_count, cpu->all_count, sizeof(int32_t) * NPTS) == 0 &&
				memcmp(a->all, cpu->all, sizeof(KdNeighbor) * NPTS * K) == 0;
		case OP_RADIUS:
			return same_range(&a->radius, &cpu->radius);
		case OP_BOX:
			return same_range(&a->box, &cpu->box);
	}
	return false;
}

/* Build with a device; returns the status, the tree built on success. */
static KdStatus
build_with(KdDevice device, KdTree *tree, KdExec *exec, KdError *err)
{
	exec_for(exec, device);
	memset(err, 0, sizeof(*err));
	memset(tree, 0, sizeof(*tree));
	return kde_build(pts, refs, NPTS, DIM, tree, exec, err);
}

/*
 * One failure mode: AUTO falls back (or not, for statuses that are not the
 * GPU's), GPU fails with the status, nothing stays uploaded, the CPU works.
 */
static void
check_mode(const char *ctx, KdStatus injected, bool fallback, const KdTree *cputree,
		   const Answers *cpu)
{
	Answers		aut,
				gpu,
				after;
	KdTree		tree;
	KdExec		exec;
	KdError		err;
	KdStatus	st;
	char		c[160];

	/* build */
	st = build_with(KD_DEVICE_AUTO, &tree, &exec, &err);
	snprintf(c, sizeof(c), "%s, build, auto", ctx);
	if (fallback)
	{
		check(st == KD_OK && !exec.used_gpu, "AUTO build falls back to the CPU", c);
		check(strstr(exec.note, "GPU failed, CPU used") != NULL, "the fallback is noted", c);
		check(st == KD_OK && tree.n == cputree->n &&
			  memcmp(tree.coords, cputree->coords, sizeof(double) * NPTS * DIM) == 0 &&
			  memcmp(tree.refs, cputree->refs, sizeof(uint64_t) * NPTS) == 0,
			  "the fallback build equals the CPU build", c);
		check(tree.gpu == NULL, "no device copy is kept", c);
		if (st == KD_OK)
			kde_tree_free(&tree);
	}
	else
		check(st == injected && tree.coords == NULL, "AUTO build fails with the status and frees the tree", c);
	st = build_with(KD_DEVICE_GPU, &tree, &exec, &err);
	snprintf(c, sizeof(c), "%s, build, gpu", ctx);
	check(st == injected, "GPU build fails with the status", c);
	check(err.message[0] != '\0', "with a message", c);
	check(tree.coords == NULL && tree.gpu == NULL, "and frees the tree", c);

	/* queries */
	run_all(KD_DEVICE_AUTO, cputree, &aut);
	run_all(KD_DEVICE_GPU, cputree, &gpu);
	for (int op = OP_KNN; op <= OP_BOX; op++)
	{
		snprintf(c, sizeof(c), "%s, %s", ctx, op_names[op]);
		if (fallback)
		{
			check(aut.st[op] == KD_OK && !aut.used_gpu[op], "AUTO falls back to the CPU", c);
			check(strstr(aut.note[op], "GPU failed, CPU used") != NULL, "the fallback is noted", c);
			check(aut.st[op] == KD_OK && same_answer(op, &aut, cpu), "with the CPU's exact answer", c);
		}
		else
			check(aut.st[op] == injected, "AUTO fails with the status, no retry on the CPU", c);
		check(gpu.st[op] == injected, "GPU fails with the status", c);
		check(gpu.note[op][0] != '\0', "with a message", c);
	}
	check(live_trees() == 0, "every uploaded tree was released", ctx);
	check(cputree->gpu == NULL, "the host tree keeps no device copy", ctx);

	/* and the next work, on the CPU, is right */
	run_all(KD_DEVICE_CPU, cputree, &after);
	for (int op = OP_KNN; op <= OP_BOX; op++)
	{
		snprintf(c, sizeof(c), "%s, then %s on the CPU", ctx, op_names[op]);
		check(after.st[op] == KD_OK && same_answer(op, &after, cpu), "the next query works", c);
	}
	free_answers(&aut);
	free_answers(&gpu);
	free_answers(&after);
}

/* Residency: kde_gpu_upload failing leaves no device copy behind. */
static void
check_upload(const char *ctx, KdStatus injected, const KdTree *cputree)
{
	KdTree		tree = *cputree;
	KdExec		exec;
	KdError		err;

	exec_for(&exec, KD_DEVICE_GPU);
	memset(&err, 0, sizeof(err));
	check(kde_gpu_upload(&tree, &exec, &err) == injected, "kd_gpu_upload fails with the status", ctx);
	check(tree.gpu == NULL && live_trees() == 0, "and keeps no device copy", ctx);
}

/* A status that reports a failure of the GPU (after a trap, a CUDA context
 * may also report itself unusable). */
static bool
gpu_failure(KdStatus st)
{
	return st == KD_ERR_GPU || st == KD_ERR_GPU_NOMEM || st == KD_ERR_GPU_UNAVAILABLE;
}

#define VN 3000				/* vectors of the tree checks */
#define VDIM 20
#define VNQ 40

/*
 * The vantage-point tree on a real GPU with the injected fault: its build
 * (kde_vp_build) and a kNN batch through it (kde_flat_knn, the tree for
 * every query) under AUTO give the CPU's tree and answers; under GPU they
 * give them too or fail cleanly, the tree's arrays left empty; afterwards
 * AUTO is right again.  Returns whether some of it failed or fell back.
 */
static bool
check_real_vectors(void)
{
	double	   *v = malloc(sizeof(double) * (VN + VNQ) * VDIM);
	uint64_t   *vrefs = malloc(sizeof(uint64_t) * VN);
	KdVectors	set = {VN, VDIM, VDIM, v, vrefs};
	KdNeighbor	want[VNQ * K],
				got[VNQ * K];
	int32_t		want_n[VNQ],
				got_n[VNQ];
	KdVpTree	cpu_tree,
				tree;
	KdExec		exec;
	KdError		err;
	KdStatus	st;
	bool		reached = false;
	uint64_t	s = 777;

	/* points near three lines, where the tree prunes */
	for (int i = 0; i < VN + VNQ; i++)
		for (int j = 0; j < VDIM; j++)
		{
			s = s * 6364136223846793005ULL + 1442695040888963407ULL;
			v[i * VDIM + j] = (double) (i % 3 + 1) * (j + 1) * (i / 3) / VN +
				(double) ((s >> 40) % 1000) * 1e-6;
		}
	for (int i = 0; i < VN; i++)
		vrefs[i] = (uint64_t) (VN - i);
	exec_for(&exec, KD_DEVICE_CPU);
	exec.vector_tree = KD_TREE_ALWAYS;
	if (kde_vp_build(&set, KD_METRIC_L2, 32, &cpu_tree, &exec, &err) != KD_OK ||
		kde_flat_knn(&set, KD_METRIC_L2, v + VN * VDIM, VNQ, K, NULL, want,
					 want_n, &exec, &err) != KD_OK)
	{
		check(false, "the CPU builds and searches a vantage-point tree", err.message);
		free(v);
		free(vrefs);
		return false;
	}
	for (int pass = 0; pass < 3; pass++)
	{
		KdDevice	device = pass == 1 ? KD_DEVICE_GPU : KD_DEVICE_AUTO;
		const char *ctx = pass == 0 ? "vectors, auto" : pass == 1 ? "vectors, gpu" : "vectors, auto after";

		exec_for(&exec, device);
		st = kde_vp_build(&set, KD_METRIC_L2, 32, &tree, &exec, &err);
		reached |= st != KD_OK || !exec.used_gpu;
		if (st == KD_OK)
		{
			check(tree.nnodes == cpu_tree.nnodes &&
				  memcmp(tree.nodes, cpu_tree.nodes, sizeof(KdVpNode) * tree.nnodes) == 0 &&
				  memcmp(tree.order, cpu_tree.order, sizeof(int64_t) * VN) == 0,
				  "the vantage-point tree equals the CPU's", ctx);
			kde_vp_free(&tree);
		}
		else
			check(device == KD_DEVICE_GPU && gpu_failure(st) && err.message[0] &&
				  tree.nodes == NULL && tree.order == NULL,
				  "the vantage-point tree build fails cleanly", ctx);
		exec_for(&exec, device);
		exec.vector_tree = KD_TREE_ALWAYS;
		st = kde_flat_knn(&set, KD_METRIC_L2, v + VN * VDIM, VNQ, K, NULL, got,
						  got_n, &exec, &err);
		reached |= st != KD_OK || !exec.used_gpu;
		check((st == KD_OK && memcmp(got, want, sizeof(got)) == 0 &&
			   memcmp(got_n, want_n, sizeof(got_n)) == 0) ||
			  (device == KD_DEVICE_GPU && gpu_failure(st) && err.message[0]),
			  "kNN through the tree gives the CPU's answer or fails cleanly", ctx);
		/* the same through the CPU's tree given to the GPU, as an index's */
		exec_for(&exec, device);
		exec.vector_tree = KD_TREE_ALWAYS;
		st = kde_flat_knn_tree(&set, KD_METRIC_L2, &cpu_tree, 0.0, false,
							   v + VN * VDIM, VNQ, K, NULL, got, got_n, &exec, &err);
		reached |= st != KD_OK || !exec.used_gpu;
		check((st == KD_OK && memcmp(got, want, sizeof(got)) == 0 &&
			   memcmp(got_n, want_n, sizeof(got_n)) == 0) ||
			  (device == KD_DEVICE_GPU && gpu_failure(st) && err.message[0]),
			  "kNN through a given tree gives the CPU's answer or fails cleanly", ctx);
		/* and kept on the device for a second call, then freed */
		for (int call = 0; call < 2; call++)
		{
			exec_for(&exec, device);
			exec.vector_tree = KD_TREE_ALWAYS;
			st = kde_flat_knn_tree(&set, KD_METRIC_L2, &cpu_tree, 0.0, true,
								   v + VN * VDIM, VNQ, K, NULL, got, got_n, &exec, &err);
			reached |= st != KD_OK || !exec.used_gpu;
			check((st == KD_OK && memcmp(got, want, sizeof(got)) == 0 &&
				   memcmp(got_n, want_n, sizeof(got_n)) == 0) ||
				  (device == KD_DEVICE_GPU && gpu_failure(st) && err.message[0]),
				  "kNN through a kept tree gives the CPU's answer or fails cleanly", ctx);
		}
		kde_gpu_vp_release(&cpu_tree);
	}
	kde_vp_free(&cpu_tree);
	free(v);
	free(vrefs);
	return reached;
}

/*
 * A real GPU with one injected fault: AUTO always gives the CPU's exact
 * answer; GPU gives it too or fails with a GPU status and a message; a
 * resident tree is released; afterwards AUTO still answers exactly; and
 * the same of the vantage-point tree (check_real_vectors).
 * Prints "fault reached" when some work failed or fell back, so that the
 * sweep in test/gpu/faults.sh knows when N has passed the last site.
 */
static void
check_real(const KdTree *cputree, const Answers *cpu)
{
	Answers		aut,
				gpu,
				after;
	KdTree		tree;
	KdExec		exec;
	KdError		err;
	KdStatus	st;
	bool		reached = false;

	st = build_with(KD_DEVICE_AUTO, &tree, &exec, &err);
	check(st == KD_OK && memcmp(tree.coords, cputree->coords, sizeof(double) * NPTS * DIM) == 0 &&
		  memcmp(tree.refs, cputree->refs, sizeof(uint64_t) * NPTS) == 0,
		  "AUTO build equals the CPU build", exec.note);
	reached |= !exec.used_gpu;
	if (st == KD_OK)
	{
		/* queries on the GPU-resident tree the build kept */
		run_all(KD_DEVICE_AUTO, &tree, &aut);
		for (int op = OP_KNN; op <= OP_BOX; op++)
		{
			check(aut.st[op] == KD_OK && same_answer(op, &aut, cpu),
				  "AUTO on the built tree gives the CPU's answer", op_names[op]);
			reached |= !aut.used_gpu[op];
		}
		free_answers(&aut);
		kde_gpu_release(&tree);
		kde_tree_free(&tree);
	}
	st = build_with(KD_DEVICE_GPU, &tree, &exec, &err);
	check(st == KD_OK || (gpu_failure(st) && err.message[0] &&
						  tree.coords == NULL && tree.gpu == NULL),
		  "GPU build succeeds or fails cleanly", err.message);
	reached |= st != KD_OK;
	if (st == KD_OK)
	{
		kde_gpu_release(&tree);
		kde_tree_free(&tree);
	}
	run_all(KD_DEVICE_AUTO, cputree, &aut);
	run_all(KD_DEVICE_GPU, cputree, &gpu);
	for (int op = OP_KNN; op <= OP_BOX; op++)
	{
		check(aut.st[op] == KD_OK && same_answer(op, &aut, cpu), "AUTO gives the CPU's answer", op_names[op]);
		check((gpu.st[op] == KD_OK && same_answer(op, &gpu, cpu)) ||
			  (gpu_failure(gpu.st[op]) && gpu.note[op][0]),
			  "GPU gives the CPU's answer or fails cleanly", gpu.note[op]);
		reached |= !aut.used_gpu[op] || gpu.st[op] != KD_OK;
	}
	check(cputree->gpu == NULL, "the host tree keeps no device copy", "real");
	run_all(KD_DEVICE_AUTO, cputree, &after);
	for (int op = OP_KNN; op <= OP_BOX; op++)
		check(after.st[op] == KD_OK && same_answer(op, &after, cpu), "the next AUTO query is right", op_names[op]);
	free_answers(&aut);
	free_answers(&gpu);
	free_answers(&after);
	reached |= check_real_vectors();
	printf("fault %s\n", reached ? "reached" : "not reached");
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "fake";
	KdTree		cputree;
	KdExec		exec;
	KdError		err;
	Answers		cpu;
	KdGpuInfo	info;
	char		why[256] = "";

	make_data();
	if (build_with(KD_DEVICE_CPU, &cputree, &exec, &err) != KD_OK)
	{
		printf("not ok - CPU build: %s\n0 passed, 1 failed\n", err.message);
		return 1;
	}
	run_all(KD_DEVICE_CPU, &cputree, &cpu);
	for (int op = OP_KNN; op <= OP_BOX; op++)
		check(cpu.st[op] == KD_OK, "the CPU answers", op_names[op]);

	if (strcmp(mode, "real") == 0)
		check_real(&cputree, &cpu);
	else if (strcmp(mode, "fake") == 0)
	{
		static const struct
		{
			const char *name;
			KdStatus	st;
			bool		fallback;
		}			modes[] = {
			{"nomem", KD_ERR_GPU_NOMEM, true},
			{"gpu", KD_ERR_GPU, true},
			{"unavailable", KD_ERR_GPU_UNAVAILABLE, true},
			{"canceled", KD_ERR_CANCELED, false},
			{"arg", KD_ERR_ARG, false},
		};

		check(kde_gpu_available(&info, why, sizeof(why)) && strcmp(info.name, "fake") == 0,
			  "the fake GPU library is loaded", getenv("KDGPU_CUDA_LIB") ? getenv("KDGPU_CUDA_LIB") : "(unset)");
		for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		{
			char		ctx[64];

			setenv("KDGPU_FAKE_FAIL", modes[i].name, 1);
			snprintf(ctx, sizeof(ctx), "queries fail: %s", modes[i].name);
			check_mode(ctx, modes[i].st, modes[i].fallback, &cputree, &cpu);
		}
		/* the upload fails (the build, which uploads nothing, too) */
		setenv("KDGPU_FAKE_FAIL", "nomem", 1);
		setenv("KDGPU_FAKE_UPLOAD", "nomem", 1);
		check_upload("upload fails: nomem", KD_ERR_GPU_NOMEM, &cputree);
		check_mode("upload fails: nomem", KD_ERR_GPU_NOMEM, true, &cputree, &cpu);
		unsetenv("KDGPU_FAKE_UPLOAD");
	}
	else
	{
		/* no usable GPU: AUTO on the CPU, GPU unavailable, CPU fine */
		Answers		aut,
					gpu;
		KdTree		tree;
		KdStatus	st;

		check(!kde_gpu_available(&info, why, sizeof(why)) && strstr(why, "not loaded") != NULL,
			  "no GPU is usable, and kd_gpu_available says why", why);
		st = build_with(KD_DEVICE_AUTO, &tree, &exec, &err);
		check(st == KD_OK && !exec.used_gpu && strstr(exec.note, "not loaded") != NULL,
			  "AUTO builds on the CPU and notes why", exec.note);
		if (st == KD_OK)
			kde_tree_free(&tree);
		st = build_with(KD_DEVICE_GPU, &tree, &exec, &err);
		check(st == KD_ERR_GPU_UNAVAILABLE && strstr(err.message, "not loaded") != NULL,
			  "GPU build is KD_ERR_GPU_UNAVAILABLE with the reason", err.message);
		run_all(KD_DEVICE_AUTO, &cputree, &aut);
		run_all(KD_DEVICE_GPU, &cputree, &gpu);
		for (int op = OP_KNN; op <= OP_BOX; op++)
		{
			check(aut.st[op] == KD_OK && !aut.used_gpu[op] && same_answer(op, &aut, &cpu),
				  "AUTO answers on the CPU", op_names[op]);
			check(gpu.st[op] == KD_ERR_GPU_UNAVAILABLE, "GPU is KD_ERR_GPU_UNAVAILABLE", op_names[op]);
		}
		check_upload("absent", KD_ERR_GPU_UNAVAILABLE, &cputree);
		free_answers(&aut);
		free_answers(&gpu);
	}
	free_answers(&cpu);
	kde_tree_free(&cputree);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
