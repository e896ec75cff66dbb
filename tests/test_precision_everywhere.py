"""Issue 28 item 20: every precision everywhere. ``compare --dtype float64`` lists the float64
ceilings behind its efficiencies, and ``roofline --op``/``--run`` keep float64 runs. The device is
this build VM's real /proc/cpuinfo and lscpu text (tests/test_cpu_device.py): 2 cores x 2.6 GHz x
8 float64 lanes x 2 FMA units x 2 = 166.4 GFLOP/s float64, 332.8 float32."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_cpu_device import CPUINFO, LSCPU

from gpuprof.cli import main
from gpuprof.devices.cpu import parse, theoretical_peaks
from gpuprof.model import TIMED, Launch, Metric, Run
from gpuprof.store import open_store
from gpuprof.workloads import ops


def _run(op: str, dtype: str, seconds: list[float]) -> Run:
    device = parse(CPUINFO, LSCPU)
    shape = ops.shape_for_size(op, 12 * 10**6, dtype)
    return Run(
        kind="run",
        format="cpu-numpy",
        source="test",
        created="2026-01-01T00:00:00+00:00",
        device={**device, "kind": "cpu", "peaks": [vars(theoretical_peaks(device))]},
        workload={
            "op": op,
            "dtype": dtype,
            "shape": list(shape),
            "size_bytes": ops.footprint(op, shape, dtype),
            "requested": "12MB",
            "engine": "numpy",
        },
        environment={"host": "vm"},
        launches=[
            Launch(f"numpy:{op}", i, metrics=[Metric("wall_time", t, "second", "kernel_duration", TIMED)])
            for i, t in enumerate(seconds)
        ],
    )


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Run, Run]:
    single, double = _run("add", "float32", [1.0e-3, 1.1e-3, 1.0e-3]), _run("add", "float64", [2.0e-3, 2.1e-3, 2.0e-3])
    path = tmp_path / "s.sqlite"
    with open_store(path) as opened:
        opened.add(single)
        opened.add(double)
    return path, single, double


def test_compare_float64_lists_float64_ceilings(store: tuple[Path, Run, Run]) -> None:
    path, _, double = store
    result = CliRunner().invoke(main, ["compare", "--store", str(path), "--dtype", "float64", "--format", "markdown"])
    assert result.exit_code == 0, result.output
    ceilings = result.stdout.split("Ceilings behind the efficiencies")[1]
    assert "peak GFLOP/s (float64)" in ceilings and "peak GFLOP/s (float32)" not in ceilings
    assert "166.4" in ceilings and "332.8" not in ceilings
    rows = json.loads(
        CliRunner().invoke(main, ["compare", "--store", str(path), "--dtype", "float64", "--format", "json"]).stdout
    )
    assert [r["run"] for r in rows] == [double.run_id[:8]]


@pytest.mark.slow  # measures float64 runs and draws their roofline: 2-5 s
def test_roofline_op_and_run_keep_float64_runs(store: tuple[Path, Run, Run], tmp_path: Path) -> None:
    from gpuprof.derive.roofline import points, select

    path, single, double = store
    frame, _ = points([single, double])
    assert select(frame, op_names=("add",))["label"].tolist() == ["add 12 MB", "add (float64) 12 MB"]
    for options, expected in ((["--op", "add"], 2), (["--run", double.run_id[:8]], 1)):
        out = tmp_path / f"r{expected}.svg"
        result = CliRunner().invoke(main, ["roofline", "--store", str(path), "--out", str(out), *options])
        assert result.exit_code == 0, result.output
        svg = out.read_text()
        assert "add (float64) 12 MB" in svg and "FP64" in svg
