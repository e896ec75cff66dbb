"""Comparison charts: one panel per op, one line or bar per device, axes with units."""

from __future__ import annotations

import pytest

from gpuprof.compare import comparison
from gpuprof.render.compare_plots import (
    best_rate_bars,
    lines_by_op,
    png,
    roofline_points,
)


def paper_frame():
    return comparison([], reference=True).rows


@pytest.mark.slow  # draws every op's panel: 3-8 s
def test_efficiency_lines_have_a_panel_per_op_and_a_line_per_device():
    frame = paper_frame()
    devices = ["GT710M (paper)", "K40 (paper)", "GTX980 (paper)"]
    fig = lines_by_op(frame, devices, "Efic.%", "Efic. (% of FLOP peak)", "t")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split(":")[0] for ax in panels] == ["add", "mul", "dot", "scalar", "sigmoid", "tanh"]
    assert all(ax.get_xlabel() == "size: data processed (MB, 10^6 bytes)" for ax in panels)
    assert all(ax.get_ylabel() == "Efic. (% of FLOP peak)" for ax in panels)
    dot = panels[2]
    k40 = next(line for line in dot.get_lines() if line.get_label() == "K40 (paper)")
    assert list(k40.get_xdata()) == [5, 9, 17, 33, 65]
    assert list(k40.get_ydata()) == [34.89, 36.8, 37.65, 38.13, 38.43]  # Table 2, K40 dot Efic.(%)
    assert png(fig)[:8] == b"\x89PNG\r\n\x1a\n"


def test_roofline_lines_leave_out_ops_without_a_known_intensity():
    fig = lines_by_op(paper_frame(), ["K40 (paper)"], "roof.%", "roof. (% of roofline)", "t")
    titles = [ax.get_title().split(":")[0] for ax in fig.axes if ax.get_visible()]
    assert titles == ["add", "mul", "dot", "scalar"]  # sigmoid/tanh: nvprof's per-element count unknown


def test_bars_are_the_best_rate_per_device_and_op():
    fig = best_rate_bars(paper_frame(), ["GTX980 (paper)"])
    ax = fig.axes[0]
    assert "MFLOP/s" in ax.get_ylabel() and ax.get_xlabel() == "operation"
    heights = [bar.get_height() for bar in ax.patches]
    assert heights[2] == 3869585.35  # GTX980 dot, the best of Table 2's five sizes (33 MB)


def test_roofline_points_need_a_byte_rate():
    points = roofline_points(paper_frame())
    assert set(points["op"]) == {"add", "mul", "dot", "scalar"}
    add = points[(points["device"] == "GT710M (paper)") & (points["label"] == "add 6 MB")].iloc[0]
    assert add["ai"] == pytest.approx(1 / 12) and add["flop_rate"] == pytest.approx(979.11e6)


def test_nothing_to_draw_gives_no_figure():
    assert lines_by_op(paper_frame(), ["no such device"], "Efic.%", "y", "t") is None
    assert png(None) is None


def test_efficiency_panels_draw_the_100_percent_line_and_reach_it():
    fig = lines_by_op(paper_frame(), ["K40 (paper)"], "Efic.%", "Efic. (% of FLOP peak)", "t")
    add = fig.axes[0]
    full = [line for line in add.get_lines() if line.get_label() == "100 % (the ceiling)"]
    assert len(full) == 1 and list(full[0].get_ydata()) == [100, 100]
    low, high = add.get_ylim()
    assert low < 0.22 and high > 100  # K40 add runs at 0.22-0.25 % of its FLOP peak (Table 2)
    assert "100" in [t.get_text() for t in add.yaxis.get_ticklabels()]
    mflops = lines_by_op(paper_frame(), ["K40 (paper)"], "MFLOP/s", "MFLOP/s", "t")
    assert all(line.get_label() != "100 % (the ceiling)" for line in mflops.axes[0].get_lines())


def test_series_differ_in_marker_and_colour_and_bars_in_hatch():
    from gpuprof.render.chart_style import OKABE_ITO

    devices = ["GT710M (paper)", "K40 (paper)", "GTX980 (paper)"]
    dot = lines_by_op(paper_frame(), devices, "MFLOP/s", "MFLOP/s", "t").axes[2]
    lines = [line for line in dot.get_lines() if line.get_label() in devices]
    assert len({line.get_marker() for line in lines}) == 3
    assert [line.get_color() for line in lines] == list(OKABE_ITO[:3])
    bars = best_rate_bars(paper_frame(), devices).axes[0]
    assert len({bar.get_hatch() for bar in bars.patches}) == 3
