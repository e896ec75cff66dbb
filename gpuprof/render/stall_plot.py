"""Bar charts of ranked shares (GPU stall reasons, CPU Top-Down categories) as PNG or SVG.

One horizontal-bar panel per kernel (or per core/interval), largest share on top, each bar labelled
with its percentage; the basis is printed under the panels so the chart says where its numbers
came from. matplotlib is imported only when a chart is asked for, and used through its object API
(no pyplot): no display and no global state.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpuprof import outputs
from gpuprof.errors import InputError
from gpuprof.render.chart_style import colour, wrap

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MAX_PANELS = 8
SUFFIXES = (".png", ".svg")

Panel = tuple[str, Sequence[tuple[str, float]]]  # (title, [(label, percent), ...] ranked)


def _title(text: str, fig: Figure) -> str:
    """A panel title in at most two lines of the figure's width (kernel names can run to pages)."""
    lines = wrap(text, fig, 9).split("\n")
    return "\n".join(lines[:2]) + ("…" if len(lines) > 2 else "")


def plot_shares(panels: Sequence[Panel], path: str | Path, xlabel: str, footer: str) -> tuple[Path, int]:
    """Write the chart to ``path`` (.png or .svg); returns the path and how many panels were left out."""
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise InputError(f"cannot write a plot to '{path.name}'", "use a .png or .svg file name")
    if not panels:
        raise InputError("nothing to plot: no stall or Top-Down values found", "check the input files")
    from matplotlib.figure import Figure

    shown = list(panels)[:MAX_PANELS]
    heights = [max(1.2, 0.32 * len(bars) + 0.8) for _, bars in shown]
    fig = Figure(figsize=(8, sum(heights) + 0.6), layout="constrained")
    axes = fig.subplots(len(shown), 1, gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, (title, bars) in zip(axes[:, 0], shown):
        labels = [label for label, _ in bars][::-1]
        values = [value for _, value in bars][::-1]
        ax.barh(labels, values, color=colour(0))
        for y, value in enumerate(values):
            ax.text(value, y, f" {value:.1f}%" if value >= 0.05 or value == 0 else " <0.1%", va="center", fontsize=8)
        ax.set_xlim(0, max(values + [1.0]) * 1.15)
        ax.set_title(_title(title, fig), fontsize=9, loc="left")
        ax.tick_params(labelsize=8)
        ax.set_xlabel(xlabel, fontsize=8)
    fig.supxlabel(wrap(footer, fig, 7), fontsize=7, color="#555555", x=0.01, ha="left")
    with outputs.all_or_none():  # a full disk leaves neither the chart nor a folder made for it
        outputs.make_folder(path.parent)
        with outputs.replacing(path, "wb") as handle:
            fig.savefig(handle, format=path.suffix[1:].lower())
    return path, max(0, len(panels) - MAX_PANELS)
