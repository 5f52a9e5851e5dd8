/*
 * point.h
 *	  Reading points: values of every point type, refs, query regions.
 *
 * Shared by the index (am/) and the functions; calls only core/ and
 * geo/.
 */
#ifndef KDGPU_POINT_H
#define KDGPU_POINT_H

#include "kdgpu.h"
#include "utils/array.h"

/* datum.c */
extern KdPointType kdg_point_type(Oid typid);
extern KdPointType kdg_array_point_type(Oid arraytype);
extern const char *kdg_point_type_name(KdPointType type);
extern int	kdg_datum_coords(KdPointType type, Datum value, double *coords,
							const KdWhere *where);
extern int	kdg_datum_read(KdPointType type, Datum value, double *coords,
						  const KdWhere *where, KdPointInfo *info);
extern int	kdg_array_view(Datum value, int maxdim, const KdWhere *where,
						   ArrayType **arr);
extern KdValueKind kdg_datum_classify(KdPointType type, Datum value,
									  double *coords, KdPointInfo *info,
									  int *dim);
extern int	kdg_query_read(KdPointType type, Datum value, double *coords,
						   const char *arg, KdPointInfo *info);
extern double *kdg_query_read_any(KdPointType type, Datum value,
								  const char *arg, KdPointInfo *info,
								  int *dim);
extern void kdg_query_check(int got, const KdPointInfo *info, int dim,
							const char *arg, const struct KdSource *src);
extern int64 kdg_array_points(KdPointType type, Datum array, double **coords,
							  int *dim, KdPointInfo **infos, const char *arg);
extern void kdg_array_check(int64 nq, int got, const KdPointInfo *infos,
							int dim, const char *arg,
							const struct KdSource *src);
extern void kdg_check_query_info(const struct KdSource *src,
								const KdPointInfo *info, const KdWhere *where);
extern double kdg_metric(KdPointType type, const double *a, const double *b,
						int dim);
extern void kdg_check_k(int k);
extern void kdg_check_radius(double radius, const char *arg, int64 ord);

/* vector.c */
extern KdMetric kdg_metric_of(Datum value);
extern void kdg_check_cosine(const double *v, int dim, const KdWhere *where);
extern void kdg_check_cosine_queries(const double *coords, int64 n, int dim,
									 const char *arg);

/* postgis.c */
extern KdPointType kdg_postgis_type(Oid typid);
extern int	kdg_postgis_coords(KdPointType type, Datum value, double *coords,
							  KdPointInfo *info, const KdWhere *where);
extern KdValueKind kdg_postgis_classify(KdPointType type, Datum value,
										double *coords, KdPointInfo *info,
										int *dim);
extern bool kdg_postgis_box(Datum value, double *lo, double *hi);
extern bool kdg_postgis_exact_box(Datum value, double *lo, double *hi);
extern Oid	kdg_type_namespace(Oid typid);
extern bool kdg_geography_box(Datum value, double *lo, double *hi);
extern double kdg_geography_distance(const double *a, const double *b);
extern double kdg_geography_chord(double metres);
extern double kdg_geography_lower_bound(double chord);
extern void kdg_check_geography_srid(int32 srid, const KdWhere *where);
extern void kdg_srid_mismatch(const char *fname, const KdPointInfo *a,
							 const KdPointInfo *b);
extern const char *kdg_zm_name(int zm);

/* region.c */
extern void kdg_check_corners(const double *low, const double *high, int dim);
extern int	kdg_ball_from_datum(Datum value, int dim, double *center,
								double *radius);
extern int	kdg_rect_from_datum(Datum value, int dim, double *low,
								double *high);

/* where.c */
extern char *kdg_where_text(const KdWhere *where);

/* refs.c */
extern uint64 kdg_tid_to_ref(ItemPointer tid);
extern BlockNumber kdg_ref_block(uint64 ref);
extern void kdg_ref_to_tid(uint64 ref, ItemPointer tid);
extern uint64 kdg_key_to_ref(Oid keytype, Datum key);
extern int64 kdg_ref_to_key(uint64 ref);

#endif							/* KDGPU_POINT_H */
