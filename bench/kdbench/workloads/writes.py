"""writes: the index while rows are inserted.

latency before insert: knn10's latency (median over --queries data
points) on the table as built, each query run once untimed first, so
that the pages it reads are as warm as after the insert (the heap pages
that the build's scan read are not kept in shared buffers).
insert n/10: the time to insert n/10 new rows (the data set's
distribution, another seed) in one statement into the table with the
index.
latency after insert: the same latency, measured the same way, once
those rows are in, with no VACUUM since: kdgpu holds them in its insert lanes and the small trees its
flushes and merges made.
mixed: --mixed-secs seconds of pgbench in which half of --clients (at least
one) insert one row per transaction and as many readers run LIMIT 10 at
points uniform over the domain, while the table is vacuumed every
--mixed-vacuum-secs seconds: the writers' tps and the readers' p99 latency;
then the readers alone for as long, with no writers and no VACUUM: their
p99 ("read only").  The readers' answers are checked against sequential
scans by the TAP suite test/tap/003_concurrency.pl, not here.
The rows inserted here are deleted and the table vacuumed afterwards.
"""
import threading

from .. import pg
from ..context import NO_PARALLEL
from . import knn10

NAME = "writes"


def systems(ctx, tb):
    return [(name, [role], _runner(role)) for name, role in knn10.index_systems(ctx, tb)]


def _new_point(tb, role, seed, i):
    """SQL of new row i's value in a role's table."""
    p = tb.ds.point_sql(seed, i, tb.n)
    return tb.geom_sql(p) if role == "geom" else p


def _percentile(values, q):
    """The q-th percentile (0..100) of values, nearest rank."""
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(q / 100.0 * len(v) + 0.5)) - 1))] if v else 0.0


def _vacuum_loop(table, every, stop):
    """VACUUM table every `every` seconds until stop is set."""
    while not stop.wait(every):
        pg.psql("VACUUM %s" % table)


def _warmup(ctx):
    """Seconds left out at the start of a timed pgbench run (none in a run
    of counted transactions)."""
    return ctx.args.pgbench_warmup if ctx.args.mixed_secs else 0


def _mixed(ctx, tb, role):
    """(writer tps, reader latencies in ms) of the mixed run."""
    col, _, _ = knn10.query(tb, role)
    point, geom = tb.random_point_sql()
    value = geom if role == "geom" else point
    writer = "".join("\\set u%d random(0, 1000000)\n" % j for j in range(tb.ds.dim))
    writer += "INSERT INTO %s (id, %s) VALUES (%d, %s);\n" % (tb.t(role), col, tb.n + 1, value)
    secs = ctx.args.mixed_secs
    clients = max(1, ctx.args.clients // 2)
    stop = threading.Event()
    vac = threading.Thread(target=_vacuum_loop,
                           args=(tb.t(role), ctx.args.mixed_vacuum_secs, stop))
    writers = pg.Pgbench(writer, clients, seconds=secs, transactions=ctx.args.pgbench_transactions,
                         warmup=_warmup(ctx))
    readers = pg.Pgbench(knn10.pgbench_script(tb, role), clients, seconds=secs,
                         transactions=ctx.args.pgbench_transactions, warmup=_warmup(ctx),
                         settings="-c max_parallel_workers_per_gather=0", log=True)
    vac.start()
    try:
        tps = writers.tps()
        readers.tps()
        return tps, readers.latencies()
    finally:
        stop.set()
        vac.join()
        writers.cleanup()
        readers.cleanup()


def _read_only(ctx, tb, role):
    """Reader latencies in ms of the readers alone."""
    readers = pg.Pgbench(knn10.pgbench_script(tb, role), max(1, ctx.args.clients // 2),
                         seconds=ctx.args.mixed_secs,
                         transactions=ctx.args.pgbench_transactions, warmup=_warmup(ctx),
                         settings="-c max_parallel_workers_per_gather=0", log=True)
    try:
        readers.tps()
        return readers.latencies()
    finally:
        readers.cleanup()


def _runner(role):
    def run(ctx, tb, system):
        tb.ensure_index(role)
        tb.prewarm(role)
        t = tb.t(role)
        col, _, _ = knn10.query(tb, role)
        row = lambda case, metric, vals, unit, **kw: ctx.store.row(
            tb.ds.name, tb.n, NAME, case, system, metric, vals, unit, **kw)
        add = max(1, tb.n // 10)
        rows = []
        args = tb.sample_args(role, ctx.args.queries, ctx.args.seed)

        def latency(case):
            ctx.log("%s: %s" % (system, case))
            times, nrows = pg.latency(knn10.statement(tb, role), args, len(args),
                                      ctx.budget_ms, NO_PARALLEL)
            ctx.check(nrows, 10 * len(times), case)
            rows.append(row(case, "ms", times, "ms", rows=10))

        try:
            latency("latency before insert")
            ctx.log("%s: insert %d rows" % (system, add))
            ms, _ = pg.repeat("INSERT INTO %s (id, %s) SELECT %d + i, %s FROM generate_series(1, %d) i"
                              % (t, col, tb.n, _new_point(tb, role, tb.seed + 2, "i"), add), 1, 0)
            rows.append(row("insert n/10", "ms", ms, "ms", rows=add))
            # the inserted rows' pages written out now, not while timing
            pg.psql("CHECKPOINT;")
            latency("latency after insert")
            ctx.log("%s: mixed load for %d s" % (system, ctx.args.mixed_secs))
            tps, lat = _mixed(ctx, tb, role)
            rows.append(row("mixed: writers", "tps", [tps], "tps"))
            rows.append(row("mixed: reader p99", "ms", [_percentile(lat, 99)], "ms",
                            rows=len(lat)))
            ctx.log("%s: readers alone for %d s" % (system, ctx.args.mixed_secs))
            lat = _read_only(ctx, tb, role)
            rows.append(row("read only: reader p99", "ms", [_percentile(lat, 99)], "ms",
                            rows=len(lat)))
        finally:
            pg.psql("DELETE FROM %s WHERE id > %d;\nVACUUM %s;" % (t, tb.n, t))
        return rows
    return run
