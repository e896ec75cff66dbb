"""DL-Prof's counter files (``my_papi``'s ``CPU:value::event`` lines, one per CPU and event).

DL-Prof (github.com/jlpadillas/DL-Prof) starts a PAPI event set on a list of CPUs, stops it at the end
of a region (a whole ``fit``, an epoch, a batch) and appends one line per CPU and event. The file
carries no region names and no times: a block ends where a (CPU, event) pair repeats, so block N is
the N-th start/stop the program made (the N-th epoch in a per-epoch file). Every block and CPU
becomes one launch with the raw counts (origin measured, unit event); nothing is summed here.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import MEASURED, Launch, Metric, Run

NAME = "dlprof-papi"
DESCRIPTION = "DL-Prof / my_papi counter lines (CPU:value::event, blocks per start/stop)"
_LINE = re.compile(r"^(?P<cpu>\d+):(?P<value>-?\d+)::(?P<event>\S+)$")
BASIS = "counted by PAPI on each listed CPU between one start and stop of the program's event set"


def sniff(path: Path, head: str) -> bool:
    lines = [line for line in head.splitlines()[:20] if line.strip()]
    return len(lines) >= 2 and all(_LINE.match(line.strip()) for line in lines[:-1])


def read(path: Path) -> Run:
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
