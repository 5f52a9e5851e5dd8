# The kd_* functions and an index built while an older snapshot is open.
# An update before the build that is HOT (no index covered the point yet)
# leaves broken HOT chains, so CREATE INDEX sets indcheckxmin: the index
# holds each chain's newest point under the chain's root TID, which an
# older snapshot still sees with its old point.  In that snapshot the kd_*
# functions must not search the index's tree, and their answers must equal
# a sequential scan's.
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
	CREATE TABLE t (id int, p point) WITH (fillfactor = 50);
	INSERT INTO t SELECT i, point(i % 40, i / 40) FROM generate_series(1, 2000) i;
});

# the old snapshot
my $old = $node->background_psql('postgres');
$old->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$old->query_safe('SELECT count(*) FROM t');

# HOT updates moving points far away, then the build
$node->safe_psql('postgres', q{
	UPDATE t SET p = point(p[0] + 1000, p[1]) WHERE id % 3 = 0;
	CREATE INDEX t_p ON t USING kdgpu (p);
});
is($node->safe_psql('postgres', "SELECT indcheckxmin FROM pg_index WHERE indexrelid = 't_p'::regclass"),
	't', 'the build saw broken HOT chains');

my $compare = q{
	SELECT (SELECT array_agg((nn_ctid, distance)::text ORDER BY rank) FROM kd_knn('t', point(3, 3), 60))
	     = (SELECT array_agg((ctid, d)::text) FROM
	          (SELECT ctid, p <-> point(3, 3) d FROM t ORDER BY p <-> point(3, 3), ctid LIMIT 60) s)
};
is($old->query_safe($compare), 't', 'kd_knn in the old snapshot equals a sequential scan');
is($old->query_safe("SELECT cached FROM kd_load('t')"), 'f', 'the old snapshot builds its own tree');
$old->query_safe('COMMIT');
$old->quit;

is($node->safe_psql('postgres', $compare), 't', 'kd_knn in a new snapshot equals a sequential scan');

$node->stop;
done_testing();
