"""nvprof GPU trace and summary readers (CSV with a units row, and the plain text summary) on real
captured outputs; expected values read by hand from the fixture files."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_paths import (
    BABEL,
    SUMMARY,
    SUMMARY_MS,
    SUMMARY_TWO_RUNS,
    TEXT_TRACE,
    TEXT_TRACE_FENCED,
    TEXT_TRACE_U_MS,
    TEXT_TRACE_U_US,
    TEXT_TRACE_UM,
    TRACE,
)

from gpuprof import readers
from gpuprof.errors import FormatError
from gpuprof.readers import nvprof_csv_trace, nvprof_text_summary, nvprof_text_trace

MiB, GiB = 2.0**20, 2.0**30
FLUX = "cuda_compute_flux(int, int*, float*, float*, float*)"


def test_trace_launches_kinds_and_skipped_unified_memory_rows() -> None:
    assert readers.detect(TRACE) is nvprof_csv_trace
    run = readers.read(TRACE)
    assert run.format == "nvprof-csv-trace" and run.environment["nvprof_mode"] == "gpu-trace"
    assert run.device == {"name": "TITAN Xp", "index": 0}
    kinds = [launch.attributes["kind"] for launch in run.launches]
    # 52 kernel rows, 13 memcpy rows (5 HtoD, 8 DtoD), 1 memset in the first 300 lines.
    assert (kinds.count("kernel"), kinds.count("memcpy"), kinds.count("memset")) == (52, 13, 1)
    # 49 CPU page fault + 20 GPU page fault + 160 Unified Memory Memcpy HtoD rows.
    assert run.notes == ["skipped 229 Unified Memory rows (page faults and migrations, not launches)"]
    assert sum(launch.kernel == FLUX for launch in run.launches) == 21


def test_trace_kernel_row_attributes_and_duration_in_ms_column() -> None:
    run = readers.read(TRACE)
    first = next(launch for launch in run.launches if launch.attributes["kind"] == "kernel")
    # 1.801299,0.287308,506,1,1,192,1,1,16,0,0,...,"cuda_initialize_variables(int, float*)",121
    assert first.kernel == "cuda_initialize_variables(int, float*)"
    assert first.attributes["grid"] == "(506, 1, 1)" and first.attributes["block"] == "(192, 1, 1)"
    assert first.attributes["registers"] == "16" and first.attributes["correlation_id"] == "121"
    assert float(first.attributes["start_s"]) == 1.801299  # Start is in s
    duration = first.metric("kernel_duration")
    assert duration.unit == "second" and duration.value == pytest.approx(0.287308e-3)  # Duration in ms
    flux = next(launch for launch in run.launches if launch.kernel == FLUX)
    assert flux.attributes["registers"] == "58"


def test_trace_memcpy_size_and_throughput_prove_binary_prefixes() -> None:
    last = readers.read(TRACE).launches[-1]
    # 1.806130,0.010177,...,1.853027,177.812422,"Managed","Managed",...,"[CUDA memcpy DtoD]",603
    assert last.kernel == "[CUDA memcpy DtoD]" and last.attributes["kind"] == "memcpy"
    assert last.attributes["src_mem"] == "Managed" and last.attributes["correlation_id"] == "603"
    size, duration, rate = (last.value(k) for k in ("Size", "Duration", "Throughput"))
    assert size == pytest.approx(1.853027 * MiB) and rate == pytest.approx(177.812422 * GiB)
    # nvprof's own numbers agree only with binary MB and GB: size / duration == throughput.
    assert size / duration == pytest.approx(rate, rel=1e-4)


def test_summary_csv_per_column_units() -> None:
    assert readers.detect(SUMMARY) is nvprof_csv_trace
    run = readers.read(SUMMARY)
    assert run.environment["nvprof_mode"] == "gpu-summary"
    assert run.device == {"name": "TITAN Xp", "index": 0}  # from the Unified Memory table
    assert len(run.launches) == 7
    flux = run.launches[0]
    assert flux.kernel == FLUX and flux.invocations == 6000 and flux.attributes["kind"] == "kernel"
    avg = flux.metric("kernel_duration")
    assert avg.value == pytest.approx(44.725e-6)  # Avg column in us
    assert avg.minimum == pytest.approx(43.106e-6)  # Min column in us
    assert avg.maximum == pytest.approx(1.791976e-3)  # Max column in ms
    assert flux.value("Time") == pytest.approx(268.352834e-3)
    assert flux.value("Time(%)") == 68.739052
    step = run.launches[1].metric("kernel_duration")
    assert step.maximum == pytest.approx(16e-6) and step.value == pytest.approx(14.68e-6)
    assert [launch.attributes["kind"] for launch in run.launches] == [
        "kernel",
        "kernel",
        "memcpy",
        "kernel",
        "kernel",
        "memcpy",
        "memset",
    ]
    assert run.launches[-1].invocations == 1


def test_summary_without_units_row_is_refused(tmp_path: Path) -> None:
    lines = SUMMARY.read_text().splitlines(keepends=True)
    path = tmp_path / "no-units.csv"
    path.write_text("".join(line for line in lines if not line.startswith(",%,ms")))
    with pytest.raises(FormatError, match="no units row"):
        readers.read(path)


def test_text_summary_gpu_activities_only() -> None:
    assert readers.detect(BABEL) is nvprof_text_summary
    run = readers.read(BABEL)
    assert run.format == "nvprof-text-summary" and run.environment["command"] == "./cuda-stream"
    assert run.notes == ["skipped 17 API call rows (host side)"]
    assert [launch.kernel.split("<")[0] for launch in run.launches] == [
        "[CUDA memcpy DtoH]",
        "void add_kernel",
        "void triad_kernel",
        "void mul_kernel",
        "void copy_kernel",
        "void dot_kernel",
        "void init_kernel",
    ]
    dtoh = run.launches[0]
    assert dtoh.invocations == 103 and dtoh.attributes["kind"] == "memcpy"
    assert dtoh.metric("kernel_duration").minimum == pytest.approx(928e-9)  # "928ns"
    assert dtoh.metric("kernel_duration").maximum == pytest.approx(62.362e-3)  # "62.362ms"


def test_text_summary_values_with_unit_suffixes() -> None:
    add = readers.read(BABEL).launches[1]
    assert add.kernel == "void add_kernel<double>(double const *, double const *, double*)"
    assert add.invocations == 100
    duration = add.metric("kernel_duration")
    assert (duration.value, duration.minimum, duration.maximum) == pytest.approx((1.8477e-3, 1.8385e-3, 1.8520e-3))
    assert add.value("Time") == pytest.approx(184.77e-3) and add.value("Time(%)") == 19.89
    init = readers.read(BABEL).launches[-1]
    assert init.invocations == 1 and init.value("kernel_duration") == pytest.approx(1.6781e-3)


def test_text_trace_kernels_memcpys_and_correlation_ids() -> None:
    assert readers.detect(TEXT_TRACE) is nvprof_text_trace
    run = readers.read(TEXT_TRACE)
    assert run.format == "nvprof-text-trace" and run.device == {"name": "TITAN Xp", "index": 0}
    assert run.environment["command"] == "./cuda-stream"
    kinds = [launch.attributes["kind"] for launch in run.launches]
    # 501 kernel rows (100 each of copy/mul/add/triad/dot and one init) and 103 [CUDA memcpy DtoH]
    assert (kinds.count("kernel"), kinds.count("memcpy"), len(kinds)) == (501, 103, 604)
    # 326.63ms  1.6782ms  (32768 1 1)  (1024 1 1)  14  0B  0B  -  -  -  -  TITAN Xp (0)  1  7  void init_kernel<double>(...) [128]
    init = run.launches[0]
    assert init.kernel == "void init_kernel<double>(double*, double*, double*, double, double, double)"
    assert init.attributes["correlation_id"] == "128" and init.attributes["grid"] == "(32768, 1, 1)"
    assert init.attributes["block"] == "(1024, 1, 1)" and init.attributes["registers"] == "14"
    assert init.invocations == 1 and init.value("kernel_duration") == pytest.approx(1.6782e-3)
    assert float(init.attributes["start_s"]) == pytest.approx(326.63e-3)
    # 334.56ms  1.2305ms  (256 1 1)  (1024 1 1)  13  8.0000KB  0B ... void dot_kernel<double>(...) [167]
    dot = run.launches[5]
    assert dot.kernel.startswith("void dot_kernel<double>") and dot.attributes["static_smem_bytes"] == "8192"


def test_text_trace_memcpy_in_units_inside_cells_binary_prefixes() -> None:
    run = readers.read(TEXT_TRACE)
    # line 29: 358.18ms  1.0240us  ...  2.0000KB  1.8626GB/s  Device  Pageable  TITAN Xp (0)  1  7  [CUDA memcpy DtoH]
    copy = next(launch for launch in run.launches if launch.attributes.get("start_s") == str(358.18e-3))
    assert copy.kernel == "[CUDA memcpy DtoH]" and "correlation_id" not in copy.attributes
    assert (copy.attributes["src_mem"], copy.attributes["dst_mem"]) == ("Device", "Pageable")
    size, duration, rate = (copy.value(k) for k in ("Size", "Duration", "Throughput"))
    assert (size, duration) == (2048.0, pytest.approx(1.024e-6)) and rate == pytest.approx(1.8626 * GiB)
    assert size / duration == pytest.approx(rate, rel=1e-4)  # only with KB = 1024 B and GB/s = 2**30 B/s
    last = run.launches[-1]  # 1.14514s  154.63ms  ...  256.00MB  1.6168GB/s
    assert last.value("Size") == 256 * MiB and last.value("Duration") == pytest.approx(0.15463)


def test_text_trace_with_unified_memory_columns_and_app_output() -> None:
    run = readers.read(TEXT_TRACE_UM)
    assert readers.detect(TEXT_TRACE_UM) is nvprof_text_trace
    assert run.device == {"name": "Tesla V100-SXM2"}  # nvprof cuts the Device column at 15 characters
    kinds = [launch.attributes["kind"] for launch in run.launches]
    assert (kinds.count("kernel"), kinds.count("memcpy")) == (16, 18)
    assert run.notes == ["skipped 3 Unified Memory rows (page faults and migrations, not launches)"]
    # 572.56ms  6.8480us  ...  96.000KB  13.369GB/s  Pageable  Device  Tesla V100-SXM2  1  7  -  -  [CUDA memcpy HtoD]
    first = run.launches[0]
    assert first.value("Size") == 96 * 1024 and first.value("Throughput") == pytest.approx(13.369 * GiB)
    # 572.86ms  7.6480us  (8 1 1)  (512 1 1)  21  0B  0B ... Kernel(Node*, int*, bool*, bool*, bool*, int*, int) [426]
    kernel = next(launch for launch in run.launches if launch.attributes["kind"] == "kernel")
    assert kernel.kernel == "Kernel(Node*, int*, bool*, bool*, bool*, int*, int)"
    assert kernel.attributes["correlation_id"] == "426" and kernel.attributes["grid"] == "(8, 1, 1)"
    assert kernel.value("kernel_duration") == pytest.approx(7.648e-6)


def test_text_trace_tables_closed_by_code_fences_two_runs_in_one_readme() -> None:
    # Two 'nvprof --print-gpu-trace' runs pasted in a README, each table closed by a ``` line at once.
    assert readers.detect(TEXT_TRACE_FENCED) is nvprof_text_trace
    run = readers.read(TEXT_TRACE_FENCED)
    assert run.device == {"name": "GeForce GT 650M"}
    assert [launch.attributes["kind"] for launch in run.launches] == ["memcpy", "memcpy", "kernel", "memcpy"] * 2
    assert [launch.index for launch in run.launches] == list(range(8))
    # 195.89ms  3.4072ms  (39063 1 1)  (256 1 1)  8  0B  0B ... vectorAdd(...) [112]
    first, second = run.launches[2], run.launches[6]
    assert first.kernel == second.kernel == "vectorAdd(float const *, float const *, float*, int)"
    assert first.attributes["grid"] == "(39063, 1, 1)" and first.attributes["registers"] == "8"
    assert first.value("kernel_duration") == pytest.approx(3.4072e-3)
    # 193.00ms  2.6595ms  (1024 1 1)  (256 1 1)  10 ... (the second run, vectorAddGPUGridStride)
    assert second.attributes["grid"] == "(1024, 1, 1)" and second.attributes["registers"] == "10"
    assert second.value("kernel_duration") == pytest.approx(2.6595e-3)
    assert float(second.attributes["start_s"]) == pytest.approx(193.00e-3)
    # 182.96ms  6.4049ms  ...  38.147MB  5.8163GB/s  Pageable  Device  GeForce GT 650M  1  7  [CUDA memcpy HtoD]
    copy = run.launches[0]
    assert copy.value("Size") == pytest.approx(38.147 * MiB) and copy.value("Duration") == pytest.approx(6.4049e-3)
    assert copy.value("Throughput") == pytest.approx(5.8163 * GiB)
    assert run.launches[-1].value("Duration") == pytest.approx(15.065e-3)  # 195.66ms  15.065ms ... DtoH


def test_text_summary_table_closed_by_a_code_fence(tmp_path: Path) -> None:
    # Lines of 'nvprof ./a.out' output pasted in a README (GeForce GT 1030; profiler-outputs/SOURCES.md,
    # "Tables closed by a code fence"): the fence follows the last row.
    path = tmp_path / "summary.md"
    path.write_text(
        "```\n==15105== Profiling result:\n"
        "            Type  Time(%)      Time     Calls       Avg       Min       Max  Name\n"
        " GPU activities:   49.13%  169.63us         1  169.63us  169.63us  169.63us  [CUDA memcpy HtoD]\n"
        "                   45.01%  155.39us         1  155.39us  155.39us  155.39us  [CUDA memcpy DtoH]\n"
        "```\n"
    )
    run = readers.read(path)
    assert [launch.kernel for launch in run.launches] == ["[CUDA memcpy HtoD]", "[CUDA memcpy DtoH]"]
    assert run.launches[1].value("kernel_duration") == pytest.approx(155.39e-6)


def test_text_trace_row_off_the_header_columns(tmp_path: Path) -> None:
    lines = TEXT_TRACE.read_text().splitlines(keepends=True)
    lines[4] = lines[4].replace("(32768 1 1)      (1024 1 1)", "(32768 1 1)(1024 1 1)      ")  # shifted left
    path = tmp_path / "edited.txt"
    path.write_text("".join(lines))
    with pytest.raises(FormatError, match="trace line '326.63ms  1.6782ms  .*' does not fit the columns of its header"):
        readers.read(path)


@pytest.mark.parametrize("path", [TEXT_TRACE_U_MS, TEXT_TRACE_U_US], ids=["u-ms", "u-us"])
def test_text_trace_with_units_row_of_u_ms_and_u_us(path: Path) -> None:
    # Written from the documented format (profiler-outputs/SOURCES.md, "nvprof --print-gpu-trace with -u"):
    # bare cells, each column's unit in the row under the header ('ms'/'us', 'B', 'KB', 'GB/s').
    assert readers.detect(path) is nvprof_text_trace
    run = readers.read(path)
    assert [launch.attributes["kind"] for launch in run.launches] == ["kernel"] * 6 + ["memcpy"]
    init, dot, copy = run.launches[0], run.launches[5], run.launches[-1]
    # '326.6312  1.678208' under 'ms  ms', '326631.2  1678.208' under 'us  us'
    assert init.kernel.startswith("void init_kernel<double>") and init.attributes["correlation_id"] == "128"
    assert init.attributes["start_s"] == "0.3266312" and run.launches[1].attributes["start_s"] == "0.3283407"
    duration = init.metric("kernel_duration")
    assert duration.unit == "second" and duration.value == pytest.approx(1.678208e-3)
    assert [launch.value("kernel_duration") for launch in run.launches[1:6]] == pytest.approx(
        [1.239587e-3, 1.237634e-3, 1.843201e-3, 1.841728e-3, 1.230469e-3]
    )
    assert dot.attributes["static_smem_bytes"] == "8192"  # '8192' under 'B'
    # '1.76e-03' ms / '1.760000' us, '2.000000' under 'KB', '1.083721' under 'GB/s'
    size, duration, rate = (copy.value(k) for k in ("Size", "Duration", "Throughput"))
    assert (size, duration) == (2048.0, pytest.approx(1.76e-6)) and rate == pytest.approx(1.083721 * GiB)
    assert size / duration == pytest.approx(rate, rel=1e-6)  # KB = 1024 B, GB/s = 2**30 B/s, as without -u


def test_text_trace_bare_cells_without_units_row_are_refused(tmp_path: Path) -> None:
    lines = TEXT_TRACE_U_MS.read_text().splitlines(keepends=True)
    assert lines[4].split() == ["ms", "ms", "B", "B", "KB", "GB/s"]
    path = tmp_path / "no-units-row.txt"
    path.write_text("".join(lines[:4] + lines[5:]))  # '1.678208' alone could be seconds or microseconds
    with pytest.raises(FormatError, match="Start cells carry no unit and no units row gives one"):
        readers.read(path)


def test_text_summary_two_untyped_runs_each_after_profiling_result() -> None:
    """Two CUDA 8 summaries pasted in one page (K80, then P100): each untyped table follows its own
    '==PID== Profiling result:' line, so both are GPU activities (SOURCES.md 10a)."""
    run = readers.read(SUMMARY_TWO_RUNS)
    assert [launch.kernel for launch in run.launches] == ["add(int, float*, float*)"] * 2
    k80, p100 = run.launches
    assert k80.value("Avg") == pytest.approx(93.471e-6) and k80.value("Time") == pytest.approx(93.471e-6)
    assert p100.value("Avg") == pytest.approx(2.1192e-3) and p100.value("Time(%)") == 100.0
    assert not any("API call" in note for note in run.notes)


def test_text_summary_units_row_exponents_and_api_section() -> None:
    assert readers.detect(SUMMARY_MS) is nvprof_text_summary
    run = readers.read(SUMMARY_MS)
    assert run.environment["command"] == "./lassen-executable/cfd_000 ../../data/cfd/fvcorr.domn.097K"
    assert run.notes == ["skipped 17 API call rows (host side)"]
    assert [launch.invocations for launch in run.launches] == [6000, 6000, 2000, 2000, 8, 3, 1]
    # units row '%  ms  ms  ms  ms';  19.82  59.36514  6000  9.89e-03  9.12e-03  0.011456  cuda_time_step(...)
    step = run.launches[1]
    assert step.kernel == "cuda_time_step(int, int, float*, float*, float*, float*)"
    duration = step.metric("kernel_duration")
    assert duration.unit == "second"
    assert (duration.value, duration.minimum, duration.maximum) == pytest.approx((9.89e-6, 9.12e-6, 11.456e-6))
    assert step.value("Time") == pytest.approx(59.36514e-3) and step.value("Time(%)") == 19.82
    memset = run.launches[-1]  # 0.00  1.82e-03  1  1.82e-03  1.82e-03  1.82e-03  [CUDA memset]
    assert memset.attributes["kind"] == "memset" and memset.value("kernel_duration") == pytest.approx(1.82e-6)


def test_text_summary_before_cuda_9_without_a_type_column(tmp_path: Path) -> None:
    # Written from the layout nvprof printed before CUDA 9 (as quoted in JuliaGPU/CUDA.jl issue #2017):
    # no Type column, and the API calls in a second table after an '==PID== API calls:' line.
    path = tmp_path / "old.txt"
    path.write_text(
        "==27694== Profiling application: matrixMul\n"
        "==27694== Profiling result:\n"
        "Time(%)      Time     Calls       Avg       Min       Max  Name\n"
        " 99.94%  1.11524s       301  3.7051ms  3.6928ms  3.7174ms  void matrixMulCUDA<int=32>(float*, float*, float*, int, int)\n"
        "  0.04%  406.30us         2  203.15us  136.13us  270.18us  [CUDA memcpy HtoD]\n"
        "\n"
        "==27964== API calls:\n"
        "Time(%)      Time     Calls       Avg       Min       Max  Name\n"
        " 49.81%  285.17ms         3  95.055ms  153.32us  284.86ms  cudaMalloc\n"
    )
    run = readers.read(path)
    assert [(launch.kernel[:16], launch.invocations) for launch in run.launches] == [
        ("void matrixMulCU", 301),
        ("[CUDA memcpy Hto", 2),
    ]
    assert run.launches[0].value("kernel_duration") == pytest.approx(3.7051e-3)
    assert run.notes == ["skipped 1 API call rows (host side)"]
