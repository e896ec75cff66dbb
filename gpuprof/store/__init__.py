"""The results store: one SQLite file, one transaction per run.

A run is written whole or not at all (one transaction), so an interrupted or killed gpuprof never
leaves half a run behind, and runs measured before a failure stay stored. WAL mode and a busy
timeout let several gpuprof processes write the same store at once. A file gpuprof did not write
in this schema (another version, another program, a damaged store) is refused and left untouched;
SQLite's own failures (disk full, read-only file) become one-line StoreErrors.

Location: ``--store PATH``, else ``$GPUPROF_STORE``, else ``reports/gpuprof.sqlite`` below the
current directory.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from gpuprof import inputs
from gpuprof.errors import FormatError, StoreError, os_fix, os_problem, shortened
from gpuprof.model import SCHEMA_VERSION, Launch, Metric, Run, schema
from gpuprof.outputs import creatable_in, regular_file
from gpuprof.store import columns as store_columns

STORE_ENV = "GPUPROF_STORE"
DEFAULT_PATH = Path("reports") / "gpuprof.sqlite"
BUSY_SECONDS = 60  # how long a writer waits for another one before giving up
_READ_FIX = "the file may be damaged; give another path with --store or $GPUPROF_STORE"

# Version 2: a run's tables are stored whole, one BLOB per column (gpuprof.store.columns), so a
# million metric rows are written and read in well under a second; version 1 wrote one row per
# metric (kept below to read old stores and migrate them on their first write).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, created TEXT NOT NULL, kind TEXT NOT NULL, format TEXT NOT NULL,
    source TEXT NOT NULL, device TEXT NOT NULL, workload TEXT, environment TEXT NOT NULL,
    notes TEXT NOT NULL, schema_version INTEGER NOT NULL, launches INTEGER NOT NULL DEFAULT 0,
    metrics INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS columns (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, tbl TEXT NOT NULL, name TEXT NOT NULL,
    encoding TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (run_id, tbl, name));
CREATE INDEX IF NOT EXISTS runs_by_kind ON runs(kind);
"""
# Calibrations are looked up by kind on every `run` and sweep point: through this index, the time does
# not grow with the store. Stores written before it get it on their next write (no layout change).
_KIND_INDEX = _SCHEMA.strip().split(";")[3]

_SCHEMA_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, created TEXT NOT NULL, kind TEXT NOT NULL, format TEXT NOT NULL,
    source TEXT NOT NULL, device TEXT NOT NULL, workload TEXT, environment TEXT NOT NULL,
    notes TEXT NOT NULL, schema_version INTEGER NOT NULL);
CREATE TABLE launches (
    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, idx INTEGER NOT NULL,
    kernel TEXT NOT NULL, device TEXT NOT NULL, invocations INTEGER NOT NULL,
    attributes TEXT NOT NULL, PRIMARY KEY (run_id, idx));
CREATE TABLE metrics (
    run_id TEXT NOT NULL, launch_idx INTEGER NOT NULL, position INTEGER NOT NULL,
    name TEXT NOT NULL, value_num REAL, value_text TEXT, unit TEXT NOT NULL, canonical TEXT,
    origin TEXT NOT NULL, minimum REAL, maximum REAL,
    PRIMARY KEY (run_id, launch_idx, position),
    FOREIGN KEY (run_id, launch_idx) REFERENCES launches(run_id, idx) ON DELETE CASCADE);
