#!/bin/bash
# test/gpu/faults.sh: the reliability checks that need an NVIDIA GPU.
#
#   test/gpu/faults.sh [memcheck] [inject] [sql]     (default: all three)
#
#   memcheck  the engine tests on the GPU under compute-sanitizer memcheck
#             with --leak-check full (ENGINE_ARGS, default "-q 8 -l": fewer
#             queries per case, no 1M-point sets; ENGINE_ARGS= runs them all,
#             which takes much longer under memcheck)
#   inject    test/fault/fault_test.c "real" under compute-sanitizer, once
#             per fault site: KDGPU_FAULT=nomem:N (the N-th device allocation
#             fails), kernel:N (the N-th synchronization reports a failed
#             kernel) and trap:N (a kernel really traps: a sticky error),
#             N = 1, 2, ... until the fault is no longer reached (or
#             FAULT_MAX); FAULT_KINDS (default "nomem kernel trap") picks
#             the kinds, to split the sweep into shorter runs.  Each run
#             checks, for the kd-tree's work and for the vantage-point
#             tree's build and kNN, that AUTO gives the CPU's exact
#             answers, GPU mode answers exactly or fails cleanly, nothing
#             leaks on the device, and the next query works.
#   sql       on a throwaway cluster (port FAULT_PORT, default 54329):
#             - the pgTAP data suites with the server started under each of
#               KDGPU_FAULT=nomem:1, nomem:3, kernel:1, kernel:2, trap:1:
#               every AUTO answer still equals brute force in SQL, and a
#               GPU-mode query fails with a clear error or answers right;
#             - cancel and statement_timeout during GPU (and CPU) All-kNN
#               with k = 1024 on CANCEL_POINTS (1M) points, CANCEL_AFTER_MS
#               (1200) after it starts, when the table has been read and the
#               device is at work (tune it if the GPU finishes first): the
#               query must end within LATENCY_MS (default 150) of the cancel
#               (the figure includes psql's start, ~10-30 ms);
#             - kill -9 of a backend during a GPU REINDEX and during GPU
#               All-kNN: the server recovers, every kdgpu index passes
#               kd_index_check and answers like a sequential scan, and the
#               GPU works in the next session.
#
# Needs: the CUDA toolkit (nvcc, compute-sanitizer), PostgreSQL 15 with
# kdgpu installed (make && make install), pgTAP and pg_prove for "sql".
# Run from the repository root.  As root, the cluster runs as "postgres".
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."

PARTS=${*:-memcheck inject sql}
SAN=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
ENGINE_ARGS=${ENGINE_ARGS:--q 8 -l}
FAULT_MAX=${FAULT_MAX:-80}
FAULT_KINDS=${FAULT_KINDS:-nomem kernel trap}
CANCEL_AFTER_MS=${CANCEL_AFTER_MS:-1200}
PORT=${FAULT_PORT:-54329}
LATENCY_MS=${LATENCY_MS:-150}
KILL_DEVICE=${KILL_DEVICE:-gpu}
CANCEL_POINTS=${CANCEL_POINTS:-1000000}
BIN=${PG_BINDIR:-$(pg_config --bindir)}
LIB=$PWD/build/kdgpu_cuda.so
work=$(mktemp -d /tmp/kdgpu-faults.XXXXXX)
chmod 755 "$work"
passed=0
failed=0

# ok CONDITION-EXIT-STATUS DESCRIPTION
ok() {
	if [ "$1" -eq 0 ]; then
		passed=$((passed + 1))
		echo "ok - $2"
	else
		failed=$((failed + 1))
		echo "not ok - $2"
	fi
}

# add the "N passed, N failed" line of a log
add_log() {
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
	if [ -z "$line" ]; then
		failed=$((failed + 1))
		echo "not ok - no result line in $1"
		return
	fi
	passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
	failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
}

# FAULTS_PREBUILT=1: the build (kdgpu_cuda.so, engine-test) was made
# elsewhere, e.g. on a GPU machine with no PostgreSQL to build against
if [ -z "${FAULTS_PREBUILT:-}" ]; then
	make -s >/dev/null || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
