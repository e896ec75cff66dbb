"""The results store under concurrency, SIGKILL, foreign or damaged files, a full disk and a read-only mount.

Counts are checked against what the writers themselves reported committing, never against what the
store says about itself. The disk-full and read-only tests mount a small tmpfs (root only) and are
skipped, with the reason, where mounting is not allowed.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof.errors import StoreError
from gpuprof.model import Launch, Metric, Run
from gpuprof.store import open_store

WRITERS = 8
RUNS_EACH = 25
LAUNCHES = 3
METRICS = 4


def _run(tag: str, launches: int = LAUNCHES, metrics: int = METRICS, source: str = "") -> Run:
    return Run(
        kind="import",
        format="reliability",
        source=source or tag,
        launches=[
            Launch(f"kernel {i}", i, metrics=[Metric(f"m{j}", float(i * 100 + j), "second") for j in range(metrics)])
            for i in range(launches)
        ],
    )


def _counts(path: Path) -> tuple[int, int, int, str]:
    """Runs, launches and metric rows as decoded from the stored columns, and SQLite's integrity check."""
    db = sqlite3.connect(path)
    try:
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        runs = db.execute("SELECT count(*) FROM runs").fetchone()[0]
    finally:
        db.close()
    with open_store(path) as store:
        stored = store.runs()
    return (runs, sum(len(r.launch_table) for r in stored), sum(len(r.metric_table) for r in stored), integrity)


def _writer(
    path: str, tag: int, barrier: multiprocessing.synchronize.Barrier, done: multiprocessing.queues.Queue
) -> None:
    barrier.wait()  # all eight open the (new) store at the same moment
    ids = []
    try:
        with open_store(path) as store:
            for n in range(RUNS_EACH):
                run = _run(f"writer {tag} run {n}")
                store.add(run)
                ids.append(run.run_id)
        done.put((tag, ids, ""))
    except Exception as error:  # noqa: BLE001 - reported to the test, which fails on it
        done.put((tag, ids, f"{type(error).__name__}: {error}"))


@pytest.mark.slow
def test_eight_concurrent_writers_lose_nothing_and_never_fail_on_a_lock(tmp_path):
    path = tmp_path / "shared.sqlite"
    context = multiprocessing.get_context("fork")
    barrier, done = context.Barrier(WRITERS), context.Queue()
    workers = [context.Process(target=_writer, args=(str(path), tag, barrier, done)) for tag in range(WRITERS)]
    for worker in workers:
        worker.start()
    results = [done.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(30)
    errors = [f"writer {tag}: {error}" for tag, _, error in results if error]
    assert errors == []
    committed = {run_id for _, ids, _ in results for run_id in ids}
    assert len(committed) == WRITERS * RUNS_EACH
    with open_store(path) as store:
        assert set(store.run_ids()) == committed
    assert _counts(path) == (
        WRITERS * RUNS_EACH,
        WRITERS * RUNS_EACH * LAUNCHES,
        WRITERS * RUNS_EACH * LAUNCHES * METRICS,
        "ok",
    )


# A writer that prints each run id once add() has returned (committed), until it is killed.
_KILLED_WRITER = """
import sys
from gpuprof.model import Launch, Metric, Run
from gpuprof.store import open_store
with open_store(sys.argv[1]) as store:
    for n in range(10_000):
        run = Run(kind="import", format="reliability", source=f"run {n}", launches=[
            Launch(f"kernel {i}", i, metrics=[Metric(f"m{j}", float(j), "second") for j in range(40)])
            for i in range(50)])
        store.add(run)
        print(run.run_id, flush=True)
"""


@pytest.mark.slow
def test_sigkill_mid_write_keeps_every_committed_run_whole(tmp_path):
    """Five writers killed at random moments (seeded) while writing 2,000-row runs."""
    path = tmp_path / "killed.sqlite"
    rng = random.Random(20261122)
    committed: list[str] = []
    for _kill in range(5):
        writer = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(path)], stdout=subprocess.PIPE, text=True)
        assert writer.stdout is not None
        for _line in range(rng.randint(2, 6)):
            committed.append(writer.stdout.readline().strip())
        # the writer is now somewhere inside its next add(): kill it there
        subprocess.run(["sleep", f"{rng.uniform(0, 0.03):.3f}"], check=True)
        writer.send_signal(signal.SIGKILL)
        rest, _ = writer.communicate()
        committed += rest.split()  # runs it committed between our last read and the kill
        assert writer.returncode == -signal.SIGKILL
    runs, launches, metrics, integrity = _counts(path)
    assert integrity == "ok"
    with open_store(path) as store:
        stored = store.run_ids()
        assert set(committed) <= set(stored)
        # every stored run is whole: the one being written at the kill is there entirely or not at all
        assert all(len(store.get(run_id).launches) == 50 for run_id in stored)
    assert (launches, metrics) == (runs * 50, runs * 50 * 40)
    assert len(stored) - len(committed) <= 5  # at most the run each killed writer was committing


