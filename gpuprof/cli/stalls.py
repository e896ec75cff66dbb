"""``gpuprof stalls``: why do warps (or CPU pipeline slots) not issue? Ranked reasons, explained.

``gpuprof stalls FILE...`` reads any profiler output gpuprof recognises (nvprof metrics, ncu CSV /
text / .ncu-rep, the ncu source page, perf Top-Down) on any machine. ``--op/--size`` measures live:
on a GPU through the GPU session, on the CPU through perf's Top-Down counters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gpuprof.cli.common import echo, format_option, handle_errors, note

if TYPE_CHECKING:
    from gpuprof.derive.stalls import HotSpot, StallProfile
    from gpuprof.derive.topdown import TopdownBreakdown
    from gpuprof.model import Run

OPS = ("add", "mul", "dot", "scalar", "sigmoid", "tanh")
BASES = ("ratio", "pct", "pcsamp", "nvprof")


@dataclass
class Findings:
    """Everything the inputs gave: GPU stall profiles, source hot spots, CPU Top-Down breakdowns."""

    profiles: list[StallProfile] = field(default_factory=list)
    hot_spots: list[tuple[str, list[HotSpot]]] = field(default_factory=list)
    topdown: list[TopdownBreakdown] = field(default_factory=list)
    hint: str = ""


def _hot_spots(path: Path, run: Run, kernel: str | None, top: int,
               reason: str | None) -> list[tuple[str, list[HotSpot]]]:
    """Per-instruction hot spots when the input has them (source-page CSV or .ncu-rep)."""
    from gpuprof.derive.stalls import hot_spots
    from gpuprof.readers import ncu_source_csv

    if run.format == ncu_source_csv.NAME:
        per_kernel = ncu_source_csv.instructions(path)
    elif path.suffix == ".ncu-rep":
        per_kernel = ncu_source_csv.rep_instructions(path)
    else:
        return []
    return [(name, hot_spots(rows, top, reason)) for name, rows in per_kernel.items()
            if not kernel or kernel in name]


def _add_run(findings: Findings, run: Run, path: Path | None, basis: str | None, kernel: str | None,
             top: int, reason: str | None) -> None:
    from gpuprof.derive.stalls import stall_profiles
    from gpuprof.derive.topdown import topdown_breakdowns
    from gpuprof.errors import InputError

    from_topdown = topdown_breakdowns(run)
    profiles = [p for p in stall_profiles(run, basis) if not kernel or kernel in p.kernel]
    spots = _hot_spots(path, run, kernel, top, reason) if path is not None else []
    if not (from_topdown or profiles or spots):
        where = path or run.source
        raise InputError(f"{where}: no stall metrics" + (f" for kernel '{kernel}'" if kernel else "")
                         + (f" on basis '{basis}'" if basis else ""),
                         "collect them with nvprof --metrics stall_..., ncu --section WarpStateStats "
                         "--section SourceCounters, or perf stat --topdown / -M TopdownL1")
    findings.topdown += from_topdown
    findings.profiles += profiles
    findings.hot_spots += spots
    if run.workload and run.workload.get("op"):
        findings.hint = str(run.workload["op"])


def _live(op: str, size: str, device: str) -> Run:
    """Measure live: Top-Down through perf on the CPU, warp stalls through the GPU session on CUDA."""
    if device == "cpu":
        from gpuprof.launch.topdown import record_topdown

        return record_topdown(op, size)
    return _live_gpu(op, size)


def _live_gpu(op: str, size: str) -> Run:
    """One ``gpuprof run`` on the GPU. The GPU session asks ncu for the catalog's metrics, which
    include the warp-state percentages (nvprof: the stall_* metrics), so its profiled launches carry
    a stall profile; without a GPU it raises the no-GPU DeviceError."""
    import sys

    from gpuprof.measure import RunSettings, measure

    return measure(RunSettings(op=op, size=size, device="cuda", command=" ".join(["gpuprof", *sys.argv[1:]])))


def _panels(findings: Findings) -> tuple[list[tuple[str, list[tuple[str, float]]]], str, str]:
    from gpuprof.derive.stalls import BASIS_TEXT
    from gpuprof.derive.topdown import BASIS

    if findings.profiles:
        panels = [(f"{p.device}  " + (f"[reasons collected: {100 * p.coverage:.1f}% of stalls]  "
                                      if p.coverage < 0.95 else "") + p.kernel,
                   [(s.label, 100 * s.share) for s in p.reasons if s.share > 0])
                  for p in findings.profiles]
        bases = sorted({p.basis for p in findings.profiles})
        footer = "Basis: " + "; ".join(BASIS_TEXT[b] for b in bases) + ". Origin: measured."
        return panels, "% of stall cycles", footer
    panels = [(f"{b.workload} {b.scope}".strip(), [(s.label, s.percent) for s in b.shares])
              for b in findings.topdown]
    return panels, "% of pipeline slots", f"Basis: {BASIS}. Origin: measured."


def _report(findings: Findings, fmt: str, show_zero: bool, hot_only: bool) -> None:
    from gpuprof.derive.stalls import BASIS_TEXT, explain, hot_spots_frame, profiles_frame
    from gpuprof.derive.topdown import BASIS, explain_topdown, topdown_frame
    from gpuprof.render import emit

    explanations = [explain(p, findings.hint) for p in findings.profiles]
    explanations += [explain_topdown(b) for b in findings.topdown]
    spot_frames = [hot_spots_frame(spots, name) for name, spots in findings.hot_spots]
    machine = fmt in ("csv", "json")
    if machine:
        import pandas as pd

        if hot_only or not (findings.profiles or findings.topdown):
            frame = pd.concat(spot_frames, ignore_index=True) if spot_frames else hot_spots_frame([])
        elif findings.profiles:
            frame = profiles_frame(findings.profiles, show_zero)
        else:
            frame = topdown_frame(findings.topdown)
        echo(emit(frame, fmt))
        for line in explanations:
            note(line)
        return
    blocks = []
    if findings.profiles and not hot_only:
        for profile in findings.profiles:
            frame = profiles_frame([profile], show_zero).drop(columns=["device", "kernel", "basis"])
            where = f"{profile.device}: " if profile.device else ""
            blocks.append(emit(frame, fmt, title=f"Warp stall reasons, {where}{profile.kernel}"))
        bases = sorted({p.basis for p in findings.profiles})
        blocks.append("\n".join(f"Basis ({b}): {BASIS_TEXT[b]}." for b in bases))
    if findings.topdown and not hot_only:
        blocks.append(emit(topdown_frame(findings.topdown), fmt, title="CPU Top-Down level 1"))
        blocks.append(f"Basis: {BASIS}.")
    for (name, _), frame in zip(findings.hot_spots, spot_frames):
        blocks.append(emit(frame.drop(columns=["kernel"]), fmt,
                           title=f"Source hot spots (PC sampling, SASS), {name}"))
    if explanations and not hot_only:
        if fmt == "markdown":   # kernel names such as f<float>(T*) must not become HTML tags
            import html

            explanations = [html.escape(line, quote=False) for line in explanations]
        blocks.append("\n".join(explanations))
    echo("\n\n".join(blocks))


@click.command()
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--op", type=click.Choice(OPS), default=None, help="Measure this op live instead of reading files.")
@click.option("--size", default=None, help="Live: total bytes of all operands (6MB, 512KB ...).")
@click.option("--device", default="cuda", show_default=True, type=click.Choice(("cuda", "cpu")),
              help="Live: cuda = warp stalls on the GPU; cpu = Top-Down level 1 through perf.")
@click.option("--basis", type=click.Choice(BASES), default=None,
              help="Which ncu/nvprof values to rank on. Default: warp-state ratios, then "
                   "percentages, then PC-sampling counts, then nvprof percentages.")
@click.option("--kernel", default=None, help="Only kernels whose name contains this text.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(1), help="Hot-spot instructions to list.")
@click.option("--reason", default=None, help="Rank hot spots by this stall reason's samples (e.g. wait).")
@click.option("--hot-spots", "hot_only", is_flag=True, help="Print only the source hot-spot table.")
@click.option("--all", "show_zero", is_flag=True, help="Also list reasons with zero stall cycles.")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write a bar chart (.png or .svg).")
@format_option
@handle_errors
def stalls(files: tuple[Path, ...], op: str | None, size: str | None, device: str, basis: str | None,
           kernel: str | None, top: int, reason: str | None, hot_only: bool, show_zero: bool,
           plot: Path | None, fmt: str) -> None:
    """Rank the stall reasons of each kernel in FILES (or of a live --op run) and explain them."""
    from gpuprof.errors import InputError
    from gpuprof.readers import read

    if files and op:
        raise InputError("give FILE arguments or --op/--size, not both", "run them as two commands")
    if not files and not op:
        raise InputError("nothing to analyse", "give profiler output files, or --op OP --size SIZE to measure")
    findings = Findings(hint=op or "")
    if op:
        if not size:
            raise InputError("--op needs --size", "e.g. gpuprof stalls --op dot --size 6MB")
        _add_run(findings, _live(op, size, device), None, basis, kernel, top, reason)
    for path in files:
        _add_run(findings, read(path), path, basis, kernel, top, reason)
    _report(findings, fmt, show_zero, hot_only)
    if plot is not None:
        from gpuprof.render.stall_plot import plot_shares

        panels, xlabel, footer = _panels(findings)
        written, left_out = plot_shares(panels, plot, xlabel, footer)
        note(f"plot written to {written}" + (f" ({left_out} panels left out; use --kernel)" if left_out else ""))
