"""nvprof ``--metrics`` and ``--events`` output without ``--csv``: fixed-width tables grouped under
``Device "..."`` and ``Kernel: ...`` lines, the event table first when both were asked for.

Cells are separated by runs of two or more spaces (descriptions and values such as ``Max (10)``
use single spaces inside). Each kernel becomes one Launch with its invocation count and the
metrics and events of both tables; a second metric (or event) table is another run's (a README
may paste several), so its kernels become launches of their own. Values carry their unit in the
cell (``865.08MB/s``, ``0.00000B/s`` and ``1.5910GB/s`` in one column), read with nvprof's binary
byte prefixes: see
``gpuprof.readers._nvprof`` for why MB/s means 2**20 byte/s. An event keeps nvprof's Total (newer
versions print it) as ``<event> (total)``. Lines that belong to no table (prose or code fences
around output pasted into a README) are passed over; a row that does not fit its table is an error.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import Launch, Metric, Run
from gpuprof.readers import _nvprof
from gpuprof.readers._text import parse_count
from gpuprof.readers.nvprof_csv_metrics import event, metric

NAME = "nvprof-text-metrics"
DESCRIPTION = (
    "nvprof --metrics / --events text output (Kernel: blocks with Invocations, Metric or Event Name, Min/Max/Avg)"
)
_METRICS = re.compile(r"^\s*Invocations\s+Metric Name\s+Metric Description\s+Min\s+Max\s+Avg\s*$", re.M)
_EVENTS = re.compile(r"^\s*Invocations\s+Event Name\s+Min\s+Max\s+Avg(\s+Total)?\s*$", re.M)
_DEVICE = re.compile(r'^\s*Device\s+"(.*)"\s*$')
_KERNEL = re.compile(r"^\s*+Kernel:\s*+(.*\S|)\s*$")
_CELLS = re.compile(r"\s{2,}")
_ROW = re.compile(r"^\s*\d+\s{2,}\S")  # an invocation count, then a name: a table row


def sniff(path: Path, head: str) -> bool:
    return bool(_METRICS.search(head) or _EVENTS.search(head))


def _metrics(cells: list[str], events: bool) -> list[Metric] | None:
    """The Metrics of one row's cells after the invocation count; None when they do not fit."""
    if events and len(cells) in (4, 5):
        return event(*cells[:4], cells[4] if len(cells) == 5 else "")
    if not events and len(cells) == 5:
        return [metric(cells[0], *cells[2:5])]
    return None


def read(path: Path) -> Run:
    output = _nvprof.load(path)
    found: dict[tuple[int, str, str], tuple[list[int], list[Metric]]] = {}
    indices: dict[str, int] = {}
    events: bool | None = None  # the table we are in: None before the first header
    device, kernel = "", None
    run, tables = 0, set[bool]()  # the run a table belongs to, and the kinds of table that run has shown
    for line in output.lines:
        if _METRICS.match(line) or _EVENTS.match(line):
            events, device, kernel = bool(_EVENTS.match(line)), "", None
            if events in tables:
                run, tables = run + 1, set()
            tables.add(events)
        elif events is None or not line.strip():
            continue
        elif found_device := _DEVICE.match(line):
            device, index = _nvprof.split_device(found_device.group(1))
            if index is not None:
                indices[device] = index
        elif found_kernel := _KERNEL.match(line):
            kernel = found_kernel.group(1)
            found.setdefault((run, device, kernel), ([], []))
        elif _ROW.match(line):
            cells = _CELLS.split(line.strip())
            made = _metrics(cells[1:], events)
            if made is None or kernel is None:
                raise FormatError(
                    f"{path}: line '{line.strip()[:60]}' does not fit the nvprof table above it",
                    "give the complete, unedited output of 'nvprof --metrics/--events ...'",
                )
            counts, metrics = found[(run, device, kernel)]
            counts.append(parse_count(cells[0], 0))
            metrics.extend(made)
        else:
            kernel = None  # prose or a code fence: a row after it belongs to no kernel
    if events is None:
        raise output.no_data("metric table")
    launches = [
        Launch(name, number, device, max(counts), metrics=metrics)
        for number, ((_, device, name), (counts, metrics)) in enumerate(
            (key, value) for key, value in found.items() if value[1]
        )
    ]
    if not launches:
        raise output.no_data("metric rows")
    return _nvprof.make_run(output, NAME, launches, indices)
