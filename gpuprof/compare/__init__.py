"""Comparison tables across devices: the reference study's layout for any set of machines.

One long frame (:data:`COLUMNS`, one row per device × op × dtype × size) holds every measured run
and, on request, the study's published rows; :func:`study_table` pivots one op of it into the
paper's layout (rows = size, columns = device × MFLOP/s, Efic.(%), roofline-relative efficiency
and bound, then joules per call and GFLOP/s per watt for devices whose runs were metered).
Imported profiler results have no op or size, so they get their own per-kernel frame
(:func:`imported_frame`); two or more framework traces also get their per-op tables side by side
(:func:`gpuprof.tracing.side_by_side`, the study's CPU-vs-GPU per-op comparison). Pure functions of
Runs: nothing here reads files or prints.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuprof import calibrate, tracing
from gpuprof.compare import study as reference
from gpuprof.compare.study import FLOP_COUNT_NOTE
from gpuprof.derive import kernels, roofline, traces
from gpuprof.derive.efficiency import (
    BYTE_RATE,
    FLOP_RATE,
    VS_DATASHEET,
    VS_ROOFLINE,
    VS_RUN_CLOCK,
    Efficiency,
    RunClock,
    above_100,
    efficiencies,
)
from gpuprof.derive.energy import energy_basis, energy_columns
from gpuprof.derive.roofline import device_name
from gpuprof.derive.stats import timing_stats
from gpuprof.derive.summary import UNSTABLE_NOTE, instability, run_clock, run_peaks, timings
from gpuprof.devices.peaks import Peaks
from gpuprof.errors import InputError
from gpuprof.model import CALIBRATED, CALIBRATION, DERIVED, MEASURED, Run
from gpuprof.model.quantities import COLUMNS as SUMMARY
from gpuprof.model.sizes import parse_size
from gpuprof.model.units import human
from gpuprof.workloads import ops

if TYPE_CHECKING:
    import pandas as pd

# The study's columns; the quantities' names are the summary columns of model/quantities.
MFLOPS, GBPS = SUMMARY["flop_rate"].name, SUMMARY["bandwidth"].name
COLUMNS = [
    "device",
    "source",
    "engine",
    "host",
    "op",
    "dtype",
    "size_MB",
    MFLOPS,
    "Efic.%",
    "roof.%",
    "bound",
    GBPS,
    *(SUMMARY[key].name for key in ("energy_per_call", "power", "energy_per_flop", "flop_rate_per_watt")),
    "MFLOP/s origin",
    "Efic. basis",
    "roof. basis",
    "Efic. ceiling",
    "roof. ceiling",
    "Efic. above 100",
    "roof. above 100",
    "energy basis",
    "unstable",
    "run",
]
# The columns that say why a percentage is above 100 %, by the column they explain.
FLAGS = {"Efic.%": "Efic. above 100", "roof.%": "roof. above 100"}
ENERGY_QUANTITIES = (SUMMARY["energy_per_call"].name, SUMMARY["flop_rate_per_watt"].name)
STUDY_QUANTITIES = (MFLOPS, "Efic.%", "roof.%", "bound", *ENERGY_QUANTITIES)
BOUND_SHORT = {"memory": "mem", "compute": "comp"}
MEASURED_ORIGIN = f"{DERIVED}: analytic FLOPs / timed median"


@dataclass
class Comparison:
    """The long frame, the per-kernel frame of imported runs, the peaks behind each device, notes."""

    rows: pd.DataFrame
    imported: pd.DataFrame
    peaks: dict[str, list[Peaks]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    imported_points: pd.DataFrame | None = None  # roofline points of imported kernels (derive.roofline)
    dtype: str = "float32"  # the precision compared: its ceilings are the ones listed
    trace_ops: pd.DataFrame | None = None  # two or more framework traces' per-op tables side by side
    trace_legend: list[str] = field(default_factory=list)  # "A = file", one per trace


def _first(found: list[Efficiency], kind: str, unit: str = "FLOP/second") -> Efficiency | None:
    return next((e for e in found if e.kind == kind and e.unit == unit), None)


def _efficiency_cells(
    rate: float,
    byte_rate: float | None,
    dtype: str,
    peaks: list[Peaks],
    clock: RunClock | None = None,
    cache: str | None = None,
) -> dict[str, Any]:
    """Efic.% against the first FLOP peak (the theoretical one), scaled to the clock measured during
    the run when there is one (as nvprof's flop_sp_efficiency in the study); roof.% against the
    first ceiling set that has both a FLOP peak and a bandwidth (a calibrated one, on a CPU). Each
    with its basis, the ceiling in words that do not change from run to run, and why it is above
    100 % when it is."""
    clock = clock or RunClock(None, "not recorded")
    cells: dict[str, Any] = {
        "Efic.%": None,
        "Efic. basis": "no FLOP peak known",
        "Efic. ceiling": "no FLOP peak known",
        "roof.%": None,
        "bound": None,
        "roof. basis": "no peak bandwidth known",
        "roof. ceiling": "no peak bandwidth known",
        "Efic. above 100": None,
        "roof. above 100": None,
    }
    for ceiling in peaks:
        found = efficiencies(rate, byte_rate, dtype, ceiling, clock.hz)
        flop = _first(found, VS_RUN_CLOCK) or _first(found, VS_DATASHEET)
        if flop and cells["Efic.%"] is None:
            scaled = (
                f", scaled to the clock measured during each run ({clock.source.split(':')[0]})"
                if flop.kind == VS_RUN_CLOCK
                else ""
            )
            cells.update(
                {
                    "Efic.%": flop.percent,
                    "Efic. basis": f"{flop.kind}: {flop.basis}",
                    "Efic. ceiling": f"{dtype} peak {human(ceiling.flops_for(dtype), FLOP_RATE)} "
                    f"({ceiling.origin}){scaled}",
                    "Efic. above 100": above_100(flop, ceiling, clock, cache),
                }
            )
        roof = _first(found, VS_ROOFLINE)
        if roof and cells["roof.%"] is None:
            cells.update(
                {
                    "roof.%": roof.percent,
                    "bound": roof.bound,
                    "roof. basis": roof.basis,
                    "roof. ceiling": f"min({dtype} peak, AI × peak bandwidth "
                    f"{human(ceiling.bandwidth, BYTE_RATE)}) ({ceiling.origin})",
                    "roof. above 100": above_100(roof, ceiling, clock, cache),
                }
            )
    return cells


def _size_mb(workload: dict[str, Any]) -> float:
    """The size the user asked for (``6MB`` -> 6.0), so rows line up with the study's sizes (the
    square operands' footprint is a little smaller); the footprint itself when the run was asked
    for by shape (``--shape 512`` reads as 512 bytes, smaller than the operands, so it is not a size)."""
    footprint = workload.get("size_bytes", 0)
    try:
        asked = parse_size(str(workload.get("requested")))
    except InputError:
        asked = 0
    return (asked if asked >= footprint else footprint) / 1e6


def short_name(device: str) -> str:
    """``Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz`` -> ``Intel Xeon E5-2680 v4``: column headers stay short."""
    name = re.sub(r"\((R|TM|tm|r)\)|\bCPU\b|@\s*[\d.]+\s*GHz", " ", device)
    return " ".join(name.split()) or device


def measured_row(run: Run, peaks: list[Peaks] | None = None) -> dict[str, Any]:
    """The comparison row of one measured run (kind ``run``), against ``peaks`` (default: the
    ceilings recorded with it)."""
    w = run.workload or {}
    shape, dtype = tuple(w["shape"]), w["dtype"]
    seconds = timing_stats(timings(run)).median
    rate = ops.flops(w["op"], shape) / seconds
    byte_rate = ops.bytes_moved(w["op"], shape, dtype) / seconds
    return {
        "device": short_name(run.device.get("name", "unknown device")),
        "source": run.format,
        "engine": w.get("engine"),
        "host": run.environment.get("host", ""),
        "op": w["op"],
        "dtype": dtype,
        "size_MB": _size_mb(w),
        MFLOPS: rate / SUMMARY["flop_rate"].per,
        GBPS: byte_rate / SUMMARY["bandwidth"].per,
        "MFLOP/s origin": MEASURED_ORIGIN,
        **_efficiency_cells(
            rate, byte_rate, dtype, run_peaks(run) if peaks is None else peaks, run_clock(run), w.get("cache")
        ),
        **energy_columns(run),
        "energy basis": energy_basis(run),
        "unstable": instability(run) or None,
        "run": run.run_id[:8],
        "created": run.created,
    }


def ceilings_for(run: Run, runs: list[Run], found: dict[tuple[str, Any], Peaks | None] | None = None) -> list[Peaks]:
    """The ceilings a measured run is judged against: those recorded with it, and for a CPU run
    recorded without a calibrated one, the best stable calibration of its host among ``runs``
    (calibrate measures the machine, so a calibration made after the run applies to it too).
    ``found`` keeps each host's answer across calls, so judging n runs reads the runs once per host."""
    recorded = run_peaks(run)
    if run.device.get("kind") != "cpu" or any(p.origin == CALIBRATED for p in recorded):
        return recorded
    key = (run.environment.get("host", ""), run.device.get("name"))
    found = {} if found is None else found
    if key not in found:
        found[key] = calibrate.peaks_from_runs(
            calibrate.calibrations(runs, *key)
        )  # through the module: tests count the calls
    return recorded + [found[key]] if found[key] else recorded


def reference_rows() -> tuple[list[dict[str, Any]], dict[str, list[Peaks]]]:
    """The study's published rows (three devices) and the device table's peaks for each."""
    rows: list[dict[str, Any]] = []
    peaks = {reference.device_label(gpu): [reference.peaks(gpu)] for gpu in reference.GPUS}
    for r in reference.published().itertuples(index=False):
        label = reference.device_label(r.gpu)
        rate = r.mflops_per_s * 1e6
        ai = reference.analytic_intensity(r.op, r.size_mb * 1e6)
        byte_rate = rate / ai if ai else None
        cells = _efficiency_cells(rate, byte_rate, reference.DTYPE, peaks[label])
        if ai is None:
            cells["roof. basis"] = "nvprof's FLOP count per element is not published for this op"
        cells.update(
            {
                "Efic.%": float(r.efficiency_pct),
                "Efic. basis": reference.EFFICIENCY_ORIGIN,
                "Efic. ceiling": reference.EFFICIENCY_ORIGIN,
                "Efic. above 100": None,
            }
        )
        rows.append(
            {
                "device": label,
                "source": f"paper, Table {r.table}",
                "engine": reference.ENGINE,
                "host": "",
                "op": r.op,
                "dtype": reference.DTYPE,
                "size_MB": float(r.size_mb),
                "MFLOP/s": float(r.mflops_per_s),
                "GB/s": byte_rate / 1e9 if byte_rate else None,
                "MFLOP/s origin": reference.MFLOPS_ORIGIN,
                **cells,
                "run": "",
                "created": "",
            }
        )
    return rows, peaks


def _label_devices(rows: list[dict[str, Any]]) -> None:
    """Tell apart same-named devices on different hosts, and engines on one device."""
    hosts: dict[str, set[str]] = {}
    for row in rows:
        hosts.setdefault(row["device"], set()).add(row["host"])
    for row in rows:
        if len(hosts[row["device"]]) > 1:
            row["device"] = f"{row['device']} @ {row['host']}"
    engines: dict[str, set[str]] = {}
    for row in rows:
        engines.setdefault(row["device"], set()).add(str(row["engine"]))
    for row in rows:
        if len(engines[row["device"]]) > 1:
            row["device"] = f"{row['device']} · {row['engine']}"


SHOWN_RULE = (
    "a point measured several times shows its most recent run (the rule: most recent, so a rerun made "
    "after a change replaces what it reran; not the most stable, which could hide a change, nor a median "
    "of runs made under different conditions)"
)


def _latest(rows: list[dict[str, Any]], notes: list[str]) -> list[dict[str, Any]]:
    """One row per device × op × dtype × size: the most recent run (:data:`SHOWN_RULE`); a note
    counts the others and names, for the first few points, the run shown and whether an older
    run of it was stable where the shown one is not."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: r["created"]):
        groups.setdefault((row["device"], row["op"], row["dtype"], row["size_MB"]), []).append(row)
    repeated = [group for group in groups.values() if len(group) > 1]
    if repeated:
        named = []
        for group in repeated[:3]:
            shown = group[-1]
            stable = [r["run"] for r in group[:-1] if not r.get("unstable")]
            hint = f", UNSTABLE; run {stable[-1]} of it was stable" if shown.get("unstable") and stable else ""
            named.append(
                f"{shown['op']} {shown['dtype']} {shown['size_MB']:g} MB on {shown['device']}: run {shown['run']}, "
                f"the newest of {len(group)}{hint}"
            )
        more = f"; and {len(repeated) - 3} more" if len(repeated) > 3 else ""
        notes.append(
            f"{len(rows) - len(groups)} older run(s) not shown: {SHOWN_RULE}; see them all with 'gpuprof show' "
            f"({'; '.join(named)}{more})"
        )
    return [group[-1] for group in groups.values()]


def comparison(
    runs: Iterable[Run], reference: bool = False, ops_wanted: Iterable[str] | None = None, dtype: str = "float32"
) -> Comparison:
    """Every measured run of ``dtype`` (and the study's rows with ``reference``) as one long frame,
    plus the imported runs' kernels."""
    import pandas as pd

    runs = list(runs)
    notes: list[str] = []
    rows: list[dict[str, Any]] = []
    peaks: dict[str, list[Peaks]] = {}
    row_peaks: list[list[Peaks]] = []
    wanted = set(ops_wanted or ops.OPS)
    calibration_runs = [run for run in runs if run.kind == CALIBRATION]
    calibrated: dict[tuple[str, Any], Peaks | None] = {}
    for run in runs:
        w = run.workload or {}
        if run.kind != "run" or w.get("op") not in wanted or w.get("dtype") != dtype:
            continue
        try:
            judged_by = ceilings_for(run, calibration_runs, calibrated)
            row = measured_row(run, judged_by)
        except (KeyError, ValueError, ZeroDivisionError, IndexError, TypeError) as error:  # a hand-made record
            notes.append(f"run {run.run_id[:8]} left out: incomplete record ({type(error).__name__}: {error})")
            continue
        rows.append(row)
        row_peaks.append(judged_by)
    _label_devices(rows)
    for row, found in zip(rows, row_peaks):
        peaks.setdefault(row["device"], found)
    if reference:
        paper, paper_peaks = reference_rows()
        if rows and wanted & {"sigmoid", "tanh"} & {r["op"] for r in rows}:
            notes.append(FLOP_COUNT_NOTE)
        rows += [r for r in paper if r["op"] in wanted and r["dtype"] == dtype]
        peaks.update(paper_peaks)
    order = list(dict.fromkeys(r["device"] for r in rows))
    rows = _latest(rows, notes)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    rank = {**{name: i for i, name in enumerate(ops.OPS)}, **{device: i for i, device in enumerate(order)}}
    frame = frame.sort_values(
        ["op", "size_MB", "device"], key=lambda c: c.map(rank) if c.name != "size_MB" else c, ignore_index=True
    )
    frame.attrs["devices"] = order
    notes += _without_energy(frame)
    traced = [r for r in runs if r.format in traces.TRACE_FORMATS]
    # a trace's kernels join the other imported kernels; its ops are compared in their own table
    imports = [r for r in runs if r.kind == "import" and r not in traced]
    imports += [kernels_only for kernels_only in map(traces.gpu_launches, traced) if len(kernels_only.launch_table)]
    imported, imported_notes = imported_frame(imports, dtype)
    points, _ = roofline.points(imports)
    for run in imports:
        for device in set(roofline.launch_devices(run)):
            if device not in peaks:
                peaks[device] = roofline.table_peaks(device)
    result = Comparison(frame, imported, peaks, notes + imported_notes, points, dtype)
    if len(traced) >= 2:
        names = tracing.labels(len(traced))
        result.trace_ops = tracing.side_by_side(*traced, names=names)
        result.trace_legend = [f"{name} = {run.source}" for name, run in zip(names, traced)]
    elif traced:
        result.notes.append("one framework trace: give two or more to see their ops side by side")
    return result


TRACE_ROWS = 30  # ops shown in a terminal table (csv and json give them all)


def trace_section(comparison_: Comparison) -> list[tuple[str, pd.DataFrame]]:
    """(title, the first :data:`TRACE_ROWS` ops) of the traces' side-by-side per-op table, if any."""
    frame = comparison_.trace_ops
    if frame is None:
        return []
    ratio = "op time X/A: an op's GPU time where it launched kernels, else its total time"
    more = f"; the first {TRACE_ROWS} of {len(frame)} ops by total time" if len(frame) > TRACE_ROWS else ""
    title = f"Framework ops side by side (seconds; {ratio}{more}): {'; '.join(comparison_.trace_legend)}"
    return [(title, frame.head(TRACE_ROWS))]


def _without_energy(frame: pd.DataFrame) -> list[str]:
    """One line per reason why measured devices have rows without energy numbers, naming them
    (a sweep over several machines without power sources says so once, not once per machine)."""
    measured = frame[frame["energy basis"].notna()]
    devices_by_reason: dict[str, list[str]] = {}
    for device, rows in measured.groupby("device", sort=False):
        missing = rows[rows["J/call"].isna()]
        if len(missing):
            share = "" if len(missing) == len(rows) else f" in {len(missing)} of {len(rows)} row(s)"
            devices_by_reason.setdefault(missing["energy basis"].iloc[-1], []).append(f"{device}{share}")
    return [f"no energy numbers for {', '.join(names)}: {reason}" for reason, names in devices_by_reason.items()]


def devices(frame: pd.DataFrame) -> list[str]:
    """Devices in the order the comparison found them: measured ones first, then the paper's."""
    present = set(frame["device"])
    return [d for d in frame.attrs.get("devices", []) if d in present] or list(dict.fromkeys(frame["device"]))


def study_table(frame: pd.DataFrame, op: str, device_order: list[str] | None = None) -> pd.DataFrame:
    """One op in the paper's layout: rows = size (MB), columns = device × (MFLOP/s, Efic.%, roof.%, bound).

    ``attrs`` tell renderers how to show it: ``groups`` (the devices, whose names prefix their
    columns), ``notes`` (why a percentage is above 100 %) and ``marks`` ({column: {row: note
    number}}, the cells each note explains)."""
    import pandas as pd

    part = frame[frame["op"] == op]
    order = [d for d in (device_order or devices(frame)) if d in set(part["device"])]
    out = pd.DataFrame({"size (MB)": sorted(set(part["size_MB"]))})
    out.attrs.update(groups=order, notes=[], marks={})
    for device in order:
        mine = part[part["device"] == device].set_index("size_MB")
        for quantity in STUDY_QUANTITIES:
            values = out["size (MB)"].map(mine[quantity])
            if quantity == "bound":
                values = values.map(lambda b: BOUND_SHORT.get(b, "") if isinstance(b, str) else "")
            if not (values.notna() & (values != "")).any():  # a device without a roofline gets no empty columns
                continue
            column = f"{device} {quantity}"
            out[column] = values
            if quantity in FLAGS:
                mark(out, column, out["size (MB)"].map(mine[FLAGS[quantity]]))
            if quantity == "MFLOP/s":
                unstable = out["size (MB)"].map(mine["unstable"])
                mark(out, column, unstable.map(lambda u: UNSTABLE_NOTE if isinstance(u, str) else None))
    return out


def mark(frame: pd.DataFrame, column: str, reasons: pd.Series) -> None:
    """Note the reasons (why a value is above 100 %; None where it is not) of ``column``'s cells in
    ``frame.attrs``: renderers show ' [n]' after each such cell and the numbered reasons under the
    table (equal reasons share a number)."""
    notes = frame.attrs.setdefault("notes", [])
    marks = frame.attrs.setdefault("marks", {})
    for row, reason in reasons.items():
        if isinstance(reason, str):
            notes += [reason] if reason not in notes else []
            marks.setdefault(column, {})[row] = notes.index(reason) + 1


def device_frame(comparison_: Comparison, dtype: str = "float32") -> pd.DataFrame:
    """The ceilings behind each device's efficiencies: peak, bandwidth, clock, origin, source."""
    import pandas as pd

    rows = []
    for device, found in comparison_.peaks.items():
        for p in found:
            rows.append(
                {
                    "device": device,
                    f"peak GFLOP/s ({dtype})": (p.flops_for(dtype) or 0) / 1e9 or None,
                    "peak GB/s": p.bandwidth / 1e9 if p.bandwidth else None,
                    "clock GHz": p.clock_hz / 1e9 if p.clock_hz else None,
                    "origin": p.origin,
                    "source": p.source,
                }
            )
    return pd.DataFrame(rows)


_PRECISION = {"float32": "sp", "float64": "dp", "float16": "hp"}
IMPORTED_ORIGIN = f"{MEASURED}: counted FLOPs / kernel time"


def imported_frame(runs: list[Run], dtype: str = "float32") -> tuple[pd.DataFrame, list[str]]:
    """One row per imported (file, device, kernel) with a kernel time or a ``dtype`` FLOP count, from
    :func:`gpuprof.derive.kernels.kernel_frame` (its rules: per-launch values over the launches that
    have them, FLOP/s time-weighted): launches, time and FLOPs per launch, MFLOP/s, the FLOP
    efficiency at the clock measured (else the profiler's own, as it reported it), and the
    roofline position against the device table's peaks where DRAM traffic was counted."""
    import numpy as np
    import pandas as pd

    precision = _PRECISION.get(dtype, "sp")
    mine = {"sp": "fp32", "dp": "fp64", "hp": "fp16"}[precision]
    reported_name = f"flop_{precision}_efficiency"
    rows = []
    notes: list[str] = []
    for run in runs:
        frame = kernels.kernel_frame([run], (reported_name,))
        frame = frame[frame["time"].notna() | frame[f"flops_{mine}"].notna() | frame["flops_total"].notna()]
        if not len(frame):
            notes.append(f"imported {Path(run.source).name} ({run.format}): no kernel time or {dtype} FLOP count")
        for row in frame.to_dict("records"):
            time, flops = row["time_per_launch"], row[f"flops_{mine}_per_launch"]
            rate = None if np.isnan(row[f"flop_rate_{mine}"]) else row[f"flop_rate_{mine}"]
            device = device_name(run, row["device"])
            bandwidth = row["dram_bandwidth"] if row["dram_bandwidth"] > 0 else None
            cells = _efficiency_cells(rate, bandwidth, dtype, roofline.table_peaks(device)) if rate else {}
            measured = not np.isnan(row[f"flop_efficiency_{mine}"])
            efficiency = row[f"flop_efficiency_{mine}"] if measured else row[reported_name]
            # a CPU run's FP events (lane weights in its basis) count FLOPs of every precision together
            cpu_basis = row["basis"] if run.device.get("kind") == "cpu" and "counted FLOPs:" in row["basis"] else ""
            total, total_rate = row["flops_total_per_launch"], row["flop_rate_total"]
            rows.append(
                {
                    "device": device,
                    "kernel": row["kernel"],
                    "file": row["file"],
                    "launches": row["launches"],
                    "time/launch (s)": None if np.isnan(time) else time,
                    f"FLOPs/launch ({dtype})": None if np.isnan(flops) else flops,
                    "MFLOP/s": rate / 1e6 if rate is not None else None,
                    "Efic.%": None if np.isnan(efficiency) else efficiency,
                    "counted FLOPs/launch (all precisions)": total if cpu_basis and not np.isnan(total) else None,
                    "counted MFLOP/s (all precisions)": (
                        total_rate / 1e6 if cpu_basis and not np.isnan(total_rate) else None
                    ),
                    "roof.%": cells.get("roof.%"),
                    "bound": cells.get("bound"),
                    "MFLOP/s origin": (
                        f"{MEASURED}: {cpu_basis}; FLOP/s over the elapsed time perf measured"
                        if cpu_basis
                        else IMPORTED_ORIGIN
                        if rate is not None
                        else f"{MEASURED} ({'FLOPs' if np.isnan(time) else 'time'} only)"
                    ),
                    "Efic. origin": (
                        f"{MEASURED}: FLOP/s over ncu's peak at the measured clock"
                        if measured
                        else ""
                        if np.isnan(efficiency)
                        else f"{MEASURED}: nvprof {reported_name}"
                    ),
                    "roof. above 100": cells.get("roof. above 100"),
                }
            )
    imported = pd.DataFrame(rows)
    counted = [
        c for c in ("counted FLOPs/launch (all precisions)", "counted MFLOP/s (all precisions)") if c in imported
    ]
    if counted and imported[counted].isna().all().all():  # no CPU run counted FLOPs: no columns for them
        imported = imported.drop(columns=counted)
    if len(imported):
        efficiency = imported["Efic.%"].astype(float)
        mark(
            imported,
            "Efic.%",
            efficiency.where(efficiency > 100).map(
                lambda v: (
                    None
                    if pd.isna(v)
                    else "above the profiler's own peak at the clock it measured: a wrong FLOP "
                    "count or clock in the file, until shown otherwise"
                )
            ),
        )
        mark(imported, "roof.%", imported.pop("roof. above 100"))
    return imported, notes


def sources_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Where each device's numbers come from: one row per device and set of ceilings (the
    per-row bases, with each run's clock and intensity, are in the long frame)."""
    columns = ["device", "source", "MFLOP/s origin", "Efic. ceiling", "roof. ceiling"]
    energy = ["energy basis"] if frame["energy basis"].notna().any() else []
    unique = frame[columns + energy].drop_duplicates(subset=["device", *columns[2:], *energy])
    rank = {device: i for i, device in enumerate(devices(frame))}
    return unique.sort_values("device", key=lambda d: d.map(rank), kind="stable", ignore_index=True)


def study_sections(comparison_: Comparison, device_order: list[str] | None = None) -> list[tuple[str, pd.DataFrame]]:
    """(title, study table) per op present, devices limited to and ordered by ``device_order``."""
    frame = comparison_.rows
    order = device_order or devices(frame)
    shown = frame[frame["device"].isin(order)]
    return [
        (
            f"{op}: {ops.get_op(op).formula} — MFLOP/s, Efic.% (of FLOP peak), roof.% (of roofline), bound"
            + (", J/call, GFLOP/s/W (energy)" if shown.loc[shown["op"] == op, "J/call"].notna().any() else ""),
            study_table(shown, op, order),
        )
        for op in ops.OPS
        if op in set(shown["op"])
    ]


def detail_sections(
    comparison_: Comparison, stalls: pd.DataFrame | None = None, device_order: list[str] | None = None
) -> list[tuple[str, pd.DataFrame]]:
    """(title, frame) of what follows the study tables: framework traces' ops side by side, sources,
    ceilings, imported kernels, stalls."""
    frame = comparison_.rows
    order = device_order or devices(frame)
    shown = frame[frame["device"].isin(order)]
    out = trace_section(comparison_)
    if len(shown):
        out.append(("Sources: where each device's numbers come from", sources_frame(shown)))
    ceilings = device_frame(comparison_, comparison_.dtype)
    if len(ceilings):
        out.append(("Ceilings behind the efficiencies", ceilings[ceilings["device"].isin(order)]))
    if len(comparison_.imported):
        out.append(("Imported profiler results (per kernel, as the profiler measured them)", comparison_.imported))
    if stalls is not None:
        out.append(("Warp stalls: % of stall cycles per device", stalls.reset_index() if stalls.index.name else stalls))
    return out


def sections(comparison_: Comparison, stalls: pd.DataFrame | None = None) -> list[tuple[str, pd.DataFrame]]:
    """Everything ``gpuprof compare`` prints, as (title, frame) in reading order."""
    return study_sections(comparison_) + detail_sections(comparison_, stalls)
