/*
 * test_gserialized.c
 *	  Tests of the PostGIS format decoder (src/geo/kd_gserialized.c), no
 *	  server needed: `make geo-check`.
 *
 * The vectors are values written by PostGIS 3.3 (read back from a heap
 * page, the varlena header removed) and version 1 values built by hand
 * from the documented layout.  Each is decoded and checked field by field;
 * then every prefix and thousands of bit-flipped copies are decoded, which
 * must never read past the value (build with -fsanitize=address to see
 * that), and every strict prefix of a point must be refused.  Prints one
 * line per failed check and ends with "N passed, N failed".
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kd_gserialized.h"

static int	passed;
static int	failed;

/* Count one check, printing it when it fails. */
static bool
check(bool ok, const char *fmt,...)
{
	va_list		ap;

	if (ok)
	{
		passed++;
		return true;
	}
	failed++;
	printf("FAILED - ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return false;
}

/* Decode hex into buf; returns the length. */
static size_t
unhex(const char *hex, uint8_t *buf)
{
	size_t		n = strlen(hex) / 2;

	for (size_t i = 0; i < n; i++)
	{
		unsigned int b;

		sscanf(hex + 2 * i, "%2x", &b);
		buf[i] = (uint8_t) b;
	}
	return n;
}

/* A value and what its point decodes to. */
typedef struct Vector
{
	const char *name;
	const char *hex;
	KdGsStatus	status;
	int			type;
	int32_t		srid;
	int			version;
	int			has_z;
	int			has_m;
	int			geodetic;
	double		coords[4];
	KdGsStatus	box_status;
	double		box[4];			/* xmin, ymin, xmax, ymax */
	int			stored_floats;	/* floats of the stored box, 0 for none */
} Vector;

static const Vector vectors[] = {
	{"SRID=4326;POINT(2.5 -3.5)",
		"0010e640010000000100000000000000000004400000000000000cc0",
	KD_GS_OK, 1, 4326, 2, 0, 0, 0, {2.5, -3.5}, KD_GS_OK, {2.5, -3.5, 2.5, -3.5}, 0},
	{"POINT Z (1 2 3)",
		"000000410100000001000000000000000000f03f00000000000000400000000000000840",
	KD_GS_OK, 1, 0, 2, 1, 0, 0, {1, 2, 3}, KD_GS_OK, {1, 2, 1, 2}, 0},
	{"SRID=3857;POINT M (1 2 4)",
		"000f11420100000001000000000000000000f03f00000000000000400000000000001040",
	KD_GS_OK, 1, 3857, 2, 0, 1, 0, {1, 2, 4}, KD_GS_OK, {1, 2, 1, 2}, 0},
	{"POINT ZM (1 2 3 4)",
		"000000430100000001000000000000000000f03f000000000000004000000000000008400000000000001040",
	KD_GS_OK, 1, 0, 2, 1, 1, 0, {1, 2, 3, 4}, KD_GS_OK, {1, 2, 1, 2}, 0},
	{"POINT EMPTY", "000000400100000000000000",
	KD_GS_EMPTY, 1, 0, 2, 0, 0, 0, {0}, KD_GS_EMPTY, {0}, 0},
	{"SRID=4326;POLYGON((0 0, 5 0, 5 6, 0 0))",
		"0010e644000000000000a040000000000000c0400300000001000000040000000000000000000000000000000000000000000000000000000000144000000000000000000000000000001440000000000000184000000000000000000000000000000000",
	KD_GS_NOT_POINT, 3, 4326, 2, 0, 0, 0, {0}, KD_GS_OK, {0, 0, 5, 6}, 4},
	{"GEOMETRYCOLLECTION(POINT(-1 -2), LINESTRING(10 20, 30 40))",
		"00000044000080bf0000f041000000c00000204207000000020000000100000001000000000000000000f0bf00000000000000c00200000002000000000000000000244000000000000034400000000000003e400000000000004440",
	KD_GS_NOT_POINT, 7, 0, 2, 0, 0, 0, {0}, KD_GS_OK, {-1, -2, 30, 40}, 4},
	{"SRID=999999;POINT(1 1)",
		"0f423f400100000001000000000000000000f03f000000000000f03f",
	KD_GS_OK, 1, 999999, 2, 0, 0, 0, {1, 1}, KD_GS_OK, {1, 1, 1, 1}, 0},
	{"a point with a stored box (cast from geography)",
		"0010e64400002041000020410000484200004842010000000100000000000000000024400000000000004940",
	KD_GS_OK, 1, 4326, 2, 0, 0, 0, {10, 50}, KD_GS_OK, {10, 50, 10, 50}, 4},
	{"geography SRID=4326;POINT(10 50)",
		"0010e648010000000100000000000000000024400000000000004940",
	KD_GS_OK, 1, 4326, 2, 0, 0, 1, {10, 50}, KD_GS_OK, {10, 50, 10, 50}, 0},
	{"geography _ST_Expand(POINT(10 50), 1000): a stored box on the unit sphere",
		"0010e64c5a03223f2318223f5445e43d91ebe43d1911443fe125443f010000000100000000000000000024400000000000004940",
	KD_GS_OK, 1, 4326, 2, 0, 0, 1, {10, 50}, KD_GS_OK, {10, 50, 10, 50}, 6},
	/* version 1 (PostGIS 2): no version bit, no extended flags */
	{"v1 SRID=4326;POINT(7 8)",
		"0010e6000100000001000000" "00000000000000000000000000000000",
	KD_GS_OK, 1, 4326, 1, 0, 0, 0, {0, 0}, KD_GS_OK, {0, 0, 0, 0}, 0},
	{"v1 POINT M (7 8 9) with a stored box",
		"000000060000e0400000e04000000041000000410000104100001041"
		"0100000001000000000000000000000000000000000000000000000000000000",
	KD_GS_OK, 1, 0, 1, 0, 1, 0, {0, 0, 0}, KD_GS_OK, {0, 0, 0, 0}, 6},
	/* version 2 with the extended flags word, SRID -2 (negative) */
	{"v2 SRID=-2 extended XY point",
		"1ffffe5000000000000000000100000001000000000000000000f03f0000000000000040",
	KD_GS_OK, 1, -2, 2, 0, 0, 0, {1, 2}, KD_GS_OK, {1, 2, 1, 2}, 0},
	/* refused: a reserved flag bit, type 0, type 16, a point of 2 points */
	{"reserved flag 0x80", "000000c0010000000100000000000000000000000000000000000000",
	KD_GS_BAD, 0, 0, 0, 0, 0, 0, {0}, KD_GS_BAD, {0}, 0},
	{"type 0", "00000040000000000100000000000000000000000000000000000000",
	KD_GS_BAD, 0, 0, 2, 0, 0, 0, {0}, KD_GS_BAD, {0}, 0},
	{"type 16", "00000040100000000100000000000000000000000000000000000000",
	KD_GS_BAD, 0, 0, 2, 0, 0, 0, {0}, KD_GS_BAD, {0}, 0},
	{"a point of two points",
		"00000040010000000200000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
	KD_GS_BAD, 1, 0, 2, 0, 0, 0, {0}, KD_GS_OK, {0, 0, 0, 0}, 0},
};

/* Patch the coordinates of the hand-built version 1 vectors. */
static size_t
vector_bytes(const Vector *v, uint8_t *buf)
{
	size_t		n = unhex(v->hex, buf);
	double		xy[3] = {7, 8, 9};

	if (strncmp(v->name, "v1 SRID", 7) == 0)
		memcpy(buf + 12, xy, 16);
	else if (strncmp(v->name, "v1 POINT M", 10) == 0)
		memcpy(buf + 4 + 24 + 8, xy, 24);
	return n;
}

/* The expected coordinates, with the version 1 vectors' patched ones. */
static void
vector_coords(const Vector *v, double *coords, double *box)
{
	memcpy(coords, v->coords, sizeof(v->coords));
	memcpy(box, v->box, sizeof(v->box));
	if (strncmp(v->name, "v1 ", 3) == 0)
	{
		coords[0] = box[0] = box[2] = 7;
		coords[1] = box[1] = box[3] = 8;
		coords[2] = 9;
	}
}

/* Decode one vector and check every field. */
static void
test_vector(const Vector *v)
{
	uint8_t		buf[512];
	size_t		n = vector_bytes(v, buf);
	KdGeoPoint	p;
	KdGeoBox	box;
	float		stored[8];
	int			nfloats;
	double		coords[4];
	double		ebox[4];
	KdGsStatus	st = kd_gserialized_point(buf, n, &p);

	vector_coords(v, coords, ebox);
	check(st == v->status, "%s: point status %d, expected %d", v->name, st, v->status);
	if (v->status != KD_GS_BAD)
	{
		check(p.type == v->type, "%s: type %d", v->name, p.type);
		check(p.srid == v->srid, "%s: SRID %d", v->name, p.srid);
		check(p.version == v->version, "%s: version %d", v->name, p.version);
		check(p.has_z == v->has_z && p.has_m == v->has_m && p.geodetic == v->geodetic &&
			  p.ndims == 2 + v->has_z + v->has_m,
			  "%s: flags z %d m %d geodetic %d ndims %d", v->name, p.has_z, p.has_m,
			  p.geodetic, p.ndims);
	}
	if (st == KD_GS_OK)
		check(memcmp(p.coords, coords, sizeof(double) * p.ndims) == 0,
			  "%s: coordinates %g %g %g %g", v->name,
			  p.coords[0], p.coords[1], p.coords[2], p.coords[3]);
	st = kd_gserialized_box(buf, n, &box);
	check(st == v->box_status, "%s: box status %d, expected %d", v->name, st, v->box_status);
	if (st == KD_GS_OK && v->box_status == KD_GS_OK)
		check(box.xmin == ebox[0] && box.ymin == ebox[1] &&
			  box.xmax == ebox[2] && box.ymax == ebox[3],
			  "%s: box %g %g %g %g", v->name, box.xmin, box.ymin, box.xmax, box.ymax);
	st = kd_gserialized_stored_box(buf, n, stored, &nfloats);
	if (v->status != KD_GS_BAD)
		check(st == (v->stored_floats ? KD_GS_OK : KD_GS_EMPTY) &&
			  nfloats == v->stored_floats,
			  "%s: stored box status %d with %d floats", v->name, st, nfloats);
}

/*
 * Decode every prefix of a vector (a strict prefix of a valid point is
 * refused) and bit-flipped copies; nothing may read past the value.
 */
static void
test_damage(const Vector *v, unsigned int *seed)
{
	uint8_t		buf[512];
	size_t		n = vector_bytes(v, buf);
	KdGeoPoint	p;
	KdGeoBox	box;
	float		stored[8];
	int			nfloats;
	bool		prefixes_ok = true;

	for (size_t len = 0; len <= n; len++)
	{
		uint8_t    *copy = malloc(len ? len : 1);
		KdGsStatus	st;

		memcpy(copy, buf, len);
		st = kd_gserialized_point(len ? copy : NULL, len, &p);
		if (len < n && v->status == KD_GS_OK && st == KD_GS_OK)
			prefixes_ok = false;
		kd_gserialized_box(copy, len, &box);
		kd_gserialized_stored_box(copy, len, stored, &nfloats);
		free(copy);
	}
	check(prefixes_ok, "%s: every strict prefix is refused", v->name);
	for (int i = 0; i < 2000; i++)
	{
		size_t		len = (size_t) rand_r(seed) % (n + 1);
		uint8_t    *copy = malloc(len ? len : 1);
		int			flips = 1 + rand_r(seed) % 3;

		memcpy(copy, buf, len);
		for (int f = 0; f < flips && len > 0; f++)
			copy[rand_r(seed) % len] ^= (uint8_t) (1u << (rand_r(seed) % 8));
		kd_gserialized_point(copy, len, &p);
		kd_gserialized_box(copy, len, &box);
		kd_gserialized_stored_box(copy, len, stored, &nfloats);
		free(copy);
	}
	/* the check is that none faulted: geo-check runs under the sanitizers */
}

/* Collections nested past the depth limit are refused, not recursed. */
static void
test_depth(void)
{
	uint8_t		buf[4 + 8 * 100];
	KdGeoBox	box;
	size_t		o = 4;

	memset(buf, 0, sizeof(buf));
	buf[3] = 0x40;
	for (int d = 0; d < 100; d++)
	{
		uint32_t	type = 7,
					n = 1;

		memcpy(buf + o, &type, 4);
		memcpy(buf + o + 4, &n, 4);
		o += 8;
	}
	check(kd_gserialized_box(buf, o, &box) == KD_GS_BAD,
		  "collections nested 100 deep are refused");
}

int
main(void)
{
	unsigned int seed = 20261122;

	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++)
	{
		test_vector(&vectors[i]);
		test_damage(&vectors[i], &seed);
	}
	test_depth();
	check(strcmp(kd_gserialized_type_name(6), "MultiPolygon") == 0 &&
		  strcmp(kd_gserialized_type_name(99), "Unknown") == 0,
		  "type names");
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
