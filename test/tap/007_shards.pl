# Shards on other servers through postgres_fdw: a coordinator whose
# partitioned table has foreign partitions on three servers running kdgpu
# (split by x, the boundary x = 50 between two of them, duplicates on both
# sides of it; the third shard empty).  ORDER BY p <-> q LIMIT k through the
# coordinator is a Merge Append of foreign scans whose ORDER BY runs on the
# shards (on their kdgpu indexes), and its answers equal the same query on
# one table holding every row; kdgpu's own float8[] <-> is shipped only
# with the server option extensions 'kdgpu'.  The kd_* functions run on
# every shard and merge; their answers equal those of one table.  Row-level
# security holds as on one server, on a shard (the remote role's) and on the
# coordinator's partitioned table.  A shard lost during a call, one the
# call times out waiting for, and a stopped shard give errors naming their
# server, and no rows.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

my @shards;
for my $i (1 .. 3)
{
	my $node = PostgreSQL::Test::Cluster->new("shard$i");
	$node->init;
	$node->start;
	$node->safe_psql('postgres', q{
		CREATE EXTENSION kdgpu;
		CREATE TABLE pts (id int PRIMARY KEY, x float8, p point);
		CREATE TABLE vecs ("Id" int PRIMARY KEY, x float8, "Vec" float8[]);
	});
	push @shards, $node;
}
my $coord = PostgreSQL::Test::Cluster->new('coordinator');
$coord->init;
$coord->start;

# the rows: a grid, so distances tie, on both sides of x = 50, with
# points mirrored across the boundary
$coord->safe_psql('postgres', q{
	CREATE EXTENSION kdgpu;
	CREATE EXTENSION postgres_fdw;
	CREATE TABLE allpts (id int PRIMARY KEY, x float8, p point);
	INSERT INTO allpts SELECT i, px, point(px, py) FROM
	  (SELECT i, (i * 37 % 97)::float8 AS px, (i * 11 % 89)::float8 AS py FROM generate_series(1, 3000) i) s;
	INSERT INTO allpts SELECT id + 10000, 100 - x, point(100 - x, p[1]) FROM allpts WHERE x BETWEEN 40 AND 49;
	CREATE TABLE allvecs AS SELECT id, x, ARRAY[p[0], p[1], (id % 7)::float8] AS v FROM allpts;
});
my $rows = $coord->safe_psql('postgres', q{SELECT string_agg(format('(%s,%s,%L)', id, x, p), ',') FROM allpts WHERE x < 50});
$shards[0]->safe_psql('postgres', "INSERT INTO pts VALUES $rows");
$rows = $coord->safe_psql('postgres', q{SELECT string_agg(format('(%s,%s,%L)', id, x, p), ',') FROM allpts WHERE x >= 50});
$shards[1]->safe_psql('postgres', "INSERT INTO pts VALUES $rows");
for my $i (0 .. 1)
{
	$shards[$i]->safe_psql('postgres', q{
		INSERT INTO vecs SELECT id, x, ARRAY[p[0], p[1], (id % 7)::float8] FROM pts;
		CREATE INDEX pts_p ON pts USING kdgpu (p);
		CREATE INDEX vecs_v ON vecs USING kdgpu ("Vec");
		ANALYZE;
	});
}

