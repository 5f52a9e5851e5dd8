/*
 * kd_grid.c
 *	  Building the uniform grid of kd_grid.h: the points' cells, and the
 *	  points sorted by cell with a radix sort of the keys, on the caller's
 *	  threads.
 *
 * A grid fits when every cell coordinate, offset by one, and its
 * neighbour's stay below 2^KD_GRID_BITS: for points spread over more than
 * about a million sides in one dimension it does not, and the caller
 * walks a tree instead.  A cell coordinate is floor((x - lo) / side); a
 * point within side (1 - 1e-6) of another in every coordinate is then in
 * the same or a neighbouring cell despite the division's rounding, so the
 * caller passes a side a little above its radius.  Each row of a cell's
 * neighbours is found with one cursor per row offset, moving forward as
 * the cells' keys do; a chunk of cells starts its cursors with a binary
 * search.  The sort is least significant digit first, each pass counting
 * and then placing fixed blocks of the keys in parallel.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kd_grid.h"

/*
 * the widest radix digit of the keys' sort: few enough buckets that the
 * writes stay cached, few enough passes for a plane's keys (two)
 */
#define KD_GRID_DIGIT 11

/* blocks of pairs a radix pass counts and places, each in its own order */
#define KD_GRID_BLOCKS 16

/* What the build's threads share. */
typedef struct GridFill
{
	const double *coords;		/* the points given */
	int			dim;
	const double *lo;
	double		side;
	const int  *shift;
	uint64_t   *key;			/* by point, then by slot */
	const uint64_t *cell_key;	/* by cell */
	const int64_t *cell_start;	/* by cell, and n after the last */
	KdGrid	   *grid;
} GridFill;

/* What the threads of one radix pass share. */
typedef struct RadixPass
{
	const uint64_t *key;
	const uint64_t *idx;
	uint64_t   *key2;
	uint64_t   *idx2;
	int64_t    *count;			/* by block, a digit's buckets each */
	int64_t		n;
	int			shift;
	uint64_t	mask;			/* the digit's bits */
} RadixPass;

/* Parallel body: the keys of points [begin, end), and their indexes. */
static void
keys_range(void *arg, int64_t begin, int64_t end)
{
	const GridFill *f = arg;
	const int	dim = f->dim;

	for (int64_t i = begin; i < end; i++)
	{
		uint64_t	k = 0;

		for (int j = 0; j < dim; j++)
		{
			uint64_t	c = (uint64_t) floor((f->coords[i * dim + j] - f->lo[j]) / f->side) + 1;

			k |= c << f->shift[j];
		}
		f->key[i] = k;
		f->grid->refs[i] = (uint64_t) i;
	}
}

/* Parallel body: the points of slots [begin, end), in place. */
static void
gather_range(void *arg, int64_t begin, int64_t end)
{
	const GridFill *f = arg;
	const int	dim = f->dim;
	KdGrid	   *g = f->grid;

	for (int64_t s = begin; s < end; s++)
		memcpy(g->coords + s * dim, f->coords + g->refs[s] * dim, sizeof(double) * dim);
}

/* Free a grid's arrays. */
void
kde_grid_free(KdGrid *grid)
{
	free(grid->coords);
	free(grid->refs);
	free(grid->slot_cell);
	free(grid->row_slots);
	memset(grid, 0, sizeof(KdGrid));
}

/* Parallel body: the digit's counts of blocks [begin, end). */
static void
radix_count(void *arg, int64_t begin, int64_t end)
{
	const RadixPass *p = arg;

	for (int64_t b = begin; b < end; b++)
	{
		int64_t    *count = p->count + b * (int64_t) (p->mask + 1);

		memset(count, 0, sizeof(int64_t) * (p->mask + 1));
		for (int64_t i = p->n * b / KD_GRID_BLOCKS;
			 i < p->n * (b + 1) / KD_GRID_BLOCKS; i++)
			count[(p->key[i] >> p->shift) & p->mask]++;
	}
}

/*
 * Parallel body: the pairs of blocks [begin, end) placed from their
 * offsets on.
 */
static void
radix_place(void *arg, int64_t begin, int64_t end)
{
	const RadixPass *p = arg;

	for (int64_t b = begin; b < end; b++)
	{
		int64_t    *count = p->count + b * (int64_t) (p->mask + 1);

		for (int64_t i = p->n * b / KD_GRID_BLOCKS;
			 i < p->n * (b + 1) / KD_GRID_BLOCKS; i++)
		{
			int64_t		to = count[(p->key[i] >> p->shift) & p->mask]++;

			p->key2[to] = p->key[i];
			p->idx2[to] = p->idx[i];
		}
	}
}

