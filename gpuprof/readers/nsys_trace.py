"""Nsight Systems trace reports: ``nsys stats --report cuda_gpu_trace`` (also what ``nsys nvprof
--print-gpu-trace`` prints) and ``--report cuda_api_trace``, as console text or ``--format csv``,
one row per GPU activity or CUDA API call, wherever they sit in a log or a README.

cuda_gpu_trace: one Launch per row, ``kind`` kernel, memcpy or memset (from the bracketed names nsys
gives memory operations, ``[CUDA memcpy Host-to-Device]`` or ``[CUDA memcpy HtoD]``); grid, block,
registers, static and dynamic shared memory (in bytes), memory kinds, stream, context and correlation
id kept as attributes; Duration as the kernel duration, Bytes and Throughput as nsys printed them.
Unified Memory rows are page migrations, not launches: counted in the notes. cuda_api_trace: one
Launch of ``kind`` api per call, its time as ``API Duration`` (host side, never a kernel duration),
its result, process and thread kept. When one file holds both, each kind stays in its own launches.

Units come from the column labels (``Start (ns)``, ``Bytes (MB)``, ``Throughput (MBps)``, the 2020
``Start(sec)``/``Duration(nsec)``); MB is 10**6 bytes as in every nsys report. Digit grouping is
dropped. Text tables are cut at the columns of the dashes under the header (cells such as
``NVIDIA GeForce RTX 3060 (0)`` hold spaces); the last column (Name or Thread Name) runs to the end
of the line. A row cut short (fewer cells than the header) is left out with a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import Launch, Metric, Run, catalog, units
from gpuprof.readers._nvprof import split_device
from gpuprof.readers._text import column_spans, open_text, split_csv_line

NAME = "nsys-trace"
DESCRIPTION = (
    "nsys stats cuda_gpu_trace / cuda_api_trace (and nsys nvprof --print-gpu-trace) reports, "
    "text or CSV: one launch per GPU activity or CUDA API call"
)

_UNITS = {"sec": "s", "nsec": "ns", "usec": "us", "msec": "ms", "MBps": "MB/s"}
_REPORT_FILE = re.compile(r"(?<![^\s\[\]'\"/`*])([^\s\[\]'\"/`*]+)\.(?:nsys-rep|qdrep|sqlite)\b")
_DASHES = re.compile(r"^[\s-]+$")


def _split_label(label: str) -> tuple[str, str]:
    """'Bytes (MB)' -> ('Bytes', 'MB'), 'Start(sec)' -> ('Start', 's'); string operations, so a
    fuzzed header line of a megabyte costs one pass."""
    label = label.strip()
    opening = label.rfind("(")
    if label.endswith(")") and opening >= 0 and ")" not in label[opening:-1]:
        base, unit = label[:opening].rstrip(), label[opening + 1 : -1]
    else:
        base, unit = label, ""
    return base.replace(" ", "") if base.startswith(("Start", "Duration", "Thru")) else base, _UNITS.get(unit, unit)


@dataclass
class _Table:
    kind: str  # gpu or api
    bases: list[str]
    units: list[str]
    is_csv: bool
    report: str
    starts: list[int] = field(default_factory=list)  # text: where each column starts (its dashes)
    rows: list[list[str]] = field(default_factory=list)
    cut: int = 0  # rows with fewer cells than the header


def _header(line: str) -> _Table | None:
    text = line.strip()
    if "Duration" not in text or "Start" not in text:
        return None
    is_csv = text.count(",") >= 3
    labels = split_csv_line(text) if is_csv else [cell for cell, _, _ in column_spans(text)]
    pairs = [_split_label(label) for label in labels]
    bases = [base for base, _ in pairs]
    if not bases or bases[0] != "Start" or "Duration" not in bases or "Name" not in bases:
        return None
    if "CorrId" in bases and "GrdX" in bases:
        kind = "gpu"
    elif "CorrID" in bases and "Result" in bases:
        kind = "api"
    else:
        return None
    return _Table(kind, bases, [unit for _, unit in pairs], is_csv, "")


def sniff(path: Path, head: str) -> bool:
    return any(_header(line) for line in head.splitlines() if "Start" in line)


def _cells(line: str, table: _Table) -> list[str]:
    if table.is_csv:
        return split_csv_line(line)
    if not table.starts:
        return [cell for cell, _, _ in column_spans(line)]
    cuts = [*table.starts, len(line)]
    return [line[a:b].strip() for a, b in pairwise(cuts)]


def _number(text: str, unit: str) -> tuple[float, str] | None:
    number = units.parse_number(text)
    if number is None:
        return None
    return units.to_base(number, unit) if unit else (number, "")


def _whole(text: str) -> str:
    return text.replace(",", "").strip()


def _gpu_launch(row: dict[str, str], table: _Table, index: int) -> Launch | None:
    name = row["Name"]
    if "Unified Memory" in name:
        return None
    what = "memcpy" if name.startswith("[CUDA memcpy") else "memset" if name.startswith("[CUDA memset") else "kernel"
    attributes = {"kind": what}
    for prefix, key in (("Grd", "grid"), ("Blk", "block")):
        values = [_whole(row.get(f"{prefix}{axis}", "")) for axis in "XYZ"]
        if all(values):
            attributes[key] = f"({', '.join(values)})"
    for column, key in (
        ("CorrId", "correlation_id"),
        ("Reg/Trd", "registers"),
        ("SrcMemKd", "src_mem"),
        ("DstMemKd", "dst_mem"),
        ("Ctx", "context"),
        ("GreenCtx", "green_context"),
        ("Strm", "stream"),
    ):
        if row.get(column, "").strip():
            attributes[key] = _whole(row[column]) if key in ("correlation_id", "registers") else row[column].strip()
    for column, key in (("StcSMem", "static_smem_bytes"), ("DymSMem", "dynamic_smem_bytes")):
        value = _number(row.get(column, ""), table.units[table.bases.index(column)] if column in table.bases else "")
        if value is not None:
            attributes[key] = f"{value[0]:.15g}"
    if report := table.report:
        attributes["report"] = report
    metrics = []
    start = _number(row["Start"], table.units[0])
    if start is not None:
        attributes["start_s"] = f"{start[0]:.15g}"
    for column, metric in (
        ("Duration", "Duration"),
        ("Bytes", "Size"),
        ("Thru", "Throughput"),
        ("Throughput", "Throughput"),
    ):
        if column in table.bases:
            unit = table.units[table.bases.index(column)] or ("byte" if column == "Bytes" else "")
            value = _number(row.get(column, ""), unit)
            if value is not None:
                metrics.append(Metric(metric, *value, catalog.canonical(metric)))
    device, _ = split_device(row.get("Device", ""))
    return Launch(name, index, device, 1, attributes, metrics)


def _api_launch(row: dict[str, str], table: _Table, index: int) -> Launch:
    attributes = {"kind": "api"}
    for column, key in (
        ("CorrID", "correlation_id"),
        ("Result", "result"),
        ("Pid", "pid"),
        ("PID", "pid"),
        ("Tid", "tid"),
        ("TID", "tid"),
        ("ThreadName", "thread"),
        ("Thread Name", "thread"),
    ):
        if row.get(column, "").strip():
            attributes[key] = row[column].strip()
    if table.report:
        attributes["report"] = table.report
    start = _number(row["Start"], table.units[0])
    if start is not None:
        attributes["start_s"] = f"{start[0]:.15g}"
    metrics = []
    duration = _number(row["Duration"], table.units[table.bases.index("Duration")])
    if duration is not None:
        metrics.append(Metric("API Duration", *duration))
    return Launch(row["Name"], index, "", 1, attributes, metrics)


def _tables(lines: list[str]) -> list[_Table]:
    tables: list[_Table] = []
    report = ""
    table: _Table | None = None
    for line in lines:
        stripped = line.strip()
        if table is not None:
            if not table.is_csv and not table.rows and not table.starts and stripped and _DASHES.match(line):
                table.starts = [start for _, start, _ in column_spans(line)]
                continue
            if (
                stripped
                and not stripped.startswith(("```", "[", "Processing", "Generating"))
                or stripped.startswith("[CUDA")
            ):
                cells = _cells(line, table)
                if len(cells) == len(table.bases) and cells[0] and cells[table.bases.index("Name")]:
                    table.rows.append(cells)
                    continue
                if cells and units.parse_number(cells[0]) is not None:
                    table.cut += 1
                    continue
            table = None
        if found := _REPORT_FILE.search(line):
            report = found.group(1)
        if "Start" in line and (table := _header(line)):
            table.report = report
            tables.append(table)
    return tables


def read(path: Path) -> Run:
    with open_text(path) as handle:
        lines = [line.rstrip("\r\n") for line in handle]
    tables = _tables(lines)
    reports = list(dict.fromkeys(t.report for t in tables if t.report))
    if len(reports) < 2:  # one session: the report name adds nothing to each launch
        for table in tables:
            table.report = ""
    launches: list[Launch] = []
    migrations = cut = 0
    for table in tables:
        cut += table.cut
        for cells in table.rows:
            row = dict(zip(table.bases, cells))
            if table.kind == "api":
                launches.append(_api_launch(row, table, len(launches)))
            elif launch := _gpu_launch(row, table, len(launches)):
                launches.append(launch)
            else:
                migrations += 1
    if not launches:
        raise FormatError(
            f"{path}: no rows in this nsys trace report (empty or truncated)",
            "give the output of 'nsys stats --report cuda_gpu_trace <report>'",
        )
    notes = []
    if migrations:
        notes.append(f"skipped {migrations} Unified Memory rows (page migrations, not launches)")
    if cut:
        notes.append(f"left out {cut} row(s) cut short (fewer cells than the header: the file was cut there)")
    if all(launch.attributes["kind"] == "api" for launch in launches):
        notes.append("only CUDA API calls: host-side, imported as launches of kind 'api'")
    names = list(dict.fromkeys(launch.device for launch in launches if launch.device))
    device = {"name": names[0]} if len(names) == 1 else {"names": names} if names else {}
    environment = {"tool": "nsys", **({"reports": reports} if len(reports) > 1 else {})}
    return Run(
        kind="import",
        format=NAME,
        source=str(path),
        device=device,
        environment=environment,
        launches=launches,
        notes=notes,
    )
