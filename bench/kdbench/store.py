"""store.py: the result files of one output directory.

raw.csv holds one row per measurement, appended as the run goes and kept
across runs, so that a run can be resumed or extended (a unit already
there, one (dataset, size, workload, system), is skipped unless --force).
results.csv is raw.csv plus, on every kdgpu row, its ratio to each peer
measured on the same data, size, workload, case and metric: how many times
kdgpu is better (peer time / kdgpu time for times and sizes, kdgpu rate /
peer rate for rates).
"""
import csv
import os
import statistics

MACHINE_FIELDS = ["machine", "cpu_model", "cores", "gpu", "gpu_driver",
                  "pg_version", "postgis_version", "kdgpu_version"]
FIELDS = (["run_id"] + MACHINE_FIELDS +
          ["dataset", "size", "workload", "case", "system", "metric", "value", "unit",
           "runs", "run_values", "rows", "sample", "scale", "note"])
HIGHER_IS_BETTER = {"tps", "qps"}


def is_kdgpu(system):
    """kdgpu's own systems; every other system is a peer."""
    return system.startswith("kdgpu")


def unit_key(row):
    """What a run measures as one piece: (data set, size, workload, system)."""
    return (row["dataset"], str(row["size"]), row["workload"], row["system"])


class Store:
    """raw.csv of one output directory, in memory and on disk."""

    def __init__(self, outdir, run_id, machine):
        self.outdir = outdir
        self.run_id = run_id
        self.machine = machine
        self.path = os.path.join(outdir, "raw.csv")
        self.rows = []
        if os.path.exists(self.path):
            with open(self.path, newline="") as f:
                self.rows = list(csv.DictReader(f))

    def has_unit(self, dataset, size, workload, system):
        """Whether raw.csv has this unit's rows."""
        key = (dataset, str(size), workload, system)
        return any(unit_key(r) == key for r in self.rows)

    def replace_unit(self, dataset, size, workload, system, rows):
        """Store one unit's rows in place of any earlier ones."""
        key = (dataset, str(size), workload, system)
        self.rows = [r for r in self.rows if unit_key(r) != key] + rows
        self.save()

    def row(self, dataset, size, workload, case, system, metric, values, unit,
            rows="", sample="", scale="", note=""):
        """A result row: the median of values, with the machine's facts."""
        r = {f: self.machine.get(f, "") for f in MACHINE_FIELDS}
        r.update(run_id=self.run_id, dataset=dataset, size=size, workload=workload,
                 case=case, system=system, metric=metric,
                 value="%.6g" % statistics.median(values), unit=unit,
                 runs=len(values), run_values=" ".join("%.6g" % v for v in values),
                 rows=rows, sample=sample, scale=scale, note=note)
        return r

    def save(self):
        """Write raw.csv and results.csv."""
        _write(self.path, self.rows)
        _write(os.path.join(self.outdir, "results.csv"), with_ratios(self.rows),
               FIELDS + ["ratios"])


def _write(path, rows, fields=FIELDS):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)


def ratio(kd_row, peer_row):
    """How many times kd_row is better than peer_row (None if undefined)."""
    a, b = float(kd_row["value"]), float(peer_row["value"])
    if a <= 0 or b <= 0:
        return None
    return a / b if kd_row["metric"] in HIGHER_IS_BETTER else b / a


def group_key(row):
    """Rows that may be compared: same data, size, workload, case and metric."""
    return (row["dataset"], str(row["size"]), row["workload"], row["case"], row["metric"])


def with_ratios(rows):
    """Copies of rows, each kdgpu row with a 'ratios' field: peer=ratio;..."""
    groups = {}
    for r in rows:
        groups.setdefault(group_key(r), []).append(r)
    out = []
    for r in rows:
        r = dict(r)
        parts = []
        if is_kdgpu(r["system"]):
            for p in groups[group_key(r)]:
                x = None if is_kdgpu(p["system"]) else ratio(r, p)
                if x is not None:
                    parts.append("%s=%.3g" % (p["system"], x))
        r["ratios"] = ";".join(parts)
        out.append(r)
    return out


def load_results(outdir):
    """The rows of results.csv (ratios included)."""
    with open(os.path.join(outdir, "results.csv"), newline="") as f:
        return list(csv.DictReader(f))
