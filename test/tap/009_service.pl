# The GPU service (src/service/): with kdgpu preloaded, a background worker
# runs every backend's GPU calls and keeps one device copy of an index's
# tree for all sessions.  Without a GPU here, the service opens
# build/test-bin/emulated_cuda.so, a GPU object that answers with the CPU engine,
# so everything but the kernels is the code a GPU host runs.  Answers are
# checked against sequential scans (ORDER BY <->, ctid) in SQL, never
# against the service's own output.  Covered: many sessions at once
# (pgbench), one shared copy, eviction under kdgpu.gpu_memory_limit,
# kd_unload, a GPU error (the service restarts with a fresh context and the
# call falls back to the CPU), cancel and statement_timeout while waiting,
# the service killed with SIGKILL under load, two devices (a copy on each,
# a tree larger than one device's share split over both, calls on the two
# devices running at once, and a tree with a copy on each device), no GPU,
# and kdgpu.service off; and the flat kNN of vectors shipped to it.
use strict;
use warnings;
use Cwd qw(abs_path);
use Time::HiRes qw(time sleep);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my $emulated = abs_path('build/test-bin/emulated_cuda.so');
ok(-f $emulated, 'the emulated GPU object is built');
my $trap = "${PostgreSQL::Test::Utils::tmp_check}/kdgpu-trap";

$ENV{KDGPU_CUDA_LIB} = $emulated;
$ENV{KDGPU_FAKE_TRAP_FILE} = $trap;
my $node = PostgreSQL::Test::Cluster->new('service');
$node->init;
# kdgpu.index_rows off: most sections below test the service's copies of
# the trees of tables read whole (as row-level security or a key column
# with no unique index still make them); the section "the copy of an
# index's rows" turns it on for its sessions
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'kdgpu'
kdgpu.gpu_min_points = 0
kdgpu.index_rows = off
restart_after_crash = on
max_connections = 40
});
$node->start;

