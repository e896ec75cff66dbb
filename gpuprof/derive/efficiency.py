"""Efficiency: an achieved rate as a percentage of a ceiling, and which ceiling that was.

"% of peak" means different things depending on the ceiling. This module returns up to three
kinds, each saying what it divided by:

* ``vs-datasheet-peak``: FLOP/s over the device's peak for the dtype at the peak's own clock
  (the datasheet boost clock for a GPU from the device table), and bytes/s over peak bandwidth;
* ``vs-peak-at-run-clock``: FLOP/s over the same peak scaled to the clock the kernel ran at. This
  is what nvprof's ``flop_sp_efficiency`` and Nsight Compute's roofline use (elapsed cycles, not
  the datasheet clock), so it is the number comparable with the reference study;
* ``vs-roofline``: FLOP/s over min(peak FLOP/s, AI x peak bandwidth), AI = FLOPs / bytes; says
  whether memory or compute bounds the kernel, which "% of FLOP peak" alone hides (add and mul
  reach ~0.25 % of the FLOP peak in the study but ~65 % of bandwidth).

Every function is safe on missing inputs: it returns what it can and nothing else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpuprof.devices.peaks import Peaks
from gpuprof.model.units import human

VS_DATASHEET = "vs-datasheet-peak"
VS_RUN_CLOCK = "vs-peak-at-run-clock"
VS_ROOFLINE = "vs-roofline"
FLOP_RATE = "FLOP/second"
BYTE_RATE = "byte/second"
SUSPECT = 105.0  # % of a calibrated ceiling beyond which the ceiling, not the run, is in doubt


@dataclass(frozen=True)
class Efficiency:
    """``percent`` of ``ceiling`` (in ``unit``); ``bound`` only for the roofline kind."""

    kind: str
    percent: float
    ceiling: float
    unit: str
    basis: str
    bound: str | None = None

    @property
    def against(self) -> str:
        """What it divides by, as its key says it (:func:`gpuprof.model.quantities.efficiency_key`):
        'roofline', 'run_clock' (the FLOP peak at the clock measured), 'bandwidth' or '' (the FLOP peak)."""
        if self.kind == VS_ROOFLINE:
            return "roofline"
        if self.kind == VS_RUN_CLOCK:
            return "run_clock"
        return "" if self.unit == FLOP_RATE else "bandwidth"


def _positive(value: float | None) -> float | None:
    """``value`` when it is a finite positive number, else None (missing, zero or NaN)."""
    return value if value is not None and math.isfinite(value) and value > 0 else None


def _clock(hz: float | None) -> str:
    return human(hz, "hertz") if _positive(hz) else "an unstated clock"


def compute_ceiling(peaks: Peaks, dtype: str, clock_hz: float | None = None) -> tuple[float, str] | None:
    """Peak FLOP/s for ``dtype``, scaled to ``clock_hz`` when both clocks are known; with its basis."""
    peak = _positive(peaks.flops_for(dtype))
    if peak is None:
        return None
    run, table = _positive(clock_hz), _positive(peaks.clock_hz)
    if run is None or table is None:
        return peak, f"{dtype} peak {human(peak, FLOP_RATE)} at {_clock(table)} ({peaks.origin})"
    scaled = peak * run / table
    return scaled, (
        f"{dtype} peak {human(peak, FLOP_RATE)} at {_clock(table)} scaled to the run clock "
        f"{_clock(run)} = {human(scaled, FLOP_RATE)} ({peaks.origin})"
    )


def roofline_ceiling(
    ai: float | None, peaks: Peaks, dtype: str, clock_hz: float | None = None
) -> tuple[float, str, str] | None:
    """min(peak FLOP/s, AI x bandwidth): the attainable FLOP/s at intensity ``ai``, the bound
    ("memory" or "compute") and the basis text; None without a FLOP peak, bandwidth or AI."""
    compute = compute_ceiling(peaks, dtype, clock_hz)
    bandwidth, ai = _positive(peaks.bandwidth), _positive(ai)
    if compute is None or bandwidth is None or ai is None:
        return None
    memory = ai * bandwidth
    if memory < compute[0]:
        return (
            memory,
            "memory",
            (f"AI {ai:.4g} FLOP/byte x peak bandwidth {human(bandwidth, BYTE_RATE)} ({peaks.origin})"),
        )
    return compute[0], "compute", compute[1]


def efficiencies(
    flop_rate: float | None, byte_rate: float | None, dtype: str, peaks: Peaks, clock_hz: float | None = None
) -> list[Efficiency]:
    """Every efficiency the inputs allow (see the module docstring); ``clock_hz`` is the SM/core
    clock the kernel ran at, when known."""
    found: list[Efficiency] = []
    flop_rate, byte_rate = _positive(flop_rate), _positive(byte_rate)
    peak, bandwidth = _positive(peaks.flops_for(dtype)), _positive(peaks.bandwidth)
    if flop_rate is not None and peak is not None:
        found.append(
            Efficiency(
                VS_DATASHEET,
                100 * flop_rate / peak,
                peak,
                FLOP_RATE,
                f"{dtype} peak {human(peak, FLOP_RATE)} at {_clock(peaks.clock_hz)} ({peaks.origin}, {peaks.device})",
            )
        )
        if _positive(clock_hz) and _positive(peaks.clock_hz):
            ceiling, basis = compute_ceiling(peaks, dtype, clock_hz) or (peak, "")
            found.append(Efficiency(VS_RUN_CLOCK, 100 * flop_rate / ceiling, ceiling, FLOP_RATE, basis))
    if byte_rate is not None and bandwidth is not None:
        found.append(
            Efficiency(
                VS_DATASHEET,
                100 * byte_rate / bandwidth,
                bandwidth,
                BYTE_RATE,
                f"peak bandwidth {human(bandwidth, BYTE_RATE)} ({peaks.origin}, {peaks.device})",
            )
        )
    if flop_rate is not None and byte_rate is not None:
        roof = roofline_ceiling(flop_rate / byte_rate, peaks, dtype, clock_hz)
        if roof is not None:
            ceiling, bound, basis = roof
            found.append(
                Efficiency(
                    VS_ROOFLINE,
                    100 * flop_rate / ceiling,
                    ceiling,
                    FLOP_RATE,
                    f"roofline, {bound}-bound: {basis}",
                    bound,
                )
            )
    return found


@dataclass(frozen=True)
class RunClock:
    """The clock a run recorded: Hz and how it was measured, or None and why it is unknown."""

    hz: float | None
    source: str


def above_100(eff: Efficiency, peaks: Peaks, clock: RunClock, cache: str | None = None) -> str | None:
    """Why ``eff`` is above 100 % ('above <ceiling>: <cause>'), from what its ceiling assumed and how
    the run was measured; None at or below 100 %. A FLOP ceiling is never explained by caches
    (they cannot add FLOPs), and a run more than :data:`SUSPECT` % of a calibrated ceiling says the
    ceiling is suspect. The words do not depend on the run's numbers, so rows share a reason."""
    if eff.percent <= 100:
        return None
    memory = eff.unit == BYTE_RATE or eff.bound == "memory"
    if memory and cache == "warm":
        return (
            "above the memory ceiling: the operands stayed in cache between repeats (--cache warm), which is "
            "faster than memory; use --cache cold or a --size well above the last-level cache"
        )
    if peaks.origin == "calibrated":
        what = "the calibrated bandwidth" if memory else "the calibrated FLOP/s ceiling"
        if eff.percent <= SUSPECT:
            return f"above {what}, within its noise (a calibration is the fastest of a few calls)"
        return (
            f"above {what}: the ceiling is suspect (measured on a busy host or at a lower clock); "
            "rerun 'gpuprof calibrate' when the host is idle"
        )
    if memory:
        return f"above the memory ceiling ({peaks.origin}): that bandwidth is below what the run read"
    peak_clock = _positive(peaks.clock_hz)
    if eff.kind != VS_RUN_CLOCK and peak_clock is not None:
        if _positive(clock.hz) and clock.hz > peak_clock:  # type: ignore[operator]
            return (
                f"above a peak at {_clock(peak_clock)}: the cores ran faster ({clock.source.split(':')[0]}); "
                "see the efficiency at the run clock"
            )
        if not _positive(clock.hz):
            return (
                f"above a peak at {_clock(peak_clock)}, a clock the cores exceed under load (turbo); the run "
                f"clock is {clock.source}"
            )
    causes = [n for n in peaks.notes if n.startswith("FMA units assumed")]
    if "probe" in clock.source:
        causes.append("the clock was probed on one core after the repeats, not counted over them")
    return "above the peak at the run clock: " + (
        "; ".join(causes) or f"its ceiling ({peaks.source}) does not fit this device"
    )


def implied_peak(rate: float | None, percent: float | None) -> float | None:
    """The ceiling a tool divided by: ``rate / (percent / 100)`` (e.g. nvprof flop_sp_efficiency)."""
    rate, percent = _positive(rate), _positive(percent)
    return rate / (percent / 100) if rate is not None and percent is not None else None


def implied_clock_hz(implied: float | None, peaks: Peaks, dtype: str) -> float | None:
    """The clock at which ``peaks`` would equal ``implied``: peak FLOP/s scale with the SM clock."""
    implied, peak, clock = _positive(implied), _positive(peaks.flops_for(dtype)), _positive(peaks.clock_hz)
    if implied is None or peak is None or clock is None:
        return None
    return clock * implied / peak
