"""nvprof ``--csv --metrics`` output: one row per kernel x metric, aggregated over invocations.

Each (device, kernel) pair becomes one Launch with ``invocations`` from the file; each metric keeps
nvprof's Avg as its value and Min/Max as ``minimum``/``maximum``, in base units (``28.05%`` stays a
percentage, ``73.787GB/s`` becomes byte/second with nvprof's binary prefixes, see ``_nvprof``).
Values nvprof prints as words (utilization levels such as ``Max (10)``) are kept as text.
Unitless values take the catalog's unit; achieved_occupancy, a fraction in nvprof, becomes percent
as in the catalog and Nsight Compute.
"""

from __future__ import annotations

from pathlib import Path

from gpuprof import catalog
from gpuprof.errors import FormatError
from gpuprof.model import Launch, Metric, Run
from gpuprof.readers import _nvprof
from gpuprof.readers._text import head_has_csv_header, parse_count

NAME = "nvprof-csv-metrics"
DESCRIPTION = "nvprof --csv --metrics output (Device, Kernel, Invocations, Metric Name, Min/Max/Avg)"
HEADER = ("Device", "Kernel", "Invocations", "Metric Name", "Metric Description", "Min", "Max", "Avg")


def sniff(path: Path, head: str) -> bool:
    return head_has_csv_header(head, HEADER)


# nvprof prints these as a fraction (0.82) where the catalog, like Nsight Compute, uses percent.
_FRACTIONS = frozenset({"achieved_occupancy"})


def metric(name: str, low: str, high: str, avg: str) -> Metric:
    """One metric row: Avg as the value, Min/Max kept, all in base units; words kept as text.

    A unitless number takes the catalog's unit (``flop_count_sp`` -> FLOP, ``ipc`` -> inst/cycle);
    fractions the catalog keeps in percent are scaled to percent.
    """
    canonical = catalog.canonical(name)
    parsed = [_nvprof.cell(text) for text in (low, high, avg)]
    if parsed[2] is None:
        return Metric(name, avg.strip() or None, "", canonical)
    unit, scale = parsed[2][1], 1.0
    if not unit and canonical:
        unit = catalog.entries()[canonical].unit
        scale = 100.0 if name in _FRACTIONS and unit == "%" else 1.0
    low_value, high_value, value = (p[0] * scale if p else None for p in parsed)
    return Metric(name, value, unit, canonical, minimum=low_value, maximum=high_value)


def read(path: Path) -> Run:
    output = _nvprof.load(path)
    table = _nvprof.csv_table(output, HEADER[:4])
    if table is None or not table[1]:
        raise output.no_data("metric rows")
    header, rows = table
    columns = {name: header.index(name) for name in HEADER if name in header}
    if len(columns) < len(HEADER):
        missing = ", ".join(name for name in HEADER if name not in columns)
        raise FormatError(f"{path}: nvprof metric table lacks columns {missing}",
                          "give the output of 'nvprof --csv --metrics ...'")
    launches: dict[tuple[str, str], Launch] = {}
    indices: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        if len(row) < len(header):
            raise FormatError(f"{path}: metric row {number} has {len(row)} of {len(header)} fields "
                              "(file truncated?)", "give the complete nvprof output")
        cells = {name: row[i] for name, i in columns.items()}
        device, index = _nvprof.split_device(cells["Device"])
        if index is not None:
            indices[device] = index
        key = (device, cells["Kernel"])
        if key not in launches:
            invocations = parse_count(cells["Invocations"].strip(), 1)
            launches[key] = Launch(cells["Kernel"], len(launches), device, invocations)
        launches[key].metrics.append(
            metric(cells["Metric Name"], cells["Min"], cells["Max"], cells["Avg"]))
    return _nvprof.make_run(output, NAME, list(launches.values()), indices)
