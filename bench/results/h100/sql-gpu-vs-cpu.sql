\set ON_ERROR_STOP 1
create extension kdgpu;
set kdgpu.gpu_min_points = 0;
select setseed(0.3);
create table pts as select i as id, point(round(random()*1000), round(random()*1000)) as p from generate_series(1, 300000) i;
insert into pts select i, point(500000 + random(), 5400000 + random()) from generate_series(300001, 400000) i;
create table q as select i as id, point(random()*1000, random()*1000) as p from generate_series(1, 20000) i;
create table v as select i as id, array[random(), random(), random()] as v from generate_series(1, 200000) i;
analyze pts; analyze q; analyze v;
create function everything() returns table (f text, n bigint, r text) language sql stable as $$
  select 'all_knn', row_number() over (), row(r.*)::text from kd_all_knn('pts', 7) r
  union all select 'arrays', row_number() over (), row(r.*)::text from kd_all_knn_arrays('pts', 5) r
  union all select 'join', row_number() over (), row(r.*)::text from kd_knn_join('pts', 'q', 12) r
  union all select 'join_arr', row_number() over (), row(r.*)::text from kd_knn_join('pts', array[point(1,1), point(500000.5, 5400000.5), point(999, 3)], 40) r
  union all select 'knn', row_number() over (), row(r.*)::text from kd_knn('pts', point(500, 500), 100) r
  union all select 'range', row_number() over (), row(r.*)::text from kd_range('pts', point(250, 250), 12) r
  union all select 'range_join', row_number() over (), row(r.*)::text from kd_range_join('pts', array[point(1,1), point(700, 300)], array[5, 9]) r
  union all select 'box', row_number() over (), row(r.*)::text from kd_box('pts', point(10, 10), point(60, 40)) r
  union all select 'vec_all', row_number() over (), row(r.*)::text from kd_all_knn('v', 9) r
  union all select 'vec_join', row_number() over (), row(r.*)::text from kd_knn_join('v', 'v', 4) r
$$;
set kdgpu.device = gpu;
create table on_gpu as select * from everything();
set kdgpu.device = cpu;
set kdgpu.stream_rows = off;
create table on_cpu as select * from everything();
select f, count(g.r) as gpu_rows, count(c.r) as cpu_rows,
       count(*) filter (where g.r is distinct from c.r) as differ
  from on_gpu g full join on_cpu c using (f, n) group by f order by f;
select device, runs_on, gpu_usable, gpu from kd_status();
