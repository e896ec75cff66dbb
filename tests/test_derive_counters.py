"""Derived values from measured counters. Expected numbers are computed here by hand from values
read in the fixture files (A100 roofline CSV, RTX 3080 report, A100 text summary)."""

from __future__ import annotations

import pytest
from extras import NCU_REPORT
from fixture_paths import FIXTURES

from gpuprof import readers
from gpuprof.derive import counters
from gpuprof.model import Launch, Metric


@pytest.fixture(scope="module")
def gemm() -> Launch:
    """A100 roofline CSV, ID 2: void gemm_v1<float>(...)."""
    return readers.read(FIXTURES / "ncu_csv_details_a100_roofline_printfp.csv").launches[2]


def test_a100_csv_flops_time_and_bandwidth(gemm: Launch) -> None:
    ffma, hfma = 34_359_738_368_000.00, 2_149_161_369_600.00  # fadd/fmul rows are 0.00
    seconds = 25_610_472_227.46 / 764_999_999.31  # smsp__cycles_elapsed.avg / .per_second
    assert counters.flops(gemm, "sp") == (2 * ffma, "FLOP")
    assert counters.flops(gemm, "hp") == (2 * hfma, "FLOP")
    assert counters.flops(gemm, "dp") == (0.0, "FLOP")
    assert counters.kernel_time(gemm) == (pytest.approx(seconds), "second")
    assert counters.sm_clock(gemm) == (764_999_999.31, "hertz")
    assert counters.flop_rate(gemm, "sp") == (pytest.approx(2 * ffma / seconds), "FLOP/second")
    assert counters.dram_bytes(gemm) == (807_658_682_624.00, "byte")
    assert counters.dram_bandwidth(gemm) == (pytest.approx(807_658_682_624.00 / seconds), "byte/second")
    # this roofline set has no *.peak_sustained metrics: no peak, no efficiency
    assert counters.peak_flop_rate(gemm) is None
    assert counters.flop_efficiency(gemm) is None


@NCU_REPORT
def test_rtx3080_report_rate_peak_and_efficiency() -> None:
    compute = readers.read(FIXTURES / "ncu_report_binary_2020_win_montecarlo_pi.ncu-rep").launches[1]
    clock = 1_440_009_489.8989975  # smsp__cycles_elapsed.avg.per_second (hz)
    per_cycle = 2.7422722747134807 + 3.6563630329513073 + 2 * 0.0  # fadd + fmul + 2 ffma, per cycle
    seconds = 7_597_056e-9  # gpu__time_duration.sum
    rate = per_cycle * clock
    peak = 8704.0 * clock * 2  # sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained
    assert counters.sm_clock(compute) == (clock, "hertz")
    assert counters.kernel_time(compute) == (pytest.approx(seconds), "second")
    assert counters.flop_rate(compute) == (pytest.approx(rate), "FLOP/second")
    assert counters.flops(compute) == (pytest.approx(rate * seconds), "FLOP")
    assert counters.peak_flop_rate(compute) == (pytest.approx(peak), "FLOP/second")
    assert counters.flop_efficiency(compute) == (pytest.approx(100 * rate / peak), "%")
    assert counters.dram_bytes(compute) == (7_975_040.0 + 44_477_952.0, "byte")
    assert counters.dram_bandwidth(compute) == (6_904_384_014.018063, "byte/second")
    assert counters.peak_flop_rate(compute, "dp") == (pytest.approx(136.0 * clock * 2), "FLOP/second")


def test_a100_text_summary_rate_against_peak() -> None:
    tracer = readers.read(FIXTURES / "ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log").launches[0]
    clock = 1.096418e9  # 1.096418 cycle/nsecond
    rate = (357.983118 + 137.654084 + 2 * 307.963118) * clock
    peak = 6912.0 * clock * 2
    assert counters.flop_rate(tracer) == (pytest.approx(rate), "FLOP/second")
    assert counters.peak_flop_rate(tracer) == (pytest.approx(peak), "FLOP/second")
    assert counters.flop_efficiency(tracer) == (pytest.approx(100 * rate / peak), "%")
    assert counters.kernel_time(tracer) is None  # the excerpt has neither duration nor cycles
    assert counters.flops(tracer) is None


def test_nvprof_style_direct_counts() -> None:
    launch = Launch(
        kernel="k",
        index=0,
        metrics=[
            Metric("flop_count_sp", 25_264_160_800.0, "FLOP", "flop_count_sp"),
            Metric("Duration", 0.5, "second", "kernel_duration"),
            Metric("dram_read_bytes", 3.0e9, "byte", "dram_read_bytes"),
            Metric("dram_write_bytes", 1.0e9, "byte", "dram_write_bytes"),
        ],
    )
    assert counters.flops(launch) == (25_264_160_800.0, "FLOP")
    assert counters.flop_rate(launch) == (25_264_160_800.0 / 0.5, "FLOP/second")
    assert counters.dram_bandwidth(launch) == (4.0e9 / 0.5, "byte/second")


def test_missing_inputs_give_none_and_bad_precision_raises() -> None:
    empty = Launch(kernel="k", index=0)
    for derive in (
        counters.kernel_time,
        counters.sm_clock,
        counters.flops,
        counters.flop_rate,
        counters.dram_bytes,
        counters.dram_bandwidth,
        counters.peak_flop_rate,
        counters.flop_efficiency,
    ):
        assert derive(empty) is None
    with pytest.raises(ValueError, match="precision"):
        counters.flops(empty, "fp8")
