"""Energy per call, per FLOP and FLOP/s per watt, from the energy a run's meter recorded.

Pure functions of a stored :class:`gpuprof.model.Run`, like :mod:`gpuprof.derive.summary`: the
meter (:mod:`gpuprof.energy`) stores ``energy`` (joules over all timed repeats) and its power
samples in one launch whose ``invocations`` is the number of repeats; everything here is derived
from those and from the op's analytic FLOP count. A run without an energy launch gives nothing.
"""

from __future__ import annotations

from typing import Any

from gpuprof.derive.quantity import Quantity, reported
from gpuprof.model import DERIVED, MEASURED, Launch, Run
from gpuprof.model.quantities import column
from gpuprof.workloads import ops

PICO = 1e12
GIGA = 1e9


def energy_launch(run: Run) -> Launch | None:
    """The launch holding the meter's metrics, if the run was metered."""
    for launch in run.launches:
        if isinstance(launch.value("energy"), (int, float)):
            return launch
    return None


def _number(launch: Launch, key: str) -> float | None:
    value = launch.value(key)
    return float(value) if isinstance(value, (int, float)) else None


def energy_quantities(run: Run) -> list[Quantity]:
    """Energy numbers for ``gpuprof run`` and ``show``, in reading order; [] for an unmetered run."""
    launch = energy_launch(run)
    if launch is None:
        return []
    total = float(launch.value("energy"))  # type: ignore[arg-type]
    calls = max(launch.invocations, 1)
    method = launch.value("energy method") or "energy meter"
    per_call = total / calls
    out = [
        reported("energy", total, MEASURED, f"{method}; {calls} timed calls"),
        reported("energy_per_call", per_call, DERIVED, f"measured energy / {calls} calls"),
    ]
    average, low, high = (_number(launch, k) for k in ("power_avg", "power_min", "power_max"))
    samples, interval = _number(launch, "energy samples"), _number(launch, "energy sampling interval")
    if average is not None:
        spread = f"; samples {low:.4g}-{high:.4g} W" if low is not None and high is not None else ""
        every = f", {samples:.0f} samples every {interval:g} s" if samples and interval else ""
        out.append(reported("power", average, DERIVED, f"energy / metered time{spread}{every}"))
    w = run.workload or {}
    if w.get("op") in ops.OPS and w.get("shape"):
        flops = float(ops.flops(w["op"], tuple(w["shape"])))
        if flops > 0 and per_call > 0:
            out += [
                reported("energy_per_flop", per_call / flops * PICO, DERIVED, "energy per call / analytic FLOPs"),
                reported(
                    "flop_rate_per_watt",
                    flops / per_call / GIGA,
                    DERIVED,
                    "analytic FLOPs per joule (FLOP/s per watt) / 1e9",
                ),
            ]
    return out


def energy_columns(run: Run) -> dict[str, Any]:
    """Summary-row columns (J/call, W, pJ/FLOP, GFLOP/s/W: :data:`gpuprof.model.quantities.COLUMNS`) for a
    metered run; {} otherwise."""
    shown = [(column(q.key), q.value) for q in energy_quantities(run)]
    return {c.name: value for c, value in shown if c is not None}


def energy_basis(run: Run) -> str:
    """How a run's energy was measured (method and sampling), or why it has none: one line for the
    sources table of ``compare``."""
    launch = energy_launch(run)
    if launch is None:
        reasons = [n for n in run.notes if "energy not measured" in n or n.startswith("energy (")]
        return reasons[0] if reasons else "no energy recorded with this run"
    method = launch.value("energy method") or "energy meter"
    interval = _number(launch, "energy sampling interval")
    every = f", sampled every {interval:g} s" if interval else ""
    return f"{MEASURED}: {method}{every}; J/call over {max(launch.invocations, 1)} timed repeats"
