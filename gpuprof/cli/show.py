"""``gpuprof show``: list stored results, or one run in full."""

from __future__ import annotations

import click

from gpuprof.cli.common import echo, format_option, handle_errors, note, store_option


@click.command()
@click.argument("run_id", required=False)
@click.option(
    "--kind",
    type=click.Choice(("run", "import", "calibration", "profile", "all")),
    default="all",
    show_default=True,
    help="Which stored runs to list.",
)
@format_option
@store_option
@handle_errors
def show(run_id: str | None, kind: str, fmt: str, store_path: str | None) -> None:
    """List stored runs; with RUN_ID (or a prefix of it), print that run's full report. With --kind
    calibration: each calibration's ceilings, whether each settled, and which value runs use."""
    from gpuprof.compare import ceilings_for
    from gpuprof.render import emit
    from gpuprof.render.listing import find_run, listing_frame
    from gpuprof.store import open_store

    with open_store(store_path, read_only=True) as store:
        if run_id:
            echo(find_run(store, run_id, fmt, ceilings_for))
            return
        every = store.runs()
        where, skipped = store.path, store.skipped
    runs = [r for r in every if kind in ("all", r.kind)]
    for line in skipped:
        note(f"note: {line}")
    if kind == "calibration" and (runs or fmt in ("csv", "json")):
        _calibrations(runs, fmt)
    elif runs or fmt in ("csv", "json"):
        echo(emit(listing_frame(runs, lambda run, _: ceilings_for(run, every)), fmt))
        if any(run.kind == "calibration" for run in runs):
            note("note: each calibration's ceilings, and which are in use: gpuprof show --kind calibration")
    note(
        f"{len(runs)} stored run(s) in {where}"
        if runs
        else f"no stored calibrations in {where}: measure this host's ceilings with 'gpuprof calibrate'"
        if kind == "calibration"
        else f"no stored runs in {where}: measure with 'gpuprof run' or read a profile with 'gpuprof import'"
    )


def _calibrations(runs: list, fmt: str) -> None:
    """Every ceiling of every calibration: value, theory, whether it settled, which value runs use and why not."""
    import pandas as pd

    from gpuprof.calibrate import listing_rows
    from gpuprof.render import emit

    rows = pd.DataFrame(listing_rows(runs))
    title = (
        "Calibrated ceilings: whether each settled, and which value runs use (in use: this, or the one used instead)"
    )
    if fmt in ("table", "markdown") and len(rows):  # every value is calibrated: said once, in the title
        rows, title = rows.drop(columns="origin"), f"{title}; values calibrated: measured on their host"
    echo(emit(rows, fmt, title=title))
