"""``gpuprof doctor``: one line per thing profiling needs here, each with the fix when it fails."""

from __future__ import annotations

import sys

import click

from gpuprof.cli.common import echo, format_option, handle_errors, note

PATHS = ("cpu", "cuda", "profile")  # gpuprof.doctor.NEEDS


@click.command()
@click.option(
    "--for",
    "path",
    type=click.Choice(PATHS),
    default=None,
    help="Exit 0 only when this path can work here: cpu (CPU counters), cuda (gpuprof run on a GPU), "
    "profile (gpuprof profile on a GPU).",
)
@format_option
@handle_errors
def doctor(path: str | None, fmt: str) -> None:
    """Check the NVIDIA driver and GPUs, counter permission, ncu/nvprof/nsys, CuPy, MIG, containers,
    perf and its PMU, and RAPL/NVML energy. Reads only; writes nothing."""
    import textwrap

    import pandas as pd

    from gpuprof import doctor as library
    from gpuprof.render import emit, table_width

    found = library.checks()
    width = table_width()
    if fmt == "table":
        for check in found:
            fix = f" -> fix: {check.fix}" if check.fix and check.status in (library.FAIL, library.WARN) else ""
            line = f"{check.status:<4}  {check.name}: {check.found}{fix}"
            echo(
                textwrap.fill(line, width, subsequent_indent=" " * 6, break_long_words=False, break_on_hyphens=False)
                if width
                else line
            )
    else:
        echo(emit(pd.DataFrame([vars(check) for check in found], columns=["name", "status", "found", "fix"]), fmt))
    if path is None:
        return
    works, failed = library.verdict(found, path)
    note(f"--for {path}: {'can work here' if works else 'cannot work here (' + ', '.join(failed) + ')'}")
    if not works:
        sys.exit(1)
