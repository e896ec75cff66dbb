"""``gpuprof compare --import A --import B`` with framework traces: their per-op tables side by side
(the study's CPU-vs-GPU per-op comparison), on the study's own TF1 timelines of one network on a
Core i7 and a GTX 950M (lorrenlml/testingtensorflow)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuprof.cli import main

TRACES = Path(__file__).parent / "fixtures" / "traces"
CPU = TRACES / "tf1_timeline_inference_i7_6400_3200_1664_b1000.json"
GPU = TRACES / "tf1_timeline_inference_950M_6400_3200_1664_b1000.json"
HTA = [TRACES / "hta_sampled_rank-0.json.gz", TRACES / "hta_sampled_rank-1.json.gz"]


@pytest.fixture(scope="module")
def side_by_side_csv() -> dict[str, dict[str, str]]:
    result = CliRunner().invoke(main, ["compare", "--import", str(CPU), "--import", str(GPU), "--format", "csv"])
    assert result.exit_code == 0, result.output
    body = result.output.split("\nnote:")[0]
    return {row["op"]: row for row in csv.DictReader(io.StringIO(body))}


def test_compare_puts_the_cpu_and_gpu_traces_ops_side_by_side(side_by_side_csv) -> None:
    matmul = side_by_side_csv["MatMul"]
    # by hand: the i7 timeline's 4 MatMul events total 574,719 us (the study's figure); the 950M
    # timeline's 4 MatMul kernels on its GPU streams (stream:all left out) total 48,084 us
    assert float(matmul["total (s) A"]) == pytest.approx(574_719e-6, abs=1e-9)
    assert float(matmul["GPU time (s) B"]) == pytest.approx(48_084e-6, abs=1e-9)
    assert matmul["calls A"] == matmul["calls B"] == "4"
    assert float(matmul["op time B/A"]) == pytest.approx(48_084 / 574_719, rel=1e-9)
    assert "GPU time (s) A" not in matmul  # the Core i7 trace has no GPU
    assert list(side_by_side_csv)[0] == "MatMul"  # ordered by the largest total


def test_compare_of_traces_prints_the_table_and_the_kernels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no store here: the traces alone are compared
    result = CliRunner().invoke(main, ["compare", "--import", str(CPU), "--import", str(GPU)])
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "Framework ops side by side" in flat and "A = " in flat and CPU.name in flat
    assert "Imported profiler results (per kernel" in result.output  # the 950M's kernels, as for ncu files
    one = CliRunner().invoke(main, ["compare", "--import", str(GPU)])
    assert one.exit_code == 0 and "give two or more" in one.output
    assert list(tmp_path.iterdir()) == []  # read-only
    html = tmp_path / "report.html"
    written = CliRunner().invoke(main, ["compare", "--import", str(CPU), "--import", str(GPU), "--html", str(html)])
    assert written.exit_code == 0, written.output
    assert "Framework ops side by side" in html.read_text() and "<td>MatMul</td>" in html.read_text()


def test_compare_of_two_kineto_ranks_keeps_every_op(side_by_side_csv) -> None:
    result = CliRunner().invoke(main, ["compare", "--import", str(HTA[0]), "--import", str(HTA[1]), "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.output.split("\nnote:")[0])))
    assert len(rows) > 30  # csv is whole; the terminal table shows the first 30
    assert {"GPU time (s) A", "GPU time (s) B", "op time B/A"} <= set(rows[0])
