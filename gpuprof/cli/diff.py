"""``gpuprof diff A B``: two profiles, runs, stores or sweeps compared kernel by kernel, with a gate for CI."""

from __future__ import annotations

import sys

import click

from gpuprof.cli.common import echo, handle_errors, note, store_option
from gpuprof.diffing.report import FORMATS

EXIT_HELP = "Exit status: 0 passed (or no gate), 1 a gate regressed, 2 inconclusive or unusable input."


@click.command(epilog=EXIT_HELP)
@click.argument("a")
@click.argument("b")
@click.option(
    "--match",
    "how",
    type=click.Choice(("config", "name", "order")),
    default="config",
    show_default=True,
    help="Pair kernels by name + grid + block + NVTX range, by name + NVTX range, or by order of appearance.",
)
@click.option(
    "--fail-if",
    "fail_if",
    multiple=True,
    metavar="METRIC:±N%",
    help="Gate, repeatable: 'time:+5%' fails on a rise above 5 %, 'flop_rate:-3%' on a fall below -3 %. "
    "Two framework traces: 'op:+5%' (any op's total time), 'step:+5%' (any step's time).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="How to print (markdown: a pull-request comment; junit: one test case per kernel).",
)
@click.option(
    "--min-change",
    type=click.FloatRange(0, 1000),
    default=5.0,
    show_default=True,
    metavar="PCT",
    help="Smallest change (%) a verdict calls a change; a gate's limit where smaller.",
)
@click.option(
    "--gpu-a",
    default=None,
    metavar="NAME",
    help="A's GPU (a device-table name or key) where its files name none, as 'import --gpu'.",
)
@click.option("--gpu-b", default=None, metavar="NAME", help="B's GPU where its files name none.")
@store_option
@handle_errors
def diff(
    a: str,
    b: str,
    how: str,
    fail_if: tuple[str, ...],
    fmt: str,
    min_change: float,
    gpu_a: str | None,
    gpu_b: str | None,
    store_path: str | None,
) -> None:
    """Compare A with B: each a profiler file, a results store, a .jsonl run file, a stored run id
    (or prefix) or sweep:NAME. Per kernel and in total: time, FLOPs, FLOP/s, bytes, intensity,
    efficiencies, occupancy and stall reasons, with verdicts that tell a change from noise."""
    from gpuprof import tracing
    from gpuprof.diffing import diff as compare
    from gpuprof.diffing.report import header, render
    from gpuprof.errors import GpuprofError

    if tracing.is_trace(a) and tracing.is_trace(b):
        _diff_traces(a, b, fail_if, fmt)
        return
    gpus = (gpu_a, gpu_b)
    try:
        result = compare(a, b, how, fail_if, store_path, gpus, min_change / 100)
    except GpuprofError as error:
        error.exit_code = 2  # diff's contract: any unusable input exits 2
        raise
    if fmt not in ("table", "markdown"):  # what was compared goes to stderr: CSV, JSON and XML stay whole
        for line in header(result, gpus):
            note(line)
    echo(render(result, fmt, gpus))
    for outcome in result.gates:
        note(outcome.line)
    if not result.matched:
        note(
            f"nothing to compare: no kernel or run of A matches one of B with --match {how}; "
            "try --match name or --match order"
        )
    sys.exit(result.exit_code)


def _diff_traces(a: str, b: str, fail_if: tuple[str, ...], fmt: str) -> None:
    """Two framework traces: per-op and per-step times side by side; gates op:+N% and step:+N%."""
    from gpuprof import importing, tracing
    from gpuprof.errors import GpuprofError, InputError
    from gpuprof.render import emit

    try:
        if fmt == "junit":
            raise InputError(
                "--format junit compares kernels of profiler files, not framework traces",
                "use --format table, markdown, csv or json",
            )
        gates = [tracing.Gate.parse(text) for text in fail_if]
        run_a, run_b = importing.read_file(a), importing.read_file(b)
        ops = tracing.side_by_side(run_a, run_b)
        steps = (
            tracing.step_pairs(run_a, run_b)
            if run_a.environment.get("steps") and run_b.environment.get("steps")
            else None
        )
        broken = tracing.gate(run_a, run_b, gates)
    except GpuprofError as error:
        error.exit_code = 2  # diff's contract: any unusable input exits 2
        raise
    echo(emit(ops.head(30) if fmt == "table" else ops, fmt, title=f"Ops: A = {a}, B = {b} (seconds)"))
    if steps is not None:
        echo(emit(steps, fmt, title="Steps, paired in order (seconds)"))
    if len(broken):
        echo(emit(broken, fmt, title="Gates broken"))
        sys.exit(1)
    if gates:
        note(f"gates passed: {', '.join(fail_if)}")
