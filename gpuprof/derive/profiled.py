"""What the profiler measured for one call of the op in a GPU run: kernel time, counted FLOPs per
precision, DRAM bytes, the SM clock, and efficiency against the peak at that clock, the datasheet
peak and the roofline, each naming its ceiling.

One call may launch several kernels (a GEMM and its split-K reduction): every number is the sum over
the kernels of one call, averaged over the profiled calls, and exists only when the run's check
found the launches read to be exactly those calls (``environment["kernels_per_call"]``, set by
:mod:`gpuprof.launch.gpu_readback`); a sum needs the value from every launch. Per-launch values come
from :mod:`gpuprof.derive.counted`. Pure functions of a stored Run, like :mod:`gpuprof.derive.summary`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuprof.derive import counted, tensor
from gpuprof.derive.efficiency import VS_ROOFLINE, VS_RUN_CLOCK, Efficiency, efficiencies
from gpuprof.derive.pivot import Counters
from gpuprof.derive.quantity import Quantity, reported, run_peaks
from gpuprof.devices.peaks import Peaks
from gpuprof.model import DERIVED, MEASURED, Run
from gpuprof.model.quantities import EFFICIENCY, efficiency_key
from gpuprof.model.units import human

if TYPE_CHECKING:
    import numpy as np

VECTOR_PRECISIONS = {"sp": "FP32", "dp": "FP64", "hp": "FP16"}  # counter suffix -> the name people read
DTYPE_PRECISION = {"float32": "sp", "float64": "dp", "float16": "hp"}
FMA = {"sp": "ffma", "dp": "dfma", "hp": "hfma"}


@dataclass(frozen=True)
class PerCall:
    """The profiler's numbers for one call of the op (sums over its kernels, mean over the calls)."""

    kernels: int
    calls: int
    tool: str
    flops: dict[str, float]  # precision -> counted FLOP
    time: float | None  # profiler kernel time, seconds
    dram_bytes: float | None
    clock_hz: float | None  # SM clock, weighted by kernel time
    peak_at_clock: dict[str, float]  # precision -> FMA-pipe ceiling at the measured clock (ncu), FLOP/s
    tool_efficiency: dict[str, float]  # precision -> the tool's own flop_<p>_efficiency, one-kernel calls
    tensor: float | None = None  # tensor-core FLOP per call; None when not counted or none ran
    tensor_basis: str = ""  # how, or why not (gpuprof.derive.tensor.RULES)


def _per_call_total(values: np.ndarray, invocations: np.ndarray, calls: int) -> float | None:
    """Sum over the launches (each aggregate counted ``invocations`` times) per call; None where any
    launch lacks the value."""
    import numpy as np

    return None if not len(values) or np.isnan(values).any() else float((values * invocations).sum()) / calls


def _time_weighted(values: np.ndarray, times: np.ndarray, invocations: np.ndarray) -> float | None:
    """Mean of a per-launch rate (clock, peak) weighted by kernel time, plain mean without times."""
    import numpy as np

    if not len(values) or np.isnan(values).any():
        return None
    weights = invocations if np.isnan(times).any() else times * invocations
    return float((values * weights).sum() / weights.sum()) if weights.sum() else None


def per_call(run: Run) -> PerCall | None:
    """The profiler's per-call numbers, or None without checked profiled launches."""
    import numpy as np

    kernels = run.environment.get("kernels_per_call")
    calls = int((run.workload or {}).get("profiled") or 0)
    launches = [launch for launch in run.launches if launch.attributes.get("phase") == "profiled"]
    if not kernels or not calls or not launches:
        return None
    own_keys = [f"flop_{p}_efficiency" for p in VECTOR_PRECISIONS]
    c = Counters.of_launches(
        launches,
        extra=(*counted.keys(), *own_keys, *tensor.names()),
        cc=[str(run.device.get("cc", ""))] * len(launches),
    )
    n = np.array([launch.invocations for launch in launches], dtype=float)
    times = counted.kernel_time(c)
    flops = {p: v for p in VECTOR_PRECISIONS if (v := _per_call_total(counted.flops(c, p), n, calls)) is not None}
    peaks = {
        p: v for p in VECTOR_PRECISIONS if (v := _time_weighted(counted.peak_flop_rate(c, p), times, n)) is not None
    }
    own = {
        p: float(c.number(key)[0])
        for p, key in zip(VECTOR_PRECISIONS, own_keys)
        if len(launches) == 1 and not np.isnan(c.number(key)[0])
    }
    tensor_flops, rules, kinds = tensor.parts(c)
    worked = sorted({tensor.rule_text(rule, c) for rule in rules.tolist() if rule != tensor.NONE})
    return PerCall(
        kernels,
        calls,
        str(run.environment.get("profiler", "profiler")),
        flops,
        _per_call_total(times, n, calls),
        _per_call_total(counted.dram_bytes(c), n, calls),
        _time_weighted(counted.sm_clock(c), times, n),
        peaks,
        own,
        _per_call_total(tensor_flops, n, calls) or None,
        "; ".join([*worked, *sorted({k for k in kinds.tolist() if k})]),
    )


