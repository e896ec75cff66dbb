"""Sweep configs, point keys, storing as points finish, resume, failing points, SIGKILL and SIGINT."""

from __future__ import annotations

import csv
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.errors import InputError
from gpuprof.store import open_store
from gpuprof.sweep import load_config, run_sweep, stored_points

ROOT = Path(__file__).resolve().parents[1]
PAPER_CSV = ROOT / "gpuprof" / "data" / "theano_cuda_profiler_tables.csv"


def write(tmp_path: Path, text: str, name: str = "grid.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


TINY = """
name = "tiny"
repeat = 2
warmup = 0
counters = false
[[grid]]
ops = ["add", "scalar"]
sizes = ["48KB", "96KB"]
"""


def test_paper_config_has_the_studys_sizes_for_every_op():
    with open(PAPER_CSV, newline="") as handle:
        published = {(r["op"], int(r["size_mb"])) for r in csv.DictReader(handle)}
    config = load_config(ROOT / "configs" / "paper.toml")
    grid = {(p.op, p.size_bytes // 10**6) for p in config.points}
    assert grid == published
    assert {p.dtype for p in config.points} == {"float32"}


def test_quick_config_is_small_and_repeats_three_times():
    config = load_config(ROOT / "configs" / "quick.toml")
    assert {p.op for p in config.points} == {"add", "mul", "dot", "scalar", "sigmoid", "tanh"}
    assert all(p.repeat == 3 for p in config.points)
    assert max(p.size_bytes for p in config.points) <= 4 * 10**6


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('repeat = 3\nsizez = ["1MB"]\n[[grid]]\nops = ["add"]\nsizes = ["1MB"]', "sizez"),
        ('[[grid]]\nops = ["add"]\nsizes = ["1QB"]', "grid[0].sizes[0]"),
        ('[[grid]]\nops = ["addd"]\nsizes = ["1MB"]', "grid[0].ops"),
        ('repeat = 0\n[[grid]]\nops = ["add"]\nsizes = ["1MB"]', "repeat"),
        ('[[grid]]\nops = ["add"]\nsizes = ["1MB"]\ndtypes = ["float8"]', "grid[0].dtypes"),
        ('[[grid]]\nops = ["add"]', "grid[0].sizes"),
        ('name = "x"', "grid"),
    ],
)
def test_config_errors_name_the_key(tmp_path, text, key):
    with pytest.raises(InputError) as caught:
        load_config(write(tmp_path, text))
    assert f"key '{key}'" in str(caught.value)


def test_cli_reports_a_bad_config_in_one_line(tmp_path):
    path = write(tmp_path, '[[grid]]\nops = ["add"]\nsizes = ["1MB"]\ncache = "lukewarm"')
    result = CliRunner().invoke(main, ["sweep", str(path), "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "grid[0].cache" in lines[0] and lines[0].startswith("error:")


def test_point_keys_are_stable_and_say_what_is_measured(tmp_path):
    first = load_config(write(tmp_path, TINY))
    second = load_config(write(tmp_path, "# a comment changes nothing\n" + TINY, "other.toml"))
    assert [p.key for p in first.points] == [p.key for p in second.points]
    assert first.config_hash == second.config_hash
    assert first.points[0].key == "add:48000B:float32:default:warm:r2:w0"
    changed = load_config(write(tmp_path, TINY.replace("repeat = 2", "repeat = 3"), "changed.toml"))
    assert changed.config_hash != first.config_hash


def test_sweep_stores_every_point_and_resume_skips_them(tmp_path):
    config = load_config(write(tmp_path, TINY))
    store = tmp_path / "s.sqlite"
    first = run_sweep(config, store, device="cpu")
    assert len(first.stored) == 4 and not first.failed
    with open_store(store) as opened:
        runs = opened.runs()
    tags = [r.workload["sweep"] for r in runs]
    assert sorted(t["point"] for t in tags) == sorted(p.key for p in config.points)
    assert {t["config"] for t in tags} == {"tiny"} and {t["config_hash"] for t in tags} == {config.config_hash}
    again = run_sweep(config, store, device="cpu", resume=True)
    assert not again.stored and len(again.skipped) == 4
    with open_store(store) as opened:
        assert len(opened.runs()) == 4


def test_resume_ignores_points_of_other_hosts_and_configs(tmp_path):
    config = load_config(write(tmp_path, TINY))
    store = tmp_path / "s.sqlite"
    run_sweep(config, store, device="cpu")
    with open_store(store) as opened:
        runs = opened.runs()
    host = runs[0].workload["sweep"]["host"]
    runs = [run.workload for run in runs]
    assert len(stored_points(runs, "tiny", "cpu", host)) == 4
    assert stored_points(runs, "tiny", "cpu", "another-host") == set()
    assert stored_points(runs, "quick", "cpu", host) == set()
    assert stored_points(runs, "tiny", "cuda", host) == set()


def test_a_failing_point_is_reported_and_the_sweep_goes_on(tmp_path):
    path = write(
        tmp_path, 'repeat = 1\nwarmup = 0\ncounters = false\n[[grid]]\nops = ["add"]\nsizes = ["48KB", "900TB", "96KB"]'
    )
    result = CliRunner().invoke(main, ["sweep", str(path), "--device", "cpu", "--store", str(tmp_path / "s.sqlite")])
    assert result.exit_code == 1
    assert "failed: add 900000.00 GB" in result.output
    assert "2 point(s) stored" in result.output and "1 failed" in result.output
    with open_store(tmp_path / "s.sqlite") as opened:
        assert sorted(r.workload["size_bytes"] <= 96_000 for r in opened.runs()) == [True, True]


SLOW = """
name = "slow"
repeat = 40
warmup = 1
counters = false
[[grid]]
ops = ["tanh"]
sizes = ["8MB", "8.1MB", "8.2MB", "8.3MB", "8.4MB", "8.5MB"]
"""


def _stored_keys(store: Path) -> list[str]:
    """Point keys in the store, read without writing to it (the sweep may be running)."""
    if not store.exists():
        return []
    try:
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
        try:
            rows = db.execute("SELECT workload FROM runs").fetchall()
        finally:
            db.close()
    except sqlite3.OperationalError:
        return []
    import json

    return [json.loads(w)["sweep"]["point"] for (w,) in rows]


def _start(config: Path, store: Path, *extra: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "gpuprof", "sweep", str(config), "--device", "cpu", "--store", str(store), *extra]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_first_point(process: subprocess.Popen[str], store: Path) -> None:
    deadline = time.monotonic() + 60
    while not _stored_keys(store):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no point stored within 60 s"
        time.sleep(0.02)


@pytest.mark.slow
def test_sigkill_loses_no_finished_point_and_resume_completes(tmp_path):
    config_path = write(tmp_path, SLOW)
    config = load_config(config_path)
    store = tmp_path / "s.sqlite"
    process = _start(config_path, store)
    _wait_for_first_point(process, store)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL
    before = _stored_keys(store)
    assert 1 <= len(before) < len(config.points), "the sweep must be killed part-way"

    resumed = _start(config_path, store, "--resume")
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert f"{len(before)} already stored" in err
    after = _stored_keys(store)
    assert sorted(after) == sorted(p.key for p in config.points)  # every point exactly once
    with open_store(store) as opened:
        assert all(len(r.launches) == 40 for r in opened.runs())  # every stored run is whole


@pytest.mark.slow
def test_sigint_stops_after_the_current_point_with_a_summary(tmp_path):
    config_path = write(tmp_path, SLOW)
    store = tmp_path / "s.sqlite"
    process = _start(config_path, store)
    _wait_for_first_point(process, store)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    stored = _stored_keys(store)
    assert f"{len(stored)} point(s) stored" in err and "not run (interrupted)" in err
    assert "--resume" in err and "Traceback" not in err


def test_a_missing_device_stops_the_sweep_at_once_in_one_line(tmp_path):
    from gpuprof.launch.gpu_session import probe_gpu

    if probe_gpu()[0]:
        pytest.skip("this machine has a usable GPU")
    result = CliRunner().invoke(
        main, ["sweep", str(write(tmp_path, TINY)), "--device", "cuda", "--store", str(tmp_path / "s.sqlite")]
    )
    assert result.exit_code == 5
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "--device cpu" in errors[0]
    assert "failed:" not in result.output  # not one failure per point
