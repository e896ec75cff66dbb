"""The older nvprof CSV GPU trace (no Correlation_ID column: the id follows the kernel name), real
GTX 1080 Ti matrixMul output (SOURCES.md): one kernel launched 301 times is one kernel."""

from __future__ import annotations

import pytest
from fixture_paths import TRACE_OLD_CORRELATION

from gpuprof import readers
from gpuprof.derive.kernel_table import kernel_table

MATRIX_MUL = "void matrixMulCUDA<int=32>(float*, float*, float*, int, int)"


def test_correlation_suffix_stripped_so_one_kernel_has_all_its_launches() -> None:
    run = readers.read(TRACE_OLD_CORRELATION)
    kernels = [launch for launch in run.launches if launch.attributes["kind"] == "kernel"]
    assert {launch.kernel for launch in kernels} == {MATRIX_MUL} and len(kernels) == 301
    assert [launch.attributes["correlation_id"] for launch in kernels[:3]] == ["1073", "1084", "1091"]
    assert kernels[-1].attributes["correlation_id"] == "3177"
    table = kernel_table([run]).set_index("kernel")
    assert table.loc[MATRIX_MUL, "launches"] == 301


def test_kernel_row_units_from_the_units_row() -> None:
    first = next(
        launch for launch in readers.read(TRACE_OLD_CORRELATION).launches if launch.attributes["kind"] == "kernel"
    )
    # 587.796940,0.077602,20,10,1,32,32,1,27,8.000000,0,...   units: ms,ms,...,KB,B,KB,MB/s
    assert first.value("kernel_duration") == pytest.approx(0.077602e-3)
    assert first.attributes["grid"] == "(20, 10, 1)" and first.attributes["block"] == "(32, 32, 1)"
    assert first.attributes["registers"] == "27"
    assert first.attributes["static_smem_bytes"] == "8192"  # 8.000000 KB, binary as every nvprof KB
    assert first.attributes["dynamic_smem_bytes"] == "0"


def test_memcpy_rows_keep_bytes_and_throughput() -> None:
    run = readers.read(TRACE_OLD_CORRELATION)
    copies = [launch for launch in run.launches if launch.attributes["kind"] == "memcpy"]
    assert [launch.kernel for launch in copies] == ["[CUDA memcpy HtoD]", "[CUDA memcpy HtoD]", "[CUDA memcpy DtoH]"]
    # 584.620743,1.028854,...,400.000000,379.670001,...  (KB, MB/s: 2**10, 2**20)
    assert copies[0].value("Size") == 400 * 1024 and copies[0].metric("Size").unit == "byte"
    assert copies[0].value("Throughput") == pytest.approx(379.670001 * 2**20)
    assert copies[0].value("kernel_duration") == pytest.approx(1.028854e-3)
    assert copies[2].value("Size") == 800 * 1024