def kernel_names(run: Run, kernels: int) -> list[str]:
    """The kernels one profiled call launched, in launch order (a framework may fuse several ops into
    one kernel or launch several per op); an aggregating profiler's rows give each name once."""
    launches = [launch for launch in run.launches if launch.attributes.get("phase") == "profiled"]
    if all(launch.invocations == 1 for launch in launches):
        return [launch.kernel for launch in launches[:kernels]]
    return list(dict.fromkeys(launch.kernel for launch in launches))


def _kernels_row(run: Run, found: PerCall) -> Quantity:
    names = kernel_names(run, found.kernels)
    shown = "; ".join(name[:100] for name in names[:8]) + (f"; and {len(names) - 8} more" if len(names) > 8 else "")
    return reported(
        "kernels_per_call",
        float(found.kernels),
        MEASURED,
        f"{found.tool}: launches inside NVTX range {run.environment.get('nvtx_range', '?')} per profiled "
        f"call, all counted below: {shown}",
    )


def _clock_text(run: Run) -> str:
    settings = run.environment.get("profiler_settings") or {}
    control = settings.get("clock_control", "")
    if control == "base":
        return "locked to base by ncu --clock-control base"
    if control == "none":
        return "as the driver set it (ncu --clock-control none)"
    return "as the driver set it (no clock control)"


def _ratio_hint(ratio: float) -> str:
    if ratio < 0.5:
        return (
            " — far below 1: the work ran where these counters do not look (tensor cores, special-function"
            " units) or in another precision"
        )
    if ratio > 1.5:
        return (
            " — above 1: exp and division expand into several FP instructions, or the kernel pads its tiles"
            " (kernels/README.md)"
        )
    return ""


def _above(percent: float) -> str:
    return (
        (
            " — above 100 %: a wrong ceiling or a wrong count until its cause is shown (check the ceiling named"
            " here and the counted/analytic ratio)"
        )
        if percent > 100
        else ""
    )


def quantities(run: Run, analytic_flops: float, analytic_bytes: float, event_time: float | None) -> list[Quantity]:
    """The profiler's rows of ``gpuprof run``'s report for one call (see the module docstring)."""
    found = per_call(run)
    if found is None:
        return []
    w = run.workload or {}
    dtype, p = w.get("dtype", "float32"), DTYPE_PRECISION.get(w.get("dtype", ""), "sp")
    per = f"per call ({found.kernels} kernel(s) summed, mean of {found.calls} profiled call(s))"
    out = [_kernels_row(run, found)]
    if found.time is not None:
        versus = (
            f"; CUDA-event time {human(event_time, 'second')}: profiler / event = {found.time / event_time:.3f}"
            if event_time
            else ""
        )
        out.append(
            reported(
                "time_profiled",
                found.time,
                MEASURED,
                f"{found.tool} kernel duration {per}, clocks {_clock_text(run)}{versus}",
            )
        )
    for q, value in found.flops.items():
        if value or q == p:
            out.append(
                Quantity(
                    f"FLOPs counted ({VECTOR_PRECISIONS[q]})",
                    value,
                    "FLOP",
                    MEASURED,
                    f"{found.tool}: {VECTOR_PRECISIONS[q]} add + mul + 2 x fma thread instructions {per}",
                    f"flops_counted_{VECTOR_PRECISIONS[q].lower()}",
                )
            )
    if found.tensor is not None:
        out.append(
            reported(
                "flops_counted_tensor",
                found.tensor,
                MEASURED,
                f"{found.tool}: {found.tensor_basis} {per}",
            )
        )
    if found.flops:
        total = sum(found.flops.values()) + (found.tensor or 0.0)
        ratio = total / analytic_flops if analytic_flops else None
        uncounted = "; ".join(
            rule
            for rule in (tensor.RULES[tensor.UNCOUNTED], tensor.RULES[tensor.UNKNOWN_GPU])
            if rule in found.tensor_basis
        )
        if ratio is not None:
            out.append(
                reported(
                    "flops_counted_ratio",
                    ratio,
                    DERIVED,
                    f"{human(total, 'FLOP')} counted (all precisions"
                    f"{' and tensor cores' if found.tensor else ''}) / {human(analytic_flops, 'FLOP')} "
                    f"analytic{_ratio_hint(ratio)}" + (f"; {uncounted}" if uncounted else ""),
                )
            )
    if found.dram_bytes is not None:
        out.append(
            reported(
                "dram_bytes",
                found.dram_bytes,
                MEASURED,
                f"{found.tool}: DRAM read + write {per}; compulsory {human(analytic_bytes, 'byte')}: "
                f"counted / compulsory = {found.dram_bytes / analytic_bytes:.3f}",
            )
        )
    if found.clock_hz is not None:
        out.append(
            reported(
                "sm_clock",
                found.clock_hz,
                MEASURED,
                f"{found.tool}: elapsed SM cycles per second, weighted by kernel time; {_clock_text(run)}",
            )
        )
    return out + _efficiency_rows(found, p, dtype, event_time, run_peaks(run))


