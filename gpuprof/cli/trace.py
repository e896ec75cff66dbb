"""``gpuprof trace FILE``: a framework trace's per-op, per-kernel, per-step and per-GPU tables;
with ``--against``, two traces side by side and a gate for CI."""

from __future__ import annotations

import sys

import click

from gpuprof.cli.common import echo, format_option, handle_errors, note

TABLES = ("ops", "kernels", "steps", "breakdown")
SHORT = 60  # characters of a kernel or op name in a terminal table (csv and json keep them whole)


def _short(name: object) -> object:
    """A long C++ kernel name without its parameter list, cut to :data:`SHORT` characters."""
    if not isinstance(name, str) or len(name) <= SHORT:
        return name
    head = name.split("(", 1)[0] or name
    return head if len(head) <= SHORT else head[: SHORT - 1] + "…"


def _shown(frame, fmt: str, top: int):
    """The first ``top`` rows with short names for a terminal table; the whole frame otherwise."""
    if fmt != "table":
        return frame
    frame = frame.head(top).copy()
    for column in ("name", "op"):
        if column in frame:
            frame[column] = frame[column].map(_short)
    return frame


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--table",
    "table",
    type=click.Choice(TABLES),
    default="ops",
    show_default=True,
    help="ops: per framework op; kernels: per GPU kernel/copy; steps: per ProfilerStep#N; "
    "breakdown: per GPU idle/compute/communication time and overlap (HTA's definitions).",
)
@click.option(
    "--against",
    "against",
    type=click.Path(dir_okay=False),
    default=None,
    help="A second trace (B): per-op tables side by side, B's total over FILE's.",
)
@click.option(
    "--fail-if",
    "fail_if",
    multiple=True,
    metavar="op:+N%|step:+N%",
    help="With --against, repeatable: exit 1 when any op's total time (or any step's time, "
    "paired by order) in B rose by more than N % over FILE's.",
)
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=30,
    show_default=True,
    help="Rows shown in a table (csv and json stay whole).",
)
@format_option
@handle_errors
def trace(file: str, table: str, against: str | None, fail_if: tuple[str, ...], top: int, fmt: str) -> None:
    """Print the tables of a PyTorch, TensorFlow or JAX profiler trace FILE (read, nothing stored)."""
    from gpuprof import importing, tracing
    from gpuprof.derive import traces
    from gpuprof.errors import InputError
    from gpuprof.render import emit

    gates = [tracing.Gate.parse(text) for text in fail_if]
    if gates and not against:
        raise InputError("--fail-if compares two traces", "give the second one with --against B")
    run = importing.read_file(file)
    if against:
        other = importing.read_file(against)
        frame = tracing.side_by_side(run, other)
        echo(emit(_shown(frame, fmt, top), fmt, title=f"Ops: A = {file}, B = {against} (seconds)"))
        broken = tracing.gate(run, other, gates)
        if len(broken):
            echo(emit(broken, fmt, title="Gates broken"))
            sys.exit(1)
        if gates:
            note(f"gates passed: {', '.join(text for text in fail_if)}")
        return
    makers = {
        "ops": traces.op_table,
        "kernels": traces.kernel_table,
        "steps": traces.step_table,
        "breakdown": traces.breakdown,
    }
    frame = makers[table](run)
    echo(
        emit(
            _shown(frame, fmt, top),
            fmt,
            title=f"{table} of {file} ({run.environment.get('dialect', run.format)}; measured by the profiler)",
        )
    )
    for line in run.notes:
        note(f"note: {line}")
