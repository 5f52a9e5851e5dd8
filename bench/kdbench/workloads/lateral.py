"""lateral.py: the LATERAL peer of the batched workloads, on a sample.

`CROSS JOIN LATERAL (SELECT ... ORDER BY b.p <-> a.p LIMIT k)` walks an
index once per outer row.  A probe on --probe outer rows estimates the
whole run; if that is over --lateral-secs, the measured runs use the first
m outer rows (ids are a hash order, so a uniform sample), m chosen to take
about --sample-secs, and each time is scaled by n/m.  The rows say so
(sample, scale, note) and so does the progress output.
"""
from .. import pg

def outer_point(tb, role, expr):
    """The outer row's point as the inner table's type."""
    return tb.geom_sql(expr) if role in ("geom", "kdgeom") else expr


def inner(tb, role):
    """(column, operator) of a role's table for ORDER BY."""
    if role in ("geom", "kdgeom"):
        return "g", tb.gop
    return tb.col, "<->"


def lateral_systems(ctx, tb):
    """(system, role) of the LATERAL systems this data set has."""
    s = [("kdgpu-index-lateral", "kd")]
    if tb.point_peers:
        s += [("lateral-gist-point", "gist"), ("lateral-spgist-point", "spgist")]
    if ctx.caps["postgis"]:
        s.append(("lateral-postgis-gist", "geom"))
    return s


def measure(ctx, tb, system, role, outer, total, k, workload, case):
    """Time the LATERAL join of `outer` (a table with id and tb.col) rows
    1..m to role's table, k per row; total is outer's row count."""
    tb.ensure_index(role)
    col, op = inner(tb, role)
    stmt = lambda m: (
        "SELECT count(*) FROM %s a CROSS JOIN LATERAL (SELECT 1 FROM %s b ORDER BY b.%s %s %s "
        "LIMIT %d) x WHERE a.id <= %d" % (outer, tb.t(role), col, op,
                                           outer_point(tb, role, "a." + tb.col), k, m))
    kk = min(k, tb.n)
    m0 = min(total, ctx.args.probe)
    probe, _ = ctx.repeat(stmt(m0), runs=1, expect=m0 * kk)
    per_row = max(probe[0], 0.001) / m0
    estimate = per_row * total / 1000.0
    if estimate <= ctx.args.lateral_secs:
        m = total
        ctx.log("%s: probe of %d rows: whole run ~%.0f s, running it whole" % (system, m0, estimate))
    else:
        m = max(m0, min(total, int(ctx.args.sample_secs * 1000.0 / per_row)))
        ctx.log("%s: probe of %d rows: whole run ~%.0f s > %g s, so LATERAL runs on a sample of "
                "%d of %d rows, times scaled by %.4g" % (system, m0, estimate, ctx.args.lateral_secs,
                                                          m, total, total / m))
    # the timed runs' session first joins a few rows, so that one-time costs
    # (loading a kdgpu index's tree into the backend) are not scaled by n/m
    warm = "SELECT * FROM kb_repeat(%s, 1, 0);" % pg.quote(stmt(min(m0, 100)))
    times, _ = ctx.repeat(stmt(m), warm, expect=m * kk)
    scale = total / m
    note = "" if m == total else "LATERAL on %d of %d rows, time scaled by %.4g" % (m, total, scale)
    return [ctx.store.row(tb.ds.name, tb.n, workload, case, system, "ms",
                          [t * scale for t in times], "ms", rows=m * kk,
                          sample=m, scale="%.6g" % scale, note=note)]
