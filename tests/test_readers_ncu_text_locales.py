"""ncu text details pages as people paste them (issue 28, item 7): a Spanish locale's page ('.' groups,
',' decimal), a page whose digit groups are blanks with a decimal comma, and the older layout that
names a launch by its start time and prints no column header; DRAM bandwidth from nvprof's read and
write throughputs when only those are given. Real files (profiler-outputs/SOURCES.md)."""

from __future__ import annotations

import pytest
from fixture_paths import FIXTURES

import gpuprof
from gpuprof import readers
from gpuprof.readers import ncu_text

ES = FIXTURES / "ncu_text_details_es_ES_decimal_comma_dot_groups_transpose_gtx_EXCERPT.log"
BLANKS = FIXTURES / "ncu_text_details_space_groups_decimal_comma_ax_kernel_2020_EXCERPT.log"
DATED = FIXTURES / "ncu_text_details_2022_dated_launch_line_no_header_transpose_task1b.profile"
GTX1070 = FIXTURES / "nvprof_text_metrics_gtx1070_dram_units.txt"


def test_spanish_locale_page_reads_dot_groups_and_decimal_commas() -> None:
    assert readers.detect(ES) is ncu_text
    run = readers.read(ES)
    (launch,) = run.launches
    assert launch.kernel == "transpose_device(float *, float *, int, int)"
    assert launch.value("Elapsed Cycles") == 13_490_336  # 13.490.336
    assert launch.value("SM Active Cycles") == pytest.approx(9_420_231.80)  # 9.420.231,80
    assert launch.value("Duration") == pytest.approx(9.97e-3)  # msecond 9,97
    assert launch.value("SM Frequency") == pytest.approx(1.35e9)  # cycle/nsecond 1,35
    assert launch.value("DRAM Throughput") == pytest.approx(19.27)
    assert launch.attributes["started"] == "2023-Mar-17 14:00:06" and launch.attributes["process"] == "transpose"
    assert "numbers use ',' as decimal mark (ncu follows the locale)" in run.notes


def test_blank_digit_groups_with_a_decimal_comma() -> None:
    assert readers.detect(BLANKS) is ncu_text
    (launch,) = readers.read(BLANKS).launches
    assert launch.kernel == "ax_kernel"
    assert launch.value("Elapsed Cycles") == 13_181_137  # 13 181 137
    assert launch.value("SM Active Cycles") == pytest.approx(12_837_852.30)  # 12 837 852,30
    assert launch.value("Memory Frequency") == pytest.approx(875.84e6)  # cycle/usecond 875,84
    assert launch.value("Duration") == pytest.approx(10.55e-3)


def test_older_page_with_a_dated_launch_line_and_no_header() -> None:
    assert readers.detect(DATED) is ncu_text  # was taken for an ncu CSV log and refused
    (launch,) = readers.read(DATED).launches
    assert launch.kernel == "naive_cuda_transpose(int, const double *, double *)"
    assert launch.value("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum") == 16_777_216
    assert launch.value("smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct") == 25


def test_dram_bandwidth_from_read_plus_write_throughput() -> None:
    # nvprof gave dram_read_throughput and dram_write_throughput only (Avg 864.98MB/s + 0.00000B/s)
    table = gpuprof.kernels(GTX1070).set_index("kernel")
    row = table.loc["update_weights(float*, float*, float)"]
    assert row["DRAM bandwidth (byte/s)"] == pytest.approx(
        row["dram_read_throughput (byte/second)"] + row["dram_write_throughput (byte/second)"]
    )
    assert row["DRAM bandwidth (byte/s)"] == pytest.approx(864.98 * 2**20)  # nvprof's MB is 2**20 bytes