/*
 * Sort n (key, index) pairs by key, keys of bits bits, least significant
 * digit first, in as few passes of digits of equal width as
 * KD_GRID_DIGIT allows, between the arrays given (count: KD_GRID_BLOCKS
 * times 2^KD_GRID_DIGIT); the sorted pairs end in key and idx.  A pass
 * counts the blocks' digits and places their pairs on exec's threads; the
 * blocks' offsets follow one another in each bucket, so the sort is
 * stable.
 */
static KdStatus
radix_sort(uint64_t *key, uint64_t *idx, uint64_t *key2, uint64_t *idx2,
		   int64_t *count, int64_t n, int bits, KdExec *exec, KdError *err)
{
	const int	passes = (bits + KD_GRID_DIGIT - 1) / KD_GRID_DIGIT;
	const int	digit = (bits + passes - 1) / passes;
	const int64_t nbuckets = (int64_t) 1 << digit;
	KdStatus	st;

	for (int shift = 0; shift < bits; shift += digit)
	{
		RadixPass	p = {key, idx, key2, idx2, count, n, shift, nbuckets - 1};
		int64_t		at = 0;
		uint64_t   *t;

		if ((st = kde_parallel_for(exec, KD_GRID_BLOCKS, 1, radix_count, &p, err)) != KD_OK)
			return st;
		for (int64_t d = 0; d < nbuckets; d++)
			for (int64_t b = 0; b < KD_GRID_BLOCKS; b++)
			{
				int64_t		c = count[b * nbuckets + d];

				count[b * nbuckets + d] = at;
				at += c;
			}
		if ((st = kde_parallel_for(exec, KD_GRID_BLOCKS, 1, radix_place, &p, err)) != KD_OK)
			return st;
		t = key;
		key = key2;
		key2 = t;
		t = idx;
		idx = idx2;
		idx2 = t;
	}
	/* an odd number of passes left the pairs in the other arrays */
	if (passes % 2 == 1)
	{
		memcpy(key2, key, sizeof(uint64_t) * n);
		memcpy(idx2, idx, sizeof(uint64_t) * n);
	}
	return KD_OK;
}

/*
 * Parallel body: the rows of neighbours of cells [begin, end), each row's
 * cursors starting where a scan of the earlier cells would leave them.
 */
static void
rows_range(void *arg, int64_t begin, int64_t end)
{
	const GridFill *f = arg;
	KdGrid	   *g = f->grid;
	const uint64_t *cell_key = f->cell_key;
	const int64_t ncells = g->ncells;

	for (int w = 0; w < g->nrows; w++)
	{
		int64_t		dy = f->dim >= 2 ? w % 3 - 1 : 0;
		int64_t		dz = f->dim >= 3 ? w / 3 - 1 : 0;
		int64_t		step = dy * ((int64_t) 1 << f->shift[1]) +
			dz * ((int64_t) 1 << f->shift[2]);
		uint64_t	first = cell_key[begin] + (uint64_t) step - 1;
		int64_t		from = 0;
		int64_t		to = ncells;

		/* the first cell whose key is first or more */
		while (from < to)
		{
			int64_t		m = from + (to - from) / 2;

			if (cell_key[m] < first)
				from = m + 1;
			else
				to = m;
		}
		for (int64_t c = begin; c < end; c++)
		{
			uint64_t	mid = cell_key[c] + (uint64_t) step;

			while (from < ncells && cell_key[from] < mid - 1)
				from++;
			if (to < from)
				to = from;
			while (to < ncells && cell_key[to] <= mid + 1)
				to++;
			g->row_slots[(c * g->nrows + w) * 2] = (int32_t) f->cell_start[from];
			g->row_slots[(c * g->nrows + w) * 2 + 1] = (int32_t) f->cell_start[to];
		}
	}
}

/*
 * The grid of n points (coords, dim each, 1 <= dim <= 3) with cells of the
 * given side (> 0), into *grid, whose slots' refs are the points' indexes;
 * *fits false (and grid empty) when the points span too many cells.  The
 * keys and the points' places are made on exec's threads.
 */