# Start psql running $sql in the background, its output going to the
# scalars $out and $err refer to; returns the IPC::Run harness.
sub start_psql
{
	my ($sql, $out, $err) = @_;
	return IPC::Run::start(
		[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', $sql ],
		'>', $out, '2>', $err);
}

# the service's pid from kd_status(), once it is ready or idle ('' if none)
sub service_pid
{
	my $pid = '';
	for (1 .. 100)
	{
		my ($rc, $status) = $node->psql('postgres', 'SELECT service FROM kd_status()');
		if ($rc == 0 && $status =~ /^(?:running|idle) \(pid (\d+)\)/)
		{
			$pid = $1;
			last;
		}
		sleep 0.1;
	}
	return $pid;
}

$node->safe_psql('postgres', q{
	CREATE EXTENSION kdgpu;
	CREATE TABLE pts (id serial PRIMARY KEY, p point);
	INSERT INTO pts (p) SELECT point(random() * 100, random() * 100) FROM generate_series(1, 6000);
	-- duplicates: ties broken by ctid
	INSERT INTO pts (p) SELECT point(floor(random() * 8) * 10, floor(random() * 8) * 10) FROM generate_series(1, 600);
	CREATE INDEX pts_p ON pts USING kdgpu (p);
	CREATE TABLE q (p point);
	INSERT INTO q SELECT point(random() * 110 - 5, random() * 110 - 5) FROM generate_series(1, 250);
	INSERT INTO q SELECT point(x * 10, 30) FROM generate_series(0, 7) x;
	-- a tree of about 0.95 MB: beside pts's (0.18 MB), more than a 1 MB limit holds
	CREATE TABLE other (p point);
	INSERT INTO other SELECT point(random() * 50, random() * 50) FROM generate_series(1, 34000);
	CREATE INDEX other_p ON other USING kdgpu (p);

	-- rows of kd_knn_join(rel, 'q', k) that a sequential scan's
	-- ORDER BY <->, ctid does not give, and the other way round
	CREATE FUNCTION join_mismatches(rel regclass, k int, qrel regclass DEFAULT 'q')
	RETURNS bigint LANGUAGE plpgsql AS $$
	DECLARE n bigint;
	BEGIN
		PERFORM set_config('enable_indexscan', 'off', true);
		PERFORM set_config('enable_bitmapscan', 'off', true);
		EXECUTE format($q$
			WITH kd AS (SELECT query_ctid, nn_ctid, distance, rank FROM kd_knn_join(%1$L, %3$L, %2$s)),
			     bf AS (SELECT q.ctid AS query_ctid, s.c AS nn_ctid, s.d AS distance,
			                   s.r::int AS rank
			              FROM %3$s q, LATERAL (SELECT t.ctid c, t.p <-> q.p d,
			                                      row_number() OVER (ORDER BY t.p <-> q.p, t.ctid) r
			                                 FROM %1$s t ORDER BY t.p <-> q.p, t.ctid LIMIT %2$s) s)
			SELECT (SELECT count(*) FROM (SELECT * FROM kd EXCEPT ALL SELECT * FROM bf) a) +
			       (SELECT count(*) FROM (SELECT * FROM bf EXCEPT ALL SELECT * FROM kd) b)$q$,
			rel, k, qrel) INTO n;
		RETURN n;
	END $$;

	-- the same for kd_all_knn over the first 300 rows' neighbours, and for
	-- kd_range around each query point
	CREATE FUNCTION all_knn_mismatches(k int, tbl text DEFAULT 'pts') RETURNS bigint
	LANGUAGE plpgsql AS $f$
	DECLARE n bigint;
	BEGIN
		PERFORM set_config('enable_indexscan', 'off', true);
		PERFORM set_config('enable_bitmapscan', 'off', true);
		EXECUTE format($q$
		WITH kd AS (SELECT query_ctid, nn_ctid, distance, rank FROM kd_all_knn(%L, $1)
		             WHERE query_ctid IN (SELECT ctid FROM %I ORDER BY ctid LIMIT 300)),
		     bf AS (SELECT a.ctid AS query_ctid, s.c, s.d, s.r::int
		              FROM (SELECT ctid, p FROM %I ORDER BY ctid LIMIT 300) a,
		                   LATERAL (SELECT t.ctid c, t.p <-> a.p d,
		                                   row_number() OVER (ORDER BY t.p <-> a.p, t.ctid) r
		                              FROM %I t WHERE t.ctid <> a.ctid
		                             ORDER BY t.p <-> a.p, t.ctid LIMIT $1) s)
		SELECT (SELECT count(*) FROM (SELECT * FROM kd EXCEPT ALL SELECT * FROM bf) x) +
		       (SELECT count(*) FROM (SELECT * FROM bf EXCEPT ALL SELECT * FROM kd) y)$q$,
		       tbl, tbl, tbl, tbl) INTO n USING k;
		RETURN n;
	END $f$;

	CREATE FUNCTION range_mismatches(r float8, tbl text DEFAULT 'pts') RETURNS bigint
	LANGUAGE plpgsql AS $f$
	DECLARE n bigint;
	BEGIN
		PERFORM set_config('enable_indexscan', 'off', true);
		PERFORM set_config('enable_bitmapscan', 'off', true);
		EXECUTE format($q$
		WITH kd AS (SELECT q.ctid qc, k.nn_ctid, k.distance FROM q, LATERAL kd_range(%L, q.p, $1) k),
		     bf AS (SELECT q.ctid qc, t.ctid, t.p <-> q.p FROM q, %I t WHERE t.p <-> q.p <= $1)
		SELECT (SELECT count(*) FROM (SELECT * FROM kd EXCEPT ALL SELECT * FROM bf) x) +
		       (SELECT count(*) FROM (SELECT * FROM bf EXCEPT ALL SELECT * FROM kd) y)$q$,
		       tbl, tbl) INTO n USING r;
		RETURN n;
	END $f$;
});

my $pid = service_pid();
like($pid, qr/^\d+$/, 'the service runs as a background worker');
like($node->safe_psql('postgres', 'SELECT service FROM kd_status()'),
	qr/^running \(pid $pid\) on emulated GPU/, 'kd_status names the service and its device');

# answers through the service equal sequential scans
is($node->safe_psql('postgres', "SELECT join_mismatches('pts', 7)"), '0',
	'kd_knn_join through the service equals a sequential scan');
like($node->safe_psql('postgres', "SELECT count(*) FROM kd_knn_join('pts', 'q', 3); SELECT last_run FROM kd_status()"),
	qr/through the GPU service/, 'kd_status says the work went through the service');
is($node->safe_psql('postgres', 'SELECT all_knn_mismatches(5)'), '0',
	'kd_all_knn through the service equals a sequential scan');
is($node->safe_psql('postgres', 'SELECT range_mismatches(4.5)'), '0',
	'kd_range through the service equals a sequential scan');

# vectors of 24 coordinates under each metric: shipped to the service,
# searched flat there, and equal to a sequential scan in SQL
$node->safe_psql('postgres', q{
	CREATE TABLE vecs (v float8[]);
	INSERT INTO vecs SELECT ARRAY(SELECT floor(random() * 4) FROM generate_series(1, 24) j WHERE i > 0)
		FROM generate_series(1, 300) i;
	INSERT INTO vecs SELECT v FROM vecs LIMIT 20;
});
for my $m (['l2', 'v <-> q.v'], ['l1', 'v <+> q.v'], ['linf', 'kd_linf_distance(v, q.v)'],
	['cosine', 'v <=> q.v'])
{
	my ($metric, $dist) = @$m;
	# half the largest distance from the query to a row
	my $radius = "0.5 * (SELECT max($dist) FROM vecs)";

	is($node->safe_psql('postgres', qq{
		SELECT count(*) FILTER (WHERE
			ARRAY(SELECT (nn_ctid, distance)::text FROM kd_knn('vecs', 'v', q.v, 6, metric => '$metric') ORDER BY rank)
			IS DISTINCT FROM
			ARRAY(SELECT (ctid, $dist)::text FROM vecs ORDER BY $dist, ctid LIMIT 6))
		FROM (SELECT v FROM vecs LIMIT 25) q;
		SELECT last_run ~ '^flat kNN search \\($metric distance, 24 dimensions\\) ran on the GPU, through the GPU service'
		FROM kd_status();
		SELECT count(*) FROM kd_all_knn('vecs', 'v', 4, metric => '$metric');
		SELECT count(*) FILTER (WHERE
			ARRAY(SELECT (nn_ctid, distance)::text FROM kd_range('vecs', 'v', q.v, $radius, metric => '$metric')
			      ORDER BY rank)
			IS DISTINCT FROM
			ARRAY(SELECT (ctid, $dist)::text FROM vecs WHERE $dist <= $radius ORDER BY $dist, ctid))
		FROM (SELECT v FROM vecs LIMIT 10) q;
		SELECT last_run ~ '^flat radius search \\($metric distance, 24 dimensions\\) ran on the GPU, through the GPU service'
		FROM kd_status();
	}), "0\nt\n1280\n0\nt", "flat kNN and radius under $metric through the service equal a sequential scan");
}
$node->safe_psql('postgres', 'DROP TABLE vecs');

# clustering and the pairs within a distance through the service: the
# pairs equal the self-join's, the labels the CPU's (both forms), with the
# table read and with its rows from the index (a table of its own, so
# that the copies counted below are those of pts)
$node->safe_psql('postgres', q{
	CREATE TABLE cpts (p point) WITH (autovacuum_enabled = false);
	INSERT INTO cpts SELECT p FROM pts;
	CREATE INDEX cpts_p ON cpts USING kdgpu (p);
	VACUUM cpts;
});
for my $rows ('off', 'on')
{
	is($node->safe_psql('postgres', qq{
		SET kdgpu.index_rows = $rows;
		SELECT (SELECT count(*) FROM (SELECT * FROM kd_pairs_within('cpts', 1.5)
			EXCEPT SELECT a.ctid, b.ctid, a.p <-> b.p FROM cpts a JOIN cpts b
			ON a.ctid < b.ctid AND a.p <-> b.p <= 1.5) x) +
		       (SELECT count(*) FROM (SELECT a.ctid, b.ctid, a.p <-> b.p FROM cpts a JOIN cpts b
			ON a.ctid < b.ctid AND a.p <-> b.p <= 1.5
			EXCEPT SELECT * FROM kd_pairs_within('cpts', 1.5)) x);
		SELECT last_run ~ 'kd_pairs_within ran on the GPU, through the GPU service' FROM kd_status();
		CREATE TEMP TABLE l_gpu AS SELECT * FROM kd_dbscan('cpts', 1.5, 4);
		SELECT last_run ~ 'kd_dbscan ran on the GPU, through the GPU service' FROM kd_status();
		CREATE TEMP TABLE w_gpu AS SELECT ctid AS t, kd_cluster_dbscan(p, 1.5, 4) OVER (ORDER BY ctid) AS c FROM cpts;
		SET kdgpu.device = cpu;
		SELECT (SELECT count(*) FROM (SELECT * FROM l_gpu EXCEPT SELECT * FROM kd_dbscan('cpts', 1.5, 4)) x) +
		       (SELECT count(*) FROM (SELECT * FROM kd_dbscan('cpts', 1.5, 4) EXCEPT SELECT * FROM l_gpu) x) +
		       (SELECT count(*) FROM w_gpu JOIN (SELECT ctid AS t, kd_cluster_dbscan(p, 1.5, 4)
			OVER (ORDER BY ctid) AS c FROM cpts) w USING (t) WHERE w.c IS DISTINCT FROM w_gpu.c);
		SELECT count(DISTINCT cluster) > 10 FROM l_gpu;
	}), "0\nt\nt\n0\nt", "kd_pairs_within and DBSCAN through the service, index_rows $rows");
}
$node->safe_psql('postgres', 'DROP TABLE cpts');

# the copy of an index's rows: calls that take their rows from the index
# search one device copy of the tree over them, shared by every session
# and uploaded once per version of the index; a new version (VACUUM
# removed rows) replaces it; answers equal sequential scans throughout
$node->safe_psql('postgres', q{
	CREATE TABLE ir (p point) WITH (autovacuum_enabled = false);
	INSERT INTO ir SELECT point(random() * 100, random() * 100) FROM generate_series(1, 4000);
	SET maintenance_work_mem = '1MB';
	CREATE INDEX ir_p ON ir USING kdgpu (p);
	VACUUM ir;
});
my $on = 'SET kdgpu.index_rows = on;';
my $rows_copy = q{SELECT count(*), min(loaded_at), sum(hits), min(generation) FROM kd_resident
	WHERE index = 'ir_p'::regclass AND flavour = 'rows'};
is($node->safe_psql('postgres', "$on SELECT join_mismatches('ir', 6); SELECT all_knn_mismatches(4, 'ir');
	SELECT range_mismatches(4.5, 'ir')"), "0\n0\n0",
	'kNN join, All-kNN and range on the index\'s rows through the service equal sequential scans');
like($node->safe_psql('postgres', "$on SELECT count(*) FROM kd_knn_join('ir', 'q', 3);
	SELECT last_run FROM kd_status()"),
	qr/through the GPU service; ir: rows from index "ir_p" and the visibility map, 0 of \d+ table pages read/,
	'the join took its rows from the index and ran through the service');
my ($r1, $rl1, $rh1, $rg1) = split /\|/, $node->safe_psql('postgres', $rows_copy);
is($r1, '1', 'one shared copy of the tree over the index\'s rows');
$node->safe_psql('postgres', "$on SELECT count(*) FROM kd_knn_join('ir', 'q', 4)") for 1 .. 3;
my ($r2, $rl2, $rh2, $rg2) = split /\|/, $node->safe_psql('postgres', $rows_copy);
is("$r2|$rl2|$rg2", "1|$rl1|$rg1", 'new sessions search the same copy, not a new upload');
cmp_ok($rh2, '>=', $rh1 + 3, 'the copy counts the calls of every session');
my ($rc, $out, $err) = $node->psql('postgres', qq{$on
	SET client_min_messages = debug1;
	SELECT count(*) FROM kd_knn_join('ir', 'q', 3)});
like($err, qr/searching the tree of the rows of index "ir_p", on its device copy/,
	'a new session searches the device copy');
$node->safe_psql('postgres', q{
	DELETE FROM ir WHERE random() < 0.1;
	SET maintenance_work_mem = '1MB';
	VACUUM ir;
	INSERT INTO ir SELECT point(random() * 100, random() * 100) FROM generate_series(1, 300);
});
is($node->safe_psql('postgres', "$on SELECT join_mismatches('ir', 6); SELECT all_knn_mismatches(4, 'ir')"),
	"0\n0", 'after deletes, VACUUM and inserts the answers equal sequential scans');
my ($r3, $rl3, $rh3, $rg3) = split /\|/, $node->safe_psql('postgres', $rows_copy);
ok($r3 eq '1' && $rg3 > $rg1, "the index's new version replaced the copy (generation $rg1 -> $rg3)");
is($node->safe_psql('postgres', "SELECT count(*) FROM kd_resident WHERE owner_pid IS NOT NULL"), '0',
	'no copy is left owned by a session');
$node->safe_psql('postgres', 'DROP TABLE ir');

# one device copy of the index for every session, uploaded once
my $copies = q{SELECT count(*), min(loaded_at), sum(hits) FROM kd_resident WHERE index = 'pts_p'::regclass};
my ($n1, $loaded1, $hits1) = split /\|/, $node->safe_psql('postgres', $copies);
is($n1, '1', 'one shared copy of the index tree');
$node->safe_psql('postgres', "SELECT count(*) FROM kd_knn_join('pts', 'q', 4)") for 1 .. 3;
my ($n2, $loaded2, $hits2) = split /\|/, $node->safe_psql('postgres', $copies);
is("$n2|$loaded2", "1|$loaded1", 'new sessions use the same copy, not a new upload');
cmp_ok($hits2, '>=', $hits1 + 3, 'the copy counts the calls of every session');
is($node->safe_psql('postgres', "SELECT count(*) FROM kd_resident WHERE owner_pid IS NOT NULL"), '0',
	'trees built for one query are freed after it');

# a new session whose rows are the tree's searches the service's copy
# without reading the tree
($rc, $out, $err) = $node->psql('postgres', q{
	SET client_min_messages = debug1;
	SELECT count(*) FROM kd_knn_join('pts', 'q', 3);
	SET client_min_messages = notice;
	SELECT trees_cached FROM kd_status()});
like($err, qr/searching the GPU service's copy of the tree of index "pts_p"/,
	'a new session searches the service\'s copy in place');
is($out, "774\n0", 'and reads no tree of its own');
($rc, $out, $err) = $node->psql('postgres', q{
	SET client_min_messages = debug1;
	SELECT all_knn_mismatches(4);
	SET client_min_messages = notice;
	SELECT trees_cached FROM kd_status()});
like($err, qr/searching the GPU service's copy of the tree of index "pts_p"/,
	'All-kNN in a new session searches the copy in place too');
is($out, "0\n0", 'with answers equal to a sequential scan, and no tree of its own');

# HOT updates: the rows read differ from the copy's (same points, new
# TIDs): the copy is searched with the old versions gone and the new ones
# added, and the answers stay exact
$node->safe_psql('postgres', q{
	CREATE TABLE hot (p point, tag int) WITH (fillfactor = 50);
	INSERT INTO hot SELECT point(random() * 100, random() * 100), 0 FROM generate_series(1, 3000);
	CREATE INDEX hot_p ON hot USING kdgpu (p);
	SELECT count(*) FROM kd_knn_join('hot', 'q', 3);
	UPDATE hot SET tag = 1 WHERE ctid IN (SELECT ctid FROM hot ORDER BY random() LIMIT 600);
});
my $hot = 0;
for (1 .. 50)
{
	$hot = $node->safe_psql('postgres', "SELECT pg_stat_get_tuples_hot_updated('hot'::regclass)");
	last if $hot > 0;
	sleep 0.2;
}
cmp_ok($hot, '>', 0, 'the updates were HOT');
($rc, $out, $err) = $node->psql('postgres', q{
	SET client_min_messages = debug1;
	SELECT join_mismatches('hot', 4)});
is($out, '0', 'after HOT updates the answers equal a sequential scan');
like($err, qr/searching the GPU service's copy of the tree of index "hot_p" beside 600 rows added since, without 600 gone/,
	'and the copy was searched beside the new versions');
$node->safe_psql('postgres', 'DROP TABLE hot');

# a few rows inserted (some tied with indexed ones), deleted and updated
# since the copy was made: the copy is searched, the rows added since beside
# it and the gone ones left out, with answers equal to a sequential scan
$node->safe_psql('postgres', q{
	CREATE TABLE grow (p point, tag int) WITH (fillfactor = 80, autovacuum_enabled = false);
	INSERT INTO grow SELECT point(random() * 100, random() * 100), 0 FROM generate_series(1, 3000);
	DELETE FROM grow WHERE random() < 0.1;
	VACUUM grow;
	CREATE INDEX grow_p ON grow USING kdgpu (p);
	SELECT count(*) FROM kd_knn_join('grow', 'q', 3);
	INSERT INTO grow SELECT point(random() * 100, random() * 100), 1 FROM generate_series(1, 200);
	INSERT INTO grow SELECT p, 1 FROM grow WHERE tag = 0 AND random() < 0.02;
	DELETE FROM grow WHERE ctid IN (SELECT ctid FROM grow WHERE tag = 0 ORDER BY random() LIMIT 100);
	UPDATE grow SET tag = 2 WHERE ctid IN (SELECT ctid FROM grow WHERE tag = 0 ORDER BY random() LIMIT 50);
});
my $grow_copy = q{SELECT count(*), min(loaded_at) FROM kd_resident
	WHERE index = 'grow_p'::regclass AND flavour = 'ranked'};
my $grow1 = $node->safe_psql('postgres', $grow_copy);
($rc, $out, $err) = $node->psql('postgres', q{
	SET client_min_messages = debug1;
	SELECT join_mismatches('grow', 7);
	SELECT all_knn_mismatches(5, 'grow');
	SELECT range_mismatches(4.5, 'grow');
	SET client_min_messages = notice;
	SELECT trees_cached FROM kd_status()});
is($out, "0\n0\n0\n0", 'kNN join, All-kNN and range beside the copy equal sequential scans, with no tree read');
my @searched = $err =~ /(searching .*the tree of index "grow_p".*)/g;
my @beside = $err =~ /searching the GPU service's copy of the tree of index "grow_p" beside (\d+) rows added since, without (\d+) gone/g;
cmp_ok(scalar(@searched), '>=', 3, 'the calls searched the index\'s tree');
is(scalar(@beside), 2 * scalar(@searched), 'each of them the service\'s copy, beside the rows changed since');
ok($beside[0] >= 250 && $beside[1] == 150, "rows added and gone since ($beside[0], $beside[1])");
is($node->safe_psql('postgres', $grow_copy), $grow1, 'the copy was not uploaded again');
$node->safe_psql('postgres', 'DROP TABLE grow');

# rows VACUUM marks dead in the copy's tree (too large to rebuild within
# maintenance_work_mem) count as gone: VACUUM replaces the copy made before
# the marks by one made after them, and the heap's reuse of their TIDs for
# new rows elsewhere leaves the answers exact
$node->safe_psql('postgres', q{
	CREATE TABLE dead (p point, tag int) WITH (autovacuum_enabled = false);
	INSERT INTO dead SELECT point(random() * 100, random() * 100), 0 FROM generate_series(1, 40000);
	CREATE INDEX dead_p ON dead USING kdgpu (p);
	SELECT count(*) FROM kd_knn_join('dead', 'q', 3);
	CREATE TABLE freed AS SELECT ctid AS tid FROM dead WHERE random() < 0.02;
	DELETE FROM dead WHERE ctid IN (SELECT tid FROM freed);
});
my $dead_copy = q{SELECT string_agg(format('%s:%s', loaded_at, relfilenode), ',') FROM kd_resident
	WHERE index = 'dead_p'::regclass AND flavour = 'ranked'};
my $dead1 = $node->safe_psql('postgres', $dead_copy);
$node->safe_psql('postgres', q{
	SET maintenance_work_mem = '1MB';
	VACUUM dead;
	INSERT INTO dead SELECT point(random() * 100, random() * 100), 1 FROM generate_series(1, 500);
});
my $dead2 = $node->safe_psql('postgres', $dead_copy);
ok($dead2 ne $dead1 && $dead2 !~ /,/, "VACUUM replaced the copy by one with the marks ($dead1 -> $dead2)");
cmp_ok($node->safe_psql('postgres', q{SELECT dead_rows FROM kd_index_stats('dead_p')}), '>', 0,
	'VACUUM marked rows dead in the tree');
cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM dead WHERE tag = 1 AND ctid IN (SELECT tid FROM freed)}),
	'>', 100, 'new rows took the dead rows\' TIDs');
