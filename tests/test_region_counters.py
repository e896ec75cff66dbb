"""Per-region counter maths on known tables: DL-Prof's real counts (tests/fixtures/dlprof) and a
hand-made Top-Down table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from gpuprof.derive import region_counters
from gpuprof.derive.region_counters import normalise_event
from gpuprof.model import Run
from gpuprof.readers import read

HERE = Path(__file__).parent / "fixtures" / "dlprof"
FIXTURE_INTERVALS = Path(__file__).parent / "fixtures" / "cpu-counters" / "perf-stat-csv-interval-cgroup-fp-cpubops.csv"


def counts_frame(run: Run, launches: list[int] | None = None) -> pd.DataFrame:
    """The counts frame (name, parent, one column per counted event) of DL-Prof's blocks, as
    region_counters' frames take it: each launch's event counts."""
    rows, names, parents = {}, {}, {}
    for launch in run.launches:
        if launches is not None and launch.index not in launches:
            continue
        rows[launch.index] = {
            normalise_event(m.name): float(m.value)
            for m in launch.metrics
            if m.unit == "event" and isinstance(m.value, (int, float))
        }
        names[launch.index] = launch.attributes.get("name", launch.kernel)
        parent = launch.attributes.get("parent")
        parents[launch.index] = int(parent) if parent not in (None, "") else pd.NA
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.insert(0, "parent", pd.array([parents[i] for i in frame.index], dtype="Int64"))
    frame.insert(0, "name", [names[i] for i in frame.index])
    return frame


def test_mix_of_one_block_and_cpu_from_the_file_lines():
    run = read(HERE / "mnist_train_callback-single_thread.csv")
    counts = counts_frame(run, launches=[0])  # block 0, CPU 2: lines 1-9 of the file
    row = region_counters.mix_frame(counts).iloc[0]
    ins, br, ld, st = 193348191211, 16622251581, 67139940133, 15615410143
    sd, ss, p128, p256, p512 = 247318651, 154688753, 15056280, 3403140, 122693346870
    fp = sd + ss + p128 + p256 + p512
    assert row["instructions per FP instruction"] == pytest.approx(ins / fp, rel=1e-12)
    assert row["loads+stores per FP instruction"] == pytest.approx((ld + st) / fp, rel=1e-12)
    assert row["branches per FP instruction"] == pytest.approx(br / fp, rel=1e-12)
    assert row["arithmetic instructions (instructions - loads - stores - branches)"] == ins - ld - st - br
    assert row["FLOPs 512b"] == 16 * p512
    assert row["FLOPs 256b"] == 8 * p256
    assert row["FLOPs 128b"] == 4 * p128
    assert row["FLOPs scalar"] == sd + ss
    assert row["FLOPs"] == sd + ss + 4 * p128 + 8 * p256 + 16 * p512
    assert pd.isna(row["IPC"])  # DL-Prof counted no cycles: not counted, not zero
    assert pd.isna(row["retiring (%)"])


def _blocks(path: Path) -> pd.DataFrame:
    counts = counts_frame(read(path))
    events = [c for c in counts.columns if c not in ("name", "parent")]
    return counts.groupby("name", sort=False)[events].sum()


def test_consistency_of_epochs_against_the_whole_fit():
    epochs = _blocks(HERE / "mnist_train_callback-single_thread.csv")  # 5 epochs, summed over CPUs
    fit = _blocks(HERE / "mnist_train_papi-single_thread.csv").sum().to_frame("fit").T
    counts = pd.concat([fit, epochs], ignore_index=True)
    counts.insert(0, "parent", pd.array([pd.NA] + [0] * len(epochs), dtype="Int64"))
    counts.insert(0, "name", ["fit", *epochs.index])
    row = region_counters.consistency_frame(counts).iloc[0]
    assert (row["parent"], row["name"], row["children"]) == (0, "fit", 5)
    assert row["perf_count_hw_instructions"] == pytest.approx(0.00125, abs=5e-5)
    assert row["l1-dcache-stores"] == pytest.approx(0.00538, abs=5e-5)
    assert row["fp_arith_inst_retired.512b_packed_single"] == pytest.approx(0.0, abs=1e-9)


def test_topdown_level1_from_slot_counts():
    counts = pd.DataFrame(
        {
            "name": ["a", "b"],
            "parent": pd.array([pd.NA, 0], dtype="Int64"),
            "slots": [1000.0, 400.0],
            "topdown-retiring": [400.0, 100.0],
            "topdown-bad-spec": [100.0, 0.0],
            "topdown-fe-bound": [200.0, 100.0],
            "topdown-be-bound": [300.0, 200.0],
            "instructions": [800.0, 300.0],
            "cycles": [250.0, 100.0],
        }
    )
    mix = region_counters.mix_frame(counts)
    assert list(mix["retiring (%)"]) == [40.0, 25.0]
    assert list(mix["backend bound (%)"]) == [30.0, 50.0]
    assert list(mix["IPC"]) == [3.2, 3.0]
    assert pd.isna(mix["FLOPs"]).all()
    gap = region_counters.consistency_frame(counts).iloc[0]
    assert gap["instructions"] == pytest.approx(300 / 800 - 1)
    assert gap["slots"] == pytest.approx(-0.6)


def test_old_topdown_events():
    counts = pd.DataFrame(
        {
            "name": ["a"],
            "parent": pd.array([pd.NA], dtype="Int64"),
            "topdown-total-slots": [1000.0],
            "topdown-slots-issued": [600.0],
            "topdown-slots-retired": [500.0],
            "topdown-fetch-bubbles": [150.0],
            "topdown-recovery-bubbles": [50.0],
        }
    )
    row = region_counters.topdown_level1(counts).iloc[0]
    assert (row["retiring (%)"], row["bad speculation (%)"], row["frontend bound (%)"], row["backend bound (%)"]) == (
        50.0,
        15.0,
        15.0,
        20.0,
    )


def test_interval_fallback_on_real_perf_intervals():
    """perf stat -I 1000 (real file: two 1 s intervals, -x, cgroup) shared among regions by overlap."""
    run = read(FIXTURE_INTERVALS)
    rows = [
        {
            "end (s)": float(launch.attributes["time_s"]),
            **{m.name: m.value for m in launch.metrics if m.unit == "event"},
        }
        for launch in run.launches
    ]
    intervals = pd.DataFrame(rows)
    first, second = (row["mem_inst_retired.all_loads"] for row in rows)
    assert first == 3532382411  # line 3 of the file
    regions = pd.DataFrame(
        {
            "name": ["run", "a", "b"],
            "parent": pd.array([pd.NA, 0, 0], dtype="Int64"),
            "begin (s)": [0.0, 0.502034594, 1.002034594],
            "end (s)": [2.003076967, 1.002034594, 1.5025557805],
        }
    )
    counts = region_counters.counts_from_intervals(intervals, regions, 1.001042373)
    assert counts.loc[0, "mem_inst_retired.all_loads"] == pytest.approx(first + second, rel=1e-9)
    assert counts.loc[1, "mem_inst_retired.all_loads"] == pytest.approx(first * 0.5 / 1.001042373, rel=1e-9)
    assert counts.loc[2, "mem_inst_retired.all_loads"] == pytest.approx(second / 2, rel=1e-9)
    assert "resolution 1001.04 ms" in region_counters.interval_basis(1.001042373)
