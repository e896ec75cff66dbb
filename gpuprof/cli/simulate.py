"""``gpuprof simulate``: read a simulated accelerator's outputs (STONNE) as per-layer tables."""

from __future__ import annotations

import click

from gpuprof.cli.common import echo, format_option, handle_errors


@click.group("simulate")
def simulate() -> None:
    """Simulated accelerators (STONNE): per-layer cycles, utilisation, reads, writes, energy."""


@simulate.command("layers")
@click.argument("path", type=click.Path())
@click.option("--clock", "clock_mhz", default=None, type=click.FloatRange(min=0, min_open=True), metavar="MHZ",
              help="The accelerator's clock in MHz: gives each layer a time (a simulator has none of its own).")
@click.option("--energy-table", "energy_table", default=None, type=click.Path(dir_okay=False), metavar="FILE",
              help="An energy table in STONNE's format (energy_tables/energy_model.txt): energy per layer, "
                   "in that table's units.")
@format_option
@handle_errors
def layers(path: str, clock_mhz: float | None, energy_table: str | None, fmt: str) -> None:
    """Per layer of a STONNE output (a folder of layer files, one file, or console output): cycles, MACs,
    multipliers, utilisation, global-buffer reads and writes. Reads only; stores nothing."""
    from gpuprof import importing
    from gpuprof.derive import simulated
    from gpuprof.render import emit

    run = importing.read_file(path, "stonne")
    table = simulated.layer_table(run, clock_mhz * 1e6 if clock_mhz else None, energy_table)
    echo(emit(table, fmt, title=f"Simulated layers of {path}"))
