"""``gpuprof compare``: the reference study's tables for every device in one or more stores."""

from __future__ import annotations

import click

from gpuprof.cli.common import FormatChoice, echo, handle_errors, note, output_file, wide_option
from gpuprof.cli.progress import bar
from gpuprof.workloads.ops import OPS


@click.command()
@click.option(
    "--store",
    "stores",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Results store to read (repeatable). Default: $GPUPROF_STORE or reports/gpuprof.sqlite.",
)
@click.option(
    "--import",
    "imports",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Profiler output or .jsonl run file to include without storing it (repeatable). Two or more "
    "framework traces (PyTorch, TensorFlow, JAX) also get their per-op tables side by side.",
)
@click.option(
    "--reference",
    type=click.Choice(("paper",)),
    default=None,
    help="Add the reference study's published rows (GT710M, K40, GTX980; with --scaling: the "
    "ResNet-34 training study's S, E and EDP).",
)
@click.option(
    "--scaling",
    is_flag=True,
    help="Set-ups of one job (profiles with --label/--devices): per phase time, speed-up S, "
    "efficiency E = S/x, energy and EDP normalised to --baseline.",
)
@click.option("--baseline", default=None, metavar="LABEL", help="--scaling: the set-up the others are compared with.")
@click.option(
    "--phase",
    "phases",
    multiple=True,
    metavar="NAME",
    help="--scaling: region names to show (repeatable). Default: top-level regions and their children.",
)
@click.option(
    "--op", "ops_wanted", multiple=True, type=click.Choice(OPS), help="Ops to show (repeatable). Default: all."
)
@click.option("--dtype", default="float32", show_default=True, type=click.Choice(("float32", "float64", "float16")))
@click.option(
    "--format",
    "fmt",
    type=FormatChoice(),
    default="table",
    show_default=True,
    help="table/markdown: one table per op in the study's layout; csv/json: the long frame.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False),
    default=None,
    callback=output_file(),
    help="Also write a self-contained HTML report (tables and charts) to this file.",
)
@wide_option
@click.option("--stalls", is_flag=True, help="Also compare warp-stall reasons of imported GPU profiles.")
@click.option("--max-rows", default=200, show_default=True, type=click.IntRange(1), help="HTML: rows per table.")
@click.option(
    "--max-series", default=8, show_default=True, type=click.IntRange(1), help="HTML: devices per chart and table."
)
@handle_errors
def compare(
    stores: tuple[str, ...],
    imports: tuple[str, ...],
    reference: str | None,
    scaling: bool,
    baseline: str | None,
    phases: tuple[str, ...],
    ops_wanted: tuple[str, ...],
    dtype: str,
    fmt: str,
    html_path: str | None,
    stalls: bool,
    max_rows: int,
    max_series: int,
) -> None:
    """Compare devices in the study's layout: rows = size, columns = device × MFLOP/s, Efic.(%),
    roofline-relative efficiency and bound, one table per op. With --scaling: set-ups of one job."""
    progress = bar("compare", "loading pandas, reading the runs")  # from the first second; nothing when piped
    try:
        from gpuprof.compare import comparison, sections
        from gpuprof.merge import collect
        from gpuprof.render import emit

        runs, sources, notes = collect(list(stores), list(imports), store_optional=reference == "paper")
        if scaling:
            from gpuprof.compare.scaling import scaling as scaling_rows

            frame, said = scaling_rows(runs, baseline, phases, reference == "paper")
        elif not runs and reference != "paper":
            from gpuprof.errors import InputError

            raise InputError(
                f"nothing to compare: no measured or imported runs in {', '.join(sources) or 'the store'}",
                "measure with 'gpuprof run' or 'gpuprof sweep', import with 'gpuprof import', or add --reference paper",
            )
        else:
            if progress is not None:
                progress("comparing", 0, 1)
            result = comparison(runs, reference=reference == "paper", ops_wanted=ops_wanted or None, dtype=dtype)
            stall_table = None
            if stalls:
                from gpuprof.derive.stalls import stall_comparison

                stall_table = stall_comparison([r for r in runs if r.kind == "import"])
    finally:
        if progress is not None:
            progress.stop()  # the tables are printed next; the HTML report draws the bar again
    if scaling:
        title = f"Scaling against {baseline}" if baseline else "Scaling"
        echo(
            emit(
                frame,
                fmt,
                title=f"{title} (S = T_base/T, E = S/(devices/base devices), EDP = time x energy, "
                "normalised to the baseline)",
            )
        )
        for line in notes + said:
            note(f"note: {line}")
        return
    if fmt in ("csv", "json") and stall_table is not None:
        from gpuprof.derive.stalls import stall_rows

        echo(emit(stall_rows(stall_table), fmt))
        note("note: the stall comparison, one row per profile and reason; the comparison rows: without --stalls")
    elif fmt in ("csv", "json") and result.trace_ops is not None and not len(result.rows):
        echo(emit(result.trace_ops, fmt))
        note(f"note: the framework ops side by side: {'; '.join(result.trace_legend)}")
    elif fmt in ("csv", "json"):
        echo(emit(result.rows, fmt))
        if result.trace_ops is not None:
            note("note: the framework ops side by side are listed with --format table or markdown")
        if len(result.imported):
            note(f"{len(result.imported)} imported kernel(s) are listed with --format table or markdown, or --html")
    else:
        echo("\n\n".join(emit(frame, fmt, title) for title, frame in sections(result, stall_table)))
    for line in notes + result.notes:
        note(f"note: {line}")
    if html_path:
        from gpuprof.compare.html_report import Limits, build
        from gpuprof.outputs import write_text

        try:
            report = build(result, "gpuprof comparison", sources, Limits(max_rows, max_series), stall_table, progress)
            write_text(html_path, report.html)
        finally:
            if progress is not None:
                progress.stop()
        for line in report.trimmed:
            note(f"trimmed: {line}")
        note(f"HTML report written to {html_path}")