"""


def default_path() -> Path:
    return Path(os.environ.get(STORE_ENV) or DEFAULT_PATH)


def _layout(db: sqlite3.Connection) -> dict[str, list[str]]:
    """Table name -> column names, for every table in ``db``."""
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {t: [c[1] for c in db.execute(f"PRAGMA table_info('{t}')")] for t in tables}


def _expected_layout(version: int = SCHEMA_VERSION) -> dict[str, list[str]]:
    """The layout of a store of ``version``, read from its schema so the two cannot disagree."""
    db = sqlite3.connect(":memory:")
    db.executescript(_SCHEMA if version == SCHEMA_VERSION else _SCHEMA_V1)
    layout = _layout(db)
    db.close()
    return layout


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that can neither create nor change a file, for commands that only read.

    Without a WAL file beside the store no writer is active and every committed run is in the
    store itself, so it is opened immutable: SQLite then creates no -wal/-shm files, which a plain
    read-only open would leave behind (in another user's folder, too). With a WAL file (a writer
    at work, or one that was killed) it is opened read-only so the runs in the WAL are read as well.
    """
    if not path.exists():
        raise StoreError(
            f"no results store at {path}",
            "measure with 'gpuprof run' or 'gpuprof sweep' (they create it), or give another --store",
        )
    if not path.is_file():
        raise StoreError(f"{path} is not a file", "give the path of a gpuprof results store with --store")
    if path.stat().st_size == 0:
        raise StoreError(
            f"{path} is an empty file, not a gpuprof results store",
            "give a store written by gpuprof with --store or $GPUPROF_STORE",
        )
    mode = "mode=ro" if Path(f"{path}-wal").exists() else "immutable=1"
    return sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True, timeout=BUSY_SECONDS, isolation_level=None)


def _connect(path: Path) -> sqlite3.Connection:
    if path.is_file() and not os.access(path.parent, os.W_OK) and not Path(f"{path}-wal").exists():
        # On a read-only mount SQLite cannot create the WAL index beside the store, so even reading
        # fails; nothing can change the file there, so it is opened as immutable (read-only). With
        # a WAL file left beside it, the plain open reads it (immutable would ignore its runs).
        return sqlite3.connect(f"{path.resolve().as_uri()}?immutable=1", uri=True, isolation_level=None)
    return sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None)


def _creatable(path: Path, real: Path) -> None:
    """StoreError when a store could not be created at ``real`` (its nearest existing folder is not
    a folder this process can write), without creating anything."""
    folder = real.parent
    while not folder.exists():
        folder = folder.parent
    why = (
        "Not a directory"
        if not folder.is_dir()
        else "Read-only file system"
        if os.statvfs(folder).f_flag & os.ST_RDONLY
        else "Permission denied"
        if not os.access(folder, os.W_OK)
        else creatable_in(folder)
    )
    if why:
        raise StoreError(
            f"cannot create results store {path}: {why}", "give a writable path with --store or $GPUPROF_STORE"
        )