KdStatus
kde_grid_build(const double *coords, int64_t n, int dim, double side,
			   KdGrid *grid, bool *fits, KdExec *exec, KdError *err)
{
	GridFill	fill;
	double		lo[3];
	double		hi[3];
	const double limit = (double) (((int64_t) 1 << KD_GRID_BITS) - 3);
	int			width[3] = {0, 0, 0};	/* bits of each cell coordinate */
	int			shift[3] = {0, 0, 0};	/* and where they go in a key */
	uint64_t   *key = NULL;
	uint64_t   *cell_key = NULL;
	int64_t    *cell_start = NULL;
	int64_t		ncells = 0;
	uint64_t   *key2 = NULL;
	uint64_t   *idx2 = NULL;
	int64_t    *count = NULL;
	KdStatus	st = KD_OK;

	memset(grid, 0, sizeof(KdGrid));
	*fits = false;
	if (dim < 1 || dim > 3 || !(side > 0) || n <= 0 || n > INT32_MAX)
		return KD_OK;
	for (int j = 0; j < dim; j++)
	{
		lo[j] = INFINITY;
		hi[j] = -INFINITY;
	}
	for (int64_t i = 0; i < n; i++)
		for (int j = 0; j < dim; j++)
		{
			double		x = coords[i * dim + j];

			lo[j] = x < lo[j] ? x : lo[j];
			hi[j] = x > hi[j] ? x : hi[j];
		}
	for (int j = 0; j < dim; j++)
	{
		double		cells = (hi[j] - lo[j]) / side;

		if (!(cells < limit))
			return KD_OK;
		/* cell coordinates 1 .. cells + 1, and a neighbour's up to cells + 2 */
		width[j] = 1;
		while (((uint64_t) 1 << width[j]) <= (uint64_t) cells + 2)
			width[j]++;
		shift[j] = j == 0 ? 0 : shift[j - 1] + width[j - 1];
	}

	grid->n = n;
	grid->dim = dim;
	grid->nrows = dim == 1 ? 1 : dim == 2 ? 3 : 9;
	grid->coords = malloc(sizeof(double) * dim * n);
	grid->refs = malloc(sizeof(uint64_t) * n);
	grid->slot_cell = malloc(sizeof(int32_t) * n);
	key = malloc(sizeof(uint64_t) * n);
	cell_key = malloc(sizeof(uint64_t) * n);
	cell_start = malloc(sizeof(int64_t) * (n + 1));
	key2 = malloc(sizeof(uint64_t) * n);
	idx2 = malloc(sizeof(uint64_t) * n);
	count = malloc(sizeof(int64_t) * KD_GRID_BLOCKS << KD_GRID_DIGIT);
	if (!grid->coords || !grid->refs || !grid->slot_cell || !key ||
		!cell_key || !cell_start || !key2 || !idx2 || !count)
		goto nomem;

	/* each point's key, and its index (refs), sorted by key */
	fill.coords = coords;
	fill.dim = dim;
	fill.lo = lo;
	fill.side = side;
	fill.shift = shift;
	fill.key = key;
	fill.grid = grid;
	if ((st = kde_parallel_for(exec, n, 65536, keys_range, &fill, err)) != KD_OK)
		goto fail;
	if ((st = radix_sort(key, grid->refs, key2, idx2, count, n,
						 shift[dim - 1] + width[dim - 1], exec, err)) != KD_OK)
		goto fail;

	/* the points by slot, and the cells */
	if ((st = kde_parallel_for(exec, n, 65536, gather_range, &fill, err)) != KD_OK)
		goto fail;
	for (int64_t s = 0; s < n; s++)
	{
		if (s == 0 || key[s] != key[s - 1])
		{
			cell_key[ncells] = key[s];
			cell_start[ncells++] = s;
		}
		grid->slot_cell[s] = (int32_t) (ncells - 1);
	}
	cell_start[ncells] = n;
	grid->ncells = ncells;

	/* each cell's rows of neighbours, as runs of slots */
	grid->row_slots = malloc(sizeof(int32_t) * 2 * grid->nrows * ncells);
	if (grid->row_slots == NULL)
		goto nomem;
	fill.cell_key = cell_key;
	fill.cell_start = cell_start;
	if ((st = kde_parallel_for(exec, ncells, 16384, rows_range, &fill, err)) != KD_OK)
		goto fail;
	*fits = true;
	goto done;
nomem:
	st = kde_set_error(err, KD_ERR_NOMEM, -1,
					   "out of memory for a grid of %lld points",
					   (long long) n);
fail:
	kde_grid_free(grid);
done:
	free(key);
	free(cell_key);
	free(cell_start);
	free(key2);
	free(idx2);
	free(count);
	return st;
}
