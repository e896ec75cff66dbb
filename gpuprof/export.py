"""Portable run files: one JSON object per line, one line per Run.

For results that must travel without SQLite: a Slurm job writing to a shared filesystem (SQLite
is not safe over NFS), or a machine sending its results to be merged elsewhere. Lines are appended
and flushed one run at a time, so a killed writer loses at most the run it was writing; a partial
last line is skipped on reading and reported.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import Run


def append(path: str | Path, run: Run) -> None:
    """Append ``run`` to ``path`` as one line, flushed and synced to disk."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(run.to_dict()) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def load(path: str | Path) -> tuple[list[Run], list[str]]:
    """Runs in ``path``, and notes on lines that could not be read (e.g. a run cut off mid-write)."""
    runs: list[Run] = []
    notes: list[str] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise FormatError(f"cannot read run file {path}: {error}", "check the path") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            runs.append(Run.from_dict(json.loads(line)))
        except (ValueError, TypeError, KeyError) as error:
            notes.append(f"{path}:{number}: skipped an unreadable run ({type(error).__name__})")
    return runs, notes
