/*
 * test_vptree.c
 *	  The vantage-point tree (kde_vp_build, kde_vp_bound) against the
 *	  property its searches rely on, checked with the oracle's distances.
 *
 * For every set kind of test_flat.c, dimensions and leaf sizes: the rows
 * are a permutation, a leaf holds at most leaf_rows, every inner node's
 * children split its rows about in half, every row inside lies within mu_in
 * of the vantage point and every row outside at mu_out or farther; and for
 * random queries (some far away, some on the rows themselves) no row of a
 * child is nearer than the bound kde_vp_bound gives it.  A search that
 * expands nodes in the order of their bounds is then exact.  The tree
 * follows its rules (a leaf's rows in row order, each vantage point the
 * row farthest from its node's least row), which make it the same on one
 * thread, on three, and on the GPU (node for node and row for row, where
 * there is one).  A tree that names its vantage points by coordinates and
 * holds some of the rows, as one read from an index does, answers as the
 * flat loop over those rows.  Bad arguments are refused.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "datagen.h"
#include "kd_metric.h"

/* Check one tree of n vectors of dim under metric, leaves of leaf_rows. */
static void
vp_case(FlatKind kind, int64_t n, int dim, KdMetric metric, int leaf_rows,
		bool have_gpu)
{
	double	   *pts = malloc(sizeof(double) * (n + 8) * dim);
	double	   *qs = pts + n * dim;
	char	   *seen = calloc(n + 1, 1);
	KdVectors	set = {n, dim, dim, pts, NULL};
	KdVpTree	tree;
	KdVpTree	again;
	KdExec		exec;
	KdError		err;
	KdStatus	st;
	bool		shape_ok = true;
	bool		bound_ok = true;

	kde_exec_init(&exec);
	exec.threads = 3;
	exec.device = KD_DEVICE_CPU;
	flat_generate(kind, n + 8, dim, 31 + (uint64_t) n * 7 + dim, pts);
	/* half the queries are rows of the set */
	for (int q = 0; q < 4 && n > 0; q++)
		memcpy(qs + q * dim, pts + ((q * 37) % n) * dim, sizeof(double) * dim);
	qs[4 * dim] += 100.0;
	st = kde_vp_build(&set, metric, leaf_rows, &tree, &exec, &err);
	if (!check(st == KD_OK, "vp build %s n=%lld dim=%d metric %d leaf %d: %s",
			   flat_kinds[kind], (long long) n, dim, metric, leaf_rows,
			   err.message))
		goto done;

	for (int64_t i = 0; i < n; i++)
	{
		int64_t		r = tree.order[i];

		if (r < 0 || r >= n || seen[r]++)
			shape_ok = false;
	}
	shape_ok &= (n == 0) == (tree.nnodes == 0);
	for (int64_t id = 0; id < tree.nnodes; id++)
	{
		const KdVpNode *nd = &tree.nodes[id];
		const double *vp;
		int64_t		half;

		if (nd->vp < 0)
		{
			shape_ok &= nd->count <= leaf_rows && nd->inside < 0 && nd->outside < 0;
			/* a leaf's rows in row order */
			for (int64_t i = nd->start + 1; i < nd->start + nd->count; i++)
				shape_ok &= tree.order[i - 1] < tree.order[i];
			continue;
		}
		half = tree.nodes[nd->inside].count;
		shape_ok &= nd->inside > id && nd->outside > nd->inside &&
			nd->outside < tree.nnodes && half >= nd->count / 2 &&
			half < nd->count && half <= nd->count / 2 + leaf_rows &&
			tree.nodes[nd->inside].start == nd->start &&
			tree.nodes[nd->outside].start == nd->start + half &&
			tree.nodes[nd->outside].count == nd->count - half;
		vp = pts + nd->vp * dim;
		/* the vantage point: the farthest from the least row, ties the greater */
		{
			int64_t		least = n;
			double		dv;

			for (int64_t i = nd->start; i < nd->start + nd->count; i++)
				least = tree.order[i] < least ? tree.order[i] : least;
			dv = oracle_distance(metric, pts + least * dim, vp, dim);
			for (int64_t i = nd->start; i < nd->start + nd->count; i++)
			{
				double		di = oracle_distance(metric, pts + least * dim,
												 pts + tree.order[i] * dim, dim);

				shape_ok &= di < dv || (di == dv && tree.order[i] <= nd->vp);
			}
		}
		for (int64_t i = nd->start; i < nd->start + nd->count; i++)
		{
			const double *row = pts + tree.order[i] * dim;
			int			side = i >= nd->start + half;
			double		dv = oracle_distance(metric, vp, row, dim);

			shape_ok &= side == 0 ? dv <= nd->mu_in : dv >= nd->mu_out;
			for (int q = 0; q < 8; q++)
			{
				const double *qv = qs + q * dim;
				double		dq = oracle_distance(metric, qv, vp, dim);
				double		b = kde_vp_bound(dq, side == 0 ? nd->mu_in : nd->mu_out,
											 side);

				bound_ok &= oracle_distance(metric, qv, row, dim) >= b && b >= 0.0;
			}
		}
	}
	check(shape_ok, "vp tree %s n=%lld dim=%d metric %d leaf %d: shape",
		  flat_kinds[kind], (long long) n, dim, metric, leaf_rows);
	/* one thread builds the same tree as three */
	if (check(kde_vp_build(&set, metric, leaf_rows, &again, NULL, &err) == KD_OK,
			  "vp build on one thread: %s", err.message))
	{
		check(again.nnodes == tree.nnodes &&
			  (n == 0 || (memcmp(again.order, tree.order, sizeof(int64_t) * n) == 0 &&
						  memcmp(again.nodes, tree.nodes, sizeof(KdVpNode) * tree.nnodes) == 0)),
			  "vp tree %s n=%lld dim=%d: the same on one thread and three",
			  flat_kinds[kind], (long long) n, dim);
		kde_vp_free(&again);
	}
	check(bound_ok, "vp tree %s n=%lld dim=%d metric %d leaf %d: bounds",
		  flat_kinds[kind], (long long) n, dim, metric, leaf_rows);
	/* the GPU's level-by-level build makes the same tree */
	exec.device = KD_DEVICE_GPU;
	exec.gpu_min_work = 0;
	if (have_gpu &&
		check(kde_vp_build(&set, metric, leaf_rows, &again, &exec, &err) == KD_OK &&
			  (exec.used_gpu || n == 0),
			  "vp build on the GPU %s n=%lld dim=%d: %s", flat_kinds[kind],
			  (long long) n, dim, err.message))
	{
		check(again.nnodes == tree.nnodes &&
			  (n == 0 || (memcmp(again.order, tree.order, sizeof(int64_t) * n) == 0 &&
						  memcmp(again.nodes, tree.nodes, sizeof(KdVpNode) * tree.nnodes) == 0)),
			  "vp tree %s n=%lld dim=%d metric %d leaf %d: the same on the GPU",
			  flat_kinds[kind], (long long) n, dim, metric, leaf_rows);
		kde_vp_free(&again);
	}
	kde_vp_free(&tree);
done:
	free(pts);
	free(seen);
}

