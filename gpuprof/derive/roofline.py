"""Roofline points from stored runs: one point per kernel, at its arithmetic intensity at L1, L2 and
DRAM where the counters give the traffic of each level (NERSC's hierarchical roofline).

A measured run (kind ``run``) gives one DRAM-level point from the op's analytic FLOPs and bytes
over the median timed kernel duration. An imported profile gives one point per kernel and run:
the launches of a kernel summed (FLOPs, bytes and time; :mod:`gpuprof.derive.kernels`), so a
kernel launched a thousand times is one point, as in NERSC's charts. ``precision`` picks the FLOPs
counted: one of ``POINT_PRECISIONS``, or ``all`` (every precision and the tensor cores together).

The frame is long and plain (``POINT_COLUMNS``) so the plot and any table read the same thing:
``ai`` is the DRAM intensity, ``ai_l2`` and ``ai_l1`` are NaN where that traffic was not counted,
``precision`` names what the FLOPs count ("fp32", "fp16+tensor"), ``time`` the kernel's seconds,
``clock`` the clock it ran at (Hz: the profiler's SM clock, time-weighted; a CPU run's; NaN unknown),
``kernel`` its full name (a measured run's: its op), ``tensor_kind`` the ceiling its tensor work is
judged against ("fp16/tensor", "" where the derive step does not say), ``ai_check`` which byte
counter looks wrong where AI(L1) <= AI(L2) <= AI(DRAM) fails (:func:`gpuprof.derive.levels.consistency`),
``left_out`` why a kernel has no place (its total FLOPs unknown; its ``ai`` and ``flop_rate`` NaN).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gpuprof.derive import kernels, levels
from gpuprof.derive.levels import consistency
from gpuprof.derive.stats import timing_stats
from gpuprof.derive.summary import run_peaks, timings
from gpuprof.devices import gpu_table
from gpuprof.devices.gpu_table import FMA, Ceiling
from gpuprof.devices.peaks import Peaks
from gpuprof.errors import GpuprofError, InputError
from gpuprof.model import ANALYTIC, CALIBRATION, MEASURED, PEAK_TABLE, Run
from gpuprof.workloads import ops

if TYPE_CHECKING:
    import pandas as pd

    from gpuprof.devices.gpu_table import Ceiling

POINT_COLUMNS = [
    "device",
    "kernel",
    "label",
    "op",
    "precision",
    "tensor_kind",
    "ai",
    "ai_l2",
    "ai_l1",
    "flop_rate",
    "time",
    "clock",
    "origin",
    "run_id",
    "ai_check",
    "left_out",
]
POINT_PRECISIONS = ("fp64", "fp32", "fp16", "tensor")
DTYPE_PRECISION = {"float64": "fp64", "float32": "fp32", "float16": "fp16"}


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


def short_kernel_name(kernel: str, width: int = 60) -> str:
    """'void gemm_v1<float>(float *, int)' -> 'gemm_v1<float>': what a chart label has room for. The
    parameter list is the first '(' outside template brackets ('softmax<float, (int)5>(...)')."""
    name = re.sub(r"^(void|__global__)\s+", "", kernel.strip())
    depth = 0
    for i, char in enumerate(name):
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "(" and depth == 0:
            name = name[:i]
            break
    name = name.strip() or kernel
    return name if len(name) <= width else name[: width - 1] + "…"


def size_text(size: float) -> str:
    """'6 MB', '1.5 GB', '512 KB': decimal units as --size reads them, no trailing zeros."""
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size >= factor:
            return f"{size / factor:.3g} {unit}"
    return f"{size:.0f} B"


def _run_point(run: Run, precision: str) -> dict[str, Any] | None:
    """The point of a measured run: analytic FLOPs and bytes (DRAM level), median timed duration."""
    w = run.workload or {}
    times = timings(run)
    if not times or not {"op", "shape", "dtype"} <= w.keys():
        return None
    mine = DTYPE_PRECISION.get(w["dtype"], w["dtype"])
    if precision not in ("all", mine):
        return None
    shape = tuple(w["shape"])
    flops = ops.flops(w["op"], shape)
    moved = ops.bytes_moved(w["op"], shape, w["dtype"])
    size = w.get("size_bytes") or moved
    op = w["op"] if w["dtype"] == "float32" else f"{w['op']} ({w['dtype']})"
    median = timing_stats(times).median
    return {
        "device": device_name(run),
        "kernel": w["op"],
        "label": f"{op} {size_text(size)}",
        "op": op,
        "precision": mine,
        "tensor_kind": "",
        "ai": flops / moved,
        "ai_l2": math.nan,
        "ai_l1": math.nan,
        "flop_rate": flops / median,
        "time": median,
        "clock": run.device.get("clock_during_run_hz") or math.nan,
        "origin": f"{ANALYTIC} FLOPs and bytes / timed median",
        "run_id": run.run_id,
        "engine": w.get("engine") or "",
    }


def _kernel_sums(run: Run) -> pd.DataFrame:
    """Per kernel of an imported run (:func:`gpuprof.derive.kernels.kernel_frame`): its seconds, SM
    clock, FLOPs per precision and in all, bytes per level. A sum is NaN unless every launch of the
    kernel has the value (its ``_complete`` flag), so no AI mixes launches that have a count with
    launches that do not."""
    frame = kernels.kernel_frame([run])
    sums = frame[["device", "kernel", "launches", "tensor_kind", "sm_clock"]].rename(columns={"sm_clock": "clock"})
    sums["device"] = [device_name(run, device) for device in frame["device"].tolist()]
    for name, column in {
        "time": "time",
        **{f"flops_{p}": f"flops_{p}" for p in POINT_PRECISIONS},
        "flops_all": "flops_total",
        "bytes_dram": "dram_bytes",
        "bytes_l2": "l2_bytes",
        "bytes_l1": "l1_bytes",
    }.items():
        sums[name] = frame[column].where(frame[f"{column}_complete"])
    for p in POINT_PRECISIONS[:3]:  # the measured rates, for a kernel with no counts or no time
        sums[f"rate_{p}"], sums[f"ai_rate_{p}"] = frame[f"flop_rate_{p}"], frame[f"ai_dram_{p}"]
    return sums


def _rate_points(row: Any, run: Run, precision: str) -> list[dict[str, Any]]:
    """A kernel without counts or time (a file of ncu's roofline-section rates): a DRAM-level point
    per precision measured, FLOP/s = per-cycle rate x SM clock at AI = FLOP/s / DRAM byte/s, as
    Nsight Compute's own per-precision roofline places it."""
    measured = [p for p in POINT_PRECISIONS[:3] if precision in ("all", p) and getattr(row, f"rate_{p}") > 0]
    points = []
    for p in measured:
        point = _kernel_point(row, run, p, math.nan, p, p.upper() if len(measured) > 1 else "")
        point.update(
            ai=getattr(row, f"ai_rate_{p}"),
            flop_rate=getattr(row, f"rate_{p}"),
            origin=f"{MEASURED} FLOP/s and DRAM byte/s (rates: Nsight Compute's roofline section formula)",
        )
        points.append(point)
    return points


def _kernel_point(row: Any, run: Run, precision: str, work: float, used: str, tag: str) -> dict[str, Any]:
    """One point of a kernel: ``work`` FLOPs (of ``precision``) over its seconds and its bytes per level;
    ``tag`` ('FP32', 'total') names which of its points this is where it has several."""
    launches = int(row.launches)
    name = short_kernel_name(str(row.kernel)) + (f" {tag}" if tag else "")
    return {
        "device": row.device,
        "kernel": row.kernel,
        "op": name,
        "label": name + (f" ({launches} launches)" if launches > 1 else ""),
        "precision": precision,
        "tensor_kind": row.tensor_kind if "tensor" in used.split("+") else "",
        "ai": work / row.bytes_dram,
        "ai_l2": work / row.bytes_l2,
        "ai_l1": work / row.bytes_l1,
        "flop_rate": work / row.time,
        "time": row.time,
        "clock": row.clock,
        "run_id": run.run_id,
        "origin": f"{MEASURED} FLOPs, bytes and duration, launches of a kernel summed",
        "left_out": "",
    }


def _launch_points(run: Run, precision: str) -> list[dict[str, Any]]:
    """An imported run's points, one per kernel and kind of work counted (:func:`_kernel_sums`), as
    Nsight Compute's per-precision rooflines: with ``precision`` one of :data:`POINT_PRECISIONS`, that
    work's point; with "all", a point per precision the kernel ran, plus its total where it ran
    several and every one was counted. A kernel whose total is unknown (tensor work the counters
    did not measure) keeps its counted precisions' points and a row without a place that says so."""
    sums = _kernel_sums(run)
    points = []
    for row in sums.itertuples(index=False):
        if not row.time > 0:  # NaN compares False
            points += _rate_points(row, run, precision)
            continue
        counted = [p for p in POINT_PRECISIONS if getattr(row, f"flops_{p}") > 0]
        if not counted and row.flops_all > 0 and precision == "all":  # a total of no known precision
            points.append(_kernel_point(row, run, "total", row.flops_all, "total", ""))
            continue
        if precision != "all":
            if precision in counted:
                points.append(_kernel_point(row, run, precision, getattr(row, f"flops_{precision}"), precision, ""))
            continue
        several = len(counted) > 1 or not row.flops_all > 0
        points += [
            _kernel_point(row, run, p, getattr(row, f"flops_{p}"), p, p.upper() if several else "") for p in counted
        ]
        if row.flops_all > 0 and len(counted) > 1:
            used = "+".join(counted)
            points.append(_kernel_point(row, run, used, row.flops_all, used, "total"))
        elif counted and not row.flops_all > 0:
            name = short_kernel_name(str(row.kernel))
            points.append(
                {
                    **_kernel_point(row, run, "all", math.nan, "", "total"),
                    "label": f"{name} total",
                    "left_out": f"total FLOPs unknown (tensor work not counted; 'gpuprof import' says why), not drawn; "
                    f"its {' and '.join(p.upper() for p in counted)} points are drawn",
                }
            )
    return points


def _name_engines(rows: list[dict[str, Any]]) -> None:
    """Measured points of a device whose runs used several engines name theirs ('add · numpy 64 KB'):
    one chart holds them, and an op's points would otherwise read alike."""
    engines: dict[str, set[str]] = {}
    for row in rows:
        if row.get("engine"):
            engines.setdefault(row["device"], set()).add(row["engine"])
    for row in rows:
        if row.get("engine") and len(engines[row["device"]]) > 1:
            named = f"{row['op']} · {row['engine']}"
            row["label"] = named + row["label"][len(row["op"]) :]
            row["op"] = named


def _missing(run: Run, precision: str) -> str:
    """What keeps ``run`` off the chart: 'DRAM bytes' where its FLOPs and time were counted, not a
    list of everything a point needs (a perf run with counted FLOPs and no byte counter)."""
    what = "FLOPs" if precision == "all" else f"{precision} FLOPs"
    if run.kind == "run":
        return f"{what}, DRAM bytes and time"
    try:
        frame = kernels.kernel_frame([run])
    except (GpuprofError, ValueError, KeyError, TypeError):
        return f"{what}, DRAM bytes and time"
    gaps = []
    for name, column in (
        (what, "flops_total" if precision == "all" else f"flops_{precision}"),
        ("DRAM bytes", "dram_bytes"),
        ("time", "time"),
    ):
        if not (frame[column].where(frame[f"{column}_complete"]) > 0).any():
            gaps.append(f"{name} (counted in some launches only)" if (frame[column] > 0).any() else name)
    if not gaps:
        return f"{what}, DRAM bytes and time in the same kernel"
    return ", ".join(gaps[:-1]) + " and " * (len(gaps) > 1) + gaps[-1]


def drawable(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of a :func:`points` frame that have a place on the chart."""
    return frame[(frame["ai"] > 0) & (frame["flop_rate"] > 0)]


def points(runs: list[Run], precision: str = "all") -> tuple[pd.DataFrame, list[str]]:
    """Roofline points of ``runs`` counting ``precision`` FLOPs ("all" or one of ``POINT_PRECISIONS``),
    and one line per run that gave none, or per kernel left out (``left_out``), and why. Calibration
    runs hold ceilings, not kernels: they are passed over without a line."""
    import pandas as pd

    if precision != "all" and precision not in POINT_PRECISIONS:
        raise ValueError(f"precision must be 'all' or one of {', '.join(POINT_PRECISIONS)}, not {precision!r}")
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    unplaced: list[Run] = []
    for run in runs:
        if run.kind == CALIBRATION:
            continue
        try:
            found = [_run_point(run, precision)] if run.kind == "run" else _launch_points(run, precision)
        except (GpuprofError, ValueError, KeyError, TypeError) as error:
            skipped.append(f"run {run.run_id[:8]}: {error}")
            continue
        placed = [p for p in found if p is not None and p["ai"] > 0 and p["flop_rate"] > 0]
        left = [p for p in found if p is not None and p.get("left_out")]
        skipped += [f"run {run.run_id[:8]}: {p['label']}: {p['left_out']}" for p in left]
        if not placed and not left:
            unplaced.append(run)
        rows += placed + left
    by_gap: dict[str, list[Run]] = {}  # one line per thing missing: a store of imports may hold hundreds
    for run in unplaced:
        by_gap.setdefault(_missing(run, precision), []).append(run)
    for gap, group in by_gap.items():
        formats = Counter(run.format for run in group)
        ids = ", ".join(run.run_id[:8] for run in group[:3]) + (", ..." if len(group) > 3 else "")
        skipped.append(
            f"{len(group)} run(s) with no {gap} to place ("
            + ", ".join(f"{n} {fmt}" for fmt, n in formats.most_common())
            + f"): {ids}"
        )
    _name_engines(rows)
    frame = pd.DataFrame(rows, columns=POINT_COLUMNS)
    frame["left_out"] = frame["left_out"].astype(object).fillna("")
    # bytes per FLOP at each level, which is what the check compares (a point's FLOPs are the same at all three)
    frame["ai_check"] = consistency(*(1 / frame[c].to_numpy(dtype=float) for c in ("ai_l1", "ai_l2", "ai")))
    return frame, skipped


def ceilings(run: Run) -> list[Peaks]:
    """The peaks to draw for ``run``: those stored with it, else the device table's row."""
    stored = run_peaks(run)
    if stored:
        return stored
    return table_peaks(run.device.get("name", ""))


def table_peaks(device_name: str) -> list[Peaks]:
    """The device table's peaks for ``device_name`` when it names exactly one GPU, else []."""
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


def select(
    frame: pd.DataFrame, kernel: str | None = None, op_names: tuple[str, ...] = (), device: str | None = None
) -> pd.DataFrame:
    """The points whose kernel name matches the regular expression ``kernel`` (case-insensitive),
    whose op is one of ``op_names`` (a measured run's op in any dtype: 'add' keeps 'add (float64)')
    and whose device name contains ``device``; None keeps all."""
    if kernel:
        try:
            re.compile(kernel)
        except re.error as error:
            raise InputError(
                f"--kernel '{kernel}' is not a regular expression: {error}",
                "escape special characters, e.g. 'gemm_v1<float>' or 'sgemm.*_nn'",
            ) from None
        frame = frame[frame["kernel"].str.contains(kernel, case=False, regex=True)]
    if op_names:
        frame = frame[
            frame["op"].isin(op_names)
            | (frame["kernel"].isin(op_names) & frame["op"].str.startswith(tuple(f"{name} (" for name in op_names)))
        ]
    if device:
        frame = frame[frame["device"].str.contains(device, case=False, regex=False)]
    return frame


def roofs(peaks: list[Peaks]) -> list[Ceiling]:
    """The ceilings to draw for ``peaks``: a device-table GPU's every roof (each precision with and
    without FMA, tensor, L1, L2, DRAM: ``gpu_table.ceilings``), other peaks (a CPU's theoretical
    or calibrated ones, a GPU's at its live clock) as they are: a FLOP roof per dtype, and DRAM."""
    found: list[Ceiling] = []
    for each in peaks:
        rows = [g for g in gpu_table.load().gpus if g.title == each.device] if each.origin == PEAK_TABLE else []
        for roof in gpu_table.ceilings(rows[0]) if rows else _as_ceilings(each):
            if all((r.name, r.value, r.origin) != (roof.name, roof.value, roof.origin) for r in found):
                found.append(roof)
    return found


def _as_ceilings(peaks: Peaks) -> list[Ceiling]:
    clock = peaks.clock_hz / 1e6 if peaks.clock_hz else None
    found = [
        Ceiling(
            f"{DTYPE_PRECISION[dtype].upper()} peak",
            DTYPE_PRECISION[dtype],
            FMA,
            value,
            "FLOP/s",
            peaks.origin,
            peaks.source,
            clock,
            "",
        )
        for dtype, value in peaks.flops.items()
        if dtype in DTYPE_PRECISION
    ]
    if peaks.bandwidth:
        found.append(Ceiling("DRAM", "", "dram", peaks.bandwidth, "byte/s", peaks.origin, peaks.source, None, ""))
    return found


_CARRIED = (
    ("FP32 FMA", "fp32/fma", "fp32", "fma"),
    ("FP64 FMA", "fp64/fma", "fp64", "fma"),
    ("DRAM", "dram", "", "dram"),
)
FROM_THE_FILE = "from the file"  # the origin of a ceiling the profile itself carries


def file_ceilings(runs: list[Run]) -> dict[str, list[Ceiling]]:
    """Per device of the imported ``runs``, the ceilings its files carry (Nsight Compute's
    ``*.peak_sustained`` :data:`levels.FILE_CEILINGS`): the one source of the chart's roofs and of
    ``--ceilings``. A compute roof is the median peak per SM cycle over the launches that have it,
    at the median SM clock they measured (so :func:`at_clock` can move it to a chart's clock); DRAM's
    the median bandwidth at the DRAM clock measured."""
    import numpy as np

    found: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    for run in runs:
        if run.kind != "import":
            continue
        frame = kernels.launch_frame(run, roofline=False)
        frame["device"] = [device_name(run, d) for d in frame["device"].tolist()]
        for device, part in frame.groupby("device", sort=False):
            mine = found.setdefault(str(device), {})
            clock = part["sm_clock"].to_numpy(dtype=float) if "sm_clock" in part else np.full(len(part), np.nan)
            for _, kind, _, _ in _CARRIED:
                column = levels.FILE_CEILINGS[kind][0].replace("_sp", "_fp32").replace("_dp", "_fp64")
                if column not in part:
                    continue
                values, clocks = mine.setdefault(kind, ([], []))
                value = part[column].to_numpy(dtype=float)
                has = np.isfinite(value) & (value > 0) & (kind == "dram" or (np.isfinite(clock) & (clock > 0)))
                values += value[has].tolist()
                clocks += clock[has].tolist()
    out: dict[str, list[Ceiling]] = {}
    for device, kinds in found.items():
        out[device] = []
        for name, kind, precision, level in _CARRIED:
            values, clocks = kinds.get(kind, ([], []))
            if not values:
                continue
            source = levels.FILE_CEILINGS[kind][2]
            if level == "dram":
                out[device].append(
                    Ceiling(
                        name, "", "dram", float(np.median(values)), "byte/s", FROM_THE_FILE, source, None, "", source
                    )
                )
                continue
            hz = float(np.median(clocks))
            per_cycle = float(np.median(np.asarray(values) / np.asarray(clocks)))
            out[device].append(
                Ceiling(
                    name,
                    precision,
                    level,
                    per_cycle * hz,
                    "FLOP/s",
                    FROM_THE_FILE,
                    source,
                    hz / 1e6,
                    "SM measured",
                    source,
                )
            )
    return out


def with_file_ceilings(found: list[Ceiling], carried: list[Ceiling]) -> list[Ceiling]:
    """The roofs ``found`` (the device table's, stored peaks) with each one the file carries in its
    place: the file's where it has one, as the binding ceiling uses it, and a no-FMA roof half the
    file's FMA roof (as the table derives it), so no chart mixes the two sources for one precision."""
    replaced = {(c.precision, c.kind): c for c in carried}
    out = list(carried)
    for roof in found:
        fma = replaced.get((roof.precision, "fma")) if roof.kind == "no-fma" else None
        if fma:
            roof = replace(
                roof,
                value=fma.value / 2,
                source=fma.source,
                clock_mhz=fma.clock_mhz,
                clock=fma.clock,
                formula=f"{fma.name} {FROM_THE_FILE} / 2",
            )
        if (roof.precision, roof.kind) not in replaced:
            out.append(roof)
    return out


def ceiling_sources(runs: list[Run], fallback: str | None = None) -> pd.DataFrame:
    """Per device of the imported ``runs``, the ceilings its files carry (:func:`file_ceilings`)
    beside the device table's (or ``fallback``'s, a table GPU for files that name none), each with
    its source, and which one the binding ceiling and the chart use: the file's where it has one."""
    import pandas as pd

    rows = []
    for device, carried in file_ceilings(runs).items():
        specs = gpu_table.find(device) if device else []
        if len(specs) != 1 and fallback:
            specs = [gpu_table.match(fallback)]
        spec = specs[0] if len(specs) == 1 else None
        for name, kind, precision, level in _CARRIED:
            mine = [c for c in carried if (c.precision, c.kind) == (precision, level)]
            table = None
            if spec is not None:
                table = (
                    gpu_table.memory_ceiling(spec, level)
                    if level == "dram"
                    else gpu_table.ceiling(spec, precision, level)
                )
            rows.append(
                {
                    "device": device,
                    "ceiling": name,
                    "unit": "byte/s" if level == "dram" else "FLOP/s",
                    "from the file": mine[0].value if mine else None,
                    "file source": (
                        mine[0].source + (f" ({mine[0].clock_mhz:.0f} MHz)" if mine[0].clock_mhz else "")
                        if mine
                        else "not in the file"
                    ),
                    "from the device table": table.value if table else None,
                    "table source": (
                        f"{table.origin} at {table.clock_mhz:g} MHz {table.clock}: {table.source}".replace(
                            " at  MHz ", " "
                        )
                        if table and table.clock_mhz
                        else f"{table.origin}: {table.source}"
                        if table
                        else "no table row for this device"
                    ),
                    "used": "file" if mine else "table" if table else "none",
                }
            )
    return pd.DataFrame(rows)


def chart_clock(frame: pd.DataFrame) -> float | None:
    """The one clock a chart's roofs are drawn at: its points' clock (the SM clock an ncu file
    measured, a CPU run's probed clock), time-weighted over the points that have one, as the
    tables' percentages use it; None when no point has a clock."""
    import numpy as np

    clock, time = frame["clock"].to_numpy(dtype=float), frame["time"].to_numpy(dtype=float)
    known = (clock > 0) & np.isfinite(clock)
    if not known.any():
        return None
    weights = np.where(time[known] > 0, time[known], 0.0)
    return float(np.average(clock[known], weights=weights) if weights.sum() > 0 else clock[known].mean())


def at_clock(found: list[Ceiling], hz: float | None) -> list[Ceiling]:
    """``found`` with every roof that scales with the core clock (compute, L1, L2: a stated clock
    that is not the memory's) moved to ``hz``; its formula keeps the value at the stated clock."""
    if not hz:
        return found
    moved = []
    for roof in found:
        if roof.clock_mhz and roof.clock != "memory":
            was = f"{roof.value:.4g} {roof.unit} at {roof.clock_mhz:g} MHz {roof.clock}".strip()
            roof = replace(
                roof,
                value=roof.value * hz / (roof.clock_mhz * 1e6),
                clock_mhz=round(hz / 1e6),
                clock="the points' clock",
                formula="; ".join(p for p in (roof.formula, was) if p),
            )
        moved.append(roof)
    return moved
