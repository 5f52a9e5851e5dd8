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
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor


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


def psql_all(scripts):
    """Run SQL scripts at once, each in its own session; return when all
    have ended (the first failure is raised)."""
    with ThreadPoolExecutor(max_workers=max(1, len(scripts))) as pool:
        for _ in pool.map(psql, scripts):
            pass


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


def backend_memory_kb(stmt, args, settings=""):
    """Private memory of a backend (Pss_Anon of /proc/self/smaps_rollup, in
    kB) after it ran a statement once per element of args: what each
    connection of a pool costs once warm."""
    arr = "ARRAY[%s]::text[]" % ",".join(quote(a) for a in args)
    rows = psql("%s\nSELECT count(*) FROM kb_latency(%s, %s, 0, 0);\n"
                "SELECT substring(pg_read_file('/proc/self/smaps_rollup') "
                "FROM 'Pss_Anon: *([0-9]+) kB');" % (settings, quote(stmt), arr))
    return int(rows[-1][0])


class Pgbench:
    """A pgbench run started in the background (start), waited for by
    tps(); with log, latencies() reads its per-transaction log."""

    def __init__(self, script, clients, seconds=None, transactions=None, warmup=0,
                 settings="", log=False, protocol="simple"):
        self.seconds, self.warmup = seconds, warmup
        self.dir = tempfile.mkdtemp(prefix="kdbench-pgbench-")
        path = os.path.join(self.dir, "script.sql")
        with open(path, "w") as f:
            f.write(script)
        env = dict(os.environ)
        if settings:
            env["PGOPTIONS"] = (env.get("PGOPTIONS", "") + " " + settings).strip()
        cmd = ["pgbench", "-n", "-M", protocol, "-f", path, "-c", str(clients),
               "-j", str(clients)]
        if seconds:
            cmd += ["-T", str(int(warmup + seconds)), "-P", "1"]
        else:
            cmd += ["-t", str(transactions)]
        if log:
            cmd += ["-l", "--log-prefix", os.path.join(self.dir, "log")]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self.out = self.err = None

    def tps(self):
        """Wait for the run; transactions per second.  With seconds, the mean
        of pgbench's per-second progress reports after the first `warmup`
        seconds (each new backend's first queries are left out); with
        transactions (per client), pgbench's own figure."""
        if self.out is None:
            self.out, self.err = self.proc.communicate()
        match = re.search(r"^tps = ([0-9.]+) \(without initial connection time\)",
                          self.out, re.M)
        if self.proc.returncode != 0 or not match:
            raise PgError("pgbench failed: " + (self.err.strip() or self.out.strip())[-2000:])
        if not self.seconds:
            return float(match.group(1))
        progress = [(float(t), float(v)) for t, v in
                    re.findall(r"^progress: ([0-9.]+) s, ([0-9.]+) tps", self.err, re.M)]
        steady = [v for t, v in progress if t > self.warmup]
        return sum(steady) / len(steady) if steady else float(match.group(1))

    def latencies(self):
        """Milliseconds of every transaction after the first `warmup`
        seconds, from the per-transaction log (after tps())."""
        lines = []
        for name in os.listdir(self.dir):
            if name.startswith("log"):
                with open(os.path.join(self.dir, name)) as f:
                    lines += [l.split() for l in f if l.strip()]
        if not lines:
            return []
        start = min(int(l[4]) + int(l[5]) / 1e6 for l in lines)
        return [int(l[2]) / 1000.0 for l in lines
                if int(l[4]) + int(l[5]) / 1e6 - start >= self.warmup]

    def cleanup(self):
        """Remove the script and the logs."""
        shutil.rmtree(self.dir, ignore_errors=True)


def pgbench(script, clients, seconds=None, transactions=None, warmup=0, settings="",
            protocol="simple"):
    """Run a pgbench script with `clients` clients over a query protocol
    (pgbench -M); returns transactions per second (see Pgbench.tps)."""
    run = Pgbench(script, clients, seconds, transactions, warmup, settings,
                  protocol=protocol)
    try:
        return run.tps()
    finally:
        run.cleanup()
