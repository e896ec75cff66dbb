"""CPU analogue of the warp-stall drill-down: Top-Down level 1 (frontend bound, bad speculation,
backend bound, retiring) from a ``perf-topdown`` Run, ranked and explained.

Values are percentages of pipeline slots as perf printed them (already shares; not renormalised).
Categories come from ``[topdown]`` in ``gpuprof/data/stalls.toml``. Pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuprof.derive.stalls import vocabulary
from gpuprof.model import Launch, Metric, Run

if TYPE_CHECKING:
    import pandas as pd

BASIS = "perf Top-Down level 1: percent of pipeline slots, as perf reports them"


@dataclass(frozen=True)
class TopdownShare:
    key: str  # frontend_bound | bad_speculation | backend_bound | retiring
    label: str
    metric: str  # the name perf printed
    percent: float


@dataclass(frozen=True)
class TopdownBreakdown:
    workload: str
    scope: str  # "S0-C0", "t=1.001141351 s", "cpu_core" or ""
    shares: tuple[TopdownShare, ...]  # ranked, largest first
    memory_bound: float | None = None  # level-2 split of backend bound, when recorded
    core_bound: float | None = None

    @property
    def total(self) -> float:
        return sum(s.percent for s in self.shares)


def _scope(launch: Launch) -> str:
    attributes = launch.attributes
    if "core" in attributes:
        return attributes["core"]
    if "time_s" in attributes:
        return f"t={attributes['time_s']} s"
    return attributes.get("pmu", "")


def _find(launch: Launch, names: Sequence[str]) -> Metric | None:
    """The first numeric metric printed under one of ``names``."""
    return next((m for m in launch.metrics if m.name in names and isinstance(m.value, int | float)), None)


def _percent(launch: Launch, names: Sequence[str]) -> float | None:
    metric = _find(launch, names)
    return float(metric.value) if metric is not None else None  # type: ignore[arg-type]


def topdown_breakdowns(run: Run) -> list[TopdownBreakdown]:
    """One breakdown per launch (core, interval or whole run) carrying level-1 values."""
    categories = vocabulary()["topdown"]
    backend = categories["backend_bound"]
    names = {name for spec in categories.values() for name in spec["names"]}
    if names.isdisjoint(run.metric_table["metric"].cat.categories):  # the run's Launch objects are not built
        return []
    result = []
    for launch in run.launches:
        shares = []
        for key, spec in categories.items():
            metric = _find(launch, spec["names"])
            if metric is not None:
                shares.append(TopdownShare(key, spec["label"], metric.name, float(metric.value)))
        if shares:
            shares.sort(key=lambda s: (-s.percent, s.key))
            result.append(
                TopdownBreakdown(
                    launch.kernel,
                    _scope(launch),
                    tuple(shares),
                    _percent(launch, backend["memory_names"]),
                    _percent(launch, backend["core_names"]),
                )
            )
    return result


def explain_topdown(breakdown: TopdownBreakdown) -> str:
    """Two or three sentences: which category dominates, what it suggests, what usually helps."""
    top = breakdown.shares[0]
    spec = vocabulary()["topdown"][top.key]
    where = f"{breakdown.workload} [{breakdown.scope}]" if breakdown.scope else breakdown.workload
    lead = f"{top.label} dominates ({top.percent:.1f}% of pipeline slots)"
    if len(breakdown.shares) > 1:
        second = breakdown.shares[1]
        lead += f", then {second.label.lower()} ({second.percent:.1f}%)"
    suggests = spec["suggests"]
    if top.key == "backend_bound" and breakdown.memory_bound is not None and breakdown.core_bound is not None:
        side = "memory-bound" if breakdown.memory_bound > breakdown.core_bound else "core-bound (execution units busy)"
        suggests += (
            f"; level 2 puts {breakdown.memory_bound:.1f}% on memory and "
            f"{breakdown.core_bound:.1f}% on the core, so it is {side}"
        )
    sentences = [f"{where}: {lead}.", f"This suggests {suggests}."]
    if abs(breakdown.total - 100.0) > 2.0:
        sentences.append(
            f"The recorded categories add up to {breakdown.total:.1f}%, not 100%: "
            "the output was trimmed or a category is missing."
        )
    else:
        sentences.append(f"What usually helps: {spec['fix'][0].lower()}{spec['fix'][1:]}")
    return " ".join(sentences)


def topdown_frame(breakdowns: Sequence[TopdownBreakdown]) -> pd.DataFrame:
    """One row per breakdown x category, ranked, for rendering."""
    import pandas as pd

    rows = [
        {
            "workload": b.workload,
            "scope": b.scope,
            "rank": rank,
            "category": s.key,
            "label": s.label,
            "pct_of_slots": s.percent,
            "metric": s.metric,
            "origin": "measured",
        }
        for b in breakdowns
        for rank, s in enumerate(b.shares, start=1)
    ]
    columns = ["workload", "scope", "rank", "category", "label", "pct_of_slots", "metric", "origin"]
    return pd.DataFrame(rows, columns=columns)
