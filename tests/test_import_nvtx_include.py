"""NVTX range path per launch and ``import --nvtx-include`` (issue 28, item 18), on NVIDIA/Fuser's
real Nsight Systems export, whose nvFuser launches run inside KernelExecutor::runFusion ranges."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_paths import K40C, NSYS_SQLITE

from gpuprof.cli import main
from gpuprof.importing import nvtx_matches
from gpuprof.store import open_store

FUSION = "<unnamed>::nvfuser_none_f0_c0_r0_g0("


def invoke(store: Path, *args: object):
    return CliRunner().invoke(main, ["import", "--store", str(store), *map(str, args)])


def test_nvtx_include_keeps_the_launches_made_inside_the_range(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    result = invoke(store, NSYS_SQLITE, "--nvtx-include", "*execute_kernel", "--format", "csv")
    assert result.exit_code == 0, result.output
    with open_store(store) as reopened:
        (run,) = reopened.runs()
    gpu = [launch for launch in run.launches if launch.attributes["kind"] != "api"]
    assert [launch.kernel[: len(FUSION)] for launch in gpu] == [FUSION]
    assert gpu[0].value("kernel_duration") == pytest.approx(135137e-9)  # its metrics came along
    assert "--nvtx-include *execute_kernel: kept" in result.output


def test_nested_ranges_written_outer_slash_inner(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    result = invoke(
        store, NSYS_SQLITE, "--nvtx-include", "KernelExecutor::runFusion/fusion_executor::allocations::allocateOutputs"
    )
    assert result.exit_code == 0, result.output
    with open_store(store) as reopened:
        (run,) = reopened.runs()
    kernels = [launch.kernel for launch in run.launches if launch.attributes["kind"] == "kernel"]
    assert len(kernels) == 1 and "FillFunctor<c10::Half>" in kernels[0]


def test_pattern_rules() -> None:
    path = "KernelExecutor::runFusion/KernelExecutor::runFusion::execute_kernel/ExecutorRunFusion::cuLaunchKernel"
    assert nvtx_matches(path, "ExecutorRunFusion::*")
    assert nvtx_matches(path, "KernelExecutor::runFusion/KernelExecutor::runFusion::execute_kernel")
    assert not nvtx_matches(path, "KernelExecutor::runFusion/ExecutorRunFusion::cuLaunchKernel")  # not nested so
    assert not nvtx_matches("", "*")


def test_nothing_matching_or_no_ranges_is_one_clear_line(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    result = invoke(store, NSYS_SQLITE, "--nvtx-include", "training_step")
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "no launch inside an NVTX range matching training_step" in result.output
    assert "KernelExecutor::runFusion" in result.output  # the ranges the file has
    result = invoke(store, K40C, "--nvtx-include", "x")
    assert result.exit_code != 0 and "carries NVTX ranges" in result.output
    if store.exists():
        with sqlite3.connect(store) as db:
            assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
