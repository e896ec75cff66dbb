"""Several perf stat runs in one file (issue 28, item 4): Victor Stinner's notes paste four runs of
two Python builds one after another (SOURCES.md). Each run is its own launch, named by its command."""

from __future__ import annotations

import pytest
from fixture_paths import FIXTURES

from gpuprof import readers
from gpuprof.readers import perf_stat

FOUR_RUNS = FIXTURES.parent / "cpu-counters" / "perf-stat-four-runs-in-one-file-python-slow-fast-EXCERPT.txt"


def test_one_launch_per_run_named_by_its_command_never_merged() -> None:
    assert readers.detect(FOUR_RUNS) is perf_stat
    run = readers.read(FOUR_RUNS)
    assert [launch.kernel for launch in run.launches] == [
        "./python-slow (...)",
        "./python-fast (...)",
        "./python-fast",
        "./python-slow",
    ]
    assert [launch.attributes["perf_run"] for launch in run.launches] == ["1", "2", "3", "4"]
    slow, fast = run.launches[:2]
    #     10,753,371,258 L1-icache-loads / 848,511,308 L1-icache-load-misses / 6.020490449 seconds
    assert slow.value("L1-icache-loads") == 10_753_371_258 and slow.value("L1-icache-load-misses") == 848_511_308
    assert slow.value("time elapsed") == pytest.approx(6.020490449)
    assert fast.value("L1-icache-load-misses") == 10_917_606
    assert fast.value("time elapsed") == pytest.approx(3.775067668)
    # each event once per launch: nothing of one run added to another's
    for launch in run.launches:
        names = [metric.name for metric in launch.metrics]
        assert len(names) == len(set(names))
    assert run.launches[2].value("cycles") == 12_981_234_867 and run.launches[3].value("cycles") == 20_651_474_102
    assert run.notes[0] == "4 perf stat runs in one file: each is its own launch, named by the command it counted"


PER_THREAD = FIXTURES.parent / "cpu-counters" / "perf-stat-per-thread-written-from-docs.txt"


def test_per_thread_rows_are_one_launch_per_thread() -> None:
    # Written from perf's documented --per-thread layout (no public sample found: SOURCES.md).
    run = readers.read(PER_THREAD)
    threads = [launch for launch in run.launches if "thread" in launch.attributes]
    assert [launch.attributes["thread"] for launch in threads] == ["ls-3125", "ls-3126"]
    assert [launch.value("cycles") for launch in threads] == [1_006_520, 874_233]
    assert [launch.value("instructions") for launch in threads] == [2_231_112, 1_201_410]
    assert threads[0].value("instructions: insn per cycle") == 2.22
    assert all(launch.device == "" for launch in threads)  # a thread is not a CPU
    assert run.launches[-1].attributes == {"scope": "whole run"}
