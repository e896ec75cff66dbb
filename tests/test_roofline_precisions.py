"""Issue 28 items 10 and 12: a kernel's roofline point per precision (as Nsight Compute draws its
per-precision rooflines), its total only when every kind of work was counted, and no binding
ceiling named where no memory counter exists. Values are recomputed here from the raw CSV cells
with NERSC's formulas (FLOPs = 2 x fma + add + mul per precision; bytes: dram__bytes.sum,
lts__t_bytes.sum, l1tex__t_bytes.sum)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_paths import A100, K40C

from gpuprof.cli import main
from gpuprof.derive import kernels
from gpuprof.derive.levels import NO_MEMORY
from gpuprof.derive.roofline import drawable, points
from gpuprof.readers import read


def _raw(path: Path, launch_id: str) -> dict[str, float]:
    """Metric name -> value of one launch ID, read straight from ncu's CSV cells."""
    with open(path, newline="") as handle:
        rows = [row for row in csv.DictReader(line for line in handle if line.startswith('"'))]
    return {r["Metric Name"]: float(r["Metric Value"].replace(",", "")) for r in rows if r["ID"] == launch_id}


def _nersc(raw: dict[str, float], letter: str) -> float:
    """NERSC's roofline FLOPs of one precision (d, f, h): 2 x fma + add + mul thread instructions."""
    part = "smsp__sass_thread_inst_executed_op_{}{}_pred_on.sum"
    return 2 * raw[part.format(letter, "fma")] + raw[part.format(letter, "add")] + raw[part.format(letter, "mul")]


def test_a100_gemm_keeps_its_fp32_and_fp16_points_by_nersc_formulas() -> None:
    """gemm_v1<float> (ID 2) ran tensor-pipe instructions no counter turns into FLOPs: before, it
    vanished from the 'all' chart; now its FP32 and FP16 points stay at NERSC's values at each level."""
    raw = _raw(A100, "2")
    seconds = raw["smsp__cycles_elapsed.avg"] / raw["smsp__cycles_elapsed.avg.per_second"]
    frame, skipped = points([read(A100)])
    placed = drawable(frame).set_index("op")
    for name, letter, precision in (("gemm_v1<float> FP32", "f", "fp32"), ("gemm_v1<float> FP16", "h", "fp16")):
        flops = _nersc(raw, letter)
        row = placed.loc[name]
        assert row["precision"] == precision
        assert row["ai"] == pytest.approx(flops / raw["dram__bytes.sum"], rel=1e-9)
        assert row["ai_l2"] == pytest.approx(flops / raw["lts__t_bytes.sum"], rel=1e-9)
        assert row["ai_l1"] == pytest.approx(flops / raw["l1tex__t_bytes.sum"], rel=1e-9)
        assert row["flop_rate"] == pytest.approx(flops / seconds, rel=1e-6)
    assert "gemm_v1<float> total" not in placed.index  # its tensor work was not counted
    assert any("gemm_v1<float> total: total FLOPs unknown" in line for line in skipped)
    # randomInit ran FP32 alone: one point, named plainly, which is also its (complete) total
    assert placed.loc["randomInit<float>", "precision"] == "fp32"


def test_a_total_point_joins_the_precisions_when_every_kind_was_counted(tmp_path: Path) -> None:
    """With --tensor-flop-per-inst 512 (NERSC's factor) gemm_v1's total is complete: the chart keeps
    its FP32 and FP16 points and adds the total, 2 x ffma + 2 x hfma + 512 x tensor-pipe instructions."""
    from gpuprof.importing import import_files

    raw = _raw(A100, "2")
    runs = import_files([A100], tmp_path / "s.sqlite", tensor_flop_per_inst=512)
    placed = drawable(points(runs)[0]).set_index("op")
    total = _nersc(raw, "f") + _nersc(raw, "h") + 512 * raw["smsp__inst_executed_pipe_tensor.sum"]
    assert total == 107_404_381_388_800
    assert placed.loc["gemm_v1<float> total", "precision"] == "fp32+fp16+tensor"
    assert placed.loc["gemm_v1<float> total", "ai"] == pytest.approx(total / raw["dram__bytes.sum"], rel=1e-9)
    assert placed.loc["gemm_v1<float> TENSOR", "ai_l2"] == pytest.approx(
        512 * raw["smsp__inst_executed_pipe_tensor.sum"] / raw["lts__t_bytes.sum"], rel=1e-9
    )
    assert {"gemm_v1<float> FP32", "gemm_v1<float> FP16"} <= set(placed.index)


def test_no_binding_ceiling_without_memory_counters(tmp_path: Path) -> None:
    """The K40c nvprof metrics CSV counts flop_count_sp but no byte counter at any level: the kernel
    is not said to be bound by the FP32 roof (before: 'FP32 FMA 4.291 TFLOP/s ...')."""
    [kernel] = kernels.kernel_frame([read(K40C)]).to_dict("records")
    assert kernel["flops_fp32"] == 3 * 25_264_160_800
    assert kernel["binding_name"] == NO_MEMORY == "bound unknown: no memory counters"
    assert kernel["binding_percent"] != kernel["binding_percent"]  # NaN: no percent of a guess
    result = CliRunner().invoke(main, ["import", "--format", "json", "--store", str(tmp_path / "s.sqlite"), str(K40C)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["binding ceiling"] == "bound unknown: no memory counters"


def test_roofs_are_drawn_at_the_clock_the_points_ran_at() -> None:
    """Issue 28 item 15: the A100 capture ran at 764,999,999.31 Hz (smsp__cycles_elapsed.avg.per_second),
    not the 1410 MHz boost the device table states: its roofs are drawn at that clock, as the table's
    percentages use it, and the title says so (19.5 TFLOP/s FP32 FMA x 765 / 1410 = 10.6 TFLOP/s)."""
    from matplotlib.text import Text

    from gpuprof.derive.roofline import at_clock, chart_clock, roofs
    from gpuprof.devices import gpu_table
    from gpuprof.render.roofline_plot import figure

    raw = _raw(A100, "2")
    frame, _ = points([read(A100)])
    clock = chart_clock(drawable(frame))
    assert clock == pytest.approx(raw["smsp__cycles_elapsed.avg.per_second"], rel=1e-6)
    peaks = [gpu_table.peaks(gpu_table.match("a100-pcie-40gb"))]
    table = {r.name: r for r in roofs(peaks)}
    moved = {r.name: r for r in at_clock(roofs(peaks), clock)}
    assert table["FP32 FMA"].clock_mhz == 1410
    assert moved["FP32 FMA"].value == pytest.approx(table["FP32 FMA"].value * clock / 1410e6)
    assert moved["DRAM"].value == table["DRAM"].value  # the memory's clock is not the SM's
    texts = {t.get_text() for t in figure(frame, "A100", peaks).findobj(Text)}
    assert "FP32 FMA (published): 10.6 TFLOP/s" in texts
    assert any("roofs at 765 MHz, the points' clock" in t for t in texts)
