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

# Metrics shown as the profiler reported them, after the derived columns, when a file has them.
KEY_METRICS = ("achieved_occupancy", "sm_efficiency", "dram_read_throughput", "dram_write_throughput",
               "gld_efficiency", "gst_efficiency", "warp_execution_efficiency", "issued_ipc")


def _derived_columns() -> list[tuple[str, Callable[[Launch], tuple[float, str] | None]]]:
    """Per-launch values from :mod:`gpuprof.derive.counters`, each with its column title."""
    from gpuprof.derive import counters

    columns: list[tuple[str, Callable[[Launch], tuple[float, str] | None]]] = [
        ("time/launch (s)", counters.kernel_time)]
    for p in counters.PRECISIONS:
        columns.append((f"flop_count_{p}/launch (FLOP)", lambda launch, p=p: counters.flops(launch, p)))
    for p in counters.PRECISIONS:
        columns += [
            (f"FLOP/s {p}", lambda launch, p=p: counters.flop_rate(launch, p)),
            (f"peak FLOP/s {p} at run clock", lambda launch, p=p: counters.peak_flop_rate(launch, p)),
            (f"efficiency {p} at run clock (%)", lambda launch, p=p: counters.flop_efficiency(launch, p)),
        ]
    return columns + [
        ("DRAM bytes/launch", counters.dram_bytes),
        ("DRAM bandwidth (byte/s)", counters.dram_bandwidth),
        ("SM clock (Hz)", counters.sm_clock),
    ]


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


def _weighted(launches: list[Launch], value_of: Callable[[Launch], tuple[float, str] | None]
              ) -> tuple[float, str] | None:
    """Invocation-weighted mean of a per-launch value over the launches that have it, with its unit."""
    pairs = [(launch.invocations, value_of(launch)) for launch in launches]
    known = [(n, v) for n, v in pairs if v is not None]
    count = sum(n for n, _ in known)
    if not count:
        return None
    return sum(n * v[0] for n, v in known) / count, known[0][1][1]


def _label(name: str, unit: str) -> str:
    return f"{name} ({unit})" if unit else name


def _datasheet_efficiency(device: str, rate: float | None) -> float | None:
    """FLOP/s sp as a percentage of the device table's FP32 peak, when the name matches one row."""
    from gpuprof.devices import gpu_table
    from gpuprof.errors import InputError

    if not device or rate is None:
        return None
    try:
        peak = gpu_table.peaks(gpu_table.match(device)).flops_for("float32")
    except InputError:
        return None
    return 100.0 * rate / peak if peak else None


def kernel_table(runs: Iterable[Run]) -> pd.DataFrame:
    """One row per (file, session, device, kernel): launches, then what the counters give —
    time, FLOPs, FLOP/s, the peak at the clock the SMs ran at and the efficiency against it,
    DRAM traffic, the clock — then efficiency against the device table's datasheet peak when the
    device is known, then key metrics as the profiler reported them. Averages are weighted by
    invocations; columns appear only when some row has the value; units are in the titles."""
    import pandas as pd

    derived = _derived_columns()
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
            for title, value_of in derived:
                if value := _weighted(launches, value_of):
                    row[title] = value[0]
            if "time/launch (s)" in row:
                row["time total (s)"] = row["time/launch (s)"] * count  # type: ignore[operator]
            if (efficiency := _datasheet_efficiency(device, row.get("FLOP/s sp"))) is not None:  # type: ignore[arg-type]
                row["efficiency sp vs datasheet peak (%)"] = efficiency
            for key in KEY_METRICS:
                if value := _weighted(launches, lambda launch, key=key: _number(launch, key)):
                    row[_label(key, value[1])] = value[0]
            row["origin"] = (f"{MEASURED} by the profiler ({run.format}); rates, clock and efficiencies "
                             "derived from those counters; datasheet peaks from configs/devices.toml")
            rows.append(row)
    frame = pd.DataFrame(rows)
    leading = ("file", "session", "kernel", "device", "launches", "time/launch (s)", "time total (s)",
               *(title for title, _ in derived if title != "time/launch (s)"))
    first = [c for c in leading if c in frame.columns]
    rest = [c for c in frame.columns if c not in first and c != "origin"]
    return frame[first + rest + (["origin"] if "origin" in frame.columns else [])]
