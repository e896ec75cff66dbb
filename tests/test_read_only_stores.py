"""Commands that only read open stores read-only: they work on stores nobody lets them change (a
read-only folder, another user's file) and never create or change a file, not even SQLite's
``-wal``/``-shm`` companions."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import read_only
from click.testing import CliRunner
from test_compare import measured

from gpuprof.cli import main
from gpuprof.store import open_store


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file in ``folder`` with its sha256: what a reading command must leave as it was."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _store(path: Path) -> Path:
    with open_store(path) as store:
        store.add(measured("add", [1000, 1000], [2e-3, 2.1e-3]))
    return path


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder holding a store, which this process cannot change."""
    with read_only.read_only_folder(tmp_path / "shared", lambda folder: _store(folder / "results.sqlite")) as folder:
        yield folder


READERS = [
    ["show", "--store", "{store}"],
    ["compare", "--store", "{store}"],
    ["compare", "--store", "{store}", "--format", "json"],
    ["export", "{out}/runs.jsonl", "--store", "{store}"],
    ["merge", "{out}/merged.sqlite", "{store}"],
    ["roofline", "--store", "{store}", "--out", "{out}/charts"],
]


@pytest.mark.slow  # every reading command on a read-only store: 1-4 s each
@pytest.mark.parametrize("args", READERS, ids=lambda a: " ".join(a[:2]))
def test_reading_commands_work_on_a_store_in_a_read_only_folder(read_only_folder, tmp_path, args):
    store = read_only_folder / "results.sqlite"
    before = _snapshot(read_only_folder)
    out = tmp_path / "out"
    out.mkdir()
    result = CliRunner().invoke(main, [a.format(store=store, out=out) for a in args])
    assert result.exit_code == 0, result.output
    assert "not a gpuprof results store" not in result.output
    assert _snapshot(read_only_folder) == before


@pytest.mark.parametrize("args", READERS, ids=lambda a: " ".join(a[:2]))
def test_reading_commands_leave_no_file_beside_a_store(tmp_path, args):
    folder = tmp_path / "results"
    folder.mkdir()
    store = _store(folder / "results.sqlite")
    before = _snapshot(folder)
    out = tmp_path / "out"
    out.mkdir()
    result = CliRunner().invoke(main, [a.format(store=store, out=out) for a in args])
    assert result.exit_code == 0, result.output
    assert _snapshot(folder) == before  # no -wal or -shm left behind, the store's bytes unchanged


def test_show_turns_no_file_into_a_store(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.touch()
    result = CliRunner().invoke(main, ["show", "--store", str(empty)])
    assert result.exit_code == 6 and "Traceback" not in result.output
    assert result.output.strip().splitlines() == [
        f"error: {empty} is an empty file, not a gpuprof results store. "
        "give a store written by gpuprof with --store or $GPUPROF_STORE"
    ]
    assert empty.stat().st_size == 0 and _snapshot(tmp_path) == {"empty.csv": hashlib.sha256(b"").hexdigest()}


def test_show_on_a_missing_store_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPUPROF_STORE", raising=False)
    for args in (["show", "--store", "typo.sqlite"], ["show"], ["show", "abc123"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 6, result.output
        assert "no results store at" in result.output and "gpuprof run" in result.output
    assert list(tmp_path.iterdir()) == []


def test_compare_with_the_paper_or_files_needs_no_store(tmp_path, monkeypatch):
    from fixture_paths import K40C

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUPROF_STORE", str(tmp_path / "nowhere" / "s.sqlite"))
    paper = CliRunner().invoke(main, ["compare", "--reference", "paper", "--op", "add"])
    assert paper.exit_code == 0, paper.output
    assert "GTX980 (paper)" in paper.stdout
    files = CliRunner().invoke(main, ["compare", "--import", str(K40C)])
    assert files.exit_code == 0, files.output
    assert list(tmp_path.iterdir()) == []
