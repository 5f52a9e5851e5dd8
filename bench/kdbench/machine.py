"""machine.py: what the results were measured on.

The CPU model and core count are read on the machine running the harness,
which is meant to be the server's host (run it there); the GPU model and
driver come from nvidia-smi when it is present, else from kd_devices() on
the server; versions come from the server itself.
"""
import os
import re
import shutil
import socket
import subprocess

from . import pg


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def _nvidia_smi():
    """(name, driver) of the first GPU nvidia-smi lists, or None."""
    if not shutil.which("nvidia-smi"):
        return None
    proc = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                           "--format=csv,noheader"], capture_output=True, text=True)
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    if proc.returncode != 0 or not lines:
        return None
    name, driver = [x.strip() for x in lines[0].split(",", 1)]
    if len(lines) > 1:
        name = "%d x %s" % (len(lines), name)
    return name, driver


def describe():
    """A dict of machine and version facts recorded with every result."""
    info = {
        "host": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count() or 1,
        "pg_version": pg.value("SHOW server_version"),
        "postgis_version": pg.value(
            "SELECT extversion FROM pg_extension WHERE extname = 'postgis'") or "",
        "kdgpu_version": pg.value(
            "SELECT extversion FROM pg_extension WHERE extname = 'kdgpu'") or "",
        "kdgpu_postgis_version": pg.value(
            "SELECT extversion FROM pg_extension WHERE extname = 'kdgpu_postgis'") or "",
    }
    info["gpu_usable"] = pg.value("SELECT gpu_usable FROM kd_status()") == "t"
    smi = _nvidia_smi()
    if smi:
        info["gpu"], info["gpu_driver"] = smi
    elif info["gpu_usable"]:
        dev = pg.psql("SELECT name, driver_version FROM kd_devices() LIMIT 1")
        info["gpu"], info["gpu_driver"] = dev[0] if dev else ("unknown", "")
    else:
        info["gpu"], info["gpu_driver"] = "none", ""
    return info


def default_name(info):
    """A short name for bench/results/<machine>: the GPU's model (e.g. h200), or cpu-<cores>core without a GPU."""
    if info["gpu"] != "none":
        words = re.sub(r"[^a-z0-9]+", " ", info["gpu"].lower()).split()
        model = [w for w in words if re.fullmatch(r"[a-z]+[0-9]+[a-z]*", w)]
        return (model or words or ["gpu"])[0]
    return "cpu-%dcore" % info["cores"]
