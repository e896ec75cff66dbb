"""Stall ranking as column expressions (:func:`gpuprof.derive.stalls.stall_table`) gives what the
loop over Launch objects it replaced gave, on every real fixture with stall metrics and on each
basis they carry; the loop is kept, labelled as the baseline, in benchmarks/bench_stalls.py."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from gpuprof.derive.stalls import available_bases, stall_profiles, stall_table
from gpuprof.model import DERIVED, Launch, Metric, Run
from gpuprof.readers import read

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "profiler-outputs"
FIXTURES = {  # every fixture whose reader gives stall metrics, and the bases it carries
    "nvprof_csv_metrics_k40c_flop_stall.csv": ["nvprof"],
    "ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log": ["ratio", "pcsamp"],
    "ncu-source-page-sass-csv-HET-RGNNMatmul-excerpt.csv": ["pcsamp"],
    "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep": ["ratio", "pcsamp"],
}


def _baseline():
    spec = importlib.util.spec_from_file_location("bench_stalls", ROOT / "benchmarks" / "bench_stalls.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


BENCH = _baseline()


def _run(name: str) -> Run:
    if name.endswith(".ncu-rep"):
        pytest.importorskip("ncu_report", reason="reading a .ncu-rep needs NVIDIA's ncu_report module")
    return read(OUT / name)


@pytest.mark.parametrize("name", FIXTURES)
def test_same_ranking_and_shares_as_the_loop_on_every_basis(name: str) -> None:
    run = _run(name)
    assert available_bases(run) == FIXTURES[name]
    for basis in (None, *FIXTURES[name]):
        old = BENCH.old_stall_profiles(run, basis)
        new = stall_profiles(run, basis)
        assert old, (name, basis)
        assert BENCH.same_shares(old, new) <= 1e-12
        assert [[tuple(vars(s).values()) for s in p.reasons] for p in old] == [list(map(tuple, p.reasons)) for p in new]


def test_table_rows_are_the_profiles_rows() -> None:
    run = _run("ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log")
    table = stall_table(run)
    (profile,) = stall_profiles(run)
    assert table["reason"].tolist() == [s.reason for s in profile.reasons]
    assert table["share"].sum() == pytest.approx(1.0, abs=1e-12)
    assert set(table["basis"]) == {"ratio"} and (table["coverage"] == 1.0).all()
    assert table["share"].is_monotonic_decreasing


def test_nvprof_coverage_is_the_sum_of_its_own_percentages() -> None:
    run = _run("nvprof_csv_metrics_k40c_flop_stall.csv")
    table = stall_table(run)
    assert table["coverage"].iat[0] == pytest.approx(table["value"].sum() / 100, abs=1e-12)
    assert table["coverage"].iat[0] < 1


def test_pct_basis_and_a_launch_with_only_the_issuing_state() -> None:
    """No real fixture carries the warp-active percentages; two in-memory launches do, one of them
    only the 'selected' state (kept as a profile without reasons, as before)."""
    pct = "smsp__warp_issue_stalled_{}_per_warp_active.pct"
    launches = [
        Launch(
            "a",
            0,
            metrics=[
                Metric(pct.format("wait"), 30.0, "%"),
                Metric(pct.format("barrier"), 10.0, "%"),
                Metric(pct.format("selected"), 50.0, "%"),
            ],
        ),
        Launch(
            "b", 1, metrics=[Metric(pct.format("selected"), 50.0, "%"), Metric("stall_sync", 20.0, "%", origin=DERIVED)]
        ),
    ]
    run = Run("import", "test", "memory", launches=launches)
    old, new = BENCH.old_stall_profiles(run), stall_profiles(run)
    assert BENCH.same_shares(old, new) == 0.0
    assert [(p.kernel, [(s.reason, s.share) for s in p.reasons]) for p in new] == [
        ("a", [("wait", 0.75), ("barrier", 0.25)]),
        ("b", []),
    ]
    table = stall_table(run)
    assert math.isnan(table["share"].iat[-1]) and table["kernel"].iat[-1] == "b"


def test_empty_run_and_unknown_basis() -> None:
    run = Run("import", "test", "memory", launches=[Launch("k", 0)])
    assert len(stall_table(run)) == 0 and stall_profiles(run) == [] and available_bases(run) == []
    with pytest.raises(ValueError):
        stall_table(run, "nope")


@pytest.mark.parametrize("name", FIXTURES)
def test_the_stalls_report_is_what_the_objects_gave(name: str) -> None:
    """``gpuprof stalls`` renders from the columns (one frame for all launches, each cell formatted once,
    explanations read from the columns): byte for byte what the objects and a frame per launch gave,
    in every format with and without --all, and on every basis the file carries."""
    run = _run(name)
    cases = [(None, fmt, show_zero) for fmt in ("table", "markdown", "csv", "json") for show_zero in (False, True)]
    for basis, fmt, show_zero in cases + [(basis, "table", True) for basis in FIXTURES[name]]:
        assert BENCH.new_command(run, fmt, basis, show_zero) == BENCH.old_command(run, fmt, basis, show_zero)


def test_the_report_of_a_launch_with_only_the_issuing_state_and_a_shared_lead() -> None:
    pct = "smsp__warp_issue_stalled_{}_per_warp_active.pct"
    launches = [
        Launch("a", 0, metrics=[Metric(pct.format("wait"), 30.0, "%"), Metric(pct.format("barrier"), 27.0, "%")]),
        Launch("b", 1, metrics=[Metric(pct.format("selected"), 50.0, "%")]),
        Launch("a", 2, metrics=[Metric(pct.format("wait"), 30.0, "%"), Metric(pct.format("barrier"), 10.0, "%")]),
    ]
    run = Run("import", "test", "memory", launches=launches)
    for fmt in ("table", "markdown", "csv", "json"):
        new = BENCH.new_command(run, fmt)
        assert new == BENCH.old_command(run, fmt)
    assert "share the lead" in new[1][0] and "no stall cycles" in new[1][1] and "dominate" in new[1][2]


def test_a_kernel_name_holding_the_percent_marks_is_explained_whole() -> None:
    """The explanations fill percents into one sentence per kernel and leading reasons at marks
    (control characters); a name from a file that holds one is written whole instead."""
    pct = "smsp__warp_issue_stalled_{}_per_warp_active.pct"
    metrics = [Metric(pct.format("wait"), 30.0, "%"), Metric(pct.format("barrier"), 10.0, "%")]
    run = Run("import", "test", "memory", launches=[Launch("k\x00\x01\x02", 0, metrics=metrics)])
    assert BENCH.new_command(run, "json") == BENCH.old_command(run, "json")
