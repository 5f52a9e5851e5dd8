"""engine.py: the engine alone, from `make engine-bench` (bench/engine_bench.c),
beside the cudaKDTree figures that DESIGN.md quotes for an H200.

It needs this source tree: it builds engine-bench-bin with make (or takes
the one already built, when make cannot run where the server's pg_config is
first on PATH) and runs it
with KDGPU_CUDA_LIB pointing at cuda/kdgpu_cuda.so, then reads its RESULT
lines.  Skipped with a message when the binary cannot be built.
"""
import json
import os
import subprocess

NAME = "engine"
DEFAULT_GPU_ARGS = "-n 10M -d 3 -k 8,10 -t uniform,clustered -D gpu -r 3"
SMOKE_ARGS = "-n 2000 -d 2 -k 10 -t uniform,clustered -D cpu1 -r 1"

# cudaKDTree on an H200, 10M uniform float3 points (DESIGN.md): reported
# figures, not measured by this harness; (op, k, data) -> (value, unit)
CUDAKDTREE = {
    ("build", 0, "uniform"): (83.0, "ms"),
    ("knn", 8, "uniform"): (250e6, "q/s"),
    ("knn", 8, "clustered"): (1.1e6, "q/s"),
}


def run(ctx, engine_args):
    """Run the engine benchmark; returns result rows."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ctx.log("building engine-bench-bin")
    make = subprocess.run(["make", "-s", "-C", repo, "engine-bench-bin"],
                          capture_output=True, text=True)
    binary = os.path.join(repo, "engine-bench-bin")
    if make.returncode != 0:
        if not os.path.exists(binary):
            ctx.log("skipped: make engine-bench-bin did not run here: %s"
                    % make.stderr.strip()[-500:])
            return None
        ctx.log("make engine-bench-bin did not run here; using the engine-bench-bin already built")
    env = dict(os.environ)
    env["KDGPU_CUDA_LIB"] = os.path.join(repo, "cuda", "kdgpu_cuda.so")
    ctx.log("engine-bench-bin %s" % engine_args)
    proc = subprocess.run([binary] + engine_args.split(),
                          capture_output=True, text=True, env=env)
    with open(os.path.join(ctx.args.out, "engine-bench.txt"), "w") as f:
        f.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError("engine-bench-bin failed: " + proc.stderr.strip()[-1000:])
    rows = []
    for line in proc.stdout.splitlines():
        if not line.startswith("RESULT "):
            continue
        r = json.loads(line[len("RESULT "):])
        case = r["op"] if r["op"] == "build" else "%s k=%d" % (r["op"], r["k"])
        if r["op"] == "radius":
            case = "radius"
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
