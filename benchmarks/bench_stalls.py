"""Stall ranking as column expressions (issue #25 item 5) against the loop it replaced, in the same run.

Builds runs of 10,000 and 50,000 launches from a real fixture's stall rows (the A100 ``ncu
--print-summary per-gpu`` excerpt: warp-state ratios and PC-sampling counts, some given as
identical Minimum/Maximum; each launch a copy of its rows under a new launch ID) and times
:func:`gpuprof.derive.stalls.stall_table` (the ranking) and ``stall_profiles`` (the same as objects,
for the explanations) against the pre-#25 ``stall_profiles``, copied below as the baseline. Each
side starts from the run as a reader returns it (no Launch objects built yet), best of three.
Checks that both give the same shares (to 1e-12) before timing. Target: ranking >= 10x faster at
both sizes. Not part of the test suite: ``python benchmarks/bench_stalls.py [--sizes 10000 50000]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import astuple, dataclass
from pathlib import Path

import numpy as np

from gpuprof.derive import stalls
from gpuprof.derive.stalls import NVPROF, PREFERENCE, StallProfile, classify, describe
from gpuprof.model import MEASURED, Launch, Metric, Run
from gpuprof.readers import read

FIXTURE = (
    Path(__file__).resolve().parent.parent
    / "tests"
    / "fixtures"
    / "profiler-outputs"
    / "ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log"
)


# ---- BASELINE: the implementation before issue #25 (gpuprof/derive/stalls.py at 145f390), verbatim ----


@dataclass(frozen=True)
class StallShare:  # a named tuple since
    reason: str
    label: str
    metric: str
    value: float
    share: float


def old_metric_value(metric: Metric) -> float | None:
    if metric.minimum is not None and metric.minimum == metric.maximum:
        return float(metric.minimum)
    return float(metric.value) if isinstance(metric.value, int | float) else None


def old_stall_metrics(launch: Launch) -> dict[str, dict[str, tuple[Metric, float]]]:
    found: dict[str, dict[str, tuple[Metric, float]]] = {}
    for metric in launch.metrics:
        kind = classify(metric.name) or (classify(metric.canonical) if metric.canonical else None)
        value = old_metric_value(metric)
        if kind is None or value is None or metric.origin != MEASURED:
            continue
        basis, reason = kind
        found.setdefault(basis, {}).setdefault(reason, (metric, value))
    return found


def old_profile(launch: Launch, device: str, basis: str, values: dict[str, tuple[Metric, float]]) -> StallProfile:
    family = NVPROF if basis == NVPROF else "ncu"
    stalls_ = {r: mv for r, mv in values.items() if describe(family, r).get("stall", True)}
    if basis == NVPROF:
        shares = {r: v / 100.0 for r, (_, v) in stalls_.items()}
        coverage = sum(shares.values())
    else:
        total = sum(v for _, v in stalls_.values())
        shares = {r: (v / total if total > 0 else 0.0) for r, (_, v) in stalls_.items()}
        coverage = 1.0
    items = sorted(
        (StallShare(r, describe(family, r)["label"], m.name, v, shares[r]) for r, (m, v) in stalls_.items()),
        key=lambda s: (-s.share, s.reason),
    )
    return StallProfile(launch.kernel, device, launch.index, basis, tuple(items), coverage)


def old_stall_profiles(run: Run, basis: str | None = None) -> list[StallProfile]:
    if basis is not None and basis not in PREFERENCE:
        raise ValueError(f"unknown basis {basis!r}")
    profiles = []
    for launch in run.launches:
        found = old_stall_metrics(launch)
        chosen = basis if basis is not None else next((b for b in PREFERENCE if b in found), None)
        if chosen in found:
            device = launch.device or str(run.device.get("name", ""))
            profiles.append(old_profile(launch, device, chosen, found[chosen]))
    return profiles


# ---- end of baseline ----


def same_shares(old: list[StallProfile], new: list[StallProfile]) -> float:
    """The largest difference of any share between the two (raises when the rankings differ)."""
    assert len(old) == len(new), (len(old), len(new))
    worst = 0.0
    for a, b in zip(old, new):
        assert (a.kernel, a.device, a.launch, a.basis) == (b.kernel, b.device, b.launch, b.basis)
        assert [s.reason for s in a.reasons] == [s.reason for s in b.reasons], (a.reasons, b.reasons)
        assert [astuple(s)[:4] for s in a.reasons] == [tuple(s)[:4] for s in b.reasons]  # reason, label, metric, value
        worst = max(
            [worst, abs(a.coverage - b.coverage), *(abs(x.share - y.share) for x, y in zip(a.reasons, b.reasons))]
        )
    return worst


def stall_run(launches: int) -> Run:
    """``launches`` copies of the fixture's stall rows, each copy a launch with its own ID."""
    source = read(FIXTURE)
    metrics = source.metric_table
    kinds = [classify(str(name)) for name in metrics["metric"].cat.categories]
    stall_rows = metrics[np.array([kinds[c] is not None for c in metrics["metric"].cat.codes])]
    stall_rows = stall_rows[stall_rows["launch"] == 0]
    per = len(stall_rows)
    tiled = stall_rows.iloc[np.tile(np.arange(per), launches)].reset_index(drop=True)
    tiled["launch"] = np.repeat(np.arange(launches, dtype=np.int32), per)
    first = source.launch_table.iloc[[0]]
    table = first.iloc[np.zeros(launches, dtype=int)].reset_index(drop=True)
    table["index"] = np.arange(launches, dtype=np.int64)
    return Run("import", source.format, source.source, device=dict(source.device), tables=(table, tiled))


def best(work: Callable[[], object], repeats: int = 3) -> float:
    fastest = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        fastest = min(fastest, time.perf_counter() - start)
    return fastest


def fresh(run: Run) -> Run:
    """The run as a reader returns it: its Launch objects not built yet."""
    run._views = None
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    args = parser.parse_args()
    for size in args.sizes:
        run = stall_run(size)
        rows = len(run.metric_table)
        for basis in (None, *(b for b in PREFERENCE if b in stalls.available_bases(run))):
            worst = same_shares(old_stall_profiles(fresh(run), basis), stalls.stall_profiles(fresh(run), basis))
            assert worst <= 1e-12, worst
        old = best(lambda run=run: old_stall_profiles(fresh(run)))
        table = best(lambda run=run: stalls.stall_table(fresh(run)))
        objects = best(lambda run=run: stalls.stall_profiles(fresh(run)))
        print(
            f"{size:,} launches x {rows // size} stall rows ({rows:,} rows), bases {stalls.available_bases(run)}; "
            f"same shares on every basis (largest difference {worst:.1e})"
        )
        print(f"  baseline stall_profiles (loop over Launch objects)  {old:8.3f} s")
        print(
            f"  stall_table (column expressions)                    {table:8.3f} s   "
            f"ratio {old / table:6.1f}x (target >= 10)"
        )
        print(f"  stall_profiles (the table as objects)               {objects:8.3f} s   ratio {old / objects:6.1f}x")


if __name__ == "__main__":
    main()
