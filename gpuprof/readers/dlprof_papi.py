"""DL-Prof's counter files: ``my_papi``'s ``CPU:value::event`` lines and its result tables.

DL-Prof (github.com/jlpadillas/DL-Prof) starts a PAPI event set on a list of CPUs, stops it at the end
of a region (a whole ``fit``, an epoch, a batch) and appends one line per CPU and event. The file
carries no region names and no times: a block ends where a (CPU, event) pair repeats, so block N is
the N-th start/stop the program made (the N-th epoch in a per-epoch file). Every block and CPU
becomes one launch with the raw counts (origin measured, unit event); nothing is summed here.

Its matrix-product runs were written as text tables instead (``results_SEQ_512.txt``): a header
table (type of multiplication, program, taskset) and one ``Event | Value`` table per CPU (``[CPU =
k]``) or for the whole program, values grouped with '.' (the Spanish locale: ``268.435.456``). Each
count table becomes one launch named ``TYPE PROGRAM taskset=YES|NO``.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import MEASURED, Launch, Metric, Run

NAME = "dlprof-papi"
DESCRIPTION = "DL-Prof / my_papi counter lines (CPU:value::event, blocks per start/stop) and result tables"
_LINE = re.compile(r"^(?P<cpu>\d+):(?P<value>-?\d+)::(?P<event>\S+)$")
_HEADER = re.compile(r"^\|\s*TYPE OF MULTIPLICATION\s*\|\s*PROGRAM\s*\|\s*TASKSET\s*\|$")
_CELLS = re.compile(r"^\|(.*)\|$")
_CPU = re.compile(r"^\[CPU = (\d+)\]$")
_GROUPED = re.compile(r"^-?\d{1,3}(?:\.\d{3})*$")
BASIS = "counted by PAPI on each listed CPU between one start and stop of the program's event set"
BASIS_TABLES = (
    "DL-Prof's result table: main_papi counts PAPI's event set around the product alone (per CPU), "
    "main_perf is perf stat around the whole program"
)


def sniff(path: Path, head: str) -> bool:
    lines = [line.strip() for line in head.splitlines()[:20] if line.strip()]
    if len(lines) >= 2 and _HEADER.match(lines[1]):
        return True
    return len(lines) >= 2 and all(_LINE.match(line) for line in lines[:-1])


def read(path: Path) -> Run:
    with open(path, encoding="utf-8", errors="replace") as handle:
        head = [line.strip() for _, line in zip(range(3), handle) if line.strip()]
    return _read_tables(path) if len(head) >= 2 and _HEADER.match(head[1]) else _read_lines(path)


def _read_tables(path: Path) -> Run:
    """The result tables (module docstring): one launch per count table."""
    launches: list[Launch] = []
    run_of: dict[str, str] = {}
    cpu: str | None = None
    counts: list[Metric] = []
    expect_setup = False

    def close() -> None:
        if counts:
            kernel = f"{run_of['type'].lower()} {run_of['program']} taskset={run_of['taskset']}"
            attributes = {**run_of, "basis": BASIS_TABLES}
            if cpu is not None:
                attributes["cpu"] = cpu
            launches.append(Launch(kernel, len(launches), f"cpu{cpu}" if cpu else "", 1, attributes, list(counts)))
            counts.clear()

    with open(path, encoding="utf-8", errors="replace") as lines:
        for number, raw in enumerate(lines, 1):
            line = raw.strip()
            if _HEADER.match(line):
                close()
                expect_setup, cpu = True, None
                continue
            if match := _CPU.match(line):
                close()
                cpu = match[1]
                continue
            cells = _CELLS.match(line)
            if cells is None:
                if line.startswith("+-") and counts:  # a count table's closing rule
                    close()
                continue
            parts = [part.strip() for part in cells[1].split("|")]
            if expect_setup and len(parts) == 3:
                run_of = {"type": parts[0], "program": parts[1], "taskset": parts[2].lower()}
                expect_setup = False
            elif len(parts) == 2 and parts[0] != "Event":
                if not run_of or not _GROUPED.match(parts[1]):
                    raise FormatError(
                        f"{path}:{number}: not a DL-Prof count row (event | value grouped with '.'): {line[:60]!r}",
                        "give a results table DL-Prof wrote",
                    )
                counts.append(Metric(parts[0], int(parts[1].replace(".", "")), "event", origin=MEASURED))
    close()
    if not launches:
        raise FormatError(f"{path}: no DL-Prof count tables", "give a results table DL-Prof wrote")
    return Run(
        kind="import",
        format=NAME,
        source=str(path),
        device={"kind": "cpu"},
        launches=launches,
        notes=[f"{len(launches)} count table(s) of DL-Prof's matrix-product runs"],
    )


def _read_lines(path: Path) -> Run:
    blocks: list[dict[tuple[int, str], int]] = [{}]
    with open(path, encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            match = _LINE.match(line.strip())
            if match is None:
                raise FormatError(
                    f"{path}:{number}: not a DL-Prof counter line (CPU:value::event): {line.strip()[:60]!r}",
                    "give a file my_papi wrote with ':' as separator",
                )
            key = (int(match["cpu"]), match["event"])
            if key in blocks[-1]:
                blocks.append({})
            blocks[-1][key] = int(match["value"])
    if not blocks[0]:
        raise FormatError(f"{path}: no DL-Prof counter lines", "give a file my_papi wrote")
    launches = []
    for number, block in enumerate(blocks):
        for cpu in sorted({cpu for cpu, _ in block}):
            metrics = [
                Metric(event, value, "event", origin=MEASURED) for (at, event), value in block.items() if at == cpu
            ]
            launches.append(
                Launch(
                    f"block {number}",
                    len(launches),
                    f"cpu{cpu}",
                    1,
                    {"block": str(number), "cpu": str(cpu), "basis": BASIS},
                    metrics,
                )
            )
    return Run(
        kind="import",
        format=NAME,
        source=str(path),
        device={"kind": "cpu"},
        launches=launches,
        notes=[f"{len(blocks)} block(s) of counts (one per start/stop of the event set; the file names none)"],
    )
