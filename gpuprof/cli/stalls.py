"""``gpuprof stalls``: why do warps (or CPU pipeline slots) not issue? Ranked reasons, explained.

``gpuprof stalls FILE...`` reads any profiler output gpuprof recognises (nvprof metrics, ncu CSV /
text / .ncu-rep, the ncu source page, perf Top-Down) on any machine. ``--op/--size`` measures live:
on a GPU through the GPU session, on the CPU through perf's Top-Down counters. The work is in
gpuprof.stalls (gathering) and gpuprof.stalls.report (text and chart).
"""

from __future__ import annotations

from pathlib import Path

import click

from gpuprof.cli.common import command_line, echo, format_option, handle_errors, note, output_file
from gpuprof.derive.stalls import NVPROF, PCSAMP, PCT, RATIO
from gpuprof.workloads.ops import OPS

BASES = (RATIO, PCT, PCSAMP, NVPROF)


@click.command()
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--op", type=click.Choice(OPS), default=None, help="Measure this op live instead of reading files.")
@click.option("--size", default=None, help="Live: total bytes of all operands (6MB, 512KB ...).")
@click.option(
    "--device",
    default="cuda",
    show_default=True,
    type=click.Choice(("cuda", "cpu")),
    help="Live: cuda = warp stalls on the GPU; cpu = Top-Down level 1 through perf.",
)
@click.option(
    "--basis",
    type=click.Choice(BASES),
    default=None,
    help="Which ncu/nvprof values to rank on. Default: warp-state ratios, then "
    "percentages, then PC-sampling counts, then nvprof percentages.",
)
@click.option("--kernel", default=None, help="Only kernels whose name contains this text.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(1), help="Hot-spot instructions to list.")
@click.option("--reason", default=None, help="Rank hot spots by this stall reason's samples (e.g. wait).")
@click.option("--hot-spots", "hot_only", is_flag=True, help="Print only the source hot-spot table.")
@click.option("--all", "show_zero", is_flag=True, help="Also list reasons with zero stall cycles.")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    callback=output_file(".png", ".svg"),
    help="Also write a bar chart (.png or .svg).",
)
@format_option
@handle_errors
def stalls(
    files: tuple[Path, ...],
    op: str | None,
    size: str | None,
    device: str,
    basis: str | None,
    kernel: str | None,
    top: int,
    reason: str | None,
    hot_only: bool,
    show_zero: bool,
    plot: Path | None,
    fmt: str,
) -> None:
    """Rank the stall reasons of each kernel in FILES (or of a live --op run) and explain them."""
    from gpuprof.errors import InputError
    from gpuprof.model.stalls import known_reason
    from gpuprof.stalls import analyze_files, measure_live
    from gpuprof.stalls.report import stall_report, write_stall_plot

    if reason is not None:
        known_reason(reason)
    if files and op:
        raise InputError("give FILE arguments or --op/--size, not both", "run them as two commands")
    if not files and not op:
        raise InputError("nothing to analyse", "give profiler output files, or --op OP --size SIZE to measure")
    if op:
        if not size:
            raise InputError("--op needs --size", "e.g. gpuprof stalls --op dot --size 6MB")
        findings = measure_live(op, size, device, command_line(), basis, kernel)
    else:
        findings = analyze_files(files, basis, kernel, top, reason)
    text, notes = stall_report(findings, fmt, show_zero, hot_only)
    echo(text)
    for line in notes:
        note(line)
    if plot is not None:
        note(write_stall_plot(findings, plot))
