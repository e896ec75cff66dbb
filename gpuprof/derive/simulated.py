"""What a simulated accelerator's cycles and counts give: utilisation, time at a clock, energy.

A simulator (STONNE) has no clock and no power meter: its cycles and per-component counts are
``simulated``; the layer's MACs are ``analytic``. Utilisation = MACs / (cycles × multipliers), a
share of the multipliers' cycles doing useful work (above 100 % means wrong dimensions or a wrong
multiplier count). A time exists only at a clock the user gives; energy only from an energy table in
STONNE's format (``COMPONENT STATIC=e AREA=a OP=e ...``), in that table's units, which STONNE does
not state — so they are called "table units", with the table named.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from gpuprof.errors import InputError
from gpuprof.model import Run
from gpuprof.readers import stonne

_COUNTER = re.compile(r"^(?P<section>[^/]+)/(?P<component>\S+)\.(?P<op>[^.\s]+)$")
_INSTANCES = re.compile(r"^(?P<section>[^/]+)/(?P<component>\S+) instances$")


def read_energy_table(path: str | Path) -> dict[str, dict[str, float]]:
    """STONNE's energy table (``energy_tables/energy_model.txt``): energy per operation and STATIC per cycle."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such energy table", "give STONNE's energy_tables/energy_model.txt or yours")
    table: dict[str, dict[str, float]] = {}
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        component, *pairs = line.split() or [""]
        if not component:
            continue
        try:
            table[component] = {key: float(value) for key, value in (pair.split("=") for pair in pairs)}
        except ValueError:
            raise InputError(
                f"{path}:{number}: not 'COMPONENT OP=energy ...'", "give an energy table in STONNE's format"
            ) from None
    return table


def energy(values: dict[str, float], table: dict[str, dict[str, float]], table_name: str) -> tuple[float, float]:
    """(static, dynamic) energy of one layer's counters, as STONNE's calculate_energy.py sums them:
    each instance's STATIC × cycles, and each count × its operation's energy."""
    cycles = values.get(stonne.CYCLES, math.nan)
    static = dynamic = 0.0
    for name, value in values.items():
        if match := _INSTANCES.match(name):
            static += value * cycles * _entry(table, table_name, match["component"]).get("STATIC", 0.0)
        elif match := _COUNTER.match(name):
            row = _entry(table, table_name, match["component"])
            if match["op"] not in row:
                raise InputError(
                    f"{table_name}: no energy for {match['component']} {match['op']}",
                    "give the energy table that matches this STONNE build",
                )
            dynamic += value * row[match["op"]]
    return static, dynamic


def _entry(table: dict[str, dict[str, float]], table_name: str, component: str) -> dict[str, float]:
    if component not in table:
        raise InputError(
            f"{table_name}: no component {component}", "give the energy table that matches this STONNE build"
        )
    return table[component]


def layer_table(run: Run, clock_hz: float | None = None, energy_table: str | Path | None = None) -> pd.DataFrame:
    """One row per simulated layer: cycles, MACs, multipliers, utilisation, global-buffer reads and
    writes, share of the run's cycles; time at ``clock_hz``; energy from ``energy_table``."""
    table = read_energy_table(energy_table) if energy_table else None
    rows = []
    for launch in run.launches:
        values = {m.name: float(m.value) for m in launch.metrics if isinstance(m.value, (int, float))}
        cycles, macs = values.get(stonne.CYCLES, math.nan), values.get(stonne.MACS, math.nan)
        multipliers = values.get(stonne.MULTIPLIERS, math.nan)
        row = {
            "layer": launch.kernel,
            "cycles": cycles,
            "MACs": macs,
            "multipliers": multipliers,
            "utilisation (%)": 100 * macs / (cycles * multipliers) if cycles and multipliers else math.nan,
            "reads": values.get(stonne.GB_READS, math.nan),
            "writes": values.get(stonne.GB_WRITES, math.nan),
        }
        if clock_hz:
            row["time (s)"] = cycles / clock_hz
        if table is None and "energy (table units)" in values:  # STONNE's energy script already summed it
            row["energy (table units)"] = values["energy (table units)"]
        if table is not None:
            if not any(_INSTANCES.match(name) for name in values):
                raise InputError(
                    f"{launch.kernel}: no .counters values to price",
                    "import the layer's .counters file with its statistics JSON",
                )
            static, dynamic = energy(values, table, Path(energy_table).name)
            row.update(
                {
                    "static energy (table units)": static,
                    "dynamic energy (table units)": dynamic,
                    "energy (table units)": static + dynamic,
                }
            )
        rows.append(row)
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame.insert(2, "share of cycles (%)", 100 * frame["cycles"] / frame["cycles"].sum())
        frame["origin"] = origin_note(clock_hz, energy_table)
        if energy_table is None and "energy (table units)" in frame:
            frame["origin"] += "; energy as STONNE's calculate_energy.py summed it, in its table's units"
    return frame


def origin_note(clock_hz: float | None, energy_table: str | Path | None) -> str:
    parts = [
        "cycles, multipliers, reads and writes simulated (STONNE)",
        "MACs analytic (layer dimensions)",
        "utilisation derived = MACs / (cycles × multipliers)",
    ]
    parts.append(
        f"time derived at the given clock {clock_hz / 1e6:g} MHz"
        if clock_hz
        else "no time: a simulator has no clock (give --clock)"
    )
    if energy_table:
        parts.append(f"energy derived from {Path(energy_table).name}, in that table's units (STONNE states none)")
    return "; ".join(parts)
