/*
 * exactness.h
 *	  The margins that keep kdgpu's answers exact, in one place.
 *
 * The engine orders points by d2, the rounded sum of squared differences;
 * SQL orders them by each operator's own distance (pg_hypot for point,
 * PostGIS's for geometry and geography), and compares query regions in its
 * own precision (float4 boxes in PostGIS, a 1e-10 tolerance in the point
 * operators).  These differ by a few units in the last place, so every
 * comparison that crosses between them widens (or, for lower bounds,
 * narrows) by a margin far above that rounding and far below any
 * distance that matters.  What is kept by a margin is then decided by the
 * operator's own computation, so a margin only costs candidates.
 *
 * The engine's own prefilter of range queries (kde_radius_bound in
 * src/engine/kd_shape.h, relative 1e-12) sits inside the engine, which
 * includes no SQL-layer header.
 */
#ifndef KD_EXACTNESS_H
#define KD_EXACTNESS_H

/*
 * Candidate radii of kNN refinement and radius queries (search.c): a point
 * the operator places within d lies within d (1 + KD_SLACK_REL) +
 * KD_SLACK_ABS in the engine; the absolute part covers squares that
 * underflow.  The bound holds the other way round too: the engine's
 * DBSCAN (local/cluster.c) takes the points within d (1 - KD_SLACK_REL) -
 * KD_SLACK_ABS as surely within d, and two distances closer than three
 * times the margins as a tie the operator may break either way.
 */
#define KD_SLACK_REL	1e-12
#define KD_SLACK_ABS	1e-150

/*
 * The same for geography, whose engine points are unit vectors while the
 * operator's sphere distance comes from longitude and latitude (errors of
 * a few 1e-16 on the unit sphere).
 */
#define KD_GEO_SLACK_REL	1e-9
#define KD_GEO_SLACK_ABS	1e-13

/*
 * A lower bound of the sphere distance between unit vectors a chord apart
 * (postgis.c): the angle lowered by these, in radians.
 */
#define KD_GEO_BOUND_REL	1e-12
#define KD_GEO_BOUND_ABS	1e-14

/*
 * sqrt(d2) lowered below the value any operator computes for the same
 * coordinates (the lower bounds of ordered index scans).
 */
#define KD_SQRT_BELOW_REL	4e-15
#define KD_SQRT_BELOW_ABS	1e-150

/*
 * Lossy regions of index quals (kdam_quals.c), widened past float4
 * rounding and the point operators' 1e-10 tolerance.
 */
#define KD_REGION_REL	1e-6
#define KD_REGION_ABS	1e-9

/*
 * The box of a PostGIS `&&` qual (kdam_postgis.c), widened past the
 * float4 rounding of PostGIS's boxes; a geography box also by
 * KD_SPHERE_BOX_ABS, since PostGIS's unit vector of a point at longitude
 * -180 has y = -1.2e-16 cos(lat) where kdgpu's has +1.2e-16 cos(lat).
 */
#define KD_FLOAT4_BOX_REL	1e-6
#define KD_FLOAT4_BOX_ABS	1e-30
#define KD_SPHERE_BOX_ABS	1e-15

/*
 * The test whether a point's ball reaches a partition's bounding box
 * (table_allknn.c), loosened so that a partition that may hold a
 * neighbour is never skipped.
 */
#define KD_LEAF_BOX_REL	1e-9

/*
 * Metres added to a geography radius in kd_dwithin's index condition
 * (postgis_funcs.c): PostGIS's boxes of a point at longitude -180 and its
 * twin at +180 differ in the sign of a 1e-16 component.
 */
#define KD_DWITHIN_GEOGRAPHY_SLACK 0.001

/*
 * The relative widening of a geography radius in the box condition given
 * to a kdgpu index for ST_DWithin (plan/postgis_paths.c): its default
 * spheroid distance differs from the sphere's (mean radius) by less than
 * one part in 150, and the box is the sphere's.
 */
#define KD_SPHEROID_REL 0.01

#endif							/* KD_EXACTNESS_H */