my $setup = '';
for my $i (1 .. 3)
{
	my $port = $shards[$i - 1]->port;
	my $host = $shards[$i - 1]->host;
	$setup .= qq{
		CREATE SERVER s$i FOREIGN DATA WRAPPER postgres_fdw
		  OPTIONS (host '$host', port '$port', dbname 'postgres', extensions 'kdgpu');
		CREATE USER MAPPING FOR CURRENT_USER SERVER s$i;
	};
}
$coord->safe_psql('postgres', $setup . q{
	CREATE TABLE pts (id int, x float8, p point) PARTITION BY RANGE (x);
	CREATE FOREIGN TABLE pts_s1 PARTITION OF pts FOR VALUES FROM (MINVALUE) TO (50) SERVER s1 OPTIONS (table_name 'pts');
	CREATE FOREIGN TABLE pts_s2 PARTITION OF pts FOR VALUES FROM (50) TO (200) SERVER s2 OPTIONS (table_name 'pts');
	CREATE FOREIGN TABLE pts_s3 PARTITION OF pts FOR VALUES FROM (200) TO (MAXVALUE) SERVER s3 OPTIONS (table_name 'pts');
	-- the shards name the columns "Id" and "Vec" (column_name options)
	CREATE TABLE vecs (id int, x float8, v float8[]) PARTITION BY RANGE (x);
	CREATE FOREIGN TABLE vecs_s1 PARTITION OF vecs FOR VALUES FROM (MINVALUE) TO (50) SERVER s1 OPTIONS (table_name 'vecs');
	CREATE FOREIGN TABLE vecs_s2 PARTITION OF vecs FOR VALUES FROM (50) TO (200) SERVER s2 OPTIONS (table_name 'vecs');
	CREATE FOREIGN TABLE vecs_s3 PARTITION OF vecs FOR VALUES FROM (200) TO (MAXVALUE) SERVER s3 OPTIONS (table_name 'vecs');
	ALTER FOREIGN TABLE vecs_s1 ALTER id OPTIONS (column_name 'Id'), ALTER v OPTIONS (column_name 'Vec');
	ALTER FOREIGN TABLE vecs_s2 ALTER id OPTIONS (column_name 'Id'), ALTER v OPTIONS (column_name 'Vec');
	ALTER FOREIGN TABLE vecs_s3 ALTER id OPTIONS (column_name 'Id'), ALTER v OPTIONS (column_name 'Vec');
});

is($coord->safe_psql('postgres', 'SELECT count(*) FROM pts'),
	$coord->safe_psql('postgres', 'SELECT count(*) FROM allpts'), 'the shards hold every row');

# the plan: a Merge Append of foreign scans whose ORDER BY runs remotely
my $plan = $coord->safe_psql('postgres',
	q{EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM pts ORDER BY p <-> point(50, 40) LIMIT 10});
like($plan, qr/Merge Append/, 'ORDER BY <-> LIMIT merges the shards');
like($plan, qr/Remote SQL: SELECT .* ORDER BY \(p <-> '\(50,40\)'\)/,
	'each shard orders by distance itself');
$plan = $coord->safe_psql('postgres',
	q{EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM vecs ORDER BY v <-> ARRAY[50, 40, 3]::float8[] LIMIT 10});
