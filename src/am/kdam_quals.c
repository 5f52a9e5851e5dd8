/*
 * kdam_quals.c
 *	  WHERE quals of kdgpu index scans, as regions of space.
 *
 * Every qual becomes a box (lo <= p <= hi, unbounded where -inf/+inf) or a
 * ball that holds every point the operator can accept, and the search skips
 * subtrees outside it.  Exact quals test each point as the operator does:
 * point <@ box, kd_rect, and kd_ball (with the type's own metric).  The
 * others are lossy, and the executor rechecks what the index returns:
 *
 *	point <@ circle	  the circle's box-bounded ball, widened (the operator
 *					  allows a tolerance);
 *	point <<, >>, <<|, |>>, <^, >^, ~=, <@ polygon: half-planes through the
 *					  argument, its point, or the polygon's bounding box;
 *	geometry &&, ~=, ~, @, <<, >>, &<, &>, <<|, |>>, &<|, |&>, and n-D &&&,
 *	~~, @@, ~~=:	  PostGIS compares float4 boxes: the half-planes or the
 *					  box of the argument's box, in x and y.
 *
 * Lossy regions are widened past float4 rounding and the point operators'
 * 1e-10 tolerance (KD_REGION_REL, KD_REGION_ABS in exactness.h).  IS NULL matches only
 * the null chain; IS NOT NULL every other row.  A row outside the tree is a
 * candidate for every qual unless its box is known to miss the region, and
 * for kdgpu's own operators always, since those raise errors for values the
 * tree cannot hold: the executor's recheck gives it exactly the operator's
 * answer.
 */
#include "postgres.h"

#include <math.h>

#include "access/skey.h"
#include "utils/float.h"
#include "utils/geo_decls.h"

#include "kdam_scan.h"

/* Whether a point satisfies every qual (exact but for lossy ones). */
bool
kdam_quals_match(const KdamScanOpaque so, const double *p, int dim)
{
	for (int i = 0; i < so->nquals; i++)
	{
		const KdamQual *q = &so->quals[i];

		switch (q->kind)
		{
			case KDAM_QUAL_BOX:
				for (int j = 0; j < dim; j++)
					if (p[j] < q->lo[j] || p[j] > q->hi[j])
						return false;
				break;
			case KDAM_QUAL_BALL:
				if (kde_dist2(p, q->center, dim) > q->r2max)
					return false;
				if (q->metric &&
					!(kdg_metric(so->type, p, q->center, dim) <= q->radius))
					return false;
				break;
			case KDAM_QUAL_NULL:
				return false;
			case KDAM_QUAL_NOT_NULL:
				break;
		}
	}
	return true;
}

/* Whether a region (a stored box) may hold a point satisfying the quals. */
bool
kdam_quals_meet_box(const KdamScanOpaque so, const double *box, int dim)
{
	for (int i = 0; i < so->nquals; i++)
	{
		const KdamQual *q = &so->quals[i];

		if (q->kind == KDAM_QUAL_BOX)
		{
			for (int j = 0; j < dim; j++)
				if (q->hi[j] < box[j] || q->lo[j] > box[dim + j])
					return false;
		}
		else if (q->kind == KDAM_QUAL_BALL)
		{
			if (kde_box_dist2(q->center, box, dim) > q->r2max)
				return false;
		}
		else if (q->kind == KDAM_QUAL_NULL)
			return false;
	}
	return true;
}

/*
 * Whether the side of a split plane holding coordinates <= v in dimension s
 * (left) or >= v (right) may hold a point satisfying the quals.
 */
bool
kdam_quals_meet_side(const KdamScanOpaque so, int s, double v, bool left)
{
	for (int i = 0; i < so->nquals; i++)
	{
		const KdamQual *q = &so->quals[i];

		if (q->kind == KDAM_QUAL_BOX)
		{
			if (left ? q->lo[s] > v : q->hi[s] < v)
				return false;
		}
		else if (q->kind == KDAM_QUAL_BALL)
		{
			double		d = q->center[s] - v;

			if ((left ? d > 0 : d < 0) && d * d > q->r2max)
				return false;
		}
		else if (q->kind == KDAM_QUAL_NULL)
			return false;
	}
	return true;
}

