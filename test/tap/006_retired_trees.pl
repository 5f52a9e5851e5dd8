# Trees a merge retires stay whole while a scan that may have read them is
# in flight: a cursor opened before inserts merged the trees under it, and
# a VACUUM run meanwhile, goes on returning exactly the rows of a
# sequential scan in its snapshot.  Only when no snapshot is that old does
# VACUUM free the retired trees' pages.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->append_conf('postgresql.conf', 'autovacuum = off');
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION kdgpu;
	CREATE TABLE t (id int, p point);
	INSERT INTO t SELECT i, point(i % 100, i / 100) FROM generate_series(1, 20000) i;
	CREATE INDEX t_p ON t USING kdgpu (p);
	-- inserted rows make trees of their own, which merge as they come
	INSERT INTO t SELECT i, point(i % 97 + 0.5, i / 97 + 0.5) FROM generate_series(20001, 22000) i;
});
my $expect = $node->safe_psql('postgres', q{
	SET enable_indexscan = off; SET enable_bitmapscan = off;
	SELECT string_agg(id::text, ',') FROM
	  (SELECT id FROM t ORDER BY p <-> point(30.2, 40.7), ctid LIMIT 400) s});

# a cursor reads the first rows under its snapshot
my $cur = $node->background_psql('postgres');
$cur->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$cur->query_safe('SET enable_seqscan = off');
$cur->query_safe('DECLARE c CURSOR FOR SELECT id FROM t ORDER BY p <-> point(30.2, 40.7)');
my $got = $cur->query_safe('FETCH 100 FROM c');

# inserts merge the trees under the cursor; VACUUM runs and cannot free them
$node->safe_psql('postgres', q{
	INSERT INTO t SELECT i, point(i % 89 + 0.25, i / 89 + 0.25) FROM generate_series(22001, 30000) i;
});
$node->safe_psql('postgres', 'SELECT txid_current()');
$node->safe_psql('postgres', 'VACUUM t');
my ($retired) = $node->safe_psql('postgres', q{
	SELECT pages - free_pages FROM kd_index_stats('t_p')});
$got .= "\n" . $cur->query_safe('FETCH 300 FROM c');
is(join(',', split /\n/, $got), $expect,
	'a cursor across merges and VACUUM returns the rows of a sequential scan in its snapshot');
is($cur->query_safe("SELECT kd_index_check('t_p')"), 't', 'index sound meanwhile');
$cur->query_safe('COMMIT');
$cur->quit;

# no snapshot is that old now: the next VACUUM frees the retired trees
$node->safe_psql('postgres', 'SELECT txid_current()');
$node->safe_psql('postgres', 'VACUUM t');
my ($in_use) = $node->safe_psql('postgres', q{
	SELECT pages - free_pages FROM kd_index_stats('t_p')});
cmp_ok($in_use, '<', $retired, 'VACUUM freed the retired trees once no snapshot could read them');
is($node->safe_psql('postgres', "SELECT kd_index_check('t_p')"), 't', 'index sound after');

$node->stop;
done_testing();