def _execute(path: Path, statement: str) -> None:
    """One statement on the store file, behind gpuprof's back (an older version, damage, another program)."""
    db = sqlite3.connect(path)
    db.execute(statement)
    db.commit()
    db.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _store_with_one_run(path: Path) -> str:
    with open_store(path) as store:
        run = _run("kept")
        store.add(run)
    return run.run_id


@pytest.mark.parametrize(
    "damage, message",
    [
        ("UPDATE meta SET value='99' WHERE key='schema_version'", "written by a newer gpuprof .schema 99"),
        ("UPDATE meta SET value='0' WHERE key='schema_version'", "written by an older gpuprof .schema 0"),
        ("DELETE FROM meta", "has no schema version"),
        ("DROP TABLE columns", "table columns is missing"),
        ("ALTER TABLE runs DROP COLUMN notes", "table runs has other columns"),
    ],
)
def test_store_of_another_version_is_refused_untouched(tmp_path, damage, message):
    path = tmp_path / "old.sqlite"
    run_id = _store_with_one_run(path)
    _execute(path, damage)
    before = _digest(path)
    with pytest.raises(StoreError, match=message) as refused:
        open_store(path)
    assert "\n" not in str(refused.value)
    assert _digest(path) == before
    if "version" in message:  # the runs are still there for the gpuprof that can read them
        db = sqlite3.connect(path)
        assert db.execute("SELECT run_id FROM runs").fetchall() == [(run_id,)]


def test_other_sqlite_and_non_sqlite_files_are_refused_untouched(tmp_path):
    other = tmp_path / "someone_else.sqlite"
    _execute(other, "CREATE TABLE customers (name TEXT)")
    junk = tmp_path / "results.csv"
    junk.write_text("kernel,time\nf,1.0\n" * 200)
    for path, message in (
        (other, "not a gpuprof results store .its tables: customers"),
        (junk, "file is not a database"),
    ):
        before = _digest(path)
        with pytest.raises(StoreError, match=message):
            open_store(path)
        assert _digest(path) == before


def test_empty_file_becomes_a_store(tmp_path):
    path = tmp_path / "touched.sqlite"
    path.touch()
    run_id = _store_with_one_run(path)
    with open_store(path) as store:
        assert store.run_ids() == [run_id]


def test_cli_reports_a_refused_store_in_one_line(tmp_path):
    from gpuprof.cli import main

    path = tmp_path / "newer.sqlite"
    _store_with_one_run(path)
    _execute(path, "UPDATE meta SET value='7' WHERE key='schema_version'")
    result = CliRunner().invoke(main, ["show", "--store", str(path)])
    assert result.exit_code == StoreError.exit_code
    assert result.output.strip().splitlines() == [
        f"error: results store {path} was written by a newer gpuprof (schema 7, this one reads 1 to 2). "
        "upgrade gpuprof or use another --store"
    ]


@pytest.fixture
def small_mount(tmp_path):
    """A 256 KiB tmpfs (room for an empty store and its WAL, little more)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def test_disk_full_is_a_one_line_store_error_and_keeps_earlier_runs(small_mount):
    path = small_mount / "full.sqlite"
    stored = []
    with open_store(path) as store, pytest.raises(StoreError) as full:
        for n in range(1000):
            run = _run(f"filler {n}", launches=10, metrics=20, source="x" * 2000)
            store.add(run)
            stored.append(run.run_id)
    assert str(full.value) == (  # worded as every writer words a full disk (gpuprof.errors.os_problem)
        f"cannot write results store {path}: no space left on the device. "
        "free space on that disk, or give a path on another one"
    )
    assert len(stored) >= 1
    assert _counts(path)[0] == len(stored) and _counts(path)[3] == "ok"
    with open_store(path) as store:
        assert store.run_ids() == stored
        assert all(len(store.get(run_id).launches) == 10 for run_id in stored)


def test_new_store_on_a_full_disk_is_a_store_error(small_mount):
    filler = small_mount / "filler"
    with open(filler, "wb") as handle, pytest.raises(OSError):
        handle.write(b"\0" * 512 * 1024)
    with (
        pytest.raises(StoreError, match="no space left on the device|unable to open"),
        open_store(small_mount / "new.sqlite") as store,
    ):  # a new store is created by its first write
        store.add(_run("full"))
    assert sorted(p.name for p in small_mount.iterdir()) == ["filler"]  # and removed when nothing fit


def test_read_only_mount_reads_the_store_and_refuses_writes_clearly(small_mount):
    path = small_mount / "ro.sqlite"
    run_id = _store_with_one_run(path)
    subprocess.run(["mount", "-o", "remount,ro", str(small_mount)], check=True)
    with open_store(path) as store:
        assert store.run_ids() == [run_id]
        assert len(store.get(run_id).launches) == LAUNCHES
        with pytest.raises(StoreError) as refused:
            store.add(_run("cannot"))
    assert str(refused.value).startswith(f"cannot write results store {path}: attempt to write a readonly database.")
    with pytest.raises(StoreError) as nowhere:
        open_store(small_mount / "sub" / "new.sqlite")
    assert str(nowhere.value) == (
        f"cannot create results store {small_mount / 'sub' / 'new.sqlite'}: "
        "Read-only file system. give a writable path with --store or $GPUPROF_STORE"
    )
