/*
 * kd_sets.h
 *	  A lock-free union-find over int32 elements, for the density clusters
 *	  of the engine (kd_dbscan.c) and of the SQL layer's exact pairs
 *	  (src/local/cluster.c).
 *
 * Threads join sets at the same time without locks: a set's root is its
 * lowest element, a root is linked under a lower root only by a
 * compare-and-swap that finds it still a root, and every other write
 * replaces a parent with one of its ancestors, so that parent[i] <= i
 * always holds and no thread ever sees a cycle.  The GPU kernels
 * (cuda/dbscan.cu) keep the same rule with CUDA's atomics.
 */
#ifndef KD_SETS_H
#define KD_SETS_H

#include <stdint.h>

/* The root of i's set, halving the path on the way. */
static inline int32_t
kde_set_find(int32_t *parent, int32_t i)
{
	for (;;)
	{
		int32_t		p = __atomic_load_n(&parent[i], __ATOMIC_RELAXED);
		int32_t		g;

		if (p == i)
			return i;
		g = __atomic_load_n(&parent[p], __ATOMIC_RELAXED);
		if (g != p)
			__atomic_store_n(&parent[i], g, __ATOMIC_RELAXED);
		i = g;
	}
}

/* Join the sets of a and b under the lower root. */
static inline void
kde_set_union(int32_t *parent, int32_t a, int32_t b)
{
	for (;;)
	{
		int32_t		ra = kde_set_find(parent, a);
		int32_t		rb = kde_set_find(parent, b);
		int32_t		hi = ra > rb ? ra : rb;
		int32_t		lo = ra > rb ? rb : ra;
		int32_t		expected = hi;

		if (ra == rb ||
			__atomic_compare_exchange_n(&parent[hi], &expected, lo, false,
										__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return;
	}
}

/*
 * Lower *slot to v unless it already holds a lower value (an atomic
 * minimum).
 */
static inline void
kde_atomic_min(int32_t *slot, int32_t v)
{
	int32_t		seen = __atomic_load_n(slot, __ATOMIC_RELAXED);

	while (v < seen &&
		   !__atomic_compare_exchange_n(slot, &seen, v, false,
										__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

#endif							/* KD_SETS_H */
