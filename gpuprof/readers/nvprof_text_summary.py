"""Plain ``nvprof ./app`` output: the default summary table, ``Time(%) Time Calls Avg Min Max Name``.

Three layouts are read. CUDA 9 and later put ``GPU activities:`` and ``API calls:`` sections in one
table with a ``Type`` column; earlier versions print a table without it for the GPU activities (after
``==PID== Profiling result:``) and a second one after an ``==PID== API calls:`` line; a file may
hold several runs' tables (outputs pasted one after another). Times carry their unit in the cell (``186.82ms``,
``928ns``) unless ``-u ms``/``-u us`` moved it to a units row under the header, where the values
lose it and small ones turn to exponent notation (``9.89e-03``): each cell is read with its column's
unit, matched by position (units are right-aligned under the labels, like the values).

Each GPU activity row becomes one Launch with ``invocations`` = Calls and Avg/Min/Max as its
duration (kernels, and ``[CUDA memcpy ...]`` rows with ``kind`` = ``memcpy``). API call rows are
host-side CUDA runtime calls, not GPU work: they are skipped and counted in the run's notes.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import Launch, Run
from gpuprof.readers import _nvprof
from gpuprof.readers._text import column_spans

NAME = "nvprof-text-summary"
DESCRIPTION = "nvprof default text summary (GPU activities / API calls, Time(%) Time Calls Avg Min Max Name)"
_HEADER = re.compile(r"^\s*(?:Type\s+)?Time\(%\)\s+Time\s+Calls\s+Avg\s+Min\s+Max\s+Name\s*$", re.M)
_ROW = re.compile(
    r"^\s*(?:(?P<type>[A-Za-z][A-Za-z ]*):)?\s*(?P<percent>[\d.]+%?)\s+(?P<time>\S+)\s+"
    r"(?P<calls>\d+)\s+(?P<avg>\S+)\s+(?P<min>\S+)\s+(?P<max>\S+)\s+(?P<name>\S(?:.*\S)?)\s*$"
)
_VALUES = {"avg": "Avg", "min": "Min", "max": "Max", "time": "Time", "percent": "Time(%)"}


def sniff(path: Path, head: str) -> bool:
    return bool(_HEADER.search(head))


def read(path: Path) -> Run:
    output = _nvprof.load(path)
    launches: list[Launch] = []
    api = 0
    tables = [i for i, line in enumerate(output.lines) if _HEADER.match(line)]
    if not tables:
        raise output.no_data("summary table")
    for number, start in enumerate(tables):
        header = output.lines[start]
        # Without a Type column the nvprof line above says which table it is; with neither, the first
        # table is the GPU activities, later ones the API calls.
        above = output.message_before(start)
        section = (
            ""
            if "Type" in header
            else "API calls"
            if above.startswith("API calls")
            else "GPU activities"
            if number == 0 or above.startswith("Profiling result")
            else "API calls"
        )
        units: dict[str, str] = {}
        for line in output.lines[start + 1 :]:
            if _nvprof.table_end(line):
                break
            if not units and (units := _nvprof.units_row(line, column_spans(header))):
                continue
            row = _ROW.match(line)
            if row is None:
                raise FormatError(
                    f"{path}: cannot read summary line '{line.strip()[:80]}'",
                    "give the complete, unedited output of nvprof",
                )
            section = row["type"] or section
            if section != "GPU activities":
                api += 1
                continue
            cells = [_nvprof.cell(row[key], units.get(label, "")) for key, label in _VALUES.items()]
            launches.append(_nvprof.summary_launch(row["name"], len(launches), row["calls"], *cells))
    if not launches:
        raise output.no_data("GPU activity rows")
    notes = [f"skipped {api} API call rows (host side)"] if api else []
    return _nvprof.make_run(output, NAME, launches, {}, notes)
