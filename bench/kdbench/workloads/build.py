"""build: CREATE INDEX time (median of runs, each on a freshly dropped
index) and the index's size, for kdgpu built on the GPU and on the CPU and
for GiST and SP-GiST on point and PostGIS GiST on geometry, every system at
the same maintenance_work_mem (--build-mwm)."""
from .. import pg

NAME = "build"


def systems(ctx, tb):
    s = [("kdgpu-cpu", "kd"), ("kdgpu-gpu", "kd")]
    if tb.point_peers:
        s += [("gist-point", "gist"), ("spgist-point", "spgist")]
    if ctx.caps["postgis"]:
        s.append(("postgis-gist", "geom"))
    if "kdgeom" in tb.roles():
        s.append(("kdgpu-postgis", "kdgeom"))
    return [(name, [role], _builder(role)) for name, role in s]


def _builder(role):
    def run(ctx, tb, system):
        idx = tb.t(role) + "_idx"
        settings = ("SET maintenance_work_mem = %s;" % pg.quote(ctx.args.build_mwm)
                    + ctx.device_settings(system))
        times = []
        for i in range(ctx.args.runs):
            ctx.log("%s: CREATE INDEX, run %d" % (system, i + 1))
            t, _ = pg.repeat(tb.index_sql(role), 1, 0,
                             "SET client_min_messages = warning; DROP INDEX IF EXISTS %s;\n%s"
                             % (idx, settings))
            times += t
            if sum(times) >= ctx.budget_ms:
                break
        pg.psql("ANALYZE %s" % tb.t(role))
        size = int(pg.value("SELECT pg_relation_size(%s)" % pg.quote(idx)))
        row = lambda metric, vals, unit: ctx.store.row(
            tb.ds.name, tb.n, NAME, "", system, metric, vals, unit)
        return [row("ms", times, "ms"), row("bytes", [size], "bytes")]
    return run
