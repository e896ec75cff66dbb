"""Plain ``nvprof ./app`` output: the default summary table with ``GPU activities:`` and
``API calls:`` sections and a unit suffix in every time cell (``186.82ms``, ``928ns``).

Each ``GPU activities`` row becomes one Launch with ``invocations`` = Calls and Avg/Min/Max as its
duration (kernels, and ``[CUDA memcpy ...]`` rows with ``kind`` = ``memcpy``). ``API calls`` rows
are host-side CUDA runtime calls, not GPU work: they are skipped and counted in the run's notes.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import Launch, Run
from gpuprof.readers import _nvprof

NAME = "nvprof-text-summary"
DESCRIPTION = "nvprof default text summary (GPU activities / API calls, Time(%) Time Calls Avg Min Max Name)"
_HEADER = re.compile(r"^\s*Type\s+Time\(%\)\s+Time\s+Calls\s+Avg\s+Min\s+Max\s+Name\s*$", re.M)
_ROW = re.compile(r"^\s*(?:(?P<type>[A-Za-z][A-Za-z ]*):)?\s+(?P<percent>[\d.]+%)\s+(?P<time>\S+)\s+"
                  r"(?P<calls>\d+)\s+(?P<avg>\S+)\s+(?P<min>\S+)\s+(?P<max>\S+)\s+(?P<name>\S.*?)\s*$")


def sniff(path: Path, head: str) -> bool:
    return bool(_HEADER.search(head))


def read(path: Path) -> Run:
    output = _nvprof.load(path)
    start = next((i for i, line in enumerate(output.lines) if _HEADER.match(line)), None)
    if start is None:
        raise output.no_data("summary table")
    launches: list[Launch] = []
    section = ""
    api = 0
    for line in output.lines[start + 1:]:
        if not line.strip():
            break
        row = _ROW.match(line)
        if row is None:
            raise FormatError(f"{path}: cannot read summary line '{line.strip()[:80]}'",
                              "give the complete, unedited output of nvprof")
        section = row["type"] or section
        if section != "GPU activities":
            api += 1
            continue
        cells = [_nvprof.cell(row[key]) for key in ("avg", "min", "max", "time", "percent")]
        launches.append(_nvprof.summary_launch(row["name"], len(launches), row["calls"], *cells))
    if not launches:
        raise output.no_data("GPU activity rows")
    notes = [f"skipped {api} API call rows (host side)"] if api else []
    return _nvprof.make_run(output, NAME, launches, {}, notes)
