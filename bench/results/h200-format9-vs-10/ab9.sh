#!/bin/bash
# the same host and table: index format 9 (commit d4bfefb) and format 10
# (the working tree) taking turns, the index rebuilt by each; pgbench
# LIMIT 10 with 1 and 16 clients, prepared, and an index-only LIMIT 10 loop
T0=$(date +%s)
eval "$(PGRUN_OPTS='-c max_wal_size=8GB' .dev/pg-run .dev/pg.tar.xz .dev/stage)" || exit 1
LIB=/tmp/pgrun/pg/usr/lib/postgresql/15/lib
cp $LIB/kdgpu.so /tmp/kdgpu_f10.so; cp .dev/kdgpu_f9.so /tmp/kdgpu_f9.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
psql -X -q <<'S'
SET client_min_messages = warning;
CREATE EXTENSION kdgpu; CREATE EXTENSION pg_prewarm VERSION '1.1';
SELECT setseed(0.25);
CREATE TABLE ab AS SELECT i AS id, point(random(), random()) AS p FROM generate_series(1, 10000000) i;
VACUUM ANALYZE ab;
CREATE INDEX ab_p ON ab USING kdgpu (p);
CREATE FUNCTION lp(n int) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; c int; q point;
BEGIN
  PERFORM setseed(0.5);
  t0 := clock_timestamp();
  FOR i IN 1..n LOOP
    q := point(random(), random());
    SELECT count(*) INTO c FROM (SELECT p FROM ab ORDER BY p <-> q LIMIT 10) s;
  END LOOP;
  RETURN round((extract(epoch FROM clock_timestamp() - t0) * 1e6 / n)::numeric, 1);
END $$;
S
printf '\\set x random(0, 1000000)\n\\set y random(0, 1000000)\nSELECT id FROM ab ORDER BY p <-> point(:x / 1000000.0, :y / 1000000.0) LIMIT 10;\n' > /tmp/knn.sql
echo "setup at $(( $(date +%s) - T0 )) s"
for round in 1 2 3; do
  for v in f9 f10; do
    cp /tmp/kdgpu_$v.so $LIB/kdgpu.so.tmp && mv $LIB/kdgpu.so.tmp $LIB/kdgpu.so
    psql -X -At -q -c "REINDEX INDEX ab_p" -c "SELECT pg_prewarm('ab'), pg_prewarm('ab_p')" >/dev/null
    pages=$(psql -X -At -c "SELECT pages FROM kd_index_stats('ab_p')")
    c1=$(pgbench -n -M prepared -c 1 -T 4 -f /tmp/knn.sql 2>&1 | awk '/^tps/ {printf "%.0f", $3}')
    c16=$(pgbench -n -M prepared -c 16 -j 16 -T 4 -f /tmp/knn.sql 2>&1 | awk '/^tps/ {printf "%.0f", $3}')
    ios=$(psql -X -At -q -c "SET enable_seqscan = off" -c "SELECT lp(20000)")
    echo "$round $v pages $pages c1-prepared $c1/s c16-prepared $c16/s ios-loop $ios us"
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
