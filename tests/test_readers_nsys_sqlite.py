"""Nsight Systems SQLite exports (``nsys export --type sqlite``): a real report1.sqlite committed by
NVIDIA/Fuser (nsys 2024.6.2, NVIDIA H200, 19 kernels, a memset, a memcpy, 968 CUDA API calls, 652
NVTX ranges). Expected values read from the file with the sqlite3 shell (SOURCES.md)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_paths import NSYS_SQLITE

from gpuprof import readers
from gpuprof.cli import main
from gpuprof.derive.kernel_table import kernel_table
from gpuprof.errors import FormatError
from gpuprof.merge import load_runs
from gpuprof.readers import nsys_sqlite

STORE = Path(__file__).parent / "fixtures" / "stores" / "schema1.sqlite"
NVFUSER = "<unnamed>::nvfuser_none_f0_c0_r0_g0("


def gpu(run):
    return [launch for launch in run.launches if launch.attributes["kind"] != "api"]


def test_kernels_one_launch_each_with_grid_block_stream_registers_shared_memory() -> None:
    assert readers.detect(NSYS_SQLITE) is nsys_sqlite
    run = readers.read(NSYS_SQLITE)
    assert run.format == "nsys-sqlite" and run.device == {"name": "NVIDIA H200"}
    assert run.environment == {"tool": "nsys", "tool_version": "2024.6.2.25"}
    kernels = [launch for launch in run.launches if launch.attributes["kind"] == "kernel"]
    assert len(kernels) == 19 and all(launch.invocations == 1 for launch in kernels)
    first = kernels[0]  # start 770742793, end 770783434, grid 1056x1x1, block 256x1x1, 40 registers
    assert first.kernel.startswith("void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel")
    assert (
        first.attributes.items()
        >= {
            "grid": "(1056, 1, 1)",
            "block": "(256, 1, 1)",
            "registers": "40",
            "stream": "7",
            "correlation_id": "158",
            "static_smem_bytes": "0",
            "dynamic_smem_bytes": "0",
            "api": "cudaLaunchKernel_v7000",
        }.items()
    )
    assert first.metric("kernel_duration").value == pytest.approx(40641e-9)
    fusion = next(launch for launch in kernels if launch.kernel.startswith(NVFUSER))
    assert fusion.attributes["dynamic_smem_bytes"] == "114816" and fusion.attributes["registers"] == "156"
    assert fusion.attributes["grid"] == "(8, 16, 1)" and fusion.attributes["block"] == "(128, 3, 1)"
    assert fusion.value("kernel_duration") == pytest.approx(135137e-9)


def test_memcpy_and_memset_with_bytes_and_direction() -> None:
    run = readers.read(NSYS_SQLITE)
    memset = next(launch for launch in run.launches if launch.attributes["kind"] == "memset")
    memcpy = next(launch for launch in run.launches if launch.attributes["kind"] == "memcpy")
    assert memset.kernel == "[CUDA memset]" and memset.value("Size") == 4.0
    assert memset.value("kernel_duration") == pytest.approx(1088e-9)
    assert memcpy.kernel == "[CUDA memcpy DtoH]" and memcpy.value("Size") == 1.0
    assert memcpy.attributes.items() >= {"direction": "DtoH", "src_mem": "Device", "dst_mem": "Pinned"}.items()
    assert memcpy.metric("Throughput").origin == "derived"
    assert memcpy.value("Throughput") == pytest.approx(1 / 1632e-9)


def test_runtime_api_calls_are_launches_of_kind_api_never_kernels() -> None:
    run = readers.read(NSYS_SQLITE)
    api = [launch for launch in run.launches if launch.attributes["kind"] == "api"]
    assert len(api) == 968 and len(gpu(run)) == 21
    assert sum(launch.kernel == "cudaLaunchKernel_v7000" for launch in api) == 17
    assert all(launch.metric("kernel_duration") is None and launch.metric("API Duration") for launch in api)
    assert run.notes[0].startswith("968 CUDA API calls stored as launches of kind 'api'")
    table = kernel_table([run])
    assert not table["kernel"].str.startswith("cu").any()  # no API call among the kernels
    assert set(table["kernel"]) == {launch.kernel for launch in gpu(run)}


def test_nvtx_ranges_named_from_the_file_are_each_launch_path() -> None:
    run = readers.read(NSYS_SQLITE)
    fusion = next(launch for launch in run.launches if launch.kernel.startswith(NVFUSER))
    assert fusion.attributes["nvtx"] == (
        "KernelExecutor::runFusion/KernelExecutor::runFusion::execute_kernel/ExecutorRunFusion::cuLaunchKernel"
    )
    assert "nvtx" not in gpu(run)[0].attributes  # launched outside any range
    assert "652 NVTX ranges" in run.notes[1]


def test_a_gpuprof_store_stays_a_store(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="is a gpuprof results store, not a profiler output"):
        readers.read(STORE)
    runs, kind, _ = load_runs(STORE)  # merge reads it as a store ...
    assert kind == "store" and runs
    runs, kind, _ = load_runs(NSYS_SQLITE)  # ... and an export as a profiler output
    assert kind == "nsys-sqlite" and len(runs[0].launches) == 989


def test_an_sqlite_file_that_is_neither_gets_one_clear_line(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    result = CliRunner().invoke(main, ["import", "--store", str(tmp_path / "s.sqlite"), str(other)])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "neither an Nsight Systems export nor a gpuprof results store" in result.output
