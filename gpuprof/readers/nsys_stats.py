"""Nsight Systems summaries: ``nsys stats`` reports as console text or ``--format csv``, and the
same tables inside the console output of ``nsys profile --stats=true``, wherever they sit in a log
or a README. Read: the kernel summary (``cuda_gpu_kern_sum``, ``gpukernsum`` before nsys 2022), the
memory operations by time and by size (``cuda_gpu_mem_time_sum``/``gpumemtimesum``,
``cuda_gpu_mem_size_sum``/``gpumemsizesum``), the CUDA API summary (``cuda_api_sum``/
``cudaapisum``) and the NVTX range summary (``nvtx_sum``, the 2020 ``NVTX Push-Pop Range
Statistics``), in the 2020-2021 layouts (``Time(%)``, ``Average``, ``Average (ns)``, sizes in KiB)
and the later ones (``Time (%)``, ``Avg (ns)``, ``Med (ns)``, sizes in MB).

A table is recognised by its columns: Instances and Name (kernels), Total Time and Operation
(memory by time), Total and Operation (memory by size), Num Calls and Name (CUDA API, when the
report it came from says so; the OS runtime summary has the same columns and is not read). Each
kernel row becomes one Launch with ``invocations`` = Instances and Avg/Min/Max as the kernel
duration; Total Time, Med, StdDev and Time (%) are kept. A memory operation becomes one Launch
(``kind`` memcpy or memset) with its duration from the by-time table and its sizes (``Total Size``,
``Avg Size``...) from the by-size table. CUDA API calls are host-side: when the file also holds GPU
tables they are counted in the notes; a file holding only the API summary gets one Launch per call
(``kind`` = api), whose time is kept but not presented as a kernel duration. An NVTX range row is
one Launch of ``kind`` nvtx (host side as well, its Style kept). Rows of one table that repeat a
name are different kernels whose names nsys cut to the same text (``cuda_gpu_kern_sum:base``):
each stays its own Launch, and a note says so.

Times are in nanoseconds unless the column says otherwise; ``MB`` is 10**6 bytes (a 4 MiB copy
prints 4.194) and the older ``KiB`` tables 2**10. Digit grouping is dropped whatever its width
(``8,4521,1450``). Text tables are cut at the columns of the dashes under the header, so cells
holding spaces (``GridXYZ`` as ``32768    1    1``) stay whole. When one file holds several
profiling sessions, each Launch names its session's report file in ``attributes["report"]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from gpuprof.errors import FormatError, ProfilerError
from gpuprof.model import Launch, Metric, Run, units
from gpuprof.readers._text import column_spans, ends_with_newline, last_line_complete, open_text, split_csv_line

NAME = "nsys-stats"
DESCRIPTION = (
    "nsys stats / nsys profile --stats=true summaries of kernels, memory operations, CUDA API calls "
    "and NVTX ranges (cuda_gpu_kern_sum, cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum, cuda_api_sum, "
    "nvtx_sum and the pre-2022 gpukernsum, gpumemtimesum, gpumemsizesum, cudaapisum), text or CSV"
)

_TEXT_CELLS = re.compile(r"\s{2,}")
# What nsys calls a column over the versions -> the name gpuprof stores it under.
_COLUMNS = {
    "Total Time": "Total Time",
    "Total": "Total",
    "Instances": "Count",
    "Count": "Count",
    "Operations": "Count",
    "Num Calls": "Count",
    "Avg": "Avg",
    "Average": "Avg",
    "Med": "Med",
    "Median": "Med",
    "Min": "Min",
    "Minimum": "Min",
    "Max": "Max",
    "Maximum": "Max",
    "StdDev": "StdDev",
    "Name": "Name",
    "Operation": "Name",
    "Range": "Name",
}
_STATISTICS = ("Avg", "Med", "Min", "Max", "StdDev")
# The report a table came from, as the lines before it name it (report name, 2020-2021 title).
_API_REPORT = re.compile(r"cuda_api_sum|cudaapisum|CUDA API (?:Statistics|Summary)")
_REPORT_NAME = re.compile(
    r"\b(?:cuda|gpu|osrt|nvtx|openmp|opengl|vulkan|dx1[12]|um_)\w*sum\b|Statistics"
    r"|Summary \("
)
# The lookbehind starts a match only where a name can start, keeping the search linear on long lines.
_REPORT_FILE = re.compile(r"(?<![^\s\[\]'\"/`*])([^\s\[\]'\"/`*]+)\.(?:nsys-rep|qdrep|sqlite)\b")
_DEVICE = re.compile(r"GPU \d++: General Metrics for (.+)")
_SKIPPED = re.compile(r"SKIPPED: (.*)$")
_DATA_ROW = re.compile(r'^"?[-+\d.,]+"?(?:,|\s)')  # starts with a number, as every summary row does


def _column(label: str) -> tuple[str, str] | None:
    """(stored name, unit) of a column label such as ``Total Time (ns)``; None for other columns.
    The unit is '' when the label gives none."""
    label = label.strip()
    if label.replace(" ", "") == "Time(%)":
        return "Time (%)", "%"
    base, unit = label, ""
    if label.endswith(")") and (opening := label.rfind("(")) >= 0:  # string operations: linear on long labels
        if ")" not in label[opening + 1 : -1]:
            base, unit = label[:opening].rstrip(), label[opening + 1 : -1]
    name = _COLUMNS.get(base)
    return (name, unit) if name else None


@dataclass
class _Table:
    """One summary table as read: what it holds, its columns, and its rows' cells."""

    kind: str  # kernel, mem-time, mem-size or calls (CUDA API or OS runtime: see _api)
    labels: list[str]
    columns: list[tuple[str, str] | None]
    is_csv: bool
    report: str
    device: str
    context: str  # the last line before it that named a report
    spans: list[int] = field(default_factory=list)  # where each text column starts (from the dashes)
    rows: list[list[str]] = field(default_factory=list)


