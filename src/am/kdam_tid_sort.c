/*
 * kdam_tid_sort.c
 *	  Sorting (TID, node) pairs by TID on the engine's threads, for the
 *	  ranked trees (kdam_ranked.c) and the live rows of an index
 *	  (kdam_rows.c).
 *
 * The pairs are spread into KDAM_TID_BUCKETS buckets by ranges of their
 * heap block number (a count pass and a scatter pass, a block of pairs per
 * task), and each bucket is then sorted on its own by an LSD radix sort on
 * the bits in which its TIDs differ from its least: the buckets follow the
 * order of the blocks, so the buckets one after the other are the pairs in
 * order.  A serial radix sort of every pair was a large part of a first
 * call's reading of a large index.  Every pass keeps the order of equal
 * TIDs, so the result is the old stable sort's; a heap whose rows crowd a
 * few blocks puts most pairs in one bucket, which then costs what the
 * serial sort did.  The threads call nothing of PostgreSQL.
 */
#include "postgres.h"

#include "kdam.h"

/* The buckets the pairs are spread into. */
#define KDAM_TID_BUCKETS 1024

/* At least this many pairs a task of a pass; fewer pairs sort serially. */
#define KDAM_TID_BLOCK_MIN ((int64) 1 << 12)

/* Bits of a digit of a bucket's radix sort. */
#define KDAM_TID_DIGIT_BITS 11
#define KDAM_TID_DIGITS (1 << KDAM_TID_DIGIT_BITS)

/* What the threads of kdam_sort_tid_nodes share. */
typedef struct KdamTidSort
{
	KdamTidNode *in;			/* the pairs, then the buckets' scratch */
	KdamTidNode *out;			/* the pairs, bucket after bucket */
	int64		n;
	int64		nblocks;		/* tasks of a pass */
	uint64		maxblock;		/* the greatest heap block of any pair */
	uint64	   *blockmax;		/* per task: the greatest of its pairs */
	int64	   *at;				/* per task and bucket: its next place */
	int64		bucket[KDAM_TID_BUCKETS + 1];	/* where each bucket starts */
} KdamTidSort;

/* The bucket of a TID: its block's range. */
static inline int
tid_bucket(const KdamTidSort *s, uint64 tid)
{
	return (int) (((tid >> 16) * KDAM_TID_BUCKETS) / (s->maxblock + 1));
}

/* kde_parallel_for body: the greatest block of tasks begin .. end. */
static void
tid_max(void *arg, int64_t begin, int64_t end)
{
	KdamTidSort *s = arg;

	for (int64 b = begin; b < end; b++)
	{
		uint64		m = 0;

		for (int64 i = s->n * b / s->nblocks; i < s->n * (b + 1) / s->nblocks; i++)
			m = Max(m, s->in[i].tid >> 16);
		s->blockmax[b] = m;
	}
}

/*
 * With scatter false, count the pairs of task b by bucket; with it, put
 * them in their buckets' places.
 */
static void
tid_task(KdamTidSort *s, int64 b, bool scatter)
{
	int64	   *at = s->at + b * KDAM_TID_BUCKETS;

	for (int64 i = s->n * b / s->nblocks; i < s->n * (b + 1) / s->nblocks; i++)
	{
		int			k = tid_bucket(s, s->in[i].tid);

		if (scatter)
			s->out[at[k]++] = s->in[i];
		else
			at[k]++;
	}
}

/* kde_parallel_for body: count the pairs of tasks begin .. end by bucket. */
static void
tid_count(void *arg, int64_t begin, int64_t end)
{
	for (int64 b = begin; b < end; b++)
		tid_task(arg, b, false);
}

/* kde_parallel_for body: put the pairs of tasks begin .. end in place. */
static void
tid_scatter(void *arg, int64_t begin, int64_t end)
{
	for (int64 b = begin; b < end; b++)
		tid_task(arg, b, true);
}