($rc, $out, $err) = $node->psql('postgres', q{
	SET client_min_messages = debug1;
	SELECT join_mismatches('dead', 6);
	SELECT all_knn_mismatches(4, 'dead');
	SELECT range_mismatches(3.5, 'dead')});
is($out, "0\n0\n0", 'kNN join, All-kNN and range beside the dead rows equal sequential scans');
@searched = $err =~ /(searching .*the tree of index "dead_p".*)/g;
@beside = $err =~ /searching the GPU service's copy of the tree of index "dead_p" beside (\d+) rows added since, without (\d+) gone/g;
cmp_ok(scalar(@searched), '>=', 3, 'the calls searched the index\'s tree');
is(scalar(@beside), 2 * scalar(@searched), 'each of them the copy VACUUM made, beside the rows changed since');
is($node->safe_psql('postgres', $dead_copy), $dead2, 'which no call replaced');
$node->safe_psql('postgres', 'DROP TABLE dead, freed');

# an index built as several trees within maintenance_work_mem has no tree
# that can stand in for the table's rows: a call builds one, and the
# service keeps it as the index's copy built from the rows read; later
# calls, from any session, search it beside the rows changed since,
# compared by TID and point, since such a copy outlives its TIDs: here
# HOT versions it holds die, pruning frees their TIDs, and new rows with
# other points take them
$node->safe_psql('postgres', q{
	CREATE TABLE forest (p point, tag int) WITH (fillfactor = 50, autovacuum_enabled = false);
	INSERT INTO forest SELECT point(random() * 100, random() * 100), 0 FROM generate_series(1, 40000);
	SET maintenance_work_mem = '1MB';
	CREATE INDEX forest_p ON forest USING kdgpu (p);
	UPDATE forest SET tag = 1 WHERE ctid IN (SELECT ctid FROM forest ORDER BY random() LIMIT 300);
	CREATE TABLE hot_tids AS SELECT ctid AS tid, p FROM forest WHERE tag = 1;
});
cmp_ok($node->safe_psql('postgres', q{SELECT trees FROM kd_index_stats('forest_p')}), '>', 1,
	'the index is several trees');
