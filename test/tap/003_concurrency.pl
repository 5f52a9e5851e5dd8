# Concurrent writers, readers and VACUUM on a kdgpu index (pgbench, bounded
# in time).  Every reader compares the index's kNN answer with a sequential
# scan's in the same REPEATABLE READ snapshot and fails on any difference;
# afterwards the index passes kd_index_check and agrees with a sequential
# scan everywhere.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', 'autovacuum_naptime = 1s');
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION kdgpu;
	CREATE TABLE pts (id serial PRIMARY KEY, p point);
	INSERT INTO pts (p) SELECT point(random() * 100, random() * 100) FROM generate_series(1, 20000);
	-- duplicates and ties
	INSERT INTO pts (p) SELECT point(floor(random() * 10) * 10, floor(random() * 10) * 10) FROM generate_series(1, 2000);
	CREATE INDEX pts_p ON pts USING kdgpu (p);
	-- raises an error unless the index and a sequential scan agree on the
	-- 20 nearest rows to q, within the caller's snapshot
	CREATE FUNCTION knn_agrees(q point) RETURNS boolean LANGUAGE plpgsql AS $$
	DECLARE a tid[]; b tid[];
	BEGIN
		PERFORM set_config('enable_seqscan', 'off', true);
		EXECUTE 'SELECT array_agg(c) FROM (SELECT ctid c FROM pts ORDER BY p <-> $1 LIMIT 20) s'
			INTO a USING q;
		PERFORM set_config('enable_seqscan', 'on', true);
		PERFORM set_config('enable_indexscan', 'off', true);
		PERFORM set_config('enable_bitmapscan', 'off', true);
		EXECUTE 'SELECT array_agg(c) FROM (SELECT ctid c FROM pts WHERE p IS NOT NULL
				 ORDER BY p <-> $1, ctid LIMIT 20) s' INTO b USING q;
		PERFORM set_config('enable_indexscan', 'on', true);
		PERFORM set_config('enable_bitmapscan', 'on', true);
		IF a IS DISTINCT FROM b THEN
			RAISE EXCEPTION 'kNN of % differs: index % sequential %', q, a, b;
		END IF;
		RETURN true;
	END $$;
});

# inserters alone, eight at once: they spread over the insert lanes (none
# waits on another's lock), every row reaches the index, and flushes turn
# the lanes into trees as they fill (fewer than KDAM_FLUSH_ROWS plus a
# lane's count interval per lane pending, kdam_lanes.c)
$node->pgbench(
	'--no-vacuum --client=8 --jobs=4 --transactions=400',
	0,
	[qr{processed: 3200/3200}],
	[qr{^$}],
	'eight concurrent inserters',
	{
		'insert' => q{
\set x random(0, 100)
\set y random(0, 100)
INSERT INTO pts (p) VALUES (point(:x + random(), :y + random()));
},
	});
is($node->safe_psql('postgres', q{
	SELECT s.tree_rows + s.pending_rows = (SELECT count(*) FROM pts WHERE p IS NOT NULL),
	       s.pending_rows < 8 * 128 + 8 * 128, kd_index_check('pts_p')
	  FROM kd_index_stats('pts_p') s}), 't|t|t',
	'every concurrently inserted row is in the index, few still pending');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT point(x * 7.7 % 100, x * 3.1 % 100) q FROM generate_series(1, 100) x) s
	 WHERE NOT knn_agrees(q)}), '0', 'kNN after concurrent inserts equals a sequential scan');

my $secs = 15;
$node->pgbench(
	"--no-vacuum --client=6 --jobs=3 --time=$secs",
	0,
	[qr{processed: [1-9]}],
	[qr{^$}],
	'writers, readers and VACUUM at once',
	{
		'writer@3' => q{
\set id random(1, 30000)
\set x random(0, 100)
\set y random(0, 100)
INSERT INTO pts (p) VALUES (point(:x + random(), :y));
UPDATE pts SET p = point(:x, :y + random()) WHERE id = :id;
DELETE FROM pts WHERE id = :id + 1;
},
		'reader@3' => q{
\set x random(0, 100)
\set y random(0, 100)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT knn_agrees(point(:x, :y));
SELECT count(*) FROM pts WHERE p <@ box(point(:x, :y), point(:x + 5, :y + 5));
COMMIT;
},
		'vacuum@1' => q{
VACUUM pts;
\sleep 200 ms
},
	});

is($node->safe_psql('postgres', "SELECT kd_index_check('pts_p')"), 't',
	'index sound after the concurrent run');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT point(x * 7.7 % 100, x * 3.1 % 100) q FROM generate_series(1, 200) x) s
	 WHERE NOT knn_agrees(q)}), '0', 'kNN everywhere equals a sequential scan afterwards');
$node->safe_psql('postgres', 'VACUUM pts');
is($node->safe_psql('postgres', "SELECT kd_index_check('pts_p')"), 't',
	'index sound after a final VACUUM');
my $boxes = q{SELECT string_agg(n::text, ',') FROM
	(SELECT (SELECT count(*) FROM pts WHERE p <@ box(point(x, x), point(x + 7, x + 3))) n
	   FROM generate_series(0, 90, 10) x) s};
my $by_index = $node->safe_psql('postgres', "SET enable_seqscan = off; $boxes");
my $by_seq = $node->safe_psql('postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; $boxes");
is($by_index, $by_seq, 'box counts equal a sequential scan');

$node->stop;
done_testing();
