/*
 * table_keys.c
 *	  The check that no two rows a call read have the same key.
 *
 * A key column must identify the row (table.c).  Rows taken from a leaf's
 * kdgpu index are vouched for by a unique index on the key; rows read
 * otherwise, and the points a coordinator gathers from its shards, are
 * checked here.  The keys are spread into KD_KEY_BUCKETS buckets by a hash
 * of the key, on the engine's threads (a count pass, then a scatter pass
 * into one array), and each bucket is then sorted and scanned on its own:
 * equal keys share a bucket, and the buckets are small enough to sort in
 * cache, where sorting all the keys at once ended in merges of a few
 * threads.  Of several keys held twice, the smallest is the one reported,
 * as a sort of all the keys would find it.
 */
#include "postgres.h"

#include "utils/lsyscache.h"

#include "shard/shard.h"

/* The buckets the keys are spread into (a power of two). */
#define KD_KEY_BUCKETS 1024

/* At least this many rows a block, a thread's share of a pass. */
#define KD_KEY_BLOCK_MIN ((int64) 1 << 16)

/*
 * kdg_sort_keys(keys, n): sort keys ascending, the comparison inlined
 * (lib/sort_template.h).
 */
#define ST_SORT kdg_sort_keys
#define ST_ELEMENT_TYPE uint64
#define ST_COMPARE(a, b) ((*(a) > *(b)) - (*(a) < *(b)))
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/*
 * What the threads of kdg_check_keys_unique share.  The rows are taken in
 * nblocks blocks of the table's row numbers (leaf after leaf, a block may
 * span leaves), a few per thread whatever the number of leaves.
 */
typedef struct KdKeyCheck
{
	const KdTable *t;
	const int64 *first;			/* each leaf's first row number */
	int64		n;
	int64		nblocks;
	int64	   *at;				/* per block and bucket: its next place */
	uint64	   *keys;			/* the keys, bucket after bucket */
	int64		bucket[KD_KEY_BUCKETS + 1]; /* where each bucket starts */
	bool		dup[KD_KEY_BUCKETS];	/* the bucket holds a key twice */
	uint64		least[KD_KEY_BUCKETS];	/* and the least such key */
} KdKeyCheck;

/* The bucket of a key: the top bits of a mix of all its bits. */
static inline int
kdg_key_bucket(uint64 key)
{
	key ^= key >> 33;
	key *= UINT64CONST(0xff51afd7ed558ccd);
	key ^= key >> 33;
	return (int) (key >> (64 - 10));
}

StaticAssertDecl(KD_KEY_BUCKETS == 1 << 10, "kdg_key_bucket takes 10 bits");

/*
 * With scatter false, count the keys of block b by bucket; with it, put
 * them in their buckets' places.
 */
static void
kdg_keys_block(KdKeyCheck *c, int64 b, bool scatter)
{
	int64	   *at = c->at + b * KD_KEY_BUCKETS;
	int64		g = c->n * b / c->nblocks;
	int64		end = c->n * (b + 1) / c->nblocks;
	int			p = 0;

	for (; g < end; g++)
	{
		uint64		key;
		int			k;

		while (g >= c->first[p + 1])
			p++;
		key = kdg_row_ref(&c->t->parts[p], g - c->first[p]);
		k = kdg_key_bucket(key);
		if (scatter)
			c->keys[at[k]++] = key;
		else
			at[k]++;
	}
}

/* kde_parallel_for body: count the keys of blocks begin .. end by bucket. */
static void
kdg_keys_count(void *arg, int64_t begin, int64_t end)
{
	for (int64 b = begin; b < end; b++)
		kdg_keys_block(arg, b, false);
}

/* kde_parallel_for body: put the keys of blocks begin .. end in their buckets. */
static void
kdg_keys_scatter(void *arg, int64_t begin, int64_t end)
{
	for (int64 b = begin; b < end; b++)
		kdg_keys_block(arg, b, true);
}

/* kde_parallel_for body: sort buckets begin .. end and note a key held twice. */
static void
kdg_keys_sort(void *arg, int64_t begin, int64_t end)
{
	KdKeyCheck *c = arg;

	for (int64 k = begin; k < end; k++)
	{
		uint64	   *keys = c->keys + c->bucket[k];
		int64		n = c->bucket[k + 1] - c->bucket[k];

		kdg_sort_keys(keys, n);
		for (int64 i = 1; i < n; i++)
			if (keys[i] == keys[i - 1])
			{
				c->dup[k] = true;
				c->least[k] = keys[i];
				break;
			}
	}
}

/* Error unless no two rows read have the same key. */
void
kdg_check_keys_unique(const KdTable *t)
{
	int64		n = t->head.n;
	int64		nblocks;
	int64		total = 0;
	int64	   *first;
	KdKeyCheck *c;
	int			worst = -1;

	/* rows taken from an index: a unique index on the key vouches */
	if (t->head.keyattnum == InvalidAttrNumber || n < 2 || t->head.index_rows)
		return;
	first = palloc(sizeof(int64) * (t->nparts + 1));
	first[0] = 0;
	for (int p = 0; p < t->nparts; p++)
		first[p + 1] = first[p] + t->parts[p].n;
	Assert(first[t->nparts] == n);
	nblocks = Max(1, Min(4 * kdg_cpu_threads(), n / KD_KEY_BLOCK_MIN));
	c = palloc0(sizeof(KdKeyCheck));
	c->t = t;
	c->first = first;
	c->n = n;
	c->nblocks = nblocks;
	c->at = palloc0_array(int64, nblocks * KD_KEY_BUCKETS);
	kdg_parallel_for(nblocks, 1, kdg_keys_count, c);
	/* each block's place in each bucket, buckets in order */
	for (int k = 0; k < KD_KEY_BUCKETS; k++)
	{
		c->bucket[k] = total;
		for (int64 b = 0; b < nblocks; b++)
		{
			int64		count = c->at[b * KD_KEY_BUCKETS + k];

			c->at[b * KD_KEY_BUCKETS + k] = total;
			total += count;
		}
	}
	c->bucket[KD_KEY_BUCKETS] = total;
	Assert(total == n);
	c->keys = kdg_alloc_large(CurrentMemoryContext, sizeof(uint64) * total, false);
	kdg_parallel_for(nblocks, 1, kdg_keys_scatter, c);
	kdg_parallel_for(KD_KEY_BUCKETS, 1, kdg_keys_sort, c);
	for (int k = 0; k < KD_KEY_BUCKETS; k++)
		if (c->dup[k] && (worst < 0 || c->least[k] < c->least[worst]))
			worst = k;
	if (worst >= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("key column \"%s\" of table \"%s\" has the value " INT64_FORMAT " in more than one row",
						t->head.keyname, get_rel_name(t->head.relid),
						kdg_ref_to_key(c->least[worst])),
				 errhint("A key column must identify the row, as a primary key does.")));
	pfree(c->keys);
	pfree(c->at);
	pfree(c);
	pfree(first);
}
