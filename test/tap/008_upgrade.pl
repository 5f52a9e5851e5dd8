# Extension versions: ALTER EXTENSION ... UPDATE from 0.1 gives the same
# catalog as a fresh install of the current version, for kdgpu and (where
# PostGIS is installed) kdgpu_postgis: every member object, with each
# function's whole definition, each operator's and operator class's parts,
# each type's fields and each comment, and every object has a comment.  An
# index built before the update asks for REINDEX only if its on-disk
# format is older (005_format).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->start;

my $have_postgis = $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_available_extensions WHERE name = 'postgis'") eq '1';
my @exts = ('kdgpu', $have_postgis ? ('kdgpu_postgis') : ());

# the members of extension $ext, one description per line, sorted
sub catalog
{
	my ($db, $ext) = @_;
	return $node->safe_psql($db, qq{
		SELECT string_agg(line, E'\\n' ORDER BY line) FROM (
		  SELECT pg_describe_object(classid, objid, objsubid)
		    || coalesce(' -- ' || obj_description(objid, classid::regclass::text), '')
		    || CASE classid
		      WHEN 'pg_proc'::regclass THEN E'\\n' || pg_get_functiondef(objid)
		      WHEN 'pg_operator'::regclass THEN
		        (SELECT format(' %s %s %s %s %s', oprcode, oprcom::regoperator,
		                       oprnegate::regoperator, oprrest, oprjoin)
		           FROM pg_operator WHERE oid = objid)
		      WHEN 'pg_type'::regclass THEN
		        (SELECT format(' %s %s', typtype,
		                       (SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod),
		                                          ', ' ORDER BY attnum)
		                          FROM pg_attribute WHERE attrelid = typrelid AND attnum > 0))
		           FROM pg_type WHERE oid = objid)
		      WHEN 'pg_opclass'::regclass THEN
		        (SELECT format(' %s %s %s %s %s', opcintype::regtype, opcdefault, opckeytype::regtype,
		                       (SELECT string_agg(format('op %s %s %s %s', amopstrategy,
		                                                 amopopr::regoperator, amoppurpose,
		                                                 amopsortfamily), ', ' ORDER BY amopstrategy)
		                          FROM pg_amop WHERE amopfamily = opcfamily),
		                       (SELECT string_agg(format('proc %s %s', amprocnum, amproc::regprocedure),
		                                          ', ' ORDER BY amprocnum)
		                          FROM pg_amproc WHERE amprocfamily = opcfamily))
		           FROM pg_opclass WHERE oid = objid)
		      WHEN 'pg_am'::regclass THEN
		        (SELECT format(' %s %s', amhandler, amtype) FROM pg_am WHERE oid = objid)
		      ELSE '' END AS line
		  FROM pg_depend
		  WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
		    AND refobjid = (SELECT oid FROM pg_extension WHERE extname = '$ext')) s});
}

$node->safe_psql('postgres', 'CREATE DATABASE updated');
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('updated', "CREATE EXTENSION kdgpu VERSION '0.1'");
$node->safe_psql('fresh', 'CREATE EXTENSION kdgpu');
if ($have_postgis)
{
	$node->safe_psql($_, 'CREATE EXTENSION postgis') for ('updated', 'fresh');
	$node->safe_psql('updated', "CREATE EXTENSION kdgpu_postgis VERSION '0.1'");
	$node->safe_psql('fresh', 'CREATE EXTENSION kdgpu_postgis');
}
# the functions of 0.1 answer before the update
is($node->safe_psql('updated', q{
	CREATE TABLE pts AS SELECT i AS id, point(i, 0) AS p FROM generate_series(1, 10) i;
	SELECT string_agg(rank::text, ',') FROM kd_knn('pts', point(0, 0), 3)}), '1,2,3',
	'kd_knn answers at 0.1');
$node->safe_psql('updated', "ALTER EXTENSION $_ UPDATE") for @exts;

for my $ext (@exts)
{
	is($node->safe_psql('updated', "SELECT extversion FROM pg_extension WHERE extname = '$ext'"),
		$node->safe_psql('fresh', "SELECT extversion FROM pg_extension WHERE extname = '$ext'"),
		"$ext is at the default version after the update");
	my $fresh = catalog('fresh', $ext);
	ok(length($fresh) > 1000, "$ext has members");
	is(catalog('updated', $ext), $fresh, "$ext updated from 0.1 has the catalog of a fresh install");
	# \df+ and \do+ describe every object a user calls or names
	is($node->safe_psql('fresh', qq{
		SELECT string_agg(pg_describe_object(classid, objid, objsubid), ', ')
		  FROM pg_depend
		 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
		   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = '$ext')
		   AND classid IN ('pg_proc'::regclass, 'pg_operator'::regclass, 'pg_opclass'::regclass,
		                   'pg_type'::regclass, 'pg_am'::regclass, 'pg_class'::regclass)
		   AND obj_description(objid, classid::regclass::text) IS NULL}), '',
		"every function, operator, operator class, type, access method and view of $ext has a comment");
}
# the forms 0.2 added answer after the update, as on a fresh install
is($node->safe_psql('updated',
	"SELECT string_agg(nn_key::text, ',') FROM kd_knn('pts', point(0, 0), 3, 'id')"),
	'1,2,3', 'the key form of kd_knn answers after the update');
is($node->safe_psql('updated', q{
	CREATE INDEX pts_p ON pts USING kdgpu (p);
	SELECT trees, tree_rows FROM kd_index_stats('pts_p')}),
	'1|10', 'kd_index_stats counts trees after the update');

$node->stop;
done_testing();
