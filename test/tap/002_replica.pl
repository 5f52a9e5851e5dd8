# Streaming replication of kdgpu indexes: a hot standby's index answers
# exactly like the primary's after the build, inserts (Generic WAL; every
# 1024 of them a new tree, and merges), deletes and VACUUM's merge, all of
# which reach it through WAL only; rows kept
# outside the tree (NaN and infinite points) and NULL rows included.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', 'autovacuum = off');
$primary->start;
$primary->safe_psql('postgres', q{
	CREATE EXTENSION kdgpu;
	CREATE TABLE pts (id int, p point);
	INSERT INTO pts SELECT i, point(random() * 100, random() * 100) FROM generate_series(1, 20000) i;
	CREATE INDEX pts_p ON pts USING kdgpu (p);
});
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

# the 30 nearest rows to a few points, by index, as one string
my $knn = q{
	SET enable_seqscan = off;
	SELECT string_agg(c::text, ',') FROM
	  (SELECT (SELECT array_agg(c) FROM (SELECT ctid c FROM pts ORDER BY p <-> point(x * 9.1 % 100, x * 4.7 % 100) LIMIT 30) s) c
	     FROM generate_series(1, 10) x) t;
};
my $plan = q{SET enable_seqscan = off;
	EXPLAIN (COSTS OFF) SELECT ctid FROM pts ORDER BY p <-> point(1, 1) LIMIT 3;};

$primary->wait_for_catchup($standby);
like($standby->safe_psql('postgres', $plan), qr/Index Scan using pts_p/, 'the standby uses the index');
is($standby->safe_psql('postgres', $knn), $primary->safe_psql('postgres', $knn),
	'standby answers like the primary after the build');

$primary->safe_psql('postgres', q{
	INSERT INTO pts SELECT i, point(random() * 100, random() * 100) FROM generate_series(20001, 23000) i;
	INSERT INTO pts SELECT i, CASE i % 3 WHEN 0 THEN point('NaN', i) WHEN 1 THEN point(i, 'Infinity') END
	  FROM generate_series(23001, 23090) i;
	DELETE FROM pts WHERE id % 7 = 0;
});
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', $knn), $primary->safe_psql('postgres', $knn),
	'standby answers like the primary after inserts and deletes');

$primary->safe_psql('postgres', 'VACUUM pts');
$primary->wait_for_catchup($standby);
is($primary->safe_psql('postgres', "SELECT pending_rows FROM kd_index_stats('pts_p')"), '0',
	'the primary merged its pending rows');
is($standby->safe_psql('postgres', "SELECT tree_rows, pending_rows, null_rows, outside_rows FROM kd_index_stats('pts_p')"),
	$primary->safe_psql('postgres', "SELECT tree_rows, pending_rows, null_rows, outside_rows FROM kd_index_stats('pts_p')"),
	'the standby sees the same tree, NULL and outside rows');
is($standby->safe_psql('postgres', $knn), $primary->safe_psql('postgres', $knn),
	'standby answers like the primary after VACUUM');
my $seq = q{SET enable_indexscan = off; SET enable_bitmapscan = off;
	SELECT string_agg(c::text, ',') FROM
	  (SELECT (SELECT array_agg(c) FROM (SELECT ctid c FROM pts ORDER BY p <-> point(x * 9.1 % 100, x * 4.7 % 100), ctid LIMIT 30) s) c
	     FROM generate_series(1, 10) x) t;};
is($standby->safe_psql('postgres', $knn), $standby->safe_psql('postgres', $seq),
	'standby index equals its sequential scan');
my $all = q{SELECT string_agg(ctid::text, ',') FROM
	  (SELECT ctid FROM pts ORDER BY p <-> point(50, 50) LIMIT 30000) s;};
is($standby->safe_psql('postgres', "SET enable_seqscan = off; $all"),
	$standby->safe_psql('postgres', "SET enable_indexscan = off; SET enable_bitmapscan = off; " .
		q{SELECT string_agg(ctid::text, ',') FROM
		  (SELECT ctid FROM pts ORDER BY p <-> point(50, 50), ctid LIMIT 30000) s;}),
	'every row of the standby, outside and NULL rows included, in a sort\'s order');

# A cursor on the standby across the replay of a VACUUM that removes rows
# deleted before its snapshot.  The replay takes no cleanup lock that would
# wait for an index-only scan, so the standby plans none on a kdgpu index;
# its plain scan returns the rows of a sequential scan in its snapshot.
my $ios = q{SET enable_seqscan = off;
	EXPLAIN (COSTS OFF) SELECT p FROM pts ORDER BY p <-> point(50, 50);};
$primary->safe_psql('postgres', 'DELETE FROM pts WHERE id % 7 = 0');
$primary->wait_for_catchup($standby);
like($primary->safe_psql('postgres', $ios), qr/Index Only Scan using pts_p/,
	'the primary scans the index alone');
like($standby->safe_psql('postgres', $ios), qr/Index Scan using pts_p/,
	'the standby reads the heap too');
# For the same reason the kd_* functions read the standby's table, not its
# index's rows, and say so; the primary takes them from its index.
$primary->safe_psql('postgres', q{
	CREATE TABLE sb (p point);
	INSERT INTO sb SELECT point(x % 97, x % 89) FROM generate_series(1, 3000) x;
	CREATE INDEX sb_p ON sb USING kdgpu (p);
	VACUUM sb;
});
$primary->wait_for_catchup($standby);
my $source = q{SELECT count(*) FROM kd_knn_join('sb', ARRAY[point(50, 50)], 3);
	SELECT substring(last_run FROM 'sb: ([^;]*)') FROM kd_status();};
like($standby->safe_psql('postgres', $source), qr/the table was read: a hot standby/,
	'the standby\'s functions read the table');
like($primary->safe_psql('postgres', $source), qr/rows from index "sb_p"/,
	'the primary\'s take the index\'s rows');
is($standby->safe_psql('postgres', "SELECT array_agg(nn_ctid ORDER BY rank) FROM kd_knn_join('sb', ARRAY[point(50, 50)], 5)"),
	$primary->safe_psql('postgres', "SELECT array_agg(nn_ctid ORDER BY rank) FROM kd_knn_join('sb', ARRAY[point(50, 50)], 5)"),
	'with the same answer');
my $cur = $standby->background_psql('postgres');
$cur->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$cur->query_safe('SET LOCAL enable_indexscan = off');
$cur->query_safe('SET LOCAL enable_bitmapscan = off');
my $want = $cur->query_safe(q{SELECT string_agg(p::text, ';' ORDER BY p <-> point(50, 50), ctid) FROM pts});
$cur->query_safe('SET LOCAL enable_indexscan = on');
$cur->query_safe('SET LOCAL enable_seqscan = off');
$cur->query_safe('DECLARE c CURSOR FOR SELECT p FROM pts ORDER BY p <-> point(50, 50)');
my $got = $cur->query_safe('FETCH 100 FROM c');
$primary->safe_psql('postgres', 'VACUUM pts');
$primary->wait_for_catchup($standby);
$got .= "\n" . $cur->query_safe('FETCH ALL FROM c');
is(join(';', split /\n/, $got), $want,
	'a standby cursor across the replay of VACUUM returns its snapshot\'s rows');
$cur->query_safe('COMMIT');
$cur->quit;

$standby->stop;
$primary->stop;
done_testing();
