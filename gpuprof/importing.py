"""Import profiler output files into the results store, and summarise them per kernel.

Each file becomes one :class:`~gpuprof.model.Run` (``kind="import"``), read by the reader that
recognises its content and stored whole in one transaction, under an id derived from the file's
bytes (importing a file twice stores it once). Files are imported in order and the first file
that cannot be read stops the import: runs stored before it stay stored, nothing of the failing
file is.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpuprof.errors import FormatError
from gpuprof.inputs import regular_file
from gpuprof.model import MEASURED, Run

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from gpuprof.devices import gpu_table

# Metrics shown as the profiler reported them, after the derived columns, when a file has them.
KEY_METRICS = ("achieved_occupancy", "sm_efficiency", "dram_read_throughput", "dram_write_throughput",
               "gld_efficiency", "gst_efficiency", "warp_execution_efficiency", "issued_ipc")


def _derived_columns() -> list[tuple[str, str]]:
    """(column title, :func:`gpuprof.derive.counters.frame` column) of the per-kernel table's
    averaged columns."""
    from gpuprof.derive.counters import PRECISIONS

    columns = [("time/launch (s)", "time")]
    columns += [(f"flop_count_{p}/launch (FLOP)", f"flops_{p}") for p in PRECISIONS]
    columns += [("tensor FLOP/launch", "flops_tensor"), ("total FLOP/launch", "flops_total")]
    for p in PRECISIONS:
        columns += [(f"FLOP/s {p}", f"flop_rate_{p}"), (f"peak FLOP/s {p} at run clock", f"peak_flop_rate_{p}"),
                    (f"efficiency {p} at run clock (%)", f"flop_efficiency_{p}")]
    return columns + [("DRAM bytes/launch", "dram_bytes"), ("DRAM bandwidth (byte/s)", "dram_bandwidth"),
                      ("SM clock (Hz)", "sm_clock"), ("L1 bytes/launch", "l1_bytes"), ("L2 bytes/launch", "l2_bytes")]


# The hierarchical roofline per kernel (gpuprof.derive.levels), from the kernel's sums.
_ROOFLINE_COLUMNS = [("FLOP/s total", "flop_rate_total"), ("AI L1 (FLOP/byte)", "ai_l1"),
                     ("AI L2 (FLOP/byte)", "ai_l2"), ("AI DRAM (FLOP/byte)", "ai_dram"),
                     ("binding ceiling (FLOP/s)", "binding_ceiling"), ("% of binding ceiling", "binding_percent"),
                     ("binding ceiling", "binding_name"), ("AI check", "ai_check")]


def read_file(path: str | Path, fmt: str | None = None) -> Run:
    """One file as a Run (nothing stored): its format detected from its content unless ``fmt``;
    its notes say where its kernel times cannot be trusted as they stand (:mod:`gpuprof.derive.skew`)."""
    from gpuprof import readers
    from gpuprof.derive import skew

    path = regular_file(path, "give a profiler output file")  # a FIFO, loop or over-long name: one line
    if path.stat().st_size == 0:
        raise FormatError(f"{path}: the file is empty",
                          "give the file the profiler wrote (did the profiling run fail or not finish?)")
    run = readers.read(path, fmt)
    run.notes += skew.notes(run)
    return run


def content_id(path: str | Path | Sequence[str | Path], fmt: str) -> str:
    """The run id of an imported file (or of files read as one): a hash of the bytes and the
    format, so importing the same file again finds the run already stored instead of counting
    its kernels twice."""
    digest = hashlib.sha256(fmt.encode())
    for one in [path] if isinstance(path, (str, Path)) else path:
        with open(one, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:32]


def import_files(paths: Iterable[str | Path], store_path: str | Path | None = None,
                 fmt: str | None = None,
                 on_stored: Callable[[Run, bool], None] | None = None, *,
                 join: bool = False, gpu: str | None = None, tensor_flop_per_inst: float | None = None) -> list[Run]:
    """Read each file and store its Run; returns the runs in order.

    With ``join``, the files are one application's, each holding some of the metrics
    (:mod:`gpuprof.readers.joining`): they are stored as one run, or, when one cannot be read, not at
    all. ``gpu`` names the GPU (a device-table name or key) for files that do not name theirs;
    ``tensor_flop_per_inst`` is the factor for tensor-pipe instructions (:func:`take_tensor_factor`).

    Raises the reader's :class:`~gpuprof.errors.GpuprofError` for the first file that cannot be
    read, after the files before it were stored. ``on_stored(run, added)`` is called after each
    run is stored; ``added`` is False when the same file was already in the store.
    """
    from gpuprof.readers import joining
    from gpuprof.devices import gpu_table
    from gpuprof.store import open_store

    spec = gpu_table.match(gpu) if gpu else None
    tag = (f"|gpu={spec.key}" if spec else "") + (f"|tensor={tensor_flop_per_inst:g}" if tensor_flop_per_inst else "")
    paths = list(paths)
    runs: list[Run] = []
    if join:
        run = joining.join([read_file(path, fmt) for path in paths])
        batches = iter([(run, content_id(paths, f"join|{run.format}{tag}"))])
    else:
        batches = ((run, content_id(path, run.format + tag)) for path in paths for run in [read_file(path, fmt)])
    first = next(batches, None)  # read before the store is opened: a failed import creates no store
    if first is None:
        return runs
    with open_store(store_path) as store:
        for run, run_id in itertools.chain([first], batches):
            if spec:
                name_device(run, spec)
            if tensor_flop_per_inst:
                take_tensor_factor(run, tensor_flop_per_inst)
            run.run_id = run_id
            added = not store.has(run.run_id)
            store.add(run)
            runs.append(run)
            if on_stored:
                on_stored(run, added)
    return runs


def name_device(run: Run, gpu: gpu_table.GpuSpec) -> None:
    """Give ``run`` the GPU the user named, when the file names none (an ncu CSV gives at most its
    compute capability, which must then agree); say so in its notes."""
    from gpuprof.errors import InputError

    named = {d for d in run.launch_table["device"].tolist() if d} | {str(run.device.get("name") or "")} - {""}
    if named:
        run.notes.append(f"--gpu {gpu.key} not used: the file names its GPU ({', '.join(sorted(named))})")
        return
    stated = {a.get("cc", "") for a in run.launch_table["attributes"].tolist()} | {str(run.device.get("cc", ""))}
    stated -= {""}
    if stated and stated != {gpu.cc}:
        raise InputError(f"{run.source}: the file says compute capability {', '.join(sorted(stated))}, but "
                         f"--gpu {gpu.key} ({gpu.title}) is {gpu.cc}", "name the GPU the file was profiled on")
    run.device = {**run.device, "name": gpu.title, "cc": gpu.cc}
    run.notes.append(f"GPU named on the command line (--gpu): {gpu.title}, compute capability {gpu.cc}; "
                     "the file does not name it")


def take_tensor_factor(run: Run, factor: float) -> None:
    """Count ``factor`` FLOPs per tensor-pipe warp instruction where no documented rule counts the
    work (:mod:`gpuprof.derive.tensor`), as NERSC's method does with 512; say so in its notes."""
    run.environment = {**run.environment, "tensor_flop_per_inst": factor}
    run.notes.append(f"--tensor-flop-per-inst {factor:g}: tensor FLOPs = {factor:g} x tensor-pipe warp instructions "
                     "where the file has no sm__ops_path_tensor_* counter and the GPU is not a Volta (an estimate: "
                     "docs/tensor-cores.md section 8)")


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
    """Per group (``groups`` numbers them 0, 1, ...), the invocation-weighted mean of each column
    over the launches that have a value; NaN where none has."""
    import numpy as np
    import pandas as pd

    codes, w = groups.to_numpy(), weights.to_numpy(dtype=float)
    count = int(codes.max()) + 1 if len(codes) else 0
    means = {}
    for column in values.columns:
        x = values[column].to_numpy(dtype=float)
        known = ~np.isnan(x)
        totals = np.bincount(codes[known], weights=(w * x)[known], minlength=count)
        counts = np.bincount(codes[known], weights=w[known], minlength=count)
        with np.errstate(divide="ignore", invalid="ignore"):
            means[column] = np.where(counts > 0, totals / np.where(counts > 0, counts, 1.0), np.nan)
    return pd.DataFrame(means, index=pd.RangeIndex(count), columns=values.columns)


