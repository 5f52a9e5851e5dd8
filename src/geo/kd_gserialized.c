/*
 * kd_gserialized.c
 *	  Decoding PostGIS's serialized format (GSERIALIZED) for points and
 *	  bounding boxes, from its documented layout (liblwgeom/gserialized.txt).
 *
 * Layout, after the varlena header:
 *
 *	 srid		3 bytes, big-endian, 21-bit signed
 *	 gflags		1 byte: Z 0x01, M 0x02, BBOX 0x04, GEODETIC 0x08, in both
 *				versions; version 2 sets 0x40 and uses 0x10 for EXTENDED
 *	 xflags		8 bytes, version 2 with EXTENDED only
 *	 bbox		float4s, with BBOX only: 6 for geodetic values (a box on the
 *				unit sphere), otherwise 2 per dimension
 *	 data		uint32 type, then per type (native byte order, doubles
 *				8-byte aligned in the value):
 *				  point, line, circular string, triangle: uint32 npoints,
 *					npoints * ndims doubles
 *				  polygon: uint32 nrings, nrings uint32 point counts, 4 bytes
 *					of padding when nrings is odd, then the coordinates
 *				  collections: uint32 ngeoms, then each member's data
 *
 * Every read is checked against the length; counts are checked against the
 * bytes left before they are multiplied, so nothing overflows.  Collections
 * nest at most KD_GS_MAX_DEPTH deep.
 */
#include "kd_gserialized.h"

#include <math.h>
#include <string.h>

#define GS_Z			0x01
#define GS_M			0x02
#define GS_BBOX			0x04
#define GS_GEODETIC		0x08
#define GS2_EXTENDED	0x10
#define GS_VERSION		0x40

#define KD_GS_MAX_DEPTH 32

/* A cursor over the value's bytes. */
typedef struct GsReader
{
	const uint8_t *buf;
	size_t		len;
	size_t		pos;
} GsReader;

/* Read a native-order uint32; 0 when fewer than 4 bytes are left. */
static int
gs_u32(GsReader *r, uint32_t *v)
{
	if (r->len - r->pos < 4)
		return 0;
	memcpy(v, r->buf + r->pos, 4);
	r->pos += 4;
	return 1;
}

/* Skip n bytes; 0 when fewer are left. */
static int
gs_skip(GsReader *r, size_t n)
{
	if (r->len - r->pos < n)
		return 0;
	r->pos += n;
	return 1;
}

/*
 * Read the header: srid, flags, optional extended flags and box.  Leaves
 * the cursor at the data.  Returns 0 on a short or unknown header.
 */
static int
gs_header(GsReader *r, KdGeoPoint *hdr)
{
	uint8_t		flags;
	int32_t		srid;
	size_t		boxfloats;

	memset(hdr, 0, sizeof(*hdr));
	if (r->len < 4)
		return 0;
	srid = ((int32_t) r->buf[0] << 16) | ((int32_t) r->buf[1] << 8) | r->buf[2];
	/* sign-extend the 21-bit field */
	if (srid & 0x100000)
		srid -= 0x200000;
	hdr->srid = srid;
	flags = r->buf[3];
	r->pos = 4;
	hdr->version = (flags & GS_VERSION) ? 2 : 1;
	if (flags & 0x80)
		return 0;				/* reserved for versions after 2 */
	hdr->has_z = (flags & GS_Z) != 0;
	hdr->has_m = (flags & GS_M) != 0;
	hdr->geodetic = (flags & GS_GEODETIC) != 0;
	hdr->ndims = 2 + hdr->has_z + hdr->has_m;
	if (hdr->version == 2 && (flags & GS2_EXTENDED) && !gs_skip(r, 8))
		return 0;
	if (flags & GS_BBOX)
	{
		boxfloats = hdr->geodetic ? 6 : 2 * (size_t) hdr->ndims;
		if (!gs_skip(r, boxfloats * 4))
			return 0;
	}
	return 1;
}

KdGsStatus
kd_gserialized_point(const uint8_t *buf, size_t len, KdGeoPoint *out)
{
	GsReader	r = {buf, buf ? len : 0, 0};
	uint32_t	type;
	uint32_t	npoints;

	if (!gs_header(&r, out) || !gs_u32(&r, &type))
		return KD_GS_BAD;
	out->type = (int) (type <= KD_GS_MAXTYPE ? type : 0);
	if (type == 0 || type > KD_GS_MAXTYPE)
		return KD_GS_BAD;
	if (type != KD_GS_POINTTYPE)
		return KD_GS_NOT_POINT;
	if (!gs_u32(&r, &npoints))
		return KD_GS_BAD;
	if (npoints == 0)
		return KD_GS_EMPTY;
	if (npoints != 1 || r.len - r.pos < sizeof(double) * (size_t) out->ndims)
		return KD_GS_BAD;
	memcpy(out->coords, r.buf + r.pos, sizeof(double) * (size_t) out->ndims);
	return KD_GS_OK;
}

