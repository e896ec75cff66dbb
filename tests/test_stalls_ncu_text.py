"""A100 `ncu --print-summary per-gpu` text excerpt: Warp State Statistics and Source Counters sections.

Values typed in below were read from ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.derive.stalls import available_bases, explain, stall_profiles
from gpuprof.readers import read

A100 = (
    Path(__file__).parent / "fixtures" / "profiler-outputs" / "ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log"
)

# Warp State Statistics, Average column (cycles per issued instruction); 'selected' (1.000000) is not a stall
# and the excerpt omits the wait row.
RATIOS = {
    "barrier": 0.0,
    "branch_resolving": 0.303473,
    "dispatch_stall": 0.028667,
    "drain": 0.0,
    "imc_miss": 0.000001,
    "lg_throttle": 0.0,
    "long_scoreboard": 0.0,
    "math_pipe_throttle": 0.797020,
    "membar": 0.0,
    "mio_throttle": 0.013992,
    "misc": 0.000059,
    "no_instruction": 7.541575,
    "not_selected": 0.887142,
    "short_scoreboard": 0.251668,
    "sleeping": 0.0,
    "tex_throttle": 0.0,
}
# Source Counters, Minimum (= Maximum) column: the Average column doubles most of them (9552 / 9552 / 19104).
SAMPLES = {
    "branch_resolving": 89976,
    "dispatch_stall": 9552,
    "math_pipe_throttle": 269293,
    "membar": 0,
    "no_instruction": 2146048,
    "not_selected": 301417,
    "short_scoreboard": 74570,
    "wait": 477645,
}


@pytest.fixture(scope="module")
def run():
    return read(A100)


def test_both_bases_found(run) -> None:
    assert run.format == "ncu-text"
    assert available_bases(run) == ["ratio", "pcsamp"]


def test_warp_state_ranking_and_shares(run) -> None:
    (profile,) = stall_profiles(run)
    assert profile.kernel == "PathTracer(int, Pixel *, int)" and profile.basis == "ratio"
    assert {s.reason: s.value for s in profile.reasons} == pytest.approx(RATIOS)
    total = sum(RATIOS.values())
    assert [s.reason for s in profile.reasons][:5] == [
        "no_instruction",
        "not_selected",
        "math_pipe_throttle",
        "branch_resolving",
        "short_scoreboard",
    ]
    assert profile.reasons[0].share == pytest.approx(7.541575 / total)
    assert profile.share("wait") is None  # omitted from the excerpt: not invented


def test_pc_sampling_uses_the_single_invocation_value(run) -> None:
    (profile,) = stall_profiles(run, "pcsamp")
    assert {s.reason: s.value for s in profile.reasons} == SAMPLES
    assert profile.reasons[0].share == pytest.approx(2146048 / sum(SAMPLES.values()))
    assert profile.share("long_scoreboard") is None  # no such row in the excerpt


def test_explanation_points_at_instruction_supply(run) -> None:
    (profile,) = stall_profiles(run)
    text = explain(profile)
    assert text.startswith("PathTracer(int, Pixel *, int): No instruction stalls dominate (")
    assert f"({100 * 7.541575 / sum(RATIOS.values()):.1f}% of stall cycles)" in text
    assert "instruction-cache" in text and "Not selected" in text