($rc, $out, $err) = $node->psql('postgres', q{
	SET client_min_messages = debug1;
	SELECT join_mismatches('forest', 5)});
is($out, '0', 'a join on the forest index\'s table equals a sequential scan');
is($node->safe_psql('postgres', q{SELECT string_agg(flavour, ',') FROM kd_resident WHERE index = 'forest_p'::regclass}),
	'built', 'the service keeps the tree the join built as the index\'s');
$node->safe_psql('postgres', q{
	UPDATE forest SET tag = 2 WHERE tag = 1;
	SET maintenance_work_mem = '1MB';
	VACUUM forest;
	ALTER TABLE forest SET (fillfactor = 100);
	INSERT INTO forest SELECT point(random() * 100, random() * 100), 3 FROM generate_series(1, 2000);
});
my $reused = $node->safe_psql('postgres', q{SELECT count(*) FROM forest WHERE tag = 3 AND ctid IN (SELECT tid FROM hot_tids)});
cmp_ok($reused, '>', 0, "new rows took TIDs the kept tree holds, with other points ($reused)");
# queries at those rows' old and new points
$node->safe_psql('postgres', q{
	CREATE TABLE reused_q AS SELECT p FROM forest WHERE tag = 3 AND ctid IN (SELECT tid FROM hot_tids)
		UNION ALL SELECT h.p FROM hot_tids h JOIN forest f ON f.ctid = h.tid AND f.tag = 3;
});
($rc, $out, $err) = $node->psql('postgres', q{
	SET client_min_messages = debug1;
	SELECT join_mismatches('forest', 5);
	SELECT join_mismatches('forest', 3, 'reused_q');
	SELECT all_knn_mismatches(4, 'forest');
	SELECT range_mismatches(3.5, 'forest')});
