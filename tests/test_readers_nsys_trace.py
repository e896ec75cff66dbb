"""Nsight Systems trace reports (cuda_gpu_trace, cuda_api_trace), nvtx_sum and the cut-names rule
of the summaries. Real console output pasted in READMEs (RTX 3060, three A100 sessions), nsys
2023.2's cuda_api_trace CSV, and two files written from the documented CSV layout (SOURCES.md)."""

from __future__ import annotations

import pytest
from fixture_paths import API_TRACE_CSV, GPU_TRACE_CSV, GPU_TRACE_SESSIONS, GPU_TRACE_TEXT, KERN_SUM_CUT_NAMES

from gpuprof import readers
from gpuprof.derive.kernel_table import kernel_table
from gpuprof.readers import nsys_stats, nsys_trace


def test_gpu_trace_text_one_launch_per_row_kernels_and_copies() -> None:
    assert readers.detect(GPU_TRACE_TEXT) is nsys_trace
    run = readers.read(GPU_TRACE_TEXT)
    assert run.format == "nsys-trace" and run.device == {"name": "NVIDIA GeForce RTX 3060"}
    assert [(launch.kernel, launch.attributes["kind"]) for launch in run.launches] == [
        ("[CUDA memcpy Host-to-Device]", "memcpy"),
        ("[CUDA memcpy Host-to-Device]", "memcpy"),
        ("kernel(int *)", "kernel"),
        ("kernel2(int2 *)", "kernel"),
        ("[CUDA memcpy Device-to-Host]", "memcpy"),
        ("[CUDA memcpy Device-to-Host]", "memcpy"),
    ]
    # 291,545,786  137,633  132  1 1 1  16 1 1  32  0.000  0.000 ... 1  7  kernel2(int2 *)
    kernel2 = run.launches[3]
    assert kernel2.value("kernel_duration") == pytest.approx(137_633e-9)
    assert (
        kernel2.attributes.items()
        >= {
            "grid": "(1, 1, 1)",
            "block": "(16, 1, 1)",
            "registers": "32",
            "correlation_id": "132",
            "stream": "7",
            "context": "1",
            "static_smem_bytes": "0",
            "dynamic_smem_bytes": "0",
            "start_s": "0.291545786",
        }.items()
    )
    # 288,835,691  352  130 ... 0.000  363.636  Pageable  Device
    copy = run.launches[1]
    assert copy.value("kernel_duration") == pytest.approx(352e-9)
    assert copy.value("Throughput") == pytest.approx(363.636e6) and copy.metric("Throughput").unit == "byte/second"
    assert copy.attributes["src_mem"] == "Pageable" and copy.attributes["dst_mem"] == "Device"


def test_gpu_trace_csv_reads_the_same_values_as_the_text() -> None:
    text, csv = readers.read(GPU_TRACE_TEXT), readers.read(GPU_TRACE_CSV)
    assert readers.detect(GPU_TRACE_CSV) is nsys_trace
    assert [launch.kernel for launch in csv.launches] == [launch.kernel for launch in text.launches]
    for one, other in zip(text.launches, csv.launches):
        assert one.attributes == other.attributes
        assert [(m.name, m.value, m.unit) for m in one.metrics] == [(m.name, m.value, m.unit) for m in other.metrics]


def test_gpu_trace_several_sessions_grouped_grid_and_a_row_cut_short() -> None:
    run = readers.read(GPU_TRACE_SESSIONS)
    assert run.environment == {"tool": "nsys", "reports": ["report1", "report4", "report5"]}
    kernels = [launch for launch in run.launches if launch.attributes["kind"] == "kernel"]
    assert [launch.attributes["report"] for launch in kernels] == ["report1", "report4", "report5"]
    # 67,787,961,762  27,567,396  124  6,250,000  1  1  256  1  1  16 ...
    assert kernels[0].attributes["grid"] == "(6250000, 1, 1)" and kernels[0].attributes["registers"] == "16"
    assert kernels[0].value("kernel_duration") == pytest.approx(27_567_396e-9)
    # 12,800.000 MB copies, MB = 10**6 bytes
    assert run.launches[0].value("Size") == pytest.approx(12_800e6)
    # report5's last row stops after its CorrId (the author cut it): left out, said so
    assert len(run.launches) == 11
    assert run.notes == ["left out 1 row(s) cut short (fewer cells than the header: the file was cut there)"]
    table = kernel_table([run])
    assert list(table["session"].unique()) == ["report1", "report4", "report5"]


def test_api_trace_csv_calls_of_kind_api_never_kernel_durations() -> None:
    assert readers.detect(API_TRACE_CSV) is nsys_trace
    run = readers.read(API_TRACE_CSV)
    assert [launch.kernel for launch in run.launches] == [
        "cuModuleGetLoadingMode",
        "cudaMalloc",
        "cudaMalloc",
        "cudaMemcpy",
    ]
    assert {launch.attributes["kind"] for launch in run.launches} == {"api"}
    malloc = run.launches[1]  # 459348415,170736162,cudaMalloc,0,118,811552,811552,20,saxpy
    assert malloc.metric("kernel_duration") is None
    assert malloc.value("API Duration") == pytest.approx(170_736_162e-9)
    assert (
        malloc.attributes.items()
        >= {"correlation_id": "118", "result": "0", "pid": "811552", "tid": "811552", "thread": "saxpy"}.items()
    )
    assert run.notes == ["only CUDA API calls: host-side, imported as launches of kind 'api'"]


def test_summary_rows_whose_names_nsys_cut_alike_stay_distinct_launches() -> None:
    assert readers.detect(KERN_SUM_CUT_NAMES) is nsys_stats
    run = readers.read(KERN_SUM_CUT_NAMES)
    assert [(launch.kernel, launch.invocations) for launch in run.launches] == [
        ("VectorOperation", 15),
        ("VectorOperation", 15),
    ]
    assert [launch.value("kernel_duration") for launch in run.launches] == pytest.approx(
        [4_490_843.5e-9, 4_426_606.9e-9]
    )
    assert [launch.value("Total Time") for launch in run.launches] == pytest.approx([67_362_653e-9, 66_399_104e-9])
    assert any("nsys cut different names to the same text" in note for note in run.notes)
