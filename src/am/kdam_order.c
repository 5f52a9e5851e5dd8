/*
 * kdam_order.c
 *	  ORDER BY keys of kdgpu index scans: the operator's value for a point,
 *	  and lower bounds of it for subtrees and for rows outside the tree.
 *
 * A key's argument is a point of the index's kind, a box, or nothing:
 *
 *	point	  values are the operator's own for point (pg_hypot) and
 *			  float8[] (sqrt of the sum of squares), exact; for PostGIS
 *			  types lower bounds of PostGIS's value from the engine's
 *			  squared distance (kdam_postgis.c), which the executor
 *			  rechecks;
 *	box		  a PostGIS argument that is not a point of the index's kind (a
 *			  line, a polygon, a point with other Z/M): PostGIS's distance
 *			  to it is at least the distance to its bounding box, in x and
 *			  y (geometry) or on the unit sphere (geography), so the lower
 *			  bound of that distance is the key, rechecked;
 *	null	  a NULL or empty argument: every row's value is NULL.
 *
 * Which of these a scan computes is chosen once, when it begins, by the
 * index's point type (kdam_order_metric).  Subtree bounds come from squared
 * distances to split planes and stored boxes, per key.  A row outside the
 * tree is bounded by its box (KDAM_OUT_BOX, PostGIS values only), valued
 * exactly (KDAM_OUT_EXACT), or bounded by -inf (anything else), and
 * rechecked unless exact.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "access/relscan.h"
#include "utils/float.h"
#include "utils/geo_decls.h"
#include "utils/rel.h"

#include "kdam_scan.h"

/*
 * Read an ORDER BY scan key's argument.  PostGIS arguments that are not
 * points of the index's kind become boxes; a query of another SRID gets
 * PostGIS's error where its operator raises one.
 */
void
kdam_order_key_init(IndexScanDesc scan, ScanKey sk, KdamOrderKey *key)
{
	KdamScanOpaque so = (KdamScanOpaque) scan->opaque;
	Relation	index = scan->indexRelation;
	int			dim = so->meta.dim;
	KdPointInfo info;
	int			qdim;
	KdValueKind kind;

	memset(key, 0, sizeof(*key));
	if (sk->sk_flags & SK_ISNULL)
	{
		key->null = true;
		return;
	}
	kind = kdg_datum_classify(so->type, sk->sk_argument, key->q, &info, &qdim);
	if (!kdg_type_is_postgis(so->type))
	{
		KdWhere		where = {"ORDER BY", 0};

		/*
		 * point's <-> orders NaN and infinite query points too; the float8[]
		 * operator rejects what kdg_datum_read rejects, with its error
		 */
		if (kind != KD_VALUE_POINT && kind != KD_VALUE_EMPTY &&
			!(kind == KD_VALUE_NONFINITE && so->type == KD_TYPE_POINT))
			kdg_datum_read(so->type, sk->sk_argument, key->q, &where, &info);
		if (kind == KD_VALUE_EMPTY)
			key->null = true;
		else if (dim > 0 && qdim != dim)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("query point has dimension %d, index \"%s\" has dimension %d",
							qdim, RelationGetRelationName(index), dim)));
		return;
	}
	if (kind == KD_VALUE_EMPTY)
	{
		/* PostGIS's distance to an empty geometry is NULL */
		key->null = true;
		return;
	}
	if (kind == KD_VALUE_POINT || kind == KD_VALUE_NONFINITE)
		kdam_postgis_check_query(index, &so->meta, &info,
								 so->type == KD_TYPE_GEOGRAPHY ?
								 "geography_distance_knn" : "ST_Distance");
	if (kind == KD_VALUE_NONFINITE)
	{
		KdWhere		where = {"ORDER BY", 0};

		/* the same error kdg_datum_read gives a NaN query point */
		kdg_datum_read(so->type, sk->sk_argument, key->q, &where, &info);
	}
	if (kind == KD_VALUE_POINT &&
		(dim == 0 || (qdim == dim && (so->type != KD_TYPE_GEOMETRY ||
									  info.zm == so->meta.zm))))
		return;
	/* a line, polygon, or point of another kind: bounds from its box */
	key->box = true;
	if (so->type == KD_TYPE_GEOGRAPHY)
	{
		key->bdim = 3;
		if (!kdg_geography_box(sk->sk_argument, key->lo, key->hi))
			key->null = true;
	}
	else
	{
		key->bdim = 2;
		if (!kdg_postgis_box(sk->sk_argument, key->lo, key->hi))
			key->null = true;
	}
}

/* point's <-> (pg_hypot), exact */
static double
point_value(const double *p, const double *q, int dim)
{
	return pg_hypot(p[0] - q[0], p[1] - q[1]);
}

/* A bound under point's <->; none when lb2 overflows (pg_hypot may not). */
static double
point_bound(double lb2)
{
	return isinf(lb2) ? 0.0 : kdam_sqrt_below(lb2);
}

/* float8[]'s <-> (the square root of the sum of squares), exact */
static double
array_value(const double *p, const double *q, int dim)
{
	return sqrt(kde_dist2(p, q, dim));
}

