/*
 * kdam_build_cells.c
 *	  The points of a kdgpu index build that outgrow maintenance_work_mem:
 *	  spilled to a file for each cell of the Z-order curve, and built into
 *	  a forest a group of consecutive cells at a time.
 *
 * The curve's box (kdam_build.c) is cut into 2^bits cells, the first bits
 * of a point's key after those that say where it lies against the box
 * (kdam_build_cell): up to 256 cells, fewer where their files' buffers
 * would take more than a quarter of maintenance_work_mem, and one more for
 * the points outside the box.  Each writer (the serial build, or each
 * participant of a parallel one) appends a point's record (ref, coords,
 * payload) to its file of the point's cell and counts it.  The leader then
 * takes the cells in curve order: consecutive cells whose points fit in
 * one tree together (in three quarters of maintenance_work_mem) make a
 * group, ended where the curve leaves the largest aligned block of cells
 * it can (group_end), so that each tree covers a compact part of space, as
 * tree_cut ends the sorted runs; a group's points are read from every
 * writer's files and built into a tree.  A cell too large for one tree,
 * and the points outside the box, go through a tuplesort along the curve
 * and are cut into trees as sorted runs (kdam_build_sorted_forest).
 *
 * Each point is so written once and read once, where an external sort
 * wrote and read it twice (its runs, then a parallel participant's merge
 * of them) and compared keys all along; the leader's memory stays within
 * maintenance_work_mem, serial or with workers.
 */
#include "postgres.h"

#include <fcntl.h>

#include "commands/progress.h"
#include "pgstat.h"
#include "port/pg_bitutils.h"
#include "utils/backend_progress.h"
#include "utils/memutils.h"

#include "kdam_build.h"

/* words of the largest record: the ref, coordinates or a box, the payload */
#define KDAM_RECORD_WORDS (1 + Max(KD_MAX_DIM, KDAM_OUTSIDE_COORDS) + INDEX_MAX_KEYS)

/* points' records read back at a time */
#define KDAM_READ_RECORDS 512

/*
 * Bits of cells for nparticipants writers of files whose buffers (a block
 * each: the cells', the outside cell's and the extra rows') fit in a
 * quarter of limit bytes.
 */
int
kdam_cells_bits(Size limit, int nparticipants)
{
	Size		files = limit / 4 / BLCKSZ / Max(nparticipants, 1);
	int			bits = 1;

	while (bits < KDAM_CELL_BITS && ((Size) 2 << bits) + 2 <= files)
		bits++;
	return bits;
}

/*
 * Make bs write its points to cells of bits bits: to temporary files, or
 * with fileset to the shared set's files of participant.
 */
void
kdam_cells_begin(KdamBuildState *bs, int bits, SharedFileSet *fileset,
				 int participant)
{
	KdamCells  *cells = palloc0(sizeof(KdamCells));

	cells->bits = bits;
	cells->participant = participant;
	cells->nparticipants = 1;
	cells->fileset = fileset;
	bs->cells = cells;
}

/* The shared set's name of participant's file of cell (-1: its extra rows). */
static void
file_name(char *name, int participant, int cell)
{
	if (cell < 0)
		snprintf(name, MAXPGPATH, "kdam.%d.extra", participant);
	else
		snprintf(name, MAXPGPATH, "kdam.%d.%d", participant, cell);
}

/* A new file for this writer's cell (-1: its extra rows). */
static BufFile *
create_file(KdamCells *cells, int cell)
{
	char		name[MAXPGPATH];

	if (cells->fileset == NULL)
		return BufFileCreateTemp(false);
	file_name(name, cells->participant, cell);
	return BufFileCreateFileSet(&cells->fileset->fs, name);
}

/* Write a point's record to the file of its cell. */
void
kdam_cells_put_point(KdamBuildState *bs, const double *coords, uint64 ref,
					 const uint64 *payload)
{
	KdamCells  *cells = bs->cells;
	int			cell = kdam_build_cell(bs, coords);
	uint64		rec[KDAM_RECORD_WORDS];

	rec[0] = ref;
	memcpy(rec + 1, coords, sizeof(double) * bs->dim);
	memcpy(rec + 1 + bs->dim, payload, sizeof(uint64) * bs->words);
	if (cells->files[cell] == NULL)
		cells->files[cell] = create_file(cells, cell);
	BufFileWrite(cells->files[cell], rec,
				 kdam_pending_record_size(bs->dim, bs->words));
	cells->counts[cell]++;
}

/*
 * Write a parallel participant's NULL or outside row (tag, its record of
 * size bytes) for the leader.
 */