/* Arguments the build refuses. */
static void
vp_errors(void)
{
	double		v[6] = {1, 2, 3, 4, 5, 6};
	KdVectors	set = {3, 2, 2, v, NULL};
	KdVpTree	tree;
	KdError		err;

	check(kde_vp_build(&set, KD_METRIC_COSINE, 4, &tree, NULL, &err) == KD_ERR_ARG &&
		  strstr(err.message, "cosine") != NULL,
		  "vp build refuses cosine: %s", err.message);
	check(kde_vp_build(&set, KD_METRIC_L2, 1, &tree, NULL, &err) == KD_ERR_ARG,
		  "vp build refuses leaves of 1 row");
	v[3] = NAN;
	check(kde_vp_build(&set, KD_METRIC_L2, 4, &tree, NULL, &err) == KD_ERR_NONFINITE &&
		  err.item == 1, "vp build refuses NaN: %s", err.message);
	v[3] = 4;
	set.dim = 0;
	check(kde_vp_build(&set, KD_METRIC_L2, 4, &tree, NULL, &err) == KD_ERR_ARG,
		  "vp build refuses dimension 0");
	check(kde_vp_bound(INFINITY, 1.0, 0) == 0.0 &&
		  kde_vp_bound(INFINITY, INFINITY, 1) == 0.0 &&
		  kde_vp_bound(3.0, 1.0, 1) == 0.0 && kde_vp_bound(3.0, 1.0, 0) > 1.99,
		  "vp bounds of overflowed and crossed distances");
}

