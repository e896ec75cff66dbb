"""What a measured run means: time, FLOPs, FLOP/s, bandwidth, intensity and efficiencies, each
with where it came from.

Pure functions of a stored :class:`gpuprof.model.Run` (kind ``run``): nothing here measures,
reads files or prints, so ``show`` and ``compare`` give the same numbers as the run did.
"""

from __future__ import annotations

from typing import Any

from gpuprof.derive import compile as compiled
from gpuprof.derive.cpu_flops import flops_from_events
from gpuprof.derive.efficiency import VS_ROOFLINE, VS_RUN_CLOCK, RunClock, above_100, efficiencies
from gpuprof.derive.energy import energy_quantities
from gpuprof.derive.profiled import quantities as profiled_quantities
from gpuprof.derive.quantity import Quantity, reported, run_peaks
from gpuprof.derive.stats import UNSTABLE_SPREAD, TimingStats, timing_stats
from gpuprof.devices.peaks import Peaks
from gpuprof.model import ANALYTIC, CALIBRATED, DERIVED, MEASURED, TIMED, Run
from gpuprof.model.quantities import column, efficiency_key
from gpuprof.workloads import ops

__all__ = [
    "CEILING_NAMES",
    "Quantity",
    "measured_flops",
    "quantities",
    "run_clock",
    "run_peaks",
    "summary_row",
    "timings",
]


def timings(run: Run) -> list[float]:
    """The per-repeat times of a measured run, in seconds: the launches gpuprof timed itself
    (a GPU run also holds the profiler's launches, whose durations replay passes distort)."""
    times = []
    for launch in run.launches:
        duration = launch.metric("kernel_duration")
        if (
            launch.invocations == 1
            and duration is not None
            and duration.origin == TIMED
            and isinstance(duration.value, (int, float))
        ):
            times.append(float(duration.value))
    return times


def measured_flops(run: Run) -> tuple[float, str] | None:
    """FLOPs per call counted by hardware counters over the timed repeats, with the events used."""
    for launch in run.launches:
        if launch.invocations > 1:
            counted = flops_from_events(launch.metrics)
            if counted is not None:
                return counted[0] / launch.invocations, counted[1]
    return None


def quantities(run: Run, peaks: list[Peaks] | None = None) -> list[Quantity]:
    """Every number ``gpuprof run`` reports for one measured run, in reading order; efficiencies
    against ``peaks`` (``gpuprof.compare.ceilings_for``: the one rule every command uses), else
    against the ceilings recorded with the run."""
    w = run.workload or {}
    op, dtype, shape = w["op"], w["dtype"], tuple(w["shape"])
    stats: TimingStats = timing_stats(timings(run))
    flops = ops.flops(op, shape)
    moved = ops.bytes_moved(op, shape, dtype)
    timer = run.environment.get("timer", "timed")
    cache = f"{w.get('cache', 'warm')} cache"
    out = [
        reported(
            "time", stats.median, TIMED, f"{stats.count} repeats after {w.get('warmup', 0)} warm-up, {cache}; {timer}"
        ),
        reported("time_min", stats.minimum, TIMED, "fastest repeat"),
        reported("time_spread", 100 * stats.spread if stats.count > 1 else None, TIMED, _spread_basis(stats)),
        reported("flops", float(flops), ANALYTIC, f"{op}: {ops.get_op(op).flop_basis}"),
    ]
    counted = measured_flops(run)
    if counted is not None:
        out.append(reported("flops_counted", counted[0], MEASURED, counted[1]))
    rate = flops / stats.median
    byte_rate = moved / stats.median
    out += [
        reported("flop_rate", rate, DERIVED, "analytic FLOPs / median time"),
        reported("flop_rate_mflops", rate / 1e6, DERIVED, "the study's unit"),
        reported("bytes", float(moved), ANALYTIC, "each input read once, output written once"),
        reported("bandwidth", byte_rate, DERIVED, "analytic bytes / median time"),
        reported("intensity", flops / moved, ANALYTIC, "FLOPs / bytes moved"),
    ]
    out += _efficiency_quantities(run, rate, byte_rate, dtype, run_peaks(run) if peaks is None else peaks)
    out += profiled_quantities(run, float(flops), float(moved), stats.median)

    return out + compiled.quantities(run) + energy_quantities(run)


def _spread_basis(stats: TimingStats) -> str:
    """How the spread was measured, and whether it can be at all."""
    if stats.count == 1:
        return "n/a: one repeat has no spread (give --repeat 4 or more)"
    what = "interquartile range / median" if stats.count >= 4 else f"range / median of {stats.count} repeats"
    return what + ("" if stats.stable else " — UNSTABLE, numbers vary")


UNSTABLE_NOTE = (
    "UNSTABLE: this run's time spread (interquartile range / median of its repeats) is above "
    f"{UNSTABLE_SPREAD:.0%}: its numbers vary from call to call; rerun on a quieter machine or with more "
    "--repeat ('gpuprof show RUN' gives the spread)"
)


def instability(run: Run) -> str:
    """'' where a measured run's timed repeats agree; else a short 'UNSTABLE (time spread 20.6 %)':
    what every table or line showing the run's numbers puts beside them (:data:`UNSTABLE_NOTE`)."""
    times = timings(run)
    if len(times) < 2:
        return ""
    stats = timing_stats(times)
    return "" if stats.stable else f"UNSTABLE (time spread {stats.spread:.1%})"


