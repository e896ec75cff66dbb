"""The library behind the CLI: ``import gpuprof`` and get Runs and pandas DataFrames.

Every command is one call here plus rendering, so anything the CLI prints a program can get as data.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuprof.compare import ceilings_for, comparison
from gpuprof.derive.kernel_table import kernel_table
from gpuprof.derive.kernels import launch_frame
from gpuprof.derive.regions import region_frame
from gpuprof.derive.stalls import stall_comparison
from gpuprof.derive.summary import summary_row
from gpuprof.diffing import diff as compare
from gpuprof.importing import read_file
from gpuprof.measure import RunSettings, measure
from gpuprof.model import Run
from gpuprof.store import open_store
from gpuprof.store.runfile import long_table

if TYPE_CHECKING:
    import pandas as pd


def measure_and_store(settings: RunSettings, store_path: str | Path | None = None) -> tuple[Run, Path]:
    """Measure, then store the run whole; returns the run and the store's path."""
    result = measure(settings, str(store_path) if store_path else None)
    with open_store(store_path) as store:
        store.add(result)
        return result, store.path


def run(op: str, size: str | None = None, *, store: str | Path | None = None, save: bool = True, **options: Any) -> Run:
    """Measure ``op`` (e.g. ``gpuprof.run("dot", "6MB")``); options as ``gpuprof.measure.RunSettings``."""
    settings = RunSettings(op=op, size=size, **options)
    if save:
        return measure_and_store(settings, store)[0]
    return measure(settings, str(store) if store else None)


def summary(runs: list[Run]) -> pd.DataFrame:
    """One row per measured run: device, engine, op, size, time, MFLOP/s, GB/s, efficiencies (against
    the same ceilings as ``gpuprof compare``: a CPU run's host calibrations among ``runs`` too)."""
    import pandas as pd

    return pd.DataFrame([summary_row(r, ceilings_for(r, runs)) for r in runs if r.kind == "run"])


def runs(store: str | Path | None = None) -> list[Run]:
    """Every run in the store: measured, imported and calibration runs."""
    with open_store(store, read_only=True) as opened:  # reading never creates or changes a file
        return opened.runs()


def results(store: str | Path | None = None) -> pd.DataFrame:
    """Every measured run in the store, summarised (see :func:`summary`)."""
    return summary(runs(store))


def metrics(store: str | Path | None = None) -> pd.DataFrame:
    """Every stored metric in long format (one row per run × launch × metric), the table
    ``gpuprof export --format parquet|csv`` writes."""
    return long_table(runs(store))


def read(path: str | Path, fmt: str | None = None) -> Run:
    """A profiler output file as a Run, format detected from its content (nothing stored)."""
    return read_file(path, fmt)


def _as_runs(runs: Run | str | Path | list[Run | str | Path]) -> list[Run]:
    """Runs as given, a profiler output file's path read as its Run (one or a list of either)."""
    given = [runs] if isinstance(runs, (Run, str, Path)) else list(runs)
    return [one if isinstance(one, Run) else read(one) for one in given]


def kernels(runs: Run | str | Path | list[Run | str | Path]) -> pd.DataFrame:
    """One row per kernel of imported runs (or of files, read first): time, FLOPs, FLOP/s, DRAM
    traffic, clock, efficiencies."""
    return kernel_table(_as_runs(runs))


def launches(runs: Run | str | Path | list[Run | str | Path]) -> pd.DataFrame:
    """One row per launch of imported runs (or of files, read first), as ncu shows single launches:
    time, FLOPs per precision, tensor and in total, FLOP/s and the peak at the clock it ran at, bytes
    at L1, L2 and DRAM, intensities, the SM clock, and the rule each came from (``basis``). The
    per-kernel table (:func:`kernels`) aggregates exactly these rows (:mod:`gpuprof.derive.kernels`)."""
    import pandas as pd

    frames = [launch_frame(run) for run in _as_runs(runs)]
    return pd.concat(frames, ignore_index=True) if frames else launch_frame(Run("import", "", ""))


def compare_runs(runs: list[Run], reference: bool = False, dtype: str = "float32") -> pd.DataFrame:
    """The comparison's long frame (device × op × size: MFLOP/s, efficiencies, bound, energy),
    optionally with the reference study's published rows."""
    return comparison(runs, reference=reference, dtype=dtype).rows


def stall_reasons(runs: Run | str | Path | list[Run | str | Path]) -> pd.DataFrame:
    """Stall reasons side by side (percent of stall cycles), one column per device and kernel, of
    runs or of files (read first)."""
    return stall_comparison(_as_runs(runs))


def diff(
    a: Any,
    b: Any,
    *,
    match: str = "config",
    fail_if: tuple[str, ...] | list[str] = (),
    store: str | Path | None = None,
    gpus: tuple[str | None, str | None] = (None, None),
    min_change: float = 0.05,
) -> pd.DataFrame:
    """``gpuprof diff``'s frame: A against B per matched kernel (or measured run) and metric, the
    time-weighted totals first, kernels only one side has last. ``a`` and ``b``: profiler files,
    stores, run files, run ids, ``sweep:NAME`` or Runs. ``frame.attrs`` holds the gate lines, the
    exit status the command would give, the number matched and notes."""
    result = compare(a, b, match, fail_if, store, gpus, min_change)
    frame = result.frame
    frame.attrs.update(
        gates=[o.line for o in result.gates],
        exit_code=result.exit_code,
        matched=result.matched,
        only=result.only,
        notes=result.notes,
    )
    return frame


def region_table(run: Run, extra: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per region instance of a profile (name, index, parent, process, rank, thread, start,
    wall time, unclosed, and the metrics named in ``extra``, e.g. "energy (all devices)")."""

    return region_frame(run, extra)
