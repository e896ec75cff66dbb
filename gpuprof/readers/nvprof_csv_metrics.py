"""nvprof ``--csv --metrics`` and ``--csv --events`` output: one row per kernel x metric (or
event), aggregated over invocations. With both options nvprof prints the event table, then the
metric table, in one file; both are read.

Each (device, kernel) pair becomes one Launch with ``invocations`` from the file; each metric keeps
nvprof's Avg as its value and Min/Max as ``minimum``/``maximum``, in base units (``28.05%`` stays a
percentage, ``73.787GB/s`` becomes byte/second with nvprof's binary prefixes, see ``_nvprof``).
Values nvprof prints as words (utilization levels such as ``Max (10)``) are kept as text.
Unitless values take the catalog's unit; achieved_occupancy, a fraction in nvprof, becomes percent
as in the catalog and Nsight Compute. An event also keeps nvprof's Total (the sum over the
invocations) as ``<event> (total)``.
"""

from __future__ import annotations

from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import Launch, Metric, Run, catalog
from gpuprof.readers import _nvprof
from gpuprof.readers._text import head_has_csv_header, parse_count

NAME = "nvprof-csv-metrics"
DESCRIPTION = (
    "nvprof --csv --metrics / --events output (Device, Kernel, Invocations, Metric Name or Event Name, Min/Max/Avg)"
)
HEADER = ("Device", "Kernel", "Invocations", "Metric Name", "Metric Description", "Min", "Max", "Avg")
EVENTS = ("Device", "Kernel", "Invocations", "Event Name", "Min", "Max", "Avg", "Total")


def sniff(path: Path, head: str) -> bool:
    return head_has_csv_header(head, HEADER) or head_has_csv_header(head, EVENTS)


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


def _rows(path: Path, output: _nvprof.Output, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """The rows of the table headed by ``columns`` as dicts; [] when the file has no such table."""
    table = _nvprof.csv_table(output, columns[:4])
    if table is None:
        return []
    header, rows = table
    missing = [name for name in columns if name not in header]
    if missing:
        raise FormatError(
            f"{path}: nvprof {columns[3].lower()} table lacks columns {', '.join(missing)}",
            "give the output of 'nvprof --csv --metrics ...' or '--events ...'",
        )
    for number, row in enumerate(rows, start=1):
        if len(row) < len(header):
            raise FormatError(
                f"{path}: {columns[3].split()[0].lower()} row {number} has {len(row)} of "
                f"{len(header)} fields (file truncated?)",
                "give the complete nvprof output",
            )
    return [dict(zip(header, row)) for row in rows]


def event(name: str, low: str, high: str, avg: str, total: str) -> list[Metric]:
    """An event row: its Avg/Min/Max like a metric's, and nvprof's Total (when printed) beside it."""
    made = metric(name, low, high, avg)
    summed = _nvprof.cell(total)
    return [made] + ([Metric(f"{name} (total)", summed[0], made.unit)] if summed else [])


def read(path: Path) -> Run:
    output = _nvprof.load(path)
    events, metrics = _rows(path, output, EVENTS), _rows(path, output, HEADER)
    if not events and not metrics:
        raise output.no_data("metric rows")
    found: dict[tuple[str, str], tuple[int, list[Metric]]] = {}
    indices: dict[str, int] = {}
    for cells in events + metrics:
        device, index = _nvprof.split_device(cells["Device"])
        if index is not None:
            indices[device] = index
        key = (device, cells["Kernel"])
        if key not in found:
            found[key] = (parse_count(cells["Invocations"].strip(), 1), [])
        if "Event Name" in cells:
            found[key][1].extend(event(*(cells[c] for c in EVENTS[3:])))
        else:
            found[key][1].append(metric(cells["Metric Name"], cells["Min"], cells["Max"], cells["Avg"]))
    launches = [
        Launch(kernel, number, device, invocations, metrics=made)
        for number, ((device, kernel), (invocations, made)) in enumerate(found.items())
    ]
    return _nvprof.make_run(output, NAME, launches, indices)
