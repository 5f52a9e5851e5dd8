/*
 * postgis.c
 *	  PostGIS geometry and geography points, read without linking PostGIS.
 *
 * The types are recognised at run time: a type named geometry or geography
 * that belongs to the postgis extension.  Their OIDs are cached and the
 * cache is dropped on any pg_type invalidation (DROP EXTENSION postgis).
 * Values are decoded from PostGIS's documented serialization by
 * geo/kd_gserialized.c, so a PostGIS upgrade that keeps the format keeps
 * working.
 *
 * Coordinates given to the engine:
 *	geometry: x, y, then z and m when present (2 to 4 coordinates); the
 *	  metric is sqrt of the sum of squares in that order: ST_Distance for XY
 *	  points, ST_3DDistance for XYZ points;
 *	geometry, 2-D: x and y only, whatever else the point has (the 2-D <->);
 *	geography: the unit vector of the point (3 coordinates, whose chord
 *	  order is great-circle order), followed by longitude and latitude in
 *	  degrees, kept for the exact distance: PostGIS's sphere distance
 *	  (what geography <-> orders by), in metres, on the sphere of radius
 *	  (2a + b) / 3 of the WGS 84 ellipsoid.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/dependency.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "geo/kd_gserialized.h"
#include "point/point.h"

/* WGS 84: a = 6378137, 1/f = 298.257223563; PostGIS's sphere radius */
#define KD_WGS84_A		6378137.0
#define KD_WGS84_B		6356752.314245179
#define KD_SPHERE_RADIUS ((2.0 * KD_WGS84_A + KD_WGS84_B) / 3.0)
#define KD_GEOGRAPHY_SRID 4326

static Oid	geometry_oid = InvalidOid;
static Oid	geography_oid = InvalidOid;
static bool callback_set = false;

static char *kdg_type_name_or_null(Oid typid);
static KdGsStatus kdg_postgis_read(KdPointType type, Datum value, double *coords,
								   KdPointInfo *info, int *dim);

/* pg_type changed: forget the cached OIDs. */
static void
kdg_postgis_inval(Datum arg, int cacheid, uint32 hashvalue)
{
	geometry_oid = InvalidOid;
	geography_oid = InvalidOid;
}

/*
 * KD_TYPE_GEOMETRY or KD_TYPE_GEOGRAPHY when typid (a base type) is
 * PostGIS's, else KD_TYPE_NONE.
 */
KdPointType
kdg_postgis_type(Oid typid)
{
	char	   *name;
	KdPointType type = KD_TYPE_NONE;
	Oid			ext;

	if (OidIsValid(typid) && typid == geometry_oid)
		return KD_TYPE_GEOMETRY;
	if (OidIsValid(typid) && typid == geography_oid)
		return KD_TYPE_GEOGRAPHY;
	if (typid < FirstNormalObjectId)
		return KD_TYPE_NONE;
	name = kdg_type_name_or_null(typid);
	if (name == NULL)
		return KD_TYPE_NONE;
	if (strcmp(name, "geometry") == 0)
		type = KD_TYPE_GEOMETRY;
	else if (strcmp(name, "geography") == 0)
		type = KD_TYPE_GEOGRAPHY;
	pfree(name);
	if (type == KD_TYPE_NONE)
		return type;
	ext = get_extension_oid("postgis", true);
	if (!OidIsValid(ext) || getExtensionOfObject(TypeRelationId, typid) != ext)
		return KD_TYPE_NONE;
	if (!callback_set)
	{
		CacheRegisterSyscacheCallback(TYPEOID, kdg_postgis_inval, (Datum) 0);
		callback_set = true;
	}
	if (type == KD_TYPE_GEOMETRY)
		geometry_oid = typid;
	else
		geography_oid = typid;
	return type;
}

/* The type's name, or NULL when the type does not exist. */
static char *
kdg_type_name_or_null(Oid typid)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	char	   *name;

	if (!HeapTupleIsValid(tup))
		return NULL;
	name = pstrdup(NameStr(((Form_pg_type) GETSTRUCT(tup))->typname));
	ReleaseSysCache(tup);
	return name;
}

