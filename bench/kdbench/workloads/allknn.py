"""allknn: every point's 10 nearest neighbours (itself excluded).

kdgpu: kd_all_knn (one row per pair) and kd_all_knn_arrays (one row per
point), on the GPU and on the CPU, on the table with the kdgpu index (its
tree is searched; kd_load first in the session), kd_all_knn on the
table without one (-noindex: every call builds a tree) and, with
kdgpu_postgis, on the PostGIS geometry column with a kdgpu index
(-geometry).
Peers: CROSS JOIN LATERAL (... ORDER BY <-> LIMIT 11) over each index (11:
the point itself comes first), sampled and scaled when the whole run would
take too long (lateral.py).
"""
from . import lateral

NAME = "allknn"
K = 10
CASE = "k=10"


def systems(ctx, tb):
    s = []
    for dev in ("gpu", "cpu"):
        s.append(("kdgpu-%s" % dev, _function("kd_all_knn", 1)))
        s.append(("kdgpu-%s-arrays" % dev, _function("kd_all_knn_arrays", 0)))
        s.append(("kdgpu-%s-noindex" % dev, _function("kd_all_knn", 1)))
        if "kdgeom" in tb.roles():
            s.append(("kdgpu-%s-geometry" % dev, _function("kd_all_knn", 1)))
    s = [(name, [ctx.function_role(name)], fn) for name, fn in s]
    for name, role in lateral.lateral_systems(ctx, tb):
        s.append((name, [role], _lateral(role)))
    return s


def _function(fn, pairs):
    def run(ctx, tb, system):
        ctx.log("%s: %s" % (system, fn))
        per_point = min(K, tb.n - 1) if pairs else 1
        times, nrows = ctx.repeat("SELECT count(*) FROM %s('%s', %d)"
                                  % (fn, ctx.function_table(tb, system), K),
                                  ctx.function_settings(tb, system), expect=tb.n * per_point)
        return [ctx.store.row(tb.ds.name, tb.n, NAME, CASE, system, "ms", times, "ms",
                              rows=nrows)]
    return run


def _lateral(role):
    def run(ctx, tb, system):
        return lateral.measure(ctx, tb, system, role, tb.t("base"), tb.n, K + 1, NAME, CASE)
    return run
