"""RTX 3080 .ncu-rep (computeValue, initRNG): PC-sampling hot spots and warp-state stall profile.

Truth values are read here with NVIDIA's ncu_report module directly, not through gpuprof.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ncu_report = pytest.importorskip("ncu_report")

from gpuprof.derive.stalls import hot_spots  # noqa: E402
from gpuprof.readers.ncu_source_csv import rep_instructions  # noqa: E402

REP = Path(__file__).parent / "fixtures" / "profiler-outputs" / "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep"
COMPUTE = "void computeValue<float>(unsigned int*, curandStateXORWOW*, unsigned int)"


@pytest.fixture(scope="module")
def actions() -> dict[str, object]:
    report = ncu_report.load_report(str(REP))
    rng = report.range_by_idx(0)
    return {rng.action_by_idx(i).name(): rng.action_by_idx(i) for i in range(rng.num_actions())}


@pytest.fixture(scope="module")
def instructions() -> dict[str, list]:
    return rep_instructions(REP)


def _top_instance(action, metric_name: str) -> tuple[int, float]:
    metric = action.metric_by_name(metric_name)
    ids = metric.correlation_ids()
    value, index = max((metric.as_double(i), i) for i in range(metric.num_instances()))
    return ids.as_uint64(index), value


def test_top_wait_instruction_is_bsync(actions, instructions) -> None:
    pc, samples = _top_instance(actions["computeValue"], "smsp__pcsamp_warps_issue_stalled_wait")
    (spot,) = hot_spots(instructions[COMPUTE], top=1, reason="wait")
    assert (spot.address, spot.reason_samples) == (pc, samples)
    assert spot.source == actions["computeValue"].sass_by_pc(pc).strip() == "BSYNC B0"
    assert samples == 427


@pytest.mark.parametrize(
    "reason, metric",
    [
        ("wait", "smsp__pcsamp_warps_issue_stalled_wait"),
        ("no_instruction", "smsp__pcsamp_warps_issue_stalled_no_instructions"),
        ("long_scoreboard", "smsp__pcsamp_warps_issue_stalled_long_scoreboard"),
    ],
)
def test_per_pc_samples_add_up_to_the_kernel_total(actions, instructions, reason: str, metric: str) -> None:
    total = actions["computeValue"].metric_by_name(metric).as_double()
    assert sum(i.samples.get(reason, 0.0) for i in instructions[COMPUTE]) == total
    assert len(instructions[COMPUTE]) == actions["computeValue"].metric_by_name(metric).num_instances()


def test_top_instruction_of_initrng(actions, instructions) -> None:
    action = actions["initRNG"]
    (name,) = [k for k in instructions if k.startswith("initRNG")]
    (spot,) = hot_spots(instructions[name], top=1)
    pc, samples = _top_instance(action, "smsp__pcsamp_warps_issue_stalled_long_scoreboard")
    assert spot.address == pc and spot.reason == "long_scoreboard" and spot.reason_samples == samples
    assert spot.source == action.sass_by_pc(pc).strip()


# ---- the kernel-level profile through gpuprof's .ncu-rep reader ----

RATIO = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"


@pytest.fixture(scope="module")
def rep_run():
    from gpuprof.readers import read

    return read(REP)


def _truth_ratios(action) -> dict[str, float]:
    """Every warp-state ratio in the report, read with ncu_report; 'selected' is not a stall."""
    prefix, suffix = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
    ratios = {
        name[len(prefix) : -len(suffix)]: action.metric_by_name(name).as_double()
        for name in action.metric_names()
        if name.startswith(prefix) and name.endswith(suffix)
    }
    del ratios["selected"]
    return ratios


def test_warp_state_profile_matches_ncu_report(actions, rep_run) -> None:
    from gpuprof.derive.stalls import stall_profiles

    profiles = {p.kernel: p for p in stall_profiles(rep_run)}
    for short, action in actions.items():
        (profile,) = [p for k, p in profiles.items() if short in k]
        truth = _truth_ratios(action)
        assert "selected" not in truth and "not_selected" in truth
        total = sum(truth.values())
        assert profile.basis == "ratio" and profile.device == "GeForce RTX 3080"
        assert {s.reason: s.value for s in profile.reasons} == truth
        assert {s.reason: s.share for s in profile.reasons} == pytest.approx({r: v / total for r, v in truth.items()})
        assert [s.reason for s in profile.reasons][:3] == sorted(truth, key=truth.get, reverse=True)[:3]


def test_compute_value_wait_dominates_and_is_explained(actions, rep_run) -> None:
    from gpuprof.derive.stalls import explain, stall_profiles

    (profile,) = [p for p in stall_profiles(rep_run) if "computeValue" in p.kernel]
    wait = actions["computeValue"].metric_by_name(RATIO.format("wait")).as_double()
    assert profile.reasons[0].reason == "wait" and profile.reasons[0].value == wait
    assert round(wait, 2) == 13.92
    text = explain(profile)
    assert f"Wait stalls dominate ({100 * profile.reasons[0].share:.1f}% of stall cycles)" in text
    assert "fixed-latency" in text
    # branch_resolving is not in this 2020-era report: it is not invented
    assert actions["computeValue"].metric_by_name(RATIO.format("branch_resolving")) is None
    assert profile.share("branch_resolving") is None


def test_pc_sampling_profile_matches_ncu_report(actions, rep_run) -> None:
    from gpuprof.derive.stalls import stall_profiles

    (profile,) = [p for p in stall_profiles(rep_run, "pcsamp") if "computeValue" in p.kernel]
    action = actions["computeValue"]
    prefix = "smsp__pcsamp_warps_issue_stalled_"
    truth = {
        n: action.metric_by_name(n).as_double()
        for n in action.metric_names()
        if n.startswith(prefix) and not n.endswith("_not_issued") and n != prefix + "selected"
    }
    assert sum(s.value for s in profile.reasons) == sum(truth.values())
    assert profile.reasons[0].metric == "smsp__pcsamp_warps_issue_stalled_wait"
    assert profile.reasons[0].value == truth["smsp__pcsamp_warps_issue_stalled_wait"] == 249846


def test_comparison_k40c_nvprof_against_rtx3080_ncu(actions, rep_run) -> None:
    """Mixed tools: ncu states fold into nvprof reasons by NVIDIA's table (exec dependency = short scoreboard + wait)."""
    from gpuprof.derive.stalls import stall_comparison
    from gpuprof.readers import read

    k40c = read(REP.parent / "nvprof_csv_metrics_k40c_flop_stall.csv")
    frame = stall_comparison([k40c, rep_run]).set_index("reason")
    column = "GeForce RTX 3080 | void computeValue<float>(unsigned int*, curandStateXORWOW*, unsigned int)"
    truth = _truth_ratios(actions["computeValue"])
    expected = 100 * (truth["short_scoreboard"] + truth["wait"]) / sum(truth.values())
    assert frame.loc["stall_exec_dependency", column] == round(expected, 2)
    assert frame.loc["stall_exec_dependency", "Tesla K40c"] == 27.39
    assert frame.loc["stall_sync", "Tesla K40c"] == 28.13
    assert frame.attrs["basis"]["Tesla K40c"] == "nvprof"
