"""TensorFlow 2 and JAX ``*.xplane.pb`` profiles (the XSpace protobuf the profiler writes), read
through Google's ``xprof`` package (the ``[xprof]`` extra).

xprof turns the XSpace into its trace viewer's JSON, which is the TF2/JAX Chrome-trace dialect
:mod:`gpuprof.readers.chrome_trace` reads (host ops per thread, device kernels per stream, step
markers), and into its framework op statistics, kept as launches of kind ``op-stats`` (per op:
occurrences, total and self time as xprof aggregated them). xprof writes cache files beside the
file it converts, so the file is copied to a temporary folder first and converted there: reading
never creates a file beside the user's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpuprof.errors import FormatError
from gpuprof.model import Launch, Metric, Run, from_launches
from gpuprof.model import tables as _tables
from gpuprof.readers import chrome_trace
from gpuprof.readers._compressed import plain_file
from gpuprof.readers._trace_events import parse_events

NAME = "xplane"
DESCRIPTION = "TensorFlow 2 / JAX *.xplane.pb profiles (XSpace protobuf), through the xprof package"
READS_GZIP = True


def sniff(path: Path, head: str) -> bool:
    return path.name.endswith((".xplane.pb", ".xplane.pb.gz"))


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """xprof's C++ logging writes a line per conversion step to file descriptor 2."""
    saved = os.dup(2)
    quiet = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(quiet, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(quiet)
        os.close(saved)


def convert(path: Path, tool: str) -> Any:
    """xprof's ``tool`` data (trace_viewer, framework_op_stats ...) of the XSpace at ``path``,
    converted from a copy in a temporary folder."""
    try:
        from xprof.convert import raw_to_tool_data
    except ImportError:
        raise FormatError(
            f"{path}: reading .xplane.pb profiles needs the xprof package",
            "pip install 'gpuprof[xprof]' (or pip install xprof)",
        ) from None
    with tempfile.TemporaryDirectory(prefix="gpuprof-xplane-") as folder, plain_file(path) as plain:
        copy = Path(folder) / (path.name.removesuffix(".gz"))
        shutil.copyfile(plain, copy)
        with _quiet_stderr():
            data, _ = raw_to_tool_data.xspace_to_tool_data([str(copy)], tool, {"use_saved_result": False})
    if data is None:
        raise FormatError(f"{path}: xprof could not convert it ({tool})", "give the .xplane.pb the profiler wrote")
    return data.decode() if isinstance(data, bytes) else data


def _op_stats(path: Path) -> list[Launch]:
    """xprof's framework op statistics (a Google Charts table) as launches of kind op-stats."""
    tables = json.loads(convert(path, "framework_op_stats"))
    table = tables[0] if isinstance(tables, list) and tables else {}
    ids = [column["id"] for column in table.get("cols", [])]
    launches = []
    for index, row in enumerate(table.get("rows", [])):
        cells = dict(zip(ids, (cell.get("v") if isinstance(cell, dict) else None for cell in row["c"])))
        metrics = [Metric("occurrences", float(cells.get("occurrences") or 0), "")]
        metrics += [
            Metric(name, float(cells[key]) * 1e-6, "second")
            for key, name in (("total_time", "total time"), ("total_self_time", "self time"))
            if isinstance(cells.get(key), (int, float))
        ]
        launches.append(
            Launch(
                str(cells.get("operation", "")),
                index,
                str(cells.get("host_or_device", "")),
                attributes={"kind": "op-stats", "type": str(cells.get("type", ""))},
                metrics=metrics,
            )
        )
    return launches


def read(path: Path) -> Run:
    doc, events = parse_events(convert(path, "trace_viewer"), path)
    run = chrome_trace.from_events(doc, events, path, NAME, {"converter": "xprof trace_viewer"})
    stats = _op_stats(path)
    if not stats:
        return run
    import pandas as pd

    launch_table, metric_table = from_launches(stats)  # after the trace's launches, numbered on
    launch_table["index"] += len(run.launch_table)
    metric_table["launch"] += len(run.launch_table)
    metrics = pd.concat([run.metric_table, metric_table], ignore_index=True)
    for column in _tables.CATEGORY_COLUMNS:
        metrics[column] = metrics[column].astype("category")
    notes = [*run.notes, f"{len(stats)} rows of xprof's framework op statistics kept as launches of kind op-stats"]
    return Run(
        kind=run.kind,
        format=run.format,
        source=run.source,
        device=run.device,
        environment=run.environment,
        notes=notes,
        tables=(pd.concat([run.launch_table, launch_table], ignore_index=True), metrics),
    )
