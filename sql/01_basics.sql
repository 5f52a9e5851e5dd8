-- kdgpu: installation, the float8[] distance operator, status functions
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS kdgpu;
RESET client_min_messages;

-- every function is created with the caller's rights
SELECT count(*) AS security_definer FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
  JOIN pg_extension e ON d.refobjid = e.oid AND e.extname = 'kdgpu'
 WHERE p.prosecdef;

-- float8[] <-> float8[]: sqrt of the sum of squared differences
SELECT ARRAY[0,0]::float8[] <-> ARRAY[3,4]::float8[] AS d;
SELECT ARRAY[1]::float8[] <-> ARRAY[-2]::float8[] AS d1;
SELECT ARRAY[1,2,3,4,5,6,7,8]::float8[] <-> ARRAY[0,0,0,0,0,0,0,0]::float8[] AS d8;
SELECT kd_distance(ARRAY[0.1,0.2,0.3], ARRAY[0.3,0.2,0.1])
       = sqrt((0.1::float8 - 0.3) * (0.1::float8 - 0.3) + 0 + (0.3::float8 - 0.1) * (0.3::float8 - 0.1)) AS same;
-- an empty point has no distance, like NULL
SELECT '{}'::float8[] <-> ARRAY[1,2]::float8[] IS NULL AS empty_is_null;
-- errors
SELECT ARRAY[1,2]::float8[] <-> ARRAY[1,2,3]::float8[];
SELECT ARRAY[1,NULL]::float8[] <-> ARRAY[1,2]::float8[];
SELECT ARRAY['NaN',2]::float8[] <-> ARRAY[1,2]::float8[];
SELECT array_fill(1::float8, ARRAY[16001]) <-> array_fill(1::float8, ARRAY[16001]);
SELECT ARRAY[[1,2],[3,4]]::float8[] <-> ARRAY[1,2]::float8[];

-- status: the setting in force and the (absent) tree cache
SELECT device, trees_cached, gpu_library LIKE '%/kdgpu_cuda.so' AS library,
       cpu_threads > 0 AS threads
  FROM kd_status();
-- kd_devices: a row per device when a GPU is usable, none otherwise
SELECT ((SELECT count(*) FROM kd_devices()) > 0) = gpu_usable AS devices_consistent
  FROM kd_status();

-- kd_load builds a tree and reports it; nothing is cached yet
CREATE TABLE load_pts AS SELECT point(i, i % 7) AS p FROM generate_series(1, 1000) i;
SELECT points, dimensions, device IN ('cpu', 'gpu') AS device, build_ms >= 0 AS timed, cached
  FROM kd_load('load_pts');
SELECT points, dimensions FROM kd_load('load_pts', 'p');
SELECT kd_unload('load_pts');
DROP TABLE load_pts;
