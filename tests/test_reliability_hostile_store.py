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
from gpuprof.store import columns as store_columns
from gpuprof.sweep import stored_points

sys.path.insert(0, str(Path(__file__).parent))
from test_compare import THEORY, _calibration_of, measured  # noqa: E402


def _sweep_run(number: int, host: str = "h1") -> Run:
    return Run(
        kind="run",
        format="cpu-numpy",
        source="test",
        device={"name": "cpu", "kind": "cpu"},
        workload={
            "op": "add",
            "dtype": "float32",
            "shape": [8, 8],
            "sweep": {"config": "tiny", "point": f"p{number}", "device": "cpu", "host": host},
        },
        environment={"host": host},
        launches=[Launch("numpy:add", 0, metrics=[Metric("wall_time", 1e-3, "second", "kernel_duration", TIMED)])],
    )


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

    def indexes():
        return {
            r[0]
            for r in sqlite3.connect(path).execute(  # noqa: E731
                "SELECT name FROM sqlite_master WHERE type='index' AND name NOT LIKE 'sqlite_%'"
            )
        }

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


def _copies(path: Path, count: int) -> list[str]:
    """A store of ``count`` runs with the same tables (each its own id), as a sweep leaves them."""
    with open_store(path) as store:
        for number in range(count):
            store.add(_sweep_run(number))
        return store.run_ids()