/* PostGIS's geographic_point_init: degrees to normalized radians. */
static double
kdg_lon_radians(double lon)
{
	lon = M_PI * lon / 180.0;
	if (lon == -1.0 * M_PI)
		return M_PI;
	if (lon == -2.0 * M_PI)
		return 0.0;
	if (lon > 2.0 * M_PI)
		lon = remainder(lon, 2.0 * M_PI);
	if (lon < -2.0 * M_PI)
		lon = remainder(lon, -2.0 * M_PI);
	if (lon > M_PI)
		lon = -2.0 * M_PI + lon;
	if (lon < -1.0 * M_PI)
		lon = 2.0 * M_PI + lon;
	if (lon == -2.0 * M_PI)
		lon *= -1.0;
	return lon;
}

/* A latitude in degrees as radians, wrapped as PostGIS wraps it. */
static double
kdg_lat_radians(double lat)
{
	lat = M_PI * lat / 180.0;
	if (lat > 2.0 * M_PI)
		lat = remainder(lat, 2.0 * M_PI);
	if (lat < -2.0 * M_PI)
		lat = remainder(lat, -2.0 * M_PI);
	if (lat > M_PI)
		lat = M_PI - lat;
	if (lat < -1.0 * M_PI)
		lat = -1.0 * M_PI - lat;
	if (lat > M_PI_2)
		lat = M_PI - lat;
	if (lat < -1.0 * M_PI_2)
		lat = -1.0 * M_PI - lat;
	return lat;
}

/*
 * Geography distance in metres from a to b (engine coordinates followed by
 * lon, lat): PostGIS's sphere_distance(a, b) times the radius, term for
 * term, which is what `a <-> b` returns.
 */
double
kdg_geography_distance(const double *a, const double *b)
{
	double		s_lon = kdg_lon_radians(a[3]),
				s_lat = kdg_lat_radians(a[4]),
				e_lon = kdg_lon_radians(b[3]),
				e_lat = kdg_lat_radians(b[4]);
	double		d_lon = e_lon - s_lon;
	double		cos_d_lon = cos(d_lon);
	double		cos_lat_e = cos(e_lat);
	double		sin_lat_e = sin(e_lat);
	double		cos_lat_s = cos(s_lat);
	double		sin_lat_s = sin(s_lat);
	double		a1 = cos_lat_e * sin(d_lon);
	double		a2 = cos_lat_s * sin_lat_e - sin_lat_s * cos_lat_e * cos_d_lon;
	double		sa = sqrt(a1 * a1 + a2 * a2);
	double		sb = sin_lat_s * sin_lat_e + cos_lat_s * cos_lat_e * cos_d_lon;

	return KD_SPHERE_RADIUS * atan2(sa, sb);
}

/* Chord length on the unit sphere for a sphere distance in metres. */
double
kdg_geography_chord(double metres)
{
	double		theta = metres / KD_SPHERE_RADIUS;

	if (theta >= M_PI)
		return 2.0;
	return 2.0 * sin(theta / 2.0);
}

/*
 * A lower bound in metres of the sphere distance of points whose unit
 * vectors are at least chord apart (the errors of both computations are a
 * few units of 1e-16 on the unit sphere).
 */
double
kdg_geography_lower_bound(double chord)
{
	double		theta = 2.0 * asin(Min(chord, 2.0) / 2.0);

	theta = theta * (1.0 - KD_GEO_BOUND_REL) - KD_GEO_BOUND_ABS;
	return theta > 0.0 ? theta * KD_SPHERE_RADIUS : 0.0;
}

/* Error for a geometry that is not a point, naming where it came from. */
static void
kdg_not_point(int geotype, KdPointType type, const KdWhere *where)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("%s in %s is a %s, not a point",
					type == KD_TYPE_GEOGRAPHY ? "geography" : "geometry",
					kdg_where_text(where), kd_gserialized_type_name(geotype)),
			 errhint("Index or query a point of it instead, e.g. ST_Centroid(geom) or ST_PointOnSurface(geom).")));
}

