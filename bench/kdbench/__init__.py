"""kdbench: the benchmark harness behind bench/run and bench/plot
(bench/README.md).  Standard library only: it talks to the server through
psql and pgbench."""
