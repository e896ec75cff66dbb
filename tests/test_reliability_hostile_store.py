"""Stores and run files under hostile or large input (issue 34): lookups by index so `run` does not
grow with the store, a near-linear `compare`, and one bad run that cannot brick a store."""

from __future__ import annotations

import sqlite3
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from gpuprof import calibrate
from gpuprof.compare import comparison
from gpuprof.model import TIMED, Launch, Metric, Run
from gpuprof.store import Store, open_store
from gpuprof.sweep import stored_points

sys.path.insert(0, str(Path(__file__).parent))
from test_compare import THEORY, _calibration_of, measured  # noqa: E402


def _sweep_run(number: int, host: str = "h1") -> Run:
    return Run(kind="run", format="cpu-numpy", source="test", device={"name": "cpu", "kind": "cpu"},
               workload={"op": "add", "dtype": "float32", "shape": [8], "sweep": {
                   "config": "tiny", "point": f"p{number}", "device": "cpu", "host": host}},
               environment={"host": host},
               launches=[Launch("numpy:add", 0, metrics=[Metric("wall_time", 1e-3, "second", origin=TIMED)])])


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The run ids whose tables the store decodes."""
    seen: list[str] = []
    original = Store._get

    def counting(self: Store, run_id: str) -> Run:
        seen.append(run_id)
        return original(self, run_id)

    monkeypatch.setattr(Store, "_get", counting)
    return seen


def test_calibrations_are_found_without_decoding_other_runs(tmp_path: Path, decoded: list[str]) -> None:
    """Failed before: every `run` decoded every stored run to find this host's calibrations."""
    path = tmp_path / "s.sqlite"
    calibration = _calibration_of("h1", "Test CPU", 20e9)
    with open_store(path) as store:
        for number in range(40):
            store.add(_sweep_run(number))
        store.add(calibration)
    decoded.clear()
    with open_store(path, read_only=True) as store:
        peaks = calibrate.load_calibration(store, "h1", "Test CPU")
    assert peaks is not None and peaks.bandwidth == 20e9
    assert decoded == [calibration.run_id]


def test_resume_finds_done_points_without_decoding_any_run(tmp_path: Path, decoded: list[str]) -> None:
    path = tmp_path / "s.sqlite"
    with open_store(path) as store:
        for number in range(30):
            store.add(_sweep_run(number, "h1" if number % 3 else "h2"))
        decoded.clear()
        done = stored_points(store.workloads('"sweep"'), "tiny", "cpu", "h1")
    assert done == {f"p{n}" for n in range(30) if n % 3}
    assert decoded == []


def test_the_kind_index_is_in_new_stores_and_added_to_older_ones_on_write(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with open_store(path) as store:
        store.add(_sweep_run(0))
    indexes = lambda: {r[0] for r in sqlite3.connect(path).execute(  # noqa: E731
        "SELECT name FROM sqlite_master WHERE type='index' AND name NOT LIKE 'sqlite_%'")}
    assert indexes() == {"runs_by_kind"}
    db = sqlite3.connect(path)
    db.execute("DROP INDEX runs_by_kind")  # a store written before the index existed
    db.commit()
    db.close()
    with open_store(path, read_only=True) as store:  # read as it is, not changed
        assert len(store.runs("run")) == 1
    assert indexes() == set()
    with open_store(path) as store:
        store.add(_sweep_run(1))
        assert [run.workload["sweep"]["point"] for run in store.runs("run")] == ["p0", "p1"]
    assert indexes() == {"runs_by_kind"}


def test_compare_looks_up_each_hosts_calibrations_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed before: every CPU run scanned every run for its host's calibrations (quadratic)."""
    calls: list[str] = []
    original = calibrate.calibrations

    def counting(runs, host, device=None):  # type: ignore[no-untyped-def]
        calls.append(host)
        return original(runs, host, device)

    monkeypatch.setattr(calibrate, "calibrations", counting)
    runs = []
    for number in range(60):
        run = measured("add", [1000, 1000 + number], [2e-3], host="h1" if number % 2 else "h2")
        run.device["peaks"] = [asdict(THEORY)]
        runs.append(run)
    runs.append(_calibration_of("h1", runs[0].device["name"], 20e9))
    result = comparison(runs)
    assert sorted(calls) == ["h1", "h2"]
    assert result.rows["roof.%"].notna().tolist() == [False, True]  # h2 has no calibration, h1 has
