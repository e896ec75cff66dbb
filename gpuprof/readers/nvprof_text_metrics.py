"""nvprof ``--metrics`` output without ``--csv``: a fixed-width table grouped under
``Device "..."`` and ``Kernel: ...`` lines.

Cells are separated by runs of two or more spaces (descriptions and values such as ``Max (10)``
use single spaces inside). Each kernel becomes one Launch with its invocation count; values carry
their unit in the cell (``865.08MB/s``, ``0.00000B/s`` and ``1.5910GB/s`` in one column), read with
nvprof's binary byte prefixes: see ``gpuprof.readers._nvprof`` for why MB/s means 2**20 byte/s.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import Launch, Run
from gpuprof.readers import _nvprof
from gpuprof.readers._text import parse_count
from gpuprof.readers.nvprof_csv_metrics import metric

NAME = "nvprof-text-metrics"
DESCRIPTION = "nvprof --metrics text output (Kernel: blocks with Invocations, Metric Name, Min/Max/Avg)"
_HEADER = re.compile(r"^\s*Invocations\s+Metric Name\s+Metric Description\s+Min\s+Max\s+Avg\s*$", re.M)
_DEVICE = re.compile(r'^\s*Device\s+"(.*)"\s*$')
_KERNEL = re.compile(r"^\s*Kernel:\s*(.*?)\s*$")
_CELLS = re.compile(r"\s{2,}")


def sniff(path: Path, head: str) -> bool:
    return bool(_HEADER.search(head))


def read(path: Path) -> Run:
    output = _nvprof.load(path)
    body = output.lines
    start = next((i for i, line in enumerate(body) if _HEADER.match(line)), None)
    if start is None:
        raise output.no_data("metric table")
    launches: list[Launch] = []
    indices: dict[str, int] = {}
    device = ""
    for line in body[start + 1:]:
        if not line.strip():
            continue
        if line.lstrip().startswith("Invocations"):
            break  # an --events table follows; gpuprof reads metrics only
        if found := _DEVICE.match(line):
            device, index = _nvprof.split_device(found.group(1))
            if index is not None:
                indices[device] = index
            continue
        if found := _KERNEL.match(line):
            launches.append(Launch(found.group(1), len(launches), device, invocations=0))
            continue
        cells = _CELLS.split(line.strip())
        invocations = parse_count(cells[0], -1) if len(cells) == 6 else -1
        if invocations < 0 or not launches:
            raise FormatError(f"{path}: cannot read metric line '{line.strip()[:80]}'",
                              "give the complete, unedited output of 'nvprof --metrics ...'")
        launch = launches[-1]
        launch.invocations = max(launch.invocations, invocations)
        launch.metrics.append(metric(cells[1], *cells[3:6]))
    launches = [launch for launch in launches if launch.metrics]
    if not launches:
        raise output.no_data("metric rows")
    return _nvprof.make_run(output, NAME, launches, indices)
