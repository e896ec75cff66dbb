"""``gpuprof roofline``: roofline charts of stored runs, one PNG and one SVG per device."""

from __future__ import annotations

import click

from gpuprof.cli.common import echo, handle_errors, note, output_folder, store_option


@click.command()
@store_option
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="reports/roofline",
              callback=output_folder, show_default=True, help="Directory for roofline-<device>.png and .svg.")
@click.option("--device", "device_filter", default=None,
              help="Only devices whose name contains this text (case-insensitive).")
@click.option("--peaks", "peaks_name", default=None,
              help="Device-table GPU (e.g. a100-sxm4-40gb) whose ceilings to draw for devices the "
                   "profile does not name (ncu CSVs give only the compute capability).")
@handle_errors
def roofline(store_path: str | None, out_dir: str, device_filter: str | None, peaks_name: str | None) -> None:
    """Plot every stored kernel as (FLOP/byte, FLOP/s) under its device's memory and compute roofs."""
    from pathlib import Path

    from gpuprof.derive.roofline import device_ceilings, points
    from gpuprof.devices import gpu_table
    from gpuprof.errors import InputError
    from gpuprof.render.roofline_plot import plot
    from gpuprof.store import open_store

    with open_store(store_path, read_only=True) as store:
        runs = store.runs()
        where = store.path
    frame, skipped = points(runs)
    for line in skipped:
        note(f"skipped {line}")
    if device_filter:
        frame = frame[frame["device"].str.contains(device_filter, case=False, regex=False)]
    if frame.empty:
        raise InputError(f"no stored run in {where} has FLOPs, bytes and a time to plot"
                         + (f" for a device matching '{device_filter}'" if device_filter else ""),
                         "measure with 'gpuprof run' or import a profile with FLOP and DRAM counters")
    fallback = [gpu_table.peaks(gpu_table.match(peaks_name))] if peaks_name else None
    ceilings = device_ceilings(runs, fallback)
    for device in sorted(set(frame["device"]) - {d for d, p in ceilings.items() if p}):
        note(f"no peaks known for '{device}': its chart has points but no ceilings (give --peaks GPU)")
    for path in plot(frame, ceilings, Path(out_dir)):
        echo(str(path))