is($out, "0\n0\n0\n0", 'joins (at the reused TIDs\' old and new points too), All-kNN and range in a new session equal sequential scans');
like($err, qr/searching the GPU service's copy of the tree built from the rows of index "forest_p" beside \d+ rows added since, without \d+ gone/,
	'the join searched the kept tree beside the rows changed since');
$node->safe_psql('postgres', 'DROP TABLE forest, hot_tids, reused_q');

# many sessions at once, each checking its answers: joins, All-kNN and
# range queries on two indexes
$node->pgbench(
	'--no-vacuum --client=12 --jobs=4 --transactions=15',
	0,
	[qr{processed: 180/180}],
	[qr{^$}],
	'twelve sessions at once through the service',
	{
		'join' => q{
SELECT 1 / (join_mismatches('pts', 3) = 0)::int;
},
		'allknn' => q{
SELECT 1 / (all_knn_mismatches(3) = 0)::int;
},
		'other' => q{
\set x random(0, 50)
SELECT 1 / ((SELECT count(*) FROM kd_knn_join('other', ARRAY[point(:x, :x), point(:x, 0)], 5)) = 10)::int;
SELECT 1 / (range_mismatches(2.0) = 0)::int;
},
	});
is($node->safe_psql('postgres', 'SELECT count(*) FROM kd_resident WHERE owner_pid IS NULL'), '2',
	'one copy per index after the concurrent run');

# eviction under kdgpu.gpu_memory_limit: room for one of the two trees
$node->safe_psql('postgres', q{ALTER SYSTEM SET kdgpu.gpu_memory_limit = 1; SELECT pg_reload_conf()});
sleep 1.5;
$node->safe_psql('postgres', "SELECT count(*) FROM kd_knn_join('pts', 'q', 2)");
$node->safe_psql('postgres', "SELECT count(*) FROM kd_knn_join('other', 'q', 2)");
is($node->safe_psql('postgres', q{SELECT string_agg(index::text, ',') FROM kd_resident}), 'other_p',
	'under a 1 MB limit the least recently used copy is evicted');
is($node->safe_psql('postgres', "SELECT join_mismatches('pts', 4) + join_mismatches('other', 4)"), '0',
	'answers stay exact while copies are evicted and uploaded again');
$node->safe_psql('postgres', q{ALTER SYSTEM RESET kdgpu.gpu_memory_limit; SELECT pg_reload_conf()});

