/*
 * kdam_outside.c
 *	  Rows a kdgpu index keeps outside its tree.
 *
 * An index never refuses a row its table accepts (GiST does not either).
 * A row whose value the tree cannot hold is kept in the outside chain, a
 * chain of records like the pending ones, whose coordinate part is
 * KDAM_OUTSIDE_COORDS doubles: the kind of the value, the dimension of its
 * box, and the box's low and high corners.  The kinds:
 *
 *	KDAM_OUT_EMPTY	  an empty value (empty point, '{}'): no distance, and
 *					  IS NOT NULL, unlike the rows of the null chain;
 *	KDAM_OUT_EXACT	  a point the ORDER BY metric reads exactly (a point
 *					  with a NaN or infinite coordinate): low = high = it;
 *	KDAM_OUT_BOX	  a value inside a known box: a PostGIS geometry that is
 *					  not a point (its x/y box), a geography that is not a
 *					  point (its box on the unit sphere), a point of another
 *					  SRID or Z/M kind than the tree's (its x/y);
 *	KDAM_OUT_UNKNOWN  anything else (NaN PostGIS points, float8[] values
 *					  the float8[] operators reject, geography off the
 *					  sphere kdgpu knows).
 *
 * Scans search the outside rows exhaustively beside the tree and give
 * every one they return to the executor to recheck, so each gets exactly
 * the answer (or the error) the operator gives it in a sequential scan.
 * Which rows go to the tree is decided by the first point the index takes:
 * its dimension, and for PostGIS its SRID and Z/M kind.
 */
#include "postgres.h"

#include <math.h>

#include "utils/rel.h"

#include "kdam.h"

/* Put a box of ndim dimensions in an outside record's coordinates. */
static void
outside_set(double *rec, int kind, int ndim, const double *lo,
			const double *hi)
{
	rec[0] = kind;
	rec[1] = ndim;
	for (int j = 0; j < KD_MAX_DIM; j++)
	{
		rec[2 + j] = j < ndim ? lo[j] : 0.0;
		rec[2 + KD_MAX_DIM + j] = j < ndim ? hi[j] : 0.0;
	}
}

/*
 * Classify a row's non-NULL value for an index of the given point type
 * whose points have *dim coordinates (0: none yet) and, for PostGIS, *srid
 * and *zm.  Returns true when the value goes to the tree, with its
 * coordinates in coords (and sets *dim, *srid, *zm from it when the index
 * had no point yet); else fills rec (KDAM_OUTSIDE_COORDS doubles).
 */
bool
kdam_classify_row(KdPointType type, Datum value, int *dim, int32 *srid,
				  int32 *zm, double *coords, double *rec)
{
	KdPointInfo info;
	int			d;
	KdValueKind kind = kdg_datum_classify(type, value, coords, &info, &d);
	double		lo[KD_MAX_DIM];
	double		hi[KD_MAX_DIM];

	switch (kind)
	{
		case KD_VALUE_POINT:
			if (*dim == 0)
			{
				*dim = d;
				*srid = info.srid;
				*zm = info.zm;
				return true;
			}
			if (d == *dim && (!kdg_type_is_postgis(type) ||
							  (info.srid == *srid &&
							   (type != KD_TYPE_GEOMETRY || info.zm == *zm))))
				return true;
			/* another kind of point: PostGIS bounds it by its x and y */
			if (kdg_type_is_postgis(type) && type != KD_TYPE_GEOGRAPHY)
			{
				outside_set(rec, KDAM_OUT_BOX, 2, coords, coords);
				return false;
			}
			break;
		case KD_VALUE_EMPTY:
			outside_set(rec, KDAM_OUT_EMPTY, 0, NULL, NULL);
			return false;
		case KD_VALUE_NONFINITE:
			if (type == KD_TYPE_POINT)
			{
				outside_set(rec, KDAM_OUT_EXACT, 2, coords, coords);
				return false;
			}
			break;
		case KD_VALUE_NOT_POINT:
			if (type == KD_TYPE_GEOGRAPHY ? kdg_geography_box(value, lo, hi)
				: kdg_postgis_box(value, lo, hi))
			{
				outside_set(rec, KDAM_OUT_BOX, type == KD_TYPE_GEOGRAPHY ? 3 : 2,
							lo, hi);
				return false;
			}
			break;
		case KD_VALUE_OTHER:
			break;
	}
	outside_set(rec, KDAM_OUT_UNKNOWN, 0, NULL, NULL);
	return false;
}

/*
 * NOTICE at CREATE INDEX: how many rows with a value (not empty) sit
 * outside the tree.
 */
void
kdam_outside_notice(Relation index, int64 n)
{
	if (n > 0)
		ereport(NOTICE,
				(errmsg("index \"%s\" keeps %lld rows outside its tree",
						RelationGetRelationName(index), (long long) n),
				 errdetail("Their values are not points, not finite, or points of another kind than most of the table's; scans search them one by one."),
				 errhint("kd_index_stats() counts them as outside_rows.")));
}