def _header(line: str, context: str) -> _Table | None:
    """The table ``line`` heads (its rows still to come), or None when it heads no table read here."""
    text = line.strip()
    if not text or ("Name" not in text and "Operation" not in text and "Range" not in text) or "Total" not in text:
        return None
    is_csv = text.count(",") >= 3
    labels = [c.strip() for c in (split_csv_line(text) if is_csv else _TEXT_CELLS.split(text))]
    columns = [_column(label) for label in labels]
    names = {column[0] for column in columns if column}
    if not labels or labels[-1] not in ("Name", "Operation", "Range") or "Count" not in names:
        return None
    if labels[-1] == "Range":
        kind = "nvtx" if "Instances" in labels else ""
    elif labels[-1] == "Operation":
        kind = "mem-time" if "Total Time" in names else "mem-size" if "Total" in names else ""
    else:
        kind = "kernel" if "Instances" in labels else "calls" if "Num Calls" in labels else ""
    if not kind or ("Total Time" not in names and kind != "mem-size"):
        return None
    # Unlabelled units: times in ns; sizes in KiB, as the 2020-2021 tables titled '(by size in KiB)'.
    default = "KiB" if kind == "mem-size" else "ns"
    columns = [
        (c[0], c[1] or (default if c[0] in ("Total", "Total Time", *_STATISTICS) else "")) if c else None
        for c in columns
    ]
    return _Table(kind, labels, columns, is_csv, "", "", context)


def _device_name(text: str) -> str:
    """``'NVIDIA A100 (0000:07:00.0)'`` -> ``'NVIDIA A100'``: the name up to its first `` (`` when the rest is
    one parenthesised tail (string operations, linear on a long line)."""
    text = text.rstrip()
    opening = text.find(" (", 1)
    return text[:opening] if opening > 0 and text.endswith(")") else text


def sniff(path: Path, head: str) -> bool:
    return any(_header(line, "") for line in head.splitlines())


def _cells(line: str, table: _Table) -> list[str] | None:
    """The cells of a row: CSV fields, text cut at the dashes' columns, else split on blanks."""
    width = len(table.columns)
    if table.is_csv:
        cells = split_csv_line(line)
    elif (
        table.spans
        and len(line) > table.spans[-1]
        and all(line[s - 1] == " " or line[s] == " " for s in table.spans[1:])
    ):
        cuts = [*table.spans, len(line)]
        cells = [line[a:b].strip() for a, b in zip(cuts, cuts[1:])]
    else:
        cells = line.split(None, width - 1)
    return cells if len(cells) == width else None


def _values(table: _Table, cells: list[str]) -> dict[str, tuple[float, str]]:
    values = {}
    for column, text in zip(table.columns, cells):
        number = units.parse_number(text)
        if column and number is not None:
            values[column[0]] = units.to_base(number, column[1])
    return values


def _metrics(table: _Table, values: dict[str, tuple[float, str]]) -> list[Metric]:
    """A row's values as Metrics: durations under nsys's column names, sizes as '<column> Size'."""

    def number(name: str) -> float | None:
        return values[name][0] if name in values else None

    size = table.kind == "mem-size"
    suffix = " Size" if size else ""
    metrics = []
    if "Avg" in values:  # the average duration (or size) of one instance, with its extremes
        canonical = "kernel_duration" if table.kind in ("kernel", "mem-time") else None
        metrics.append(
            Metric("Avg" + suffix, *values["Avg"], canonical=canonical, minimum=number("Min"), maximum=number("Max"))
        )
    kept = ("Total", "Med", "StdDev") if size else ("Total Time", "Med", "StdDev", "Time (%)")
    return metrics + [Metric(name + suffix, *values[name]) for name in kept if name in values]


def _kind(table: _Table, name: str) -> str:
    if table.kind == "kernel":
        return "kernel"
    if table.kind == "calls":
        return "api"
    if table.kind == "nvtx":
        return "nvtx"
    return "memset" if "memset" in name else "memcpy"


def _api(table: _Table) -> bool:
    """Whether a summary of calls is the CUDA API's: its report says so or, when no report is
    named (a bare CSV), every call is a CUDA one ('cu...'), which no OS runtime call is."""
    if _REPORT_NAME.search(table.context):
        return bool(_API_REPORT.search(table.context))
    return bool(table.rows) and all(cells[-1].strip().startswith("cu") for cells in table.rows)


