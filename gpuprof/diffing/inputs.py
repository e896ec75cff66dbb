"""What one side of a diff names: a profiler file, a store, a JSON-lines run file, a stored run
(by id or id prefix) or a sweep's results (``sweep:NAME``), read into Runs without changing any file.

Stores are opened read-only (:func:`gpuprof.store.open_store`), so diffing another user's results
or a shared folder creates nothing beside them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from gpuprof.errors import FormatError, InputError, StoreError, os_problem
from gpuprof.importing import read_file
from gpuprof.inputs import regular_file
from gpuprof.model import Run
from gpuprof.store import default_path, open_store
from gpuprof.store import runfile as export

SQLITE_MAGIC = b"SQLite format 3\x00"
SWEEP_PREFIX = "sweep:"
_WHAT = (
    "give a profiler output file, a results store, a .jsonl run file, a stored run id (or a prefix of "
    "one, looked up in --store) or sweep:NAME"
)


@dataclass
class Side:
    """One side of a diff: what the user named, the runs it holds and notes on anything skipped."""

    label: str
    kind: str  # "profile", "store", "run file", "run" or "sweep"
    runs: list[Run]
    notes: list[str] = field(default_factory=list)
    clock: str = ""  # the clock its numbers were taken at, in words


def _stored(store_path: str | Path | None) -> list[Run]:
    with open_store(store_path, read_only=True) as store:
        return store.runs()


def _by_id(text: str, store_path: str | Path | None) -> Side:
    """The one stored run whose id starts with ``text``."""
    where = Path(store_path) if store_path else default_path()
    try:
        with open_store(where, read_only=True) as store:
            matches = [run_id for run_id in store.run_ids() if run_id.startswith(text)]
            if len(matches) == 1:
                return Side(f"run {matches[0][:8]}", "run", [store.get(matches[0])])
    except StoreError as error:
        raise InputError(f"'{text}' is neither a file nor a run id: {error.problem}", _WHAT) from None
    if not matches:
        raise InputError(f"'{text}' is neither a file nor a run id in {where}", _WHAT)
    shown = ", ".join(m[:12] for m in matches[:4]) + (" …" if len(matches) > 4 else "")
    raise InputError(
        f"'{text}' matches {len(matches)} runs in {where} ({shown})", "give more of the id ('gpuprof show' lists them)"
    )


def _sweep(name: str, store_path: str | Path | None) -> Side:
    runs = [r for r in _stored(store_path) if ((r.workload or {}).get("sweep") or {}).get("config") == name]
    if not runs:
        names = sorted(
            {
                s["config"]
                for r in _stored(store_path)
                if isinstance(s := (r.workload or {}).get("sweep"), dict) and "config" in s
            }
        )
        raise InputError(
            f"no runs of sweep '{name}' in the store",
            f"stored sweeps: {', '.join(names)}" if names else "run 'gpuprof sweep' first, or give --store",
        )
    return Side(f"sweep {name}", "sweep", runs)


def _file(path: Path) -> Side:
    try:
        with open(regular_file(path, _WHAT), "rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except FormatError as error:  # another user's file, a permission lost since: one line
        raise InputError(error.problem, error.fix) from None
    except OSError as error:
        raise InputError(os_problem(path, error), _WHAT) from None
    if head == SQLITE_MAGIC:
        return Side(str(path), "store", _stored(path))
    if path.suffix in (".jsonl", ".ndjson") or head.lstrip().startswith(b"{"):
        runs, notes = export.load(path)
        if not runs:
            raise InputError(f"{path}: no readable run in this run file", "give a file written by 'gpuprof export'")
        return Side(str(path), "run file", runs, notes)
    return Side(str(path), "profile", [read_file(path)])


def resolve(text: str, store_path: str | Path | None = None) -> Side:
    """The runs ``text`` names: an existing file by its content, else ``sweep:NAME`` or a run id
    (prefix) in the store at ``store_path``."""
    path = Path(text)
    if os.path.isfile(path):
        return _file(path)
    if not text:
        raise InputError("(empty): no such file", _WHAT)
    if text.startswith(SWEEP_PREFIX) and not os.path.lexists(path):
        return _sweep(text[len(SWEEP_PREFIX) :], store_path)
    if os.path.lexists(path) or "/" in text or "\\" in text or "." in text:  # meant as a path: ids have neither
        try:  # a folder, FIFO, device, symlink loop, over-long name or missing file: named as what it is
            regular_file(path, _WHAT)
        except FormatError as error:
            raise InputError(error.problem, error.fix) from None
    return _by_id(text, store_path)