/* float8[]'s <-> of points at squared distance lb2 */
static double
array_bound(double lb2)
{
	return sqrt(lb2);
}

/* A lower bound of geometry's <-> or <<->> */
static double
geometry_value(const double *p, const double *q, int dim)
{
	return kdam_geometry_lower_bound(kde_dist2(p, q, dim));
}

/* A lower bound of geography's <-> (unit vectors) */
static double
geography_value(const double *p, const double *q, int dim)
{
	return kdam_geography_lower_bound(kde_dist2(p, q, dim));
}

static const KdamMetric point_metric = {point_value, point_bound, false};
static const KdamMetric array_metric = {array_value, array_bound, false};
static const KdamMetric geometry_metric =
{geometry_value, kdam_geometry_lower_bound, true};
static const KdamMetric geography_metric =
{geography_value, kdam_geography_lower_bound, true};

/* The ORDER BY values of an index's point type. */
const KdamMetric *
kdam_order_metric(KdPointType type)
{
	switch (type)
	{
		case KD_TYPE_POINT:
			return &point_metric;
		case KD_TYPE_GEOGRAPHY:
			return &geography_metric;
		default:
			return kdg_type_is_postgis(type) ? &geometry_metric : &array_metric;
	}
}

/*
 * The key's value for a tree or pending point p (engine coordinates):
 * the operator's value, or for PostGIS types a lower bound of it.
 */
double
kdam_order_point(const KdamScanOpaque so, const KdamOrderKey *key,
				 const double *p, int dim)
{
	if (key->null)
		return 0.0;
	if (key->box)
		return so->metric->bound(kdam_order_box2(key, p, 0));
	return so->metric->value(p, key->q, dim);
}

/*
 * A lower bound of the key's value for points whose squared distance to
 * the key's argument is at least lb2.
 */
double
kdam_order_bound(const KdamScanOpaque so, const KdamOrderKey *key, double lb2)
{
	/* a NaN query coordinate bounds nothing */
	if (key->null || isnan(lb2))
		return 0.0;
	return so->metric->bound(lb2);
}

/*
 * The squared distance from the key's argument to the side of the split
 * plane through p in dimension s holding coordinates <= p[s] (left) or
 * >= p[s] (right); 0 when the argument reaches that side.
 */
double
kdam_order_side2(const KdamOrderKey *key, const double *p, int s, bool left)
{
	double		gap;

	if (key->null)
		return 0.0;
	if (key->box)
	{
		if (s >= key->bdim)
			return 0.0;
		gap = left ? key->lo[s] - p[s] : p[s] - key->hi[s];
	}
	else
		gap = left ? key->q[s] - p[s] : p[s] - key->q[s];
	return gap > 0 ? gap * gap : 0.0;
}

/*
 * The squared distance from the key's argument to a box: a stored box of
 * dim dimensions (low corner, then high), or with dim 0 the point at box.
 */
double
kdam_order_box2(const KdamOrderKey *key, const double *box, int dim)
{
	const double *hi = dim > 0 ? box + dim : box;
	double		d2 = 0.0;

	if (key->null)
		return 0.0;
	if (!key->box)
		return kde_box_dist2(key->q, box, dim);
	for (int j = 0; j < key->bdim; j++)
	{
		double		g = Max(Max(key->lo[j] - hi[j], box[j] - key->hi[j]), 0.0);

		d2 += g * g;
	}
	return d2;
}

/*
 * The squared distance from the key's argument to the point p (dim
 * coordinates): kdam_order_box2 of the box holding p alone.
 */
double
kdam_order_point2(const KdamOrderKey *key, const double *p, int dim)
{
	if (key->null)
		return 0.0;
	if (key->box)
		return kdam_order_box2(key, p, 0);
	return kde_dist2(key->q, p, dim);
}

/*
 * The key's value for a row outside the tree: exact for KDAM_OUT_EXACT,
 * a lower bound from the box of KDAM_OUT_BOX, -inf for the others (and for
 * a NaN bound); the caller has the executor recheck all but exact ones.
 */
double
kdam_order_outside(const KdamScanOpaque so, const KdamOrderKey *key,
				   const double *rec)
{
	int			kind = KdamOutsideKind(rec);
	int			bdim = KdamOutsideDim(rec);
	const double *lo = KdamOutsideLow(rec);
	const double *hi = KdamOutsideHigh(rec);
	double		d2 = 0.0;
	double		v;

	if (key->null)
		return 0.0;
	if (kind == KDAM_OUT_EXACT)
		return kdam_order_point(so, key, lo, bdim);
	if (kind != KDAM_OUT_BOX)
		return -get_float8_infinity();
	for (int j = 0; j < bdim && j < (key->box ? key->bdim : so->meta.dim); j++)
	{
		double		klo = key->box ? key->lo[j] : key->q[j];
		double		khi = key->box ? key->hi[j] : key->q[j];
		double		g = Max(Max(klo - hi[j], lo[j] - khi), 0.0);

		d2 += g * g;
	}
	v = so->metric->bound(d2);
	return isnan(v) ? -get_float8_infinity() : v;
}
