#!/bin/bash
# the same host and table, two builds of format 10 taking turns:
# 52725de (old) and the working tree (new: the near child keeps its
# parent's bound, no quals call per side without quals, no division in locate)
T0=$(date +%s)
eval "$(PGRUN_OPTS='-c max_wal_size=8GB' .dev/pg-run .dev/pg.tar.xz .dev/stage)" || exit 1
LIB=/tmp/pgrun/pg/usr/lib/postgresql/15/lib
cp $LIB/kdgpu.so /tmp/kdgpu_old.so; cp .dev/kdgpu_micro.so /tmp/kdgpu_new.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
psql -X -q <<'S'
SET client_min_messages = warning;
CREATE EXTENSION kdgpu; CREATE EXTENSION pg_prewarm VERSION '1.1';
SELECT setseed(0.25);
CREATE TABLE ab AS SELECT i AS id, point(random(), random()) AS p FROM generate_series(1, 10000000) i;
VACUUM ANALYZE ab;
CREATE INDEX ab_p ON ab USING kdgpu (p);
S
psql -X -At -c "SELECT trees, pages FROM kd_index_stats('ab_p')" -c "SELECT pg_prewarm('ab'), pg_prewarm('ab_p')"
echo "setup at $(( $(date +%s) - T0 )) s"
psql -X -q <<'S'
CREATE FUNCTION lp(kind text, r float8, n int) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; c int; q point;
BEGIN
  PERFORM setseed(0.5);
  t0 := clock_timestamp();
  FOR i IN 1..n LOOP
    q := point(random(), random());
    IF kind = 'knn' THEN
      SELECT count(*) INTO c FROM (SELECT p FROM ab ORDER BY p <-> q LIMIT 10) s;
    ELSE
      SELECT count(*) INTO c FROM ab WHERE p <@ kd_ball(q, r);
    END IF;
  END LOOP;
  RETURN round((extract(epoch FROM clock_timestamp() - t0) * 1e6 / n)::numeric, 1);
END $$;
S
printf "\\set x random(0, 1000000)\n\\set y random(0, 1000000)\nSELECT id FROM ab ORDER BY p <-> point(:x / 1000000.0, :y / 1000000.0) LIMIT 10;\n" > /tmp/knn.sql
for round in 1 2 3 4; do
  for v in old new; do
    cp /tmp/kdgpu_$v.so $LIB/kdgpu.so.tmp && mv $LIB/kdgpu.so.tmp $LIB/kdgpu.so
    c16=$(pgbench -n -M prepared -c 16 -j 16 -T 3 -f /tmp/knn.sql 2>&1 | awk '/^tps/ {printf "%.0f", $3}')
    echo "$round $v c16-prepared $c16 $(psql -X -At -q -c "SET enable_seqscan = off; SET enable_bitmapscan = off" -c "SELECT concat_ws(' ', 'knn-ios', lp('knn', 0, 50000), 'r10', lp('radius', 0.000564, 50000), 'r0.1%', lp('radius', 0.01784, 300), 'r1%', lp('radius', 0.0564, 30))")"
  done
done
echo "done at $(( $(date +%s) - T0 )) s"
