"""Portable run files: one JSON object per line, one line per Run.

For results that must travel without SQLite: a Slurm job writing to a shared filesystem (SQLite
is not safe over NFS), or a machine sending its results to be merged elsewhere. A Slurm job appends
and flushes one run at a time, so a killed writer loses at most the run it was writing; a partial
last line is skipped on reading and reported. ``gpuprof export`` replaces the file unless asked
to append. The same runs also go out as one long metric table (Parquet or CSV, the columns of
``gpuprof.metrics()``) for pandas, polars or a spreadsheet: a table, not a run file to merge back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, TYPE_CHECKING

from gpuprof import inputs, outputs
from gpuprof.errors import FormatError, InputError, os_fix, os_problem, shortened
from gpuprof.model import Run, schema

if TYPE_CHECKING:
    import pandas as pd

TABLE_FORMATS = ("parquet", "csv")


def _lines(handle: IO[str], runs: list[Run]) -> None:
    for run in runs:
        handle.write(json.dumps(run.to_dict()) + "\n")


def append(path: str | Path, run: Run) -> None:
    """Append ``run`` to ``path`` as one line, flushed and synced to disk."""
    write(path, [run], replace=False)


def long_table(runs: list[Run]) -> pd.DataFrame:
    """Every metric of ``runs``, one row per run × launch × metric with unit and origin on every
    row (:meth:`Run.metrics_frame`); with its columns even when there is no run."""
    import pandas as pd

    frames = [run.metrics_frame() for run in runs] or [Run("import", "", "").metrics_frame()]
    return pd.concat(frames, ignore_index=True)


def _write_table(path: str | Path, runs: list[Run], fmt: str) -> None:
    """The long table of ``runs`` as the whole of ``path``, Parquet (through pyarrow) or CSV."""
    frame = long_table(runs)
    if fmt == "csv":
        with outputs.replacing(path, "w", encoding="utf-8", newline="") as handle:
            frame.to_csv(handle, index=False)
        return
    try:
        import pyarrow  # noqa: F401  (pandas writes Parquet through it)
    except ImportError:
        raise InputError(
            "writing Parquet needs pyarrow, which is not installed",
            "pip install 'gpuprof[parquet]', or export with --format csv",
        ) from None
    with outputs.replacing(path, "wb") as handle:
        frame.to_parquet(handle, index=False)


def write(path: str | Path, runs: list[Run], replace: bool = True, fmt: str = "jsonl") -> None:
    """``runs`` as the whole of ``path`` (``replace``), or after what it holds. A replacement of a
    regular file is written beside it and renamed over it, so a failed export leaves the old file
    whole; a symlink, device or FIFO is written through (:mod:`gpuprof.outputs`). ``fmt``
    ``parquet`` or ``csv`` writes the long metric table instead of run lines (always replacing)."""
    if fmt in TABLE_FORMATS:
        _write_table(path, runs, fmt)
        return
    if replace:
        with outputs.replacing(path, "w", encoding="utf-8") as handle:
            _lines(handle, runs)
        return
    with outputs.appending(path, encoding="utf-8") as handle:
        try:
            _lines(handle, runs)
            handle.flush()
            if os.path.isfile(path):
                os.fsync(handle.fileno())
        except OSError as error:
            raise InputError(
                f"cannot write run file {os_problem(path, error)}",
                os_fix(error, "give a path in a folder that exists and that you can write"),
            ) from None


def load(path: str | Path) -> tuple[list[Run], list[str]]:
    """Runs in ``path``, and notes on lines that could not be read (e.g. a run cut off mid-write)."""
    runs: list[Run] = []
    notes: list[str] = []
    inputs.regular_file(path, "give a run file written by gpuprof export or a Slurm sweep")
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise FormatError(f"cannot read run file {path}: {error}", "check the path") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except RecursionError:
            problem = "nested too deeply"
        except ValueError as error:  # cut mid-write, not JSON, a number of thousands of digits
            problem = f"{type(error).__name__}: {error}"
        else:
            problem = schema.problem(data)  # checked before a Run exists: nothing odd reaches a store
        if problem:
            notes.append(f"{path}:{number}: skipped, not a whole gpuprof run ({shortened(problem, 200)})")
            continue
        runs.append(Run.from_dict(data))
    return runs, notes
