"""nvprof --print-api-trace: a real text trace pasted in a CUDA tutorial and a CSV written from the
format nvprof prints (SOURCES.md). Calls are launches of kind api, never kernels."""

from __future__ import annotations

import pytest
from fixture_paths import API_TRACE_NVPROF_CSV, API_TRACE_NVPROF_TEXT

from gpuprof import readers
from gpuprof.derive.kernel_table import kernel_table
from gpuprof.readers import nvprof_api_trace


def test_text_api_trace_one_api_launch_per_call() -> None:
    assert readers.detect(API_TRACE_NVPROF_TEXT) is nvprof_api_trace
    run = readers.read(API_TRACE_NVPROF_TEXT)
    assert len(run.launches) == 23 and {launch.attributes["kind"] for launch in run.launches} == {"api"}
    first = run.launches[0]  # 17.181ms  6.7400us  cuDeviceGetPCIBusId
    assert first.kernel == "cuDeviceGetPCIBusId" and first.attributes["start_s"] == "0.017181"
    assert first.value("API Duration") == pytest.approx(6.74e-6) and first.metric("kernel_duration") is None
    assert run.launches[1].value("API Duration") == pytest.approx(757e-9)  # '757ns'
    malloc = run.launches[13]  # 66.721ms  219.40ms  cudaMalloc
    assert malloc.kernel == "cudaMalloc" and malloc.value("API Duration") == pytest.approx(0.2194)
    # 286.21ms  40.939us  cudaLaunchKernel (vector_add(float*, \n   float*, float*, int) [112])
    launch = next(launch for launch in run.launches if launch.kernel == "cudaLaunchKernel")
    assert launch.attributes["launched"] == "vector_add(float*, float*, float*, int)"
    assert launch.attributes["correlation_id"] == "112"
    assert run.notes[-1] == "skipped 2 lines inside the API trace that are not rows (elided or edited output)"


def test_csv_api_trace_with_units_row_and_correlation_ids() -> None:
    assert readers.detect(API_TRACE_NVPROF_CSV) is nvprof_api_trace
    run = readers.read(API_TRACE_NVPROF_CSV)
    assert [launch.kernel for launch in run.launches] == [
        "cuDeviceGetPCIBusId",
        "cuDeviceGetCount",
        "cudaMalloc",
        "cudaMemcpy",
        "cudaLaunchKernel",
        "cudaMemcpy",
        "cudaFree",
    ]
    assert [launch.attributes["correlation_id"] for launch in run.launches] == [
        "1",
        "2",
        "108",
        "111",
        "112",
        "113",
        "114",
    ]
    assert run.launches[2].value("API Duration") == pytest.approx(219400.117e-6)  # us units row
    assert run.launches[1].attributes["start_s"] == "0.035863518"
    assert run.environment["command"] == "./vector-add"


def test_api_calls_are_never_kernel_rows() -> None:
    run = readers.read(API_TRACE_NVPROF_TEXT)
    assert all(launch.metric("kernel_duration") is None for launch in run.launches)
    table = kernel_table([run])  # a file of API calls only: its calls, without a kernel time column
    assert "time/launch (s)" not in table.columns
    assert table.set_index("kernel").loc["cudaMalloc", "launches"] == 3
