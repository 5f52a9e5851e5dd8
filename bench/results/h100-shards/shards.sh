#!/bin/bash
# 4 shards on one host (Unix sockets, ports 5441-5444) behind a coordinator (5432)
# Run on the GPU host from the repository root with the PostgreSQL bundle of
# ../shared/tools (pg-bundle, pg-run) in .dev/ and kdgpu installed into
# .dev/stage; N points per shard (default 1M), output under $OUT.
N=${N:-1000000}
exec 3>&1
exec 2>>$OUT/setup.txt
eval "$(.dev/pg-run .dev/pg.tar.xz .dev/stage)"
R=/tmp/pgrun; B=$R/pg/usr/lib/postgresql/15/bin
as_pg() { su postgres -s /bin/bash -c "$*"; }
for s in 1 2 3 4; do
  [ -d $R/shard$s ] && as_pg "LD_LIBRARY_PATH=$LD_LIBRARY_PATH $B/pg_ctl -D $R/shard$s -m immediate stop >/dev/null 2>&1"
  rm -rf $R/shard$s
  as_pg "LD_LIBRARY_PATH=$LD_LIBRARY_PATH $B/initdb -D $R/shard$s -U postgres -A trust --no-sync -E UTF8 --locale=C >/dev/null 2>&1"
  as_pg "LD_LIBRARY_PATH=$LD_LIBRARY_PATH $B/pg_ctl -D $R/shard$s -l $R/shard$s.log -w -o \"-p 544$s -k $R -c listen_addresses='' -c fsync=off -c shared_buffers=2GB\" start >/dev/null"
done
pids=()
for s in 1 2 3 4; do
  psql -X -p 544$s -q -c "create extension kdgpu" \
    -c "create table pts as select (($s - 1) * $N + i)::bigint as id, $s as gx, point(250 * ($s - 1) + random() * 250, random() * 1000) as p from generate_series(1, $N) i" \
    -c "set maintenance_work_mem = '2GB'" -c "create index on pts using kdgpu (p)" -c "vacuum analyze pts" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
psql -X -q <<SQL
create extension kdgpu; create extension postgres_fdw version '1.0';
create table pts (id bigint, gx int, p point) partition by list (gx);
create table q as select i::bigint as id, point(random() * 1000, random() * 1000) as p from generate_series(1, $N / 10) i;
analyze q;
SQL
for s in 1 2 3 4; do
  psql -X -q -c "create server shard$s foreign data wrapper postgres_fdw options (host '$R', port '544$s', dbname 'postgres', extensions 'kdgpu', async_capable 'true')" \
    -c "create user mapping for postgres server shard$s options (user 'postgres')" \
    -c "create foreign table pts_$s partition of pts for values in ($s) server shard$s options (table_name 'pts')"
  psql -X -q -p 544$s -c "create table q as select i::bigint as id, point(random() * 1000, random() * 1000) as p from generate_series(1, $N / 10) i" -c "analyze q"
done
psql -X <<'SQL' 2>&1 | tee $OUT/shards.txt
\timing on
select count(*) from pts;
-- one shard, locally
\c postgres postgres /tmp/pgrun 5441
\timing on
select count(*) from kd_all_knn_arrays('pts', 10, 'id');
select count(*) from kd_all_knn_arrays('pts', 10, 'id');
select count(*) from kd_knn_join('pts', 'q', 10, 'id', 'id');
select count(*) from kd_knn_join('pts', 'q', 10, 'id', 'id');
select id from pts order by p <-> point(100, 500) limit 10;
select id from pts order by p <-> point(100, 500) limit 10;
-- the coordinator over 4 shards (4x the points)
\c postgres postgres /tmp/pgrun 5432
\timing on
set client_min_messages = debug1;
select count(*) from kd_all_knn_arrays('pts', 10, 'id');
reset client_min_messages;
select count(*) from kd_all_knn_arrays('pts', 10, 'id');
select count(*) from kd_knn_join('pts', 'q', 10, 'id', 'id');
select count(*) from kd_knn_join('pts', 'q', 10, 'id', 'id');
explain (costs off) select id from pts order by p <-> point(100, 500) limit 10;
select id from pts order by p <-> point(100, 500) limit 10;
select id from pts order by p <-> point(100, 500) limit 10;
select id from pts order by p <-> point(600, 500) limit 10;
select id from pts order by p <-> point(900, 10) limit 10;
SQL