# kd_unload drops the index's copy for all sessions
$node->safe_psql('postgres', "SELECT kd_unload('other')");
my $left = '';
for (1 .. 50)
{
	$left = $node->safe_psql('postgres', q{SELECT count(*) FROM kd_resident WHERE index = 'other_p'::regclass});
	last if $left eq '0';
	sleep 0.1;
}
is($left, '0', 'kd_unload drops the copy');

# a dropped index's copy goes with it
$node->safe_psql('postgres', q{
	CREATE TABLE gone AS SELECT point(x, x) p FROM generate_series(1, 500) x;
	CREATE INDEX gone_p ON gone USING kdgpu (p);
	SELECT count(*) FROM kd_knn_join('gone', 'q', 2);
});
is($node->safe_psql('postgres', q{SELECT count(*) FROM kd_resident WHERE index = 'gone_p'::regclass}), '1',
	'a third index has its copy');
$node->safe_psql('postgres', 'DROP TABLE gone');
$left = '';
for (1 .. 50)
{
	$left = $node->safe_psql('postgres', q{SELECT count(*) FROM kd_resident WHERE index IS NULL OR index::text ~ '^[0-9]+$'});
	last if $left eq '0';
	sleep 0.1;
}
is($left, '0', 'DROP TABLE drops its index\'s copy');

# a new version of the index replaces the old copy
$node->safe_psql('postgres', "INSERT INTO pts (p) VALUES (point(1, 1)); VACUUM pts");
$node->safe_psql('postgres', 'REINDEX INDEX pts_p');
is($node->safe_psql('postgres', "SELECT join_mismatches('pts', 5)"), '0',
	'after REINDEX the answers follow the new tree');
is($node->safe_psql('postgres', q{SELECT count(*) FROM kd_resident WHERE index = 'pts_p'::regclass}), '1',
	'the new version replaced the old copy');

# a GPU error: the call falls back to the CPU and the service restarts
open(my $fh, '>', $trap) or die;
close($fh);
is($node->safe_psql('postgres', "SELECT join_mismatches('pts', 6)"), '0',
	'a call that meets a GPU error still answers exactly (CPU fallback)');
ok(!-e $trap, 'the emulated trap fired');
my $own = 0;
for (1 .. 5)
{
	$own += $node->safe_psql('postgres',
		"SELECT count(*) FROM kd_knn_join('pts', 'q', 2); SELECT (last_run ~ 'from this backend')::int FROM kd_status()") =~ /\n1$/;
}
is($own, 0, 'sessions started while the service restarts never open the GPU themselves');
my $pid2 = service_pid();
isnt($pid2, $pid, 'the service restarted for a fresh context');
is($node->safe_psql('postgres', "SELECT join_mismatches('pts', 6); SELECT last_run ~ 'through the GPU service' FROM kd_status()"),
	"0\nt", 'the restarted service serves calls again, exactly');
like($node->safe_psql('postgres', 'SELECT count(*) FROM pg_stat_activity'), qr/^\d+$/,
	'the server stayed up (no crash restart)');

# cancel and statement_timeout while a call waits on the service
$node->stop;
$ENV{KDGPU_FAKE_DELAY_MS} = 3000;
$node->start;
service_pid();
my $t0 = time();
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"SET statement_timeout = '400ms'; SELECT count(*) FROM kd_knn_join('pts', 'q', 3)");
my $elapsed = time() - $t0;
like($stderr, qr/canceling statement due to statement timeout/, 'statement_timeout stops a waiting call');
cmp_ok($elapsed, '<', 2.5, 'without waiting for the service to finish');
is($node->safe_psql('postgres', "SELECT count(*) FROM kd_knn_join('pts', 'q', 3)"), '774',
	'the service serves the next call after an abandoned one');

# kdgpu.service_queue_limit: with a call running in the service, another
# session's work runs on the CPU at once instead of waiting in line
my ($bout, $berr) = ('', '');
my $busy = start_psql("SELECT count(*) FROM kd_knn_join('pts', 'q', 3)",
	\$bout, \$berr);
sleep 0.8;
$t0 = time();
is($node->safe_psql('postgres', q{
	SET kdgpu.service_queue_limit = 1;
	SELECT count(*) FROM kd_knn_join('pts', 'q', 3);
	SELECT last_run ~ 'on the CPU.*calls in line' FROM kd_status()}), "774\nt",
	'past kdgpu.service_queue_limit the work runs on the CPU');
cmp_ok(time() - $t0, '<', 2.0, 'without waiting for the call in line');
$busy->finish;
$node->stop;
delete $ENV{KDGPU_FAKE_DELAY_MS};

# the service killed with SIGKILL under load: the postmaster restarts the
# server, no data is lost, and the service comes back
$node->start;
$pid = service_pid();
($out, $err) = ('', '');
my $load = start_psql(
	"SELECT count(*) FROM kd_knn_join('pts', 'q', 5), generate_series(1, 200)",
	\$out, \$err);
sleep 0.5;
kill 'KILL', $pid;
$load->finish;
my $back = '';
for (1 .. 100)
{
	my ($rc, $out) = $node->psql('postgres', 'SELECT count(*) FROM pts');
	$back = $out if $rc == 0;
	last if $back ne '';
	sleep 0.2;
}
is($back, '6601', 'after the kill the server answers, with every row');
my $pid3 = service_pid();
ok($pid3 ne '' && $pid3 ne $pid, 'the service was started again');
is($node->safe_psql('postgres', "SELECT join_mismatches('pts', 5)"), '0',
	'answers through the new service equal a sequential scan');
$node->stop;

# two devices: the copies of two indexes go to different devices, each
# device's copies evicted under the limit on their own
$ENV{KDGPU_FAKE_DEVICES} = 2;
$node->start;
service_pid();
like($node->safe_psql('postgres', 'SELECT service FROM kd_status()'), qr/ and 1 more devices/,
	'the service uses both devices');
is($node->safe_psql('postgres', 'SELECT string_agg(device::text, \',\' ORDER BY device) FROM kd_devices()'),
	'0,1', 'kd_devices lists both');
is($node->safe_psql('postgres', "SELECT join_mismatches('pts', 5) + join_mismatches('other', 5)"), '0',
	'answers on two devices equal a sequential scan');
is($node->safe_psql('postgres', q{SELECT string_agg(format('%s:%s', index, device), ',' ORDER BY device)
	FROM kd_resident WHERE index IN ('pts_p'::regclass, 'other_p'::regclass)}),
	'pts_p:0,other_p:1', 'the second copy goes to the device with room');