def _switch_to_wal(db: sqlite3.Connection) -> None:
    """WAL mode, waiting while another process holds the store: SQLite does not wait on a lock
    for a journal-mode change (it could deadlock), so eight processes opening a new store at once
    would otherwise fail with 'database is locked'."""
    deadline = time.monotonic() + BUSY_SECONDS
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _full(error: sqlite3.DatabaseError) -> bool:
    return getattr(error, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_FULL


def _database_error(action: str, path: Path, error: sqlite3.DatabaseError, fix: str) -> StoreError:
    """SQLite's error as one line; a full disk worded as every other writer words it."""
    if _full(error):
        full = OSError(errno.ENOSPC, "disk full")
        return StoreError(f"cannot {action} results store {os_problem(path, full)}", os_fix(full, fix))
    return StoreError(f"cannot {action} results store {path}: {error}", fix)


# The page size of a new store: its runs are column BLOBs of megabytes, which SQLite writes page by
# page twice (to the WAL, then the file); at 16 KiB rather than SQLite's 4 KiB a 16 MB run is a
# quarter of the pages, written in two thirds of the time. Larger pages write faster still, but an
# empty store holds a page per table and index: at 64 KiB over half a megabyte, which a nearly
# full disk may not have.
PAGE_BYTES = 1 << 14


class Store:
    """Runs in a SQLite file. Open with :func:`open_store`."""

    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self.skipped: list[str] = []  # runs that could not be decoded, for the commands to say so
        if read_only and os.path.lexists(path):  # a FIFO or device would block or never end: refuse first
            try:
                inputs.regular_file(path)
            except FormatError as error:
                raise StoreError(
                    f"results store {error.problem}", "give a gpuprof results store with --store or $GPUPROF_STORE"
                ) from None
        self._connection: sqlite3.Connection | None = None
        self._made = False  # this process created the file: removed again if nothing could be stored
        # through a symlink to its target; a device or FIFO cannot hold SQLite's file
        self._real = (
            path
            if read_only
            else regular_file(path, "results store", StoreError, "give a file path with --store or $GPUPROF_STORE")
        )
        if read_only or self._real.exists():
            self._connection = self._open()
        else:  # created by the first write: a command that fails before storing leaves no file
            _creatable(path, self._real)

    @property
    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = self._open()
        return self._connection

    def open(self) -> None:
        """Open the store now (a new one: create it), not at its first use."""
        self._db  # noqa: B018 (the property opens it)

    def _created(self) -> bool:
        """Whether the store is there to read (a new store is made by its first write)."""
        return self._connection is not None or self._real.exists()

    def writable(self) -> None:
        """StoreError now when runs could not be written into this store later (a read-only file or
        mount): for commands that measure for a while before they store."""
        folder = self._real.parent
        while not folder.exists():
            folder = folder.parent
        for place in ([self._real] if self._real.exists() else []) + [folder]:
            if not os.access(place, os.W_OK):
                why = "Read-only file system" if os.statvfs(place).f_flag & os.ST_RDONLY else "Permission denied"
                raise StoreError(
                    f"cannot write results store {self.path}: {place} is not writable ({why})",
                    "give a writable path with --store or $GPUPROF_STORE",
                )

    def _open(self) -> sqlite3.Connection:
        path, read_only = self.path, self.read_only
        try:
            if read_only:
                db = _connect_read_only(path)
            else:
                self._real.parent.mkdir(parents=True, exist_ok=True)
                self._made = self._made or not os.path.lexists(self._real)
                db = _connect(self._real)
        except OSError as error:
            raise StoreError(
                f"cannot create results store {os_problem(path, error)}",
                os_fix(error, "give a writable path with --store or $GPUPROF_STORE"),
            ) from None
        except sqlite3.DatabaseError as error:
            raise StoreError(
                f"cannot open results store {path}: {error}", "give a writable path with --store or $GPUPROF_STORE"
            ) from None
        self._connection = db
        try:
            db.execute(f"PRAGMA busy_timeout = {BUSY_SECONDS * 1000}")
            db.execute("PRAGMA foreign_keys = ON")
            if read_only and not _layout(db):  # nothing to read, and nothing may be created
                raise StoreError(
                    f"{path} is an SQLite file but not a gpuprof results store (it has no tables)",
                    "give another path with --store or $GPUPROF_STORE",
                )
            self._check_schema()
            if not read_only and db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                _switch_to_wal(db)
            return db
        except StoreError:
            self._connection = None
            db.close()
            raise
        except sqlite3.DatabaseError as error:
            self._connection = None
            db.close()
            self._discard_new()
            raise _database_error(
                "open",
                path,
                error,
                "give a gpuprof results store with --store or $GPUPROF_STORE"
                if read_only
                else "check free disk space and write permission, or give another path with --store or $GPUPROF_STORE",
            ) from None

    def _discard_new(self) -> None:
        """Remove the store this process created when it could not be set up or, on a full disk, not one
        run could be stored in it: a failed command leaves no store behind, as one that fails before
        storing does."""
        if not self._made:
            return
        if self._connection is not None:
            with suppress(sqlite3.Error):
                if self._connection.execute("SELECT 1 FROM runs LIMIT 1").fetchone():
                    return
            self._connection.close()
            self._connection = None
        for name in (self._real, *(Path(f"{self._real}{end}") for end in ("-wal", "-shm", "-journal"))):
            with suppress(OSError):
                name.unlink()
        self._made = False

    def _check_schema(self) -> None:
        """Create the tables in a new (empty) file; refuse any file this gpuprof cannot read.

        An existing store is only read here, so a store on a read-only mount can still be shown.
        A store of schema 1 is read as it is and migrated on its first write (:meth:`add`); a
        store of a newer schema, a store missing a table and another program's SQLite file are
        refused untouched, never altered.
        """
        if not _layout(self._db):
            self._db.execute(f"PRAGMA page_size = {PAGE_BYTES}")  # takes effect only while the file is empty
            with self._transaction():
                if not _layout(self._db):  # no other process created it meanwhile
                    self._create()
        layout = _layout(self._db)
        if not (set(_expected_layout()) | set(_expected_layout(1))) & set(layout):
            raise StoreError(
                f"{self.path} is an SQLite file but not a gpuprof results store "
                f"(its tables: {', '.join(sorted(layout))})",
                "give another path with --store or $GPUPROF_STORE",
            )
        version = self._version() if "meta" in layout else None
        if version is not None and version > SCHEMA_VERSION:
            raise StoreError(
                f"results store {self.path} was written by a newer gpuprof (schema {version}, "
                f"this one reads 1 to {SCHEMA_VERSION})",
                "upgrade gpuprof or use another --store",
            )
        expected = _expected_layout(1 if version == 1 else SCHEMA_VERSION)
        missing = [t for t in expected if t not in layout]
        changed = [t for t in expected if t in layout and layout[t] != expected[t]]
        if missing or changed:
            what = "; ".join(
                [f"table {t} is missing" for t in missing] + [f"table {t} has other columns" for t in changed]
            )
            raise StoreError(
                f"results store {self.path} does not have the layout this gpuprof writes ({what})",
                "it was damaged or written by another version; give another path with --store or $GPUPROF_STORE",
            )
        if version is None:
            raise StoreError(
                f"results store {self.path} has no schema version",
                "it was damaged or not written by gpuprof; give another --store",
            )
        if version < 1:
            raise StoreError(
                f"results store {self.path} was written by an older gpuprof (schema {version}, "
                f"this one reads 1 to {SCHEMA_VERSION} and has no migration from it)",
                "read it with the gpuprof that wrote it, or use another --store",
            )

    def _version(self) -> int | None:
        row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row[0]) if row and str(row[0]).isdigit() else None

    def _create(self) -> None:
        for statement in _SCHEMA.strip().split(";"):
            if statement.strip():
                self._db.execute(statement)
        self._db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))

    @contextmanager
    def _errors(self, action: str, fix: str) -> Iterator[None]:
        """SQLite's errors (disk full, read-only file, damaged file) as one-line StoreErrors."""
        try:
            yield
        except sqlite3.DatabaseError as error:
            if action == "write" and _full(error):
                self._discard_new()
            raise _database_error(action, self.path, error, fix) from None

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:  # SQLite may already have rolled back (disk full)
                with suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, run: Run, columns: list[tuple[str, str, str, bytes]] | None = None) -> None:
        """Store ``run`` whole, in one transaction; a run already stored (same id) is left as is.
        A schema-1 store is migrated to the current schema first, in the same transaction.
        ``columns``: its tables as :func:`gpuprof.store.columns.encode` gives them, made already
        (the import encodes them before it derives on another thread, so that SQLite's writing,
        which lets go of the GIL, is all that runs beside the derivation)."""
        if columns is None:
            columns = list(store_columns.encode(run.launch_table, run.metric_table, text_rows=run.text_rows()))
        parts = [(run.run_id, *part) for part in columns]
        with self._adding(run) as new:
            if new:
                self._insert(run, parts)

    def add_streamed(self, run: Run, metrics: int, columns: Iterable[store_columns.Streamed]) -> None:
        """Store ``run`` with its launch table and the ``metrics`` rows of its metric table given as
        ``columns`` streamed piece by piece (:class:`gpuprof.store.columns.MetricSpill`), in one
        transaction as :meth:`add`: each column's BLOB is made at its full size and filled in
        place, so no column is ever held whole. ``run.metric_table`` is not stored (it may hold
        only some rows)."""
        launches = [(run.run_id, *part) for part in store_columns.encode(run.launch_table, None, ("launches",))]
        with self._adding(run) as new:
            if not new:
                return
            self._insert(run, launches, metrics)
            for table, name, encoding, size, pieces in columns:
                row = self._db.execute(
                    "INSERT INTO columns VALUES (?,?,?,?,zeroblob(?))", (run.run_id, table, name, encoding, size)
                ).lastrowid
                with self._db.blobopen("columns", "data", row) as blob:
                    for piece in pieces:
                        blob.write(piece)

    @contextmanager
    def _adding(self, run: Run) -> Iterator[bool]:
        """The transaction a run is stored in (a schema-1 store migrated to the current schema first);
        yields whether ``run`` is new (False: a run of its id is stored already, left as is)."""
        with (
            self._errors("write", "check free disk space and write permission, or use another --store"),
            self._transaction(),
        ):
            if self._version() == 1:
                self._migrate()
            self._db.execute(_KIND_INDEX)
            yield not self._db.execute("SELECT 1 FROM runs WHERE run_id=?", (run.run_id,)).fetchone()

    def _insert(self, run: Run, parts: list[tuple[str, str, str, str, bytes]], metrics: int | None = None) -> None:
        self._db.execute(
            "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run.run_id,
                run.created,
                run.kind,
                run.format,
                run.source,
                json.dumps(run.device),
                json.dumps(run.workload) if run.workload is not None else None,
                json.dumps(run.environment),
                json.dumps(run.notes),
                run.schema_version,
                len(run.launch_table),
                len(run.metric_table) if metrics is None else metrics,
            ),
        )
        self._db.executemany("INSERT INTO columns VALUES (?,?,?,?,?)", parts)

    def _migrate(self) -> None:
        """Schema 1 to the current one, inside the caller's transaction: every run is read the
        old way and written again as columns; then the per-metric tables go."""
        runs = [self._get_v1(run_id) for run_id in self.run_ids()]
        self._db.execute("DROP TABLE metrics")
        self._db.execute("DROP TABLE launches")
        self._db.execute("DELETE FROM runs")
        self._db.execute("ALTER TABLE runs ADD COLUMN launches INTEGER NOT NULL DEFAULT 0")
        self._db.execute("ALTER TABLE runs ADD COLUMN metrics INTEGER NOT NULL DEFAULT 0")
        self._db.execute(_SCHEMA.split(";")[2])  # CREATE TABLE columns
        for run in runs:
            self._insert(
                run, [(run.run_id, *part) for part in store_columns.encode(run.launch_table, run.metric_table)]
            )
        self._db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))

    def run_ids(self, kind: str | None = None) -> list[str]:
        """Stored run ids, oldest first; with ``kind``, only that kind's (by index)."""
        where, args = (" WHERE kind=?", (kind,)) if kind else ("", ())
        if not self._created():
            return []
        with self._errors("read", _READ_FIX):
            return [r[0] for r in self._db.execute(f"SELECT run_id FROM runs{where} ORDER BY created, rowid", args)]

    def has(self, run_id: str) -> bool:
        with self._errors("read", _READ_FIX):
            return self._db.execute("SELECT 1 FROM runs WHERE run_id=?", (run_id,)).fetchone() is not None

    def workloads(self, marker: str) -> list[dict]:
        """The workload records whose JSON text holds ``marker`` (``'"sweep"'``), read from the runs table
        alone: ``--resume`` finds its done points without decoding any run's tables."""
        if not self._created():
            return []
        with self._errors("read", _READ_FIX):
            texts = [
                r[0] for r in self._db.execute("SELECT workload FROM runs WHERE instr(workload, ?) > 0", (marker,))
            ]
        found = []
        for text in texts:
            with suppress(ValueError):
                record = json.loads(text)
                if isinstance(record, dict):
                    found.append(record)
        return found

    def get(self, run_id: str) -> Run:
        with self._errors("read", _READ_FIX):
            return self._get_v1(run_id) if self._version() == 1 else self._get(run_id)

    def _row(self, run_id: str, counts: str) -> tuple:
        row = self._db.execute(
            "SELECT run_id, created, kind, format, source, device, workload, environment, "
            f"notes, schema_version{counts} FROM runs WHERE run_id=?",
            (run_id,),
        ).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id} in {self.path}", "list stored runs with 'gpuprof show'")
        return row

    def _get(self, run_id: str) -> Run:
        *meta, launches, metrics = self._row(run_id, ", launches, metrics")
        meta = _checked(meta, self.path)
        parts = {
            (table, name): (encoding, data)
            for table, name, encoding, data in self._db.execute(
                "SELECT tbl, name, encoding, data FROM columns WHERE run_id=?", (run_id,)
            )
        }
        return _run(meta, tables=store_columns.decode(parts, launches, metrics, run_id[:8]))

    def _get_v1(self, run_id: str) -> Run:
        """A run of a schema-1 store: one row per launch and per metric."""
        meta = _checked(self._row(run_id, ""), self.path)
        metrics: dict[int, list[Metric]] = {}
        for pos, name, num, text, unit, canon, origin, lo, hi in self._db.execute(
            "SELECT launch_idx, name, value_num, value_text, unit, canonical, origin, minimum, maximum "
            "FROM metrics WHERE run_id=? ORDER BY launch_idx, position",
            (run_id,),
        ):
            metrics.setdefault(pos, []).append(Metric(name, num if text is None else text, unit, canon, origin, lo, hi))
        launches: list[Launch] = []
        for pos, kernel, dev, invocations, attributes in self._db.execute(
            "SELECT idx, kernel, device, invocations, attributes FROM launches WHERE run_id=? ORDER BY idx", (run_id,)
        ):
            attrs = json.loads(attributes)
            index = attrs.pop("index", pos)
            launches.append(Launch(kernel, index, dev, invocations, attrs, metrics.get(pos, [])))
        return _run(meta, launches=launches)

    def runs(self, kind: str | None = None) -> list[Run]:
        """Every stored run that can be read, oldest first; with ``kind``, only that kind's (the others are
        not read). A run whose stored record does not decode is left out with a line in :attr:`skipped`,
        so one damaged row does not stop every command that reads the store."""
        found = []
        for run_id in self.run_ids(kind):
            try:
                found.append(self.get(run_id))
            except StoreError as error:
                self.skipped.append(f"{error.problem}: left out")
        return found


