"""What ``gpuprof profile`` (and ``gpuprof show`` of a profile) prints: per kernel for a GPU profile
(``derive.kernel_table`` plus the top stall reasons), every counted and derived quantity with its
origin for a CPU profile."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpuprof.derive.cpu_flops import flops_by_dtype, flops_from_events
from gpuprof.derive.kernel_table import kernel_table
from gpuprof.derive.region_counters import consistency_frame, counts_from_regions, mix_frame
from gpuprof.derive.regions import region_frame, without_regions
from gpuprof.derive.stalls import SHARE_OF, stall_profiles
from gpuprof.derive.topdown import BASIS, topdown_breakdowns
from gpuprof.model import DERIVED, MEASURED, TIMED, Run
from gpuprof.model.units import human
from gpuprof.render import emit

if TYPE_CHECKING:
    import pandas as pd

TOP_STALLS = 3
REGION_ROWS = 20  # region instances printed after a profile
STALL_COLUMN = "top stall reasons (share)"


def _top_stalls(run: Run) -> dict[str, str]:
    """Per kernel, its leading stall reasons: the share of each, averaged over the kernel's launches."""
    shares: dict[str, dict[str, list[float]]] = {}
    basis: dict[str, str] = {}
    for profile in stall_profiles(run):
        for item in profile.reasons:
            shares.setdefault(profile.kernel, {}).setdefault(item.label, []).append(item.share)
        basis[profile.kernel] = SHARE_OF[profile.basis]
    out = {}
    for kernel, reasons in shares.items():
        mean = sorted(((sum(v) / len(v), label) for label, v in reasons.items()), key=lambda x: (-x[0], x[1]))
        out[kernel] = ", ".join(f"{label} {100 * share:.1f}%" for share, label in mean[:TOP_STALLS] if share > 0)
        out[kernel] += f" ({basis[kernel]})" if out[kernel] else ""
    return out


def kernel_frame(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per kernel (per process when there are several runs): the per-kernel table gpuprof
    import prints, and the top stall reasons where the profile has them."""
    import pandas as pd

    frames = []
    for run in runs:
        table = kernel_table([without_regions(run)]).drop(columns=["file"], errors="ignore")
        if table.empty:
            continue
        stalls = _top_stalls(run)
        if stalls:
            table.insert(len(table.columns) - 1, STALL_COLUMN, [stalls.get(k, "") for k in table["kernel"]])
        if len(runs) > 1:
            table.insert(0, "process", str(run.environment.get("process", "")))
        frames.append(table)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _row(
    quantity: str, value: float | str | None, unit: str, origin: str, basis: str, people: bool
) -> dict[str, object]:
    shown = human(value, "" if unit == "event" else unit) if people and isinstance(value, (int, float)) else value
    return {
        "quantity": quantity,
        "value": shown,
        **({} if people else {"unit": unit}),
        "origin": origin,
        "basis": basis,
    }


def cpu_frame(run: Run, people: bool = True) -> pd.DataFrame:
    """Every quantity of a CPU profile with its origin: wall time, perf's counts, counted FLOPs and
    FLOP/s against the CPU's theoretical peak, CPUs used, Top-Down level 1."""
    import pandas as pd

    [launch] = without_regions(run).launches
    perf = f"perf stat ({run.environment.get('profiler_version') or 'perf'}), the whole command"
    wall = launch.value("wall time")
    rows = [_row("wall time", wall, "second", TIMED, run.environment["wall_time"]["basis"], people)]
    topdown = {s.metric for b in topdown_breakdowns(run) for s in b.shares}
    for metric in launch.metrics:
        if metric.origin == MEASURED and metric.name not in topdown:
            rows.append(_row(metric.name, metric.value, metric.unit, MEASURED, perf, people))
    elapsed = launch.value("time elapsed")
    seconds = elapsed if isinstance(elapsed, float) and elapsed > 0 else wall
    busy = launch.value("task-clock")
    if isinstance(busy, float) and isinstance(seconds, float) and seconds > 0:
        rows.append(_row("CPUs used", busy / seconds, "", DERIVED, "task-clock / elapsed time", people))
    counted = flops_from_events(launch.metrics)
    if counted and isinstance(seconds, float) and seconds > 0:
        peaks = run.device.get("peaks", [{}])[0]
        for dtype, flops in flops_by_dtype(launch.metrics).items():
            rows.append(_row(f"FLOPs counted ({dtype})", flops, "FLOP", MEASURED, counted[1], people))
            rows.append(
                _row(
                    f"FLOP/s ({dtype})", flops / seconds, "FLOP/second", DERIVED, "counted FLOPs / elapsed time", people
                )
            )
            peak = peaks.get("flops", {}).get(dtype)
            if peak:
                rows.append(
                    _row(
                        f"efficiency vs peak ({dtype})",
                        100 * flops / seconds / peak,
                        "%",
                        DERIVED,
                        f"of {peaks.get('source', 'the theoretical peak')}",
                        people,
                    )
                )
    for breakdown in topdown_breakdowns(run):
        for share in breakdown.shares:
            rows.append(_row(f"Top-Down: {share.label}", share.percent, "%", MEASURED, BASIS, people))
    return pd.DataFrame(rows)


def profile_report(runs: Sequence[Run], fmt: str) -> str:
    """The table of one profile's runs (one per process), in ``fmt``; "" when a GPU profile read no kernel."""
    if runs and runs[0].device.get("kind") == "cpu":
        shown = emit(
            cpu_frame(runs[0], people=fmt in ("table", "markdown")),
            fmt,
            title="CPU profile (perf stat around the whole command)",
        )
    else:
        frame = kernel_frame(runs)
        tool = runs[0].environment.get("profiler", "the profiler") if runs else ""
        shown = (
            ""
            if frame.empty
            else emit(
                frame,
                fmt,
                title=f"Profiled kernels (measured by {tool}; base units; values per launch, rates time-weighted)",
            )
        )
    if fmt in ("csv", "json") or not runs:
        return shown  # one table stays whole; the regions as data: gpuprof.region_table(run)
    regions = region_frame(runs[0])
    if regions.empty:
        return shown
    listed = regions.head(REGION_ROWS)
    empty = [c for c in ("rank", "unclosed") if (listed[c] == "").all()]
    same = ["thread"] if (listed["thread"] == listed["process"]).all() else []  # main threads only
    listed = listed.drop(columns=empty + same)
    title = "Regions of the program (one row per instance, wall time timed on CLOCK_MONOTONIC)" + (
        f"; first {REGION_ROWS} of {len(regions)}" if len(regions) > REGION_ROWS else ""
    )
    parts = [shown, emit(listed, fmt, title=title)]
    counts = counts_from_regions(runs[0])
    if not counts.empty:
        mix = mix_frame(counts).dropna(axis=1, how="all").head(REGION_ROWS)
        parts.append(
            emit(
                mix.reset_index(names="launch"),
                fmt,
                title=(
                    "Counters per region (shares of perf stat -I intervals by time, derived; ratios derived; "
                    "blank: not counted)"
                    if runs[0].environment.get("counters", {}).get("backend") == "perf stat -I"
                    else "Counters per region (measured counts; ratios derived; blank: not counted)"
                ),
            )
        )
        gaps = consistency_frame(counts)
        if not gaps.empty:
            parts.append(
                emit(
                    gaps.dropna(axis=1, how="all"),
                    fmt,
                    title="Consistency per parent: sum of its children's counts / its own - 1",
                )
            )
    return "\n\n".join(part for part in parts if part)
