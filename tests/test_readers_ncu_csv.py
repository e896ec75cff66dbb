"""Nsight Compute details CSV (ncu --csv): the three header layouts, tool messages, errors and
damaged files. Expected values were read from the fixture files by eye (see SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_paths import A100, A100_ERRORS, B200, NO_PERMISSION, V100

from gpuprof import readers
from gpuprof.errors import FormatError, ProfilerError
from gpuprof.readers import ncu_csv
from gpuprof.readers._text import ToolLog, quick_split, tool_message


def test_a100_roofline_values_in_base_units() -> None:
    run = readers.read(A100)
    assert run.format == "ncu-csv"
    assert [launch.index for launch in run.launches] == [0, 1, 2]
    assert all(len(launch.metrics) == 15 for launch in run.launches)
    first, last = run.launches[0], run.launches[2]
    assert first.metric("dram__bytes.sum").value == 5_323_503_232.00
    assert first.metric("dram__bytes.sum").unit == "byte"
    assert first.metric("dram__bytes.sum").canonical == "dram_bytes"
    assert first.metric("l1tex__t_bytes.sum").value == 16_840_298_332_000.00
    clock = last.metric("smsp__cycles_elapsed.avg.per_second")
    assert (clock.value, clock.unit, clock.canonical) == (764_999_999.31, "hertz", "sm_clock")
    assert last.value("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum") == 34_359_738_368_000.00
    assert last.value("smsp__sass_thread_inst_executed_op_hfma_pred_on.sum") == 2_149_161_369_600.00
    assert last.metric("smsp__cycles_elapsed.avg").unit == "cycle"
    assert all(m.origin == "measured" for launch in run.launches for m in launch.metrics)


def test_template_kernel_names_with_commas_stay_whole() -> None:
    kernels = [launch.kernel for launch in readers.read(A100).launches]
    assert kernels == [
        "void randomInit<float>(T1 *, int, int, unsigned int)",
        "void randomInit<float>(T1 *, int, int, unsigned int)",
        "void gemm_v1<float>(float *, float *, float *, int, int, int)",
    ]


def test_per_launch_columns_become_attributes() -> None:
    run = readers.read(A100)
    attributes = run.launches[2].attributes
    assert attributes["block"] == "(32, 32, 1)"
    assert attributes["grid"] == "(1280, 1280, 1)"
    assert (attributes["device"], attributes["cc"], attributes["pid"]) == ("0", "8.0", "1961118")
    assert (attributes["process"], attributes["context"], attributes["stream"]) == ("profile", "1", "7")
    assert attributes["sections"] == "Command line profiler metrics"
    assert run.launches[0].attributes["grid"] == "(640, 1280, 1)"
    assert run.device == {"index": "0", "cc": "8.0"}


def test_failed_profile_lines_become_notes_and_the_data_is_kept() -> None:
    run = readers.read(A100_ERRORS)
    assert len(run.launches) == 3
    assert run.launches[1].value("dram__bytes.sum") == 5_552_444_672.00
    assert any('Failed to profile "gemm_shared_tile"' in note for note in run.notes)
    assert any("outstanding GPU clock reset" in note for note in run.notes)


def test_v100_kernel_time_layout() -> None:
    run = readers.read(V100)
    assert len(run.launches) == 100
    assert all(len(launch.metrics) == 52 for launch in run.launches)
    first = run.launches[0]
    assert first.kernel == "cuda_compute_step_factor"
    assert first.attributes["time"] == "2020-Apr-09 15:38:19"
    assert first.value("kernel_duration") == pytest.approx(10720e-9, rel=1e-12)
    assert first.metric("SM Frequency").value == 1_091_433_457.71
    assert first.metric("SM Frequency").unit == "hertz"
    assert first.value("elapsed_cycles") == 11734
    assert first.metric("Warp Cycles Per Issued Instruction").unit == ""
    launch = run.launches[57]
    assert (launch.index, launch.kernel) == (57, "cuda_compute_flux")
    assert launch.value("kernel_duration") == pytest.approx(39104e-9, rel=1e-12)
    assert launch.metric("Memory Throughput").value == 302_869_885_433.72
    assert launch.metric("Memory Throughput").unit == "byte/second"
    assert launch.value("achieved_occupancy") == 37.89
    assert "Warp State Statistics" in launch.attributes["sections"]


def test_b200_layout_with_rule_rows() -> None:
    run = readers.read(B200)
    assert len(run.launches) == 1
    launch = run.launches[0]
    assert len(launch.metrics) == 50
    assert launch.kernel.startswith("cutlass3x_sm100_tensorop_s64x256x32gemm_f8_f8_f32_f16_f16")
    assert launch.value("kernel_duration") == 0.00040624
    assert launch.metric("DRAM Frequency").value == 3_995_313_115.40
    assert launch.metric("DRAM Frequency").unit == "hertz"
    assert launch.metric("Cluster Scheduling Policy").value == "PolicySpread"
    assert launch.metric("Function Cache Configuration").value == "CachePreferNone"
    assert launch.metric("Enabled TPC IDs").value == "all"
    assert (launch.metric("# SMs").value, launch.metric("# SMs").unit) == (152, "SM")
    assert launch.metric("Dynamic Shared Memory Per Block").unit == "byte/block"
    rules = launch.attributes["rules"].splitlines()
    assert len(rules) == 8
    assert rules[0].startswith("SOLBottleneck [OPT]: This workload exhibits low compute throughput")
    assert rules[3].endswith("(estimated speedup local 81.25%)")
    assert "SpeedOfLight" not in launch.attributes["sections"]  # rule ids are not sections
    assert run.device == {"index": "0", "cc": "10.0"}


def test_counter_permission_error_is_one_line_with_the_fix() -> None:
    with pytest.raises(ProfilerError) as caught:
        readers.read(NO_PERMISSION)
    message = str(caught.value)
    assert "\n" not in message
    assert "ERR_NVGPUCTRPERM" in message
    assert "does not have permission to access NVIDIA GPU Performance Counters" in message
    assert "root" in message and "NVreg_RestrictProfilingToAdminUsers=0" in message


def test_no_kernels_profiled_is_a_profiler_error(tmp_path: Path) -> None:
    lines = NO_PERMISSION.read_text().splitlines(keepends=True)
    path = tmp_path / "ncu.log"
    path.write_text("".join(line for line in lines if "ERR_NVGPUCTRPERM" not in line))
    with pytest.raises(ProfilerError, match="No kernels were profiled.*--target-processes all"):
        readers.read(path)


def test_file_cut_mid_row_keeps_complete_rows(tmp_path: Path) -> None:
    text = A100.read_text()
    cut = text.index("5,145,083,088.72") + len("5,145,0")  # inside launch 0's 4th value
    path = tmp_path / "cut.csv"
    path.write_text(text[:cut])
    run = ncu_csv.read(path)
    assert len(run.launches) == 1
    assert [m.name for m in run.launches[0].metrics] == ["dram__bytes.sum", "l1tex__t_bytes.sum", "lts__t_bytes.sum"]
    assert any("truncated" in note for note in run.notes)


def test_file_cut_inside_the_first_row_is_a_format_error(tmp_path: Path) -> None:
    text = A100.read_text()
    path = tmp_path / "cut.csv"
    path.write_text(text[: text.index("randomInit")])
    with pytest.raises(FormatError, match="no complete metric rows"):
        ncu_csv.read(path)


def test_windows_line_ends_and_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "windows.csv"
    path.write_bytes(b"\xef\xbb\xbf" + A100.read_bytes().replace(b"\n", b"\r\n"))
    run = readers.read(path)
    assert len(run.launches) == 3
    assert run.launches[2].value("dram__bytes.sum") == 807_658_682_624.00
    assert run.launches[2].attributes["cc"] == "8.0"


def test_quoted_quotes_commas_and_line_breaks_in_fields(tmp_path: Path) -> None:
    """Rows the fast line split cannot take go through the csv module and still come out right."""
    text = A100.read_text()
    odd_name = 'void f<"x", 2>(int,\nchar)'
    quoted = '"' + odd_name.replace('"', '""') + '"'
    text = text.replace('"void gemm_v1<float>(float *, float *, float *, int, int, int)"', quoted)
    text = text.replace(
        '"l1tex__t_bytes.sum","byte","16,840,298,332,000.00"',
        '"l1tex__t_bytes.sum","byte","a ""quoted"" ,"","" word"',
        1,
    )
    path = tmp_path / "odd.csv"
    path.write_text(text)
    run = ncu_csv.read(path)
    assert len(run.launches) == 3
    assert run.launches[2].kernel == odd_name
    assert len(run.launches[2].metrics) == 15
    assert run.launches[2].value("dram__bytes.sum") == 807_658_682_624.00
    assert run.launches[0].value("l1tex__t_bytes.sum") == 'a "quoted" ,"," word'
    assert run.launches[0].value("lts__t_bytes.sum") == 693_482_995_584.00


def test_tool_message_lines_of_both_profilers() -> None:
    ncu = tool_message('==ERROR== Failed to profile "gemm_shared_tile" in process 3301344\n')
    assert (ncu.level, ncu.tag, ncu.text) == (
        "error",
        "ERROR",
        'Failed to profile "gemm_shared_tile" in process 3301344',
    )
    nvprof = tool_message("==21206== Warning: Some kernel(s) will be replayed on device 0\n")
    assert (nvprof.level, nvprof.tag) == ("warning", "21206")
    assert tool_message("======== Error: application not found\n").level == "error"
    assert tool_message('"ID","Process ID"\n') is None
    log = ToolLog("ncu")
    assert log.add("==PROF== Disconnected from process 1\n") and log.notes() == [] and log.failure() is None


def test_quick_split_only_takes_plainly_quoted_rows() -> None:
    assert quick_split('"0","a, b","c",\n', (3,)) == ["0", "a, b", "c"]
    assert quick_split('"0","a ""b""","c"\n', (3,)) is None
    assert quick_split('"0","a","b","c"\n', (3,)) is None
    assert quick_split("0,a,c\n", (3,)) is None
