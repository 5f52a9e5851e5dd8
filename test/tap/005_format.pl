# An index of another on-disk format, as after pg_upgrade from an older
# kdgpu: scans, inserts, VACUUM and kd_index_check give the REINDEX error
# (no crash, no wrong answer), and REINDEX makes it whole.  The format
# version is written into the metapage's file with the server stopped.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('format');
$node->init;
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION kdgpu;
	CREATE TABLE pts (id int, p point);
	INSERT INTO pts SELECT i, point(i % 100, i / 100) FROM generate_series(1, 5000) i;
	CREATE INDEX pts_p ON pts USING kdgpu (p);
	CHECKPOINT;
});
my $file = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('pts_p')");
$node->stop;

# the metapage's contents start after the 24-byte page header: magic, then
# the format version, both 4 bytes
open(my $fh, '+<:raw', $file) or die "open $file: $!";
seek($fh, 24, 0);
read($fh, my $magic, 4);
is(unpack('L<', $magic), 0x4B444731, 'the metapage starts with the magic number');
read($fh, my $stored, 4);
my $version = unpack('L<', $stored);
cmp_ok($version, '>', 1, 'a format version follows');
seek($fh, 28, 0);
print $fh pack('L<', $version - 1);
close($fh);
$node->start;

my $hint = qr/has on-disk format \d+, this kdgpu reads format $version.*REINDEX INDEX pts_p/s;
foreach my $sql (
	'SET enable_seqscan = off; SELECT id FROM pts ORDER BY p <-> point(1, 1) LIMIT 3',
	'SET enable_seqscan = off; SELECT count(*) FROM pts WHERE p <@ box(point(0, 0), point(5, 5))',
	'INSERT INTO pts VALUES (0, point(1, 1))',
	'VACUUM pts',
	"SELECT kd_index_check('pts_p')")
{
	my ($ret, $out, $err) = $node->psql('postgres', $sql);
	isnt($ret, 0, "fails: $sql");
	like($err, $hint, "asks for REINDEX: $sql");
}

$node->safe_psql('postgres', 'REINDEX INDEX pts_p');
is($node->safe_psql('postgres', "SELECT kd_index_check('pts_p')"), 't',
	'the reindexed index is sound');
is($node->safe_psql('postgres', q{
	SET enable_seqscan = off;
	SELECT string_agg(id::text, ',') FROM (SELECT id FROM pts ORDER BY p <-> point(10.2, 3.1), id LIMIT 3) s}),
	'310,311,410', 'and answers');

$node->stop;
done_testing();
