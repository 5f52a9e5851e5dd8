# Crash recovery of kdgpu indexes: an immediate shutdown (the postmaster and
# every backend killed, as with kill -9) during inserts (which turn pending
# rows into trees), after a VACUUM merge, during an index build larger than
# maintenance_work_mem (sorted runs, a tree each) and during a merge; after
# restart every index passes kd_index_check and answers exactly like a
# sequential scan.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = PostgreSQL::Test::Cluster->new('primary');
$node->init;
$node->append_conf('postgresql.conf', "autovacuum = off");
$node->start;

# the first 50 nearest rows by index and by sequential scan, for a few points
sub knn_differences
{
	my ($node, $table) = @_;
	return $node->safe_psql('postgres', qq{
		CREATE TEMP TABLE q AS SELECT point(x * 13.7 % 100, x * 7.3 % 100) AS q FROM generate_series(1, 20) x;
		SET enable_seqscan = off;
		CREATE TEMP TABLE a AS SELECT q, (SELECT array_agg(c) FROM (SELECT ctid c FROM $table ORDER BY p <-> q LIMIT 50) s) c FROM q;
		SET enable_seqscan = on; SET enable_indexscan = off; SET enable_bitmapscan = off;
		CREATE TEMP TABLE b AS SELECT q, (SELECT array_agg(c) FROM (SELECT ctid c FROM $table WHERE p IS NOT NULL ORDER BY p <-> q, ctid LIMIT 50) s) c FROM q;
		SELECT count(*) FROM a JOIN b ON a.q ~= b.q WHERE a.c IS DISTINCT FROM b.c;});
}

$node->safe_psql('postgres', q{
	CREATE EXTENSION kdgpu;
	CREATE TABLE pts (id int, p point);
	INSERT INTO pts SELECT i, point(random() * 100, random() * 100) FROM generate_series(1, 20000) i;
	CREATE INDEX pts_p ON pts USING kdgpu (p);
	CHECKPOINT;
});

# inserts (pending area, Generic WAL), updates and deletes, then a crash
$node->safe_psql('postgres', q{
	INSERT INTO pts SELECT i, point(random() * 100, random() * 100) FROM generate_series(20001, 21000) i;
	UPDATE pts SET p = point(p[0], p[1] + 0.5) WHERE id % 17 = 0;
	DELETE FROM pts WHERE id % 19 = 0;
});
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', "SELECT kd_index_check('pts_p')"), 't',
	'index sound after a crash with pending rows');
is(knn_differences($node, 'pts'), '0', 'kNN after a crash equals a sequential scan');
is($node->safe_psql('postgres', "SELECT pending_rows > 0 FROM kd_index_stats('pts_p')"), 't',
	'pending rows survived the crash');

# VACUUM marks dead rows and merges the pending rows and trees into one tree
$node->safe_psql('postgres', 'VACUUM pts');
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', "SELECT pending_rows, dead_rows FROM kd_index_stats('pts_p')"), '0|0',
	'the merge survived the crash');
is($node->safe_psql('postgres', "SELECT kd_index_check('pts_p')"), 't',
	'index sound after a crash following VACUUM');
is(knn_differences($node, 'pts'), '0', 'kNN after the merge and a crash equals a sequential scan');

# inserts in flight when the server dies
my $bg = $node->background_psql('postgres');
$bg->query_until(qr/start/, q{
	\echo start
	INSERT INTO pts SELECT i, point(random() * 100, random() * 100) FROM generate_series(30001, 230000) i;
});
usleep(300_000);
$node->stop('immediate');
# the session died with the server
eval { $bg->quit; };
$node->start;
is($node->safe_psql('postgres', "SELECT kd_index_check('pts_p')"), 't',
	'index sound after a crash during inserts');
is(knn_differences($node, 'pts'), '0', 'kNN after a crash during inserts equals a sequential scan');

# a build in flight when the server dies leaves no index behind: the crash
# comes once pg_stat_progress_create_index shows the build running
$node->safe_psql('postgres', q{
	CREATE TABLE big AS SELECT i AS id, point(random() * 1000, random() * 1000) AS p FROM generate_series(1, 2000000) i;
});
$bg = $node->background_psql('postgres');
$bg->query_until(qr/start/, q{
	\echo start
	CREATE INDEX big_p ON big USING kdgpu (p);
});
$node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_stat_progress_create_index WHERE relid = 'big'::regclass")
  or die 'the build never showed up in pg_stat_progress_create_index';
$node->stop('immediate');
# the session died with the server
eval { $bg->quit; };
$node->start;
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname = 'big_p'"), '0',
	'an interrupted build leaves no index');
# the build goes parallel: max_parallel_maintenance_workers (2) workers and
# the leader scan and sort the table
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	'SET client_min_messages = debug1; CREATE INDEX big_p ON big USING kdgpu (p)');
is($ret, 0, 'the index was built');
like($stderr, qr/building index "big_p" with 2 parallel workers requested/,
	'the build was parallel');
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', "SELECT kd_index_check('big_p')"), 't',
	'a built index survives a crash right after the build');
is(knn_differences($node, 'big'), '0', 'kNN on the rebuilt index equals a sequential scan');

