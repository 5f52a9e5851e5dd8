# The kd_* functions over vectors with a kdvec index, while writers move,
# delete, re-insert and HOT-update rows and VACUUM runs in a loop: every
# kd_knn_join answer, read in a REPEATABLE READ snapshot, equals a
# sequential scan's in that snapshot, with a pause between the function and
# the oracle so that VACUUM and the writers act in between.  The functions
# take their rows and tree from the index (the backend's copy, made anew
# whenever VACUUM marks rows dead).  Run on the CPU, and with the emulated
# GPU object (test/fault/emulated_cuda.c), where the copy's tree and rows
# are kept on the device between calls and freed with the copy.
use strict;
use warnings;
use Cwd qw(abs_path);
use FindBin;
use lib $FindBin::RealBin;
use Time::HiRes qw(time);
use Test::More;
use KdWriters;

my $seconds = 20;
my $emulated = abs_path('build/test-bin/emulated_cuda.so');
ok(-f $emulated, 'the emulated GPU object is built');

my $scripts = KdWriters::write_scripts({
	move => q{
\set id random(1, 4000)
UPDATE t SET v = ARRAY(SELECT floor(random() * 4) + (:id % 20) * 10 FROM generate_series(1, 12)) WHERE id = :id;
},
	swap => q{
\set id random(1, 4000)
DELETE FROM t WHERE id = :id;
INSERT INTO t (id, v, note) VALUES (:id, ARRAY(SELECT floor(random() * 4) + (:id % 20) * 10 FROM generate_series(1, 12)), 'again');
},
	hot => q{
\set id random(1, 4000)
UPDATE t SET note = md5(random()::text) WHERE id = :id;
},
	vacuum => q{
VACUUM t;
}});

# 12 coordinates in 20 clusters of small integers (ties, broken by ctid);
# the oracle: differences between the join and a scan of the same
# snapshot, counted (0 is right), after a pause
my $setup = q{
	CREATE EXTENSION kdgpu;
	CREATE TABLE t (id int, v float8[], note text) WITH (fillfactor = 70);
	INSERT INTO t SELECT i, ARRAY(SELECT floor(random() * 4) + (i % 20) * 10
								  FROM generate_series(1, 12) j WHERE i > 0), 'first'
	  FROM generate_series(1, 4000) i;
	CREATE INDEX t_v ON t USING kdvec (v);
	CREATE TABLE qs (q float8[]);
	INSERT INTO qs SELECT ARRAY(SELECT floor(random() * 4) + (i % 20) * 10
								FROM generate_series(1, 12) j WHERE i > 0)
	  FROM generate_series(1, 30) i;

	CREATE FUNCTION differences(k int) RETURNS bigint
	LANGUAGE plpgsql AS $$
	DECLARE
		n			bigint;
	BEGIN
		CREATE TEMP TABLE f_join ON COMMIT DROP AS
		  SELECT * FROM kd_knn_join('t', 'v', (SELECT array_agg(q ORDER BY q) FROM qs), k);
		PERFORM pg_sleep(0.2);
		SET LOCAL enable_indexscan = off;
		SET LOCAL enable_bitmapscan = off;
		WITH o AS MATERIALIZED (
			SELECT ord, ctid, d, rank FROM
			  (SELECT row_number() OVER (ORDER BY q)::int AS ord, q AS qq FROM qs) a,
			  LATERAL (SELECT ctid, d, row_number() OVER (ORDER BY d, ctid)::int AS rank
						 FROM (SELECT ctid, v <-> a.qq AS d FROM t ORDER BY 2, 1 LIMIT k) s) n),
		  f AS MATERIALIZED (SELECT query_ord, nn_ctid, distance, rank FROM f_join)
		SELECT count(*) INTO n FROM (
		  (SELECT * FROM f EXCEPT ALL SELECT * FROM o)
		  UNION ALL (SELECT * FROM o EXCEPT ALL SELECT * FROM f)) x;
		RETURN n;
	END $$;
};

# run_mode NAME CONF VIA HOW: a server with CONF, the load for $seconds, the
# readers' comparisons meanwhile, and kd_status() matching VIA after
sub run_mode
{
	my ($name, $conf, $via, $how) = @_;
	my $node = KdWriters::start_node($name, $conf, $setup);
	my $load = KdWriters::start_load($node, $scripts, $seconds);
	my $end = time() + $seconds - 2;
	my ($checks, $bad, $last) = (0, 0, '');
	# one session, so that its copy of the index's rows is kept between rounds
	my $reader = $node->background_psql('postgres');
	while (time() < $end || $checks < 3)
	{
		my $got = $reader->query_safe(q{
			BEGIN ISOLATION LEVEL REPEATABLE READ;
			SELECT differences(7);
			COMMIT;});
		$got =~ s/\s+//g;
		$checks++;
		if ($got ne '0')
		{
			$bad++;
			$last = $got;
		}
	}
	KdWriters::finish_load($load);
	# the writes folded into a new tree: two calls through it, the second
	# on the copy the first made (on the device, where there is one)
	$node->safe_psql('postgres', 'REINDEX INDEX t_v; VACUUM t;');
	my $after = '';
	for my $call (1, 2)
	{
		my $got = $reader->query_safe(q{
			BEGIN ISOLATION LEVEL REPEATABLE READ;
			SELECT differences(7);
			COMMIT;});
		$got =~ s/\s+//g;
		$after .= $got;
	}
	my $ran = $reader->query_safe("SELECT last_run FROM kd_status()");
	$reader->quit;
	is($after, '00', "$name: after REINDEX, two calls through the new tree equal a sequential scan");
	my $moved = KdWriters::rows_changed($node);
	cmp_ok($moved, '>', 500, "$name: writers changed rows meanwhile ($moved)");
	is($bad, 0, "$name: $checks rounds of kd_knn_join answers equal a sequential scan in their snapshot")
	  or diag("differences: $last");
	like($ran, qr/rows and vantage-point tree from index "t_v" and the visibility map, 0 of/,
		 "$name: the rows and tree came from the index, no table page read");
	like($ran, $via, "$name: the functions ran $how");
	$node->stop;
}

run_mode('cpu', "kdgpu.device = cpu\n", qr/ran on the CPU: CPU requested; through the index's vantage-point tree/,
		 'on the CPU through the index\'s tree');
$ENV{KDGPU_CUDA_LIB} = $emulated;
run_mode('gpu', "kdgpu.device = gpu\n",
		 qr/through the index's vantage-point tree on the GPU/,
		 'through the index\'s tree on the (emulated) GPU');

done_testing();
