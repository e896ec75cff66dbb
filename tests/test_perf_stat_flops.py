"""Counted FLOPs from FP_ARITH_INST_RETIRED / fp_ret_sse_avx_ops events (gpuprof.derive.cpu_flops)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof.derive.cpu_flops import flops_by_dtype, flops_from_events, normalise_event
from gpuprof.model import Metric
from gpuprof.readers import perf_stat

FIXTURES = Path(__file__).parent / "fixtures" / "cpu-counters"


def _launch(name: str, index: int = 0) -> list[Metric]:
    return perf_stat.read(FIXTURES / name).launches[index].metrics


def test_1a_cross_check_114_gflops() -> None:
    # Truth (SOURCES.md 1a): 512b 563539901688, 256b 3849289, 128b 17075053, scalar 122202329, 39.428329959 s.
    expected = 8 * 563539901688 + 4 * 3849289 + 2 * 17075053 + 122202329
    total, basis = flops_from_events(_launch("perf-stat-human-fp512-i7-1185G7-suanpan.txt"))
    assert total == expected
    assert total / 39.428329959 / 1e9 == pytest.approx(114.4, abs=0.1)
    assert "FMA counts twice" in basis


def test_1e_single_and_double_split_and_multiplexing_said() -> None:
    metrics = _launch("perf-stat-human-fp-multiplexed-intel-simd-lecture.txt")
    assert flops_by_dtype(metrics) == {"float32": 159755 + 8 * 164619622, "float64": 19914}
    _, basis = flops_from_events(metrics)
    assert "28.33%" in basis  # the least-running FP event


def test_1b_first_interval_only_scalar_double() -> None:
    metrics = _launch("perf-stat-csv-interval-cgroup-fp-cpubops.csv")
    assert flops_from_events(metrics)[0] == 8693488
    # The cut-off second interval has no FP events at all.
    assert flops_from_events(_launch("perf-stat-csv-interval-cgroup-fp-cpubops.csv", 1)) is None


def test_no_fp_events_gives_none() -> None:
    assert flops_from_events(_launch("perf-stat-o-pid-hybrid-not-counted-itmo-linreg.txt")) is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("cpu_core/FP_ARITH_INST_RETIRED.256B_PACKED_DOUBLE/", "fp_arith_inst_retired.256b_packed_double"),
        ("fp_arith_inst_retired.scalar_single:u", "fp_arith_inst_retired.scalar_single"),
        ("FP_ARITH:512B_PACKED_SINGLE", "fp_arith:512b_packed_single"),
    ],
)
def test_event_spellings(name: str, expected: str) -> None:
    assert normalise_event(name) == expected


def test_prefixes_case_hybrid_sum_and_amd() -> None:
    metrics = [
        Metric("cpu_core/FP_ARITH_INST_RETIRED.256B_PACKED_DOUBLE", 10.0, "event"),
        Metric("cpu_atom/fp_arith_inst_retired.256b_packed_double", 5.0, "event"),
        Metric("FP_ARITH:512B_PACKED_SINGLE", 2.0, "event"),
        Metric("fp_arith_inst_retired.scalar_double", "<not counted>", "event"),
        Metric("fp_arith_inst_retired.scalar_double:running", 0.0, "%"),
    ]
    assert flops_by_dtype(metrics) == {"float64": 4 * 15.0, "float32": 16 * 2.0}
    total, basis = flops_from_events([Metric("fp_ret_sse_avx_ops.all", 1234.0, "event")])
    assert total == 1234.0 and "AMD" in basis
