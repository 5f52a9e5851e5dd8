-- the kdgpu.* settings: values, limits, and identical results under each
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;
SELECT setseed(0.125);

-- the settings exist once the library is loaded (by any kdgpu function)
LOAD 'kdgpu';
SHOW kdgpu.device;
SHOW kdgpu.gpu_min_points;
SHOW kdgpu.gpu_memory_limit;
SHOW kdgpu.cpu_threads;
SELECT name, vartype, unit, min_val, max_val, enumvals, context
  FROM pg_settings WHERE name LIKE 'kdgpu.%' ORDER BY name;

SET kdgpu.device = cpu;
SHOW kdgpu.device;
SELECT device FROM kd_status();
SET kdgpu.device = 'auto';
SET kdgpu.device = fast;
SET kdgpu.gpu_min_points = 0;
SHOW kdgpu.gpu_min_points;
SET kdgpu.gpu_min_points = -1;
SET kdgpu.gpu_memory_limit = '512MB';
SHOW kdgpu.gpu_memory_limit;
SET kdgpu.gpu_memory_limit = '2GB';
SHOW kdgpu.gpu_memory_limit;
SET kdgpu.gpu_memory_limit = -1;
SET kdgpu.cpu_threads = 1;
SELECT cpu_threads FROM kd_status();
SET kdgpu.cpu_threads = 2000;
SET kdgpu.no_such_setting = 1;
RESET ALL;

-- the same answers whatever the device, threads and threshold
CREATE TABLE pts (p point);
INSERT INTO pts SELECT point(random() * 100, random() * 100) FROM generate_series(1, 5000);
INSERT INTO pts SELECT point(round(random() * 20), round(random() * 20)) FROM generate_series(1, 2000);
CREATE TABLE ref AS SELECT * FROM kd_all_knn('pts', 8);
CREATE TABLE ref_range AS
  SELECT * FROM kd_range_join('pts', ARRAY[point(10, 10), point(50, 50), point(7, 7)], 3.5);
CREATE FUNCTION same_answers() RETURNS boolean LANGUAGE sql AS $$
  SELECT NOT EXISTS (SELECT * FROM kd_all_knn('pts', 8) EXCEPT ALL SELECT * FROM ref)
     AND (SELECT count(*) FROM kd_all_knn('pts', 8)) = (SELECT count(*) FROM ref)
     AND NOT EXISTS (SELECT * FROM kd_range_join('pts', ARRAY[point(10, 10), point(50, 50), point(7, 7)], 3.5)
                     EXCEPT ALL SELECT * FROM ref_range)
     AND (SELECT array_agg(nn_ctid) FROM kd_knn('pts', point(20, 20), 40))
         = (SELECT array_agg(ctid ORDER BY p <-> point(20, 20), ctid) FROM (SELECT ctid, p FROM pts ORDER BY p <-> point(20, 20), ctid LIMIT 40) s)
$$;
SET kdgpu.device = cpu;
SET kdgpu.cpu_threads = 1;
SELECT same_answers() AS cpu_one_thread;
SET kdgpu.cpu_threads = 2;
SELECT same_answers() AS cpu_two_threads;
SET kdgpu.device = auto;
SET kdgpu.gpu_min_points = 0;
SELECT same_answers() AS auto_smallest_threshold;
SET kdgpu.gpu_memory_limit = '1MB';
SELECT same_answers() AS auto_tiny_gpu_memory;
RESET ALL;

-- kdgpu.device = gpu: the same answers on a GPU, a clear error without one
CREATE FUNCTION gpu_behaves() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  usable boolean := (SELECT gpu_usable FROM kd_status());
  state text;
  msg text;
BEGIN
  SET LOCAL kdgpu.device = gpu;
  IF usable THEN
    RETURN same_answers();
  END IF;
  BEGIN
    PERFORM * FROM kd_all_knn('pts', 8);
    RETURN false;
  EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
    RETURN state = '55000' AND msg = 'kdgpu.device is "gpu" but no GPU is usable';
  END;
END $$;
SELECT gpu_behaves();

-- a statement timeout stops a long call
CREATE TABLE big AS SELECT point(random(), random()) AS p FROM generate_series(1, 300000);
SET statement_timeout = '100ms';
SELECT count(*) FROM kd_all_knn('big', 200);
RESET statement_timeout;

DROP TABLE pts, ref, ref_range, big;
DROP FUNCTION same_answers(), gpu_behaves();