def test_decoding_many_runs_parses_each_distinct_column_header_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before: every stored column of every run had its ``.npy`` header parsed again (NumPy
    parses it with ``ast``) and its category list checked again by pandas: the per-run cost that made
    `compare` on 10,000 runs take minutes (benchmarks/bench_store_scaling.py prints ms per run)."""
    import numpy as np

    format_impl = getattr(np.lib, "_format_impl", np.lib.format)  # NumPy 2 keeps the code in _format_impl
    parses: list[int] = []
    original = format_impl._read_array_header

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        parses.append(1)
        return original(*args, **kwargs)

    ids = _copies(tmp_path / "s.sqlite", 15)
    monkeypatch.setattr(format_impl, "_read_array_header", counting)
    store_columns._npy_header.cache_clear()  # headers other tests read in this process are parsed again
    store_columns._categories.cache_clear()
    with open_store(tmp_path / "s.sqlite", read_only=True) as store:
        runs = store.runs()
    assert len(runs) == 15 and [run.run_id for run in runs] == ids
    assert [launch.metric("wall_time").value for run in runs for launch in run.launches] == [1e-3] * 15
    assert 0 < len(parses) <= 12, len(parses)  # one per distinct header (11 columns), not 15 x 11


def test_decoded_tables_are_the_stored_ones(tmp_path: Path) -> None:
    """The cached decoding gives back exactly the tables a real import stored: values, NaNs, dtypes."""
    import pandas as pd
    from fixture_paths import A100

    from gpuprof import readers

    run = readers.read(A100)
    with open_store(tmp_path / "s.sqlite") as store:
        store.add(run)
        back = store.get(run.run_id)
    pd.testing.assert_frame_equal(back.metric_table, run.metric_table)
    pd.testing.assert_frame_equal(back.launch_table, run.launch_table)
    assert [m.name for m in back.launches[0].metrics] == [m.name for m in run.launches[0].metrics]


def _npy(array: object) -> bytes:
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("column", "data", "expected"),
    [
        ("metric", lambda np: b'["wall_time"]\n' + _npy(np.array([3], dtype=np.int8)), "codes out of range"),
        ("metric", lambda np: b'["a", "a"]\n' + _npy(np.array([0], dtype=np.int8)), "must be unique"),
        ("metric", lambda np: b'["wall_time"]\n' + _npy(np.array([0.5])), "codes out of range"),
        ("value", lambda np: _npy(np.array([object()], dtype=object)), "object array"),
        ("value", lambda np: _npy(np.zeros(8))[:-16], "buffer is smaller"),
        ("value", lambda np: b"\x93NUMPY\x03\x00" + _npy(np.zeros(1))[8:], "npy format version"),
        ("value", lambda np: b"", "npy format version|file|magic|Empty"),
    ],
    ids=["codes past the list", "repeated category", "float codes", "object array", "cut", "version", "empty"],
)
def test_a_damaged_stored_column_leaves_that_run_out(tmp_path: Path, column: str, data, expected: str) -> None:
    """A column blob that does not decode (hand-edited, another program's) leaves out its run with a
    note, as a damaged runs row does; the other runs read as they were."""
    import re

    import numpy as np

    path = tmp_path / "s.sqlite"
    ids = _copies(path, 3)
    db = sqlite3.connect(path)
    encoding = "category" if column == "metric" else "npy"
    db.execute("UPDATE columns SET data=?, encoding=? WHERE run_id=? AND name=?", (data(np), encoding, ids[1], column))
    db.commit()
    db.close()
    with open_store(path, read_only=True) as store:
        assert [run.run_id for run in store.runs()] == [ids[0], ids[2]]
        assert len(store.skipped) == 1 and ids[1][:8] in store.skipped[0], store.skipped
        assert re.search(expected, store.skipped[0], re.IGNORECASE), store.skipped[0]


# --- item 10: one bad run must not brick a store ------------------------------------------------------
import json  # noqa: E402
import subprocess  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _gpuprof(*args: str) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "gpuprof", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
    )


def _good() -> dict:
    return _sweep_run(0).to_dict()


def _hostile_lines() -> dict[str, tuple[str, str]]:
    """name -> (one JSON line, the field or problem its note must name)."""
    lines = {}
    lines["deep nesting"] = ('{"kind": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply")
    huge = _good()
    huge["launches"][0]["index"] = 10**30
    lines["huge integer"] = (json.dumps(huge), "launches[0].index: int expected")
    digits = json.dumps(_good()).replace('"index": 0', '"index": ' + "9" * 5000)
    lines["5,000-digit integer"] = (digits, "ValueError")
    wrong = _good()
    wrong["launches"][0]["metrics"][0]["value"] = {"a": 1}
    lines["wrong type"] = (json.dumps(wrong), "launches[0].metrics[0].value: number, text or null expected")
    listed = _good()
    listed["device"] = ["not", "a", "dict"]
    lines["list for a dict"] = (json.dumps(listed), "device: object expected")
    launches = _good()
    launches["launches"] = [["a list", "where a launch belongs"]]
    lines["list for a launch"] = (json.dumps(launches), "launches[0]: an object is expected, not list")
    big = _good()
    big["launches"][0]["kernel"] = "k" * (50 << 20)
    lines["50 MB string"] = (json.dumps(big), "launches[0].kernel: text expected")
    return lines


@pytest.mark.slow  # merge and compare in child processes: 3-7 s
def test_hostile_run_file_lines_are_refused_naming_the_field_and_the_good_ones_merged(tmp_path: Path) -> None:
    """Failed before: deep nesting and a list for a dict were tracebacks, the huge integer and the
    50 MB kernel name were stored (and broke or bloated every later read)."""
    cases = _hostile_lines()
    runfile = tmp_path / "hostile.jsonl"
    good = _sweep_run(1)
    runfile.write_text("\n".join([line for line, _ in cases.values()] + [json.dumps(good.to_dict())]) + "\n")
    out = tmp_path / "m.sqlite"
    result = _gpuprof("merge", str(out), str(runfile))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    notes = [line for line in result.stderr.splitlines() if "skipped, not a whole gpuprof run" in line]
    assert len(notes) == len(cases) and all(len(line) < 400 for line in notes)
    for number, (name, (_, expected)) in enumerate(cases.items(), 1):
        assert f"hostile.jsonl:{number}: " in notes[number - 1] and expected in notes[number - 1], (name, notes)
    with open_store(out) as store:
        assert store.run_ids() == [good.run_id]
    compared = _gpuprof("compare", "--import", str(runfile), "--store", str(out), "--format", "json")
    assert compared.returncode == 0 and "Traceback" not in compared.stderr, compared.stderr[-2000:]


@pytest.mark.slow  # each case runs seven commands in child processes: 8-30 s
@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("device", "{not json", "JSONDecodeError"),
        ("environment", "[1, 2]", "environment: object expected"),
        ("notes", '"a string"', "notes: list of text expected"),
        ("workload", "[" * 50_000 + "]" * 50_000, "RecursionError"),
        ("workload", "[" * 100 + "]" * 100, "workload: object or null expected"),
    ],
)
def test_a_damaged_store_row_is_left_out_and_every_reading_command_works(
    tmp_path: Path, column: str, value: str, expected: str
) -> None:
    """Failed before: one undecodable row made show, compare, export, merge and roofline tracebacks."""
    path = tmp_path / "s.sqlite"
    with open_store(path) as store:
        for number in range(3):
            store.add(_sweep_run(number))
        broken = store.run_ids()[1]
    db = sqlite3.connect(path)
    db.execute(f"UPDATE runs SET {column}=? WHERE run_id=?", (value, broken))
    db.commit()
    db.close()
    with open_store(path, read_only=True) as store:
        assert len(store.runs()) == 2
        assert len(store.skipped) == 1 and broken[:12] in store.skipped[0] and expected in store.skipped[0]
    for args in (
        ["show"],
        ["show", "--format", "json"],
        ["compare"],
        ["export", str(tmp_path / "out.jsonl")],
        ["merge", str(tmp_path / "m.sqlite"), str(path)],
        ["roofline", "--out", str(tmp_path / "r")],
    ):
        store_args = [] if args[0] == "merge" else ["--store", str(path)]
        result = _gpuprof(*args, *store_args)
        assert "Traceback" not in result.stderr, (args, result.stderr[-2000:])
        assert broken[:12] in result.stderr, (args, result.stderr[-1000:])
    diff = _gpuprof("diff", broken[:12], broken[:12], "--store", str(path))
    assert diff.returncode != 0 and diff.stderr.count("\n") == 1 and expected in diff.stderr, diff.stderr