/*
 * Read a geometry or geography value into coords (room for KD_MAX_DIM)
 * without raising an error for one that is not a point (a short varlena,
 * as a point is stored, is read in place): returns
 * KD_GS_OK with *dim engine coordinates, KD_GS_EMPTY, KD_GS_NOT_POINT or
 * KD_GS_BAD; *info gets its SRID, Z/M flags and type (but for KD_GS_BAD).
 */
static KdGsStatus
kdg_postgis_read(KdPointType type, Datum value, double *coords,
				 KdPointInfo *info, int *dim)
{
	struct varlena *v = PG_DETOAST_DATUM_PACKED(value);
	KdGeoPoint	g;
	KdGsStatus	st = kd_gserialized_point((const uint8 *) VARDATA_ANY(v),
										  VARSIZE_ANY_EXHDR(v), &g);

	*dim = 0;
	if ((Pointer) v != DatumGetPointer(value))
		pfree(v);
	if (st == KD_GS_BAD)
		return st;
	info->srid = g.srid;
	info->zm = (g.has_z ? KD_HAS_Z : 0) | (g.has_m ? KD_HAS_M : 0);
	info->geotype = g.type;
	if (st != KD_GS_OK)
		return st;
	if (type == KD_TYPE_GEOGRAPHY)
	{
		double		lon = kdg_lon_radians(g.coords[0]);
		double		lat = kdg_lat_radians(g.coords[1]);

		/* a NaN or infinite lon or lat makes the vector non-finite */
		coords[0] = cos(lat) * cos(lon);
		coords[1] = cos(lat) * sin(lon);
		coords[2] = sin(lat);
		coords[3] = g.coords[0];
		coords[4] = g.coords[1];
		*dim = 3;
		return st;
	}
	*dim = type == KD_TYPE_GEOMETRY_2D ? 2 : g.ndims;
	memcpy(coords, g.coords, sizeof(double) * *dim);
	return st;
}

/*
 * Read a geometry or geography point into coords (room for KD_MAX_DIM) and
 * return the number of engine coordinates, 0 for an empty point; *info
 * gets its SRID and Z/M flags.  where describes the value for errors.
 */
int
kdg_postgis_coords(KdPointType type, Datum value, double *coords,
				   KdPointInfo *info, const KdWhere *where)
{
	int			dim;
	KdGsStatus	st = kdg_postgis_read(type, value, coords, info, &dim);

	if (st == KD_GS_BAD)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("%s in %s is not a valid serialized PostGIS value",
						type == KD_TYPE_GEOGRAPHY ? "geography" : "geometry",
						kdg_where_text(where))));
	if (st == KD_GS_NOT_POINT)
		kdg_not_point(info->geotype, type, where);
	return dim;
}

/*
 * What kind of value a stored geometry or geography is, for an index
 * (kdg_datum_classify): a point, empty, a point with a non-finite
 * coordinate, not a point, or (other) a geography kdgpu cannot place on its
 * sphere or a value it cannot decode.
 */
KdValueKind
kdg_postgis_classify(KdPointType type, Datum value, double *coords,
					 KdPointInfo *info, int *dim)
{
	KdGsStatus	st = kdg_postgis_read(type, value, coords, info, dim);

	if (st == KD_GS_BAD)
		return KD_VALUE_OTHER;
	if (st == KD_GS_EMPTY)
		return KD_VALUE_EMPTY;
	if (st == KD_GS_NOT_POINT)
		return KD_VALUE_NOT_POINT;
	for (int i = 0; i < *dim + kdg_type_extra(type); i++)
		if (!isfinite(coords[i]))
			return KD_VALUE_NONFINITE;
	if (type == KD_TYPE_GEOGRAPHY && info->srid != KD_GEOGRAPHY_SRID)
		return KD_VALUE_OTHER;
	return KD_VALUE_POINT;
}

/* Error unless a geography's SRID is one whose sphere kdgpu knows. */
void
kdg_check_geography_srid(int32 srid, const KdWhere *where)
{
	if (srid != KD_GEOGRAPHY_SRID)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("geography in %s has SRID %d; kdgpu supports geography in SRID %d",
						kdg_where_text(where), srid, KD_GEOGRAPHY_SRID),
				 errhint("Transform it with ST_Transform(geog::geometry, 4326)::geography.")));
}