$node->safe_psql('postgres', q{ALTER SYSTEM SET kdgpu.gpu_memory_limit = 1; SELECT pg_reload_conf()});
sleep 1.5;
is($node->safe_psql('postgres', "SELECT join_mismatches('pts', 3) + join_mismatches('other', 3)"), '0',
	'under a 1 MB limit per device the answers stay exact');
is($node->safe_psql('postgres', q{SELECT count(*) FROM kd_resident WHERE index IN ('pts_p'::regclass, 'other_p'::regclass)}),
	'2', 'and both copies stay, one on each device');

# a tree larger than one device's share is split over both devices; its
# parts are searched at once, and every answer equals a sequential scan
$node->safe_psql('postgres', q{
	CREATE TABLE big (id int PRIMARY KEY, p point);
	INSERT INTO big SELECT g, point(random() * 100, random() * 100) FROM generate_series(1, 45000) g;
	INSERT INTO big SELECT 45000 + g, point(floor(random() * 8) * 10, floor(random() * 8) * 10)
		FROM generate_series(1, 500) g;
	CREATE INDEX big_p ON big USING kdgpu (p);
});
is($node->safe_psql('postgres', "SELECT join_mismatches('big', 6)"), '0',
	'kd_knn_join on a tree split over two devices equals a sequential scan');
is($node->safe_psql('postgres', q{SELECT string_agg(format('%s:%s', device, bytes < 1048576), ',' ORDER BY device)
	FROM kd_resident WHERE index = 'big_p'::regclass}),
	'0:t,1:t', 'the 1.2 MB tree is split: a part under the 1 MB limit on each device');
like($node->safe_psql('postgres', "SELECT count(*) FROM kd_knn_join('big', 'q', 2); SELECT last_run FROM kd_status()"),
	qr/through the GPU service/, 'the split copy is searched through the service');
is($node->safe_psql('postgres', q{
	SET enable_indexscan = off; SET enable_bitmapscan = off;
	WITH kd AS (SELECT query_ctid, nn_ctid, distance, rank FROM kd_all_knn('big', 4)
	             WHERE query_ctid IN (SELECT ctid FROM big WHERE id % 150 = 0 OR id > 45450)),
	     bf AS (SELECT a.ctid AS query_ctid, s.c, s.d, s.r::int
	              FROM (SELECT ctid, p FROM big WHERE id % 150 = 0 OR id > 45450) a,
	                   LATERAL (SELECT t.ctid c, t.p <-> a.p d,
	                                   row_number() OVER (ORDER BY t.p <-> a.p, t.ctid) r
	                              FROM big t WHERE t.ctid <> a.ctid
	                             ORDER BY t.p <-> a.p, t.ctid LIMIT 4) s)
	SELECT (SELECT count(*) FROM (SELECT * FROM kd EXCEPT ALL SELECT * FROM bf) x) +
	       (SELECT count(*) FROM (SELECT * FROM bf EXCEPT ALL SELECT * FROM kd) y)}), '0',
	'kd_all_knn on the split tree equals a sequential scan, duplicates included');
is($node->safe_psql('postgres', q{
	SET enable_indexscan = off; SET enable_bitmapscan = off;
	WITH kd AS (SELECT q.ctid qc, k.nn_ctid, k.distance FROM q, LATERAL kd_range('big', q.p, 3.5) k),
	     bf AS (SELECT q.ctid qc, t.ctid, t.p <-> q.p FROM q, big t WHERE t.p <-> q.p <= 3.5)
	SELECT (SELECT count(*) FROM (SELECT * FROM kd EXCEPT ALL SELECT * FROM bf) x) +
	       (SELECT count(*) FROM (SELECT * FROM bf EXCEPT ALL SELECT * FROM kd) y)}), '0',
	'kd_range on the split tree equals a sequential scan');
is($node->safe_psql('postgres', q{
	SET enable_indexscan = off; SET enable_bitmapscan = off;
	WITH kd AS (SELECT q.ctid qc, k.nn_ctid FROM q, LATERAL kd_box('big', box(q.p, q.p + point(4, 3))) k),
	     bf AS (SELECT q.ctid qc, t.ctid FROM q, big t WHERE t.p <@ box(q.p, q.p + point(4, 3)))
	SELECT (SELECT count(*) FROM (SELECT * FROM kd EXCEPT ALL SELECT * FROM bf) x) +
	       (SELECT count(*) FROM (SELECT * FROM bf EXCEPT ALL SELECT * FROM kd) y)}), '0',
	'kd_box on the split tree equals a sequential scan');
$node->safe_psql('postgres', q{ALTER SYSTEM RESET kdgpu.gpu_memory_limit; SELECT pg_reload_conf()});
$node->stop;

