"""Portable run files: one JSON object per line, one line per Run.

For results that must travel without SQLite: a Slurm job writing to a shared filesystem (SQLite
is not safe over NFS), or a machine sending its results to be merged elsewhere. A Slurm job appends
and flushes one run at a time, so a killed writer loses at most the run it was writing; a partial
last line is skipped on reading and reported. ``gpuprof export`` replaces the file unless asked
to append.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO

from gpuprof import inputs, outputs
from gpuprof.errors import FormatError, InputError, shortened
from gpuprof.model import Run, schema


def _lines(handle: IO[str], runs: list[Run]) -> None:
    for run in runs:
        handle.write(json.dumps(run.to_dict()) + "\n")


def append(path: str | Path, run: Run) -> None:
    """Append ``run`` to ``path`` as one line, flushed and synced to disk."""
    write(path, [run], replace=False)


def write(path: str | Path, runs: list[Run], replace: bool = True) -> None:
    """``runs`` as the whole of ``path`` (``replace``), or after what it holds. A replacement of a
    regular file is written beside it and renamed over it, so a failed export leaves the old file
    whole; a symlink, device or FIFO is written through (:mod:`gpuprof.outputs`)."""
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
            raise InputError(f"cannot write run file {path}: {error.strerror or error}",
                             "give a path in a folder that exists and that you can write") from None


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
