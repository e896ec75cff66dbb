"""Nsight Systems kernel summaries: ``nsys stats --report cuda_gpu_kern_sum`` (``gpukernsum``
before nsys 2022) as console text or ``--format csv``, and the same tables inside the console
output of ``nsys profile --stats=true``, wherever they sit in a log or a README.

A kernel summary is any table whose columns include Total Time, Instances and Name (the API and
OS-runtime summaries count "Num Calls", the NVTX summary names a "Range"; neither is read). Each row
becomes one Launch with ``invocations`` = Instances and Avg/Min/Max as the kernel duration; Total
Time, Med, StdDev and Time (%) are kept. nsys gives every time in nanoseconds unless the column
says otherwise. When one file holds several profiling sessions, each Launch names its session's
report file in ``attributes["report"]``.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuprof import units
from gpuprof.errors import FormatError, ProfilerError
from gpuprof.model import Launch, Metric, Run
from gpuprof.readers._text import ends_with_newline, open_text, split_csv_line

NAME = "nsys-stats"
DESCRIPTION = ("nsys stats / nsys profile --stats=true kernel summary (cuda_gpu_kern_sum, gpukernsum), "
               "text or CSV")

_TEXT_CELLS = re.compile(r"\s{2,}")
_UNIT = re.compile(r"^(.*?)\s*\(([^)]*)\)$")  # "Total Time (ns)" -> ("Total Time", "ns")
# What nsys calls a column over the versions -> the name gpuprof stores it under.
_COLUMNS = {
    "Total Time": "Total Time", "Instances": "Instances", "Avg": "Avg", "Average": "Avg",
    "Med": "Med", "Median": "Med", "Min": "Min", "Minimum": "Min", "Max": "Max", "Maximum": "Max",
    "StdDev": "StdDev", "Name": "Name",
}
_TIMES = frozenset({"Total Time", "Avg", "Med", "Min", "Max", "StdDev"})
# The lookbehind starts a match only where a name can start, keeping the search linear on long lines.
_REPORT_FILE = re.compile(r"(?<![^\s\[\]'\"/])([^\s\[\]'\"/]+)\.(?:nsys-rep|qdrep|sqlite)\b")
_DEVICE = re.compile(r"^GPU \d+: General Metrics for (.+?)(?: \(.*\))?\s*$")
_SKIPPED = re.compile(r"SKIPPED: (.*)$")
_DATA_ROW = re.compile(r'^"?[-+\d.,]+"?(?:,|\s)')  # starts with a number, as every summary row does


def _column(label: str) -> tuple[str, str] | None:
    """(stored name, unit) of a column label such as ``Total Time (ns)``; None for other columns."""
    label = label.strip()
    if label.replace(" ", "") == "Time(%)":
        return "Time (%)", "%"
    found = _UNIT.match(label)
    base, unit = (found.group(1), found.group(2)) if found else (label, "")
    name = _COLUMNS.get(base)
    if name is None:
        return None
    return name, unit or ("ns" if name in _TIMES else "")


def _header(line: str) -> tuple[list[str], bool] | None:
    """The column labels when ``line`` heads a kernel summary (and whether it is CSV), else None."""
    text = line.strip()
    if not text or "Instances" not in text or "Name" not in text or "Total Time" not in text:
        return None
    is_csv = text.count(",") >= 3
    labels = [c.strip() for c in (split_csv_line(text) if is_csv else _TEXT_CELLS.split(text))]
    names = [(_column(label) or ("", ""))[0] for label in labels]
    if names[-1:] != ["Name"] or "Instances" not in names or "Total Time" not in names:
        return None
    return labels, is_csv


def sniff(path: Path, head: str) -> bool:
    return any(_header(line) for line in head.splitlines())


def _row(line: str, labels: list[str], is_csv: bool) -> list[str] | None:
    if is_csv:
        cells = split_csv_line(line)
    else:
        cells = line.split(None, len(labels) - 1)
    return cells if len(cells) == len(labels) else None


def _launch(cells: list[str], labels: list[str], index: int, device: str, report: str) -> Launch:
    values: dict[str, tuple[float, str]] = {}
    for label, text in zip(labels, cells):
        column = _column(label)
        number = units.parse_number(text)
        if column and number is not None:
            values[column[0]] = units.to_base(number, column[1])
    def number(name: str) -> float | None:
        return values[name][0] if name in values else None

    metrics = []
    if "Avg" in values:  # the kernel's duration, averaged over its instances
        metrics.append(Metric("Avg", *values["Avg"], canonical="kernel_duration",
                              minimum=number("Min"), maximum=number("Max")))
    metrics += [Metric(name, *values[name]) for name in ("Total Time", "Med", "StdDev", "Time (%)")
                if name in values]
    attributes = {"kind": "kernel", **({"report": report} if report else {})}
    instances = number("Instances")  # 1 unless a whole count (not 0, nan or 1e999)
    count = int(instances) if instances is not None and 1 <= instances < 2**63 else 1
    return Launch(cells[-1].strip(), index, device, count, attributes, metrics)


def read(path: Path) -> Run:
    with open_text(path) as handle:
        lines = [line.rstrip("\r\n") for line in handle]
    notes: list[str] = []
    cut = not ends_with_newline(path)
    launches: list[Launch] = []
    reports: list[str] = []
    device = ""
    skipped: list[str] = []
    table: tuple[list[str], bool] | None = None
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if table is not None:
            if stripped and set(stripped) <= {"-", " "}:
                continue  # the dashes under a text header
            if cut and number == len(lines):
                notes.append("file ends in the middle of a table row (truncated?): that row was not read")
                break
            cells = _row(line, *table) if stripped else None
            if cells is not None:
                report = reports[-1] if reports else ""
                launches.append(_launch(cells, table[0], len(launches), device, report))
                continue
            if _DATA_ROW.match(stripped):
                raise FormatError(f"{path}: line {number} does not fit the kernel summary above it",
                                  "give the unedited output of nsys stats")
            table = None  # a blank line or the next report ends the table
        if found := _REPORT_FILE.search(line):
            if not reports or reports[-1] != found.group(1):
                reports.append(found.group(1))
        if found := _DEVICE.match(stripped):
            device = found.group(1)
        if (found := _SKIPPED.search(line)) and "kernel" in found.group(1).lower():
            skipped.append(found.group(1))
        table = _header(line)
    if not launches:
        if skipped:
            raise ProfilerError(f"{path}: nsys reported: {skipped[0]}",
                                "profile with 'nsys profile -t cuda' an application that launches kernels")
        raise FormatError(f"{path}: no kernel summary rows in this nsys output (empty or truncated)",
                          "give the output of 'nsys stats --report cuda_gpu_kern_sum <report>'")
    environment = {"tool": "nsys", **({"reports": reports} if reports else {})}
    return Run(kind="import", format=NAME, source=str(path), device={"name": device} if device else {},
               environment=environment, launches=launches, notes=notes)
