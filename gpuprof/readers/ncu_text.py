"""Nsight Compute text summary (``ncu --print-summary per-gpu|per-kernel``), the console output.

Layout: a ``[pid] process@host`` line, ``Device N``, then per kernel and section a block::

    PathTracer(int, Pixel *, int), Block Size 256, Grid Size 8192, 1 invocations
      Section: Compute Workload Analysis
      Metric Name                      Metric Unit Minimum   Maximum   Average
      -------------------------------- ----------- --------- --------- ---------
      sm__inst_executed.avg.per_cycle_active     inst/cycle  1.792525  1.792525  1.792525

Columns are fixed-width: the dashes line gives each column's extent, so empty unit cells are read
correctly. Units are auto-scaled per row ("Kbyte/second", "cycle/nsecond") and converted to base
units. One Launch per kernel line (name, block, grid, invocations); a Metric's value is the Average
with Minimum/Maximum kept. Lines marked as omitted (``[... ...]``) are skipped with a note.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import Launch, Run
from gpuprof.readers._text import ToolLog, convert_cell, metric_maker, open_text

NAME = "ncu-text"
DESCRIPTION = "Nsight Compute text summary (ncu --print-summary per-gpu/per-kernel), fixed-width tables"

_KERNEL = re.compile(r"^\s*(?P<name>\S.*?), Block Size (?P<block>.+?), Grid Size (?P<grid>.+?), "
                     r"(?P<invocations>\d+) invocations?\s*$")
_TABLE_HEADER = re.compile(r"^\s*Metric Name\s+Metric Unit\s+Minimum\s+Maximum\s+Average\s*$")
_DASHES = re.compile(r"-+")
_PROCESS = re.compile(r"^\s*\[(?P<pid>\d+)\]\s+(?P<process>.+?)@(?P<host>\S+)\s*$")
_DEVICE = re.compile(r"^\s*Device (?P<device>\d+)\s*$")
_SECTION = re.compile(r"^\s*Section: (?P<section>.+?)\s*$")
_OMITTED = re.compile(r"^\s*\[\.\.\.")


def sniff(path: Path, head: str) -> bool:
    return any(_TABLE_HEADER.match(line) for line in head.splitlines())


def read(path: Path) -> Run:
    log = ToolLog("ncu")
    reader = _Summary()
    with open_text(path) as handle:
        for line in handle:
            if not log.add(line):
                reader.line(line.rstrip("\r\n"))
    launches = list(reader.launches.values())
    if not launches or not any(launch.metrics for launch in launches):
        raise log.failure(path) or FormatError(f"{path}: no Nsight Compute summary tables with metric rows found",
                                           "Give a complete `ncu --print-summary per-gpu` log")
    notes = log.notes()
    if reader.omitted:
        notes.append(f"the file marks {reader.omitted} place(s) where lines were left out ([...]); "
                     "only the lines present were read")
    return Run(kind="import", format=NAME, source=str(path), device=_device(launches),
               environment={"tool": "ncu"}, launches=launches, notes=notes)


class _Summary:
    """Line-by-line state: where we are (process, device, kernel, section, table columns)."""

    def __init__(self) -> None:
        self.launches: dict[tuple[str, ...], Launch] = {}
        self.context: dict[str, str] = {}
        self.launch: Launch | None = None
        self.section = ""
        self.columns: list[int] | None = None  # start of each fixed-width column
        self.omitted = 0
        self.make = metric_maker()

    def line(self, line: str) -> None:
        if self.columns is not None and line.strip() and not _OMITTED.match(line):
            self._row(line)
            return
        self.columns = None
        if _OMITTED.match(line):
            self.omitted += 1
        elif match := _KERNEL.match(line):
            self._kernel(match)
        elif match := _SECTION.match(line):
            self.section = match["section"]
        elif self.launch is not None and line.strip() and set(line.strip()) <= {"-", " "}:
            self.columns = [m.start() for m in _DASHES.finditer(line)]  # the rule under a table header
        elif match := _PROCESS.match(line):
            self.context.update(match.groupdict())
        elif match := _DEVICE.match(line):
            self.context["device"] = match["device"]

    def _kernel(self, match: re.Match[str]) -> None:
        attributes = {**self.context, "block": match["block"].strip(), "grid": match["grid"].strip()}
        key = (match["name"], *attributes.values(), match["invocations"])
        launch = self.launches.get(key)
        if launch is None:
            launch = self.launches[key] = Launch(kernel=match["name"], index=len(self.launches),
                                                 invocations=int(match["invocations"]),
                                                 attributes=attributes)
        self.launch = launch

    def _row(self, line: str) -> None:
        assert self.launch is not None and self.columns is not None
        starts = self.columns
        if len(starts) != 5:
            return
        cells = [line[start:end].strip() for start, end in zip(starts, [*starts[1:], None])]
        name, unit, minimum, maximum, average = cells
        metric = self.make(name, unit, average)
        low, _ = convert_cell(minimum, unit)
        high, _ = convert_cell(maximum, unit)
        self.launch.metrics.append(dataclasses.replace(metric, minimum=low, maximum=high))
        sections = self.launch.attributes.get("sections", "").split("; ")
        if self.section and self.section not in sections:
            self.launch.attributes["sections"] = "; ".join(s for s in (*sections, self.section) if s)


def _device(launches: list[Launch]) -> dict[str, str]:
    devices = {launch.attributes.get("device", "") for launch in launches}
    return {"index": devices.pop()} if len(devices) == 1 and "" not in devices else {}
