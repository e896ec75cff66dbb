"""Counting backends and the counter hook on regions (gpuprof.counting), in fresh subprocesses
(the hook starts from the environment at import). This machine has no PMU: hardware events are
refused with a reason; the kernel's software events open through the same perf_event_open path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from gpuprof import counting
from gpuprof.derive import region_counters
from gpuprof.readers import read

ROOT = Path(__file__).resolve().parents[1]
DLPROF = Path(__file__).parent / "fixtures" / "dlprof" / "mnist_train_callback-single_thread.csv"
PROGRAM = textwrap.dedent("""
    import gpuprof
    with gpuprof.region("fit"):
        for epoch in range(5):
            with gpuprof.region("epoch", index=epoch):
                sum(i * i for i in range(200_000))
""")


def _profile(tmp_path: Path, **env: str) -> pd.DataFrame:
    regions = tmp_path / "regions.jsonl"
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "GPUPROF_REGIONS": str(regions), **env}
    subprocess.run([sys.executable, "-c", PROGRAM], env=environment, check=True, timeout=120)
    return region_counters.counts_from_regions(read(regions))


def _epochs_of_cpu2() -> tuple[list[str], list[list[float]]]:
    """DL-Prof's real per-epoch counts of CPU 2 (5 blocks), the stand-in's recording."""
    events: list[str] = []
    blocks = []
    for launch in read(DLPROF).launches:
        if launch.device == "cpu2":
            events = [m.name for m in launch.metrics]
            blocks.append([float(m.value) for m in launch.metrics])
    return events, blocks


def test_replayed_counts_per_region_and_consistency(tmp_path):
    events, blocks = _epochs_of_cpu2()
    total = [0.0] * len(events)
    readings = [list(total)]  # fit begins
    for block in blocks:  # each epoch: begin, then end
        readings.append(list(total))
        total = [t + b for t, b in zip(total, block, strict=True)]
        readings.append(list(total))
    readings.append(list(total))  # fit ends
    replay = tmp_path / "replay.json"
    replay.write_text(json.dumps({"events": events, "readings": readings}))
    counts = _profile(tmp_path, GPUPROF_COUNTERS=",".join(events), GPUPROF_COUNTER_REPLAY=str(replay))
    assert list(counts["name"]) == ["fit"] + ["epoch"] * 5
    epochs = counts[counts["name"] == "epoch"]
    assert list(epochs["perf_count_hw_instructions"]) == [b[0] for b in blocks]
    assert epochs["perf_count_hw_instructions"].iloc[0] == 193348191211  # the file's line 1
    gap = region_counters.consistency_frame(counts).iloc[0]
    assert gap["children"] == 5 and gap["perf_count_hw_instructions"] == pytest.approx(0.0, abs=1e-12)
    mix = region_counters.mix_frame(counts)
    assert mix.loc[epochs.index[0], "FLOPs 512b"] == 16 * 122693346870


def test_software_events_through_perf_event_open(tmp_path):
    backend, reasons = counting.choose(["task-clock", "page-faults"])
    if backend is None:
        pytest.skip(f"perf_event_open unavailable here: {reasons}")
    backend.close()
    counts = _profile(tmp_path, GPUPROF_COUNTERS="task-clock,context-switches")
    fit, epochs = counts.iloc[0], counts.iloc[1:]
    assert (epochs["task-clock"] > 1e6).all()  # ns of CPU time each epoch
    assert fit["task-clock"] >= epochs["task-clock"].sum()
    assert (counts["counted fraction"] == 1.0).all()


def test_hardware_events_say_why_not_counted():
    backend, reasons = counting.choose(["instructions"])
    if backend is not None:
        backend.close()
        pytest.skip("this machine has a PMU")
    assert reasons[0].startswith("not used: perf_event_open refused 'instructions'")
    assert reasons[1].startswith("not used: papi:")


def test_replay_file_with_a_short_reading_is_refused(tmp_path):
    replay = tmp_path / "r.json"
    replay.write_text(json.dumps({"events": ["cycles", "instructions"], "readings": [[1.0]]}))
    _, reasons = counting.choose(["instructions"], replay=str(replay))
    assert reasons[0] == f"not used: replay: {replay}: every reading needs one value per event"


def test_cpu_list():
    assert counting.cpu_list("0-3,8") == [0, 1, 2, 3, 8]


def test_profile_counters_mix_with_the_stand_in(tmp_path, monkeypatch):
    """gpuprof profile --counters mix,topdown -- python train.py: per-region counts stored and shown."""
    from click.testing import CliRunner

    from gpuprof.cli import main
    from gpuprof.store import open_store

    events, blocks = _epochs_of_cpu2()
    total = [0.0] * len(events)
    readings = [list(total)]
    for block in blocks[:3]:
        readings.append(list(total))
        total = [t + b for t, b in zip(total, block, strict=True)]
        readings.append(list(total))
    readings.append(list(total))
    replay = tmp_path / "replay.json"
    replay.write_text(json.dumps({"events": events, "readings": readings}))
    script = tmp_path / "train.py"
    script.write_text(PROGRAM.replace("range(5)", "range(3)"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv(counting.ENV_REPLAY, str(replay))
    store = tmp_path / "s.db"
    result = CliRunner().invoke(
        main, ["profile", "--counters", "mix,topdown", "--store", str(store), "--", sys.executable, str(script)]
    )
    assert result.exit_code == 0, result.output
    assert "counter backend used: replay" in result.output
    assert "Counters per region" in result.output and "Consistency per parent" in result.output
    with open_store(store) as opened:
        run = opened.runs()[-1]
    counts = region_counters.counts_from_regions(run)
    assert list(counts["perf_count_hw_instructions"].iloc[1:]) == [b[0] for b in blocks[:3]]
    assert counts["perf_count_hw_instructions"].iloc[0] == sum(b[0] for b in blocks[:3])


def test_user_space_only_where_the_kernel_allows_no_more(monkeypatch):
    """perf_event_paranoid >= 2 without root: the groups exclude the kernel (as perf's ':u'), and the
    reason says so; the kernel's software events still count."""
    monkeypatch.setattr(counting, "user_space_only", lambda: True)
    backend, reasons = counting.choose(["task-clock", "page-faults"])
    if backend is None:
        pytest.skip(f"perf_event_open unavailable here: {reasons}")
    first, _ = backend.read()
    sum(i * i for i in range(200_000))
    second, _ = backend.read()
    backend.close()
    assert backend.user_only and reasons[-1] == "used: perf_event_open (user space only: perf_event_paranoid >= 2)"
    assert second["task-clock"] > first["task-clock"]