void
kdam_cells_put_extra(KdamBuildState *bs, int tag, const void *rec, Size size)
{
	KdamCells  *cells = bs->cells;
	char		t = (char) tag;

	if (cells->extra == NULL)
		cells->extra = create_file(cells, -1);
	BufFileWrite(cells->extra, &t, 1);
	BufFileWrite(cells->extra, unconstify(void *, rec), size);
}

/*
 * Close this writer's files: a participant's stay in the shared set for
 * the leader, the serial build's temporary files go.
 */
void
kdam_cells_close(KdamBuildState *bs)
{
	KdamCells  *cells = bs->cells;

	for (int c = 0; c < KDAM_MAX_CELLS; c++)
		if (cells->files[c])
		{
			BufFileClose(cells->files[c]);
			cells->files[c] = NULL;
		}
	if (cells->extra)
	{
		BufFileClose(cells->extra);
		cells->extra = NULL;
	}
}

/* The points written to the cells. */
int64
kdam_cells_points(const KdamCells *cells)
{
	int64		n = 0;

	for (int c = 0; c < KDAM_MAX_CELLS; c++)
		n += cells->counts[c];
	return n;
}

/*
 * participant's file of cell (-1: its extra rows), to be read from its
 * start; NULL where it wrote none.
 */
static BufFile *
open_file(KdamCells *cells, int participant, int cell)
{
	char		name[MAXPGPATH];
	BufFile    *file;

	if (cells->fileset)
	{
		file_name(name, participant, cell);
		return BufFileOpenFileSet(&cells->fileset->fs, name, O_RDONLY, true);
	}
	file = cell < 0 ? cells->extra : cells->files[cell];
	if (file && BufFileSeek(file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind temporary file: %m")));
	return file;
}

/* Close a file open_file gave, once read: each is read once. */
static void
close_file(KdamCells *cells, BufFile *file, int cell)
{
	BufFileClose(file);
	if (cells->fileset == NULL)
		cells->files[cell] = NULL;
}

/* Read a record of size bytes into rec; false at the file's end. */
static bool
read_record(BufFile *file, void *rec, Size size)
{
	size_t		got = BufFileRead(file, rec, size);

	if (got == 0)
		return false;
	if (got != size)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read from temporary file: read only %zu of %zu bytes",
						got, size)));
	return true;
}

/*
 * Read up to KDAM_READ_RECORDS points' records of size bytes into buf;
 * returns how many, 0 at the file's end.
 */
static int
read_points(BufFile *file, uint64 *buf, Size size)
{
	size_t		got = BufFileRead(file, buf, size * KDAM_READ_RECORDS);

	if (got % size != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read from temporary file: read %zu bytes, not a multiple of %zu",
						got, size)));
	return (int) (got / size);
}

/*
 * Keep the NULL and outside rows that the parallel participants wrote
 * (kdam_build_keep_row).
 */
static void
read_extra(KdamBuildState *bs)
{
	KdamCells  *cells = bs->cells;
	uint64		rec[KDAM_RECORD_WORDS];
	char		tag;

	for (int p = 0; p < cells->nparticipants; p++)
	{
		BufFile    *file = open_file(cells, p, -1);

		if (file == NULL)
			continue;
		while (read_record(file, &tag, 1))
		{
			Size		size = kdam_pending_record_size(tag == KDAM_EXTRA_NULL ?
															0 : KDAM_OUTSIDE_COORDS,
															bs->words);

			if (!read_record(file, rec, size))
				elog(ERROR, "kdgpu build: a NULL or outside row's record is cut short");
			kdam_build_keep_row(bs, tag, rec, size);
		}
		BufFileClose(file);
	}
}

/*
 * Build one tree of the n points of cells [first, end), read from every
 * writer's files.
 */
