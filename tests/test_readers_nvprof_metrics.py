"""nvprof --metrics readers (CSV and text) on real captured outputs; expected values read by hand
from the fixture files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fixture_paths import DRAM, EVENTS_CSV, EVENTS_FLASH, EVENTS_MAXDNN, K40C, PYRUP, SRAD, TWO_RUNS

from gpuprof import readers
from gpuprof.errors import FormatError, ProfilerError
from gpuprof.readers import nvprof_csv_metrics, nvprof_text_metrics

MiB, GiB = 2.0**20, 2.0**30
FORMA = "__kernel___forma_kernel__0__(float*, int, int, int, int, int, int, float*)"


def test_csv_metrics_detected_by_content_and_read_as_one_aggregated_launch() -> None:
    assert readers.detect(K40C) is nvprof_csv_metrics
    run = readers.read(K40C)
    assert run.kind == "import" and run.format == "nvprof-csv-metrics" and run.source == str(K40C)
    assert run.device == {"name": "Tesla K40c", "index": 0}
    assert run.environment == {"tool": "nvprof", "pid": "21206", "command": "./test"}
    [launch] = run.launches
    assert launch.kernel == FORMA  # the kernel name's commas survive the CSV
    assert launch.device == "Tesla K40c" and launch.invocations == 3
    assert len(launch.metrics) == 19


def test_csv_metrics_values_min_max_and_units() -> None:
    launch = readers.read(K40C).launches[0]
    flops = launch.metric("flop_count_sp")
    assert (flops.value, flops.unit, flops.canonical) == (25264160800, "FLOP", "flop_count_sp")
    issued = launch.metric("inst_issued")
    assert (issued.minimum, issued.maximum, issued.value) == (3226322455, 3227709091, 3227173467)
    stall = launch.metric("stall_sync")
    assert (stall.value, stall.unit, stall.minimum, stall.maximum) == (28.125501, "%", 28.053379, 28.239542)
    assert launch.metric("stall_memory_dependency").value == 9.216144
    assert launch.metric("gst_efficiency").value == 99.603175
    ipc = launch.metric("issued_ipc")
    assert (ipc.value, ipc.unit) == (2.955819, "inst/cycle")
    # nvprof prints achieved_occupancy as a fraction; the catalog (like ncu) keeps percent.
    occupancy = launch.metric("achieved_occupancy")
    assert occupancy.unit == "%"
    assert occupancy.value == pytest.approx(99.7336)
    assert occupancy.minimum == pytest.approx(99.6888) and occupancy.maximum == pytest.approx(99.7881)
    assert all(m.origin == "measured" for m in launch.metrics)


def test_text_metrics_srad_six_kernels_with_invocations() -> None:
    assert readers.detect(SRAD) is nvprof_text_metrics
    run = readers.read(SRAD)
    assert run.format == "nvprof-text-metrics"
    assert run.device == {"name": "GeForce GTX 1070", "index": 0}
    assert run.environment["command"] == "./srad.out 100 0.5 502 458"
    assert [(launch.kernel.split("(")[0], launch.invocations) for launch in run.launches] == [
        ("compress", 1),
        ("reduce", 200),
        ("srad2", 100),
        ("extract", 1),
        ("prepare", 100),
        ("srad", 100),
    ]
    assert run.launches[2].kernel == (
        "srad2(float, int, int, long, int*, int*, int*, int*, float*, float*, float*, float*, float*, float*)"
    )
    assert all(len(launch.metrics) == 7 for launch in run.launches)


def test_text_metrics_units_inside_cells_are_binary_byte_rates() -> None:
    reduce = readers.read(SRAD).launches[1]
    dram = reduce.metric("dram_read_throughput")
    assert dram.unit == "byte/second" and dram.canonical == "dram_read_throughput"
    assert dram.minimum == pytest.approx(897.04 * MiB)  # "897.04MB/s"
    assert dram.maximum == pytest.approx(56.421 * GiB)  # "56.421GB/s"
    assert dram.value == pytest.approx(23.557 * GiB)  # "23.557GB/s"
    gld = reduce.metric("gld_efficiency")
    assert (gld.value, gld.minimum, gld.maximum, gld.unit) == (56.23, 12.5, 99.96, "%")
    branch = readers.read(SRAD).launches[5].metric("branch_efficiency")
    assert (branch.minimum, branch.maximum, branch.value) == (99.72, 100.0, 99.99)


def test_text_metrics_mb_b_and_gb_in_one_column() -> None:
    run = readers.read(DRAM)
    update, dot, reduce = run.launches
    assert update.kernel == "update_weights(float*, float*, float)"
    read = update.metric("dram_read_throughput")
    assert read.minimum == pytest.approx(865.08 * MiB) and read.value == pytest.approx(864.98 * MiB)
    write = update.metric("dram_write_throughput")
    assert (write.value, write.unit) == (0.0, "byte/second")  # "0.00000B/s"
    assert dot.metric("dram_read_throughput").value == pytest.approx(153.54 * MiB)
    assert reduce.kernel.startswith("void better_reduce_kernel<unsigned int=256>(")
    assert reduce.invocations == 100
    bounds = reduce.metric("dram_read_throughput")
    assert (bounds.minimum, bounds.maximum) == (0.0, pytest.approx(1.5910 * GiB))
    assert bounds.value == pytest.approx(634.19 * MiB)


def test_text_metrics_template_kernel_name_with_commas() -> None:
    [launch] = readers.read(PYRUP).launches
    assert launch.kernel == (
        "void cv::cuda::device::imgproc::pyrUp<unsigned char>(cv::cuda::PtrStepSz<unsigned char>, unsigned char)"
    )
    assert launch.metric("shared_efficiency").value == 74.40
    assert launch.metric("achieved_occupancy").value == pytest.approx(90.3492)
    assert launch.metric("dram_read_throughput").value == pytest.approx(565.53 * MiB)


def test_text_metrics_two_runs_of_one_kernel_stay_two_launches() -> None:
    # Two 'nvprof --metrics' tables of two runs pasted one after the other, both for madd on a Tesla K80.
    run = readers.read(TWO_RUNS)
    assert run.device == {"name": "Tesla K80", "index": 0}
    first, second = run.launches
    assert first.kernel == second.kernel == "madd(int, float, float*, float*)"
    assert (first.index, second.index, first.invocations, second.invocations) == (0, 1, 6, 6)
    assert len(first.metrics) == len(second.metrics) == 9
    #  6  achieved_occupancy  Achieved Occupancy  0.015616  0.015625  0.015623  (a fraction; stored in %)
    occupancy = first.metric("achieved_occupancy")
    assert (occupancy.value, occupancy.minimum, occupancy.maximum) == pytest.approx((1.5623, 1.5616, 1.5625))
    #  6  achieved_occupancy  Achieved Occupancy  0.090628  0.764906  0.638949
    assert second.value("achieved_occupancy") == pytest.approx(63.8949)
    #  6  gst_throughput  Global Store Throughput  18.015MB/s  77.082MB/s  76.855MB/s
    #  (second run)                               5.4652MB/s  27.895GB/s  24.375GB/s
    assert first.value("gst_throughput") == pytest.approx(76.855 * MiB)
    assert second.metric("gst_throughput").maximum == pytest.approx(27.895 * GiB)
    assert second.value("gld_efficiency") == 91.67  # 50.00%  100.00%  91.67%


def test_truncated_csv_drops_the_cut_row_and_says_so(tmp_path: Path) -> None:
    text = K40C.read_text()
    cut = text.index('"stall_sync"')  # in the middle of the 9th metric row
    path = tmp_path / "cut.csv"
    path.write_text(text[:cut])
    run = readers.read(path)
    assert [m.name for m in run.launches[0].metrics][-1] == "achieved_occupancy"
    assert len(run.launches[0].metrics) == 8
    assert any("truncated" in note for note in run.notes)


def test_truncated_before_the_table_is_a_format_error(tmp_path: Path) -> None:
    text = K40C.read_text()
    path = tmp_path / "cut.csv"
    path.write_text(text[: text.index('"Device"') + 40])  # inside the header line
    with pytest.raises(FormatError, match="no metric rows"):
        nvprof_csv_metrics.read(path)


def test_truncated_text_table(tmp_path: Path) -> None:
    text = SRAD.read_text()
    path = tmp_path / "cut.txt"
    path.write_text(text[: text.index("Kernel: srad2") + 300])  # mid-row of srad2's metrics
    run = readers.read(path)
    assert [launch.kernel.split("(")[0] for launch in run.launches] == ["compress", "reduce", "srad2"]
    assert any("truncated" in note for note in run.notes)


def test_nvprof_no_data_message_becomes_a_profiler_error(tmp_path: Path) -> None:
    # What nvprof prints (and nothing else) when the application launched no kernel.
    path = tmp_path / "nodata.txt"
    path.write_text(
        "==4242== NVPROF is profiling process 4242, command: ./app\n"
        "==4242== Profiling application: ./app\n"
        "==4242== Profiling result:\n"
        "==4242== Metric result:\n"
        '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"\n'
        "======== Warning: No profile data collected.\n"
    )
    with pytest.raises(ProfilerError, match="No profile data collected") as error:
        readers.read(path)
    assert "cudaDeviceReset" in str(error.value)


def test_explicit_reader_on_a_renamed_file(tmp_path: Path) -> None:
    path = tmp_path / "metrics.log"
    shutil.copy(SRAD, path)
    assert readers.read(path, "nvprof-text-metrics").launches[0].kernel == "compress(long, float*)"
    with pytest.raises(FormatError, match="no metric table"):
        readers.read(K40C, "nvprof-text-metrics")


def test_csv_events_alone_with_their_total() -> None:
    assert readers.detect(EVENTS_CSV) is nvprof_csv_metrics
    run = readers.read(EVENTS_CSV)
    assert run.device == {"name": "Tesla V100S-PCIE-32GB", "index": 0}
    [launch] = run.launches
    # "Tesla V100S-PCIE-32GB (0)","transposeNaive(float*, float*, int, int)",101,"thread_inst_executed",
    # 16777216,16777216,16777216,1694498816
    assert launch.kernel == "transposeNaive(float*, float*, int, int)" and launch.invocations == 101
    executed = launch.metric("thread_inst_executed")
    assert (executed.value, executed.minimum, executed.maximum) == (16777216, 16777216, 16777216)
    assert launch.value("thread_inst_executed (total)") == 1694498816 == 101 * 16777216


def test_csv_events_then_metrics_in_one_file(tmp_path: Path) -> None:
    # Written from the layout nvprof prints for '--csv --events ... --metrics ...' (an Event result
    # table, then a Metric result table), with the rows of two real files of the same run
    # (Giotyp/GPU-Roofline-Python example/: events_transpose.csv and metrics_transpose.csv).
    path = tmp_path / "both.csv"
    path.write_text(
        "==1234== Profiling result:\n==1234== Event result:\n" + EVENTS_CSV.read_text() + "\n==1234== Metric result:\n"
        '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"\n'
        '"Tesla V100S-PCIE-32GB (0)","transposeNaive(float*, float*, int, int)",101,"gld_transactions",'
        '"Global Load Transactions",131072,131072,131072\n'
    )
    [launch] = readers.read(path).launches
    assert [m.name for m in launch.metrics] == [
        "thread_inst_executed",
        "thread_inst_executed (total)",
        "gld_transactions",
    ]
    assert launch.value("gld_transactions") == 131072 and launch.invocations == 101


def test_text_events_and_metrics_of_one_run(tmp_path: Path) -> None:
    assert readers.detect(EVENTS_MAXDNN) is nvprof_text_metrics
    run = readers.read(EVENTS_MAXDNN)  # a README: the output sits between prose and code fences
    assert run.device == {"name": "GeForce GTX 980", "index": 0}
    assert run.environment["command"] == "./maxdnn_test.bin convolve_maxdnn_alexnet_conv1"
    [launch] = run.launches
    assert launch.kernel == "multiconvolution_64" and launch.invocations == 10
    # events (nvprof of CUDA 6.5 prints no Total):  10  elapsed_cycles_sm  75288048  75580076  75451292
    cycles = launch.metric("elapsed_cycles_sm")
    assert (cycles.value, cycles.minimum, cycles.maximum) == (75451292, 75288048, 75580076)
    assert launch.metric("elapsed_cycles_sm (total)") is None
    #  10  inst_fp_32  FP Instructions(Single)  9144115200  9144115200  9144115200
    assert launch.value("inst_fp_32") == 9144115200
    efficiency = launch.metric("flop_sp_efficiency")  # 94.39%  94.76%  94.55%
    assert (efficiency.value, efficiency.minimum, efficiency.maximum, efficiency.unit) == (94.55, 94.39, 94.76, "%")
    assert len(launch.metrics) == 10  # one event and nine metrics


def test_text_metrics_then_events_with_total_and_exponents() -> None:
    run = readers.read(EVENTS_FLASH)
    [launch] = run.launches
    assert launch.kernel.startswith("flash_attention_kernel(float4 const *,") and launch.invocations == 1
    #  1  shared_load_throughput  Shared Memory Load Throughput  4006.6GB/s  4006.6GB/s  4006.6GB/s
    assert launch.value("shared_load_throughput") == pytest.approx(4006.6 * GiB)
    #  1  shared_ld_bank_conflict  6.7512e+10  6.7512e+10  6.7512e+10  6.7512e+10
    assert launch.value("shared_ld_bank_conflict") == 6.7512e10
    assert launch.value("shared_st_bank_conflict (total)") == 8321499136


def test_text_event_row_that_does_not_fit(tmp_path: Path) -> None:
    path = tmp_path / "edited.md"
    path.write_text(EVENTS_FLASH.read_text().replace("  8321499136  8321499136  8321499136", ""))
    with pytest.raises(FormatError, match="line '1 +shared_st_bank_conflict  8321499136' does not fit"):
        readers.read(path)
