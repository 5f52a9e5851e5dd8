/*
 * kd_dbscan_args.h
 *	  The arguments kde_dbscan takes, checked alike by the engine's CPU
 *	  passes (kd_dbscan.c) and the CUDA host code (cuda/dbscan.cu), so that
 *	  both refuse the same calls with the same messages.
 */
#ifndef KD_DBSCAN_ARGS_H
#define KD_DBSCAN_ARGS_H

#include <math.h>

#include "kd_error.h"

/*
 * KD_OK, or KD_ERR_ARG for more points than int32 labels can number, a
 * minpoints below 1, or a reach or tie margin that is not a finite
 * number in order (within may be negative: then no pair is surely within).
 */
static inline KdStatus
kde_dbscan_check(int64_t n, const KdDbscan *args, KdError *err)
{
	if (n > INT32_MAX)
		return kde_set_error(err, KD_ERR_ARG, -1,
							 "DBSCAN takes at most %d points, not %lld",
							 INT32_MAX, (long long) n);
	if (args->minpoints < 1)
		return kde_set_error(err, KD_ERR_ARG, -1,
							 "minpoints must be at least 1, not %d",
							 args->minpoints);
	if (!(args->beyond >= 0) || !(args->within <= args->beyond) ||
		!(args->tie_rel >= 0) || !(args->tie_abs >= 0) ||
		isinf(args->beyond) || isinf(args->tie_rel) || isinf(args->tie_abs))
		return kde_set_error(err, KD_ERR_ARG, -1,
							 "DBSCAN's reach (%g, %g) or tie margins (%g, %g) are not valid",
							 args->within, args->beyond, args->tie_rel,
							 args->tie_abs);
	return KD_OK;
}

#endif							/* KD_DBSCAN_ARGS_H */
