"""Bar charts of ranked shares (GPU stall reasons, CPU Top-Down categories) as PNG or SVG.

One horizontal-bar panel per kernel (or per core/interval), largest share on top, each bar labelled
with its percentage; the basis is printed under the panels so the chart says where its numbers
came from. matplotlib is imported here, with the Agg backend, only when a chart is asked for.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

from gpuprof.errors import InputError

MAX_PANELS = 8
SUFFIXES = (".png", ".svg")

Panel = tuple[str, Sequence[tuple[str, float]]]   # (title, [(label, percent), ...] ranked)


def _short(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def plot_shares(panels: Sequence[Panel], path: str | Path, xlabel: str, footer: str) -> tuple[Path, int]:
    """Write the chart to ``path`` (.png or .svg); returns the path and how many panels were left out."""
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise InputError(f"cannot write a plot to '{path.name}'", "use a .png or .svg file name")
    if not panels:
        raise InputError("nothing to plot: no stall or Top-Down values found", "check the input files")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = list(panels)[:MAX_PANELS]
    heights = [max(1.2, 0.32 * len(bars) + 0.8) for _, bars in shown]
    fig, axes = plt.subplots(len(shown), 1, figsize=(8, sum(heights) + 0.6),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, (title, bars) in zip(axes[:, 0], shown):
        labels = [label for label, _ in bars][::-1]
        values = [value for _, value in bars][::-1]
        ax.barh(labels, values, color="#4C72B0")
        for y, value in enumerate(values):
            ax.text(value, y, f" {value:.1f}%" if value >= 0.05 or value == 0 else " <0.1%", va="center", fontsize=8)
        ax.set_xlim(0, max(values + [1.0]) * 1.15)
        ax.set_title(_short(title), fontsize=9, loc="left")
        ax.tick_params(labelsize=8)
        ax.set_xlabel(xlabel, fontsize=8)
    lines = textwrap.wrap(footer, 150)
    fig.text(0.01, 0.005, "\n".join(lines), fontsize=7, color="#555555", va="bottom")
    fig.tight_layout(rect=(0, 0.025 * len(lines), 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fig.savefig(path)
    except OSError as error:
        raise InputError(f"cannot write {path}: {error.strerror}", "choose a writable path") from None
    finally:
        plt.close(fig)
    return path, max(0, len(panels) - MAX_PANELS)
