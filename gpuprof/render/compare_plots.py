"""Charts of a comparison: efficiency against size per op, best MFLOP/s per device, and rooflines.

Input is the long frame of :mod:`gpuprof.compare`; output is a Matplotlib figure (:func:`png` turns
it into bytes to embed in the HTML report or write to a file). Matplotlib's object API through Agg:
no display, no global state. The roofline charts are drawn by :mod:`gpuprof.render.roofline_plot`
(one per device), not here.
"""

from __future__ import annotations

import io
import math
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuprof.derive.roofline import DTYPE_PRECISION, POINT_COLUMNS, drawable, size_text
from gpuprof.render import roofline_plot
from gpuprof.render.chart_style import HATCHES, colour, log_ticks, series, wrap
from gpuprof.workloads import ops

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from gpuprof.devices.peaks import Peaks
    from gpuprof.workloads.timing import Progress


def png(fig: Figure | None) -> bytes | None:
    """The figure as PNG bytes (None stays None)."""
    if fig is None:
        return None
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def _ops(frame: pd.DataFrame) -> list[str]:
    return [op for op in ops.OPS if op in set(frame["op"])]


def _full_scale(ax: Any, values: pd.Series) -> Any:
    """A percent panel's 100 % line, with the axis reaching it, so the distance to the ceiling shows."""
    ax.set_ylim(min(values.min(), 100) / 1.6, max(values.max(), 100) * 1.6)
    return ax.axhline(100, color="black", linestyle=(0, (4, 3)), linewidth=1, label="100 % (the ceiling)")


def lines_by_op(frame: pd.DataFrame, devices: list[str], quantity: str, ylabel: str, title: str) -> Figure | None:
    """One panel per op: ``quantity`` against size, one line per device; a percentage (``quantity``
    ending in %) also gets its 100 % line. None when there is nothing to draw."""
    from matplotlib.figure import Figure

    data = frame[frame["device"].isin(devices) & frame[quantity].notna()]
    names = _ops(data)
    if not names:
        return None
    columns = min(3, len(names))
    rows = math.ceil(len(names) / columns)
    fig = Figure(figsize=(4.6 * columns, 3.6 * rows + 0.9), layout="constrained")
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax, op in zip(axes, names):
        part = data[data["op"] == op]
        for i, device in enumerate(devices):
            mine = part[part["device"] == device].sort_values("size_MB")
            if len(mine):
                ax.plot(mine["size_MB"], mine[quantity], label=device, **series(i))
        ax.set_title(f"{op}: {ops.get_op(op).formula}", fontsize=10)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        if quantity.endswith("%"):
            _full_scale(ax, part[quantity])
        ax.set_xlabel("size: data processed (MB, 10^6 bytes)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="major", linewidth=0.4, alpha=0.6)
        log_ticks(ax.xaxis, base=2, most=6)
        log_ticks(ax.yaxis)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    by_label: dict[str, object] = {}
    for ax in axes[: len(names)]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            by_label.setdefault(label, handle)
    fig.legend(
        list(by_label.values()),
        list(by_label.keys()),
        loc="outside lower center",
        ncols=min(4, len(by_label)),
        fontsize=8,
        title="device",
    )
    fig.suptitle(title, fontsize=11)
    return fig


def best_rate_bars(frame: pd.DataFrame, devices: list[str]) -> Figure | None:
    """Grouped bars: for each op, each device's best MFLOP/s over the sizes measured (log scale)."""
    import numpy as np
    from matplotlib.figure import Figure

    data = frame[frame["device"].isin(devices) & frame["MFLOP/s"].notna()]
    names = _ops(data)
    if not names:
        return None
    best = data.groupby(["op", "device"])["MFLOP/s"].max()
    inches = min(12.5, max(7.0, 1.6 * len(names) + 0.35 * len(names) * len(devices)))  # the report: 1500 px
    fig = Figure(figsize=(inches, 5.2), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / len(devices)
    x = np.arange(len(names))
    for i, device in enumerate(devices):
        heights = [best.get((op, device), np.nan) for op in names]
        ax.bar(
            x + (i - (len(devices) - 1) / 2) * width,
            heights,
            width,
            label=device,
            color=colour(i),
            hatch=HATCHES[i % len(HATCHES)],
            edgecolor="white",
            linewidth=0.5,
        )
    ax.set_xticks(x, names)
    ax.set_yscale("log")
    ax.set_xlabel("operation")
    ax.set_ylabel("best MFLOP/s over the sizes measured (10^6 FLOP/s)")
    title = "Throughput per device. Measured runs: analytic FLOPs / timed median"
    if data["source"].str.startswith("paper").any():
        title += (
            "; paper: nvprof counts (for sigmoid and tanh nvprof counts 10-18 FLOPs per element, "
            "the analytic model 4 and 5)"
        )
    fig.suptitle(wrap(title, fig, 10), fontsize=10)
    ax.grid(True, axis="y", which="major", linewidth=0.4, alpha=0.6)
    log_ticks(ax.yaxis)
    fig.legend(loc="outside lower center", ncols=min(4, len(devices)), fontsize=8, title="device")
    return fig


def roofline_points(frame: pd.DataFrame) -> pd.DataFrame:
    """Roofline points (the frame :mod:`gpuprof.render.roofline_plot` draws) from comparison rows
    whose intensity is known: FLOP/s over bytes/s, at DRAM (the rows count no cache traffic)."""
    import numpy as np
    import pandas as pd

    known = frame[frame["GB/s"].notna() & (frame["GB/s"] > 0) & frame["MFLOP/s"].notna()]
    return pd.DataFrame(
        {
            "device": known["device"],
            "kernel": known["op"],
            "label": [f"{o} {size_text(s * 1e6)}" for o, s in zip(known["op"], known["size_MB"])],
            "op": known["op"],
            "precision": known["dtype"].map(DTYPE_PRECISION),
            "tensor_kind": "",
            "ai": known["MFLOP/s"] * 1e6 / (known["GB/s"] * 1e9),
            "ai_l2": np.nan,
            "ai_l1": np.nan,
            "flop_rate": known["MFLOP/s"] * 1e6,
            "time": np.nan,
            "clock": np.nan,
            "origin": known["MFLOP/s origin"],
            "run_id": known["run"],
            "ai_check": "",
            "left_out": "",
        },
        columns=POINT_COLUMNS,
    )


def rooflines(
    points: pd.DataFrame, peaks: dict[str, list[Peaks]], devices: list[str], progress: Progress | None = None
) -> dict[str, bytes]:
    """Roofline PNG of each device in ``devices`` that has points, drawn by ``roofline_plot``;
    ``progress`` hears of each before it is drawn."""
    out: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="gpuprof-roofline-") as tmp:
        for number, device in enumerate(devices):
            mine = points[points["device"] == device]
            if drawable(mine).empty:
                continue
            if progress:
                progress(f"roofline of {device}", number, len(devices))
            paths = roofline_plot.plot_device(mine, device, peaks.get(device, []), Path(tmp))
            out[device] = next(p for p in paths if p.suffix == ".png").read_bytes()
    return out
