"""context.py: what every workload needs: options, capabilities of the
server, the result store, progress lines and the timing helpers that apply
the repeat budget and check the answers' row counts.
"""
import sys
import time

from . import pg

GPU_SETTINGS = ("SET kdgpu.device = gpu; SET kdgpu.gpu_min_points = 0;\n"
                # a tiny GPU call first, so times leave out the backend's
                # one-time CUDA context creation
                "SELECT count(*) FROM kd_knn_join('kb_warm', ARRAY[point(0, 0)], 1);")
CPU_SETTINGS = "SET kdgpu.device = cpu;"
# single small queries through an index: no parallel plan (worker start-up
# would dominate, e.g. PostGIS's ST_DWithin gets a parallel bitmap scan)
NO_PARALLEL = "SET max_parallel_workers_per_gather = 0;"


class Failure(Exception):
    """A measurement gave a wrong answer (a row count that cannot be)."""


class Context:
    """One run: its options, the server's capabilities, results, progress."""

    def __init__(self, args, caps, store):
        self.args = args
        self.caps = caps
        self.store = store
        self.t0 = time.time()
        self.where = ""
        self.failures = []
        self.log_file = None

    def log(self, msg):
        """A progress line: wall clock, elapsed time, where the run is."""
        el = int(time.time() - self.t0)
        line = "[%s +%d:%02d:%02d] %s%s" % (time.strftime("%H:%M:%S"), el // 3600,
                                            el // 60 % 60, el % 60, self.where, msg)
        print(line, file=sys.stderr, flush=True)
        if self.log_file:
            self.log_file.write(line + "\n")
            self.log_file.flush()

    def device_settings(self, system):
        """Settings for a kdgpu system that names its device."""
        if system.startswith("kdgpu-gpu"):
            return GPU_SETTINGS
        if system.startswith("kdgpu-cpu"):
            return CPU_SETTINGS
        return ""

    @staticmethod
    def function_role(system):
        """The table a kdgpu function system reads: kd (its kdgpu index's
        tree is searched, no build), kdgeom for -geometry systems (the same
        on a PostGIS geometry column), or base for -noindex systems (every
        call builds a tree from a scan)."""
        if system.endswith("-noindex"):
            return "base"
        return "kdgeom" if system.endswith("-geometry") else "kd"

    def function_table(self, tb, system):
        """The name of the table a kdgpu function system reads."""
        return tb.t(self.function_role(system))

    def function_settings(self, tb, system):
        """Session settings for a kdgpu function system: its device, and for
        an indexed table kd_load first, as an application would once per
        connection (the index tree loaded into the backend and, on the GPU,
        kept on the device), so that the timed calls leave that out."""
        s = self.device_settings(system)
        role = self.function_role(system)
        if role != "base":
            tb.ensure_index(role)
            s += "\nSELECT count(*) FROM kd_load('%s');" % tb.t(role)
        return s

    @property
    def budget_ms(self):
        return self.args.budget * 1000.0

    def repeat(self, stmt, settings="", expect=None, runs=None):
        """Time a counting statement (median of up to --runs runs within the
        --budget); returns (ms list, count)."""
        times, rows = pg.repeat(stmt, runs or self.args.runs, self.budget_ms, settings)
        self.check(rows, expect, stmt)
        return times, rows

    def check(self, rows, expect, what):
        """A wrong row count is a Failure."""
        if expect is not None and rows != expect:
            raise Failure("%d rows where %d were expected: %s" % (rows, expect, what[:200]))

    def uses_index(self, sql, settings=""):
        """Whether the plan of a query reads an index."""
        plan = pg.psql("%s\nEXPLAIN (COSTS OFF) %s" % (settings, sql))
        return any("Index" in r[0] for r in plan)