fi
[ -f "$LIB" ] || { echo "no $LIB: nvcc not found?"; echo "0 passed, 1 failed"; exit 1; }

# ---- memcheck ---------------------------------------------------------------
if [[ " $PARTS " == *" memcheck "* ]]; then
	echo "== engine tests under compute-sanitizer memcheck --leak-check full"
	[ -n "${FAULTS_PREBUILT:-}" ] || make -s build/engine-test
	KDGPU_CUDA_LIB=$LIB "$SAN" --tool memcheck --leak-check full --error-exitcode 99 \
		build/engine-test $ENGINE_ARGS >"$work/memcheck.log" 2>&1
	rc=$?
	grep -E 'ERROR SUMMARY|LEAK SUMMARY|passed, .* failed|^not ok' "$work/memcheck.log" | tail -n 20
	add_log "$work/memcheck.log"
	ok "$rc" "engine tests clean under memcheck (exit $rc)"
fi

# ---- inject -----------------------------------------------------------------
if [[ " $PARTS " == *" inject "* ]]; then
	echo "== injected faults, each under compute-sanitizer memcheck --leak-check full"
	# no ASan here: it does not mix with the CUDA runtime under the sanitizer
	gcc -O2 -g -std=gnu99 -ffp-contract=off -pthread -Isrc/engine -o "$work/fault-test" \
		test/fault/fault_test.c src/engine/*.c -ldl -lm || exit 1
	for kind in $FAULT_KINDS; do
		sites=0
		for n in $(seq 1 "$FAULT_MAX"); do
			log=$work/inject-$kind-$n.log
			# a deliberate trap is itself a sanitizer report: for trap,
			# judge the sanitizer by its leak report only
			exitcode=(--error-exitcode 99)
			[ "$kind" = trap ] && exitcode=()
			KDGPU_FAULT=$kind:$n KDGPU_CUDA_LIB=$LIB "$SAN" --tool memcheck --leak-check full \
				"${exitcode[@]}" "$work/fault-test" real >"$log" 2>&1
			rc=$?
			if grep -qE 'Leaked [0-9]+ bytes' "$log"; then
				rc=98
			fi
			if grep -q '^fault not reached' "$log"; then
				break
			fi
			sites=$n
			add_log "$log"
			ok "$rc" "KDGPU_FAULT=$kind:$n: exact answers, clean failures, no device leak (exit $rc)"
			[ "$rc" -ne 0 ] && grep -E '^not ok|ERROR SUMMARY|LEAK SUMMARY|Leaked' "$log" | head -n 10
		done
		echo "# $kind: $sites fault sites reached"
		[ "$sites" -gt 0 ]
		ok $? "KDGPU_FAULT=$kind reaches at least one site"
	done
fi

# ---- sql ----------------------------------------------------------------------
if [[ " $PARTS " == *" sql "* ]]; then
	RUNAS=()
	if [ "$(id -u)" -eq 0 ]; then
		RUNAS=(su postgres -s /bin/bash -c)
		chown postgres "$work"
	fi
	DATA=$work/data
	# as_server COMMAND: run a shell command as the cluster's owner
	as_server() {
		if [ ${#RUNAS[@]} -gt 0 ]; then
			"${RUNAS[@]}" "$1"
		else
			bash -c "$1"
		fi
	}
	export PGHOST=$work PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
	PSQL=("$BIN/psql" -X -q -At -v ON_ERROR_STOP=1)
	# start FAULT: (re)start the cluster with KDGPU_FAULT=FAULT in its environment
	start() {
		as_server "'$BIN/pg_ctl' -D '$DATA' -m immediate stop >/dev/null 2>&1; \
			LD_LIBRARY_PATH='${LD_LIBRARY_PATH:-}' KDGPU_FAULT='$1' '$BIN/pg_ctl' -D '$DATA' -l '$work/server.log' -w \
			-o \"-p $PORT -k $work -c listen_addresses=''\" start >/dev/null"
	}
	as_server "LD_LIBRARY_PATH='${LD_LIBRARY_PATH:-}' '$BIN/initdb' -D '$DATA' -U postgres -A trust >/dev/null" || exit 1
	start ""
	"${PSQL[@]}" -c "CREATE EXTENSION IF NOT EXISTS kdgpu; CREATE EXTENSION IF NOT EXISTS pgtap;" || exit 1
	gpu=$("${PSQL[@]}" -c "SELECT gpu_usable FROM kd_status()")
	echo "# GPU usable by the server: $gpu"
	[ "$gpu" = t ]
	ok $? "the server sees the GPU"

	echo "== the data suites with the server under injected faults"
	for fault in nomem:1 nomem:3 kernel:1 kernel:2 trap:1; do
		start "$fault"
		pg_prove test/pgtap/point_data.sql test/pgtap/array_data.sql test/pgtap/edge_cases.sql \
			>"$work/prove-$fault.log" 2>&1
		ok $? "KDGPU_FAULT=$fault: AUTO answers equal brute force in SQL"
		# GPU mode: an exact answer or a clear error, then the next query works
		out=$("${PSQL[@]}" 2>&1 <<-'EOF'
			SET kdgpu.device = 'gpu';
			SET kdgpu.gpu_min_points = 0;
			CREATE TEMP TABLE g AS SELECT point(i % 100, i / 100) p FROM generate_series(1, 20000) i;
			DO $$
			BEGIN
			  PERFORM * FROM kd_all_knn('g', 5);
			EXCEPTION WHEN OTHERS THEN
			  RAISE NOTICE 'gpu error: % %', SQLSTATE, SQLERRM;
			END $$;
			SET kdgpu.device = 'auto';
			SELECT count(*) = 100000 FROM kd_all_knn('g', 5);
			EOF
		)
		echo "$out" | sed 's/^/#   /'
		! grep -qE 'gpu error: (XX|25|40)' <<<"$out" && [ "$(tail -n 1 <<<"$out")" = t ]
		ok $? "KDGPU_FAULT=$fault: GPU mode fails with a clear SQLSTATE, AUTO works after"
	done
	start ""

	echo "== cancel and statement_timeout latency"
	"${PSQL[@]}" -c "CREATE TABLE cancel_pts AS SELECT point(random() * 1e4, random() * 1e4) p
	                 FROM generate_series(1, $CANCEL_POINTS)" || exit 1
	for dev in gpu cpu; do
		# statement_timeout: the query ends within LATENCY_MS of the timeout
		t0=$(date +%s%N)
		err=$("${PSQL[@]}" -c "SET kdgpu.device = '$dev'; SET kdgpu.gpu_min_points = 0;
			SET statement_timeout = '${CANCEL_AFTER_MS}ms'; SELECT count(*) FROM kd_all_knn('cancel_pts', 1024)" 2>&1)
		ms=$(( ($(date +%s%N) - t0) / 1000000 - CANCEL_AFTER_MS ))
		echo "# $dev statement_timeout: ended $ms ms after the timeout: $err"
		grep -q 'statement timeout' <<<"$err" && [ "$ms" -le "$LATENCY_MS" ]
		ok $? "$dev All-kNN ends within $LATENCY_MS ms of statement_timeout ($ms ms)"
		# pg_cancel_backend from another session
		"${PSQL[@]}" -c "SET application_name = 'cancel_me'; SET kdgpu.device = '$dev';
			SET kdgpu.gpu_min_points = 0; SELECT count(*) FROM kd_all_knn('cancel_pts', 1024)" \
			>"$work/cancel.log" 2>&1 &
		bg=$!
		sleep "$(awk -v ms="$CANCEL_AFTER_MS" 'BEGIN { print ms / 1000 }')"
		t0=$(date +%s%N)
		"${PSQL[@]}" -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'cancel_me'" >/dev/null
		wait "$bg"
		ms=$(( ($(date +%s%N) - t0) / 1000000 ))
		echo "# $dev pg_cancel_backend: the query ended after $ms ms: $(cat "$work/cancel.log")"
		grep -q 'canceling statement' "$work/cancel.log" && [ "$ms" -le "$LATENCY_MS" ]
		ok $? "$dev All-kNN ends within $LATENCY_MS ms of pg_cancel_backend ($ms ms)"
	done

	echo "== kill -9 of a backend during GPU work"
	"${PSQL[@]}" -c "CREATE TABLE crash_pts (id serial, p point);
		INSERT INTO crash_pts (p) SELECT point(random() * 1e4, random() * 1e4) FROM generate_series(1, $CANCEL_POINTS);
		CREATE INDEX crash_idx ON crash_pts USING kdgpu (p);" || exit 1
	# each: the work, and a query that is true once it is running on the device
	for what in reindex allknn; do
		if [ "$what" = reindex ]; then
			work_sql="REINDEX INDEX crash_idx"
			running="SELECT count(*) > 0 FROM pg_stat_progress_create_index WHERE phase LIKE 'building%'"
		else
			work_sql="INSERT INTO crash_pts (p) SELECT point(random(), random()) FROM generate_series(1, 1000);
				SELECT count(*) FROM kd_all_knn('crash_pts', 1024)"
			running="SELECT count(*) > 0 FROM pg_stat_activity WHERE application_name = 'kill_me'
				AND query LIKE '%kd_all_knn%' AND now() - query_start > interval '0.5 s'"
		fi
		"${PSQL[@]}" -c "SET application_name = 'kill_me'; SET kdgpu.device = '$KILL_DEVICE';
			SET kdgpu.gpu_min_points = 0; $work_sql" >"$work/kill.log" 2>&1 &
		bg=$!
		for _ in $(seq 1 600); do
			[ "$("${PSQL[@]}" -c "$running" 2>/dev/null)" = t ] && break
			sleep 0.05
		done
		pid=$("${PSQL[@]}" -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'kill_me'")
		[ -n "$pid" ] && kill -9 "$pid"
		wait "$bg"
		grep -qE 'terminated abnormally|server closed the connection' "$work/kill.log"
		ok $? "kill -9 hit the backend during the $what ($(head -c 200 "$work/kill.log" | tr '\n' ' '))"
		for _ in $(seq 1 60); do
			"$BIN/pg_isready" -q && "${PSQL[@]}" -c "SELECT 1" >/dev/null 2>&1 && break
			sleep 1
		done
		res=$("${PSQL[@]}" 2>&1 <<-'EOF'
			SELECT bool_and(kd_index_check(c.oid)) FROM pg_class c JOIN pg_am a ON a.oid = c.relam
			 WHERE a.amname = 'kdgpu';
			SET enable_seqscan = off;
			CREATE TEMP TABLE via_index AS
			  SELECT q.i, array_agg(t.ctid ORDER BY t.p <-> point(q.i * 97 % 10000, q.i * 31 % 10000), t.ctid) a
			    FROM generate_series(1, 20) q(i),
			         LATERAL (SELECT ctid, p FROM crash_pts ORDER BY p <-> point(q.i * 97 % 10000, q.i * 31 % 10000) LIMIT 20) t
			   GROUP BY q.i;
			RESET enable_seqscan;
			SET enable_indexscan = off;
			SET enable_bitmapscan = off;
			SELECT bool_and(v.a = s.a) FROM via_index v, LATERAL (
			  SELECT array_agg(ctid ORDER BY d, ctid) a FROM (
			    SELECT ctid, p <-> point(v.i * 97 % 10000, v.i * 31 % 10000) d FROM crash_pts
			     ORDER BY 2, 1 LIMIT 20) x) s;
			SET kdgpu.device = 'gpu';
			SET kdgpu.gpu_min_points = 0;
			SELECT count(*) > 0 FROM kd_knn('crash_pts', point(5000, 5000), 10);
			EOF
		)
		echo "# after kill -9 during the $what: $(tr '\n' ' ' <<<"$res")"
		[ "$res" = "$(printf 't\nt\nt')" ]
		ok $? "kill -9 during the $what: indexes sound, index = seqscan, GPU usable after"
	done
	as_server "LD_LIBRARY_PATH='${LD_LIBRARY_PATH:-}' '$BIN/pg_ctl' -D '$DATA' -m fast stop >/dev/null"
fi

echo "logs in $work"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
