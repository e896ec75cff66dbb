"""nvprof ``--csv --print-gpu-trace`` and ``--csv --print-gpu-summary`` output.

Both print a header, then a units row (``s,ms,,,...``) that gives each column its own unit: the
trace has Start in s but Duration in ms, the summary Max in ms but Avg/Min in us. One mechanism
reads both: every cell is converted with its column's unit (byte prefixes binary, see ``_nvprof``).

* Trace: one Launch per kernel row (grid, block, registers, shared memory, stream as attributes;
  Duration as the metric). ``[CUDA memcpy ...]``/``[CUDA memset]`` rows are GPU work with a
  duration and a size, so they are kept as launches with ``kind`` = ``memcpy``/``memset`` (and Size,
  Throughput). ``[Unified Memory ...]`` rows are page faults and page migrations, not launches: they
  are skipped and counted in the run's notes.
* Summary: one Launch per ``GPU activities`` row, ``invocations`` = Calls, Avg/Min/Max as the
  kernel duration, Time and Time(%) kept. ``API calls`` rows and the second "Unified Memory
  profiling result" table are host-side and skipped (noted); that table's Device names the device.
"""

from __future__ import annotations

from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import Launch, Metric, Run, catalog
from gpuprof.readers import _nvprof, nvprof_api_trace
from gpuprof.readers._text import head_has_csv_header

NAME = "nvprof-csv-trace"
DESCRIPTION = "nvprof --csv --print-gpu-trace or --print-gpu-summary output (units row under the header)"
TRACE = ("Start", "Duration", "Grid X")
SUMMARY = ("Type", "Time(%)", "Time", "Calls")
_ATTRIBUTES = {  # trace column -> Launch attribute, for the columns kept as text
    "Registers Per Thread": "registers",
    "Static SMem": "static_smem_bytes",
    "Dynamic SMem": "dynamic_smem_bytes",
    "SrcMemType": "src_mem",
    "DstMemType": "dst_mem",
    "Context": "context",
    "Stream": "stream",
    "Correlation_ID": "correlation_id",
}


def sniff(path: Path, head: str) -> bool:
    return head_has_csv_header(head, TRACE) or head_has_csv_header(head, SUMMARY)


class Table:
    """Rows by column name with a unit per column, each cell readable in base units."""

    def __init__(self, units: dict[str, str], rows: list[dict[str, str]]) -> None:
        self.units = units
        self.rows = rows

    def cell(self, row: dict[str, str], column: str) -> _nvprof.Value:
        """Column ``column`` of ``row`` in base units, or None when the cell is empty."""
        return _nvprof.cell(row.get(column, ""), self.units.get(column, ""))

    def metric(self, row: dict[str, str], column: str) -> Metric | None:
        value = self.cell(row, column)
        return Metric(column, value[0], value[1], catalog.canonical(column)) if value else None


def _csv_table(path: Path, header: list[str], rows: list[list[str]]) -> Table:
    """The Table of a CSV header + units row + data rows."""
    if not rows or any(_nvprof.cell(c) for c in rows[0] if c.strip()):
        raise FormatError(
            f"{path}: nvprof table has no units row under its header",
            "give nvprof's CSV output unedited (the second line holds the units)",
        )
    for number, row in enumerate(rows[1:], start=1):
        if len(row) < len(header):
            raise FormatError(
                f"{path}: row {number} has {len(row)} of {len(header)} fields (file truncated?)",
                "give the complete nvprof output",
            )
    return Table(dict(zip(header, rows[0])), [dict(zip(header, row)) for row in rows[1:]])


def _dims(row: dict[str, str], prefix: str) -> str | None:
    values = [row.get(f"{prefix} {axis}", "").strip() for axis in "XYZ"]
    return f"({', '.join(values)})" if all(values) else None


def trace(table: Table) -> tuple[list[Launch], dict[str, int], list[str]]:
    """One Launch per trace row, CSV or text (nvprof_text_trace names its columns as the CSV does)."""
    launches: list[Launch] = []
    indices: dict[str, int] = {}
    skipped = 0
    for row in table.rows:
        what = _nvprof.kind(row["Name"])
        if what == "unified-memory":
            skipped += 1
            continue
        device, index = _nvprof.split_device(row.get("Device", ""))
        if index is not None:
            indices[device] = index
        name = row["Name"]
        if not row.get("Correlation_ID", "").strip() and (found := _nvprof.CORRELATION.match(name)):
            # the older CSV trace appends the id to the name: one kernel launched twice is one kernel
            name, row = found.group(1), {**row, "Correlation_ID": found.group(2)}
        attributes = {"kind": what}
        for axis in ("Grid", "Block"):
            if dims := _dims(row, axis):
                attributes[axis.lower()] = dims
        for column, key in _ATTRIBUTES.items():
            if row.get(column, "").strip():
                size = table.cell(row, column) if key.endswith("_bytes") else None
                attributes[key] = f"{size[0]:.15g}" if size else row[column].strip()  # KB -> bytes
        if start := table.cell(row, "Start"):
            attributes["start_s"] = f"{start[0]:.15g}"  # 328.3407 ms, not 0.32834070000000004 s
        metrics = [m for m in (table.metric(row, c) for c in ("Duration", "Size", "Throughput")) if m]
        launches.append(Launch(name, len(launches), device, 1, attributes, metrics))
    notes = [f"skipped {skipped} Unified Memory rows (page faults and migrations, not launches)"]
    return launches, indices, notes if skipped else []


def _summary(table: Table, output: _nvprof.Output) -> tuple[list[Launch], dict[str, int], list[str]]:
    launches: list[Launch] = []
    api = 0
    for row in table.rows:
        if row["Type"] != "GPU activities":
            api += 1
            continue
        cells = [table.cell(row, c) for c in ("Avg", "Min", "Max", "Time", "Time(%)")]
        launches.append(_nvprof.summary_launch(row["Name"], len(launches), row["Calls"], *cells))
    notes = [f"skipped {api} API call rows (host side)"] if api else []
    indices: dict[str, int] = {}
    memory = _nvprof.csv_table(output, ("Device", "Count"))
    if memory:
        notes.append("Unified Memory profiling result table not imported")
        devices = {_nvprof.split_device(row[0]) for row in memory[1] if len(row) == len(memory[0])}
        if len(devices) == 1:
            ((name, index),) = devices
            for launch in launches:
                launch.device = name
            if index is not None:
                indices[name] = index
    return launches, indices, notes


def read(path: Path) -> Run:
    output = _nvprof.load(path)
    for first, parse in ((TRACE, "trace"), (SUMMARY, "summary")):
        found = _nvprof.csv_table(output, first)
        if found is None or "Name" not in found[0]:  # every row is read by its Name
            continue
        table = _csv_table(path, *found)
        if parse == "trace":
            launches, indices, notes = trace(table)
        else:
            launches, indices, notes = _summary(table, output)
        if not launches:
            raise output.no_data("GPU activity rows")
        if parse == "trace":
            calls, api_notes = nvprof_api_trace.api_calls(output, len(launches))
            launches, notes = launches + calls, notes + api_notes
        run = _nvprof.make_run(output, NAME, launches, indices, notes)
        run.environment["nvprof_mode"] = f"gpu-{parse}"
        return run
    raise output.no_data("GPU trace or summary table")
