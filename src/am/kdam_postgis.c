/*
 * kdam_postgis.c
 *	  What the kdgpu access method does differently for PostGIS points.
 *
 * Operator classes (kdgpu_postgis--0.1.sql):
 *	kd_geometry_ops (default for geometry): x and y of each point, ordered
 *	  by the 2-D `<->`, and `&&` (strategy 1) as a box qual;
 *	kd_geometry_nd_ops: every coordinate of each point (XY, XYZ, XYM or
 *	  XYZM, one kind per index), ordered by `<<->>`;
 *	kd_geography_ops (default for geography): unit vectors, ordered by the
 *	  geography `<->` (sphere distance in metres), and `&&` (strategy 1) as
 *	  a 3-D box qual on the unit sphere, the box PostGIS keeps for
 *	  geography.
 *
 * The tree holds points of one SRID (and, for kd_geometry_nd_ops, one
 * Z/M kind), recorded in the metapage with the first point; other values
 * sit outside the tree (kdam_outside.c).  A query point of another SRID
 * gets PostGIS's own error where PostGIS's operator raises one; query
 * values that are not points of the tree's kind order by their boxes
 * (kdam_order.c).
 *
 * PostGIS computes its distances itself, so ordered scans over these
 * opclasses return lower bounds of the operator's value and set
 * xs_recheckorderby: the executor computes the operator on each row and
 * re-sorts, so rows come out exactly as PostGIS orders them.  `&&` is
 * tested by PostGIS on float4 boxes, so the index returns the points in
 * the argument's box widened past float4 rounding (KD_FLOAT4_BOX_* in
 * exactness.h), and the executor rechecks them.
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "kdam.h"

/*
 * The point type of an index over a PostGIS type: the opclass decides
 * how a geometry is read, by its members: every coordinate when it has the
 * n-D box operators (`&&&`, `~~`, `@@`, `~~=`, strategies 20-23), as
 * kd_geometry_nd_ops has in every version, else x and y.
 */
KdPointType
kdam_postgis_index_type(Relation index, KdPointType type)
{
	Oid			family = index->rd_opfamily[0];
	Oid			col = index->rd_opcintype[0];

	if (type != KD_TYPE_GEOMETRY)
		return type;
	for (int s = KDAM_STRATEGY_ND_OVERLAP; s <= KDAM_STRATEGY_ND_SAME; s++)
		if (OidIsValid(get_opfamily_member(family, col, col, s)))
			return KD_TYPE_GEOMETRY;
	return KD_TYPE_GEOMETRY_2D;
}

/*
 * Error unless a query point fits the index: PostGIS's error for another
 * SRID where its operator raises one (<-> does, <<->> does not).
 */
void
kdam_postgis_check_query(Relation index, const KdamMetaPageData *meta,
						 const KdPointInfo *info, const char *opname)
{
	KdPointInfo col = {meta->srid, meta->zm, 1};

	if (!kdg_type_is_postgis(meta->point_type) || meta->dim == 0)
		return;
	if (info->srid != meta->srid && meta->point_type != KD_TYPE_GEOMETRY)
		kdg_srid_mismatch(opname, &col, info);
}

/*
 * A lower bound of geometry's <-> and <<->> for points whose squared engine
 * distance to the query is at least d2.
 */
double
kdam_geometry_lower_bound(double d2)
{
	/* an overflowing d2 means a distance past sqrt(DBL_MAX): stay monotone */
	return kdam_sqrt_below(isinf(d2) ? DBL_MAX : d2);
}

/*
 * A lower bound of geography's <-> (metres on the sphere) for unit vectors
 * whose squared distance to the query's is at least d2.
 */
double
kdam_geography_lower_bound(double d2)
{
	return kdg_geography_lower_bound(sqrt(isinf(d2) ? DBL_MAX : d2));
}

/*
 * The box of a `col && arg` qual, widened past float4 rounding, and its
 * dimension: x and y for geometry, the unit sphere's x, y and z for
 * geography.  0 when the argument is empty (no match).
 */
int
kdam_postgis_box_qual(KdPointType type, Datum arg, double *lo, double *hi)
{
	int			dim = type == KD_TYPE_GEOGRAPHY ? 3 : 2;

	if (type == KD_TYPE_GEOGRAPHY ? !kdg_geography_box(arg, lo, hi)
		: !kdg_postgis_box(arg, lo, hi))
		return 0;
	for (int j = 0; j < dim; j++)
	{
		double		abs = type == KD_TYPE_GEOGRAPHY ? KD_SPHERE_BOX_ABS : KD_FLOAT4_BOX_ABS;

		lo[j] -= fabs(lo[j]) * KD_FLOAT4_BOX_REL + abs;
		hi[j] += fabs(hi[j]) * KD_FLOAT4_BOX_REL + abs;
	}
	return dim;
}
