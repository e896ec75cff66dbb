"""The per-kernel table of imported runs: :mod:`gpuprof.derive.kernels`' aggregation with its
column titles and order, as ``gpuprof import``, the library's ``gpuprof.kernels`` and the profile report
show it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from gpuprof.derive import kernels, simulated
from gpuprof.devices import gpu_table
from gpuprof.errors import InputError
from gpuprof.model import MEASURED, Run, tables

if TYPE_CHECKING:
    import pandas as pd

# Launch kinds that are host-side spans, not GPU work: kept out of the per-kernel table beside GPU work.
HOST_KINDS = ("api", "nvtx")
# Metrics shown as the profiler reported them, after the derived columns, when a file has them.
KEY_METRICS = (
    "achieved_occupancy",
    "sm_efficiency",
    "dram_read_throughput",
    "dram_write_throughput",
    "gld_efficiency",
    "gst_efficiency",
    "warp_execution_efficiency",
    "issued_ipc",
)


_SHOWN = {"fp32": "sp", "fp64": "dp", "fp16": "hp"}  # the table's order and its nvprof-style titles


def _derived_columns() -> list[tuple[str, str]]:
    """(column title, :func:`gpuprof.derive.kernels.aggregate` column) of the per-kernel table's
    columns from the counters, before its roofline."""
    columns = [("time/launch (s)", "time_per_launch"), ("time total (s)", "time")]
    columns += [(f"flop_count_{s}/launch (FLOP)", f"flops_{p}_per_launch") for p, s in _SHOWN.items()]
    columns += [("tensor FLOP/launch", "flops_tensor_per_launch"), ("total FLOP/launch", "flops_total_per_launch")]
    for p, s in _SHOWN.items():
        columns += [
            (f"FLOP/s {s}", f"flop_rate_{p}"),
            (f"peak FLOP/s {s} at run clock", f"peak_flop_rate_{p}"),
            (f"efficiency {s} at run clock (%)", f"flop_efficiency_{p}"),
        ]
    return columns + [
        ("DRAM bytes/launch", "dram_bytes_per_launch"),
        ("DRAM bandwidth (byte/s)", "dram_bandwidth"),
        ("SM clock (Hz)", "sm_clock"),
        ("L1 bytes/launch", "l1_bytes_per_launch"),
        ("L2 bytes/launch", "l2_bytes_per_launch"),
    ]


# The hierarchical roofline per kernel (gpuprof.derive.levels), from the kernel's sums.
_ROOFLINE_COLUMNS = [
    ("FLOP/s total", "flop_rate_total"),
    ("AI L1 (FLOP/byte)", "ai_l1"),
    ("AI L2 (FLOP/byte)", "ai_l2"),
    ("AI DRAM (FLOP/byte)", "ai_dram"),
    ("binding ceiling (FLOP/s)", "binding_ceiling"),
    ("% of binding ceiling", "binding_percent"),
    ("binding ceiling", "binding_name"),
    ("AI check", "ai_check"),
]


def _label(name: str, unit: str) -> str:
    return f"{name} ({unit})" if unit else name


def _datasheet_efficiency(device: str, rate: float) -> float | None:
    """FLOP/s sp as a percentage of the device table's FP32 peak, when the name matches one row."""
    if not device or rate != rate:  # NaN: no rate
        return None
    try:
        peak = gpu_table.peaks(gpu_table.match(device)).flops_for("float32")
    except InputError:
        return None
    return 100.0 * rate / peak if peak else None


