"""A kernel whose counters give only a total FLOP count (AMD Zen's ``fp_ret_sse_avx_ops.all``, which
sums every precision and counts an FMA as 2) is still a roofline point where bytes were counted, and a
run that cannot be placed is skipped with what it actually lacks. The file: a Ryzen 5 5600X perf stat
(SOURCES.md), which counts FLOPs and no bytes."""

from __future__ import annotations

import pytest
from fixture_paths import FIXTURES

from gpuprof.derive import roofline
from gpuprof.importing import read_file
from gpuprof.model import Metric, Run

ZEN3 = FIXTURES.parent / "cpu-counters" / "perf-stat-amd-zen3-fp-ret-all-and-mac-flops-multiplexed-5600X-gemm.txt"
FLOPS, SECONDS = 189_842_679_235, 1.424528639  # fp_ret_sse_avx_ops.all; seconds time elapsed
GEMM_BYTES = 3 * 2048 * 2048 * 4  # the SGEMM's compulsory traffic: A, B and C once


@pytest.fixture(scope="module")
def run() -> Run:
    return read_file(ZEN3)


def test_the_skip_line_names_what_is_missing(run: Run) -> None:
    frame, skipped = roofline.points([run])
    assert frame.empty
    assert len(skipped) == 1 and "with no DRAM bytes to place (1 perf-stat)" in skipped[0]
    assert "FLOPs" not in skipped[0]  # they were counted


def test_a_total_flop_count_becomes_a_point_where_bytes_exist(run: Run) -> None:
    launches = run.launches
    launches[0].metrics.append(Metric("dram__bytes.sum", float(GEMM_BYTES), "byte", canonical="dram_bytes"))
    with_bytes = Run(run.kind, run.format, run.source, run.device, run.workload, run.environment, launches)
    frame, skipped = roofline.points([with_bytes])
    assert skipped == []
    point = roofline.drawable(frame).iloc[0]
    assert point["precision"] == "total"
    assert point["flop_rate"] == pytest.approx(FLOPS / SECONDS, rel=1e-9)
    assert point["ai"] == pytest.approx(FLOPS / GEMM_BYTES, rel=1e-9)
    assert roofline.points([with_bytes], "fp32")[0].empty  # no precision is known, so none claims it
