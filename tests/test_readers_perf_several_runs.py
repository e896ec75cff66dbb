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


CPU = FIXTURES.parent / "cpu-counters"


def test_csv_per_thread_rows_keep_the_comm_tid_cell_even_when_the_comm_holds_a_dash() -> None:
    # perf 6.8.12 '--per-thread -p PID -x,' output, verbatim from a public benchmark script (SOURCES.md 4c)
    run = readers.read(CPU / "perf-stat-x-per-thread-hybrid-perf6.8-writer-reader-EXCERPT.csv")
    assert [launch.attributes["thread"] for launch in run.launches] == [
        "perthread-3515545",
        "writer-0-3515547",
        "reader-0-3515548",
    ]
    writer = run.launches[1]
    assert writer.value("cpu_core/cycles") == 8_271_740_307 and writer.value("cpu_core/instructions") == 6_378_556_346
    assert writer.value("task-clock") == pytest.approx(1.69207)
    assert writer.metric("cpu_core/cycles: GHz").origin == "derived"
    assert all(launch.device == "" for launch in run.launches)  # a thread is not a CPU


def test_csv_r_variance_column_is_the_spread_not_the_run_time() -> None:
    # 'perf stat -x, -r 3' prints the relative standard deviation right after the event (SOURCES.md 4d)
    (launch,) = readers.read(CPU / "perf-stat-x-r3-variance-column-python-EXCERPT.csv").launches
    assert launch.value("cycles") == 1_268_672_031 and launch.value("cycles:spread") == 0.19
    assert launch.value("page-faults:spread") == 0.45 and launch.value("instructions:spread") == 0.02
    assert launch.value("instructions: insn per cycle") == 1.07  # the metric column did not shift
    assert launch.value("task-clock") == pytest.approx(0.31827) and launch.value("task-clock:spread") == 0.20


def test_csv_runs_appended_to_one_file_are_one_launch_each_with_their_metric_lines() -> None:
    # written from perf's documented layout (-o FILE --append writes '# started on' per run; SOURCES.md 4e)
    run = readers.read(CPU / "perf-stat-x-append-two-runs-metric-lines-written-from-docs.csv")
    assert [launch.kernel for launch in run.launches] == ["perf stat run 1", "perf stat run 2"]
    first, second = run.launches
    assert first.value("cycles") == 3_912_046_118 and second.value("cycles") == 7_801_332_091
    # a -M metric printed on its own line stays perf's derived value of the event before it
    metric = second.metric("instructions: cycles per insn")
    assert (metric.value, metric.origin) == (0.86, "derived")
    assert "2 perf stat runs in one file" in run.notes[0]


def test_blocks_pasted_between_dash_lines_are_one_launch_per_run_named_by_its_prompt() -> None:
    run = readers.read(CPU / "perf-stat-two-trimmed-blocks-dash-separator-written-from-docs.txt")  # SOURCES.md 4f
    assert [launch.kernel for launch in run.launches] == ["./stream 1000000", "./stream 4000000"]
    assert [launch.value("instructions") for launch in run.launches] == [7_233_019_876, 9_102_554_713]
