"""pg.py: talking to the server through psql and pgbench.

Every statement goes through a psql process (libpq's PG* variables choose
the server), so the harness needs nothing beyond the PostgreSQL client
programs and python3's standard library.  One call of psql() is one
session: settings made at its start hold for the statements after them.
Times are measured inside the server (kb_repeat, kb_latency in setup.sql),
so they leave out the client round trip.
"""
import os
import re
import subprocess
import tempfile


class PgError(Exception):
    """A statement failed; the message is psql's error output."""


def quote(text):
    """Dollar-quote a string for use as an SQL literal."""
    i = 0
    while "$kb%d$" % i in text:
        i += 1
    return "$kb%d$%s$kb%d$" % (i, text, i)


def psql(script):
    """Run an SQL script in one session; return its output rows as lists of
    fields (unaligned, tuples only, '|' between fields)."""
    proc = subprocess.run(
        ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-f", "-"],
        input=script, capture_output=True, text=True)
    if proc.returncode != 0:
        raise PgError(proc.stderr.strip() or "psql exited with %d" % proc.returncode)
    return [line.split("|") for line in proc.stdout.splitlines() if line != ""]


def value(sql):
    """The single value a query returns (None when it returns no row)."""
    rows = psql(sql)
    return rows[0][0] if rows else None


def parse_floats(array_text):
    """Turn a PostgreSQL float8[] literal into a list of floats."""
    inner = array_text.strip("{}")
    return [float(x) for x in inner.split(",")] if inner else []


def repeat(stmt, runs, budget_ms, settings=""):
    """Time a statement returning one count up to `runs` times in one
    session (after `settings`); returns (list of ms, count of the last run)."""
    rows = psql("%s\nSELECT times, nrows FROM kb_repeat(%s, %d, %f);"
                % (settings, quote(stmt), runs, budget_ms))
    return parse_floats(rows[-1][0]), int(rows[-1][1] or 0)


def latency(stmt, args, warmup, budget_ms, settings=""):
    """Time a statement once per element of args ($1, as text) in one
    session; returns (list of ms, total count over the timed calls)."""
    arr = "ARRAY[%s]::text[]" % ",".join(quote(a) for a in args)
    rows = psql("%s\nSELECT times, nrows FROM kb_latency(%s, %s, %d, %f);"
                % (settings, quote(stmt), arr, warmup, budget_ms))
    return parse_floats(rows[-1][0]), int(rows[-1][1] or 0)


def pgbench(script, clients, seconds=None, transactions=None, warmup=0, settings=""):
    """Run a pgbench script with `clients` clients; returns transactions per
    second.  With `seconds`, it runs warmup + seconds and averages pgbench's
    per-second progress reports after the first `warmup` seconds (each new
    backend's first queries, e.g. loading an index's tree, are left out);
    with `transactions` (per client), pgbench's own figure."""
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
        path = f.name
    env = dict(os.environ)
    if settings:
        env["PGOPTIONS"] = (env.get("PGOPTIONS", "") + " " + settings).strip()
    cmd = ["pgbench", "-n", "-f", path, "-c", str(clients), "-j", str(clients)]
    if seconds:
        cmd += ["-T", str(int(warmup + seconds)), "-P", "1"]
    else:
        cmd += ["-t", str(transactions)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    finally:
        os.unlink(path)
    match = re.search(r"^tps = ([0-9.]+) \(without initial connection time\)",
                      proc.stdout, re.M)
    if proc.returncode != 0 or not match:
        raise PgError("pgbench failed: " + (proc.stderr.strip() or proc.stdout.strip())[-2000:])
    if not seconds:
        return float(match.group(1))
    progress = [(float(t), float(v)) for t, v in
                re.findall(r"^progress: ([0-9.]+) s, ([0-9.]+) tps", proc.stderr, re.M)]
    steady = [v for t, v in progress if t > warmup]
    return sum(steady) / len(steady) if steady else float(match.group(1))
