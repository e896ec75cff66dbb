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
    """List stored runs; with RUN_ID (or a prefix of it), print that run's full report."""
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
    if runs or fmt in ("csv", "json"):
        echo(emit(listing_frame(runs, lambda run, _: ceilings_for(run, every)), fmt))
    note(
        f"{len(runs)} stored run(s) in {where}"
        if runs
        else f"no stored runs in {where}: measure with 'gpuprof run' or read a profile with 'gpuprof import'"
    )
