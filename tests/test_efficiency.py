"""Efficiency kinds and the study's implied peaks recomputed from its Tables 2-3."""

from __future__ import annotations

import io
import math
from importlib import resources

import pandas as pd
import pytest

from gpuprof.derive.efficiency import (
    VS_DATASHEET,
    VS_ROOFLINE,
    VS_RUN_CLOCK,
    efficiencies,
    implied_clock_hz,
    implied_peak,
    roofline_ceiling,
)
from gpuprof.devices import gpu_table
from gpuprof.devices.peaks import Peaks
from gpuprof.workloads import ops


@pytest.fixture(scope="module")
def study() -> pd.DataFrame:
    text = resources.files("gpuprof.data").joinpath("theano_cuda_profiler_tables.csv").read_text()
    frame = pd.read_csv(io.StringIO(text))
    frame["implied"] = [implied_peak(r * 1e6, p) for r, p in zip(frame.mflops_per_s, frame.efficiency_pct)]
    return frame


def peaks_of(name: str) -> Peaks:
    return gpu_table.peaks(gpu_table.match(name))


def by_kind(found: list, kind: str, unit: str = "FLOP/second") -> list:
    return [e for e in found if e.kind == kind and e.unit == unit]


def test_datasheet_and_run_clock_efficiency_of_the_gtx980_dot(study: pd.DataFrame) -> None:
    row = study[(study.gpu == "GTX980") & (study.op == "dot") & (study.size_mb == 5)].iloc[0]
    peaks = peaks_of(row.gpu)
    rate = row.mflops_per_s * 1e6
    [datasheet] = by_kind(efficiencies(rate, None, "float32", peaks), VS_DATASHEET)
    assert datasheet.percent == pytest.approx(100 * rate / 4981e9)
    assert "1.216 GHz" in datasheet.basis and "peak-table" in datasheet.basis
    # At the clock implied by nvprof's own number, the run-clock efficiency is nvprof's number.
    clock = implied_clock_hz(row.implied, peaks, "float32")
    found = efficiencies(rate, None, "float32", peaks, clock_hz=clock)
    [at_clock] = by_kind(found, VS_RUN_CLOCK)
    assert at_clock.percent == pytest.approx(row.efficiency_pct)
    assert "scaled to the run clock" in at_clock.basis
    assert not by_kind(found, VS_ROOFLINE)  # no byte rate: no roofline


def test_roofline_says_add_is_memory_bound_and_dot_compute_bound(study: pd.DataFrame) -> None:
    peaks = peaks_of("K40")
    add = study[(study.gpu == "K40") & (study.op == "add") & (study.size_mb == 96)].iloc[0]
    shape = ops.shape_for_size("add", 96 * 10**6, "float32")
    ai = ops.flops("add", shape) / ops.bytes_moved("add", shape, "float32")
    rate = add.mflops_per_s * 1e6
    found = efficiencies(rate, rate / ai, "float32", peaks)
    [roof] = by_kind(found, VS_ROOFLINE)
    assert roof.bound == "memory"
    assert roof.ceiling == pytest.approx(ai * 288e9)
    [bandwidth] = by_kind(found, VS_DATASHEET, "byte/second")
    # The study's add: ~0.25 % of the FLOP peak but most of the memory bandwidth.
    assert by_kind(found, VS_DATASHEET)[0].percent < 0.3
    assert bandwidth.percent == pytest.approx(roof.percent) and 40 < bandwidth.percent < 100
    ceiling, bound, _ = roofline_ceiling(100.0, peaks, "float32")
    assert (ceiling, bound) == (4291e9, "compute")


@pytest.mark.parametrize("bad", [None, 0.0, -1.0, math.nan, math.inf])
def test_missing_or_meaningless_inputs_give_only_what_can_be_computed(bad: float | None) -> None:
    peaks = peaks_of("k40")
    assert efficiencies(bad, bad, "float32", peaks) == []
    assert [e.unit for e in efficiencies(bad, 1e11, "float32", peaks)] == ["byte/second"]
    assert [e.kind for e in efficiencies(1e12, None, "float32", peaks, clock_hz=bad)] == [VS_DATASHEET]
    assert efficiencies(1e12, 1e11, "bfloat8", peaks)[0].unit == "byte/second"  # no such dtype peak
    no_clock = Peaks("cpu", {"float32": 1e11}, None, None, "derived", "test")
    [only] = efficiencies(5e10, 1e9, "float32", no_clock, clock_hz=3e9)
    assert only.percent == 50 and "an unstated clock" in only.basis


def test_k40_implied_peak_is_the_datasheet_peak_at_base_clock(study: pd.DataFrame) -> None:
    """dot has the largest efficiencies, so the least rounding in the 2-decimal percentages."""
    dot = study[(study.gpu == "K40") & (study.op == "dot")]
    table = gpu_table.match("K40")
    assert dot.implied.median() == pytest.approx(table.get("fp32_gflops") * 1e9, rel=0.02)
    clocks = [implied_clock_hz(i, peaks_of("K40"), "float32") / 1e6 for i in dot.implied]
    assert all(table.get("base_clock_mhz") - 1 < c < table.get("base_clock_mhz") * 1.03 for c in clocks)


def test_gtx980_implied_peak_runs_below_its_base_clock(study: pd.DataFrame) -> None:
    dot = study[(study.gpu == "GTX980") & (study.op == "dot")]
    table = gpu_table.match("GTX980")
    first = dot[dot.size_mb == 5].implied.iloc[0]
    assert first / 1e9 == pytest.approx(4532, abs=1)  # = 2048 x 2 x 1.106 GHz
    clocks = [implied_clock_hz(i, peaks_of("GTX980"), "float32") / 1e6 for i in dot.implied]
    assert all(1075 < c < table.get("base_clock_mhz") for c in clocks)  # not 1216 boost, not 1241


def test_gt710m_implied_peak_is_half_the_datasheet_peak(study: pd.DataFrame) -> None:
    """nvprof's peak for the Fermi card uses the 775 MHz core clock, not the 1550 MHz shader clock
    the datasheet's 297.6 GFLOP/s assumes."""
    dot = study[(study.gpu == "GT710M") & (study.op == "dot")]
    table = gpu_table.match("GT710M")
    clocks = [implied_clock_hz(i, peaks_of("GT710M"), "float32") / 1e6 for i in dot.implied]
    assert all(table.get("base_clock_mhz") * 0.98 < c < table.get("base_clock_mhz") * 1.1 for c in clocks)
    assert dot.implied.median() / (table.get("fp32_gflops") * 1e9) == pytest.approx(0.5, abs=0.03)