def _run_kernels(run: Run) -> pd.DataFrame:
    """The per-kernel rows of one run (:func:`gpuprof.derive.kernels.aggregate` of its launches),
    columns titled as in :func:`kernel_table`. API calls and NVTX ranges are host side: they are
    shown only when a file holds nothing else. A simulated run's rows are its layers
    (:func:`gpuprof.derive.simulated.layer_table`)."""
    if run.device.get("kind") == "simulated":
        table = simulated.layer_table(run).rename(columns={"layer": "kernel"})
        table.insert(0, "file", Path(run.source).name)
        return table
    units: dict[str, str | None] = {}
    sums = kernels.aggregate_frames(_launch_frames(run, units), KEY_METRICS)
    titles = {column: title for title, column in [*_derived_columns(), *_ROOFLINE_COLUMNS]}
    titles.update({key: _label(key, units[key] or "") for key in KEY_METRICS})
    out = sums[["file", "session", "device", "kernel", "launches", *titles, "basis"]].rename(columns=titles)
    out["efficiency sp vs datasheet peak (%)"] = [
        _datasheet_efficiency(device, rate) for device, rate in zip(out["device"], out["FLOP/s sp"])
    ]
    out["origin"] = (
        f"{MEASURED} by the profiler ({run.format}); rates, clock and efficiencies "
        "derived from those counters; datasheet peaks from configs/devices.toml"
    )
    return out


# Launches per launch frame of the per-kernel table: a run of more (a 10 GB details CSV has a million)
# is aggregated a frame at a time, so that its launches' derived values are never all held at once;
# a run of a million metric rows (under 70,000 launches in the layouts measured) is one frame.
FRAME_LAUNCHES = 1 << 17


def _launch_frames(run: Run, units: dict[str, str | None]) -> Iterator[pd.DataFrame]:
    """The :func:`gpuprof.derive.kernels.launch_frame` of ``run``'s launches (without host-side
    spans, unless there is nothing else), :data:`FRAME_LAUNCHES` at a time, at least one frame;
    ``units`` gets each key metric's unit, that of the first launch having it, as one frame has it."""
    import numpy as np

    codes, kinds = tables.distinct(tables.attribute(run.launch_table, "kind"))
    host = np.array([kind in HOST_KINDS for kind in kinds], dtype=bool)[codes]
    count = len(host)
    for start in range(0, max(count, 1), FRAME_LAUNCHES):
        stop = min(start + FRAME_LAUNCHES, count)
        launches = kernels.launch_frame(run if stop - start == count else _part(run, start, stop), KEY_METRICS, False)
        for key, unit in launches.attrs["units"].items():
            if units.get(key) is None:
                units[key] = unit
        yield launches if host.all() else launches[~host[start:stop]]


def _part(run: Run, start: int, stop: int) -> Run:
    """``run`` with only its launches ``start`` to ``stop`` and their metric rows."""
    import numpy as np

    metrics = run.metric_table
    low, high = np.searchsorted(metrics["launch"].to_numpy(), [start, stop])
    part = metrics.iloc[low:high].reset_index(drop=True)
    part["launch"] = (part["launch"].to_numpy() - start).astype(np.int32)
    return run.replaced(tables=(run.launch_table.iloc[start:stop].reset_index(drop=True), part))


def kernel_table(runs: Iterable[Run]) -> pd.DataFrame:
    """One row per (file, session, device, kernel): launches, then what the counters give —
    time, FLOPs per precision, tensor and in total, FLOP/s, the peak at the clock the SMs ran at
    and the efficiency against it, DRAM, L2 and L1 traffic, the clock — then the hierarchical
    roofline (FLOP/s and arithmetic intensity per level from the kernel's sums, the binding
    ceiling of the device table and the percent of it, the AI check), efficiency against the
    datasheet peak when the device is known, key metrics as the profiler reported them, and the
    basis of each derived value. Aggregated by :mod:`gpuprof.derive.kernels`' rules (times and
    counts per launch over the launches that have them, rates time-weighted, intensities sums over
    sums, reported metrics invocation-weighted); columns appear only when some row has the value;
    units are in the titles. Computed column-wise, per run."""
    import pandas as pd

    frames = [_run_kernels(run) for run in runs]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    frame = frame.replace("", None)  # a text column with nothing in it goes, like an empty number column
    frame = frame.dropna(axis=1, how="all")
    leading = (
        "file",
        "session",
        "kernel",
        "device",
        "launches",
        *(title for title, _ in [*_derived_columns(), *_ROOFLINE_COLUMNS]),
        "efficiency sp vs datasheet peak (%)",
    )
    trailing = [c for c in ("basis", "origin") if c in frame.columns]
    first = [c for c in leading if c in frame.columns]
    rest = [c for c in frame.columns if c not in first and c not in trailing]
    return frame[first + rest + trailing]
