"""Results from several machines in one store, each run once.

Inputs may be results stores (SQLite), portable run files (JSON lines from :mod:`gpuprof.store.runfile`)
or profiler outputs any reader recognises (a JSON file is a run file unless a reader claims it: framework
traces are JSON objects too). Runs are matched by ``run_id``: merging the same input
twice, or two stores that share runs, adds nothing twice. A profiler output has no id of its own,
so its runs get one from the file's sha256, and merging that file again is a no-op as well.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from gpuprof import readers
from gpuprof.errors import FormatError, StoreError
from gpuprof.importing import read_file
from gpuprof.inputs import regular_file
from gpuprof.model import Run
from gpuprof.readers import nsys_sqlite
from gpuprof.store import default_path, open_store
from gpuprof.store import runfile as export

SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass
class InputResult:
    path: str
    kind: str  # "store", "run file" or the profiler format's name
    added: int
    already: int


@dataclass
class MergeResult:
    inputs: list[InputResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # run files with lines but not one readable run

    @property
    def added(self) -> int:
        return sum(i.added for i in self.inputs)

    @property
    def already(self) -> int:
        return sum(i.already for i in self.inputs)


def _profiler_runs(path: Path) -> tuple[list[Run], str]:
    run = read_file(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    run.run_id = f"import-{digest[:32]}"
    return [run], run.format


def _profiler_output(path: Path) -> bool:
    """Whether a reader recognises the file (a framework trace is JSON that starts with '{' too)."""
    try:
        readers.detect(path)
    except FormatError:
        return False
    return True


def _is_sqlite(path: Path) -> bool:
    path = regular_file(path, "give a results store written by gpuprof with --store")  # a FIFO would block here
    with open(path, "rb") as handle:
        return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC


def load_runs(path: str | Path) -> tuple[list[Run], str, list[str]]:
    """The runs in one input, what kind of input it was, and notes on anything skipped."""
    path = regular_file(path, "give a results store, a .jsonl run file or a profiler output")
    with open(path, "rb") as handle:
        head = handle.read(len(SQLITE_MAGIC))
    if head == SQLITE_MAGIC and nsys_sqlite.is_export(path):  # an Nsight Systems export is a profiler output
        runs, fmt = _profiler_runs(path)
        return runs, fmt, []
    if head == SQLITE_MAGIC:  # opened read-only: a foreign SQLite file is refused untouched
        with open_store(path, read_only=True) as store:
            return store.runs(), "store", store.skipped
    if path.suffix in (".jsonl", ".ndjson") or (head.lstrip().startswith(b"{") and not _profiler_output(path)):
        runs, notes = export.load(path)
        return runs, "run file", notes
    runs, fmt = _profiler_runs(path)
    return runs, fmt, []


def collect(
    stores: list[str | Path], files: list[str | Path], store_optional: bool = False
) -> tuple[list[Run], list[str], list[str]]:
    """Runs of several stores and files, without duplicates, with the sources read and notes on
    anything skipped. No store given: the default store, which may be missing when files are given
    or ``store_optional`` (the reference study's rows need no store)."""
    runs: dict[str, Run] = {}
    notes: list[str] = []
    sources = [str(s) for s in stores]
    if not sources and (default_path().is_file() or not (files or store_optional)):
        sources = [str(default_path())]
    for path in [*sources, *map(str, files)]:
        if path in sources and not os.path.lexists(path):
            raise StoreError(
                f"no results store at {path}", "run 'gpuprof sweep' or 'gpuprof run' first, or give --store"
            )
        if path in sources and not _is_sqlite(Path(path)):
            raise StoreError(
                f"{path} is not a gpuprof results store (not an SQLite file)",
                "give a store written by gpuprof with --store; profiler outputs go to --import",
            )
        found, _, skipped = load_runs(path)
        notes += skipped
        for run in found:
            runs.setdefault(run.run_id, run)
    return list(runs.values()), [*sources, *map(str, files)], notes


def merge(out: str | Path, inputs: list[str | Path]) -> MergeResult:
    """Add every run of ``inputs`` to the store ``out`` (one transaction per run), skipping runs it has."""
    result = MergeResult()
    out_path = os.path.realpath(out)  # realpath, not resolve(): a symlink loop is named by load_runs
    loaded = []
    for path in inputs:
        if os.path.realpath(path) == out_path:
            raise StoreError(f"{path} is both the output store and an input", "give another OUT_STORE")
        try:
            runs, kind, notes = load_runs(path)
        except StoreError as error:  # the store's own advice names --store, which merge does not have
            raise StoreError(
                error.problem, "give results stores, .jsonl run files or profiler outputs as inputs"
            ) from None
        loaded.append((str(path), kind, runs))
        result.notes += notes
        if notes and not runs:
            result.unreadable.append(str(path))
    try:
        with open_store(out) as store:
            have = set(store.run_ids())
            for path, kind, runs in loaded:
                added = 0
                for run in runs:
                    if run.run_id in have:
                        continue
                    store.add(run)
                    have.add(run.run_id)
                    added += 1
                result.inputs.append(InputResult(path, kind, added, len(runs) - added))
    except StoreError as error:  # the store's own advice names --store, which merge does not have
        fix = error.fix if error.fix and "--store" not in error.fix else None  # a full disk's stays
        raise StoreError(
            error.problem, fix or "give another OUT_STORE: a gpuprof results store or a new file"
        ) from None
    return result