like($plan, qr/Remote SQL: SELECT .* ORDER BY \("Vec" OPERATOR\(public\.<->\)/,
	"kdgpu's float8[] <-> is shipped with extensions 'kdgpu'");

# the shards' index scans so far
my $scans_before = $shards[0]->safe_psql('postgres',
	q{SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'pts_p'});

# answers equal one table's, ties by id (the query's own tie-break)
my @queries = ('point(50, 40)', 'point(49.5, 13)', 'point(0, 0)', 'point(100, 88)', 'point(75.25, 33.5)');
for my $q (@queries)
{
	for my $k (1, 10, 57)
	{
		my $sql = "SELECT string_agg(format('%%s:%%s', id, d), ',') FROM
		  (SELECT id, p <-> $q AS d FROM %s ORDER BY p <-> $q, id LIMIT $k) s";
		is($coord->safe_psql('postgres', sprintf($sql, 'pts')),
			$coord->safe_psql('postgres', sprintf($sql, 'allpts')),
			"ORDER BY p <-> $q, id LIMIT $k through the coordinator");
	}
}
my $vsql = "SELECT string_agg(format('%%s:%%s', id, d), ',') FROM
  (SELECT id, v <-> ARRAY[50, 40, 3]::float8[] AS d FROM %s ORDER BY v <-> ARRAY[50, 40, 3]::float8[], id LIMIT 25) s";
is($coord->safe_psql('postgres', sprintf($vsql, 'vecs')),
	$coord->safe_psql('postgres', sprintf($vsql, 'allvecs')),
	'float8[] ORDER BY <-> LIMIT through the coordinator');
# without a tie-break each shard's ORDER BY runs on its kdgpu index (ties
# between shards then come in no defined order: compare the distances)
my $dsql = "SELECT string_agg(d::text, ',') FROM
  (SELECT p <-> point(49.5, 13) AS d FROM %s ORDER BY p <-> point(49.5, 13) LIMIT 40) s";
is($coord->safe_psql('postgres', sprintf($dsql, 'pts')),
	$coord->safe_psql('postgres', sprintf($dsql, 'allpts')),
	'ORDER BY p <-> q LIMIT 40 without a tie-break: the same distances');
$shards[0]->poll_query_until('postgres',
	qq{SELECT idx_scan > $scans_before FROM pg_stat_user_indexes WHERE indexrelname = 'pts_p'})
  or die 'index statistics never arrived';
pass('the shards ordered by their kdgpu indexes');

# the kd_* functions: each shard runs the function on its table, the
# coordinator merges; compared with the same function on one table holding
# every row (key forms) and with the coordinator's own scans of the foreign
# partitions ordered by (distance, tableoid, ctid) (_parts forms)
$coord->safe_psql('postgres', q{
	CREATE TABLE qpts (qid int, q point);
	INSERT INTO qpts VALUES (1, point(50, 40)), (2, point(49.5, 13)), (3, point(0, 0)), (4, point(100, 88));
});
# the rows of two queries as one string each, equal (the first optionally
# filtered by a WHERE clause on its rows)
sub same_rows
{
	my ($got, $want, $name, $filter) = @_;
	$filter //= '';
	is($coord->safe_psql('postgres', "SELECT string_agg(r::text, ';') FROM ($got) r $filter"),
		$coord->safe_psql('postgres', "SELECT string_agg(r::text, ';') FROM ($want) r"), $name);
}
for my $q (@queries)
{
	same_rows("SELECT * FROM kd_knn('pts', $q, 25, 'id')",
		"SELECT * FROM kd_knn('allpts', $q, 25, 'id')", "kd_knn over shards, key, $q");
	same_rows("SELECT * FROM kd_knn_parts('pts', $q, 25)",
		"SELECT tableoid::regclass, ctid, p <-> $q, (row_number() OVER (ORDER BY p <-> $q, tableoid, ctid))::int
		   FROM pts ORDER BY p <-> $q, tableoid, ctid LIMIT 25", "kd_knn_parts over shards, $q");
	same_rows("SELECT * FROM kd_range('pts', $q, 6.5, 'id')",
		"SELECT * FROM kd_range('allpts', $q, 6.5, 'id')", "kd_range over shards, key, $q");
}
same_rows("SELECT * FROM kd_knn_join('pts', ARRAY[point(50, 40), point(1, 2), point(51, 88)], 9, 'id')",
	"SELECT * FROM kd_knn_join('allpts', ARRAY[point(50, 40), point(1, 2), point(51, 88)], 9, 'id')",
	'kd_knn_join over shards, an array of queries');
same_rows("SELECT * FROM kd_knn_join('pts', 'p', 'qpts'::regclass, 'q', 5, 'id', 'qid')",
	"SELECT * FROM kd_knn_join('allpts', 'p', 'qpts'::regclass, 'q', 5, 'id', 'qid')",
	'kd_knn_join over shards, queries from a table');
# All-kNN over shards whose answers come in several chunks each (about
# 21,000 points a chunk), read and filled as they arrive: equal to one
# table's, and one chunk's worth on the third shard
for my $i (0 .. 2)
{
	my $n = $i == 2 ? 700 : 30000;
	$shards[$i]->safe_psql('postgres', qq{
		CREATE TABLE many (id bigint PRIMARY KEY, p point);
		INSERT INTO many SELECT $i * 1000000 + i, point(($i * 100) + (i::bigint * 7919 % 10007) / 100.0, (i::bigint * 104729 % 10009) / 100.0)
		  FROM generate_series(1, $n) i;
		CREATE INDEX ON many USING kdgpu (p);
		VACUUM ANALYZE many;
	});
}
$coord->safe_psql('postgres', q{
	CREATE TABLE many (id bigint, p point) PARTITION BY RANGE (id);
	CREATE FOREIGN TABLE many_s1 PARTITION OF many FOR VALUES FROM (0) TO (1000000) SERVER s1 OPTIONS (table_name 'many');
	CREATE FOREIGN TABLE many_s2 PARTITION OF many FOR VALUES FROM (1000000) TO (2000000) SERVER s2 OPTIONS (table_name 'many');
	CREATE FOREIGN TABLE many_s3 PARTITION OF many FOR VALUES FROM (2000000) TO (3000000) SERVER s3 OPTIONS (table_name 'many');
});
is($coord->safe_psql('postgres', q{
	CREATE TABLE allmany AS SELECT id, p FROM many;
	SELECT count(*) FROM (
	  (SELECT * FROM kd_all_knn_arrays('many', 6, 'id') EXCEPT ALL SELECT * FROM kd_all_knn_arrays('allmany', 6, 'id'))
	  UNION ALL
	  (SELECT * FROM kd_all_knn_arrays('allmany', 6, 'id') EXCEPT ALL SELECT * FROM kd_all_knn_arrays('many', 6, 'id'))) d}),
	'0', 'All-kNN over shards of several chunks each equals one table\'s (60,700 points)');
same_rows("SELECT * FROM kd_range_join_parts('pts', ARRAY[point(50, 40), point(10, 10)], ARRAY[3.5, 2])",
	"SELECT o::int, s.* FROM unnest(ARRAY[point(50, 40), point(10, 10)], ARRAY[3.5, 2]) WITH ORDINALITY u(q, r, o),
	   LATERAL (SELECT tableoid::regclass, ctid, p <-> q, (row_number() OVER (ORDER BY p <-> q, tableoid, ctid))::int
	              FROM pts WHERE p <-> q <= r ORDER BY p <-> q, tableoid, ctid) s ORDER BY o, 5",
	'kd_range_join_parts over shards');
same_rows("SELECT * FROM kd_box('pts', point(45, 10), point(55, 20), 'id')",
	"SELECT * FROM kd_box('allpts', point(45, 10), point(55, 20), 'id')", 'kd_box over shards, key');
same_rows("SELECT * FROM kd_knn('vecs', ARRAY[50, 40, 3]::float8[], 30, 'id')",
	"SELECT * FROM kd_knn('allvecs', ARRAY[50, 40, 3]::float8[], 30, 'id')",
	'kd_knn over float8[] shards, columns named otherwise there');
same_rows("SELECT * FROM kd_all_knn('vecs', 4, 'id') ORDER BY query_key, rank",
	"SELECT * FROM kd_all_knn('allvecs', 4, 'id') ORDER BY query_key, rank",
	'kd_all_knn over float8[] shards, columns named otherwise there');

# PostGIS points over shards: geometry with an SRID and geography, split by
# x.  All-kNN's points near the boundary, and query points from a table, go
# to the shards as hex EWKB; the answers equal one table's
$_->safe_psql('postgres', q{
	CREATE EXTENSION postgis;
	CREATE EXTENSION kdgpu_postgis;
	CREATE TABLE gpts (id int PRIMARY KEY, x float8, g geometry(Point, 3857),
	                   gg geography(Point, 4326));
}) for @shards;
$coord->safe_psql('postgres', q{
	CREATE EXTENSION postgis;
	CREATE EXTENSION kdgpu_postgis;
	CREATE TABLE allg AS SELECT id, x,
	    ST_SetSRID(ST_MakePoint(p[0] * 1.25, p[1] / 3), 3857)::geometry(Point, 3857) AS g,
	    ST_SetSRID(ST_MakePoint(p[0] * 3.6 - 179.5, p[1] * 1.8 - 80), 4326)::geography(Point, 4326) AS gg
	  FROM allpts;
	CREATE TABLE gpts (id int, x float8, g geometry(Point, 3857), gg geography(Point, 4326))
	  PARTITION BY RANGE (x);
	CREATE FOREIGN TABLE gpts_s1 PARTITION OF gpts FOR VALUES FROM (MINVALUE) TO (50) SERVER s1 OPTIONS (table_name 'gpts');
	CREATE FOREIGN TABLE gpts_s2 PARTITION OF gpts FOR VALUES FROM (50) TO (MAXVALUE) SERVER s2 OPTIONS (table_name 'gpts');
	INSERT INTO gpts SELECT * FROM allg;
	CREATE TABLE gq AS SELECT id AS qid, g AS q, gg AS qg FROM allg WHERE id % 53 = 0;
});
$_->safe_psql('postgres', 'CREATE INDEX ON gpts USING kdgpu (g); CREATE INDEX ON gpts USING kdgpu (gg)')
  for @shards;
for my $col ('g', 'gg')
{
	same_rows("SELECT * FROM kd_all_knn('gpts', '$col', 4, 'id') ORDER BY query_key, rank",
		"SELECT * FROM kd_all_knn('allg', '$col', 4, 'id') ORDER BY query_key, rank",
		"kd_all_knn over PostGIS shards, column $col");
	my $qcol = $col eq 'g' ? 'q' : 'qg';
	same_rows("SELECT * FROM kd_knn_join('gpts', '$col', 'gq'::regclass, '$qcol', 6, 'id', 'qid') ORDER BY query_key, rank",
		"SELECT * FROM kd_knn_join('allg', '$col', 'gq'::regclass, '$qcol', 6, 'id', 'qid') ORDER BY query_key, rank",
		"kd_knn_join of a query table over PostGIS shards, column $col");
}
my ($gret, $gout, $gerr) = $coord->psql('postgres',
	"SET client_min_messages = debug1; SELECT count(*) FROM kd_all_knn('gpts', 'g', 4, 'id')");
like($gerr, qr/All-kNN over 2 partitions: [1-9]\d* of 3309 points queried other partitions/,
	'PostGIS points near the boundary were sent to the other shard');

# All-kNN over shards split by x, and over the same rows split by a hash
# of id (inserted through the coordinator): equal to one table's; the
# spatial split sends few points to other shards, the hash split nearly all
$coord->safe_psql('postgres', q{
	CREATE TABLE hpts (id int, x float8, p point) PARTITION BY HASH (id);
	CREATE FOREIGN TABLE hpts_0 PARTITION OF hpts FOR VALUES WITH (MODULUS 3, REMAINDER 0) SERVER s1 OPTIONS (table_name 'hpts');
	CREATE FOREIGN TABLE hpts_1 PARTITION OF hpts FOR VALUES WITH (MODULUS 3, REMAINDER 1) SERVER s2 OPTIONS (table_name 'hpts');
	CREATE TABLE hpts_2 PARTITION OF hpts FOR VALUES WITH (MODULUS 3, REMAINDER 2)
	  PARTITION BY HASH (x);
	CREATE FOREIGN TABLE hpts_20 PARTITION OF hpts_2 FOR VALUES WITH (MODULUS 2, REMAINDER 0) SERVER s3 OPTIONS (table_name 'hpts');
	CREATE FOREIGN TABLE hpts_21 PARTITION OF hpts_2 FOR VALUES WITH (MODULUS 2, REMAINDER 1) SERVER s1 OPTIONS (table_name 'hpts_more');
});
$_->safe_psql('postgres', 'CREATE TABLE hpts (id int PRIMARY KEY, x float8, p point)') for @shards;
# two partitions on shard1: they share its connection
$shards[0]->safe_psql('postgres', 'CREATE TABLE hpts_more (id int PRIMARY KEY, x float8, p point)');
$coord->safe_psql('postgres', 'INSERT INTO hpts SELECT * FROM allpts');
$_->safe_psql('postgres', 'CREATE INDEX ON hpts USING kdgpu (p)') for @shards;
my %asked;
for my $t ('pts', 'hpts')
{
	same_rows("SELECT * FROM kd_all_knn('$t', 5, 'id') ORDER BY query_key, rank",
		"SELECT * FROM kd_all_knn('allpts', 5, 'id') ORDER BY query_key, rank", "kd_all_knn over shards of $t");
	same_rows("SELECT * FROM kd_all_knn_arrays('$t', 'p', 2, 'id', true) ORDER BY query_key",
		"SELECT * FROM kd_all_knn_arrays('allpts', 'p', 2, 'id', true) ORDER BY query_key",
		"kd_all_knn_arrays over shards of $t, include_self");
	my ($ret, $stdout, $stderr) = $coord->psql('postgres',
		"SET client_min_messages = debug1; SELECT count(*) FROM kd_all_knn('$t', 5, 'id')");
	like($stderr, qr/All-kNN over [34] partitions: (\d+) of 3309 points queried other partitions/,
		"the count of points queried on other shards of $t is reported");
	($asked{$t}) = $stderr =~ /(\d+) of 3309 points queried other partitions/;
}
same_rows("SELECT * FROM kd_knn('hpts', point(50, 40), 40, 'id')",
	"SELECT * FROM kd_knn('allpts', point(50, 40), 40, 'id')", 'kd_knn over hash shards, two partitions on one server');
# query points from a sharded table: read through the coordinator
same_rows("SELECT * FROM kd_knn_join('pts', 'p', 'hpts'::regclass, 'p', 3, 'id', 'id') ORDER BY query_key, rank",
	"SELECT * FROM kd_knn_join('allpts', 'p', 'allpts'::regclass, 'p', 3, 'id', 'id') ORDER BY query_key, rank",
	'kd_knn_join with shards on both sides');
same_rows("SELECT query_rel, count(*) FROM kd_knn_join_parts('allpts', 'p', 'pts'::regclass, 'p', 2) GROUP BY 1 ORDER BY 1",
	"SELECT tableoid::regclass, 2 * count(*) FROM pts GROUP BY 1 ORDER BY 1",
	'kd_knn_join_parts names the query rows by shard');
cmp_ok($asked{pts}, '<', 600, "split by x, few points ask another shard ($asked{pts})");
cmp_ok($asked{hpts}, '>', 3000, "split by hash, nearly every point asks another shard ($asked{hpts})");
same_rows("SELECT nn_rel, count(*) FROM kd_all_knn_parts('pts', 4) GROUP BY 1 ORDER BY 1",
	"SELECT 'pts_s' || CASE WHEN o.x < 50 THEN 1 ELSE 2 END, count(*) FROM kd_all_knn('allpts', 4, 'id') a
	   JOIN allpts o ON o.id = a.nn_key GROUP BY 1 ORDER BY 1", 'kd_all_knn_parts names the shards');

# a key on two shards: All-kNN, which reads every point, refuses it
$shards[2]->safe_psql('postgres', q{INSERT INTO pts VALUES (7, 300, point(300, 1))});
my ($ret, $stdout, $stderr) = $coord->psql('postgres', q{SELECT count(*) FROM kd_all_knn('pts', 3, 'id')});
like($stderr, qr/key column "id" of table "pts" has the value 7 in more than one row/,
	'a key repeated across shards is an error for All-kNN');
$shards[2]->safe_psql('postgres', q{DELETE FROM pts});

# row-level security on a shard: the user mapping's remote role reads
# there, under that shard's policies, on both paths
$shards[0]->safe_psql('postgres', q{
	CREATE ROLE shard_reader LOGIN;
	GRANT SELECT ON pts TO shard_reader;
	ALTER TABLE pts ENABLE ROW LEVEL SECURITY;
	CREATE POLICY even ON pts TO shard_reader USING (id % 2 = 0);
});
$coord->safe_psql('postgres', q{ALTER USER MAPPING FOR CURRENT_USER SERVER s1 OPTIONS (ADD user 'shard_reader')});
same_rows("SELECT * FROM kd_knn('pts', point(20, 30), 30, 'id')",
	"SELECT id::bigint, p <-> point(20, 30), (row_number() OVER (ORDER BY p <-> point(20, 30), id))::int
	   FROM pts ORDER BY p <-> point(20, 30), id LIMIT 30", 'kd_knn over a shard with row-level security');
is($coord->safe_psql('postgres',
		"SELECT count(*) FROM kd_knn('pts', point(20, 30), 30, 'id') WHERE nn_key % 2 = 1 AND nn_key < 10000"),
	'0', "the shard's policy hides its odd keys");
same_rows("SELECT * FROM kd_all_knn('pts', 3, 'id') ORDER BY query_key, rank",
	"SELECT a.id::bigint, b.* FROM pts a, LATERAL (SELECT o.id::bigint, a.p <-> o.p,
	        (row_number() OVER (ORDER BY a.p <-> o.p, o.id))::int FROM pts o WHERE o.id <> a.id
	       ORDER BY a.p <-> o.p, o.id LIMIT 3) b WHERE a.x BETWEEN 45 AND 55 ORDER BY 1, 4",
	'kd_all_knn over a shard with row-level security', 'WHERE query_key IN (SELECT id FROM pts WHERE x BETWEEN 45 AND 55)');
$coord->safe_psql('postgres', q{ALTER USER MAPPING FOR CURRENT_USER SERVER s1 OPTIONS (DROP user)});

# row-level security on the coordinator's partitioned table: its policy
# holds for the shards' rows too (they are read through it and searched
# on the coordinator), and every function's answers equal those of the same
# query under the same policy
$coord->safe_psql('postgres', q{
	CREATE ROLE coord_reader;
	GRANT SELECT ON pts, allpts TO coord_reader;
	CREATE USER MAPPING FOR coord_reader SERVER s1 OPTIONS (password_required 'false');
	CREATE USER MAPPING FOR coord_reader SERVER s2 OPTIONS (password_required 'false');
	CREATE USER MAPPING FOR coord_reader SERVER s3 OPTIONS (password_required 'false');
	ALTER TABLE pts ENABLE ROW LEVEL SECURITY;
	CREATE POLICY visible ON pts TO coord_reader USING (id % 3 <> 0 AND x < 70);
});

# $got and $want give the same rows for coord_reader
sub same_rows_as_reader
{
	my ($got, $want, $name, $filter) = @_;
	$filter //= '';
	is($coord->safe_psql('postgres', "SET ROLE coord_reader; SELECT string_agg(r::text, ';') FROM ($got) r $filter"),
		$coord->safe_psql('postgres', "SET ROLE coord_reader; SELECT string_agg(r::text, ';') FROM ($want) r"), $name);
}
same_rows_as_reader("SELECT * FROM kd_knn('pts', point(60, 30), 40, 'id')",
	"SELECT id::bigint, p <-> point(60, 30), (row_number() OVER (ORDER BY p <-> point(60, 30), id))::int
	   FROM pts ORDER BY p <-> point(60, 30), id LIMIT 40", "kd_knn under the coordinator's policy");
is($coord->safe_psql('postgres', q{SET ROLE coord_reader;
		SELECT count(*) FROM kd_knn('pts', point(60, 30), 400, 'id') n JOIN allpts a ON a.id = n.nn_key
		 WHERE n.nn_key % 3 = 0 OR a.x >= 70}),
	'0', "the coordinator's policy hides rows of both shards");
same_rows_as_reader("SELECT * FROM kd_knn_join('pts', ARRAY[point(50, 40), point(75, 2)], 7, 'id')",
	"SELECT o::int, s.* FROM unnest(ARRAY[point(50, 40), point(75, 2)]) WITH ORDINALITY u(q, o),
	   LATERAL (SELECT id::bigint, p <-> q, (row_number() OVER (ORDER BY p <-> q, id))::int
	              FROM pts ORDER BY p <-> q, id LIMIT 7) s ORDER BY o, 4",
	"kd_knn_join under the coordinator's policy");
same_rows_as_reader("SELECT * FROM kd_all_knn('pts', 3, 'id') ORDER BY query_key, rank",
	"SELECT a.id::bigint, b.* FROM pts a, LATERAL (SELECT o.id::bigint, a.p <-> o.p,
	        (row_number() OVER (ORDER BY a.p <-> o.p, o.id))::int FROM pts o WHERE o.id <> a.id
	       ORDER BY a.p <-> o.p, o.id LIMIT 3) b WHERE a.x BETWEEN 45 AND 55 ORDER BY 1, 4",
	"kd_all_knn under the coordinator's policy", 'WHERE query_key IN (SELECT id FROM allpts WHERE x BETWEEN 45 AND 55)');
same_rows_as_reader("SELECT * FROM kd_box('pts', point(45, 10), point(72, 20), 'id') ORDER BY 1",
	"SELECT id::bigint FROM pts WHERE p <@ box(point(45, 10), point(72, 20)) ORDER BY 1",
	"kd_box under the coordinator's policy");
$coord->safe_psql('postgres', q{
	DROP POLICY visible ON pts;
	ALTER TABLE pts DISABLE ROW LEVEL SECURITY;
	DROP USER MAPPING FOR coord_reader SERVER s1;
	DROP USER MAPPING FOR coord_reader SERVER s2;
	DROP USER MAPPING FOR coord_reader SERVER s3;
	REVOKE SELECT ON pts, allpts FROM coord_reader;
	DROP ROLE coord_reader;
});

# a shard lost or slow in the middle of a call: its table is locked there,
# so the coordinator's call waits on it
my ($lockout, $lockerr) = ('', '');
my $locker = IPC::Run::start(
	[ 'psql', '-X', '-d', $shards[1]->connstr('postgres'), '-c',
	  'BEGIN; LOCK TABLE pts IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60)' ],
	'>', \$lockout, '2>', \$lockerr);
ok($shards[1]->poll_query_until('postgres', q{
	SELECT count(*) > 0 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
	 WHERE c.relname = 'pts' AND l.mode = 'AccessExclusiveLock' AND l.granted}),
	"a session on the shard holds its table locked");
my $waiting = q{SELECT count(*) > 0 FROM pg_stat_activity
	 WHERE wait_event_type = 'Lock' AND backend_type = 'client backend'};

# the shard's backend ends during a call ($sql, called $name) waiting on
# its lock: the error names the server ($error), and no rows come back
sub shard_lost_during
{
	my ($sql, $name, $error) = @_;
	my ($qout, $qerr) = ('', '');
	my $query = IPC::Run::start(
		[ 'psql', '-X', '-d', $coord->connstr('postgres'), '-c', $sql ],
		'>', \$qout, '2>', \$qerr);
	ok($shards[1]->poll_query_until('postgres', $waiting),
		"the coordinator's $name waits on the shard's lock");
	$shards[1]->safe_psql('postgres', q{
		SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		 WHERE wait_event_type = 'Lock' AND backend_type = 'client backend'});
	$query->finish;
	like($qerr, $error, "a shard lost during $name is named");
	is($qout, '', "$name returns no rows when a shard is lost");
}
shard_lost_during(q{SELECT * FROM kd_knn('pts', point(50, 40), 10, 'id')}, 'kd_knn',
	qr/terminating connection.*call to server "s2"/s);
# All-kNN reads the shards' answers on threads
shard_lost_during(q{SELECT * FROM kd_all_knn('pts', 3, 'id')}, 'kd_all_knn',
	qr/server "s2"/);

# the coordinator's statement_timeout while a shard has not answered: the
# error says which shard it was waiting for, and returns nothing
($ret, $stdout, $stderr) = $coord->psql('postgres', q{
	SET statement_timeout = '1s';
	SELECT * FROM kd_all_knn('pts', 3, 'id')});
isnt($ret, 0, 'a call waiting on a locked shard times out');
like($stderr, qr/statement timeout.*waiting for the answer of server "s2"/s,
	'the timeout names the shard not yet answered');
is($stdout, '', 'nothing partial comes back after the timeout');
ok($shards[1]->poll_query_until('postgres', $waiting, 'f'),
	"the timed-out call's statement on the shard is cancelled");
$shards[1]->safe_psql('postgres', q{
	SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	 WHERE query LIKE '%pg_sleep(60)%' AND pid <> pg_backend_pid()});
$locker->finish;

# a shard that is down: an error naming its server, nothing partial
$shards[1]->stop;
($ret, $stdout, $stderr) = $coord->psql('postgres',
	q{SELECT id FROM pts ORDER BY p <-> point(50, 40) LIMIT 10});
isnt($ret, 0, 'a query needing a stopped shard fails');
like($stderr, qr/could not connect to server "s2"/, 'the error names the stopped shard');
is($stdout, '', 'no rows come back');
($ret, $stdout, $stderr) = $coord->psql('postgres', q{SELECT * FROM kd_knn('pts', point(50, 40), 10, 'id')});
like($stderr, qr/could not connect to server "s2"/, 'kd_knn names the stopped shard');
is($stdout, '', 'kd_knn returns no rows');
$shards[1]->start;
is($coord->safe_psql('postgres', "SELECT count(*) FROM (SELECT id FROM pts ORDER BY p <-> point(50, 40) LIMIT 10) s"),
	'10', 'the shard answers again once started');

done_testing();
