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


GPU_AND_API_TEXT = API_TRACE_NVPROF_TEXT.parent / "nvprof_text_gpu_and_api_trace_written_from_docs.txt"


def test_a_file_with_gpu_and_api_traces_keeps_both_never_mixed() -> None:
    # --print-gpu-trace --print-api-trace: the GPU table, then the API table (written from nvprof's layout)
    assert readers.detect(GPU_AND_API_TEXT).NAME == "nvprof-text-trace"
    run = readers.read(GPU_AND_API_TEXT)
    kinds = [launch.attributes["kind"] for launch in run.launches]
    assert kinds == ["memcpy", "memcpy", "kernel", "memcpy"] + ["api"] * 8
    assert [launch.index for launch in run.launches] == list(range(12))
    call = run.launches[9]  # 286.21ms  40.939us  cudaLaunchKernel (vector_add(...) [112])
    assert call.kernel == "cudaLaunchKernel" and call.value("API Duration") == pytest.approx(40.939e-6)
    assert call.attributes["correlation_id"] == run.launches[2].attributes["correlation_id"] == "112"
    assert "8 CUDA API calls imported as launches of kind 'api'" in run.notes[-1]
    assert set(kernel_table([run])["kernel"]) == {
        "[CUDA memcpy HtoD]",
        "vector_add(float*, float*, float*, int)",
        "[CUDA memcpy DtoH]",
    }
    assert len(run.launch_table) == 12  # the run's own tables hold the calls, so a store keeps them


def test_a_stored_gpu_and_api_trace_keeps_its_api_calls(tmp_path) -> None:
    from click.testing import CliRunner

    from gpuprof.cli import main
    from gpuprof.store import open_store

    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(main, ["import", "--store", str(store), str(GPU_AND_API_TEXT)])
    assert result.exit_code == 0, result.output
    assert "12 launches" in result.output
    with open_store(store) as reopened:
        (stored,) = reopened.runs()
    assert [launch.attributes["kind"] for launch in stored.launches].count("api") == 8


def test_a_csv_gpu_trace_followed_by_an_api_trace_adds_the_calls(tmp_path) -> None:
    from fixture_paths import TRACE

    both = tmp_path / "both.csv"  # the real Titan Xp GPU trace, a blank line, the API trace table
    api = API_TRACE_NVPROF_CSV.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(api) if line.startswith('"Start"'))
    both.write_text(TRACE.read_text().rstrip("\n") + "\n\n" + "".join(api[start:]))
    alone = readers.read(TRACE)
    run = readers.read(both)
    assert run.format == "nvprof-csv-trace"
    gpu = [launch for launch in run.launches if launch.attributes["kind"] != "api"]
    assert len(gpu) == len(alone.launches)
    calls = [launch for launch in run.launches if launch.attributes["kind"] == "api"]
    assert calls and len(calls) == len(readers.read(API_TRACE_NVPROF_CSV).launches)
