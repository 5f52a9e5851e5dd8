"""summary.py: summary.md of an output directory, from results.csv.

One table per workload and metric: a row per (data set, size, case), a
column per system with its median, and in each peer's cell how many times
the row's best kdgpu system is better than that peer, measured in the same
run (results.csv has the ratio of every kdgpu system to every peer).
Plots made by bench/plot are linked where they exist.  The engine's
results are shown beside cudaKDTree's where the same run measured it.
"""
import os

from . import store

TITLES = {
    ("build", "ms"): "Index build time (CREATE INDEX)",
    ("build", "bytes"): "Index size",
    ("knn10", "ms"): "ORDER BY <-> LIMIT 10: latency per query (median)",
    ("knn10", "tps"): "ORDER BY <-> LIMIT 10: pgbench throughput",
    ("allknn", "ms"): "All-kNN",
    ("knnjoin", "ms"): "kNN join",
    ("knn10", "kB"): "ORDER BY <-> LIMIT 10: private memory of a backend after the queries",
    ("radius", "ms"): "Radius query: time per query point (median)",
    ("writes", "ms"): "Inserts: time, LIMIT 10 latency after them, p99 under mixed load",
    ("writes", "tps"): "Inserts under mixed load (writers, readers, VACUUM)",
}
ORDER = ["build", "knn10", "allknn", "knnjoin", "radius", "writes", "engine"]
METRIC_ORDER = ["ms", "tps", "bytes", "kB", "qps"]
DATASET_ORDER = ["uniform2", "uniform3", "clustered", "dup", "lonlat", "geography"]


def fmt(value, unit):
    """A value in readable units."""
    v = float(value)
    if unit == "ms":
        return "%.3g s" % (v / 1000) if v >= 1000 else "%.3g ms" % v
    if unit == "bytes":
        return "%.3g MB" % (v / 1e6)
    if unit == "kB":
        return "%.3g MB" % (v / 1e3)
    if unit in ("tps", "q/s"):
        for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if v >= div:
                return "%.3g%s/s" % (v / div, suffix)
        return "%.3g/s" % v
    return "%.4g %s" % (v, unit)


def _sort_key(r, cases=()):
    """Data set order, size, case (in measured order), kdgpu first."""
    ds = r["dataset"]
    return (DATASET_ORDER.index(ds) if ds in DATASET_ORDER else 99, ds, int(float(r["size"])),
            cases.index(r["case"]) if r["case"] in cases else r["case"],
            not store.is_kdgpu(r["system"]), r["system"])


def plot_name(workload, metric, case):
    """The PNG bench/plot makes for one workload, metric and case."""
    slug = "-".join("".join(c if c.isalnum() else " " for c in case.replace("%", "pct")).split())
    return "%s-%s%s.png" % (workload, metric, "-" + slug if slug else "")


def _table(rows, outdir, workload, metric):
    """A table with a row per (data set, size, case) and a column per
    system; each peer's cell also gives how many times the best kdgpu
    system of that row is better than the peer."""
    systems = sorted({r["system"] for r in rows}, key=lambda s: (not store.is_kdgpu(s), s))
    out = []
    for case in dict.fromkeys(r["case"] for r in rows):
        png = plot_name(workload, metric, case)
        if os.path.exists(os.path.join(outdir, "plots", png)):
            out.append("![%s %s %s](plots/%s)\n" % (workload, metric, case, png))
    cases = list(dict.fromkeys(r["case"] for r in rows))
    radius = workload == "radius"
    head = ["data set", "size", "case"] + (["radius, mean rows"] if radius else []) + \
        ["best kdgpu"] + systems
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    notes = []
    lines = {}
    for r in rows:
        lines.setdefault((r["dataset"], r["size"], r["case"]), {})[r["system"]] = r
    for key in sorted(lines, key=lambda k: _sort_key(dict(dataset=k[0], size=k[1], case=k[2],
                                                           system=""), cases)):
        line = lines[key]
        kd = [r for s, r in line.items() if store.is_kdgpu(s)]
        best = _best(kd) if kd else None
        cells = [key[0], "{:,}".format(int(float(key[1]))), key[2]]
        if radius:
            first = next(iter(line.values()))
            cells.append("%s, %s" % (first["note"].replace("radius ", ""), first["rows"]))
        cells.append(best["system"] if best else "")
        for s in systems:
            r = line.get(s)
            if r is None:
                cells.append("")
                continue
            val = fmt(r["value"], r["unit"])
            if r["note"] and not radius:
                if r["note"] not in notes:
                    notes.append(r["note"])
                val += " [%d]" % (notes.index(r["note"]) + 1)
            if best and not store.is_kdgpu(s):
                x = store.ratio(best, r)
                if x is not None:
                    val += " (%s×)" % ("%.3g" % x)
            cells.append(val)
        out.append("| " + " | ".join(cells) + " |")
    if notes:
        out.append("")
        out += ["[%d] %s  " % (i + 1, n) for i, n in enumerate(notes)]
    return "\n".join(out)


def _best(rows):
    """The best (fastest, smallest, highest-rate) of some rows."""
    return max(rows, key=lambda r: float(r["value"]) if r["metric"] in store.HIGHER_IS_BETTER
               else -float(r["value"]))