def _sum_ratio(derived: pd.DataFrame, weights: pd.Series, groups: pd.Series) -> Callable[[str, str], np.ndarray]:
    """A ratio of two columns per group: the sum of one over the sum of the other, over the launches
    that have both (invocations counted), as NERSC's method divides a kernel's FLOPs by its bytes."""
    import numpy as np

    codes, w = groups.to_numpy(), weights.to_numpy(dtype=float)
    count = int(codes.max()) + 1 if len(codes) else 0

    def ratio(top: str, bottom: str) -> np.ndarray:
        x, y = derived[top].to_numpy(dtype=float), derived[bottom].to_numpy(dtype=float)
        both = ~np.isnan(x) & ~np.isnan(y)
        tops = np.bincount(codes[both], weights=(w * x)[both], minlength=count)
        bottoms = np.bincount(codes[both], weights=(w * y)[both], minlength=count)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(bottoms > 0, tops / np.where(bottoms > 0, bottoms, 1.0), np.nan)
    return ratio


def _distinct_texts(texts: pd.Series, groups: pd.Series) -> pd.Series:
    """Per group (numbered 0, 1, ...), the distinct non-empty texts of its launches, in launch order,
    joined by ' | '."""
    import numpy as np
    import pandas as pd

    codes, uniques = pd.factorize(texts.to_numpy(dtype=object))
    count = int(groups.max()) + 1 if len(groups) else 0
    pairs, first = np.unique(groups.to_numpy() * len(uniques) + codes, return_index=True)
    found: list[list[str]] = [[] for _ in range(count)]
    for pair in pairs[np.argsort(first, kind="stable")].tolist():
        text = uniques[pair % len(uniques)]
        if text:
            found[pair // len(uniques)].append(text)
    return pd.Series([" | ".join(parts) or None for parts in found], dtype=object)


def _run_kernels(run: Run) -> pd.DataFrame:
    """The per-kernel rows of one run, columns titled as in :func:`kernel_table`."""
    import pandas as pd

    from gpuprof.derive import counters, levels

    launches = run.launch_table
    derived = counters.launch_values(run, KEY_METRICS)
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
    kernels = means.rename(columns={title: column for column, title in titles.items()})
    # a kernel whose launches ran different tensor kinds is judged by its first launch's
    kinds = _distinct_texts(derived["tensor_kind"], groups).fillna("")
    kernels["tensor_kind"] = kinds.str.split(" | ", regex=False).str[0]
    roofline = levels.roofline_columns(kernels, out["device"].tolist(), _sum_ratio(derived, weights, groups))
    out = out.join(roofline.rename(columns={column: title for title, column in _ROOFLINE_COLUMNS})
                   [[title for title, _ in _ROOFLINE_COLUMNS]])
    out["basis"] = _distinct_texts(derived["basis"], groups)
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
    time, FLOPs per precision, tensor and in total, FLOP/s, the peak at the clock the SMs ran at
    and the efficiency against it, DRAM, L2 and L1 traffic, the clock — then the hierarchical
    roofline (FLOP/s and arithmetic intensity per level from the kernel's sums, the binding
    ceiling of the device table and the percent of it, the AI check), efficiency against the
    datasheet peak when the device is known, key metrics as the profiler reported them, and the
    basis of each derived value. Averages are weighted by invocations and taken over the launches
    that have the value; columns appear only when some row has the value; units are in the
    titles. Computed column-wise, per run."""
    import pandas as pd

    frames = [_run_kernels(run) for run in runs]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    frame = frame.replace("", None)  # a text column with nothing in it goes, like an empty number column
    frame = frame.dropna(axis=1, how="all")
    leading = ("file", "session", "kernel", "device", "launches", "time/launch (s)", "time total (s)",
               *(title for title, _ in [*_derived_columns(), *_ROOFLINE_COLUMNS] if title != "time/launch (s)"),
               "efficiency sp vs datasheet peak (%)")
    trailing = [c for c in ("basis", "origin") if c in frame.columns]
    first = [c for c in leading if c in frame.columns]
    rest = [c for c in frame.columns if c not in first and c not in trailing]
    return frame[first + rest + trailing]
