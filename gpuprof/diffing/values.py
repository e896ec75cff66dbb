"""Per-launch values of every quantity a diff compares, column-wise, with each launch's identity.

An imported run gives one row per launch (or per tool aggregate, weighted by its invocations): the
per-launch rows of :func:`gpuprof.derive.kernels.launch_frame` (time, FLOPs with tensor work, the
hierarchical roofline), the catalog metrics it holds, stall shares and efficiencies against the
device table's peaks, each an expression over whole columns. A measured run
gives one row per timed repeat. The identity columns (kernel name, grid, block, NVTX range) are
parsed once per distinct value, so a million launches cost a few column operations.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

import numpy as np

from gpuprof.derive import counters as k
from gpuprof.derive import kernels
from gpuprof.derive.efficiency import BYTE_RATE, efficiencies
from gpuprof.derive.stalls import NVPROF, PREFERENCE, classify, describe
from gpuprof.derive.summary import run_peaks, timings
from gpuprof.devices import gpu_table
from gpuprof.diffing import metrics as m
from gpuprof.errors import InputError
from gpuprof.model import ANALYTIC, DERIVED, MEASURED, PEAK_TABLE, TIMED, Run, catalog
from gpuprof.model.quantities import DIFF_EFFICIENCY
from gpuprof.workloads import ops

if TYPE_CHECKING:
    import pandas as pd


DTYPES = {"sp": "float32", "dp": "float64", "hp": "float16"}
NAMES = {"sp": "fp32", "dp": "fp64", "hp": "fp16"}  # in this order: a launch with no FLOPs counted is judged as FP32
# The metrics that give a launch's grid and block as totals where its attributes do not.
CONFIG_METRICS = {"grid": ("Grid Size", "launch__grid_size"), "block": ("Block Size", "launch__block_size")}


def _positive(values: np.ndarray) -> np.ndarray:
    return np.where(values > 0, values, np.nan)


def _dims(text: str) -> str:
    """Grid or block as 'x,y,z' from '(32, 32, 1)', '32768    1    1' or '256'; '' when absent."""
    numbers = re.findall(r"\d+", text or "")
    return ",".join(numbers + ["1"] * (3 - len(numbers))) if numbers else ""


def _attribute(attributes: list[dict[str, str]], key: str) -> np.ndarray:
    """One launch attribute as a column ('' where absent): a plain comprehension, the cheapest way
    through a list of dicts (about 0.1 s per million launches)."""
    return np.array([a.get(key, "") for a in attributes], dtype=object)


def _config(attributes: list[dict[str, str]], raw: pd.DataFrame, key: str) -> np.ndarray:
    """Per launch 'x,y,z' from the launch attributes, else the total from a metric ('Grid Size'),
    each distinct value parsed once."""
    import pandas as pd

    codes, texts = pd.factorize(_attribute(attributes, key))
    dims = np.array([_dims(str(t)) for t in texts] + [""], dtype=object)[codes]
    if (dims != "").all():
        return dims
    first, second = (raw[name].to_numpy(dtype=float) for name in CONFIG_METRICS[key])
    codes, values = pd.factorize(np.where(np.isnan(first), second, first))  # NaN: code -1, the trailing ""
    from_metric = np.array([str(int(v)) for v in values] + [""], dtype=object)[codes]
    return np.where(dims != "", dims, from_metric)


def _stall_names(run: Run) -> tuple[dict[str, str], str | None]:
    """The run's stall metrics on its preferred basis (see :mod:`gpuprof.derive.stalls`): reason ->
    metric name, and the vocabulary ("nvprof" or "ncu") the reasons are named in; found once per
    distinct metric name."""
    found: dict[str, dict[str, str]] = {}
    names = {str(n) for column in ("metric", "canonical") for n in run.metric_table[column].cat.categories}
    for name in sorted(names):
        kind = classify(name)
        if kind and describe(NVPROF if kind[0] == NVPROF else "ncu", kind[1]).get("stall", True):
            found.setdefault(kind[0], {}).setdefault(kind[1], name)
    basis = next((b for b in PREFERENCE if b in found), None)
    if basis is None:
        return {}, None
    return found[basis], "nvprof" if basis == NVPROF else "ncu"


def _stalls(raw: pd.DataFrame, reasons: dict[str, str], vocabulary: str | None) -> dict[str, np.ndarray]:
    """Per launch, each reason's share (%) of the launch's stall cycles; nvprof's own percentages
    as they are."""
    values = (
        np.column_stack([raw[name].to_numpy(dtype=float) for name in reasons.values()])
        if reasons
        else np.empty((len(raw), 0))
    )
    if vocabulary == "ncu":
        totals = np.nansum(values, axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            values = 100.0 * values / np.where(totals > 0, totals, np.nan)
    prefix = "stall_" if vocabulary == "ncu" else ""
    return {prefix + reason: values[:, i] for i, reason in enumerate(reasons)}


def _time_range(run: Run) -> tuple[np.ndarray, np.ndarray]:
    """Per launch the shortest and longest duration where a tool aggregated several invocations
    into one row (nvprof's Min and Max), NaN elsewhere."""
    metrics = run.metric_table
    duration = (metrics["canonical"] == "kernel_duration").to_numpy()
    rows = np.flatnonzero(duration & metrics["minimum"].notna().to_numpy())
    low, high = np.full(len(run.launch_table), np.nan), np.full(len(run.launch_table), np.nan)
    launches, first = np.unique(metrics["launch"].to_numpy()[rows], return_index=True)
    low[launches] = metrics["minimum"].to_numpy()[rows[first]]
    high[launches] = metrics["maximum"].to_numpy()[rows[first]]
    return low, high


def _datasheet(devices: np.ndarray) -> dict[str, np.ndarray]:
    """Per launch the device table's peaks (FLOP/s per dtype, bandwidth) for its device name, NaN
    where the name is empty or not in the table; looked up once per distinct name."""
    import pandas as pd

    codes, names = pd.factorize(pd.Series(devices, dtype=object))
    table = np.full((len(names) + 1, 4), np.nan)
    for row, name in enumerate(names):
        try:
            peaks = gpu_table.peaks(gpu_table.match(str(name))) if name else None
        except InputError:
            peaks = None
        if peaks is not None:
            table[row] = [*(peaks.flops_for(d) or np.nan for d in DTYPES.values()), peaks.bandwidth or np.nan]
    picked = table[codes]
    return {**{p: picked[:, i] for i, p in enumerate(DTYPES)}, "bandwidth": picked[:, 3]}


def imported(run: Run) -> pd.DataFrame:
    """One row per launch of an imported run: identity columns, then every quantity it allows
    (NaN where a launch lacks the inputs), from :func:`gpuprof.derive.kernels.launch_frame` (the
    per-launch rows every per-kernel table aggregates; one pass over the metric table for every
    name needed here too) and the device table's peaks."""
    import pandas as pd

    launches = run.launch_table
    present = {str(n) for n in run.metric_table["canonical"].cat.categories} & set(catalog.entries())
    extra = sorted(n for n in present if n not in m.derived() and n not in m.ALIASES and not n.startswith(m.INPUTS))
    reasons, vocabulary = _stall_names(run)
    wanted = [alias for name in (*extra, "achieved_occupancy") for alias in k.aliases(name)]
    config = [name for names in CONFIG_METRICS.values() for name in names]
    raw = kernels.launch_frame(run, list(dict.fromkeys([*wanted, *reasons.values(), *config])))

    def number(name: str) -> np.ndarray:
        """A catalog metric under whichever of its names the file used, in the catalog's order."""
        found = np.full(len(raw), np.nan)
        for alias in k.aliases(name):
            found = np.where(np.isnan(found), raw[alias].to_numpy(dtype=float), found)
        return found

    flops = np.vstack([raw[f"flops_{p}"].to_numpy(dtype=float) for p in NAMES.values()])
    main = np.argmax(np.nan_to_num(flops, nan=-1.0), axis=0)  # the main precision; single where none counted
    counted = ~np.isnan(flops).all(axis=0)

    def of_main(columns: list[np.ndarray], only_counted: bool = True) -> np.ndarray:
        """Per launch the column of its main precision; NaN where ``only_counted`` and none is counted."""
        picked = np.vstack(columns)[main, np.arange(len(main))]
        return np.where(counted | (not only_counted), picked, np.nan)

    def per_precision(template: str) -> list[np.ndarray]:
        return [raw[template.format(p)].to_numpy(dtype=float) for p in NAMES.values()]

    names = raw["device"].to_numpy(dtype=object)
    sheet = _datasheet(names)
    peak = _positive(of_main([sheet[p] for p in NAMES], only_counted=False))  # datasheet, main precision
    rate, dram_rate = raw["flop_rate_total"].to_numpy(dtype=float), raw["dram_bandwidth"].to_numpy(dtype=float)
    intensity = raw["ai_dram"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        dram_roof = 100.0 * rate / _positive(np.fmin(peak, intensity * sheet["bandwidth"]))
    hierarchical = raw["binding_percent"].to_numpy(dtype=float)
    values = {
        "time": raw["time"].to_numpy(dtype=float),
        "flops": raw["flops_total"].to_numpy(dtype=float),
        "flops_tensor": np.where(raw["flops_tensor"] > 0, raw["flops_tensor"], np.nan),
        "flop_rate": rate,
        "bytes": raw["dram_bytes"].to_numpy(dtype=float),
        "bandwidth": dram_rate,
        "intensity": intensity,
        "l2_bytes": raw["l2_bytes"].to_numpy(dtype=float),
        "intensity_l2": raw["ai_l2"].to_numpy(dtype=float),
        "l1_bytes": raw["l1_bytes"].to_numpy(dtype=float),
        "intensity_l1": raw["ai_l1"].to_numpy(dtype=float),
        "flop_efficiency": of_main(per_precision("flop_efficiency_{}")),
        "datasheet_efficiency": 100.0 * of_main(per_precision("flop_rate_{}")) / peak,
        "bandwidth_efficiency": 100.0 * dram_rate / _positive(sheet["bandwidth"]),
        "roofline_efficiency": np.where(np.isnan(hierarchical), dram_roof, hierarchical),
        "peak_flop_rate": peak,
        "peak_bandwidth": _positive(sheet["bandwidth"]),
        "sm_clock": raw["sm_clock"].to_numpy(dtype=float),
        "achieved_occupancy": number("achieved_occupancy"),
        **{name: number(name) for name in extra},
        **_stalls(raw, reasons, vocabulary),
    }
    attributes = launches["attributes"].tolist()
    frame = pd.DataFrame(
        {
            "kernel": launches["kernel"].to_numpy(dtype=object),
            "grid": _config(attributes, raw, "grid"),
            "block": _config(attributes, raw, "block"),
            "nvtx": _attribute(attributes, "nvtx"),
            "device": names,
            "activity": _attribute(attributes, "kind"),
            "weight": launches["invocations"].to_numpy(dtype=float),
            **values,
        }
    )
    frame["time_min"], frame["time_max"] = _time_range(run)
    frame.attrs.update(origins=_origins(run, values), stalls=vocabulary)
    return frame


def _origins(run: Run, names: dict[str, np.ndarray]) -> dict[str, str]:
    """Where each quantity of an imported run came from, in words."""
    tool = f"{MEASURED} by the profiler ({run.format})"
    out = {}
    for name in names:
        if name in ("peak_flop_rate", "peak_bandwidth"):
            out[name] = f"{PEAK_TABLE}: configs/devices.toml, by the device's name"
        elif name in ("datasheet_efficiency", "bandwidth_efficiency", "roofline_efficiency"):
            out[name] = f"{DERIVED} from counters {tool} over {PEAK_TABLE} peaks (configs/devices.toml)"
        elif name == "time":
            out[name] = f"{tool}: kernel duration (elapsed cycles / SM clock where the profile has none)"
        elif name.startswith("stall_"):
            out[name] = f"{tool}: share of the launch's stalls"
        elif name in m.derived() and name not in ("sm_clock", "bytes", "achieved_occupancy"):
            out[name] = f"{DERIVED} from counters {tool}"
        else:
            out[name] = tool
    return out


def workload_key(run: Run) -> tuple[str, str, str, str]:
    """(op, shape, dtype, engine): how measured runs are matched."""
    w = run.workload or {}
    return (
        str(w.get("op", "")),
        ops.shape_text(tuple(w.get("shape", ()))),
        str(w.get("dtype", "")),
        str(w.get("engine", "")),
    )


def measured(run: Run) -> pd.DataFrame:
    """One row per timed repeat of a measured run: its time and what follows from it (analytic
    FLOPs and bytes, rates, efficiencies against the ceilings recorded with the run)."""
    import pandas as pd

    op, shape, dtype, engine = workload_key(run)
    dims = tuple((run.workload or {}).get("shape", ()))
    time = np.array(timings(run), dtype=float)
    flops, moved = float(ops.flops(op, dims)), float(ops.bytes_moved(op, dims, dtype))
    values: dict[str, np.ndarray | float] = {
        "time": time,
        "flops": flops,
        "flop_rate": flops / time,
        "bytes": moved,
        "bandwidth": moved / time,
        "intensity": flops / moved,
    }
    origins = {
        "time": f"{TIMED} ({run.environment.get('timer', 'gpuprof')})",
        "flops": f"{ANALYTIC} ({op})",
        "bytes": f"{ANALYTIC}: each input read once, output written once",
        "flop_rate": f"{DERIVED}: analytic FLOPs / timed repeat",
        "bandwidth": f"{DERIVED}: analytic bytes / timed repeat",
        "intensity": f"{ANALYTIC}: FLOPs / bytes",
    }
    median = float(np.median(time)) if len(time) else math.nan
    for peaks in run_peaks(run):  # the first ceiling of each kind, as the run's own report orders them
        source = f"{peaks.origin}: {peaks.source}"
        if peaks.flops_for(dtype):
            values.setdefault("peak_flop_rate", peaks.flops_for(dtype))
            origins.setdefault("peak_flop_rate", source)
        if peaks.bandwidth:
            values.setdefault("peak_bandwidth", peaks.bandwidth)
            origins.setdefault("peak_bandwidth", source)
        for eff in efficiencies(flops / median, moved / median, dtype, peaks, run.device.get("clock_during_run_hz")):
            name = DIFF_EFFICIENCY[eff.against]
            if name not in values:  # an efficiency scales with the rate: one value per repeat
                values[name] = 100.0 * (values["bandwidth" if eff.unit == BYTE_RATE else "flop_rate"]) / eff.ceiling
                origins[name] = f"{DERIVED}: {eff.basis}"
    w = run.workload or {}
    settings = (
        f"{w.get('cache', 'warm')} cache, {len(time)} repeat{'' if len(time) == 1 else 's'} after {w.get('warmup', 0)} warm-up, "
        f"{run.environment.get('engine_version') or engine}"
    )
    frame = pd.DataFrame(
        {
            "kernel": f"{op} {shape} {dtype} {engine}",
            "grid": "",
            "block": "",
            "nvtx": "",
            "device": str(run.device.get("name", "")),
            "weight": 1.0,
            "settings": settings,
            **{k: np.broadcast_to(v, time.shape) for k, v in values.items()},
        },
        index=range(len(time)),
    )
    frame.attrs["origins"] = origins
    return frame
