/*
 * fuzz_gserialized.c
 *	  libFuzzer harness for the GSERIALIZED reader of kdgpu_postgis
 *	  (src/geo/kd_gserialized.c): any byte string, and any point value
 *	  built from the input, must be read without a read past the buffer,
 *	  undefined behaviour or a wrong answer.
 *
 * Each input is used twice:
 *	 1. as raw value bytes for kd_gserialized_point and kd_gserialized_box,
 *		whose results must be consistent: OK only for a point with
 *		ndims = 2 + has_z + has_m, a box with xmin <= xmax and ymin <= ymax;
 *		the buffer is copied to an exactly sized allocation so that
 *		AddressSanitizer catches any read past its end;
 *	 2. as the fields of a well-formed point (version, flags, SRID,
 *		extended flags, a box, coordinates), serialized the way PostGIS
 *		writes it, which must read back exactly (SRID, flags, coordinates
 *		bit for bit), and every truncation of which must read as KD_GS_BAD.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geo/kd_gserialized.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Report a wrong answer and abort. */
static void
gs_fail(const char *what)
{
	fprintf(stderr, "fuzz_gserialized: %s\n", what);
	abort();
}

/* Read raw bytes and check that the answers agree with each other. */
static void
gs_raw(const uint8_t *data, size_t size)
{
	uint8_t    *copy = malloc(size ? size : 1);
	KdGeoPoint	p;
	KdGeoBox	b;
	KdGsStatus	ps,
				bs;

	memcpy(copy, data, size);
	ps = kd_gserialized_point(copy, size, &p);
	bs = kd_gserialized_box(copy, size, &b);
	if (ps == KD_GS_OK)
	{
		if (p.type != KD_GS_POINTTYPE || p.ndims != 2 + p.has_z + p.has_m)
			gs_fail("a point with inconsistent header fields");
		/* a point's box is the point itself, unless x or y is NaN */
		if (!isnan(p.coords[0]) && !isnan(p.coords[1]) &&
			(bs != KD_GS_OK || b.xmin != p.coords[0] || b.xmax != p.coords[0] ||
			 b.ymin != p.coords[1] || b.ymax != p.coords[1]))
			gs_fail("a point's box is not the point");
	}
	if (ps == KD_GS_EMPTY && bs != KD_GS_EMPTY)
		gs_fail("an empty point has a box");
	if (bs == KD_GS_OK && !(b.xmin <= b.xmax && b.ymin <= b.ymax))
		gs_fail("an inverted box");
	(void) kd_gserialized_type_name(p.type);
	free(copy);
}

/* Append n bytes to buf at *len. */
static void
put(uint8_t *buf, size_t *len, const void *src, size_t n)
{
	memcpy(buf + *len, src, n);
	*len += n;
}

/* Build a point value from the input's bytes, read it back, truncate it. */
static void
gs_point(const uint8_t *data, size_t size)
{
	uint8_t		buf[128];
	size_t		len = 0;
	uint8_t		sel;
	int			version,
				has_z,
				has_m,
				geodetic,
				has_box,
				extended,
				ndims;
	int32_t		srid;
	uint8_t		flags;
	uint32_t	type = KD_GS_POINTTYPE,
				npoints = 1;
	double		coords[4] = {0, 0, 0, 0};
	KdGeoPoint	p;

	if (size < 4)
		return;
	sel = data[0];
	version = (sel & 0x01) ? 2 : 1;
	has_z = (sel >> 1) & 1;
	has_m = (sel >> 2) & 1;
	geodetic = (sel >> 3) & 1;
	has_box = (sel >> 4) & 1;
	extended = version == 2 && ((sel >> 5) & 1);
	ndims = 2 + has_z + has_m;
	/* a 21-bit signed SRID */
	srid = (int32_t) (((uint32_t) data[1] << 16 | (uint32_t) data[2] << 8 | data[3]) & 0x1FFFFF);
	if (srid & 0x100000)
		srid -= 0x200000;
	for (int i = 0; i < ndims && 4 + (size_t) (i + 1) * 8 <= size; i++)
		memcpy(&coords[i], data + 4 + i * 8, 8);

	flags = (uint8_t) (has_z | has_m << 1 | has_box << 2 | geodetic << 3 |
					   (extended ? 0x10 : 0) | (version == 2 ? 0x40 : 0));
	buf[len++] = (uint8_t) ((srid >> 16) & 0x1F);
	buf[len++] = (uint8_t) (srid >> 8);
	buf[len++] = (uint8_t) srid;
	buf[len++] = flags;
	if (extended)
	{
		uint64_t	xflags = 0;

		put(buf, &len, &xflags, 8);
	}
	if (has_box)
	{
		float		box[8] = {0};

		put(buf, &len, box, sizeof(float) * (geodetic ? 6 : 2 * (size_t) ndims));
	}
	put(buf, &len, &type, 4);
	put(buf, &len, &npoints, 4);
	put(buf, &len, coords, sizeof(double) * (size_t) ndims);

	for (size_t cut = 0; cut <= len; cut++)
	{
		uint8_t    *copy = malloc(cut ? cut : 1);
		KdGsStatus	st;

		memcpy(copy, buf, cut);
		st = kd_gserialized_point(copy, cut, &p);
		free(copy);
		if (cut < len && st != KD_GS_BAD)
			gs_fail("a truncated point was read");
		if (cut == len && st != KD_GS_OK)
			gs_fail("a well-formed point was not read");
	}
	if (p.srid != srid || p.version != version || p.has_z != has_z ||
		p.has_m != has_m || p.geodetic != geodetic || p.ndims != ndims ||
		memcmp(p.coords, coords, sizeof(double) * (size_t) ndims) != 0)
		gs_fail("a point read back differently");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gs_raw(data, size);
	gs_point(data, size);
	return 0;
}
