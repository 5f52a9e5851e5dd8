/*
 * kd_gserialized.h
 *	  Reading PostGIS's serialized geometry and geography values without
 *	  PostGIS: the point coordinates, SRID and flags of a point, and the 2-D
 *	  bounding box of any geometry.
 *
 * Plain C99, no postgres.h: the functions take the bytes of a detoasted
 * value after its 4-byte varlena header (VARDATA, VARSIZE - VARHDRSZ) and
 * check every read against len, so any input is safe to pass.  Both
 * layouts PostGIS has written are read: version 1 (PostGIS 2) and version 2
 * (PostGIS 3, with the optional extended-flags word).
 */
#ifndef KD_GSERIALIZED_H
#define KD_GSERIALIZED_H

#include <stddef.h>
#include <stdint.h>

/* What a value holds. */
typedef enum KdGsStatus
{
	KD_GS_OK = 0,				/* a point with coordinates */
	KD_GS_EMPTY,				/* POINT EMPTY */
	KD_GS_NOT_POINT,			/* a geometry of another type */
	KD_GS_BAD					/* truncated, or not a serialized value */
} KdGsStatus;

/* PostGIS geometry type numbers (liblwgeom.h) */
#define KD_GS_POINTTYPE		1
#define KD_GS_MAXTYPE		15

/* A decoded point. */
typedef struct KdGeoPoint
{
	int32_t		srid;			/* 0 when unknown */
	int			type;			/* PostGIS type number, also when not a point */
	int			version;		/* serialization version: 1 or 2 */
	int			has_z;
	int			has_m;
	int			geodetic;		/* a geography value */
	int			ndims;			/* 2 + has_z + has_m */
	double		coords[4];		/* x, y, then z if has_z, then m if has_m */
} KdGeoPoint;

/* A 2-D bounding box. */
typedef struct KdGeoBox
{
	double		xmin;
	double		ymin;
	double		xmax;
	double		ymax;
} KdGeoBox;

/*
 * Decode a point.  The header fields of out (srid, type, version, flags,
 * ndims) are set whenever the header is readable, whatever the status;
 * the coordinates only for KD_GS_OK.
 */
extern KdGsStatus kd_gserialized_point(const uint8_t *buf, size_t len,
									   KdGeoPoint *out);

/*
 * The 2-D bounding box of every coordinate of a geometry of any type
 * (NaN coordinates are left out).  KD_GS_EMPTY when it has no coordinate.
 */
extern KdGsStatus kd_gserialized_box(const uint8_t *buf, size_t len,
									 KdGeoBox *out);

/*
 * The bounding box stored in a value's header, when it has one: nfloats
 * float4s (2 per dimension, or 6 for geography: x, y and z of the unit
 * sphere), as min, max of each dimension in turn.  KD_GS_EMPTY when the
 * value stores no box.
 */
extern KdGsStatus kd_gserialized_stored_box(const uint8_t *buf, size_t len,
											float *box, int *nfloats);

/* The PostGIS name of a geometry type number ("Point", "Polygon", ...). */
extern const char *kd_gserialized_type_name(int type);

#endif							/* KD_GSERIALIZED_H */
