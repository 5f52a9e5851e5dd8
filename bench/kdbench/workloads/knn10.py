"""knn10: one `ORDER BY <point> <-> q LIMIT 10`.

Latency: the median over --queries query points taken from the data (the
same rows for every system), timed inside the server after a few warm-up
queries in the same session.  First query: the first query of a new
session (median over --runs sessions), which pays for what a backend
loads once.  Backend memory: the private memory (Pss_Anon) of a
session after it ran the latency queries.  Throughput: pgbench with 1 client and
with --clients clients (default: one per core), query points uniform over
the data's domain, averaged over --pgbench-secs seconds after
--pgbench-warmup seconds, over the simple query protocol and any other of
--pgbench-protocols (prepared: parsed and planned once per connection).
floor-ctid: pgbench alone, fetching 10 random rows of the kdgpu table by
ctid (a TID scan, no index): what a LIMIT 10 costs outside any index (the
protocol, the executor and 10 heap pages), against which an index's share
of the throughput can be read.
kdgpu's index scan runs on the CPU whatever kdgpu.device says (a GPU round
trip costs more than the search), so it has one system, kdgpu-index.
"""
from .. import pg
from ..context import NO_PARALLEL

NAME = "knn10"


def index_systems(ctx, tb):
    """(system, role) of the kdgpu index and the peer indexes on the data."""
    s = [("kdgpu-index", "kd")]
    if tb.point_peers:
        s += [("gist-point", "gist"), ("spgist-point", "spgist")]
    if ctx.caps["postgis"]:
        s.append(("postgis-gist", "geom"))
    return s


def systems(ctx, tb):
    s = index_systems(ctx, tb)
    if "kdgeom" in tb.roles():
        s.append(("kdgpu-postgis", "kdgeom"))
    s.append(("seqscan", "base"))
    return ([(name, [role], _runner(role)) for name, role in s] +
            [("floor-ctid", ["kd"], _floor_run)])


def query(tb, role):
    """(column, operator, cast of the query point) of a role's table."""
    geo = role in ("geom", "kdgeom")
    return ("g" if geo else tb.col, tb.gop if geo else "<->", tb.gcast if geo else tb.cast)


def statement(tb, role):
    """The timed statement: the count of one LIMIT 10 at $1."""
    col, op, cast = query(tb, role)
    return ("SELECT count(*) FROM (SELECT 1 FROM %s ORDER BY %s %s $1%s LIMIT 10) s"
            % (tb.t(role), col, op, cast))


def pgbench_script(tb, role):
    """A pgbench transaction: one LIMIT 10 at a point uniform over the
    data's domain."""
    col, op, _ = query(tb, role)
    point, geom = tb.random_point_sql()
    script = "".join("\\set u%d random(0, 1000000)\n" % j for j in range(tb.ds.dim))
    return script + "SELECT id FROM %s ORDER BY %s %s %s LIMIT 10;\n" % (
        tb.t(role), col, op, geom if role in ("geom", "kdgeom") else point)


def floor_script(tb):
    """A pgbench transaction fetching 10 rows of the kdgpu table at random
    ctids (random pages, offset 1: every full page has one)."""
    blocks = int(pg.value("SELECT relpages FROM pg_class WHERE oid = %s::regclass"
                          % pg.quote(tb.t("kd"))))
    script = "".join("\\set b%d random(0, %d)\n" % (j, max(0, blocks - 2)) for j in range(10))
    # text || text folds to a constant where the simple protocol puts the number
    tids = ", ".join("'(' || :b%d::text || ',1)'" % j for j in range(10))
    return script + "SELECT id FROM %s WHERE ctid = ANY(ARRAY[%s]::tid[]);\n" % (
        tb.t("kd"), tids)


def _pgbench_rows(ctx, tb, system, script, note):
    """Result rows of pgbench runs of script, 1 client and --clients, in
    each of --pgbench-protocols (the simple protocol's case names carry no
    protocol)."""
    rows = []
    for protocol in ctx.args.pgbench_protocols.split(","):
        suffix = "" if protocol == "simple" else " " + protocol
        for c in sorted({1, ctx.args.clients}):
            tps = []
            for i in range(ctx.args.pgbench_runs):
                ctx.log("%s: pgbench%s, %d client%s, run %d"
                        % (system, suffix, c, "s"[:c > 1], i + 1))
                tps.append(pg.pgbench(script, c, seconds=ctx.args.pgbench_secs,
                                      transactions=ctx.args.pgbench_transactions,
                                      warmup=ctx.args.pgbench_warmup, protocol=protocol))
            rows.append(ctx.store.row(tb.ds.name, tb.n, NAME, "pgbench c=%d%s" % (c, suffix),
                                      system, "tps", tps, "tps", note=note))
    return rows


def _floor_run(ctx, tb, system):
    """pgbench of floor_script on the kdgpu table."""
    tb.ensure_index("kd")
    return _pgbench_rows(ctx, tb, system, floor_script(tb), "10 rows by ctid, no index")


def _runner(role):
    def run(ctx, tb, system):
        col, op, cast = query(tb, role)
        if role != "base":
            tb.ensure_index(role)
        tb.prewarm(role)
        t = tb.t(role)
        note = ""
        if role != "base" and not ctx.uses_index(
                "SELECT id FROM %s ORDER BY %s %s %s LIMIT 10"
                % (t, col, op, pg.quote(tb.sample_args(role, 1, 1)[0]) + cast)):
            note = "the plan does not use the index"
            ctx.log("%s: warning: %s" % (system, note))
        rows = []
        args = tb.sample_args(role, ctx.args.queries, ctx.args.seed)
        k = min(10, tb.n)
        ctx.log("%s: latency over %d query points" % (system, len(args)))
        stmt = statement(tb, role)
        times, nrows = pg.latency(stmt, args, min(5, len(args)), ctx.budget_ms,
                                  "" if role == "base" else NO_PARALLEL)
        ctx.check(nrows, k * len(times), stmt)
        rows.append(ctx.store.row(tb.ds.name, tb.n, NAME, "latency", system, "ms", times,
                                  "ms", rows=k, note=note))
        first = []
        for a in args[:ctx.args.runs]:
            ms, nrows = pg.latency(stmt, [a], 0, 0, "" if role == "base" else NO_PARALLEL)
            ctx.check(nrows, k, stmt)
            first += ms
        rows.append(ctx.store.row(tb.ds.name, tb.n, NAME, "first query", system, "ms", first,
                                  "ms", rows=k, note=note))
        kb = pg.backend_memory_kb(stmt, args, "" if role == "base" else NO_PARALLEL)
        rows.append(ctx.store.row(tb.ds.name, tb.n, NAME, "backend memory", system, "kB",
                                  [kb], "kB", note=note))
        return rows + _pgbench_rows(ctx, tb, system, pgbench_script(tb, role), note)
    return run
