/*
 * core.h
 *	  The bottom of the backend: settings, engine calls, row differences.
 *
 * Every layer above calls these; they call only the engine.  The settings'
 * variables are declared in kdgpu.h.
 */
#ifndef KDGPU_CORE_H
#define KDGPU_CORE_H

#include "kdgpu.h"
#include "storage/dsm.h"

/* settings.c */
extern void kdg_settings_define(void);

/* engine_call.c */
extern char kdg_last_run[512];
extern char kdg_last_source[256];
extern bool kdg_gpu_by_service;
extern int	kdg_cpu_threads(void);
extern void kdg_exec_prepare(KdExec *exec);
extern void kdg_parallel_for(int64 nitems, int64 chunk, KdRangeFn fn, void *arg);
extern bool kdg_gpu_wanted(int64 work);
/* the most memory one slice of a streamed answer takes */
#define KDG_ANSWER_SLICE_BYTES	(256.0 * 1024 * 1024)

extern double kdg_answer_memory_limit(void);
extern bool kdg_answer_fits(int64 nq, int kk);
extern int64 kdg_answer_slice_queries(int kk);
extern void kdg_check_answer_memory(int64 nq, int kk, const char *what);
extern void kdg_parallel_copy(void *dst, const void *src, Size bytes);
extern void kdg_check_status(KdStatus status, const KdError *err,
							const KdExec *exec, const char *what);
extern KdTree *kdg_tree_new(void);

/* large_alloc.c */
extern void *kdg_alloc_large(MemoryContext cxt, Size size, bool zero);

/* A large segment kept mapped between uses (kept_segment.c). */
typedef struct KdgKeptSegment
{
	dsm_segment *seg;			/* NULL when none is kept */
	Size		size;
	bool		busy;			/* taken, not yet given back */
} KdgKeptSegment;

/* uses of at least this many bytes take the kept segment */
#define KDG_KEPT_SEGMENT_MIN	((Size) 16 << 20)

/* kept_segment.c */
extern dsm_segment *kdg_kept_segment_take(KdgKeptSegment *kept, Size size);
extern bool kdg_kept_segment_done(KdgKeptSegment *kept, dsm_segment *seg);
extern void kdg_kept_segment_drop(KdgKeptSegment *kept);
extern KdRangeResult *kdg_range_result_new(void);

/*
 * Rows for kdg_rows_diff: n TIDs, tid_stride words apart, and their points'
 * coordinates, coord_stride doubles apart, or NULL.
 */
typedef struct KdgRowsView
{
	const uint64 *tids;
	int			tid_stride;
	const double *coords;
	int			coord_stride;
	int64		n;
} KdgRowsView;

/* How an index tree's rows differ from a source's (kdg_rows_diff). */
typedef struct KdgDiff
{
	int64		ngone;
	uint64	   *gone;			/* ranks of tree rows the source lacks */
	int64		nadded;
	uint64	   *added;			/* ordinals of rows the tree lacks */
} KdgDiff;

/* rows_diff.c */
extern bool kdg_rows_diff(const KdgRowsView *tree, const KdgRowsView *rows,
						  int dim, int64 max_gone, int64 max_added,
						  KdgDiff *diff);

#endif							/* KDGPU_CORE_H */
