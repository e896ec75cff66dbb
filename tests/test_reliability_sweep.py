"""`gpuprof sweep` killed again and again, and interrupted: every point ends up stored exactly once.

The sweep runs as a real subprocess (``python -m gpuprof sweep``) on a tiny CPU grid, so kills land
in start-up, in the middle of a measurement and in the middle of a store write. Kill moments come
from a seeded generator (reproducible); the store is checked with SQLite itself after every kill.
"""

from __future__ import annotations

import json
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from gpuprof.store import open_store
from gpuprof.sweep import load_config

KILLS = 20
GRID = """
name = "killed"
repeat = 4
warmup = 0
counters = false
dtypes = ["float32", "float64"]
[[grid]]
ops = ["add", "mul", "scalar", "tanh"]
sizes = ["256KB", "384KB", "512KB", "640KB", "768KB", "896KB", "1MB", "1.25MB", "1.5MB", "1.75MB",
         "2MB", "2.25MB", "2.5MB", "2.75MB", "3MB"]
"""


def _start(config: Path, store: Path, *extra: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "gpuprof", "sweep", str(config), "--device", "cpu", "--store", str(store), *extra]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait_for_stored_lines(process: subprocess.Popen[str], count: int) -> list[str]:
    """stderr lines up to the ``count``-th 'stored ...' line (fewer if the sweep ends first)."""
    assert process.stderr is not None
    lines: list[str] = []
    while sum(line.startswith("stored ") for line in lines) < count:
        line = process.stderr.readline()
        if not line:
            break
        lines.append(line)
    return lines


def _point_keys(store: Path) -> list[str]:
    db = sqlite3.connect(store)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = db.execute("SELECT workload FROM runs").fetchall()
    finally:
        db.close()
    return [json.loads(workload)["sweep"]["point"] for (workload,) in rows]


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "killed.toml"
    path.write_text(GRID)
    return path


@pytest.mark.slow
def test_twenty_sigkills_then_resume_store_every_point_exactly_once(tmp_path):
    config = _config(tmp_path)
    points = [p.key for p in load_config(config).points]
    store = tmp_path / "sweep.sqlite"
    rng = random.Random(1122)
    landed = 0
    for kill in range(KILLS):
        process = _start(config, store, "--resume")
        if kill % 4 == 3:  # somewhere in start-up, opening the store or reading what is done
            time.sleep(rng.uniform(0.0, 0.6))
        else:  # in the middle of the sweep: after a point or two, within the next point or its write
            _wait_for_stored_lines(process, rng.randint(1, 2))
            time.sleep(rng.uniform(0.0, 0.03))
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=60)
        landed += process.returncode == -signal.SIGKILL
        if store.exists():
            keys = _point_keys(store)
            assert max(Counter(keys).values(), default=1) == 1, "a point was stored twice"
    stored_before_resume = len(_point_keys(store))
    assert landed >= KILLS - 2, "the kills must land while the sweep runs"
    assert 0 < stored_before_resume < len(points), "the kills must leave work for --resume"

    finish = _start(config, store, "--resume")
    _, err = finish.communicate(timeout=120)
    assert finish.returncode == 0, err
    assert f"{len(points) - stored_before_resume} point(s) stored" in err
    assert f"{stored_before_resume} already stored" in err
    keys = _point_keys(store)
    assert Counter(keys) == Counter(points)  # every point, each exactly once
    print(
        f"{KILLS} SIGKILLs, {landed} while the sweep ran; {stored_before_resume} of {len(points)} points "
        f"stored before --resume, {len(keys)} after, none twice"
    )  # the figures docs/reliability.md quotes
    with open_store(store) as opened:
        assert all(run.launches and run.launches[0].metrics for run in opened.runs())


# Points of a few tenths of a second each, so a signal sent when a point was stored lands in the next one.
SLOW_GRID = """
name = "slow"
repeat = 300
warmup = 0
counters = false
[[grid]]
ops = ["tanh"]
sizes = ["8MB", "8.5MB", "9MB", "9.5MB"]
"""


def _slow_sweep(tmp_path: Path) -> tuple[Path, Path, subprocess.Popen[str], list[str]]:
    """A slow sweep that has just stored its first point: (config, store, process, stderr so far)."""
    config = tmp_path / "slow.toml"
    config.write_text(SLOW_GRID)
    store = tmp_path / "sweep.sqlite"
    process = _start(config, store)
    return config, store, process, _wait_for_stored_lines(process, 1)


@pytest.mark.slow
def test_sigint_stops_after_the_current_point_and_says_what_was_stored(tmp_path):
    config, store, process, seen = _slow_sweep(tmp_path)
    time.sleep(0.1)  # inside the second point
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=60)
    err = "".join(seen) + rest
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert "interrupt: stopping after the current point" in err
    found = re.search(r"(\d+) point\(s\) stored in .*?, (\d+) not run \(interrupted\)", err)
    assert found, err
    stored, not_run = int(found.group(1)), int(found.group(2))
    # the point under way when Ctrl-C came was finished and stored; then it stopped
    assert (stored, not_run) == (2, 2)
    assert len(_point_keys(store)) == stored == sum(line.startswith("stored ") for line in err.splitlines())
    assert f"resume with: gpuprof sweep {config} --resume --store {store}" in err


@pytest.mark.slow
def test_second_sigint_stops_at_once_in_one_line_and_keeps_the_store_whole(tmp_path):
    config, store, process, seen = _slow_sweep(tmp_path)
    time.sleep(0.1)  # inside the second point (the sweep may still be drawing the first one's line)
    process.send_signal(signal.SIGINT)
    assert process.stderr is not None
    while not seen[-1].startswith("interrupt:"):  # the first one was handled
        seen.append(process.stderr.readline())
        assert seen[-1], "".join(seen)
    process.send_signal(signal.SIGINT)  # at once, as a user who just read that line would
    _, rest = process.communicate(timeout=60)
    err = "".join(seen) + rest
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == "error: interrupted. Results stored before the interrupt are kept."
    keys = _point_keys(store)
    assert len(keys) == sum(line.startswith("stored ") for line in err.splitlines()) == 1
    finish = _start(config, store, "--resume")
    _, err = finish.communicate(timeout=120)
    assert "3 point(s) stored" in err and "1 already stored" in err
    assert Counter(_point_keys(store)) == Counter(p.key for p in load_config(config).points)