_META = (
    "run_id",
    "created",
    "kind",
    "format",
    "source",
    "device",
    "workload",
    "environment",
    "notes",
    "schema_version",
)


def _checked(meta: tuple | list, path: Path) -> dict[str, object]:
    """A runs-table row as the Run's fields, its JSON decoded and checked (:mod:`gpuprof.model.schema`);
    StoreError naming the run and the field when the row is damaged."""
    fields = dict(zip(_META, meta))
    try:
        for key in ("device", "workload", "environment", "notes"):
            if fields[key] is not None:
                fields[key] = json.loads(fields[key])
        problem = schema.problem(fields)
    except (ValueError, TypeError, RecursionError) as error:
        problem = f"{type(error).__name__}: {error}"
    if problem:
        raise StoreError(
            f"run {str(fields['run_id'])[:12]} in {path} cannot be read ({shortened(problem, 120)})", _READ_FIX
        )
    return fields


def _run(meta: dict[str, object], **data: object) -> Run:
    """A Run from its checked row in the runs table and its launches or tables."""
    return Run(**meta, **data)


def open_store(path: str | Path | None = None, read_only: bool = False) -> Store:
    """The store at ``path`` (default: :func:`default_path`). ``read_only``: for commands that only
    read; such a store is never created, changed or given companion files, and a missing one is a
    StoreError."""
    return Store(Path(path) if path else default_path(), read_only)
