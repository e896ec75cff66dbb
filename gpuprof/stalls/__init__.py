"""Why warps (or CPU pipeline slots) do not issue: gather what the inputs say, from files or live.

The library half of ``gpuprof stalls``. :func:`analyze_files` reads any profiler output gpuprof
recognises (nvprof metrics, ncu CSV / text / .ncu-rep, the ncu source page, perf Top-Down) on any
machine; :func:`measure_live` measures one op, on a GPU through the GPU session, on the CPU through
perf's Top-Down counters. Both return one :class:`Findings` that the renderers turn into text, so the
CLI only parses options and prints. Heavy imports stay inside the functions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpuprof import measure as measuring
from gpuprof.derive.stalls import hot_spots, stall_table
from gpuprof.derive.topdown import topdown_breakdowns
from gpuprof.errors import InputError
from gpuprof.launch.topdown import record_topdown
from gpuprof.readers import ncu_source_csv, read

if TYPE_CHECKING:
    import pandas as pd

    from gpuprof.derive.stalls import HotSpot
    from gpuprof.derive.topdown import TopdownBreakdown
    from gpuprof.model import Run


@dataclass
class Findings:
    """Everything the inputs gave: GPU stall rankings (one :func:`~gpuprof.derive.stalls.stall_table`
    per run with stall metrics, kept as columns up to the renderer), source hot spots, CPU Top-Down
    breakdowns.

    ``hint`` is the op that ran (when known), which lets the explanations name what usually helps."""

    stalls: list[pd.DataFrame] = field(default_factory=list)
    hot_spots: list[tuple[str, list[HotSpot]]] = field(default_factory=list)
    topdown: list[TopdownBreakdown] = field(default_factory=list)
    hint: str = ""


def analyze_files(
    paths: Iterable[str | Path],
    basis: str | None = None,
    kernel: str | None = None,
    top: int = 10,
    reason: str | None = None,
) -> Findings:
    """Read each file and gather its stall profiles (on ``basis``), hot spots (the ``top`` instructions,
    ranked by ``reason``'s samples when given) and Top-Down breakdowns, keeping kernels whose name
    contains ``kernel``. A file that gives none of them raises InputError naming how to collect them."""
    findings = Findings()
    for path in map(Path, paths):
        _add_run(findings, read(path), path, basis, kernel, top, reason)
    return findings


def analyze_run(run: Run, basis: str | None = None, kernel: str | None = None) -> Findings:
    """:func:`analyze_files` for a run already read (``gpuprof.read``): its stall rankings and Top-Down
    breakdowns (hot spots need the file)."""
    findings = Findings()
    _add_run(findings, run, None, basis, kernel)
    return findings


def measure_live(
    op: str, size: str, device: str, command: str, basis: str | None = None, kernel: str | None = None
) -> Findings:
    """Measure ``op`` at ``size`` now: Top-Down through perf on the CPU (``device == "cpu"``), warp
    stalls through the GPU session otherwise. ``command`` is what the user typed, recorded on the GPU
    run so it can be repeated. Without the hardware this raises the DeviceError/ProfilerError that
    says what is missing."""
    findings = Findings(hint=op)
    _add_run(findings, _live_run(op, size, device, command), None, basis, kernel)
    return findings


def _live_run(op: str, size: str, device: str, command: str) -> Run:
    if device == "cpu":
        return record_topdown(op, size)
    # The GPU session asks ncu for the catalog's metrics, which include the warp-state percentages
    # (nvprof: the stall_* metrics), so its profiled launches carry a stall profile.

    return measuring.measure(measuring.RunSettings(op=op, size=size, device="cuda", command=command))


def _hot_spots(
    path: Path, run: Run, kernel: str | None, top: int, reason: str | None
) -> list[tuple[str, list[HotSpot]]]:
    """Per-instruction hot spots when the input has them (source-page CSV or .ncu-rep)."""
    if run.format == ncu_source_csv.NAME:
        per_kernel = ncu_source_csv.instructions(path)
    elif path.suffix == ".ncu-rep":
        per_kernel = ncu_source_csv.rep_instructions(path)
    else:
        return []
    return [(name, hot_spots(rows, top, reason)) for name, rows in per_kernel.items() if not kernel or kernel in name]


def _add_run(
    findings: Findings,
    run: Run,
    path: Path | None,
    basis: str | None,
    kernel: str | None,
    top: int = 10,
    reason: str | None = None,
) -> None:
    """Add one run's findings (hot spots only from a file); a run with none is an input error
    rather than an empty report."""
    from_topdown = topdown_breakdowns(run)
    ranked = stall_table(run, basis)
    if kernel:
        import numpy as np

        names = ranked["kernel"].cat
        ranked = ranked[np.array([kernel in name for name in names.categories], dtype=bool)[names.codes.to_numpy()]]
    spots = _hot_spots(path, run, kernel, top, reason) if path is not None else []
    if not (from_topdown or len(ranked) or spots):
        where = path or run.source
        raise InputError(
            f"{where}: no stall metrics"
            + (f" for kernel '{kernel}'" if kernel else "")
            + (f" on basis '{basis}'" if basis else ""),
            "collect them with nvprof --metrics stall_..., ncu --section WarpStateStats "
            "--section SourceCounters, or perf stat --topdown / -M TopdownL1",
        )
    findings.topdown += from_topdown
    if len(ranked):
        findings.stalls.append(ranked.reset_index(drop=True))
    findings.hot_spots += spots
    if run.workload and run.workload.get("op"):
        findings.hint = str(run.workload["op"])
