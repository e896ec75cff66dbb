"""The results store: one SQLite file, one transaction per run.

A run is written whole or not at all (one transaction), so an interrupted or killed gpuprof never
leaves half a run behind, and runs measured before a failure stay stored. WAL mode and a busy
timeout let several gpuprof processes write the same store at once.

Location: ``--store PATH``, else ``$GPUPROF_STORE``, else ``reports/gpuprof.sqlite`` below the
current directory.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gpuprof.errors import StoreError
from gpuprof.model import SCHEMA_VERSION, Launch, Metric, Run

STORE_ENV = "GPUPROF_STORE"
DEFAULT_PATH = Path("reports") / "gpuprof.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, created TEXT NOT NULL, kind TEXT NOT NULL, format TEXT NOT NULL,
    source TEXT NOT NULL, device TEXT NOT NULL, workload TEXT, environment TEXT NOT NULL,
    notes TEXT NOT NULL, schema_version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS launches (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, idx INTEGER NOT NULL,
    kernel TEXT NOT NULL, device TEXT NOT NULL, invocations INTEGER NOT NULL,
    attributes TEXT NOT NULL, PRIMARY KEY (run_id, idx));
CREATE TABLE IF NOT EXISTS metrics (
    run_id TEXT NOT NULL, launch_idx INTEGER NOT NULL, position INTEGER NOT NULL,
    name TEXT NOT NULL, value_num REAL, value_text TEXT, unit TEXT NOT NULL, canonical TEXT,
    origin TEXT NOT NULL, minimum REAL, maximum REAL,
    PRIMARY KEY (run_id, launch_idx, position),
    FOREIGN KEY (run_id, launch_idx) REFERENCES launches(run_id, idx) ON DELETE CASCADE);
"""


def _split_value(metric: Metric) -> tuple[float | None, str | None]:
    """(number, text) columns for a metric value; a value of any other type is a bug upstream."""
    value = metric.value
    if value is None or isinstance(value, str):
        return None, value
    if isinstance(value, (int, float)):
        return float(value), None
    raise TypeError(f"metric {metric.name}: value of type {type(value).__name__} cannot be stored")


def default_path() -> Path:
    return Path(os.environ.get(STORE_ENV) or DEFAULT_PATH)


class Store:
    """Runs in a SQLite file. Open with :func:`open_store`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=60, isolation_level=None)
            self._db.execute("PRAGMA busy_timeout = 60000")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA foreign_keys = ON")
            self._check_version()
        except sqlite3.DatabaseError as error:
            raise StoreError(f"cannot open results store {path}: {error}",
                             "give another path with --store or $GPUPROF_STORE") from None
        except OSError as error:
            raise StoreError(f"cannot create results store {path}: {error.strerror}",
                             "give a writable path with --store or $GPUPROF_STORE") from None

    def _check_version(self) -> None:
        with self._transaction():
            for statement in _SCHEMA.strip().split(";"):
                if statement.strip():
                    self._db.execute(statement)
            row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                self._db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) > SCHEMA_VERSION:
                raise StoreError(
                    f"results store {self.path} was written by a newer gpuprof (schema {row[0]}, "
                    f"this one reads {SCHEMA_VERSION})", "upgrade gpuprof or use another --store")

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, run: Run) -> None:
        """Store ``run`` whole, in one transaction; a run already stored (same id) is left as is."""
        try:
            with self._transaction():
                if self._db.execute("SELECT 1 FROM runs WHERE run_id=?", (run.run_id,)).fetchone():
                    return
                self._db.execute(
                    "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (run.run_id, run.created, run.kind, run.format, run.source,
                     json.dumps(run.device), json.dumps(run.workload) if run.workload is not None else None,
                     json.dumps(run.environment), json.dumps(run.notes), run.schema_version))
                self._db.executemany(
                    "INSERT INTO launches VALUES (?,?,?,?,?,?)",
                    [(run.run_id, pos, launch.kernel, launch.device, launch.invocations,
                      json.dumps({"index": launch.index, **launch.attributes}))
                     for pos, launch in enumerate(run.launches)])
                self._db.executemany(
                    "INSERT INTO metrics VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    [(run.run_id, pos, mpos, m.name, *_split_value(m),
                      m.unit, m.canonical, m.origin, m.minimum, m.maximum)
                     for pos, launch in enumerate(run.launches)
                     for mpos, m in enumerate(launch.metrics)])
        except sqlite3.OperationalError as error:
            raise StoreError(f"cannot write results store {self.path}: {error}",
                             "check free disk space and write permission, or use another --store") from None

    def run_ids(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT run_id FROM runs ORDER BY created, rowid")]

    def get(self, run_id: str) -> Run:
        row = self._db.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id} in {self.path}", "list stored runs with 'gpuprof show'")
        run_id, created, kind, fmt, source, device, workload, environment, notes, version = row
        launches: list[Launch] = []
        metrics: dict[int, list[Metric]] = {}
        for pos, name, num, text, unit, canon, origin, lo, hi in self._db.execute(
                "SELECT launch_idx, name, value_num, value_text, unit, canonical, origin, minimum, maximum "
                "FROM metrics WHERE run_id=? ORDER BY launch_idx, position", (run_id,)):
            metrics.setdefault(pos, []).append(
                Metric(name, num if text is None else text, unit, canon, origin, lo, hi))
        for pos, kernel, dev, invocations, attributes in self._db.execute(
                "SELECT idx, kernel, device, invocations, attributes FROM launches "
                "WHERE run_id=? ORDER BY idx", (run_id,)):
            attrs = json.loads(attributes)
            index = attrs.pop("index", pos)
            launches.append(Launch(kernel, index, dev, invocations, attrs, metrics.get(pos, [])))
        return Run(kind=kind, format=fmt, source=source, device=json.loads(device),
                   workload=json.loads(workload) if workload else None,
                   environment=json.loads(environment), launches=launches, notes=json.loads(notes),
                   created=created, run_id=run_id, schema_version=version)

    def runs(self) -> list[Run]:
        return [self.get(run_id) for run_id in self.run_ids()]


def open_store(path: str | Path | None = None) -> Store:
    return Store(Path(path) if path else default_path())