def headline(rows):
    """One line per workload, metric and case at the largest size measured
    (first data set in DATASET_ORDER): kdgpu's best against every peer."""
    out = ["| workload | data set, size | case | best kdgpu | peers (kdgpu's advantage) |",
           "|---|---|---|---|---|"]
    for wl in ORDER:
        wrows = [r for r in rows if r["workload"] == wl and r["workload"] != "engine"]
        for metric in sorted({r["metric"] for r in wrows}, key=METRIC_ORDER.index):
            mrows = [r for r in wrows if r["metric"] == metric]
            for case in dict.fromkeys(r["case"] for r in mrows):
                crows = [r for r in mrows if r["case"] == case]
                ds = min({r["dataset"] for r in crows}, key=lambda d: (
                    DATASET_ORDER.index(d) if d in DATASET_ORDER else 99, d))
                n = max(int(float(r["size"])) for r in crows if r["dataset"] == ds)
                line = [r for r in crows if r["dataset"] == ds and int(float(r["size"])) == n]
                kd = [r for r in line if store.is_kdgpu(r["system"])]
                if not kd:
                    continue
                best = _best(kd)
                peers = ", ".join("%s %s (%.3g×)" % (r["system"], fmt(r["value"], r["unit"]),
                                                      store.ratio(best, r))
                                  for r in sorted(line, key=lambda r: r["system"])
                                  if not store.is_kdgpu(r["system"]) and store.ratio(best, r))
                title = TITLES.get((wl, metric), wl).split(":")[0]
                out.append("| %s | %s, {:,} | %s | %s: %s | %s |".format(n) % (
                    title, ds, case, best["system"], fmt(best["value"], best["unit"]), peers))
    return "\n".join(out)


def _engine(rows):
    """The engine's table: each kdgpu result, and beside it each peer's of
    the same data, size and case, measured in the same run (cudaKDTree,
    from bench/cukd_compare.cu), with kdgpu's advantage over it."""
    out = ["| data set | n | case | system | ms | rate | peers, same run (kdgpu's advantage) |",
           "|---|---|---|---|---|---|---|"]
    by = {}
    for r in rows:
        by.setdefault((r["dataset"], r["size"], r["case"], r["system"]), {})[r["metric"]] = r
    peers_of = {}
    for (ds, n, case, system), m in by.items():
        if not store.is_kdgpu(system) and "ms" in m:
            peers_of.setdefault((ds, n, case), []).append(m["ms"])
    for (ds, n, case, system), m in sorted(by.items(), key=lambda kv: _sort_key(
            next(iter(kv[1].values())))):
        ms, q = m.get("ms"), m.get("qps")
        if not store.is_kdgpu(system) or not ms:
            continue
        peers = ", ".join("%s %s (%.3g×)" % (p["system"], fmt(p["value"], "ms"),
                                             store.ratio(ms, p))
                          for p in sorted(peers_of.get((ds, n, case), []),
                                          key=lambda p: float(p["value"])))
        out.append("| %s | {:,} | %s | %s | %s | %s | %s |".format(int(float(n))) % (
            ds, case, system, fmt(ms["value"], "ms"), fmt(q["value"], "q/s") if q else "", peers))
    kernels = sorted((p for (ds, n, case), ps in peers_of.items() if case.endswith(" kernel")
                      for p in ps), key=lambda p: (p["dataset"], float(p["value"])))
    if kernels:
        out += ["", "The peer's kernel times alone (no copies):", "",
                "| data set | n | case | system | ms |", "|---|---|---|---|---|"]
        out += ["| %s | {:,} | %s | %s | %s |".format(int(float(p["size"]))) % (
            p["dataset"], p["case"], p["system"], fmt(p["value"], "ms")) for p in kernels]
    out.append("\nThe engine's GPU times are end to end (host-device copies included, the tree "
               "resident on the GPU); data sets cukd-* are bench/bench_sets.c's, rounded to "
               "float for both systems, and cudaKDTree's times there are end to end too "
               "(queries in, results out); (N×) is how many times kdgpu is faster.")
    return "\n".join(out)


def write(outdir, machine, commands):
    """Write outdir/summary.md from outdir/results.csv."""
    rows = store.load_results(outdir)
    m = machine
    lines = ["# kdgpu benchmark: %s" % os.path.basename(os.path.abspath(outdir)), "",
             "- CPU: %s, %s cores" % (m.get("cpu_model"), m.get("cores")),
             "- GPU: %s%s" % (m.get("gpu"), " (driver %s)" % m["gpu_driver"]
                              if m.get("gpu_driver") else ""),
             "- PostgreSQL %s, PostGIS %s, kdgpu %s" % (
                 m.get("pg_version"), m.get("postgis_version") or "(none)",
                 m.get("kdgpu_version")),
             "- Produced by: " + "; ".join("`%s`" % c for c in dict.fromkeys(commands)), "",
             "Medians of the runs.  In a peer's cell, (N×) is how many times the row's best "
             "kdgpu system is better than that peer, measured in the same run (time or size: "
             "peer / kdgpu; throughput: kdgpu / peer); results.csv has every kdgpu system's "
             "ratio to every peer.  bench/README.md says what each workload and system is.",
             ""]
    lines += ["## Headline: the largest size of the first data set", "", headline(rows), ""]
    for wl in ORDER:
        wrows = [r for r in rows if r["workload"] == wl]
        if not wrows:
            continue
        if wl == "engine":
            lines += ["## The engine alone (make engine-bench)", "", _engine(wrows), ""]
            continue
        for metric in sorted({r["metric"] for r in wrows}, key=METRIC_ORDER.index):
            title = TITLES.get((wl, metric), "%s (%s)" % (wl, metric))
            lines += ["## %s: %s" % (wl, title), "",
                      _table([r for r in wrows if r["metric"] == metric], outdir, wl, metric), ""]
    with open(os.path.join(outdir, "summary.md"), "w") as f:
        f.write("\n".join(lines))