/*
 * Whether a row outside the tree (its outside record) is a candidate for
 * the quals: false only when the box of a value that is not a point
 * (KDAM_OUT_BOX) misses a region; comparisons with NaN keep the row.  A
 * point with a NaN or infinite coordinate stays a candidate for every qual,
 * since the operators answer for it in ways no region describes.
 */
bool
kdam_quals_take_outside(const KdamScanOpaque so, const double *rec)
{
	int			kind = KdamOutsideKind(rec);
	int			bdim = KdamOutsideDim(rec);
	const double *lo = KdamOutsideLow(rec);
	const double *hi = KdamOutsideHigh(rec);

	for (int i = 0; i < so->nquals; i++)
	{
		const KdamQual *q = &so->quals[i];

		if (q->kind == KDAM_QUAL_NULL)
			return false;
		if (q->own || kind != KDAM_OUT_BOX)
			continue;
		/* kd_ball is kdgpu's own (skipped above), circle is point's */
		if (q->kind == KDAM_QUAL_BOX)
			for (int j = 0; j < bdim; j++)
				if (q->hi[j] < lo[j] || q->lo[j] > hi[j])
					return false;
	}
	return true;
}

/* Whether the NULL rows satisfy the quals: only IS NULL ones do. */
bool
kdam_quals_take_null(const KdamScanOpaque so)
{
	for (int i = 0; i < so->nquals; i++)
		if (so->quals[i].kind != KDAM_QUAL_NULL)
			return false;
	return true;
}

/* A box region unbounded in every dimension. */
static void
region_everywhere(KdamQual *q)
{
	q->kind = KDAM_QUAL_BOX;
	for (int j = 0; j < KD_MAX_DIM; j++)
	{
		q->lo[j] = -get_float8_infinity();
		q->hi[j] = get_float8_infinity();
	}
}

/* Widen a lossy region past float4 rounding and the points' tolerance. */
static void
region_widen(KdamQual *q)
{
	for (int j = 0; j < KD_MAX_DIM; j++)
	{
		q->lo[j] -= fabs(q->lo[j]) * KD_REGION_REL + KD_REGION_ABS;
		q->hi[j] += fabs(q->hi[j]) * KD_REGION_REL + KD_REGION_ABS;
	}
}

/*
 * The region of a lossy x/y strategy whose argument's box is [alo, ahi]:
 * the half-plane or box that holds every point the operator can accept.
 */
static void
region_from_box(KdamQual *q, int strategy, const double *alo, const double *ahi)
{
	region_everywhere(q);
	q->lossy = true;
	switch (strategy)
	{
		case KDAM_STRATEGY_LEFT:
			q->hi[0] = alo[0];
			break;
		case KDAM_STRATEGY_RIGHT:
			q->lo[0] = ahi[0];
			break;
		case KDAM_STRATEGY_BELOW:
		case KDAM_STRATEGY_OLD_BELOW:
			q->hi[1] = alo[1];
			break;
		case KDAM_STRATEGY_ABOVE:
		case KDAM_STRATEGY_OLD_ABOVE:
			q->lo[1] = ahi[1];
			break;
		case KDAM_STRATEGY_OVERLEFT:
			q->hi[0] = ahi[0];
			break;
		case KDAM_STRATEGY_OVERRIGHT:
			q->lo[0] = alo[0];
			break;
		case KDAM_STRATEGY_OVERBELOW:
			q->hi[1] = ahi[1];
			break;
		case KDAM_STRATEGY_OVERABOVE:
			q->lo[1] = alo[1];
			break;
		default:
			/* &&, ~=, ~, @, <@ polygon and the n-D ones: the box itself */
			for (int j = 0; j < 2; j++)
			{
				q->lo[j] = alo[j];
				q->hi[j] = ahi[j];
			}
			break;
	}
	region_widen(q);
}

/* A region no tree point is in (an empty argument's box). */
static void
region_nowhere(KdamQual *q)
{
	region_everywhere(q);
	q->lossy = true;
	q->lo[0] = get_float8_infinity();
	q->hi[0] = -get_float8_infinity();
}

/*
 * Read a scan key into a qual; false if it can match nothing (a NULL
 * argument of a strict operator).
 */
