"""What every nvprof output shares: ``==PID==`` message lines, device names, and byte units.

nvprof's byte units are binary. NVIDIA's Profiler User's Guide never defines the prefixes, so the
choice rests on the numbers nvprof itself prints, checked in the fixtures:

* ``--print-gpu-trace`` (TITAN Xp): a ``[CUDA memcpy DtoD]`` row with Size 1.853027 MB, Duration
  0.015329 ms and Throughput 118.050559 GB/s. 1.853027 x 2**20 B / 15.329 us = 118.05 x 2**30 B/s;
  with decimal prefixes the throughput would read 120.88. The size is 506 x 192 x 5 floats
  (1,943,040 B = 1.853027 x 2**20), the kernel's own grid.
* text ``--print-gpu-trace`` (TITAN Xp, BabelStream): ``1.0240us ... 2.0000KB 1.8626GB/s``;
  2048 B / 1.024 us = 1.8626 x 2**30 B/s (decimal prefixes would print 2.0000GB/s).
* ``--print-gpu-summary`` Unified Memory table: Avg Size 40.860352KB x Count 158 = 6.304688MB
  only with 1 MB = 1024 KB.
* NVIDIA's own CUDA samples count MB/s the same way (bandwidthTest divides by ``1 << 20``).

So ``KB``, ``MB``, ``GB`` (and their ``/s`` rates) in any nvprof output, the metric tables'
``dram_read_throughput`` included, are read as KiB, MiB, GiB. Times use decimal prefixes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from gpuprof.errors import FormatError, ProfilerError
from gpuprof.model import Launch, Metric, Run, units
from gpuprof.readers._text import (
    ToolLog,
    column_spans,
    csv_records,
    ends_with_newline,
    is_csv_header,
    last_line_complete,
    open_text,
    parse_count,
)

TOOL = "nvprof"
_COMMAND = re.compile(r"NVPROF is profiling process (\d+), command: (.*)$")
_DEVICE_INDEX = re.compile(r"\((\d++)\)$")
_BINARY_BYTES = re.compile(r"^([KMGT])B(/s)?$")
# A kernel name with its launch's correlation id after it, as the text trace and the older CSV trace
# (no Correlation_ID column) print it: 'void matrixMulCUDA<int=32>(float*, ...) [1073]'.
CORRELATION = re.compile(r"^(.*\S)\s+\[(\d+)\]$")
_UNIT_WORD = re.compile(r"^(?:%|[KMGT]?B(?:/s)?|[mun]?s)$")


@dataclass
class Output:
    """One nvprof output file: its lines with nvprof's ``==PID==`` messages set aside in ``log``;
    ``placed`` gives each message's place among ``lines`` (the index of the line after it)."""

    path: Path
    lines: list[str]
    log: ToolLog
    notes: list[str] = field(default_factory=list)
    placed: list[tuple[int, str]] = field(default_factory=list)

    def message_before(self, line: int) -> str:
        """The text of the last nvprof message above ``lines[line]`` ("" when none)."""
        return next((text for at, text in reversed(self.placed) if at <= line), "")

    def environment(self) -> dict[str, str]:
        """The profiled command and process id nvprof names in its first message line."""
        for message in self.log.messages:
            found = _COMMAND.search(message.text)
            if found:
                return {"tool": TOOL, "pid": found.group(1), "command": found.group(2).strip()}
        return {"tool": TOOL}

    def no_data(self, what: str) -> Exception:
        """The error for a file without ``what``: nvprof's own complaint when it made one."""
        failure = self.log.failure()
        if failure is not None:
            return ProfilerError(f"{self.path}: {failure.problem}", failure.fix)
        return FormatError(
            f"{self.path}: no {what} in this nvprof output (empty, truncated or another tool's file)",
            "give the complete output nvprof wrote",
        )


def load(path: Path) -> Output:
    """Read ``path``; a last line cut mid-way (no final newline) is dropped and noted."""
    log = ToolLog(TOOL)
    lines: list[str] = []
    placed: list[tuple[int, str]] = []
    with open_text(path) as handle:
        for line in handle:
            if log.add(line):
                placed.append((len(lines), log.messages[-1].text))
            else:
                lines.append(line.rstrip("\r\n"))
    output = Output(path, lines, log, placed=placed)
    if lines and not ends_with_newline(path) and not last_line_complete(lines[-1], "" if len(lines) < 2 else lines[-2]):
        lines.pop()
        output.notes.append("file ends in the middle of a line (truncated?): its last line was not read")
    return output