def _launches(tables: list[_Table]) -> tuple[list[Launch], int, int]:
    """One Launch per kernel, NVTX range, memory operation (its two tables merged) or, when
    nothing else is there, API call; how many API rows were left out; and how many rows repeat
    another row's name in their table (nsys cut their names to the same text: kept apart)."""
    gpu = [t for t in tables if t.kind not in ("calls", "nvtx")]
    api = [t for t in tables if t.kind == "calls" and _api(t)]
    nvtx = [t for t in tables if t.kind == "nvtx"]  # host-side ranges, after the GPU work
    merged: dict[tuple[str, str, str, int], tuple[str, int, dict[str, str], list[Metric]]] = {}
    repeated = 0
    for table in [*(gpu or api), *nvtx]:
        seen: dict[str, int] = {}
        for cells in table.rows:
            name, values = cells[-1].strip(), _values(table, cells)
            # A name seen before in the same table is another kernel whose name nsys cut to the
            # same text: never merged with it (the memory tables' rows still join by name).
            occurrence = seen[name] = seen.get(name, -1) + 1
            repeated += occurrence > 0
            count = values.get("Count", (1.0, ""))[0]  # 1 unless a whole count (not 0, nan or 1e999)
            attributes = {"kind": _kind(table, name), **({"report": table.report} if table.report else {})}
            for label, text in zip(table.labels, cells):  # nsys 2022-2023 kernel tables: '256    1    1'
                if label in ("GridXYZ", "BlockXYZ") and text.split():
                    attributes[label[:-3].lower()] = f"({', '.join(text.split())})"
                if label == "Style" and text.strip():
                    attributes["style"] = text.strip()
            key = (table.report, attributes["kind"], name, occurrence)
            entry = merged.setdefault(key, (table.device, int(count) if 1 <= count < 2**63 else 1, attributes, []))
            entry[3].extend(_metrics(table, values))
    launches = [
        Launch(name, index, device, count, attributes, metrics)
        for index, ((_, _, name, _), (device, count, attributes, metrics)) in enumerate(merged.items())
    ]
    left_out = sum(len(t.rows) for t in api) if gpu else 0
    return launches, left_out, repeated


def read(path: Path) -> Run:
    with open_text(path) as handle:
        lines = [line.rstrip("\r\n") for line in handle]
    notes: list[str] = []
    cut = (
        bool(lines)
        and not ends_with_newline(path)
        and not last_line_complete(lines[-1], "" if len(lines) < 2 else lines[-2])
    )
    tables: list[_Table] = []
    reports: list[str] = []
    device, context = "", ""
    skipped: list[str] = []
    table: _Table | None = None
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if table is not None:
            if stripped and set(stripped) <= {"-", " "}:
                table.spans = [start for _, start, _ in column_spans(line)]  # the dashes under a header
                continue
            if cut and number == len(lines):
                notes.append("file ends in the middle of a table row (truncated?): that row was not read")
                break
            cells = _cells(line, table) if stripped else None
            if cells is not None:
                table.rows.append(cells)
                continue
            if _DATA_ROW.match(stripped):
                raise FormatError(
                    f"{path}: line {number} does not fit the summary table above it",
                    "give the unedited output of nsys stats",
                )
            table = None  # a blank line or the next report ends the table
        if found := _REPORT_FILE.search(line):
            if not reports or reports[-1] != found.group(1):
                reports.append(found.group(1))
        if found := _DEVICE.fullmatch(stripped):
            device = _device_name(found.group(1))
        if found := _SKIPPED.search(line):
            skipped.append(found.group(1))
        if _REPORT_NAME.search(line):
            context = line
        if table := _header(line, context):
            table.report, table.device = (reports[-1] if reports else ""), device
            tables.append(table)
    launches, left_out, repeated = _launches(tables)
    if not launches:
        cuda = [text for text in skipped if "CUDA" in text]
        if cuda:
            raise ProfilerError(
                f"{path}: nsys reported: {cuda[0]}",
                "profile with 'nsys profile -t cuda' an application that launches kernels",
            )
        raise FormatError(
            f"{path}: no kernel, memory or CUDA API summary rows in this nsys output (empty or truncated)",
            "give the output of 'nsys stats --report cuda_gpu_kern_sum <report>'",
        )
    if repeated:
        notes.append(
            f"{repeated} rows repeat a name printed above them in the same table: nsys cut different "
            "names to the same text; each row is kept as its own launch with its own instances"
        )
    if left_out:
        notes.append(f"skipped {left_out} CUDA API rows (host side)")
    elif launches[0].attributes["kind"] == "api":
        notes.append("only a CUDA API summary: host-side calls, imported as launches of kind 'api'")
    environment = {"tool": "nsys", **({"reports": reports} if reports else {})}
    return Run(
        kind="import",
        format=NAME,
        source=str(path),
        device={"name": device} if device else {},
        environment=environment,
        launches=launches,
        notes=notes,
    )