/* PostGIS's error for values of different SRIDs, in its own words. */
void
kdg_srid_mismatch(const char *fname, const KdPointInfo *a, const KdPointInfo *b)
{
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("%s: Operation on mixed SRID geometries (%s, %d) != (%s, %d)",
					fname ? fname : "kdgpu",
					kd_gserialized_type_name(a->geotype), a->srid,
					kd_gserialized_type_name(b->geotype), b->srid)));
}

/* The SQL name of a geometry's dimensionality, for messages. */
const char *
kdg_zm_name(int zm)
{
	static const char *const names[] = {"XY", "XYZ", "XYM", "XYZM"};

	return names[zm & 3];
}

/*
 * The 3-D box on the unit sphere of a geography value for `&&`: its stored
 * box, else (a point) its unit vector.  false when empty.
 */
bool
kdg_geography_box(Datum value, double *lo, double *hi)
{
	struct varlena *v = PG_DETOAST_DATUM(value);
	float		box[8];
	int			nfloats;
	KdGsStatus	st = kd_gserialized_stored_box((const uint8 *) VARDATA_ANY(v),
											   VARSIZE_ANY_EXHDR(v), box, &nfloats);

	if (st == KD_GS_BAD)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("geography is not a valid serialized PostGIS value")));
	if (st == KD_GS_OK && nfloats == 6)
	{
		for (int j = 0; j < 3; j++)
		{
			lo[j] = box[2 * j];
			hi[j] = box[2 * j + 1];
		}
		return true;
	}
	else
	{
		KdWhere		where = {"&&", 0};
		KdPointInfo info;
		KdGeoPoint	g;
		double		c[KD_MAX_DIM];

		/* a two-point line stores no box: the whole sphere, rechecked */
		if (kd_gserialized_point((const uint8 *) VARDATA_ANY(v),
								 VARSIZE_ANY_EXHDR(v), &g) == KD_GS_NOT_POINT)
		{
			for (int j = 0; j < 3; j++)
			{
				lo[j] = -1.0;
				hi[j] = 1.0;
			}
			return true;
		}
		if (kdg_postgis_coords(KD_TYPE_GEOGRAPHY, value, c, &info, &where) == 0)
			return false;
		for (int j = 0; j < 3; j++)
			lo[j] = hi[j] = c[j];
		return true;
	}
}

/*
 * The bounding box of a geometry value (any type): the box stored in the
 * value, which PostGIS keeps for all but points and two-point lines and
 * which covers the arcs of curves, else the box of its coordinates; false
 * when empty.
 */
bool
kdg_postgis_box(Datum value, double *lo, double *hi)
{
	struct varlena *v = PG_DETOAST_DATUM(value);
	float		stored[8];
	int			nfloats;
	KdGsStatus	st = kd_gserialized_stored_box((const uint8 *) VARDATA_ANY(v),
											   VARSIZE_ANY_EXHDR(v), stored, &nfloats);

	if (st == KD_GS_OK && nfloats >= 4)
	{
		lo[0] = stored[0];
		hi[0] = stored[1];
		lo[1] = stored[2];
		hi[1] = stored[3];
		return true;
	}
	return kdg_postgis_exact_box(value, lo, hi);
}

/*
 * The exact x/y box of a geometry's coordinates into lo and hi (2
 * each); false when it has none (empty).
 */
bool
kdg_postgis_exact_box(Datum value, double *lo, double *hi)
{
	struct varlena *v = PG_DETOAST_DATUM(value);
	KdGeoBox	box;
	KdGsStatus	st = kd_gserialized_box((const uint8 *) VARDATA_ANY(v),
										VARSIZE_ANY_EXHDR(v), &box);

	if (st == KD_GS_BAD)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("geometry is not a valid serialized PostGIS value")));
	lo[0] = box.xmin;
	lo[1] = box.ymin;
	hi[0] = box.xmax;
	hi[1] = box.ymax;
	return st == KD_GS_OK;
}

/* The schema of a type. */
Oid
kdg_type_namespace(Oid typid)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	Oid			nsp;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for type %u", typid);
	nsp = ((Form_pg_type) GETSTRUCT(tup))->typnamespace;
	ReleaseSysCache(tup);
	return nsp;
}
