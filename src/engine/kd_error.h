/*
 * kd_error.h
 *	  Filling a KdError, for the engine's C files and the CUDA host code
 *	  alike (kdgpu_cuda.so is standalone and links nothing of the engine).
 */
#ifndef KD_ERROR_H
#define KD_ERROR_H

#include <stdarg.h>
#include <stdio.h>

#include "kdtree.h"

/* Fill err (if given) and return code. */
static inline KdStatus
kde_set_error(KdError *err, KdStatus code, int64_t item, const char *fmt,...)
#ifdef __GNUC__
__attribute__((format(printf, 4, 5)))
#endif
;

static inline KdStatus
kde_set_error(KdError *err, KdStatus code, int64_t item, const char *fmt,...)
{
	if (err)
	{
		va_list		ap;

		err->code = code;
		err->item = item;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
	}
	return code;
}

#endif							/* KD_ERROR_H */