def _efficiency_rows(
    found: PerCall, p: str, dtype: str, event_time: float | None, recorded: list[Peaks]
) -> list[Quantity]:
    """Counted FLOP/s (and DRAM bytes/s) against the FMA pipe at the measured clock, the recorded peaks
    and their roofline; the rate's time is the profiler's, else the CUDA events'."""
    time, timer = (found.time, "profiler time") if found.time else (event_time, "CUDA-event time")
    flops = found.flops.get(p)
    if not time or flops is None:
        return []
    rate, name = flops / time, VECTOR_PRECISIONS[p]
    byte_rate = found.dram_bytes / time if found.dram_bytes is not None else None
    counted = f"counted {name} {human(rate, 'FLOP/second')} (FLOPs counted / {timer})"
    out: list[Quantity] = []
    if p in found.peak_at_clock:
        peak = found.peak_at_clock[p]
        percent = 100 * rate / peak
        out.append(
            Quantity(
                "efficiency: counted FLOP/s vs peak at run clock",
                percent,
                "%",
                DERIVED,
                f"{counted} / {name} FMA pipe at the measured clock {human(peak, 'FLOP/second')} ({found.tool}: "
                f"sm__sass_thread_inst_executed_op_{FMA[p]}_pred_on.sum.peak_sustained x 2 x SM clock)"
                f"{_above(percent)}",
                efficiency_key("counted", "run_clock"),
            )
        )
    elif p in found.tool_efficiency:
        percent = found.tool_efficiency[p]
        out.append(
            Quantity(
                "efficiency: counted FLOP/s vs peak at run clock",
                percent,
                "%",
                MEASURED,
                f"{found.tool} flop_{p}_efficiency: achieved / peak {name} FLOP/s at the clock the kernel "
                f"ran at{_above(percent)}",
                efficiency_key("counted", "run_clock"),
            )
        )
    for peaks in recorded:
        for eff in efficiencies(rate, byte_rate, dtype, peaks, found.clock_hz):
            if eff.kind == VS_RUN_CLOCK and out:
                continue  # the profiler's own ceiling at the measured clock is already above
            label = (
                f"counted roofline ({eff.bound}-bound)"
                if eff.kind == VS_ROOFLINE
                else "counted FLOP/s vs peak at run clock"
                if eff.kind == VS_RUN_CLOCK
                else "counted FLOP/s vs peak"
                if eff.unit == "FLOP/second"
                else "counted bandwidth vs peak"
            )
            source = counted if eff.unit == "FLOP/second" else f"counted DRAM bytes / {timer}"
            out.append(
                Quantity(
                    f"efficiency: {label}",
                    eff.percent,
                    "%",
                    DERIVED,
                    f"{source}; ceiling: {eff.basis}{_above(eff.percent)}",
                    _counted_key(eff),
                )
            )
    return out


def _counted_key(eff: Efficiency) -> str:
    """The key of an efficiency of counted values: 'eff_counted_roofline', 'eff_counted_run_clock',
    'eff_counted', 'eff_counted_bandwidth'."""
    return f"{EFFICIENCY}counted_roofline" if eff.against == "roofline" else efficiency_key("counted", eff.against)
