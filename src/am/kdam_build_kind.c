/*
 * kdam_build_kind.c
 *	  The kind of point a new index holds (its dimension, and a PostGIS
 *	  column's SRID and Z/M flags), chosen before CREATE INDEX reads the
 *	  table: the kind most of a sample of its rows have.
 *
 * An index's trees hold points of one kind; rows of any other kind are
 * kept outside the trees and searched one by one.  Taking the kind of the
 * first row read would let one stray row (a POINT Z inserted first into a
 * table of 2-D points) send every other row outside.  So the build first
 * reads a sample of the table, runs of KDAM_KIND_RUN_BLOCKS blocks spread
 * evenly over all of it, and fixes the kind that most of the sample's
 * points have (ties: the kind seen first).  Rows of a column whose typmod
 * fixes the SRID and the dimensions all have one kind, so the sample finds
 * it whatever it reads.  A sample with no point leaves the kind to the
 * first point the build reads, as an insert into an empty index does.
 */
#include "postgres.h"

#include "access/tableam.h"
#include "catalog/index.h"

#include "kdam_build.h"

/* the sample: this many runs of this many blocks, at most */
#define KDAM_KIND_RUNS			64
#define KDAM_KIND_RUN_BLOCKS	4
/* distinct kinds counted; rarer later ones are not */
#define KDAM_KIND_SLOTS			16

/* One kind of point and how many of the sample's points have it. */
typedef struct KdamKindCount
{
	int			dim;
	int32		srid;
	int32		zm;
	int64		count;
} KdamKindCount;

/* The sample's kinds, in the order first seen. */
typedef struct KdamKindSample
{
	KdPointType type;
	int			nkinds;
	KdamKindCount kinds[KDAM_KIND_SLOTS];
} KdamKindSample;

/* table_index_build_range_scan callback: count a row's kind of point. */
static void
kind_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			  bool tupleIsAlive, void *state)
{
	KdamKindSample *s = state;
	double		coords[KD_MAX_DIM + 2];
	KdPointInfo info;
	int			dim;
	int			i;

	if (isnull[0] ||
		kdg_datum_classify(s->type, values[0], coords, &info, &dim) != KD_VALUE_POINT)
		return;
	if (!kdg_type_is_postgis(s->type))
		info.srid = info.zm = 0;
	for (i = 0; i < s->nkinds; i++)
		if (s->kinds[i].dim == dim && s->kinds[i].srid == info.srid &&
			s->kinds[i].zm == info.zm)
			break;
	if (i == s->nkinds)
	{
		if (i == KDAM_KIND_SLOTS)
			return;
		s->kinds[i].dim = dim;
		s->kinds[i].srid = info.srid;
		s->kinds[i].zm = info.zm;
		s->nkinds++;
	}
	s->kinds[i].count++;
}

/*
 * Fix bs's kind of point (dim, srid, zm) to the one most of a sample of
 * heap's rows have; leave it unset (dim 0) when the sample holds no point.
 */
void
kdam_build_choose_kind(Relation heap, Relation index, IndexInfo *indexInfo,
					   KdamBuildState *bs)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(heap);
	int			nruns = Min(KDAM_KIND_RUNS,
							(nblocks + KDAM_KIND_RUN_BLOCKS - 1) / KDAM_KIND_RUN_BLOCKS);
	KdamKindSample sample;
	const KdamKindCount *best = NULL;

	memset(&sample, 0, sizeof(sample));
	sample.type = bs->type;
	for (int r = 0; r < nruns; r++)
	{
		BlockNumber start = (BlockNumber) ((uint64) nblocks * r / nruns);

		table_index_build_range_scan(heap, index, indexInfo, false, false, false,
									 start, Min(KDAM_KIND_RUN_BLOCKS, nblocks - start),
									 kind_callback, &sample, NULL);
	}
	for (int i = 0; i < sample.nkinds; i++)
		if (best == NULL || sample.kinds[i].count > best->count)
			best = &sample.kinds[i];
	if (best == NULL)
		return;
	bs->dim = best->dim;
	bs->srid = best->srid;
	bs->zm = best->zm;
}
