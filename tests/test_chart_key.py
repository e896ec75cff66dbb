"""Issue 28 item 17, the chart's key: coincident points keep their values, an op's points name their
engine when several engines share a chart, entries read cleanly. Real runs: the CPU runs of ``add``
recorded under load with numpy and with the python-loop engine (tests/fixtures/stores/SOURCES.md),
and the A100 roofline CSV (SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_paths import A100

from gpuprof.derive import roofline
from gpuprof.importing import import_files
from gpuprof.render import roofline_plot
from gpuprof.store import runfile

STORES = Path(__file__).parent / "fixtures" / "stores"


@pytest.fixture(scope="module")
def cpu_points():
    runs = [
        *runfile.load(STORES / "cpu_add_reruns_under_load_epyc_2026-11-27.jsonl")[0],
        *runfile.load(STORES / "cpu_add_python_loop_64KB_epyc_2026-11-27.jsonl")[0],
    ]
    frame, _ = roofline.points(runs)
    return frame


def test_engines_are_named_when_several_share_a_chart(cpu_points) -> None:
    assert set(cpu_points["op"]) == {"add · numpy", "add · python-loop"}
    assert "add · numpy 63.9 KB" in set(cpu_points["label"]) and "add · python-loop 63.9 KB" in set(cpu_points["label"])
    one, _ = roofline.points(runfile.load(STORES / "cpu_add_reruns_under_load_epyc_2026-11-27.jsonl")[0])
    assert set(one["op"]) == {"add"}  # one engine: the name stays short


def test_coincident_points_keep_their_values(cpu_points) -> None:
    """The four 6 MB runs (3.8 to 4.6 GFLOP/s, one analytic AI of 1/12 FLOP/byte) as one key entry."""
    rows = list(cpu_points[cpu_points["label"].str.endswith("MB")].itertuples())
    text = roofline_plot._cluster_text(rows, hierarchical=False)
    assert text == "add · numpy 6, 6, 6, 6 MB: 3.8-4.6 GFLOP/s, AI 0.083 FLOP/byte"
    assert min(r.flop_rate for r in rows) == pytest.approx(3.8e9, rel=0.02)


def test_a_kernel_launched_twice_reads_cleanly(tmp_path: Path) -> None:
    (run,) = import_files([A100], tmp_path / "s.db", gpu="a100-sxm4-40gb")
    frame, _ = roofline.points([run])
    rows = [r for r in frame.itertuples() if "randomInit" in str(r.kernel)]
    assert len(rows) == 1
    text = roofline_plot._cluster_text(rows, hierarchical=True)
    assert text.startswith("randomInit<float> (2 launches): 250 MFLOP/s at 765 MHz, AI 0.312 DRAM")
    assert text.count("(") == 1
