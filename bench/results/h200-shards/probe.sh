#!/bin/bash
# run after bench/shards/run (N=10000000 LAYOUTS=spatial) on the GPU host, its servers stopped: restarts them;
# the shards' own All-kNN alone and four at once, and the coordinator
B=/tmp/pgrun/pg/usr/lib/postgresql/15/bin
W=${WORK:-/tmp/kds}
for s in 0 1 2 3 4; do
  su postgres -s /bin/bash -c "LD_LIBRARY_PATH=$LD_LIBRARY_PATH $B/pg_ctl -D $W/data$s -l $W/data$s.log -w -o \"-p $((5450 + s)) -k $W -c listen_addresses='' -c fsync=off -c shared_buffers=1GB -c max_wal_size=8GB\" start >/dev/null"
done
P="$B/psql -X -At -h $W -U postgres -d postgres"
C="SELECT count(*), sum(length(c)) FROM (SELECT kd_all_knn_chunks('pts','p',10,'id',false) c) s"
A="SELECT count(*) FROM kd_all_knn_arrays('pts', 10, 'id')"
echo "== shard 1 alone, one session: chunks made (not sent) twice, count(*) of kd_all_knn_arrays twice"
$P -p 5451 -c '\timing on' -c "$C" -c "$C" -c "$A" -c "$A" | grep Time
echo "== four shards at once, each in its own session: chunks made twice (the second warm)"
for s in 1 2 3 4; do ( $P -p 545$s -c '\timing on' -c "$C" -c "$C" | grep Time | tr '\n' ' ' | sed "s/^/shard $s: /"; echo ) & done; wait
echo "== four shards at once: count(*) of kd_all_knn_arrays twice"
for s in 1 2 3 4; do ( $P -p 545$s -c '\timing on' -c "$A" -c "$A" | grep Time | tr '\n' ' ' | sed "s/^/shard $s: /"; echo ) & done; wait
echo "== coordinator, twice in one session"
$P -p 5450 -c "SET client_min_messages = debug1" -c '\timing on' -c "$A" -c "$A" 2>&1 | grep -v "DEBUG:  kdgpu: \(build\|GPU\|search\)"
for s in 0 1 2 3 4; do su postgres -s /bin/bash -c "LD_LIBRARY_PATH=$LD_LIBRARY_PATH $B/pg_ctl -D $W/data$s -m immediate stop >/dev/null"; done
