"""The study's validation workload: --engine python-loop beside numpy, and the table of counted
FLOPs against 2n³ and n²(2n−1)."""

from __future__ import annotations

import numpy as np
from click.testing import CliRunner

from gpuprof.cli import main
from gpuprof.derive.cpu_flops import matmul_validation
from gpuprof.model import MEASURED, Launch, Metric, Run
from gpuprof.workloads import load, python_loop


def test_ikj_product_matches_numpy():
    rng = np.random.default_rng(0)
    a, b = rng.random((5, 7)), rng.random((7, 3))
    out = np.empty((5, 3))
    load("python-loop", "cpu").prepare("dot", [a, b], 1.0, out)()
    assert np.allclose(out, a @ b, rtol=1e-14)
    assert python_loop.matmul_ikj([[1.0, 2.0]], [[3.0], [4.0]]) == [[11.0]]


def _run(metrics: list[Metric], notes: list[str]) -> Run:
    return Run(
        kind="measure",
        format="cpu-python-loop",
        source="",
        device={"kind": "cpu"},
        workload={"op": "dot", "shape": [512, 512, 512], "engine": "python-loop"},
        launches=[Launch("dot", 0, "cpu", 1, {}, metrics)],
        notes=notes,
    )


def test_validation_row_with_counted_events():
    # 512³ scalar double multiplies + adds: what the study counted for its pure-Python product
    scalar = 2 * 512**3
    row = matmul_validation(
        _run([Metric("fp_arith_inst_retired.scalar_double", scalar, "event", origin=MEASURED)], [])
    ).iloc[0]
    assert (row["n"], row["2n³ (analytic)"], row["n²(2n−1) (analytic)"]) == (512, "268,435,456", "268,173,312")
    assert row["counted FLOPs"] == "268,435,456"
    assert row["basis"].startswith("measured: FP_ARITH_INST_RETIRED")


def test_validation_row_without_a_pmu():
    row = matmul_validation(
        _run([Metric("wall_time", 1.0, "second")], ["perf reports instructions <not supported>"])
    ).iloc[0]
    assert row["counted FLOPs"] == "not counted: no PMU"


def test_run_python_loop_prints_the_validation_table(tmp_path):
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--op",
            "dot",
            "--shape",
            "24x24x24",
            "--engine",
            "python-loop",
            "--repeat",
            "1",
            "--warmup",
            "0",
            "--store",
            str(tmp_path / "s.db"),
        ],
    )
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.startswith("python-loop"))
    assert line.split()[1:4] == ["24", "27,648", "27,072"]
