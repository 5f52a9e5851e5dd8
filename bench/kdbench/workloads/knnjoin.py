"""knnjoin: the 10 nearest points of the table for each of n/10 query
points of another table (1M queries against 10M points at size 10M).

kdgpu: kd_knn_join(rel, query_rel, 10) on the GPU and on the CPU, on the
table with the kdgpu index (kd_load first) and without one (-noindex).
Peers: CROSS JOIN LATERAL (... ORDER BY <-> LIMIT 10) from the query table
over each index, sampled and scaled when too long (lateral.py).
"""
from . import lateral

NAME = "knnjoin"
K = 10
CASE = "k=10, n/10 queries"


def systems(ctx, tb):
    s = []
    for dev in ("gpu", "cpu"):
        for name in ("kdgpu-%s" % dev, "kdgpu-%s-noindex" % dev):
            s.append((name, [ctx.function_role(name), "q"], _function))
    for name, role in lateral.lateral_systems(ctx, tb):
        s.append((name, [role, "q"], _lateral(role)))
    return s


def _function(ctx, tb, system):
    ctx.log("%s: kd_knn_join of %d query points" % (system, tb.nq))
    times, nrows = ctx.repeat("SELECT count(*) FROM kd_knn_join('%s', '%s'::regclass, %d)"
                              % (ctx.function_table(tb, system), tb.t("q"), K),
                              ctx.function_settings(tb, system), expect=tb.nq * min(K, tb.n))
    return [ctx.store.row(tb.ds.name, tb.n, NAME, CASE, system, "ms", times, "ms", rows=nrows)]


def _lateral(role):
    def run(ctx, tb, system):
        return lateral.measure(ctx, tb, system, role, tb.t("q"), tb.nq, K, NAME, CASE)
    return run
