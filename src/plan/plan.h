/*
 * plan.h
 *	  Planner and executor hooks over the SQL functions.
 *
 * The streaming scan of the row functions (stream_scan.c,
 * stream_parallel.c), the ORDER BY hook (orderby_hook.c) and the index
 * paths of PostGIS's predicates and distance caps (postgis_paths.c);
 * calls funcs/ and below.
 */
#ifndef KDGPU_PLAN_H
#define KDGPU_PLAN_H

#include "funcs/funcs.h"

/* orderby_hook.c */
extern void kdg_orderby_hook_install(void);

/* postgis_paths.c */
extern void kdg_postgis_paths_install(void);

/* stream_scan.c */
extern void kdg_stream_scan_install(void);

/* stream_parallel.c */
typedef struct KdStreamShared KdStreamShared;
struct dsm_segment;
extern Size kdg_stream_shared_size(void);
extern KdRows *kdg_stream_share(KdStreamShared *sh, const KdRows *rows,
								bool read_hits, struct dsm_segment **segp);
extern KdRows *kdg_stream_attach(KdStreamShared *sh, struct dsm_segment **segp);
extern void kdg_stream_unshare(struct dsm_segment *seg);
extern bool kdg_stream_claim(KdStreamShared *sh, KdRows *rows);
extern void kdg_stream_restart(KdStreamShared *sh);

#endif							/* KDGPU_PLAN_H */
