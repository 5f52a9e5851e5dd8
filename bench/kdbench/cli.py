"""cli.py: bench/run's options and main loop (bench/README.md).

For each size, each data set: make the tables (unless an earlier run left
them), then run each selected workload's systems, each one a unit whose
rows go to raw.csv as soon as it ends.  Units already in raw.csv are
skipped (--force runs them again), so a run can be cut into pieces: by
--sizes, --datasets, --workloads and --systems, or by running the same
command again after an interruption.
"""
import argparse
import json
import os
import shlex
import sys
import tempfile
import time

from . import data, engine, machine, pg, store, summary
from .context import Context, Failure
from .workloads import WORKLOADS

ALL_WORKLOADS = list(WORKLOADS) + [engine.NAME]


def parse_size(text):
    """100k -> 100000, 1M -> 1000000."""
    t = text.strip().lower()
    mult = {"k": 1000, "m": 1000000, "g": 1000000000}.get(t[-1:], 1)
    return int(float(t[:-1] if mult > 1 else t) * mult)


def csv_list(text):
    """The items of a comma-separated option."""
    return [x.strip() for x in text.split(",") if x.strip()]


def options(argv):
    """Parse bench/run's command line (--smoke sets its own small settings)."""
    p = argparse.ArgumentParser(
        prog="bench/run",
        description="kdgpu against GiST, SP-GiST, PostGIS and LATERAL joins on one PostgreSQL "
                    "server (PG* variables choose it).")
    p.add_argument("--sizes", default="100k,1M", help="table sizes (default 100k,1M)")
    p.add_argument("--datasets", default=",".join(data.DATASETS),
                   help="data sets (default: all of %s)" % ",".join(data.DATASETS))
    p.add_argument("--workloads", default=",".join(ALL_WORKLOADS),
                   help="workloads (default: all of %s; engine only where a GPU is)"
                        % ",".join(ALL_WORKLOADS))
    p.add_argument("--systems", default="",
                   help="only these systems (comma-separated names or prefixes, e.g. kdgpu,gist-point)")
    p.add_argument("--skip-systems", default="",
                   help="leave out these systems (names or prefixes, e.g. seqscan,kdgpu-cpu-noindex)")
    p.add_argument("--runs", type=int, default=3, help="runs per measurement, median kept (3)")
    p.add_argument("--build-mwm", default="4GB",
                   help="maintenance_work_mem of every CREATE INDEX the build workload times, "
                        "and of the kdgpu indexes the other workloads search "
                        "(4GB; the server's default is 64MB, at which kdgpu builds a forest)")
    p.add_argument("--budget", type=float, default=60,
                   help="stop repeating a measurement once its runs took this many seconds (60)")
    p.add_argument("--queries", type=int, default=200,
                   help="query points for LIMIT 10 latency (200)")
    p.add_argument("--radius-queries", type=int, default=50, help="query points per radius case (50)")
    p.add_argument("--pgbench-secs", type=int, default=5, help="seconds per pgbench run (5)")
    p.add_argument("--pgbench-warmup", type=int, default=2,
                   help="seconds of each pgbench run left out of its rate (2)")
    p.add_argument("--pgbench-protocols", default="simple",
                   help="pgbench query protocols of knn10's throughput, comma-separated: "
                        "simple, prepared (simple)")
    p.add_argument("--pgbench-runs", type=int, default=None,
                   help="pgbench runs per case (default: --runs, at most 2)")
    p.add_argument("--mixed-secs", type=int, default=60,
                   help="seconds of the writes workload's mixed load, and of its readers alone (60)")
    p.add_argument("--mixed-vacuum-secs", type=float, default=5,
                   help="seconds between the VACUUMs of the mixed load (5)")
    p.add_argument("--clients", type=int, default=os.cpu_count() or 1,
                   help="pgbench clients for the many-client case (default: one per core)")
    p.add_argument("--lateral-secs", type=float, default=180,
                   help="run a LATERAL peer whole when that takes less than this, else sample (180)")
    p.add_argument("--sample-secs", type=float, default=20,
                   help="time a LATERAL sample is sized to take (20)")
    p.add_argument("--probe", type=int, default=1000, help="outer rows of the LATERAL probe (1000)")
    p.add_argument("--spgist-opclass", default="quad_point_ops",
                   help="SP-GiST operator class for point (quad_point_ops, the default; or kd_point_ops)")
    p.add_argument("--engine-args", default=None,
                   help="engine-bench-bin options (default: %r with a GPU; "
                        "without one the engine is skipped)" % engine.DEFAULT_GPU_ARGS)
    p.add_argument("--seed", type=int, default=1, help="data seed (1)")
    p.add_argument("--machine", default=None, help="results name (default: GPU model, or cpu-Ncore)")
    p.add_argument("--out", default=None, help="output directory (default bench/results/<machine>)")
    p.add_argument("--stop-after", default="0",
                   help="start no new unit after this many seconds (0: no limit), or after "
                        "@EPOCH (a time in seconds since 1970); the same command again resumes")
    p.add_argument("--force", action="store_true", help="measure units already in raw.csv again")
    p.add_argument("--keep-tables", action="store_true",
                   help="keep each data set's tables after its workloads (default: drop them)")
    p.add_argument("--dry-run", action="store_true",
                   help="list the units this command would measure, then exit")
    p.add_argument("--clean", action="store_true", help="drop every kb_* table and function, then exit")
    p.add_argument("--smoke", action="store_true",
                   help="check the harness end to end: tiny sizes, every workload once, "
                        "exit non-zero on any failure")
    a = p.parse_args(argv)
    if a.smoke:
        a.sizes, a.runs, a.queries, a.radius_queries = "2000", 1, 10, 5
        a.pgbench_secs, a.pgbench_transactions, a.clients = 0, 20, 2
        a.mixed_secs, a.mixed_vacuum_secs = 0, 0.2
        a.probe, a.lateral_secs, a.sample_secs = 200, 0.2, 0.1
        a.engine_args = a.engine_args or engine.SMOKE_ARGS
        a.force = True
    else:
        a.pgbench_transactions = None
    if a.pgbench_runs is None:
        a.pgbench_runs = min(a.runs, 2)
    a.sizes = [parse_size(s) for s in csv_list(a.sizes)]
    a.datasets = csv_list(a.datasets)
    a.workloads = csv_list(a.workloads)
    a.systems = csv_list(a.systems)
    a.skip_systems = csv_list(a.skip_systems)
    for d in a.datasets:
        if d not in data.DATASETS:
            p.error("unknown data set %r" % d)
    for w in a.workloads:
        if w not in ALL_WORKLOADS:
            p.error("unknown workload %r" % w)
    return a


