"""nvprof ``--print-api-trace`` output, text or ``--csv``: one row per CUDA runtime or driver API
call, in the order the host made them.

Each call becomes one Launch of ``kind`` api: host side, so its time is ``API Duration``, never a
kernel duration, and the per-kernel table leaves it out beside GPU work. A kernel launch call names
the kernel it launched and that launch's correlation id (``cudaLaunchKernel (vector_add(float*,
...) [112])``): the call is stored as ``cudaLaunchKernel`` with the kernel in ``attributes["launched"]``
and the id in ``correlation_id``, which is also the CSV's ``Correlation_ID`` column. Text cells carry
their unit (``6.7400us``, ``757ns``); the CSV has nvprof's units row under the header. A name that
runs on over an indented continuation line (pasted output) is joined; other lines inside the table
that are not rows (a README's ``.`` elisions) are counted in the notes. GPU trace tables in the
same file are read by the GPU trace readers, which add this table's calls (:func:`api_calls`),
never mixed with kernel rows.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import Launch, Metric, Run
from gpuprof.readers import _nvprof
from gpuprof.readers._text import head_has_csv_header

NAME = "nvprof-api-trace"
DESCRIPTION = "nvprof --print-api-trace output, text or CSV (Start, Duration, Name[, Correlation_ID])"
_TEXT_HEADER = re.compile(r"^\s*Start\s+Duration\s+Name\s*$")
_CSV_HEADER = ("Start", "Duration", "Name", "Correlation_ID")


def sniff(path: Path, head: str) -> bool:
    return head_has_csv_header(head, _CSV_HEADER) or any(_TEXT_HEADER.match(line) for line in head.splitlines())


def _launch(name: str, start: _nvprof.Value, duration: _nvprof.Value, correlation: str, index: int) -> Launch:
    attributes = {"kind": "api"}
    # 'cudaLaunchKernel (kernel(args) [112])': the call, the kernel it launched and that launch's id
    call, _, launched = name.partition(" (")
    if launched.endswith("])") and " [" in launched:
        kernel, _, number = launched[:-2].rpartition(" [")
        if number.isdigit() and call and " " not in call:
            name, attributes["launched"], correlation = call, kernel, number
    if correlation:
        attributes["correlation_id"] = correlation
    if start:
        attributes["start_s"] = f"{start[0]:.15g}"
    metrics = [Metric("API Duration", *duration)] if duration else []
    return Launch(name, index, "", 1, attributes, metrics)


def _text(output: _nvprof.Output) -> tuple[list[Launch], int]:
    launches: list[Launch] = []
    rows: list[list[str]] = []
    other = 0
    inside = False
    for line in output.lines:
        if _TEXT_HEADER.match(line):
            inside = True
            continue
        if not inside:
            continue
        if _nvprof.table_end(line):
            inside = False
            continue
        cells = line.split(None, 2)
        start = _nvprof.cell(cells[0]) if len(cells) == 3 else None
        duration = _nvprof.cell(cells[1]) if start else None
        if start and duration:
            rows.append([cells[2].strip(), start, duration])
        elif rows and line[:1].isspace() and line.strip():  # the name wrapped onto this line
            rows[-1][0] = f"{rows[-1][0].rstrip()} {line.strip()}"
        else:
            other += 1
    for name, start, duration in rows:
        launches.append(_launch(name, start, duration, "", len(launches)))
    return launches, other


def _csv(output: _nvprof.Output) -> list[Launch] | None:
    found = _nvprof.csv_table(output, _CSV_HEADER)
    if found is None:
        return None
    header, rows = found
    if not rows or _nvprof.cell(rows[0][0]):
        raise FormatError(
            f"{output.path}: nvprof API trace has no units row under its header",
            "give nvprof's CSV output unedited (the second line holds the units)",
        )
    units = dict(zip(header, rows[0]))
    launches: list[Launch] = []
    for row in rows[1:]:
        cells = dict(zip(header, row))
        start = _nvprof.cell(cells.get("Start", ""), units["Start"])
        duration = _nvprof.cell(cells.get("Duration", ""), units["Duration"])
        launches.append(
            _launch(
                cells.get("Name", "").strip(), start, duration, cells.get("Correlation_ID", "").strip(), len(launches)
            )
        )
    return launches


def api_calls(output: _nvprof.Output, first_index: int) -> tuple[list[Launch], list[str]]:
    """The API trace table a GPU trace file also holds (``--print-gpu-trace --print-api-trace``):
    its calls as launches of kind api, indexed from ``first_index``, and a note; ([], []) when it
    holds none. An API table that cannot be read gives a note and no calls, so the GPU launches stay
    whole."""
    try:
        calls = _csv(output)
        if calls is None:
            calls, _ = _text(output)
    except FormatError as error:
        return [], [f"the file also holds an API trace that was not read: {error}"]
    for index, launch in enumerate(calls, start=first_index):
        launch.index = index
    note = (
        f"the file also holds an API trace: {len(calls)} CUDA API calls imported as launches of kind "
        "'api' (host side, left out of the per-kernel table)"
    )
    return calls, [note] if calls else []


def read(path: Path) -> Run:
    output = _nvprof.load(path)
    launches = _csv(output)
    other = 0
    if launches is None:
        launches, other = _text(output)
    if not launches:
        raise output.no_data("API trace rows")
    notes = ["CUDA API calls (host side), imported as launches of kind 'api'"]
    if other:
        notes.append(f"skipped {other} lines inside the API trace that are not rows (elided or edited output)")
    run = _nvprof.make_run(output, NAME, launches, {}, notes)
    run.environment["nvprof_mode"] = "api-trace"
    return run