# the devices work at once: with every emulated kNN call taking 1.5 s,
# the calls of joins on copies on the two devices, started together, run
# at the same time; two on the same device run one after the other.  The
# emulated object logs each kNN call's device, queries and time span.
my $call_log = "${PostgreSQL::Test::Utils::tmp_check}/kdgpu-calls";
$ENV{KDGPU_FAKE_DELAY_MS} = 1500;
$ENV{KDGPU_FAKE_CALL_LOG} = $call_log;
$node->start;
# the kNN calls logged since the last call of this, as [device, queries,
# start ms, end ms], and the log emptied
sub take_calls
{
	my @calls;
	if (-e $call_log)
	{
		@calls = map { [split ' '] } split /\n/, PostgreSQL::Test::Utils::slurp_file($call_log);
		unlink $call_log;
	}
	return @calls;
}
# the pairs of calls that ran at overlapping times, each as [a, b]
sub overlapping_pairs
{
	my @c = @_;
	my @pairs;
	foreach my $i (0 .. $#c)
	{
		foreach my $j ($i + 1 .. $#c)
		{
			push @pairs, [ $c[$i], $c[$j] ]
			  if $c[$i][2] < $c[$j][3] && $c[$j][2] < $c[$i][3];
		}
	}
	return @pairs;
}
# whether two of the calls ran on different devices at overlapping times
sub devices_overlap
{
	return scalar grep { $_->[0][0] != $_->[1][0] } overlapping_pairs(@_);
}
# whether no two calls on the same device overlapped
sub each_device_serial
{
	return !grep { $_->[0][0] == $_->[1][0] } overlapping_pairs(@_);
}
service_pid();
$node->safe_psql('postgres', "SELECT count(*) FROM kd_knn_join('$_', 'q', 2)") for qw(pts other);
is($node->safe_psql('postgres', q{SELECT string_agg(format('%s:%s', index, device), ',' ORDER BY device)
	FROM kd_resident WHERE index IN ('pts_p'::regclass, 'other_p'::regclass)}),
	'pts_p:0,other_p:1', 'one copy on each device');
# the answers of two joins, on rel1 and rel2, started together, and the
# kNN calls they made
sub two_joins
{
	my ($rel1, $rel2) = @_;
	my ($o1, $e1, $o2, $e2) = ('', '', '', '');
	take_calls();
	my $h1 = start_psql("SELECT count(*) FROM kd_knn_join('$rel1', 'q', 3)", \$o1, \$e1);
	my $h2 = start_psql("SELECT count(*) FROM kd_knn_join('$rel2', 'q', 3)", \$o2, \$e2);
	$h1->finish;
	$h2->finish;
	return ("$o1|$o2", take_calls());
}
my ($rows, @apart) = two_joins('pts', 'other');
like($rows, qr/774.*\|.*774/s, 'both joins answer');
is(join(',', sort map { $_->[0] } @apart), '0,1', 'with a kNN call on each device');
ok(devices_overlap(@apart), 'joins on two devices run at once');
my ($trows, @together) = two_joins('pts', 'pts');
is(join(',', map { $_->[0] } @together), '0,0', 'joins on one copy both run on its device');
ok(each_device_serial(@together), 'one after the other');

# with kdgpu.gpu_replicas = 2 an index's tree gets a copy on each device,
# and two joins on it run at once, each on a copy, with exact answers
$node->safe_psql('postgres', q{ALTER SYSTEM SET kdgpu.gpu_replicas = 2; SELECT pg_reload_conf()});
sleep 1.5;
$node->safe_psql('postgres', "SELECT kd_unload('pts')");
sleep 0.5;
$node->safe_psql('postgres', "SELECT count(*) FROM kd_knn_join('pts', 'q', 2)");
is($node->safe_psql('postgres', q{SELECT string_agg(device::text, ',' ORDER BY device)
	FROM kd_resident WHERE index = 'pts_p'::regclass}),
	'0,1', 'with kdgpu.gpu_replicas = 2 the tree has a copy on each device');
my ($rrows, @replicated) = two_joins('pts', 'pts');
like($rrows, qr/774.*\|.*774/s, 'both joins on the replicated tree answer');
ok(devices_overlap(@replicated), 'two joins on one index run at once on its two copies');
is($node->safe_psql('postgres', "SELECT join_mismatches('pts', 4)"), '0',
	'answers from the replicas equal a sequential scan');

# one join of more than a slice (2^20 queries) is spread over the copies on
# both devices at once, its slices running at the same time, and it
# answers as the same join on one copy
$node->safe_psql('postgres', q{CREATE TABLE q2 AS
	SELECT point(random() * 100, random() * 100) AS p FROM generate_series(1, 2097152)});
my $big_join = q{SELECT count(*), md5(string_agg(format('%s %s %s', query_ctid, nn_ctid, distance), ','
	ORDER BY query_ctid)) FROM kd_knn_join('pts', 'q2', 1)};
take_calls();
my $spread_rows = $node->safe_psql('postgres', $big_join);
my @spread = take_calls();
$node->safe_psql('postgres', q{ALTER SYSTEM RESET kdgpu.gpu_replicas; SELECT pg_reload_conf()});
sleep 1.5;
$node->safe_psql('postgres', "SELECT kd_unload('pts')");
sleep 0.5;
$node->safe_psql('postgres', "SELECT count(*) FROM kd_knn_join('pts', 'q', 2)");
is($node->safe_psql('postgres', q{SELECT count(*) FROM kd_resident WHERE index = 'pts_p'::regclass}),
	'1', 'back to one copy');
my $single_rows = $node->safe_psql('postgres', $big_join);
like($spread_rows, qr/^2097152\|/, 'the spread join answers every query');
is($spread_rows, $single_rows, 'with the rows of the same join on one copy');
ok(devices_overlap(@spread), 'its slices ran on both devices at once');
$node->safe_psql('postgres', 'DROP TABLE q2');

# a fast shutdown while a device thread serves a call: the service stops
# the call and waits for it before its segments go, and exits cleanly
my ($so, $se) = ('', '');
my $log_offset = -s $node->logfile;
my $bg = start_psql("SELECT count(*) FROM kd_knn_join('other', 'q', 3)", \$so, \$se);
sleep 0.7;
$node->stop('fast');
$bg->finish;
my $log = PostgreSQL::Test::Utils::slurp_file($node->logfile, $log_offset);
unlike($log, qr/terminated by signal|server process .* was terminated/,
	'no process of the server crashed at the shutdown');
like($log, qr/database system is shut down/, 'the server shut down');
delete $ENV{KDGPU_FAKE_DELAY_MS};
delete $ENV{KDGPU_FAKE_CALL_LOG};
delete $ENV{KDGPU_FAKE_DEVICES};

# no GPU: the service is idle and every query runs on the CPU
$ENV{KDGPU_CUDA_LIB} = "$emulated.absent";
$node->start;
service_pid();
like($node->safe_psql('postgres', 'SELECT service FROM kd_status()'), qr/^idle \(pid \d+\): GPU library not loaded/,
	'without a GPU the service says it is idle, and why');
is($node->safe_psql('postgres', "SELECT join_mismatches('pts', 5); SELECT gpu_usable, last_run ~ 'on the CPU' FROM kd_status()"),
	"0\nf|t", 'and queries run on the CPU, exactly');
$node->stop;

# kdgpu.service off: each backend opens the GPU object itself
$ENV{KDGPU_CUDA_LIB} = $emulated;
$node->append_conf('postgresql.conf', 'kdgpu.service = off');
$node->start;
like($node->safe_psql('postgres', 'SELECT service FROM kd_status()'), qr/kdgpu.service was off at server start/,
	'kdgpu.service = off starts no service');
is($node->safe_psql('postgres', "SELECT join_mismatches('pts', 5); SELECT last_run ~ 'from this backend' FROM kd_status()"),
	"0\nt", 'the backend runs its GPU work itself, exactly');
$node->stop;

done_testing();
