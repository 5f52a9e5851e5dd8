SET enable_seqscan = off;
\set x random(0, 1000)
\set y random(0, 1000)
SELECT soak.check_index(point(:x, :y));
SELECT soak.check_knn(point(:y, :x));
SELECT soak.check_index_v(ARRAY[:x / 10.0, :y / 10.0, 50]::float8[]);