# What a ceiling is called in quantity names, by its origin.
CEILING_NAMES = {"derived": "theoretical", "peak-table": "datasheet", "calibrated": "calibrated"}


def run_clock(run: Run) -> RunClock:
    """The clock the run recorded (measured by perf or a probe), or why it is unknown. Runs stored
    before gpuprof probed the clock recorded /proc/cpuinfo's 'cpu MHz', a nominal clock in a VM,
    which is not taken for the run clock."""
    hz, source = run.device.get("clock_during_run_hz"), run.device.get("clock_during_run_source", "not recorded")
    if "/proc/cpuinfo" in source:
        return RunClock(
            None,
            f"unknown: the run recorded {hz / 1e9:.4g} GHz from /proc/cpuinfo 'cpu MHz', "
            "not a measurement of the clock under load",
        )
    return RunClock(hz, source)


def _efficiency_quantities(
    run: Run, rate: float, byte_rate: float, dtype: str, recorded: list[Peaks]
) -> list[Quantity]:
    clock = run_clock(run)
    out = [reported("clock", clock.hz, MEASURED, clock.source)]
    if not any(p.bandwidth and p.flops_for(dtype) for p in recorded):
        roofline = efficiency_key("", "roofline")
        out.append(Quantity("efficiency: roofline", None, "%", DERIVED, _no_roofline(run, recorded, dtype), roofline))
    for peaks in recorded:
        ceiling = CEILING_NAMES.get(peaks.origin, peaks.origin)
        flop_peak = peaks.flops_for(dtype)
        at = f" at {peaks.clock_hz / 1e9:.4g} GHz" if peaks.clock_hz else ""  # a calibration: its own clock
        if flop_peak:
            out.append(
                Quantity(
                    f"peak FLOP/s {dtype}, {ceiling}",
                    flop_peak,
                    "FLOP/second",
                    peaks.origin,
                    f"{peaks.source}{at}",
                    f"peak_flop_rate_{ceiling}",
                )
            )
        if peaks.bandwidth:
            out.append(
                Quantity(
                    f"peak bandwidth, {ceiling}",
                    peaks.bandwidth,
                    "byte/second",
                    peaks.origin,
                    peaks.source,
                    f"peak_bandwidth_{ceiling}",
                )
            )
        for eff in efficiencies(rate, byte_rate, dtype, peaks, clock.hz):
            why = above_100(eff, peaks, clock, (run.workload or {}).get("cache"))
            out.append(
                Quantity(
                    f"efficiency: {_efficiency_label(eff, ceiling)}",
                    eff.percent,
                    "%",
                    DERIVED,
                    eff.basis + (f" — ABOVE 100 %: {eff.percent - 100:.3g} % {why}" if why else ""),
                    efficiency_key(ceiling, eff.against),
                    eff.bound if eff.kind == VS_ROOFLINE else "",
                )
            )
    return out


def _no_roofline(run: Run, recorded: list[Peaks], dtype: str) -> str:
    """Why no ceiling set has both a FLOP peak for ``dtype`` and a bandwidth."""
    if run.device.get("kind") != "cpu":
        return "the device's peak bandwidth is unknown"
    calibrated = next((p for p in recorded if p.origin == CALIBRATED), None)
    if calibrated is None:
        return "needs a bandwidth ceiling: run 'gpuprof calibrate' once on this host"
    missing = [
        what
        for what, found in (("bandwidth", calibrated.bandwidth), (f"{dtype} FLOP/s", calibrated.flops_for(dtype)))
        if not found
    ]
    return (
        f"this host's calibrations have no stable {' or '.join(missing)} ceiling: rerun 'gpuprof calibrate' "
        "when the host is idle"
    )


def _efficiency_label(eff: Any, ceiling: str) -> str:
    """What an efficiency divides by, in words: 'FLOP/s, theoretical peak', 'theoretical peak at run
    clock', 'roofline, calibrated (memory-bound)'; unique within a run."""
    if eff.kind == VS_ROOFLINE:
        return f"roofline, {ceiling} ({eff.bound}-bound)"
    if eff.kind == VS_RUN_CLOCK:
        return f"{ceiling} peak at run clock"
    return f"FLOP/s, {ceiling} peak" if eff.unit == "FLOP/second" else f"bandwidth, {ceiling} peak"


def summary_row(run: Run, peaks: list[Peaks] | None = None) -> dict[str, Any]:
    """One flat row per measured run, for ``show`` and comparison tables (``peaks``: as :func:`quantities`)."""
    w = run.workload or {}
    row: dict[str, Any] = {
        "run": run.run_id[:8],
        "created": run.created,
        "device": run.device.get("name", ""),
        "engine": w.get("engine"),
        "op": w.get("op"),
        "dtype": w.get("dtype"),
        "shape": ops.shape_text(tuple(w.get("shape", ()))),
        "size_MB": w.get("size_bytes", 0) / 1e6,
    }
    for q in quantities(run, peaks):  # each quantity's column by its key (model/quantities), the first of a kind
        shown = column(q.key)
        if shown is not None and shown.name not in row:
            row[shown.name] = q.value / shown.per if isinstance(q.value, (int, float)) else q.value
            if q.bound:
                row["bound"] = q.bound
    return row