static void
build_group(KdamBuildState *bs, int first, int end, int64 n,
			KdamForest *forest, uint64 *tree_id)
{
	KdamCells  *cells = bs->cells;
	Size		size = kdam_pending_record_size(bs->dim, bs->words);
	double	   *coords = palloc_extended(sizeof(double) * bs->dim * n,
										 MCXT_ALLOC_HUGE);
	uint64	   *refs = palloc_extended(sizeof(uint64) * n, MCXT_ALLOC_HUGE);
	uint64	   *payload = NULL;
	uint64	   *buf = palloc(size * KDAM_READ_RECORDS);
	int64		have = 0;
	KdamTreeEntry entry;

	if (bs->words > 0)
		payload = palloc_extended(sizeof(uint64) * bs->words * n,
								  MCXT_ALLOC_HUGE);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, KDAM_PHASE_READ);
	for (int cell = first; cell < end; cell++)
		for (int p = 0; p < cells->nparticipants; p++)
		{
			BufFile    *file = open_file(cells, p, cell);

			if (file == NULL)
				continue;
			for (int got; (got = read_points(file, buf, size)) > 0;)
			{
				if (got > n - have)
					elog(ERROR, "kdgpu build: cells hold more points than counted");
				for (int i = 0; i < got; i++, have++)
				{
					const uint64 *rec = buf + i * (size / sizeof(uint64));

					refs[have] = rec[0];
					memcpy(coords + have * bs->dim, rec + 1, sizeof(double) * bs->dim);
					if (payload)
						memcpy(payload + have * bs->words, rec + 1 + bs->dim,
							   sizeof(uint64) * bs->words);
				}
			}
			close_file(cells, file, cell);
		}
	if (have != n)
		elog(ERROR, "kdgpu build: cells hold fewer points than counted");
	kdam_write_new_tree(bs->index, coords, refs, payload, bs->words, n,
						bs->dim, true, (*tree_id)++, &entry);
	kdam_forest_add(forest, &entry);
	bs->ndone += n;
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, bs->ndone);
	pfree(coords);
	pfree(refs);
	pfree(buf);
	if (payload)
		pfree(payload);
}

/*
 * Build the points of cell, too many for one tree or outside the box, as
 * sorted runs along the curve.
 */
static void
build_sorted_cell(KdamBuildState *bs, int cell, KdamForest *forest,
				  uint64 *tree_id)
{
	KdamCells  *cells = bs->cells;
	Size		size = kdam_pending_record_size(bs->dim, bs->words);
	uint64	   *buf = palloc(size * KDAM_READ_RECORDS);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, KDAM_PHASE_SORT);
	kdam_build_sort_begin(bs);
	for (int p = 0; p < cells->nparticipants; p++)
	{
		BufFile    *file = open_file(cells, p, cell);

		if (file == NULL)
			continue;
		for (int got; (got = read_points(file, buf, size)) > 0;)
			for (int i = 0; i < got; i++)
				kdam_build_sort_put(bs, (const char *) (buf + i * (size / sizeof(uint64))));
		close_file(cells, file, cell);
	}
	pfree(buf);
	kdam_build_sorted_forest(bs, cells->counts[cell], forest, tree_id);
}

/*
 * Where to end a group of the cells [first, end) that fit in one tree,
 * ninside cells in all: at end where the next cell would not fit in any
 * group or none follows, else where the curve leaves the largest aligned
 * block of cells (the cell number with the most trailing zero bits), the
 * last such place when several tie.
 */
static int
group_end(const KdamCells *cells, int first, int end, int64 run)
{
	int			best = end;

	if (end == (1 << cells->bits) || cells->counts[end] > run)
		return end;
	for (int c = end - 1; c > first; c--)
		if (pg_rightmost_one_pos32(c) > pg_rightmost_one_pos32(best))
			best = c;
	return best;
}

/*
 * Build the forest of the points in the cells (the leader, once every
 * writer has closed its files), and keep the participants' NULL and
 * outside rows.
 */
void
kdam_cells_build_forest(KdamBuildState *bs, KdamForest *forest, uint64 *tree_id)
{
	KdamCells  *cells = bs->cells;
	int			ninside = 1 << cells->bits;
	Size		per = kdam_build_memory(1, bs->dim, bs->words);
	int64		run = Max((int64) ((bs->limit - bs->limit / 4) / per), KDAM_MIN_RUN);

	if (cells->fileset)
		read_extra(bs);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL,
								 kdam_cells_points(cells));
	for (int first = 0; first < ninside;)
	{
		int			end = first;
		int64		n = 0;

		if (cells->counts[first] == 0)
		{
			first++;
			continue;
		}
		if (cells->counts[first] > run)
		{
			build_sorted_cell(bs, first, forest, tree_id);
			first++;
			continue;
		}
		while (end < ninside && cells->counts[end] <= run - n)
			n += cells->counts[end++];
		end = group_end(cells, first, end, run);
		n = 0;
		for (int c = first; c < end; c++)
			n += cells->counts[c];
		build_group(bs, first, end, n, forest, tree_id);
		first = end;
	}
	if (cells->counts[ninside] > 0)
		build_sorted_cell(bs, ninside, forest, tree_id);
	if (cells->fileset == NULL)
		kdam_cells_close(bs);
}
