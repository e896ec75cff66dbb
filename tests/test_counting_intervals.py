"""``gpuprof profile --counters mix,topdown -- python train.py`` where neither in-program backend
opens: ``perf stat -I`` around the command (a stand-in perf replaying a real ``perf stat -x, -I1000``
recording, tests/fakes/perf_stand_in), its intervals attributed to the regions by time."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from fakes.environment import search_path

from gpuprof import counting
from gpuprof.cli import main
from gpuprof.derive import region_counters
from gpuprof.devices import cpu
from gpuprof.launch import counter_sets, interval_counters, perf
from gpuprof.store import open_store

ROOT = Path(__file__).resolve().parents[1]
STAND_IN = Path(__file__).parent / "fakes" / "perf_stand_in"
# Real: perf stat -x, -I1000 --interval-count 1 --summary (one interval; Linux kernel list, 2021).
RECORDING = Path(__file__).parent / "fixtures" / "cpu-counters" / "perf-stat-x-I1000-summary-lkml-2021.csv"
SLEPT = RECORDING.with_name("perf-stat-x-I100-busy-sleep-busy-vm.csv")
INSTRUCTIONS, CYCLES, BRANCHES = 7954691, 15004518, 1590259  # lines 6, 5 and 7 of the recording
PROGRAM = textwrap.dedent("""
    import time
    import gpuprof

    def busy(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass

    busy(0.06)
    with gpuprof.region("fit"):
        for epoch in range(3):
            with gpuprof.region("epoch", index=epoch):
                busy(0.06)
    busy(0.06)
""")


class _Refused:
    """An in-program backend that does not open (as on a VM without a PMU), on every machine."""

    def __init__(self, *args: object) -> None:
        raise counting.CounterError("refused for this test")


def test_real_interval_recording_read_on_the_regions_clock():
    rows = interval_counters.read(RECORDING, 101.0)
    assert len(rows) == 1
    assert rows[0]["begin (s)"] == pytest.approx(101.0 - 1.001196053) and rows[0]["end (s)"] == 101.0
    assert rows[0]["instructions"] == INSTRUCTIONS and rows[0]["cpu-clock"] == 8012.72


@pytest.fixture
def stand_in_perf(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PATH", search_path(STAND_IN))
    monkeypatch.setenv("GPUPROF_FAKE_PERF_RECORDING", str(RECORDING))
    monkeypatch.setattr(counting, "PerfEventOpen", _Refused)
    monkeypatch.setattr(counting, "Papi", _Refused)
    monkeypatch.delenv(counting.ENV_REPLAY, raising=False)
    perf.probe.cache_clear()
    yield
    perf.probe.cache_clear()


def test_profile_counters_fall_back_to_perf_stat_intervals(tmp_path, monkeypatch, stand_in_perf):
    script = tmp_path / "train.py"
    script.write_text(PROGRAM)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    store = tmp_path / "s.db"
    result = CliRunner().invoke(
        main,
        [
            "profile",
            "--device",
            "cpu",
            "--counters",
            "mix,topdown",
            "--counter-interval",
            "20ms",
            "--store",
            str(store),
            "--",
            sys.executable,
            str(script),
        ],
    )
    assert result.exit_code == 0, result.output
    said = [line for line in result.output.splitlines() if "counter backend" in line]
    assert said[0].endswith("not used: refused for this test") and said[1].endswith("not used: refused for this test")
    events, _ = counter_sets.events("mix,topdown", cpu.describe().get("vendor"))
    others = [e.partition("=")[0] for e in events if e not in ("instructions", "cycles", "branches")]
    assert said[2].endswith(
        f"used: perf stat -I 20 ms around the command (perf version 6.1.stand-in), 3 of {len(events)} events "
        f"(<not supported>: {', '.join(others)}); counts per region attributed by time"
    )
    assert "Counters per region (shares of perf stat -I intervals by time, derived" in result.output
    with open_store(store) as opened:
        [run] = opened.runs()
    counting_ = run.environment["counters"]
    assert counting_["backend"] == "perf stat -I" and counting_["interval_s"] == 0.02
    assert counting_["events"] == ["instructions", "cycles", "branches"]
    assert "resolution 20 ms" in counting_["basis"] and counting_["intervals"] >= 6
    # The program's first and last 0.06 s lie outside every region: the regions hold less than the
    # whole command's count, which the intervals file holds in full.
    rows = interval_counters.read(Path(counting_["file"]), counting_["end_s"])
    assert all(row["instructions"] == INSTRUCTIONS for row in rows)
    counts = region_counters.counts_from_regions(run)
    walls = {
        launch.index: next(float(m.value) for m in launch.metrics if m.name == "wall time")
        for launch in run.launches
        if launch.attributes.get("kind") == "region"
    }
    assert counts["name"].tolist() == ["fit", "epoch", "epoch", "epoch"]
    # Every region lies inside whole 20 ms intervals (the program's first and last 0.06 s are outside
    # them all): its share is its wall time over 20 ms of the recorded interval's counts, so its IPC
    # is the recording's own 0.53 instructions per cycle.
    for index, row in counts.iterrows():
        assert row["instructions"] == pytest.approx(walls[index] / 0.02 * INSTRUCTIONS, rel=1e-6)
        assert row["branches"] == pytest.approx(walls[index] / 0.02 * BRANCHES, rel=1e-6)
    fit, epochs = counts.index[0], counts.index[1:]
    assert counts.loc[fit, "instructions"] < INSTRUCTIONS * len(rows)  # the whole command's count
    mix = region_counters.mix_frame(counts)
    assert mix["IPC"].tolist() == pytest.approx([INSTRUCTIONS / CYCLES] * 4, rel=1e-9)
    # Consistency: the epochs' share of fit is exactly the share of its time they cover.
    gap = region_counters.consistency_frame(counts).iloc[0]
    assert gap["instructions"] == pytest.approx(sum(walls[i] for i in epochs) / walls[fit] - 1, abs=1e-9)
    origins = {
        m.origin
        for launch in run.launches
        if launch.attributes.get("kind") == "region"
        for m in launch.metrics
        if m.name == "instructions"
    }
    assert origins == {"derived"}  # shares of measured intervals, not counts of the region itself


def test_an_interval_the_command_slept_through_counts_zero():
    """Real perf stat -I 100 -x, of a program busy 0.15 s, asleep 0.12 s, busy 0.05 s (this VM's
    software events): the interval it slept through is '<not counted>' at 100 % enabled: 0, not unknown."""
    rows = interval_counters.read(SLEPT, 10.0)
    assert len(rows) == 10 and rows[-1]["end (s)"] == 10.0
    assert rows[-1]["begin (s)"] == pytest.approx(10.0 - (0.938169715 - 0.934275013))
    assert rows[7]["task-clock"] == 0.0 and rows[7]["context-switches"] == 0.0
    assert rows[0]["page-faults"] == 1388 and rows[8]["task-clock"] == 18.36
    regions = pd.DataFrame(
        {"name": ["asleep"], "parent": [pd.NA], "begin (s)": [rows[7]["begin (s)"]], "end (s)": [rows[7]["end (s)"]]}
    )
    counts = region_counters.counts_from_intervals(pd.DataFrame(rows), regions, 0.1)
    assert counts.loc[0, "context-switches"] == 0.0