/* Widen box by npoints points of ndims coordinates at the cursor. */
static int
gs_box_points(GsReader *r, uint32_t npoints, int ndims, KdGeoBox *box,
			  int *found)
{
	size_t		stride = sizeof(double) * (size_t) ndims;

	if ((r->len - r->pos) / stride < npoints)
		return 0;
	for (uint32_t i = 0; i < npoints; i++)
	{
		double		xy[2];

		memcpy(xy, r->buf + r->pos + i * stride, sizeof(xy));
		if (isnan(xy[0]) || isnan(xy[1]))
			continue;
		if (!*found)
		{
			box->xmin = box->xmax = xy[0];
			box->ymin = box->ymax = xy[1];
			*found = 1;
			continue;
		}
		box->xmin = fmin(box->xmin, xy[0]);
		box->xmax = fmax(box->xmax, xy[0]);
		box->ymin = fmin(box->ymin, xy[1]);
		box->ymax = fmax(box->ymax, xy[1]);
	}
	r->pos += npoints * stride;
	return 1;
}

/* Widen box by one geometry's data at the cursor (recursing into members). */
static int
gs_box_geom(GsReader *r, int ndims, int depth, KdGeoBox *box, int *found)
{
	uint32_t	type;
	uint32_t	n;

	if (depth > KD_GS_MAX_DEPTH || !gs_u32(r, &type) || !gs_u32(r, &n))
		return 0;
	switch (type)
	{
		case 1:					/* point */
		case 2:					/* line */
		case 8:					/* circular string */
		case 14:				/* triangle */
			return gs_box_points(r, n, ndims, box, found);
		case 3:					/* polygon */
			{
				size_t		counts = r->pos;

				if ((r->len - r->pos) / 4 < n || !gs_skip(r, (size_t) n * 4 + (n % 2) * 4))
					return 0;
				for (uint32_t i = 0; i < n; i++)
				{
					uint32_t	npoints;

					memcpy(&npoints, r->buf + counts + (size_t) i * 4, 4);
					if (!gs_box_points(r, npoints, ndims, box, found))
						return 0;
				}
				return 1;
			}
		case 4:
		case 5:
		case 6:
		case 7:
		case 9:
		case 10:
		case 11:
		case 12:
		case 13:
		case 15:				/* collections */
			for (uint32_t i = 0; i < n; i++)
				if (!gs_box_geom(r, ndims, depth + 1, box, found))
					return 0;
			return 1;
		default:
			return 0;
	}
}

KdGsStatus
kd_gserialized_box(const uint8_t *buf, size_t len, KdGeoBox *out)
{
	GsReader	r = {buf, buf ? len : 0, 0};
	KdGeoPoint	hdr;
	int			found = 0;

	memset(out, 0, sizeof(*out));
	if (!gs_header(&r, &hdr) || !gs_box_geom(&r, hdr.ndims, 0, out, &found))
		return KD_GS_BAD;
	return found ? KD_GS_OK : KD_GS_EMPTY;
}

KdGsStatus
kd_gserialized_stored_box(const uint8_t *buf, size_t len, float *box,
						  int *nfloats)
{
	KdGeoPoint	hdr;
	GsReader	r = {buf, buf ? len : 0, 0};
	size_t		start;

	*nfloats = 0;
	if (!gs_header(&r, &hdr))
		return KD_GS_BAD;
	if (!(r.buf[3] & GS_BBOX))
		return KD_GS_EMPTY;
	/* the box ends where the header left the cursor */
	*nfloats = hdr.geodetic ? 6 : 2 * hdr.ndims;
	start = r.pos - (size_t) *nfloats * 4;
	memcpy(box, r.buf + start, (size_t) *nfloats * 4);
	return KD_GS_OK;
}

const char *
kd_gserialized_type_name(int type)
{
	static const char *const names[] = {
		"Unknown", "Point", "LineString", "Polygon", "MultiPoint",
		"MultiLineString", "MultiPolygon", "GeometryCollection",
		"CircularString", "CompoundCurve", "CurvePolygon", "MultiCurve",
		"MultiSurface", "PolyhedralSurface", "Triangle", "Tin"
	};

	return (type >= 0 && type <= KD_GS_MAXTYPE) ? names[type] : "Unknown";
}
