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
from gpuprof.model import MEASURED, Run

if TYPE_CHECKING:
    import pandas as pd

# Metrics shown as the profiler reported them, after the derived columns, when a file has them.
KEY_METRICS = ("achieved_occupancy", "sm_efficiency", "dram_read_throughput", "dram_write_throughput",
               "gld_efficiency", "gst_efficiency", "warp_execution_efficiency", "issued_ipc")


def _derived_columns() -> list[tuple[str, str]]:
    """(column title, :func:`gpuprof.derive.counters.frame` column) of the per-kernel table."""
    from gpuprof.derive.counters import PRECISIONS

    columns = [("time/launch (s)", "time")]
    columns += [(f"flop_count_{p}/launch (FLOP)", f"flops_{p}") for p in PRECISIONS]
    for p in PRECISIONS:
        columns += [(f"FLOP/s {p}", f"flop_rate_{p}"), (f"peak FLOP/s {p} at run clock", f"peak_flop_rate_{p}"),
                    (f"efficiency {p} at run clock (%)", f"flop_efficiency_{p}")]
    return columns + [("DRAM bytes/launch", "dram_bytes"), ("DRAM bandwidth (byte/s)", "dram_bandwidth"),
                      ("SM clock (Hz)", "sm_clock")]


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


def _label(name: str, unit: str) -> str:
    return f"{name} ({unit})" if unit else name


def _datasheet_efficiency(device: str, rate: float) -> float | None:
    """FLOP/s sp as a percentage of the device table's FP32 peak, when the name matches one row."""
    from gpuprof.devices import gpu_table
    from gpuprof.errors import InputError

    if not device or rate != rate:  # NaN: no rate
        return None
    try:
        peak = gpu_table.peaks(gpu_table.match(device)).flops_for("float32")
    except InputError:
        return None
    return 100.0 * rate / peak if peak else None


def _weighted_means(values: pd.DataFrame, weights: pd.Series, groups: pd.Series) -> pd.DataFrame:
    """Per group, the invocation-weighted mean of each column over the launches that have a value."""
    known = values.notna()
    totals = values.mul(weights, axis=0).where(known).groupby(groups, sort=False).sum(min_count=1)
    counts = known.mul(weights, axis=0).groupby(groups, sort=False).sum()
    return totals / counts.where(counts > 0)


def _run_kernels(run: Run) -> pd.DataFrame:
    """The per-kernel rows of one run, columns titled as in :func:`kernel_table`."""
    import pandas as pd

    from gpuprof.derive import counters

    launches = run.launch_table
    derived = counters.frame(run, KEY_METRICS)
    units = derived.attrs["units"]
    default_device = str(run.device.get("name", ""))
    # One file may hold several profiling sessions (nsys --stats logs): kept apart.
    keys = pd.DataFrame({"session": [a.get("report", "") for a in launches["attributes"].tolist()],
                         "device": [d or default_device for d in launches["device"].tolist()],
                         "kernel": launches["kernel"].tolist()})
    groups = keys.groupby(list(keys.columns), sort=False).ngroup()
    weights = launches["invocations"].astype(float)
    titles = {column: title for title, column in _derived_columns()}
    titles.update({key: _label(key, units[key] or "") for key in KEY_METRICS})
    means = _weighted_means(derived[list(titles)], weights, groups).rename(columns=titles)
    out = keys.groupby(groups, sort=False).first()
    out["session"] = out["session"].where(out["session"] != "")
    out.insert(0, "file", Path(run.source).name)
    out["launches"] = launches["invocations"].groupby(groups, sort=False).sum()
    out = out.join(means)
    if "time/launch (s)" in out:
        out.insert(out.columns.get_loc("time/launch (s)") + 1, "time total (s)",
                   out["time/launch (s)"] * out["launches"])
    out["efficiency sp vs datasheet peak (%)"] = [
        _datasheet_efficiency(device, rate) for device, rate in zip(out["device"], out["FLOP/s sp"])]
    out["origin"] = (f"{MEASURED} by the profiler ({run.format}); rates, clock and efficiencies "
                     "derived from those counters; datasheet peaks from configs/devices.toml")
    return out.reset_index(drop=True)


def kernel_table(runs: Iterable[Run]) -> pd.DataFrame:
    """One row per (file, session, device, kernel): launches, then what the counters give —
    time, FLOPs, FLOP/s, the peak at the clock the SMs ran at and the efficiency against it,
    DRAM traffic, the clock — then efficiency against the device table's datasheet peak when the
    device is known, then key metrics as the profiler reported them. Averages are weighted by
    invocations and taken over the launches that have the value; columns appear only when some
    row has the value; units are in the titles. Computed column-wise, per run."""
    import pandas as pd

    frames = [_run_kernels(run) for run in runs]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    frame = frame.dropna(axis=1, how="all")
    leading = ("file", "session", "kernel", "device", "launches", "time/launch (s)", "time total (s)",
               *(title for title, _ in _derived_columns() if title != "time/launch (s)"),
               "efficiency sp vs datasheet peak (%)")
    first = [c for c in leading if c in frame.columns]
    rest = [c for c in frame.columns if c not in first and c != "origin"]
    return frame[first + rest + (["origin"] if "origin" in frame.columns else [])]
