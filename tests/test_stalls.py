"""Stall vocabulary, ranking and explanations; nvprof K40c and ncu source-page fixtures.

Truth values are read from the fixture files themselves (see tests/fixtures/profiler-outputs/SOURCES.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.derive import stalls
from gpuprof.derive.stalls import (
    InstructionSamples,
    classify,
    explain,
    fold_to_nvprof,
    hot_spots,
    metric_value,
    stall_comparison,
    stall_profiles,
)
from gpuprof.model import DERIVED, Launch, Metric, Run, catalog
from gpuprof.readers import ncu_source_csv, read

OUT = Path(__file__).parent / "fixtures" / "profiler-outputs"
K40C = OUT / "nvprof_csv_metrics_k40c_flop_stall.csv"
SOURCE_CSV = OUT / "ncu-source-page-sass-csv-HET-RGNNMatmul-excerpt.csv"


def _ratio_run(values: dict[str, float], kernel: str = "k", device: str = "GPU") -> Run:
    """An in-memory ncu run with warp-state ratios, for the pure ranking/explanation logic."""
    metrics = [
        Metric(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio", v, "inst") for r, v in values.items()
    ]
    return Run("import", "test", "memory", device={"name": device}, launches=[Launch(kernel, 0, metrics=metrics)])


# ---- vocabulary ----


def test_every_reason_has_nvidia_description_fix_and_reading() -> None:
    vocab = stalls.vocabulary()
    for section in ("ncu", "nvprof"):
        for reason, spec in vocab[section].items():
            assert spec["description"] and spec["fix"] and spec["suggests"] and spec["label"], reason
    assert set(vocab["ncu"]) >= {
        "barrier",
        "branch_resolving",
        "dispatch_stall",
        "drain",
        "imc_miss",
        "lg_throttle",
        "long_scoreboard",
        "math_pipe_throttle",
        "membar",
        "mio_throttle",
        "misc",
        "no_instruction",
        "not_selected",
        "selected",
        "short_scoreboard",
        "sleeping",
        "tex_throttle",
        "wait",
    }


def test_nvprof_to_ncu_mapping_is_nvidias_and_consistent_both_ways() -> None:
    vocab = stalls.vocabulary()
    assert vocab["nvprof"]["stall_inst_fetch"]["ncu"] == ["no_instruction"]
    assert sorted(vocab["nvprof"]["stall_exec_dependency"]["ncu"]) == ["short_scoreboard", "wait"]
    assert vocab["nvprof"]["stall_memory_dependency"]["ncu"] == ["long_scoreboard"]
    assert sorted(vocab["nvprof"]["stall_sync"]["ncu"]) == ["barrier", "membar"]
    for reason, spec in vocab["ncu"].items():
        if "nvprof" in spec:
            assert reason in vocab["nvprof"][spec["nvprof"]]["ncu"], reason


def test_stall_vocabulary_agrees_with_the_metric_catalog() -> None:
    """metrics.toml maps canonical stall_* names to ncu metrics; stalls.toml must group them the same way."""
    checked = 0
    for name, entry in catalog.entries().items():
        if name not in stalls.vocabulary()["nvprof"]:
            continue
        for ncu_name in (*entry.ncu, *entry.ncu_sum):
            basis, reason = classify(ncu_name)
            assert basis == stalls.PCT
            assert stalls.vocabulary()["ncu"][reason]["nvprof"] == name, ncu_name
            checked += 1
    assert checked >= 10


def test_classify_names_and_pc_sampling_spelling() -> None:
    assert classify("smsp__pcsamp_warps_issue_stalled_no_instructions") == ("pcsamp", "no_instruction")
    assert classify("smsp__pcsamp_warps_issue_stalled_wait_not_issued") is None
    assert classify("smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct") == ("pct", "long_scoreboard")
    assert classify("stall_sync") == ("nvprof", "stall_sync")
    assert classify("flop_count_sp") is None


# ---- ranking ----


def test_k40c_nvprof_ranked_as_reported() -> None:
    (profile,) = stall_profiles(read(K40C))
    assert profile.basis == "nvprof" and profile.device == "Tesla K40c"
    # Avg column of the file: stall_sync 28.125501%, stall_exec_dependency 27.392462%, stall_memory_dependency 9.216144%
    assert [(s.reason, s.value) for s in profile.reasons] == [
        ("stall_sync", 28.125501),
        ("stall_exec_dependency", 27.392462),
        ("stall_memory_dependency", 9.216144),
    ]
    assert profile.coverage == pytest.approx((28.125501 + 27.392462 + 9.216144) / 100)


def test_k40c_explanation_names_the_lead_and_the_gap() -> None:
    (profile,) = stall_profiles(read(K40C))
    text = explain(profile)
    assert "Of the 3 nvprof stall reasons collected (together 64.7% of all stalls)" in text
    assert "Synchronization (28.1%) and Execution dependency (27.4%)" in text
    assert "__syncthreads()" in text


def test_ratios_are_normalised_without_selected() -> None:
    (profile,) = stall_profiles(_ratio_run({"long_scoreboard": 6.0, "wait": 2.0, "selected": 1.0}))
    assert [(s.reason, s.share) for s in profile.reasons] == [("long_scoreboard", 0.75), ("wait", 0.25)]


def test_absent_reasons_are_not_invented_and_unknown_ones_are_kept() -> None:
    run = _ratio_run({"wait": 1.0, "gmma": 3.0})
    (profile,) = stall_profiles(run)
    assert [(s.reason, s.label) for s in profile.reasons] == [("gmma", "gmma"), ("wait", "Wait")]


def test_single_invocation_min_equals_max_wins_over_doubled_average() -> None:
    # ncu --print-summary text: dispatch_stall 9552 / 9552 / 19104 (Minimum / Maximum / Average)
    assert metric_value(Metric("x", 19104.0, "warp", minimum=9552.0, maximum=9552.0)) == 9552.0
    assert metric_value(Metric("x", 27.39, "%", minimum=27.35, maximum=27.41)) == 27.39


def test_derived_nvprof_sums_in_an_ncu_run_do_not_replace_measured_states() -> None:
    # (built into the launch: a run's Launch objects are views, appending to them changes nothing)
    launch = _ratio_run({"short_scoreboard": 1.0, "wait": 3.0}).launches[0]
    launch.metrics.append(Metric("stall_exec_dependency", 99.0, "%", origin=DERIVED))
    (profile,) = stall_profiles(Run("import", "test", "memory", launches=[launch]))
    assert profile.basis == "ratio" and len(profile.reasons) == 2
    assert stall_profiles(Run("import", "test", "memory", launches=[launch]), "nvprof") == []


# ---- explanations ----


@pytest.mark.parametrize(
    "reason, hint, words",
    [
        ("long_scoreboard", "", "memory-bound"),
        ("no_instruction", "", "less than one full wave"),
        ("short_scoreboard", "sigmoid", "special-function unit"),
        ("short_scoreboard", "", "shared-memory"),
        ("wait", "", "fixed-latency dependencies"),
        ("barrier", "", "__syncthreads() imbalance"),
    ],
)
def test_explanation_says_what_the_dominant_reason_suggests(reason: str, hint: str, words: str) -> None:
    (profile,) = stall_profiles(_ratio_run({reason: 5.0, "misc": 1.0}))
    text = explain(profile, hint)
    assert text.count(". ") >= 2 and words in text
    assert f"({100 * 5 / 6:.1f}% of stall cycles)" in text


def test_fold_to_nvprof_uses_nvidias_groups() -> None:
    (profile,) = stall_profiles(
        _ratio_run({"short_scoreboard": 1.0, "wait": 2.0, "long_scoreboard": 1.0, "branch_resolving": 4.0})
    )
    assert fold_to_nvprof(profile) == pytest.approx(
        {"stall_exec_dependency": 3 / 8, "stall_memory_dependency": 1 / 8, "branch_resolving": 0.5}
    )


def test_comparison_side_by_side_same_family() -> None:
    a = _ratio_run({"wait": 3.0, "long_scoreboard": 1.0}, "dot", "GTX 980")
    b = _ratio_run({"wait": 1.0, "long_scoreboard": 1.0}, "dot", "K40")
    frame = stall_comparison([a, b], kernel="dot")
    assert list(frame.columns) == ["reason", "label", "GTX 980", "K40"]
    assert frame.set_index("reason").loc["wait", "GTX 980"] == 75.0
    assert frame.attrs["basis"] == {"GTX 980": "ratio", "K40": "ratio"}
    again = stall_comparison([a, a])
    assert list(again.columns) == ["reason", "label", "GTX 980 | dot", "GTX 980 | dot #2"]


# ---- ncu source page CSV (SOURCES.md §4a) ----


def test_source_csv_sniffed_and_summed_per_kernel() -> None:
    run = read(SOURCE_CSV)
    assert run.format == "ncu-source-csv"
    (launch,) = run.launches
    assert launch.kernel.startswith("void HET_RGNNMatmulNoScatterGatherListFwProp<(bool)1, (int)32")
    # rows: stall_imc 32 + 30, stall_no_inst 10, stall_selected 2; All Cycles 42 + 30 + 2
    assert launch.value("smsp__pcsamp_warps_issue_stalled_imc_miss") == 62
    assert launch.value("smsp__pcsamp_warps_issue_stalled_no_instructions") == 10
    assert launch.value("smsp__pcsamp_warps_issue_stalled_selected") == 2
    assert launch.value("smsp__pcsamp_sample_count") == 74
    (profile,) = stall_profiles(run)
    assert profile.basis == "pcsamp"
    assert [(s.reason, s.value) for s in profile.reasons if s.value] == [("imc_miss", 62), ("no_instruction", 10)]


def test_source_csv_hot_spots_match_the_truth_rows() -> None:
    (rows,) = ncu_source_csv.instructions(SOURCE_CSV).values()
    first, second, third = hot_spots(rows)
    assert (first.address, first.source, first.samples) == (0x7FC48541D900, "IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28]", 42)
    assert (first.reason, first.reason_samples) == ("imc_miss", 32)
    assert rows[0].samples["no_instruction"] == 10 and rows[0].samples["sleeping"] == 0
    assert (third.address, third.source, third.samples, third.reason) == (
        0x7FC48541D920,
        "S2UR UR38, SR_CTAID.Y",
        2,
        "",
    )
    assert rows[2].samples["selected"] == 2


def test_hot_spots_ranked_by_one_reason() -> None:
    rows = [
        InstructionSamples(1, "A", {"wait": 5, "long_scoreboard": 50}),
        InstructionSamples(2, "B", {"wait": 9, "long_scoreboard": 1}),
    ]
    assert [s.source for s in hot_spots(rows, reason="wait")] == ["B", "A"]
    assert [s.source for s in hot_spots(rows)] == ["A", "B"]