# the build above, at the default maintenance_work_mem, made a forest of
# trees from sorted runs; inserts turn pending rows into trees and merge them
is($node->safe_psql('postgres', "SELECT trees > 1 FROM kd_index_stats('big_p')"), 't',
	'a build larger than maintenance_work_mem made several trees');
$node->safe_psql('postgres',
	'INSERT INTO big SELECT i, point(random() * 1000, random() * 1000) FROM generate_series(2000001, 2300000) i');
is($node->safe_psql('postgres', "SELECT tree_rows + pending_rows, pending_rows < 1024 FROM kd_index_stats('big_p')"),
	'2300000|t', 'inserted rows went into trees');

# a crash while a VACUUM merge writes its new tree (the whole forest, given
# the memory) leaves orphaned pages; the index answers from its old trees,
# and the next VACUUM frees the orphans (and reuses them for its own merge)
# a VACUUM at the default setting first frees the trees the inserts' merges
# retired, merging only by size class
# The cost-based delay paces the merge's writes (a pause of up to 4 ms
# after each page, with no page locked), so a look sees it writing; should
# the merge still end first, the crash finds it done: new rows make a
# forest again and the VACUUM runs again, up to three times.
my $rows = 2300000;
my $writing = 0;
my $after = '';
for my $attempt (1 .. 3)
{
	if ($attempt > 1)
	{
		note("attempt $attempt: the merge had ended when the crash came ($after)");
		$node->safe_psql('postgres',
			"INSERT INTO big SELECT i, point(random() * 1000, random() * 1000) FROM generate_series($rows + 1, $rows + 100000) i");
		$rows += 100000;
	}
	$node->safe_psql('postgres', 'VACUUM big');
	$bg = $node->background_psql('postgres');
	# the cost-based delay paces the merges' page writes (each one dirties
	# a page): the merges by size class that come first stay short, and
	# the whole forest's tree, some thousands of pages, takes longer
	$bg->query_until(qr/start/, q{
		\echo start
		SET maintenance_work_mem = '1GB';
		SET vacuum_cost_delay = '1ms';
		SET vacuum_cost_limit = 1;
		VACUUM big;
	});
	# pages written by the merge are orphans until it switches the forest
	$writing = 0;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (!$writing && time() < $deadline)
	{
		$writing = $node->safe_psql('postgres', "SELECT orphan_pages > 100 FROM kd_index_stats('big_p')") eq 't';
		usleep(20_000) unless $writing;
	}
	$node->stop('immediate');
	eval { $bg->quit; };
	$node->start;
	$after = $node->safe_psql('postgres',
		"SELECT orphan_pages > 0, trees > 1, tree_rows + pending_rows FROM kd_index_stats('big_p')");
	last if $after =~ /^t\|t\|/;
}
ok($writing, 'the merge started writing its tree');
is($after, "t|t|$rows", 'the interrupted merge left orphaned pages and the old trees');
is($node->safe_psql('postgres', "SELECT kd_index_check('big_p')"), 't',
	'index sound after a crash during a merge');
is(knn_differences($node, 'big'), '0', 'kNN after a crash during a merge equals a sequential scan');
my ($crashed_pages, $orphans) = split /\|/,
  $node->safe_psql('postgres', "SELECT pages, orphan_pages FROM kd_index_stats('big_p')");
$node->safe_psql('postgres', "SET maintenance_work_mem = '1GB'; VACUUM big");
is($node->safe_psql('postgres', "SELECT orphan_pages, pending_rows, trees FROM kd_index_stats('big_p')"), '0|0|1',
	'the next VACUUM freed the orphans and merged the forest');
# the new tree's pages came from the orphans before the relation grew
note($node->safe_psql('postgres', "SELECT pages, free_pages, $crashed_pages, $orphans FROM kd_index_stats('big_p')"));
is($node->safe_psql('postgres',
	"SELECT pages - $crashed_pages <= pages - free_pages - 1 - $orphans FROM kd_index_stats('big_p')"), 't',
	'the merge reused the freed orphans');
is($node->safe_psql('postgres', "SELECT kd_index_check('big_p')"), 't', 'index sound after the merge');
is(knn_differences($node, 'big'), '0', 'kNN after the merge equals a sequential scan');

# an unlogged index comes back from its init fork after a crash: empty,
# with its insert lanes, ready for inserts
$node->safe_psql('postgres', q{
	CREATE UNLOGGED TABLE ul (id int, p point);
	INSERT INTO ul SELECT i, point(random() * 100, random() * 100) FROM generate_series(1, 5000) i;
	CREATE INDEX ul_p ON ul USING kdgpu (p);
});
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', "SELECT count(*), kd_index_check('ul_p') FROM ul"), '0|t',
	'an unlogged index is empty and sound after a crash');
$node->safe_psql('postgres',
	'INSERT INTO ul SELECT i, point(random() * 100, random() * 100) FROM generate_series(1, 3000) i');
is($node->safe_psql('postgres', "SELECT tree_rows + pending_rows, kd_index_check('ul_p') FROM kd_index_stats('ul_p')"),
	'3000|t', 'inserts after the crash reach the unlogged index');
is(knn_differences($node, 'ul'), '0', 'kNN on the unlogged index equals a sequential scan');

$node->stop;
done_testing();
