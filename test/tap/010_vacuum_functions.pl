# The kd_* functions while writers move, delete, re-insert and HOT-update
# rows and VACUUM runs in a loop: every answer, read in a REPEATABLE READ
# snapshot, equals a sequential scan's (or, for All-kNN, a LATERAL join over
# a GiST index on a copy made in that snapshot), with a pause between the
# function and the oracle so that VACUUM and the writers act in between.
# Run twice: in the backend, and through the GPU service with the emulated
# GPU object (test/fault/emulated_cuda.c), whose resident copy of the index
# must be searched beside the rows changed since it was made.
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
\set id random(1, 8000)
UPDATE t SET p = point(random() * 100, random() * 100) WHERE id = :id;
},
	swap => q{
\set id random(1, 8000)
DELETE FROM t WHERE id = :id;
INSERT INTO t (id, p, note) VALUES (:id, point(random() * 100, random() * 100), 'again');
},
	hot => q{
\set id random(1, 8000)
UPDATE t SET note = md5(random()::text) WHERE id = :id;
},
	vacuum => q{
VACUUM t;
}});

# the oracles: differences between each function and a scan of the same
# snapshot, counted (0 is right); after the functions ran, a pause
my $setup = q{
	CREATE EXTENSION kdgpu;
	CREATE TABLE t (id int, p point, note text) WITH (fillfactor = 70);
	INSERT INTO t SELECT i, point(random() * 100, random() * 100), 'first'
	  FROM generate_series(1, 8000) i;
	-- ties, broken by ctid
	UPDATE t SET p = point(round(p[0] / 10) * 10, round(p[1] / 10) * 10) WHERE id % 10 = 0;
	CREATE INDEX t_p ON t USING kdgpu (p) INCLUDE (id);
	CREATE TABLE qs (qp point);
	INSERT INTO qs SELECT point(random() * 110 - 5, random() * 110 - 5) FROM generate_series(1, 40);

	CREATE FUNCTION differences(q point, k int, r float8) RETURNS text
	LANGUAGE plpgsql AS $$
	DECLARE
		knn			bigint;
		rng			bigint;
		box			bigint;
		joined		bigint;
	BEGIN
		CREATE TEMP TABLE f_knn ON COMMIT DROP AS SELECT * FROM kd_knn('t', q, k);
		CREATE TEMP TABLE f_range ON COMMIT DROP AS SELECT * FROM kd_range('t', q, r);
		CREATE TEMP TABLE f_box ON COMMIT DROP AS
		  SELECT * FROM kd_box('t', point(q[0] - r, q[1] - r), point(q[0] + r, q[1] + r));
		CREATE TEMP TABLE f_join ON COMMIT DROP AS
		  SELECT * FROM kd_knn_join('t', (SELECT array_agg(qp ORDER BY qp[0], qp[1]) FROM qs), k);
		PERFORM pg_sleep(0.2);
		SET LOCAL enable_indexscan = off;
		SET LOCAL enable_indexonlyscan = off;
		SET LOCAL enable_bitmapscan = off;
		-- each oracle once (MATERIALIZED), compared both ways
		WITH o AS MATERIALIZED (
			SELECT ctid, d, row_number() OVER (ORDER BY d, ctid)::int AS rank
			  FROM (SELECT ctid, p <-> q AS d FROM t ORDER BY 2, 1 LIMIT k) s),
		  f AS MATERIALIZED (SELECT nn_ctid, distance, rank FROM f_knn)
		SELECT count(*) INTO knn FROM (
		  (SELECT * FROM f EXCEPT ALL SELECT * FROM o)
		  UNION ALL (SELECT * FROM o EXCEPT ALL SELECT * FROM f)) x;
		WITH o AS MATERIALIZED (SELECT ctid, p <-> q FROM t WHERE p <-> q <= r),
		  f AS MATERIALIZED (SELECT nn_ctid, distance FROM f_range)
		SELECT count(*) INTO rng FROM (
		  (SELECT * FROM f EXCEPT ALL SELECT * FROM o)
		  UNION ALL (SELECT * FROM o EXCEPT ALL SELECT * FROM f)) x;
		WITH o AS MATERIALIZED (
			SELECT ctid FROM t
			 WHERE p <@ box(point(q[0] - r, q[1] - r), point(q[0] + r, q[1] + r))),
		  f AS MATERIALIZED (SELECT nn_ctid FROM f_box)
		SELECT count(*) INTO box FROM (
		  (SELECT * FROM f EXCEPT ALL SELECT * FROM o)
		  UNION ALL (SELECT * FROM o EXCEPT ALL SELECT * FROM f)) x;
		WITH o AS MATERIALIZED (
			SELECT ord, ctid, d, rank FROM
			  (SELECT row_number() OVER (ORDER BY qp[0], qp[1])::int AS ord, qp AS qq FROM qs) a,
			  LATERAL (SELECT ctid, d, row_number() OVER (ORDER BY d, ctid)::int AS rank
						 FROM (SELECT ctid, p <-> a.qq AS d FROM t ORDER BY 2, 1 LIMIT k) s) n),
		  f AS MATERIALIZED (SELECT query_ord, nn_ctid, distance, rank FROM f_join)
		SELECT count(*) INTO joined FROM (
		  (SELECT * FROM f EXCEPT ALL SELECT * FROM o)
		  UNION ALL (SELECT * FROM o EXCEPT ALL SELECT * FROM f)) x;
		RETURN format('knn %s range %s box %s join %s', knn, rng, box, joined);
	END $$;

	CREATE FUNCTION allknn_differences(k int) RETURNS bigint
	LANGUAGE plpgsql AS $$
	DECLARE
		n			bigint;
	BEGIN
		CREATE TEMP TABLE f_all ON COMMIT DROP AS SELECT * FROM kd_all_knn('t', k);
		PERFORM pg_sleep(0.2);
		CREATE TEMP TABLE copy ON COMMIT DROP AS SELECT ctid AS tid, p FROM t;
		CREATE INDEX ON copy USING gist (p);
		ANALYZE copy;
		SET LOCAL enable_seqscan = off;
		WITH o AS MATERIALIZED (
			SELECT a.tid AS query_ctid, n.tid AS nn_ctid, n.d, n.rank FROM copy a,
			  LATERAL (SELECT tid, d, row_number() OVER (ORDER BY d, tid)::int AS rank
						 FROM (SELECT b.tid, b.p <-> a.p AS d FROM copy b
								WHERE b.tid <> a.tid ORDER BY b.p <-> a.p, b.tid LIMIT k) s) n),
		  f AS MATERIALIZED (SELECT query_ctid, nn_ctid, distance, rank FROM f_all)
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
	# rounds go on until the load ends, and at least three are run
	my ($checks, $bad, $allknn, $allbad) = (0, 0, 0, 0);
	my $last = '';
	while (time() < $end || $checks < 3)
	{
		my ($x, $y) = (rand(100), rand(100));
		my $got = $node->safe_psql('postgres', qq{
			BEGIN ISOLATION LEVEL REPEATABLE READ;
			SELECT differences(point($x, $y), 25, 4);
			COMMIT;});
		$checks++;
		if ($got ne 'knn 0 range 0 box 0 join 0')
		{
			$bad++;
			$last = "at ($x, $y): $got";
		}
		if ($checks % 4 == 1)
		{
			my $n = $node->safe_psql('postgres', q{
				BEGIN ISOLATION LEVEL REPEATABLE READ;
				SELECT allknn_differences(3);
				COMMIT;});
			$allknn++;
			$allbad++ if $n ne '0';
		}
	}
	KdWriters::finish_load($load);
	my $moved = KdWriters::rows_changed($node);
	cmp_ok($moved, '>', 1000, "$name: writers changed rows meanwhile ($moved)");
	is($bad, 0, "$name: $checks rounds of kNN, range, box and join answers equal a sequential scan in their snapshot")
	  or diag($last);
	is($allbad, 0, "$name: $allknn rounds of All-kNN answers equal a LATERAL join in their snapshot");
	is($node->safe_psql('postgres', "SELECT kd_index_check('t_p')"), 't', "$name: index sound after");
	like($node->safe_psql('postgres',
			"SELECT count(*) FROM kd_knn_join('t', 'qs', 3); SELECT last_run FROM kd_status()"),
		 $via, "$name: the functions ran $how");
	$node->stop;
}

run_mode('backend', '', qr/ran on the CPU/, 'in the backend, on the CPU');
$ENV{KDGPU_CUDA_LIB} = $emulated;
run_mode('service', "shared_preload_libraries = 'kdgpu'\nkdgpu.gpu_min_points = 0\n",
		 qr/through the GPU service/, 'through the GPU service');

done_testing();