/*
 * kde_vp_probe: a search of rows on a few lines compares few of them, of
 * uniform rows in 65 dimensions most of them.
 */
static void
vp_probe_case(FlatKind kind, int dim, double lo, double hi)
{
	int64_t		n = 4000;
	double	   *pts = malloc(sizeof(double) * n * dim);
	KdVectors	set = {n, dim, dim, pts, NULL};
	KdVpTree	tree;
	KdError		err;
	double		share = -2.0;
	KdExec		exec;

	flat_generate(kind, n, dim, 5, pts);
	kde_exec_init(&exec);
	exec.threads = 2;
	if (kde_vp_build(&set, KD_METRIC_L2, 16, &tree, &exec, &err) == KD_OK)
	{
		share = kde_vp_probe(&set, KD_METRIC_L2, &tree, 10, 16, &exec);
		kde_vp_free(&tree);
	}
	check(share >= lo && share <= hi, "vp probe %s dim %d: share %g in [%g, %g]",
		  flat_kinds[kind], dim, share, lo, hi);
	free(pts);
}

/*
 * A tree given with vantage points of its own (KdVpTree.vps) and a subset
 * of its rows, as one read from an index is: kde_flat_knn_tree through it
 * gives the flat loop's answers over those rows alone, on the CPU and the
 * GPU, with skips or without.
 */
