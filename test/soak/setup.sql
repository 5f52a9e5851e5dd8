-- The soak's tables: points and 3-D float8[] points, each with a kdgpu
-- index, and the checks the pgbench scripts call.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
DROP SCHEMA IF EXISTS soak CASCADE;
CREATE SCHEMA soak;
CREATE TABLE soak.sp (id bigserial PRIMARY KEY, p point);
INSERT INTO soak.sp (p) SELECT point(random() * 1000, random() * 1000) FROM generate_series(1, :rows);
CREATE INDEX sp_idx ON soak.sp USING kdgpu (p);
CREATE TABLE soak.sv (id bigserial PRIMARY KEY, v float8[]);
INSERT INTO soak.sv (v) SELECT ARRAY[random() * 100, random() * 100, random() * 100]
  FROM generate_series(1, :rows);
CREATE INDEX sv_idx ON soak.sv USING kdgpu (v);
ANALYZE soak.sp, soak.sv;

-- raise an error, which aborts the pgbench client and fails the soak
CREATE FUNCTION soak.fail(what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'soak check failed: %', what;
END $$;

-- Every answer below is compared, in one statement (one snapshot), with a
-- brute force whose ORDER BY expression no index can serve.
CREATE FUNCTION soak.check_knn(q point) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN
    (SELECT array_agg(nn_ctid ORDER BY rank) FROM kd_knn('soak.sp', q, 10))
    IS DISTINCT FROM
    (SELECT array_agg(ctid ORDER BY d, ctid) FROM
       (SELECT ctid, (p <-> q) + 0 d FROM soak.sp WHERE p IS NOT NULL ORDER BY 2, 1 LIMIT 10) b)
  THEN soak.fail('kd_knn at ' || q::text) ELSE true END
$$;
CREATE FUNCTION soak.check_index(q point) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN
    (SELECT array_agg(ctid ORDER BY d, ctid) FROM
       (SELECT ctid, p <-> q d FROM soak.sp ORDER BY p <-> q LIMIT 10) i)
    IS DISTINCT FROM
    (SELECT array_agg(ctid ORDER BY d, ctid) FROM
       (SELECT ctid, (p <-> q) + 0 d FROM soak.sp WHERE p IS NOT NULL ORDER BY 2, 1 LIMIT 10) b)
  THEN soak.fail('index scan at ' || q::text) ELSE true END
$$;
CREATE FUNCTION soak.check_index_v(q float8[]) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN
    (SELECT array_agg(ctid ORDER BY d, ctid) FROM
       (SELECT ctid, v <-> q d FROM soak.sv ORDER BY v <-> q LIMIT 10) i)
    IS DISTINCT FROM
    (SELECT array_agg(ctid ORDER BY d, ctid) FROM
       (SELECT ctid, kd_distance(v, q) d FROM soak.sv WHERE cardinality(v) > 0 ORDER BY 2, 1 LIMIT 10) b)
  THEN soak.fail('float8[] index scan at ' || q::text) ELSE true END
$$;
