# KdWriters: the writers that the function suites run beside their readers
# (010_vacuum_functions.pl, 011_vector_functions.pl).  Each suite gives its
# own pgbench scripts ("move", "swap", "hot" and "vacuum") over its table
# t; this module writes them once, sets up a server for them and runs the
# same mix of clients for a given time: two moving rows, one deleting and
# re-inserting, one making HOT updates, one running VACUUM in a loop, so
# that a reader meets every kind of change between its snapshot and the
# oracle's.
package KdWriters;

use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;

# The clients of each script in a load.
my @mix = ([ 'move', 2 ], [ 'swap', 1 ], [ 'hot', 1 ], [ 'vacuum', 1 ]);

# write_scripts(\%script): each name => SQL of %script written to
# NAME.sql in a new directory, which is returned.
sub write_scripts
{
	my ($script) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir();

	for my $name (keys %$script)
	{
		open my $fh, '>', "$dir/$name.sql" or die "$dir/$name.sql: $!";
		print $fh $script->{$name};
		close $fh;
	}
	return $dir;
}

# start_node(NAME, CONF, SETUP): a started server with autovacuum off, room
# for the clients and CONF, SETUP run in it and t vacuumed and analyzed.
sub start_node
{
	my ($name, $conf, $setup) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);

	$node->init;
	$node->append_conf('postgresql.conf', "autovacuum = off\nmax_connections = 30\n$conf");
	$node->start;
	$node->safe_psql('postgres', $setup);
	$node->safe_psql('postgres', 'VACUUM ANALYZE t');
	return $node;
}

# start_load(NODE, DIR, SECONDS): the mix of clients running DIR's scripts
# on NODE for SECONDS; returns what finish_load waits for.
sub start_load
{
	my ($node, $dir, $seconds) = @_;
	my @load;

	for my $s (@mix)
	{
		my ($out, $err) = ('', '');
		push @load, IPC::Run::start(
			[ 'pgbench', '-n', '-c', $s->[1], '-T', $seconds, '-f', "$dir/$s->[0].sql",
			  '-d', $node->connstr('postgres') ], '>', \$out, '2>', \$err);
	}
	return \@load;
}

# finish_load(LOAD): wait for the clients of start_load to end.
sub finish_load
{
	my ($load) = @_;
	$_->finish for @$load;
	return;
}

# rows_changed(NODE): the rows of t updated or deleted so far.
sub rows_changed
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT n_tup_upd + n_tup_del FROM pg_stat_user_tables WHERE relname = 't'");
}

1;