def create_prewarm():
    """Create pg_prewarm if the server has it, at its default version or,
    where that version's update script is missing (a server packed without
    update scripts), at the newest version that installs; whether it is
    there now."""
    versions = [r[0] for r in pg.psql(
        "SELECT version FROM pg_available_extension_versions WHERE name = 'pg_prewarm' "
        "ORDER BY string_to_array(version, '.')::int[] DESC")]
    if not versions:
        return False
    error = None
    for v in [None] + versions:
        try:
            pg.psql("SET client_min_messages = warning;\nCREATE EXTENSION IF NOT EXISTS pg_prewarm%s;"
                    % ("" if v is None else " VERSION %s" % pg.quote(v)))
            return True
        except pg.PgError as e:
            error = error or e
    print("pg_prewarm cannot be created (%s): caches are not prewarmed" % error, file=sys.stderr)
    return False


def setup_server():
    """Extensions and helper functions; returns the server's capabilities."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "setup.sql")) as f:
        pg.psql("SET client_min_messages = warning;\nCREATE EXTENSION IF NOT EXISTS kdgpu;\n"
                + f.read())
    caps = {}
    for ext in ("postgis", "kdgpu_postgis"):
        available = pg.value("SELECT count(*) FROM pg_available_extensions WHERE name = '%s'" % ext)
        caps[ext] = available == "1"
        if caps[ext]:
            pg.psql("SET client_min_messages = warning;\n"
                    "CREATE EXTENSION IF NOT EXISTS %s CASCADE;" % ext)
    caps["pg_prewarm"] = create_prewarm()
    pg.psql("SET client_min_messages = warning;\n"
            "CREATE TABLE IF NOT EXISTS kb_warm AS SELECT point(i, i) AS p "
            "FROM generate_series(1, 1000) i;")
    return caps


def clean():
    """Drop every kb_* table and the helper functions."""
    tables = [r[0] for r in pg.psql("SELECT relname FROM pg_class WHERE relname LIKE 'kb\\_%' "
                                    "AND relkind = 'r'")]
    script = "SET client_min_messages = warning;\n"
    if tables:
        script += "DROP TABLE IF EXISTS %s CASCADE;\n" % ", ".join(tables)
    script += ("DROP FUNCTION IF EXISTS kb_u(int8, int8, int4), kb_repeat(text, int, float8), "
               "kb_latency(text, text[], int, float8);")
    pg.psql(script)


def selected(args, system):
    """Whether --systems and --skip-systems let a system run."""
    match = lambda names: any(system == s or system.startswith(s) for s in names)
    return (not args.systems or match(args.systems)) and not match(args.skip_systems)


def main(argv=None):
    """bench/run: returns the exit status (1 when any measurement failed)."""
    argv = sys.argv[1:] if argv is None else argv
    args = options(argv)
    if args.clean:
        clean()
        return 0
    caps = setup_server()
    info = machine.describe()
    caps["cores"] = info["cores"]
    info["machine"] = args.machine or machine.default_name(info)
    t = args.stop_after
    args.stop_after = float(t[1:]) - time.time() if t.startswith("@") else float(t)
    if args.smoke and not args.out:
        args.out = tempfile.mkdtemp(prefix="kdbench-smoke-")
    args.out = args.out or os.path.join(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))), "bench", "results", info["machine"])
    st = store.Store(args.out, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()), info)
    ctx = Context(args, caps, st)
    command = "bench/run " + " ".join(shlex.quote(a) for a in argv)
    ctx.log("%s on %s; GPU: %s%s; PostgreSQL %s, PostGIS %s; results in %s"
            % (command, info["cpu_model"], info["gpu"],
               "" if info["gpu_usable"] else " (not usable by kdgpu)", info["pg_version"],
               info["postgis_version"] or "not installed", args.out))
    if not caps["postgis"]:
        ctx.log("PostGIS is not installed: its peers are skipped")
    if not caps["kdgpu_postgis"]:
        ctx.log("kdgpu_postgis is not installed: kd_dwithin and kdgpu on geometry are skipped")
    if not info["gpu_usable"]:
        ctx.log("no GPU usable by kdgpu: the kdgpu-gpu systems are skipped")
    plan = make_plan(ctx, info)
    total = sum(len(u) for _, u, _ in plan)
    ctx.log("%d units to measure" % total)
    if args.dry_run:
        for tb, units, _ in plan:
            for wname, system, _ in units:
                print("%s %s %d %s" % (wname, tb.ds.name, tb.n, system))
        return 0

    os.makedirs(args.out, exist_ok=True)
    ctx.log_file = open(os.path.join(args.out, "run.log"), "a")
    meta_path = os.path.join(args.out, "machine.json")
    meta = json.load(open(meta_path)) if os.path.exists(meta_path) else {"commands": []}
    meta.update(info)
    meta["commands"].append(command)
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    run_plan(ctx, plan, total, info, meta)
    if engine.NAME in args.workloads:
        run_engine(ctx, info)
    st.save()
    summary.write(args.out, info, meta["commands"])
    if args.smoke:
        ctx.failures += smoke_checks(args, st)
    ctx.log("results: %s/results.csv, %s/summary.md" % (args.out, args.out))
    if ctx.failures:
        ctx.log("%d failures:\n  %s" % (len(ctx.failures), "\n  ".join(ctx.failures)))
        return 1
    return 0


def make_plan(ctx, info):
    """[(tables, [(workload, system, function)], roles)]: the units still to
    measure, by size, then data set, then workload, and the tables they
    read."""
    args, caps, st = ctx.args, ctx.caps, ctx.store
    plan = []
    if "geography" in args.datasets and not caps["kdgpu_postgis"]:
        ctx.log("the geography data set needs kdgpu_postgis: skipped")
        args.datasets.remove("geography")
    for n in args.sizes:
        for dname in args.datasets:
            tb = data.Tables(data.DATASETS[dname], n, args.seed, caps, args.spgist_opclass,
                             args.build_mwm)
            units, roles = [], set()
            for wname in args.workloads:
                if wname == engine.NAME:
                    continue
                for system, needs, fn in WORKLOADS[wname].systems(ctx, tb):
                    if not selected(args, system):
                        continue
                    if system.startswith("kdgpu-gpu") and not info["gpu_usable"]:
                        continue
                    if not args.force and st.has_unit(dname, n, wname, system):
                        continue
                    units.append((wname, system, fn))
                    roles.update(needs)
            if units:
                plan.append((tb, units, sorted(roles)))
    return plan


def stopping(ctx):
    """Whether --stop-after has passed."""
    return ctx.args.stop_after and time.time() - ctx.t0 > ctx.args.stop_after


def run_plan(ctx, plan, total, info, meta):
    """Measure the units: make each data set's tables, run its units (a
    failing unit is reported and the run goes on), drop the tables."""
    args, st = ctx.args, ctx.store
    done = 0
    for tb, units, roles in plan:
        if stopping(ctx):
            ctx.log("--stop-after reached: %d units left; the same command again resumes"
                    % (total - done))
            break
        ctx.where = "%s %s: " % (tb.ds.name, "{:,}".format(tb.n))
        if tb.ready(roles):
            ctx.log("tables from an earlier run")
        else:
            ctx.log("generating data and tables")
            try:
                tb.create(roles)
            except pg.PgError as e:
                ctx.log("FAILED: %s" % e)
                ctx.failures.append("tables %s %d: %s" % (tb.ds.name, tb.n, e))
                done += len(units)
                continue
            ctx.log("tables ready")
        for wname, system, fn in units:
            if stopping(ctx):
                break
            done += 1
            ctx.where = "[%d/%d] %s %s %s: " % (done, total, wname, tb.ds.name,
                                                 "{:,}".format(tb.n))
            t0 = time.time()
            try:
                rows = fn(ctx, tb, system)
            except Exception as e:     # noqa: BLE001 -- one unit's failure ends only that unit
                e = e if isinstance(e, (pg.PgError, Failure)) else "%s: %s" % (type(e).__name__, e)
                ctx.log("%s: FAILED: %s" % (system, e))
                ctx.failures.append("%s %s %d %s: %s" % (wname, tb.ds.name, tb.n, system, e))
                continue
            if rows:
                st.replace_unit(tb.ds.name, tb.n, wname, system, rows)
                summary.write(args.out, info, meta["commands"])
                ctx.log("%s: %s (%.0f s)" % (system, ", ".join(
                    "%s %s" % (r["case"] or r["metric"], summary.fmt(r["value"], r["unit"]))
                    for r in rows), time.time() - t0))
        ctx.where = ""
        if not args.keep_tables and not stopping(ctx):
            tb.drop()


def run_engine(ctx, info):
    """The engine workload: one unit for the whole engine-bench run."""
    args, st = ctx.args, ctx.store
    ctx.where = "[engine] "
    if stopping(ctx):
        ctx.log("--stop-after reached: skipped; the same command again resumes")
    elif args.engine_args is None and not info["gpu_usable"]:
        ctx.log("skipped: no GPU (give --engine-args to run it on the CPU)")
    elif args.force or not any(r["workload"] == engine.NAME for r in st.rows):
        try:
            rows = engine.run(ctx, args.engine_args or engine.DEFAULT_GPU_ARGS,
                              info["gpu_usable"])
            if rows is not None:
                st.rows = [r for r in st.rows if r["workload"] != engine.NAME] + rows
                st.save()
                ctx.log("%d results" % len(rows))
        except (RuntimeError, ValueError) as e:
            ctx.log("FAILED: %s" % e)
            ctx.failures.append("engine: %s" % e)
    ctx.where = ""


def smoke_checks(args, st):
    """What a smoke run must have produced: rows for every workload asked,
    a kdgpu row with a ratio in every batched workload, the summary."""
    problems = []
    results = store.with_ratios(st.rows)
    for w in args.workloads:
        if not any(r["workload"] == w for r in results):
            problems.append("smoke: no results for workload %s" % w)
    for w in ("build", "knn10", "allknn", "knnjoin", "radius"):
        if w in args.workloads and not any(r["workload"] == w and r["ratios"] for r in results):
            problems.append("smoke: no kdgpu-to-peer ratio for workload %s" % w)
    if not os.path.getsize(os.path.join(args.out, "summary.md")):
        problems.append("smoke: empty summary.md")
    return problems
