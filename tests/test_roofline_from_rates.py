"""Issue 28 item 13: a file of Nsight Compute's roofline-section rates (FLOP per cycle, DRAM byte/s,
no FLOP or byte count and no kernel time) gets its intensity and binding ceiling from those rates,
by the section's own formulas: FLOP/s = (fadd + fmul + 2 ffma).per_cycle_elapsed x SM clock,
AI = FLOP/s / dram__bytes.sum.per_second. The file: the A100 text excerpt (SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_paths import FIXTURES

from gpuprof.derive import counters, kernels, roofline
from gpuprof.importing import import_files, read_file

A100_TEXT = FIXTURES / "ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log"
CLOCK = 1.096418e9  # sm__cycles_elapsed.avg.per_second, 1.096418 cycle/ns
FLOP_RATE = (357.983118 + 137.654084 + 2 * 307.963118) * CLOCK  # the FP32 per-cycle rates, FP64's are 0
BYTE_RATE = 55.382875e3  # dram__bytes.sum.per_second, 55.382875 Kbyte/s
FILE_PEAK = 2 * 6912 * CLOCK  # sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained x 2 x clock


@pytest.fixture(scope="module")
def named(tmp_path_factory: pytest.TempPathFactory):
    store = tmp_path_factory.mktemp("rates") / "s.db"
    (run,) = import_files([A100_TEXT], store, gpu="a100-sxm4-40gb")
    return run


def test_intensity_from_rates_per_launch() -> None:
    frame = counters.frame(read_file(A100_TEXT))
    assert frame["time"].isna().all() and frame["flops_total"].isna().all()
    assert frame["flop_rate_total"].iloc[0] == pytest.approx(FLOP_RATE, rel=1e-9)
    assert frame["ai_dram"].iloc[0] == pytest.approx(FLOP_RATE / BYTE_RATE, rel=1e-9)
    assert frame["dominant"].iloc[0] == "fp32/fma"
    assert "dram__bytes.sum.per_second" in frame["basis"].iloc[0]


def test_per_precision_intensity_and_binding_per_kernel(named) -> None:
    """The kernel row: FP32's own point at the same AI; with the GPU named, the FP32 roof at the SM
    clock measured binds (AI 2.2e7 FLOP/byte is far right of the ridge): the file's own peak."""
    row = kernels.kernel_frame([named]).iloc[0]
    assert row["ai_dram_fp32"] == pytest.approx(FLOP_RATE / BYTE_RATE, rel=1e-9)
    assert row["ai_dram_fp64"] == 0
    assert row["binding_ceiling"] == pytest.approx(FILE_PEAK, rel=1e-3)
    assert row["binding_percent"] == pytest.approx(100 * FLOP_RATE / FILE_PEAK, rel=1e-3)
    assert row["binding_name"].startswith("FP32 FMA")


def test_the_roofline_places_the_fp32_point(named) -> None:
    frame, skipped = roofline.points([named])
    placed = roofline.drawable(frame)
    assert len(placed) == 1 and not skipped
    point = placed.iloc[0]
    assert point["precision"] == "fp32"
    assert point["flop_rate"] == pytest.approx(FLOP_RATE, rel=1e-9)
    assert point["ai"] == pytest.approx(FLOP_RATE / BYTE_RATE, rel=1e-9)
    assert "Nsight Compute's roofline section" in point["origin"]


def test_counted_files_keep_counts_over_rates(tmp_path: Path) -> None:
    """A file with counts and time (6b, A100 SGEMM with duration) is unchanged: no rate rule in its basis."""
    frame = counters.frame(read_file(FIXTURES / "ncu_csv_a100_nersc_roofline_metrics_with_duration_sgemm.csv"))
    assert frame["flop_rate_from_rates"].isna().all()
    assert not any("dram__bytes.sum.per_second" in basis for basis in frame["basis"])
