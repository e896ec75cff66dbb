"""``gpuprof roofline``: roofline charts of stored runs, one per device, redrawn from the store."""

from __future__ import annotations

import click

from gpuprof.cli.common import echo, handle_errors, note, output_file, output_folder, store_option
from gpuprof.derive.roofline import POINT_PRECISIONS


def _out(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """Click callback: --out names a .png or .svg file to write, or else a folder."""
    from pathlib import Path

    path = Path(value)
    if path.suffix.lower() in (".png", ".svg"):
        return output_file(".png", ".svg")(ctx, param, value)
    if path.suffix and not path.is_dir():
        raise click.BadParameter(f"'{path.name}' is neither a .png or .svg file name nor a folder", ctx, param)
    return output_folder(ctx, param, value)


@click.command()
@store_option
@click.option(
    "--out",
    "out",
    type=click.Path(),
    default="reports/roofline",
    show_default=True,
    callback=_out,
    help="A folder (roofline-<device>.png and .svg in it, created when missing) or a .png or .svg file.",
)
@click.option(
    "--precision",
    type=click.Choice(("all", *POINT_PRECISIONS)),
    default="all",
    show_default=True,
    help="FLOPs counted: all precisions and the tensor cores together, or one of them (with its own ceilings).",
)
@click.option(
    "--kernel",
    "kernel_pattern",
    default=None,
    help="Only kernels whose name matches this regular expression (case-insensitive).",
)
@click.option("--run", "run_ids", multiple=True, help="Only this run (an id or its first characters; repeatable).")
@click.option("--op", "op_names", multiple=True, help="Only measured runs of this op (repeatable).")
@click.option(
    "--device", "device_filter", default=None, help="Only devices whose name contains this text (case-insensitive)."
)
@click.option(
    "--peaks",
    "peaks_name",
    default=None,
    help="Device-table GPU (e.g. a100-sxm4-40gb) whose ceilings to draw for devices the "
    "profile does not name (ncu CSVs give only the compute capability).",
)
@click.option(
    "--ceilings",
    "show_ceilings",
    is_flag=True,
    help="List, per device, the ceilings the imported files carry (ncu's *.peak_sustained at the "
    "clocks measured) beside the device table's, with their sources and which one binds; draws nothing.",
)
@handle_errors
def roofline(
    store_path: str | None,
    out: str,
    precision: str,
    kernel_pattern: str | None,
    run_ids: tuple[str, ...],
    op_names: tuple[str, ...],
    device_filter: str | None,
    peaks_name: str | None,
    show_ceilings: bool,
) -> None:
    """Plot stored kernels under their device's memory (L1, L2, DRAM) and compute ceilings."""
    from pathlib import Path

    from gpuprof.derive.roofline import ceiling_sources, device_ceilings, drawable, file_ceilings, points, select
    from gpuprof.devices import gpu_table
    from gpuprof.errors import InputError
    from gpuprof.render import emit
    from gpuprof.render.roofline_plot import plot
    from gpuprof.store import open_store

    with open_store(store_path, read_only=True) as store:
        runs = store.runs()
        where = store.path
        for line in store.skipped:
            note(f"note: {line}")
    runs = [r for r in runs if not run_ids or any(r.run_id.startswith(i) for i in run_ids)]
    if show_ceilings:
        listed = ceiling_sources(runs, peaks_name)
        if device_filter and len(listed):
            listed = listed[listed["device"].str.contains(device_filter, case=False, regex=False)]
        if listed.empty:
            raise InputError(f"no imported profile in {where} to list ceilings for", "import a profile first")
        echo(emit(listed, "table"))
        return
    frame, skipped = points(runs, precision)
    for line in skipped:
        note(f"skipped {line}")
    frame = select(frame, kernel_pattern, op_names, device_filter)
    if drawable(frame).empty:
        wanted = ", ".join(
            f"{name} {value}"
            for name, value in (
                ("run", "/".join(run_ids)),
                ("kernel", kernel_pattern),
                ("op", "/".join(op_names)),
                ("device", device_filter),
            )
            if value
        )
        raise InputError(
            f"no stored run in {where} has {'' if precision == 'all' else precision + ' '}FLOPs, "
            f"bytes and a time to plot" + (f" for {wanted}" if wanted else ""),
            "measure with 'gpuprof run' or import a profile with FLOP and DRAM counters",
        )
    fallback = [gpu_table.peaks(gpu_table.match(peaks_name))] if peaks_name else None
    ceilings, carried = device_ceilings(runs, fallback), file_ceilings(runs)
    for device in sorted(set(frame["device"]) - {d for d, p in [*ceilings.items(), *carried.items()] if p}):
        note(f"no peaks known for '{device}': its chart has points but no ceilings (give --peaks GPU)")
    for path in plot(frame, ceilings, Path(out), precision, carried):
        echo(str(path))
