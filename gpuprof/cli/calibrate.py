"""``gpuprof calibrate``: measure this machine's FLOP/s and bandwidth ceilings and store them."""

from __future__ import annotations

import click

from gpuprof.cli.common import command_line, echo, format_option, handle_errors, note, store_option
from gpuprof.cli.progress import bar


@click.command()
@click.option(
    "--quick/--thorough",
    default=True,
    show_default=True,
    help="quick: 2048² matmul, arrays 2× the last-level cache, 5 repeats (a few seconds); "
    "thorough: 4096², 4×, 10 repeats.",
)
@format_option
@store_option
@handle_errors
def calibrate(quick: bool, fmt: str, store_path: str | None) -> None:
    """Measure the CPU's ceilings (NumPy matmul FLOP/s, np.add bandwidth) and store them for this host.

    Each ceiling is timed until its fastest calls agree. Later `gpuprof run` results on this host
    report efficiency against the best stable value of all its calibrations as well as against the
    theoretical peak; a ceiling that did not settle is stored but never used.
    """
    progress = bar("calibrate", "loading NumPy")  # from the first second; nothing when piped
    try:
        import pandas as pd

        from gpuprof.calibrate import calibrate as measure_ceilings
        from gpuprof.calibrate import calibrations, review, summary_rows
        from gpuprof.render import emit
        from gpuprof.store import open_store

        with open_store(store_path) as store:  # opened first: a bad --store fails before minutes of work
            store.writable()
            if progress is not None:
                progress.stop()  # the plan stays on the screen; the first step draws the bar again
            note(
                "calibrating (" + ("quick" if quick else "thorough") + "): matmul float32/float64, then np.add, "
                "each until its fastest calls agree ..."
            )
            run = measure_ceilings(thorough=not quick, command=command_line(), progress=progress)
            earlier = calibrations(store.runs(run.kind), run.environment["host"], run.device.get("name"))
            store.add(run)
            where = store.path
    finally:
        if progress is not None:
            progress.stop()
    rows = pd.DataFrame(summary_rows(run, earlier))
    title = f"Ceilings of {run.device.get('name', 'this CPU')}"
    if fmt in ("table", "markdown"):  # every row is calibrated: said once, in the title
        rows, title = rows.drop(columns="origin"), f"{title} (calibrated: measured on this host)"
    echo(emit(rows, fmt, title=title))
    for line in run.notes + review(run, earlier):
        note(f"note: {line}")
    note(f"stored calibration {run.run_id[:8]} for host {run.environment['host']} in {where}")
