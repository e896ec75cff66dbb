"""``gpuprof merge`` and ``gpuprof export``: move results between machines without duplicating runs."""

from __future__ import annotations

import click

from gpuprof.cli.common import handle_errors, note, output_file, store_option


@click.command()
@click.argument("out_store", type=click.Path(dir_okay=False))
@click.argument("inputs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@handle_errors
def merge(out_store: str, inputs: tuple[str, ...]) -> None:
    """Add the runs of INPUTS (results stores, .jsonl run files, profiler outputs) to OUT_STORE.

    Runs already in OUT_STORE (same run id) are skipped, so merging twice adds nothing.
    """
    from gpuprof.merge import merge as merge_runs

    result = merge_runs(out_store, list(inputs))
    for item in result.inputs:
        note(f"{item.path} ({item.kind}): {item.added} run(s) added, {item.already} already in {out_store}")
    for line in result.notes:
        note(f"note: {line}")
    note(f"{result.added} run(s) added to {out_store}, {result.already} already there")
    if result.unreadable:
        from gpuprof.errors import FormatError

        raise FormatError(
            f"no line of {', '.join(result.unreadable)} is a gpuprof run, so nothing was added from it",
            "give run files written by 'gpuprof export' or 'gpuprof sweep --slurm'",
        )


@click.command()
@click.argument("out", type=click.Path(dir_okay=False), callback=output_file())
@click.option(
    "--kind",
    type=click.Choice(("run", "import", "all")),
    default="all",
    show_default=True,
    help="Which stored runs to export.",
)
@click.option("--append", is_flag=True, help="Add to OUT's runs instead of replacing the file (jsonl only).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("jsonl", "parquet", "csv")),
    default="jsonl",
    show_default=True,
    help="jsonl: run lines for 'gpuprof merge'; parquet/csv: the long metric table (gpuprof.metrics()).",
)
@store_option
@handle_errors
def export(out: str, kind: str, append: bool, fmt: str, store_path: str | None) -> None:
    """Write the store's runs to OUT as JSON lines (one run per line), for 'gpuprof merge' elsewhere,
    or as one long metric table (--format parquet or csv: run, device, kernel, launch, metric,
    value, unit and origin on every row) for pandas, polars or a spreadsheet.

    OUT is replaced (written beside it, then renamed over it); --append adds to it instead.
    """
    if append and fmt != "jsonl":
        from gpuprof.errors import InputError

        raise InputError(
            f"--append adds run lines and cannot add to a {fmt} table",
            "drop --append (the table is rewritten whole) or use --format jsonl",
        )
    from gpuprof.store import open_store
    from gpuprof.store import runfile as run_file

    with open_store(store_path, read_only=True) as store:
        runs = [r for r in store.runs() if kind in ("all", r.kind)]
        where, skipped = store.path, store.skipped
    for line in skipped:
        note(f"note: {line}")
    run_file.write(out, runs, replace=not append, fmt=fmt)
    note(
        f"{len(runs)} run(s) from {where} {'appended to' if append else 'written to'} {out}"
        + (
            f" as a {fmt} metric table (replacing its contents)"
            if fmt != "jsonl"
            else ""
            if append
            else " (replacing its contents; --append adds instead)"
        )
    )