/*
 * Sort the n pairs at in by TID, keeping the order of equal TIDs, with an
 * LSD radix sort on the bits in which their TIDs differ from the least of
 * them; out has room for n pairs.  Returns in or out, whichever holds the
 * sorted pairs.
 */
static KdamTidNode *
radix_sort_run(KdamTidNode *in, KdamTidNode *out, int64 n)
{
	uint64		lo = PG_UINT64_MAX;
	uint64		hi = 0;
	int64		count[KDAM_TID_DIGITS];

	for (int64 i = 0; i < n; i++)
	{
		lo = Min(lo, in[i].tid);
		hi = Max(hi, in[i].tid);
	}
	for (int shift = 0; n > 1 && shift < 64 && ((hi - lo) >> shift) != 0;
		 shift += KDAM_TID_DIGIT_BITS)
	{
		int64		sum = 0;
		KdamTidNode *swap;

		memset(count, 0, sizeof(count));
		for (int64 i = 0; i < n; i++)
			count[((in[i].tid - lo) >> shift) & (KDAM_TID_DIGITS - 1)]++;
		for (int d = 0; d < KDAM_TID_DIGITS; d++)
		{
			int64		c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (int64 i = 0; i < n; i++)
			out[count[((in[i].tid - lo) >> shift) & (KDAM_TID_DIGITS - 1)]++] = in[i];
		swap = in;
		in = out;
		out = swap;
	}
	return in;
}

/*
 * kde_parallel_for body: sort buckets begin .. end, each ending in its
 * place in the caller's array.
 */
static void
tid_sort_buckets(void *arg, int64_t begin, int64_t end)
{
	KdamTidSort *s = arg;

	for (int64 k = begin; k < end; k++)
	{
		int64		n = s->bucket[k + 1] - s->bucket[k];
		KdamTidNode *place = s->in + s->bucket[k];
		KdamTidNode *sorted = radix_sort_run(s->out + s->bucket[k], place, n);

		if (sorted != place)
			memcpy(place, sorted, sizeof(KdamTidNode) * n);
	}
}

/*
 * Sort n pairs by TID, keeping the order of equal TIDs; tmp has room for n
 * pairs.  The sorted pairs end in a.
 */
void
kdam_sort_tid_nodes(KdamTidNode *a, KdamTidNode *tmp, int64 n)
{
	KdamTidSort *s;
	int64		total = 0;

	if (n < 2 * KDAM_TID_BLOCK_MIN)
	{
		KdamTidNode *sorted = radix_sort_run(a, tmp, n);

		if (sorted != a)
			memcpy(a, sorted, sizeof(KdamTidNode) * n);
		return;
	}
	s = palloc0(sizeof(KdamTidSort));
	s->in = a;
	s->out = tmp;
	s->n = n;
	s->nblocks = Max(1, Min(4 * kdg_cpu_threads(), n / KDAM_TID_BLOCK_MIN));
	s->blockmax = palloc(sizeof(uint64) * s->nblocks);
	s->at = palloc0(sizeof(int64) * s->nblocks * KDAM_TID_BUCKETS);
	kdg_parallel_for(s->nblocks, 1, tid_max, s);
	for (int64 b = 0; b < s->nblocks; b++)
		s->maxblock = Max(s->maxblock, s->blockmax[b]);
	kdg_parallel_for(s->nblocks, 1, tid_count, s);
	/* each task's place in each bucket, buckets in order */
	for (int k = 0; k < KDAM_TID_BUCKETS; k++)
	{
		s->bucket[k] = total;
		for (int64 b = 0; b < s->nblocks; b++)
		{
			int64		count = s->at[b * KDAM_TID_BUCKETS + k];

			s->at[b * KDAM_TID_BUCKETS + k] = total;
			total += count;
		}
	}
	s->bucket[KDAM_TID_BUCKETS] = total;
	Assert(total == n);
	kdg_parallel_for(s->nblocks, 1, tid_scatter, s);
	kdg_parallel_for(KDAM_TID_BUCKETS, 1, tid_sort_buckets, s);
	pfree(s->at);
	pfree(s->blockmax);
	pfree(s);
}
