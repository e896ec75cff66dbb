"""Import profiler output files into the results store, and summarise them per kernel.

Each file becomes one :class:`~gpuprof.model.Run` (``kind="import"``), read by the reader that
recognises its content and stored whole in one transaction, under an id derived from the file's
bytes (importing a file twice stores it once). Files are imported in order and the first file
that cannot be read stops the import: runs stored before it stay stored, nothing of the failing
file is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from gpuprof.errors import FormatError
from gpuprof.model import MEASURED, Launch, Run

if TYPE_CHECKING:
    import pandas as pd

# Metrics shown next to time and FLOPs when a file has them (canonical or tool names).
KEY_METRICS = ("achieved_occupancy", "sm_efficiency", "dram_read_throughput", "dram_write_throughput",
               "gld_efficiency", "gst_efficiency", "warp_execution_efficiency", "issued_ipc")
FLOP_METRICS = ("flop_count_sp", "flop_count_dp", "flop_count_hp")


def read_file(path: str | Path, fmt: str | None = None) -> Run:
    """One file as a Run (nothing stored): its format detected from its content unless ``fmt``."""
    from gpuprof import readers

    path = Path(path)
    if path.is_file() and path.stat().st_size == 0:
        raise FormatError(f"{path}: the file is empty",
                          "give the file the profiler wrote (did the profiling run fail or not finish?)")
    return readers.read(path, fmt)


def content_id(path: str | Path, fmt: str) -> str:
    """The run id of an imported file: a hash of its bytes and format, so importing the same file
    again finds the run already stored instead of counting its kernels twice."""
    digest = hashlib.sha256(fmt.encode())
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:32]


def import_files(paths: Iterable[str | Path], store_path: str | Path | None = None,
                 fmt: str | None = None,
                 on_stored: Callable[[Run, bool], None] | None = None) -> list[Run]:
    """Read each file and store its Run; returns the runs in order.

    Raises the reader's :class:`~gpuprof.errors.GpuprofError` for the first file that cannot be
    read, after the files before it were stored. ``on_stored(run, added)`` is called after each
    file; ``added`` is False when the same file was already in the store.
    """
    from gpuprof.store import open_store

    runs: list[Run] = []
    with open_store(store_path) as store:
        for path in paths:
            run = read_file(path, fmt)
            run.run_id = content_id(path, run.format)
            added = run.run_id not in store.run_ids()
            store.add(run)
            runs.append(run)
            if on_stored:
                on_stored(run, added)
    return runs


def _number(launch: Launch, key: str) -> tuple[float, str] | None:
    found = launch.metric(key)
    if found is None or not isinstance(found.value, (int, float)):
        return None
    return float(found.value), found.unit


def _weighted(launches: list[Launch], key: str) -> tuple[float, str] | None:
    """Invocation-weighted mean of ``key`` over the launches that have it, with its unit."""
    pairs = [(launch.invocations, _number(launch, key)) for launch in launches]
    pairs = [(n, v) for n, v in pairs if v is not None]
    count = sum(n for n, _ in pairs)
    if not count:
        return None
    return sum(n * v[0] for n, v in pairs) / count, pairs[0][1][1]


def _label(name: str, unit: str) -> str:
    return f"{name} ({unit})" if unit else name


def kernel_table(runs: Iterable[Run]) -> pd.DataFrame:
    """One row per (file, session, device, kernel): launches, time per launch and in total, FLOPs per
    launch and key metrics, all as the profiler measured them (averages weighted by invocations).
    Columns appear only when some run has the value; units are in the column names."""
    import pandas as pd

    rows: list[dict[str, object]] = []
    for run in runs:
        groups: dict[tuple[str, str, str], list[Launch]] = {}
        for launch in run.launches:
            device = launch.device or str(run.device.get("name", ""))
            # One file may hold several profiling sessions (nsys --stats logs): kept apart.
            session = launch.attributes.get("report", "")
            groups.setdefault((session, device, launch.kernel), []).append(launch)
        for (session, device, kernel), launches in groups.items():
            count = sum(launch.invocations for launch in launches)
            row: dict[str, object] = {"file": Path(run.source).name}
            if session:
                row["session"] = session
            row.update(kernel=kernel, device=device, launches=count)
            if duration := _weighted(launches, "kernel_duration"):
                row["time/launch (s)"] = duration[0]
                row["time total (s)"] = duration[0] * count
            for key in FLOP_METRICS:
                if flops := _weighted(launches, key):
                    row[f"{key}/launch (FLOP)"] = flops[0]
            for key in KEY_METRICS:
                if value := _weighted(launches, key):
                    row[_label(key, value[1])] = value[0]
            row["origin"] = f"{MEASURED} ({run.format})"
            rows.append(row)
    frame = pd.DataFrame(rows)
    leading = ("file", "session", "kernel", "device", "launches", "time/launch (s)", "time total (s)",
               *(f"{key}/launch (FLOP)" for key in FLOP_METRICS))
    first = [c for c in leading if c in frame.columns]
    rest = [c for c in frame.columns if c not in first and c != "origin"]
    return frame[first + rest + (["origin"] if "origin" in frame.columns else [])]
