"""radius: all rows within a radius of a query point, at three sizes of
answer: about 10 rows, 0.1% and 1% of the table.

The radius of each case is the median, over 9 query points from the data,
of the distance to the case's h-th nearest other row (through the kdgpu index),
so clustered data gets radii that suit it; the rows column gives the mean
answer size actually seen.  Every system answers the same --radius-queries
query points (taken from the data), and their answers must agree.

kdgpu: the kdgpu index (`p <@ kd_ball(q, r)`, exact), kd_dwithin on 2-D
geometry (kdgpu_postgis, skipped with a message when it is not installed),
kd_range one query at a time and kd_range_join with all query points in one
call (time per query point), each on the GPU and CPU, on the table with the
kdgpu index (its tree searched; kd_load first in the session).
Peers: GiST on point (`<@ circle`), SP-GiST on point (a box, then the
distance), PostGIS GiST (ST_DWithin, ST_3DDWithin for 3-D), a sequential
scan.  floor-empty (2-D points): the kdgpu statement with its ball moved
off the data, so no rows: what a query costs outside the search itself
(parse, plan, executor, the scan's start).  On geography (metres on the sphere): kd_dwithin over the kdgpu index
against ST_DWithin(g, q, r, false) over PostGIS's geography GiST.  Index scans run without parallel workers (context.NO_PARALLEL); the
sequential scan and the kd_* functions with the server's settings.
"""
import statistics

from .. import pg
from ..context import NO_PARALLEL

NAME = "radius"
# the kdgpu statement with its ball moved off the data: no rows
FLOOR = "floor-empty"


def cases(n):
    """(case label, rows wanted) pairs, without repeats."""
    out, seen = [], set()
    for label, h in (("~10 rows", 10), ("~0.1%", n // 1000), ("~1%", n // 100)):
        h = max(1, min(h, n))
        if h not in seen:
            seen.add(h)
            out.append((label, h))
    return out


def radii(ctx, tb):
    """{case label: radius} for this data set and size (computed once)."""
    if getattr(tb, "radii", None) is None:
        tb.ensure_index("kd")
        centres = tb.sample_args("kd", 9, ctx.args.seed + 1)
        tb.radii = {}
        for label, h in cases(tb.n):
            d = [float(pg.value("SELECT %s <-> %s%s FROM %s ORDER BY %s <-> %s%s OFFSET %d LIMIT 1"
                                % (tb.col, pg.quote(c), tb.cast, tb.t("kd"), tb.col,
                                   pg.quote(c), tb.cast, h))) for c in centres]
            tb.radii[label] = statistics.median(d)
        tb.answers = {}
    return tb.radii


def systems(ctx, tb):
    two = tb.point_peers
    s = []
    if tb.geography:
        s.append(("kdgpu-dwithin", "kd",
                  "SELECT count(*) FROM {t} WHERE kd_dwithin(g, $1::geography, {r})"))
    else:
        s.append(("kdgpu-index", "kd", "SELECT count(*) FROM {t} WHERE %s <@ kd_ball($1%s, {r})"
                  % (tb.col, tb.cast)))
    if "kdgeom" in tb.roles() and two:
        s.append(("kdgpu-dwithin", "kdgeom",
                  "SELECT count(*) FROM {t} WHERE kd_dwithin(g, $1::geometry, {r})"))
    elif two:
        s.append(("kdgpu-dwithin", None, None))
    for dev in ("gpu", "cpu"):
        s.append(("kdgpu-%s-range" % dev, "function",
                  "SELECT count(*) FROM kd_range('{t}', $1%s, {r})" % tb.cast))
        s.append(("kdgpu-%s-range-join" % dev, "function", None))
    if two:
        s.append(("gist-point", "gist", "SELECT count(*) FROM {t} WHERE p <@ circle($1::point, {r})"))
        s.append(("spgist-point", "spgist",
                  "SELECT count(*) FROM {t} WHERE p <@ box($1::point + point(-{r}, -{r}), "
                  "$1::point + point({r}, {r})) AND p <-> $1::point <= {r}"))
    if tb.geography:
        s.append(("postgis-gist", "geom",
                  "SELECT count(*) FROM {t} WHERE ST_DWithin(g, $1::geography, {r}, false)"))
    elif ctx.caps["postgis"]:
        s.append(("postgis-gist", "geom", "SELECT count(*) FROM {t} WHERE %s(g, $1::geometry, {r})"
                  % ("ST_DWithin" if tb.ds.dim == 2 else "ST_3DDWithin")))
    s.append(("seqscan", "base", "SELECT count(*) FROM {t} WHERE %s <-> $1%s <= {r}"
              % (tb.col, tb.cast)))
    if two:
        s.append((FLOOR, "kd", "SELECT count(*) FROM {t} WHERE %s <@ kd_ball($1::point + "
                  "point(1e9, 0), {r})" % tb.col))
    # the radii are found through the kdgpu index
    return [(name, ["kd", ctx.function_role(name) if role == "function" else role or "kd"],
             _runner(role, stmt, name != FLOOR)) for name, role, stmt in s]


def _runner(role, template, agree=True):
    def run(ctx, tb, system):
        if role is None:
            ctx.log("%s: skipped: the kdgpu_postgis extension is not installed" % system)
            return []
        rs = radii(ctx, tb)
        function = role == "function"
        if role not in ("base", "function"):
            tb.ensure_index(role)
        tb.prewarm(ctx.function_role(system) if function else role)
        args = tb.sample_args(role, ctx.args.radius_queries, ctx.args.seed + 2)
        if function:
            settings = ctx.function_settings(tb, system)
        else:
            settings = "" if role == "base" else NO_PARALLEL
        rows = []
        for label, h in cases(tb.n):
            r = "%.6g" % rs[label]
            ctx.log("%s: radius %s (%s), %d query points" % (system, r, label, len(args)))
            if template is None:
                times, total, count = _range_join(ctx, tb, system, args, r, settings)
            else:
                stmt = template.format(t=ctx.function_table(tb, system) if function
                                       else tb.t(role), r=r)
                times, total = pg.latency(stmt, args, 0 if function else min(3, len(args)),
                                          ctx.budget_ms, settings)
                count = len(times)
            if agree:
                _agree(ctx, tb, label, count, total, system)
            rows.append(ctx.store.row(tb.ds.name, tb.n, NAME, label, system, "ms", times, "ms",
                                      rows="%.4g" % (total / count), note="radius %s" % r))
        return rows
    return run


def _range_join(ctx, tb, system, args, r, settings):
    """kd_range_join over all query points in one call: ms per query point."""
    arr = "ARRAY[%s]%s" % (",".join(pg.quote(a) + tb.cast for a in args),
                           "::point[]" if tb.point_peers else "")
    times, total = ctx.repeat("SELECT count(*) FROM kd_range_join('%s', %s, %s)"
                              % (ctx.function_table(tb, system), arr, r), settings)
    return [t / len(args) for t in times], total, len(args)


def _agree(ctx, tb, label, count, total, system):
    """Systems that answered every query point must find the same rows."""
    if count != ctx.args.radius_queries:
        return
    seen = tb.answers.setdefault((label, count), (total, system))
    ctx.check(total, seen[0], "%s finds %d rows, %s found %d (%s)"
              % (system, total, seen[1], seen[0], label))