static void
vp_given_case(FlatKind kind, int64_t n, int dim, KdMetric metric,
			  int leaf_rows, bool with_skip, bool have_gpu)
{
	int			nq = 40;
	int			k = 7;
	double	   *pts = malloc(sizeof(double) * (n + nq) * dim);
	double	   *qs = pts + n * dim;
	uint64_t   *refs = malloc(sizeof(uint64_t) * n);
	double	   *kept = malloc(sizeof(double) * n * dim);
	uint64_t   *kept_refs = malloc(sizeof(uint64_t) * n);
	uint64_t   *skip = with_skip ? malloc(sizeof(uint64_t) * nq) : NULL;
	KdNeighbor *want = malloc(sizeof(KdNeighbor) * nq * k);
	KdNeighbor *got = malloc(sizeof(KdNeighbor) * nq * k);
	int32_t    *want_count = malloc(sizeof(int32_t) * nq);
	int32_t    *got_count = malloc(sizeof(int32_t) * nq);
	KdVectors	set = {n, dim, dim, pts, refs};
	KdVectors	sub = {0, dim, dim, kept, kept_refs};
	KdVpTree	tree;
	KdVpTree	given;
	double	   *vps;
	int64_t		pos = 0;
	KdExec		exec;
	KdError		err;

	flat_generate(kind, n + nq, dim, 77 + (uint64_t) n + dim, pts);
	for (int64_t i = 0; i < n; i++)
	{
		refs[i] = 1000 + 3 * (uint64_t) i;
		if (i % 5 == 0)
			continue;
		memcpy(kept + sub.n * dim, pts + i * dim, sizeof(double) * dim);
		kept_refs[sub.n++] = refs[i];
	}
	/* some queries on rows, kept or not */
	for (int q = 0; q < nq; q += 3)
		memcpy(qs + q * dim, pts + ((q * 41) % n) * dim, sizeof(double) * dim);
	for (int q = 0; skip && q < nq; q++)
		skip[q] = refs[(q * 41) % n];
	kde_exec_init(&exec);
	exec.threads = 3;
	exec.device = KD_DEVICE_CPU;
	if (!check(kde_vp_build(&set, metric, leaf_rows, &tree, &exec, &err) == KD_OK,
			   "vp build: %s", err.message) ||
		!check(kde_flat_knn_cpu(&sub, metric, qs, nq, k, skip, want, want_count,
								&exec, &err) == KD_OK, "flat kNN: %s", err.message))
		goto done;

	/* the vantage points by coordinates, the leaves without rows i % 5 == 0 */
	given = tree;
	given.gpu = NULL;
	given.nodes = malloc(sizeof(KdVpNode) * tree.nnodes);
	given.order = malloc(sizeof(int64_t) * n);
	vps = malloc(sizeof(double) * dim * tree.nnodes);
	for (int64_t id = 0; id < tree.nnodes; id++)
	{
		KdVpNode	nd = tree.nodes[id];

		if (nd.vp >= 0)
		{
			memcpy(vps + id * dim, pts + nd.vp * dim, sizeof(double) * dim);
			nd.vp = 0;
		}
		else
		{
			int64_t		first = pos;

			for (int64_t r = nd.start; r < nd.start + nd.count; r++)
				if (tree.order[r] % 5 != 0)
					given.order[pos++] = tree.order[r];
			nd.start = first;
			nd.count = pos - first;
		}
		given.nodes[id] = nd;
	}
	given.vps = vps;
	exec.vector_tree = KD_TREE_ALWAYS;
	check(kde_flat_knn_tree(&set, metric, &given, 0.0, false, qs, nq, k, skip,
							got, got_count, &exec, &err) == KD_OK &&
		  memcmp(got_count, want_count, sizeof(int32_t) * nq) == 0 &&
		  memcmp(got, want, sizeof(KdNeighbor) * nq * k) == 0,
		  "given vp tree %s n=%lld dim=%d metric %d%s: the flat answers over its rows (%s)",
		  flat_kinds[kind], (long long) n, dim, metric, skip ? " with skips" : "",
		  err.message);
	if (have_gpu)
	{
		exec.device = KD_DEVICE_GPU;
		exec.gpu_min_work = 0;
		/* for the call alone, then kept on the device for two calls */
		for (int call = 0; call < 3; call++)
		{
			memset(got, 0, sizeof(KdNeighbor) * nq * k);
			check(kde_flat_knn_tree(&set, metric, &given, 0.0, call > 0, qs, nq,
									k, skip, got, got_count, &exec, &err) == KD_OK &&
				  exec.used_gpu && (call == 0) == (given.gpu == NULL) &&
				  memcmp(got_count, want_count, sizeof(int32_t) * nq) == 0 &&
				  memcmp(got, want, sizeof(KdNeighbor) * nq * k) == 0,
				  "given vp tree on the GPU %s n=%lld dim=%d metric %d%s, call %d: the flat answers (%s)",
				  flat_kinds[kind], (long long) n, dim, metric,
				  skip ? " with skips" : "", call, err.message);
		}
		kde_gpu_vp_release(&given);
		check(given.gpu == NULL, "a kept vp tree is released");
	}
	free(given.nodes);
	free(given.order);
	free(vps);
	kde_vp_free(&tree);
done:
	free(pts);
	free(refs);
	free(kept);
	free(kept_refs);
	free(skip);
	free(want);
	free(got);
	free(want_count);
	free(got_count);
}

/* Every vantage-point tree test. */
void
test_vptree(bool have_gpu)
{
	static const int64_t sizes[] = {0, 1, 2, 5, 70, 1000};
	static const int dims[] = {1, 3, 16, 65};
	static const int leaves[] = {2, 7, 32};
	static const KdMetric metrics[] = {KD_METRIC_L2, KD_METRIC_L1, KD_METRIC_LINF};

	for (int kind = 0; kind < FLAT_NKINDS; kind++)
		for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
			for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
				vp_case((FlatKind) kind, sizes[si], dims[di],
						metrics[(kind + di + si) % 3], leaves[(kind + si) % 3],
						have_gpu);
	if (have_gpu)
	{
		/* deeper trees, and leaves of more than a warp's rows */
		vp_case(FLAT_LINES, 100000, 24, KD_METRIC_L2, 32, true);
		vp_case(FLAT_INTEGERS, 30000, 5, KD_METRIC_L1, 48, true);
		vp_case(FLAT_SAME, 5000, 3, KD_METRIC_LINF, 3, true);
	}
	for (int kind = 0; kind < FLAT_NKINDS; kind++)
		vp_given_case((FlatKind) kind, 3000, 5 + 11 * kind, metrics[kind % 3],
					  kind % 2 ? 9 : 32, kind % 2 == 0, have_gpu);
	vp_errors();
	vp_probe_case(FLAT_LINES, 16, 0.0, 0.2);
	vp_probe_case(FLAT_UNIFORM, 65, 0.5, 1.1);
}
