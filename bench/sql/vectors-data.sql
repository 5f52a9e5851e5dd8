-- The vector sets of the vectors benchmarks: vb_u and vb_qu, :n and :nq
-- rows of :dim coordinates uniform in [-0.5, 0.5); vb_c and vb_qc, as
-- many rows near 8 random directions (vb_dirs) with 1% noise, so of low
-- intrinsic dimension.  The seed is fixed, so every script that includes
-- this file (psql \ir) searches the same vectors.
DROP TABLE IF EXISTS vb_u, vb_c, vb_qu, vb_qc, vb_dirs;
SELECT setseed(0.31);
CREATE TABLE vb_dirs AS
  SELECT c, ARRAY(SELECT random() * 2 - 1 FROM generate_series(1, :dim) j WHERE c >= 0) AS d
  FROM generate_series(0, 7) c;
CREATE TABLE vb_u AS
  SELECT i AS id, ARRAY(SELECT random() - 0.5 FROM generate_series(1, :dim) j WHERE i > 0) AS v
  FROM generate_series(1, :n) i;
CREATE TABLE vb_qu AS
  SELECT i AS id, ARRAY(SELECT random() - 0.5 FROM generate_series(1, :dim) j WHERE i > 0) AS v
  FROM generate_series(1, :nq) i;
CREATE TABLE vb_c AS
  SELECT i AS id, ARRAY(SELECT t * x + 0.01 * (random() - 0.5) FROM unnest(d.d) x) AS v
  FROM (SELECT i, random() * 2 - 1 AS t, (i % 8) AS c FROM generate_series(1, :n) i) s
  JOIN vb_dirs d USING (c);
CREATE TABLE vb_qc AS
  SELECT i AS id, ARRAY(SELECT t * x + 0.01 * (random() - 0.5) FROM unnest(d.d) x) AS v
  FROM (SELECT i, random() * 2 - 1 AS t, (i % 8) AS c FROM generate_series(1, :nq) i) s
  JOIN vb_dirs d USING (c);
VACUUM ANALYZE vb_u, vb_c, vb_qu, vb_qc;
