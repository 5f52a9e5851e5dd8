/*
 * remote_params.c
 *	  The parameters of a call to a foreign partition's server: arguments
 *	  in text, and query points as one array in the form that keeps every
 *	  coordinate's bits.
 *
 * A parameter is sent in text, cast to its type there (kdg_remote_param).
 * Query points go as one array parameter (kdg_remote_points): in binary
 * (the array's send format) for point and float8[], and as hex EWKB text
 * for PostGIS points, which the server parses without rounding; so a
 * coordinate never passes through decimal.  Sizes are checked before an
 * array is made, so that a large batch fails with a clear error rather
 * than an allocation failure.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "port/pg_bswap.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "shard/shard.h"

/*
 * Add value, of type, to params as text, and return how the call names it:
 * $n cast to the type, named with its schema.
 */
char *
kdg_remote_param(KdParams *params, Datum value, Oid type)
{
	Oid			output;
	bool		varlena;
	char	   *text;

	if (params->n >= KD_MAX_PARAMS)
		elog(ERROR, "too many parameters for a remote call");
	getTypeOutputInfo(type, &output, &varlena);
	text = OidOutputFunctionCall(output, value);
	params->values[params->n] = text;
	params->lengths[params->n] = strlen(text);
	params->formats[params->n] = 0;
	params->n++;
	return psprintf("$%d::%s", params->n, format_type_be_qualified(type));
}

/*
 * Error unless nq query points of bytes each fit one parameter of a remote
 * call.
 */
static void
check_points_size(int64 nq, Size bytes)
{
	if ((Size) nq * bytes >= MaxAllocSize - 64)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many query points for one call of a foreign partition: %lld",
						(long long) nq)));
}

/* Append v's bytes, little end first, as hex digits. */
static void
append_hex_le(StringInfo buf, uint64 v, int bytes)
{
	static const char digits[] = "0123456789ABCDEF";

	for (int i = 0; i < bytes; i++, v >>= 8)
	{
		appendStringInfoChar(buf, digits[(v >> 4) & 0xF]);
		appendStringInfoChar(buf, digits[v & 0xF]);
	}
}

/*
 * Add nq PostGIS points, given by their full coordinates, to params as the
 * text of an array of src's column type (its elements separated by the
 * type's delimiter), each point in hex EWKB, which PostGIS reads back bit
 * for bit: x and y, and z and m where the source's points have them, for
 * geometry; longitude and latitude (the extra coordinates) for geography;
 * with the source's SRID.  Returns how the call names it.
 */
static char *
remote_postgis_points(KdParams *params, const KdSource *src,
					  const double *coords, int64 nq)
{
	StringInfoData buf;
	int			full = src->dim + src->extra;
	bool		geography = src->type == KD_TYPE_GEOGRAPHY;
	int			zm = src->type == KD_TYPE_GEOMETRY ? src->info.zm : 0;
	int			first = geography ? src->dim : 0;
	int			ncoords = geography ? 2 : src->dim;
	/* EWKB's point type with its Z, M and SRID flags */
	uint32		wkbtype = 1 |
		((zm & KD_HAS_Z) ? 0x80000000 : 0) |
		((zm & KD_HAS_M) ? 0x40000000 : 0) |
		(src->info.srid != 0 ? 0x20000000 : 0);
	Oid			type = get_atttype(src->relid, src->attnum);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	char		delim;			/* geometry's is ':', not ',' */
	Oid			typioparam;
	Oid			typinput;

	get_type_io_data(type, IOFunc_input, &typlen, &typbyval, &typalign,
					 &delim, &typioparam, &typinput);
	/* hex digits of the byte order, type, SRID and coordinates; a delimiter */
	check_points_size(nq, 2 * (9 + 8 * ncoords) + 1);
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int64 i = 0; i < nq; i++)
	{
		const double *c = coords + i * full + first;

		if (i > 0)
			appendStringInfoChar(&buf, delim);
		append_hex_le(&buf, 1, 1);	/* little-endian */
		append_hex_le(&buf, wkbtype, 4);
		if (src->info.srid != 0)
			append_hex_le(&buf, (uint32) src->info.srid, 4);
		for (int d = 0; d < ncoords; d++)
		{
			uint64		bits;

			memcpy(&bits, &c[d], sizeof(bits));
			append_hex_le(&buf, bits, 8);
		}
	}
	appendStringInfoChar(&buf, '}');
	params->values[params->n] = buf.data;
	params->lengths[params->n] = buf.len;
	params->formats[params->n] = 0;
	params->n++;
	return psprintf("$%d::%s", params->n,
					format_type_be_qualified(get_array_type(type)));
}

/*
 * Add nq points, given by their full coordinates, to params as an array of
 * src's column's point array type, every coordinate's bits kept: point[],
 * or a float8[] with a row per point, in binary; PostGIS points as text
 * (remote_postgis_points).  Returns how the call names it.
 */
char *
kdg_remote_points(KdParams *params, const KdSource *src, const double *coords,
				  int64 nq)
{
	StringInfoData buf;
	int			full = src->dim + src->extra;
	bool		point = src->type == KD_TYPE_POINT;

	if (params->n >= KD_MAX_PARAMS)
		elog(ERROR, "too many parameters for a remote call");
	if (kdg_type_is_postgis(src->type))
		return remote_postgis_points(params, src, coords, nq);
	check_points_size(nq, point ? 20 : 12 * src->dim);
	/* array_send's format: ndim, flags, element type, dimensions, elements */
	initStringInfo(&buf);
	pq_sendint32(&buf, nq == 0 ? 0 : point ? 1 : 2);
	pq_sendint32(&buf, 0);
	pq_sendint32(&buf, point ? POINTOID : FLOAT8OID);
	if (nq > 0)
	{
		pq_sendint32(&buf, (int32) nq);
		pq_sendint32(&buf, 1);
		if (!point)
		{
			pq_sendint32(&buf, src->dim);
			pq_sendint32(&buf, 1);
		}
	}
	for (int64 i = 0; i < nq; i++)
	{
		const double *c = coords + i * full;

		if (point)
			pq_sendint32(&buf, 2 * sizeof(double));
		for (int d = 0; d < src->dim; d++)
		{
			if (!point)
				pq_sendint32(&buf, sizeof(double));
			pq_sendfloat8(&buf, c[d]);
		}
	}
	params->values[params->n] = buf.data;
	params->lengths[params->n] = buf.len;
	params->formats[params->n] = 1;
	params->n++;
	return psprintf("$%d::%s", params->n,
					point ? "pg_catalog.point[]" : "pg_catalog.float8[]");
}
