-- setup.sql: helper functions the benchmark harness creates in the target
-- database (all named kb_*; bench/run --clean drops them with the tables).
--
-- kb_u(seed, i, j): a uniform number in [0, 1) from a hash of (i, j) and the
--   seed, so every data set is the same on every server and in any order.
-- kb_repeat(stmt, runs, budget_ms): run a statement (a SELECT returning one
--   bigint, a count, or a command such as CREATE INDEX) up to `runs` times, stopping once the runs took budget_ms;
--   returns each run's milliseconds, measured inside the server, and the count.
-- kb_latency(stmt, args, warmup, budget_ms): run a statement with $1 bound to
--   each element of args in turn (after `warmup` untimed calls) and return
--   each call's milliseconds and the sum of the counts it returned.
SET client_min_messages = warning;

CREATE OR REPLACE FUNCTION kb_u(seed int8, i int8, j int4) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT ((hashint8extended($2 * 16 + $3, $1) >> 11) & 9007199254740991)::float8 / 9007199254740992 $$;

CREATE OR REPLACE FUNCTION kb_repeat(stmt text, runs int, budget_ms float8,
									 OUT times float8[], OUT nrows int8)
LANGUAGE plpgsql AS $$
DECLARE
	t0		timestamptz;
	total	float8 := 0;
	ms		float8;
BEGIN
	times := '{}';
	FOR i IN 1 .. runs LOOP
		t0 := clock_timestamp();
		IF stmt ~* '^\s*select' THEN
			EXECUTE stmt INTO nrows;
		ELSE
			EXECUTE stmt;
		END IF;
		ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
		times := times || ms;
		total := total + ms;
		EXIT WHEN total >= budget_ms;
	END LOOP;
END $$;

CREATE OR REPLACE FUNCTION kb_latency(stmt text, args text[], warmup int, budget_ms float8,
									  OUT times float8[], OUT nrows int8)
LANGUAGE plpgsql AS $$
DECLARE
	t0		timestamptz;
	total	float8 := 0;
	ms		float8;
	r		int8;
BEGIN
	times := '{}';
	nrows := 0;
	FOR i IN 1 .. least(warmup, cardinality(args)) LOOP
		EXECUTE stmt INTO r USING args[i];
	END LOOP;
	FOR i IN 1 .. cardinality(args) LOOP
		t0 := clock_timestamp();
		EXECUTE stmt INTO r USING args[i];
		ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
		times := times || ms;
		nrows := nrows + r;
		total := total + ms;
		EXIT WHEN total >= budget_ms;
	END LOOP;
END $$;
