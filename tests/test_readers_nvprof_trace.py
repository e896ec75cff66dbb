"""nvprof GPU trace and summary readers (CSV with a units row, and the plain text summary) on real
captured outputs; expected values read by hand from the fixture files."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuprof import readers
from gpuprof.errors import FormatError
from gpuprof.readers import nvprof_csv_trace, nvprof_text_summary
from fixture_paths import TRACE, SUMMARY, BABEL

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
        "kernel", "kernel", "memcpy", "kernel", "kernel", "memcpy", "memset"]
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
        "[CUDA memcpy DtoH]", "void add_kernel", "void triad_kernel", "void mul_kernel",
        "void copy_kernel", "void dot_kernel", "void init_kernel"]
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