bool
kdam_qual_from_key(KdamScanOpaque so, ScanKey key, KdamQual *q)
{
	int			s = key->sk_strategy;
	double		alo[KD_MAX_DIM];
	double		ahi[KD_MAX_DIM];

	memset(q, 0, sizeof(*q));
	if (key->sk_flags & SK_SEARCHNULL)
	{
		q->kind = KDAM_QUAL_NULL;
		return true;
	}
	if (key->sk_flags & SK_SEARCHNOTNULL)
	{
		q->kind = KDAM_QUAL_NOT_NULL;
		return true;
	}
	if (key->sk_flags & SK_ISNULL)
		return false;
	if (s == KDAM_STRATEGY_IN_BALL)
	{
		/* ball and rect dimensions are checked against the index's later */
		q->kind = KDAM_QUAL_BALL;
		q->own = true;
		q->metric = true;
		q->dim = kdg_ball_from_datum(key->sk_argument, 0, q->center, &q->radius);
		q->r2max = kde_radius_bound(q->radius);
		return q->dim > 0;
	}
	if (s == KDAM_STRATEGY_IN_RECT)
	{
		q->kind = KDAM_QUAL_BOX;
		q->own = true;
		q->dim = kdg_rect_from_datum(key->sk_argument, 0, q->lo, q->hi);
		return q->dim > 0;
	}
	if (s == KDAM_STRATEGY_IN_CIRCLE)
	{
		CIRCLE	   *c = DatumGetCircleP(key->sk_argument);

		q->kind = KDAM_QUAL_BALL;
		q->lossy = true;
		q->dim = 2;
		q->center[0] = c->center.x;
		q->center[1] = c->center.y;
		q->radius = c->radius;
		q->r2max = kde_radius_bound(c->radius);
		return !isnan(c->radius) && !isnan(c->center.x) && !isnan(c->center.y);
	}
	if (kdg_type_is_postgis(so->type))
	{
		/* PostGIS's box operators, && included */
		if (so->type == KD_TYPE_GEOGRAPHY)
		{
			/* geography &&: a 3-D box on the unit sphere */
			if (kdam_postgis_box_qual(so->type, key->sk_argument, alo, ahi) == 0)
				region_nowhere(q);
			else
			{
				region_everywhere(q);
				q->lossy = true;
				memcpy(q->lo, alo, sizeof(double) * 3);
				memcpy(q->hi, ahi, sizeof(double) * 3);
			}
			return true;
		}
		if (!kdg_postgis_box(key->sk_argument, alo, ahi))
			region_nowhere(q);
		else
			region_from_box(q, s == KDAM_STRATEGY_IN_BOX ? KDAM_STRATEGY_SAME : s,
							alo, ahi);
		return true;
	}
	if (s == KDAM_STRATEGY_IN_BOX)
	{
		BOX		   *box = DatumGetBoxP(key->sk_argument);

		q->kind = KDAM_QUAL_BOX;
		q->dim = 2;
		q->lo[0] = box->low.x;
		q->lo[1] = box->low.y;
		q->hi[0] = box->high.x;
		q->hi[1] = box->high.y;
		return !isnan(box->low.x) && !isnan(box->low.y) &&
			!isnan(box->high.x) && !isnan(box->high.y);
	}
	if (s == KDAM_STRATEGY_IN_POLYGON)
	{
		POLYGON    *poly = DatumGetPolygonP(key->sk_argument);

		alo[0] = poly->boundbox.low.x;
		alo[1] = poly->boundbox.low.y;
		ahi[0] = poly->boundbox.high.x;
		ahi[1] = poly->boundbox.high.y;
	}
	else if (s >= KDAM_STRATEGY_LEFT && s <= KDAM_STRATEGY_SAME)
	{
		Point	   *pt = DatumGetPointP(key->sk_argument);

		alo[0] = ahi[0] = pt->x;
		alo[1] = ahi[1] = pt->y;
	}
	else
		elog(ERROR, "unsupported kdgpu strategy %d", s);
	/* NaN bounds compare false: they keep every point, and the recheck decides */
	region_from_box(q, s, alo, ahi);
	return true;
}
