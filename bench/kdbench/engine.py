"""engine.py: the engine alone, from `make engine-bench` (bench/engine_bench.c),
and beside cudaKDTree measured in the same run (`make cukd-bench`,
bench/cukd_compare.cu) where nvcc, the peer's sources and a GPU are.

It needs this source tree: it builds build/engine-bench-bin with make (or takes
the one already built, when make cannot run where the server's pg_config is
first on PATH) and runs it
with KDGPU_CUDA_LIB pointing at build/kdgpu_cuda.so, then reads its RESULT
lines.  Skipped with a message when the binary cannot be built.  The
cudaKDTree comparison runs only where the machine has a usable GPU; when
its runner cannot be built it is skipped with make's message.
"""
import json
import os
import subprocess

NAME = "engine"
DEFAULT_GPU_ARGS = "-n 10M -d 3 -k 8,10 -t uniform,clustered -D gpu -r 3"
SMOKE_ARGS = "-n 2000 -d 2 -k 10 -t uniform,clustered -D cpu1 -r 1"
CUKD_ARGS = "--n 10M --reps 3"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _build(ctx, target):
    """make target in the source tree; returns the binary's path or None."""
    ctx.log("building %s" % target)
    make = subprocess.run(["make", "-s", "-C", REPO, target], capture_output=True, text=True)
    binary = os.path.join(REPO, target)
    if make.returncode != 0:
        if not os.path.exists(binary):
            ctx.log("skipped: make %s did not run here: %s" % (target, make.stderr.strip()[-500:]))
            return None
        ctx.log("make %s did not run here; using the %s already built" % (target, target))
    return binary


def _run(ctx, binary, args, log_name):
    """Run a benchmark binary; its output goes to log_name; returns stdout."""
    env = dict(os.environ)
    env["KDGPU_CUDA_LIB"] = os.path.join(REPO, "build", "kdgpu_cuda.so")
    ctx.log("%s %s" % (os.path.basename(binary), args))
    proc = subprocess.run([binary] + args.split(), capture_output=True, text=True, env=env)
    with open(os.path.join(ctx.args.out, log_name), "w") as f:
        f.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError("%s failed: %s" % (os.path.basename(binary),
                                               (proc.stdout + proc.stderr).strip()[-1000:]))
    return proc.stdout


def _results(stdout):
    return [json.loads(line[len("RESULT "):]) for line in stdout.splitlines()
            if line.startswith("RESULT ")]


def _engine_rows(ctx, stdout):
    """Rows of engine-bench-bin's RESULT lines."""
    rows = []
    for r in _results(stdout):
        case = r["op"] if r["op"] in ("build", "radius", "box") else "%s k=%d" % (r["op"], r["k"])
        note = "%d queries" % r["queries"]
        if "hits_per_query" in r:
            note += ", %.3g hits per query" % r["hits_per_query"]
        ds = "%s%d" % (r["data"], r["dim"])
        system = "kdgpu-engine-%s" % r["device"]
        rows.append(ctx.store.row(ds, r["n"], NAME, case, system, "ms", [r["ms"]], "ms",
                                  rows=r["queries"], note=note + "; median of the engine's runs"))
        if r["queries"]:
            rows.append(ctx.store.row(ds, r["n"], NAME, case, system, "qps", [r["qps"]], "q/s",
                                      rows=r["queries"], note=note))
    return rows


def _cukd_rows(ctx, stdout):
    """Rows of cukd-compare-bin's RESULT lines: kdgpu's engine and each
    cudaKDTree configuration (a peer system each), times end to end; the
    peer's kernel times in a case of their own."""
    rows = []
    for r in _results(stdout):
        ds = "cukd-%s" % r["set"]
        if r["system"].startswith("kdgpu"):
            system = r["system"]
        else:
            system = "cudakdtree" if r["op"] == "build" else "cudakdtree-" + (
                r["config"].replace(" order", "").replace(", ", "-").lower())
        case = "%s k=%d" % (r["op"], r["k"]) if r["op"] == "knn" else r["op"]
        note = "%s: %s; median of %d runs" % (r["system"], r["config"], len(r["runs_ms"]))
        rows.append(ctx.store.row(ds, r["n"], NAME, case, system, "ms", [r["ms"]], "ms",
                                  rows=r["queries"], note=note))
        if r["op"] == "knn":
            rows.append(ctx.store.row(ds, r["n"], NAME, case, system, "qps",
                                      [r["queries"] / r["ms"] * 1e3], "q/s", rows=r["queries"],
                                      note=note))
        if "kernel_ms" in r:
            rows.append(ctx.store.row(ds, r["n"], NAME, case + " kernel", system, "ms",
                                      [r["kernel_ms"]], "ms", rows=r["queries"], note=note))
    return rows


def run(ctx, engine_args, with_peer):
    """Run the engine benchmark, and the cudaKDTree comparison when
    with_peer; returns result rows (None when nothing could run)."""
    binary = _build(ctx, "build/engine-bench-bin")
    if binary is None:
        return None
    rows = _engine_rows(ctx, _run(ctx, binary, engine_args, "engine-bench.txt"))
    if not with_peer:
        ctx.log("cudaKDTree skipped: no usable GPU here")
        return rows
    binary = _build(ctx, "build/cukd-compare-bin")
    try:
        if binary is not None:
            rows += _cukd_rows(ctx, _run(ctx, binary, CUKD_ARGS, "cukd-compare.txt"))
    except RuntimeError as e:
        ctx.log("cudaKDTree comparison FAILED (cukd-compare.txt): %s" % e)
        ctx.failures.append("engine: cudaKDTree comparison: %s" % e)
    return rows
