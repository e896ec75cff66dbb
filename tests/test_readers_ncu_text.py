"""Nsight Compute text summary (``--print-summary per-gpu``), from the A100 raytracer excerpt.
Expected values were read from the fixture by eye."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof import readers
from gpuprof.errors import FormatError
from gpuprof.readers import ncu_text

LOG = (
    Path(__file__).parent / "fixtures" / "profiler-outputs" / "ncu_text_print_summary_per_gpu_a100_roofline_EXCERPT.log"
)


def test_sections_of_one_kernel_become_one_launch() -> None:
    run = readers.read(LOG)
    assert run.format == "ncu-text"
    assert len(run.launches) == 1
    launch = run.launches[0]
    assert launch.kernel == "PathTracer(int, Pixel *, int)"
    assert launch.invocations == 1
    assert launch.attributes["block"] == "256" and launch.attributes["grid"] == "8192"
    assert launch.attributes["process"] == "raytrace-cuda" and launch.attributes["pid"] == "1146135"
    assert launch.attributes["sections"] == (
        "Compute Workload Analysis; GPU Speed Of Light Roofline Chart; Source Counters; Warp State Statistics"
    )
    # 19 + 17 + 10 + 19 rows in the four tables present
    assert len(launch.metrics) == 65
    assert run.device == {"index": "0"}


def test_auto_scaled_units_become_base_units() -> None:
    launch = readers.read(LOG).launches[0]
    clock = launch.metric("sm__cycles_elapsed.avg.per_second")  # 1.096418 cycle/nsecond
    assert (clock.value, clock.unit, clock.canonical) == (pytest.approx(1.096418e9), "hertz", "sm_clock")
    peak = launch.metric("dram__bytes.sum.peak_sustained")  # 1.280000 Kbyte/cycle
    assert (peak.value, peak.unit) == (pytest.approx(1280.0), "byte/cycle")
    rate = launch.metric("dram__bytes.sum.per_second")  # 55.382875 Kbyte/second
    assert (rate.value, rate.unit) == (pytest.approx(55382.875), "byte/second")
    assert launch.value("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained") == 6912.0
    assert launch.value("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed") == 357.983118


def test_min_max_average_and_empty_unit_cells() -> None:
    launch = readers.read(LOG).launches[0]
    stall = launch.metric("smsp__pcsamp_warps_issue_stalled_dispatch_stall")
    assert (stall.minimum, stall.maximum, stall.value, stall.unit) == (9552.0, 9552.0, 19104.0, "warp")
    samples = launch.metric("smsp__pcsamp_sample_count")
    assert (samples.value, samples.unit) == (3669964.0, "")
    xu = launch.metric("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active")
    assert (xu.value, xu.unit) == (13.043705, "%")


def test_omitted_lines_are_noted() -> None:
    run = readers.read(LOG)
    assert run.notes == [
        "the file marks 2 place(s) where lines were left out ([...]); only the lines present were read"
    ]


def test_log_without_tables_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "no-tables.log"
    path.write_text("".join(LOG.read_text().splitlines(keepends=True)[:8]))
    with pytest.raises(FormatError, match="no Nsight Compute metric tables"):
        ncu_text.read(path)
