"""nvprof ``--print-gpu-trace`` output without ``--csv``: one fixed-width row per kernel launch,
memcpy and memset, values with their unit inside the cell (``1.6782ms``, ``2.0000KB``,
``1.8626GB/s``, byte prefixes binary: see ``_nvprof``) and the correlation id after the kernel
name (``void copy_kernel<double>(double const *, double*) [135]``).

Columns are right-aligned under their header label, so each cell is cut at the label ends; only
Name, the last column, is left-aligned. With ``-u ms``/``-u us`` (``--normalized-time-unit``) the
cells are bare numbers and a row under the header gives each column's unit, right-aligned under its
label as in the ``-u ms`` text summary; bare times or sizes with no such row are refused, not
guessed. The rows are renamed to the CSV trace's columns and read by the same code
(``nvprof_csv_trace.trace``): the two outputs give the same launches.

A table ends at a blank line or at a Markdown code fence (output pasted into a README); every
table in the file is read, in order, so a README that pastes several runs gives all their launches.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import Launch, Run
from gpuprof.model import units as units_lib
from gpuprof.readers import _nvprof, nvprof_api_trace
from gpuprof.readers._text import column_spans
from gpuprof.readers.nvprof_csv_trace import Table, trace

NAME = "nvprof-text-trace"
DESCRIPTION = "nvprof --print-gpu-trace text output (Start Duration Grid Size Block Size ... Name)"
_HEADER = re.compile(r"^\s*Start\s+Duration\s+Grid Size\s+Block Size\s.*\sName\s*$", re.M)
_NEEDS_UNIT = ("Start", "Duration", "Size", "Throughput")  # bare numbers here are meaningless
_DIMS = re.compile(r"^\((\d+) (\d+) (\d+)\)$")
# text header label -> the CSV trace's column name
_COLUMNS = {
    "Start": "Start",
    "Duration": "Duration",
    "Regs*": "Registers Per Thread",
    "SSMem*": "Static SMem",
    "DSMem*": "Dynamic SMem",
    "Size": "Size",
    "Throughput": "Throughput",
    "SrcMemType": "SrcMemType",
    "DstMemType": "DstMemType",
    "Device": "Device",
    "Context": "Context",
    "Stream": "Stream",
}


def _bare(cell: str) -> bool:
    """A number without a unit suffix, as nvprof prints cells under ``-u``."""
    parsed = units_lib.split_value_unit(cell)
    return parsed is not None and not parsed[1]


def sniff(path: Path, head: str) -> bool:
    return bool(_HEADER.search(head))


def _cells(line: str, ends: list[int], name_start: int) -> list[str] | None:
    """The cells of ``line`` cut at the column ends; None when a value runs across a cut."""
    cuts = [0, *ends, name_start]
    if len(line) <= name_start or any(0 < c < len(line) and line[c - 1] != " " and line[c] != " " for c in cuts[1:]):
        return None
    cells = [line[a:b].strip() for a, b in zip(cuts, cuts[1:])][: len(ends)]
    return [("" if c == "-" else c) for c in cells] + [line[name_start:].strip()]


def _row(labels: list[str], cells: list[str]) -> dict[str, str]:
    """A text row under the CSV trace's column names (grid and block split, sizes in bytes)."""
    row = {_COLUMNS[label]: cell for label, cell in zip(labels, cells) if label in _COLUMNS}
    for label, prefix in (("Grid Size", "Grid"), ("Block Size", "Block")):
        if dims := _DIMS.match(dict(zip(labels, cells)).get(label, "")):
            row.update({f"{prefix} {axis}": value for axis, value in zip("XYZ", dims.groups())})
    for column in ("Static SMem", "Dynamic SMem"):  # '8.0000KB' -> '8192', as the CSV gives bytes
        if size := _nvprof.cell(row.get(column, "")):
            row[column] = f"{size[0]:.0f}"
    name = cells[-1]
    if found := _nvprof.CORRELATION.match(name):
        name, row["Correlation_ID"] = found.groups()
    row["Name"] = name
    return row


def _table(path: Path, lines: list[str], start: int) -> Table:
    """The trace table whose header is ``lines[start]``, its rows by the CSV trace's column names."""
    spans = column_spans(lines[start])
    labels = [label for label, _, _ in spans]
    ends, name_start = [end for _, _, end in spans[:-1]], spans[-1][1]
    units: dict[str, str] = {}
    rows: list[dict[str, str]] = []
    for line in lines[start + 1 :]:
        if _nvprof.table_end(line):
            break  # nvprof's footnotes (Regs: ..., SSMem: ...) follow a blank line
        if not rows and not units and (found := _nvprof.units_row(line, spans)):
            units = {_COLUMNS.get(label, label): unit for label, unit in found.items()}  # nvprof -u
            continue
        cells = _cells(line, ends, name_start)
        if cells is None:
            raise FormatError(
                f"{path}: trace line '{line.strip()[:60]}' does not fit the columns of its header",
                "give the complete, unedited output of 'nvprof --print-gpu-trace'",
            )
        rows.append(_row(labels, cells))
    if bare := next((c for c in _NEEDS_UNIT if c not in units and any(_bare(row.get(c, "")) for row in rows)), None):
        raise FormatError(
            f"{path}: {bare} cells carry no unit and no units row gives one",
            "give nvprof's output unedited: with -u (--normalized-time-unit) the line under "
            "the header holds each column's unit",
        )
    return Table(units, rows)


def read(path: Path) -> Run:
    output = _nvprof.load(path)
    starts = [i for i, line in enumerate(output.lines) if _HEADER.match(line)]
    if not starts:
        raise output.no_data("GPU trace table")
    launches: list[Launch] = []
    indices: dict[str, int] = {}
    notes: list[str] = []
    for start in starts:  # one table per profiled run; a README may paste several
        found, found_indices, found_notes = trace(_table(path, output.lines, start))
        for launch in found:
            launch.index = len(launches)
            launches.append(launch)
        indices.update(found_indices)
        notes += found_notes
    if not launches:
        raise output.no_data("kernel, memcpy or memset rows")
    calls, api_notes = nvprof_api_trace.api_calls(output, len(launches))
    return _nvprof.make_run(output, NAME, launches + calls, indices, notes + api_notes)