def csv_table(output: Output, first: tuple[str, ...]) -> tuple[list[str], list[list[str]]] | None:
    """The CSV table whose header starts with the columns ``first``: (header, rows), or None.

    Rows run until the table ends (see ``table_end``).
    """
    for start, line in enumerate(output.lines):
        header = is_csv_header(line, first)
        if header is None or tuple(header[: len(first)]) != first:
            continue
        body: list[str] = []
        for row in output.lines[start + 1 :]:
            if table_end(row):
                break
            body.append(row)
        return header, [r for r in csv_records(body) if r]
    return None


def table_end(line: str) -> bool:
    """Whether ``line`` ends an nvprof table: a blank line, where nvprof starts its next table or
    its footnotes, or a Markdown code fence closing output pasted into a README."""
    return not line.strip() or line.lstrip().startswith(("```", "~~~"))


def units_row(line: str, spans: list[tuple[str, int, int]]) -> dict[str, str]:
    """The units ``nvprof -u ms`` prints on the line under a text header, by header label: each
    unit ends where its column's label ends. Empty when ``line`` is not such a row."""
    words = column_spans(line)
    ends = {end: label for label, _, end in spans}
    if not words or any(not _UNIT_WORD.match(word) or end not in ends for word, _, end in words):
        return {}
    return {ends[end]: word for word, _, end in words}


def split_device(text: str) -> tuple[str, int | None]:
    """``'Tesla K40c (0)'`` -> ``('Tesla K40c', 0)``."""
    text = text.strip()
    found = _DEVICE_INDEX.search(text)  # searched from the end's "(digits)": linear on a long name
    return (text[: found.start()].rstrip(), int(found.group(1))) if found else (text, None)


def to_base(value: float, unit: str) -> tuple[float, str]:
    """nvprof's ``value unit`` in base units, with its byte prefixes read as binary (see above)."""
    unit = unit.strip()
    binary = _BINARY_BYTES.match(unit)
    if binary:
        unit = f"{binary.group(1)}iB{binary.group(2) or ''}"
    return units.to_base(value, unit)


def cell(text: str, unit: str = "") -> tuple[float, str] | None:
    """A cell in base units: its own suffix (``'865.08MB/s'``) or else ``unit``; None if empty."""
    parsed = units.split_value_unit(text)
    if parsed is None:
        return None
    number, suffix = parsed
    return to_base(number, suffix or unit)


def make_run(
    output: Output, fmt: str, launches: list[Launch], indices: dict[str, int], notes: list[str] | None = None
) -> Run:
    """The Run for ``launches``; Run.device names the device when the file has only one."""
    names = list(dict.fromkeys(launch.device for launch in launches if launch.device))
    device: dict[str, object] = {}
    if len(names) == 1:
        device = {"name": names[0], **({"index": indices[names[0]]} if names[0] in indices else {})}
    elif names:
        device = {"names": names}
    return Run(
        kind="import",
        format=fmt,
        source=str(output.path),
        device=device,
        environment=output.environment(),
        launches=launches,
        notes=output.log.notes() + output.notes + (notes or []),
    )


def kind(name: str) -> str:
    """What an activity row is, from the bracketed names nvprof gives non-kernel activities."""
    if name.startswith("[CUDA memcpy"):
        return "memcpy"
    if name.startswith("[CUDA memset"):
        return "memset"
    if name.startswith("[Unified Memory"):
        return "unified-memory"
    return "kernel"


Value = tuple[float, str] | None


def summary_launch(
    name: str, index: int, calls: str, avg: Value, low: Value, high: Value, total: Value, percent: Value
) -> Launch:
    """One "GPU activities" summary row: Avg/Min/Max as the activity's duration over ``calls``."""
    metrics = []
    if avg:  # nvprof's Avg column is the duration averaged over the calls
        metrics.append(
            Metric(
                "Avg",
                avg[0],
                avg[1],
                "kernel_duration",
                minimum=low[0] if low else None,
                maximum=high[0] if high else None,
            )
        )
    metrics += [Metric(label, v[0], v[1]) for label, v in (("Time", total), ("Time(%)", percent)) if v]
    return Launch(
        name, index, invocations=parse_count(calls.strip(), 1), attributes={"kind": kind(name)}, metrics=metrics
    )
