"""Roofline points from stored runs: one (arithmetic intensity, FLOP/s) point per kernel.

A measured run (kind ``run``) gives its point from the op's analytic FLOPs and bytes over the
median timed kernel duration. An imported profile gives one point per launch that has counted
FLOPs, DRAM bytes and a duration (:mod:`gpuprof.derive.counters`). The ceilings a point is
drawn under are the peaks stored with the run, else the device table's row for the run's device.

The frame is long and plain (``POINT_COLUMNS``) so the plot and any table read the same thing.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from gpuprof import ops
from gpuprof.devices.peaks import Peaks
from gpuprof.errors import GpuprofError
from gpuprof.model import ANALYTIC, MEASURED, Run

if TYPE_CHECKING:
    import pandas as pd

POINT_COLUMNS = ["device", "label", "op", "dtype", "ai", "flop_rate", "origin", "run_id"]


def device_name(run: Run, launch_device: str = "") -> str:
    """The device a point belongs to: the launch's device name, else the run's, else what the
    profile says (ncu CSVs give only the index and compute capability), so charts never merge
    different devices."""
    if launch_device:
        return launch_device
    device = run.device
    if device.get("name"):
        return str(device["name"])
    cc = f" (CC {device['cc']})" if device.get("cc") else ""
    return f"device {device.get('index', '?')}{cc}, unnamed in {run.format}"


def launch_devices(run: Run) -> list[str]:
    """:func:`device_name` of every launch of ``run``, in launch order."""
    return [device_name(run, device) for device in run.launch_table["device"].tolist()]


def short_kernel_name(kernel: str, width: int = 40) -> str:
    """'void gemm_v1<float>(float *, int)' -> 'gemm_v1<float>': what a chart label has room for."""
    name = re.sub(r"^(void|__global__)\s+", "", kernel.strip()).split("(")[0].strip() or kernel
    return name if len(name) <= width else name[: width - 1] + "…"


def _size_text(size: float) -> str:
    """'6 MB', '1.5 GB', '512 KB': decimal units as --size reads them, no trailing zeros."""
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size >= factor:
            return f"{size / factor:.3g} {unit}"
    return f"{size:.0f} B"


def _run_point(run: Run) -> dict[str, Any] | None:
    """The point of a measured run: analytic FLOPs and bytes, median timed duration."""
    from gpuprof.derive.stats import timing_stats
    from gpuprof.derive.summary import timings

    w = run.workload or {}
    times = timings(run)
    if not times or not {"op", "shape", "dtype"} <= w.keys():
        return None
    shape = tuple(w["shape"])
    flops = ops.flops(w["op"], shape)
    moved = ops.bytes_moved(w["op"], shape, w["dtype"])
    size = w.get("size_bytes") or moved
    op = w["op"] if w["dtype"] == "float32" else f"{w['op']} ({w['dtype']})"
    return {"device": device_name(run), "label": f"{op} {_size_text(size)}",
            "op": op, "dtype": w["dtype"], "ai": flops / moved,
            "flop_rate": flops / timing_stats(times).median,
            "origin": f"{ANALYTIC} FLOPs and bytes / timed median", "run_id": run.run_id}


_PRECISIONS = {"sp": "float32", "dp": "float64", "hp": "float16"}


def _launch_points(run: Run) -> list[dict[str, Any]]:
    """An imported run's points, one per launch: counted FLOP/s of its busiest precision over its
    DRAM bandwidth (``gpuprof.derive.counters``: nvprof counts or ncu instruction sums alike)."""
    from gpuprof.derive import counters

    derived = counters.frame(run)
    rates = [(derived[f"flop_rate_{p}"].tolist(), dtype) for p, dtype in _PRECISIONS.items()]
    points = []
    for row, (kernel, device, bandwidth) in enumerate(zip(
            run.launch_table["kernel"].tolist(), launch_devices(run), derived["dram_bandwidth"].tolist())):
        found = [(rate[row], dtype) for rate, dtype in rates if rate[row] > 0]  # NaN compares False
        if not found or not bandwidth > 0:
            continue
        rate, dtype = max(found)
        name = short_kernel_name(kernel)
        points.append({"device": device, "label": name, "op": name, "dtype": dtype, "ai": rate / bandwidth,
                       "flop_rate": rate, "origin": f"{MEASURED} FLOPs, DRAM bytes and duration",
                       "run_id": run.run_id})
    return points


def points(runs: list[Run]) -> tuple[pd.DataFrame, list[str]]:
    """Roofline points of ``runs``, and one line per run that gave none (and why). Calibration runs
    hold ceilings, not kernels: they are passed over without a line."""
    import pandas as pd

    from gpuprof.calibrate import KIND as CALIBRATION

    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for run in runs:
        if run.kind == CALIBRATION:
            continue
        try:
            found = [_run_point(run)] if run.kind == "run" else _launch_points(run)
        except (GpuprofError, ValueError, KeyError, TypeError) as error:
            skipped.append(f"run {run.run_id[:8]}: {error}")
            continue
        found = [p for p in found if p is not None and p["ai"] > 0 and p["flop_rate"] > 0]
        if not found:
            skipped.append(f"run {run.run_id[:8]} ({run.format}): no FLOPs, bytes and time to place")
        rows.extend(p for p in found if p is not None)
    return pd.DataFrame(rows, columns=POINT_COLUMNS), skipped


def ceilings(run: Run) -> list[Peaks]:
    """The peaks to draw for ``run``: those stored with it, else the device table's row."""
    from gpuprof.derive.summary import run_peaks

    stored = run_peaks(run)
    if stored:
        return stored
    return table_peaks(run.device.get("name", ""))


def table_peaks(device_name: str) -> list[Peaks]:
    """The device table's peaks for ``device_name`` when it names exactly one GPU, else []."""
    from gpuprof.devices import gpu_table

    found = gpu_table.find(device_name) if device_name else []
    return [gpu_table.peaks(found[0])] if len(found) == 1 else []


def device_ceilings(runs: list[Run], fallback: list[Peaks] | None = None) -> dict[str, list[Peaks]]:
    """Per device name, the distinct peaks of its runs (stored ones, else the table's); devices
    left without any get ``fallback`` (a GPU the user named for a profile that names none)."""
    out: dict[str, list[Peaks]] = {}
    for run in runs:
        for name in set(launch_devices(run)) or {device_name(run)}:
            known = out.setdefault(name, [])
            for peaks in ceilings(run) or table_peaks(name):
                if all((p.origin, p.source) != (peaks.origin, peaks.source) for p in known):
                    known.append(peaks)
    return {name: known or list(fallback or []) for name, known in out.items()}
