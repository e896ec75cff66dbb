"""Roofline charts: one log-log PNG and SVG per device, every kernel point labelled.

Input is the plain frame of :mod:`gpuprof.derive.roofline` (device, label, op, dtype, ai,
flop_rate) and the peaks per device; nothing here reads the store. Matplotlib's object API (no
pyplot) renders through Agg, so no display and no global state are involved.
"""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from gpuprof.devices.peaks import Peaks
from gpuprof.units import human

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

_DTYPE_NAMES = {"float32": "FP32", "float64": "FP64", "float16": "FP16"}
_LINESTYLES = ("-", "--", ":", "-.")
_CHAR_PX = 4.0  # width (points) of one character of a 7-point label, for keeping labels apart
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_LABEL_OFFSETS = ((6, 6), (6, -12), (-6, 14), (-6, -16), (10, 20), (10, -24), (-10, 26), (-10, -30))


def slug(device: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-") or "device"


def _clock_text(peaks: Peaks) -> str:
    return f" @ {human(peaks.clock_hz, 'hertz')}" if peaks.clock_hz else ""


def _x_range(frame: pd.DataFrame, ridges: list[float]) -> tuple[float, float]:
    values = [v for v in [*frame["ai"], *ridges] if v > 0]
    return min(values) / 4, max(values) * 4


Box = tuple[float, float, float, float]   # a label's extent in pixels: left, right, bottom, top


def _text_box(ax: Axes, xy: tuple[float, float], offset: tuple[float, float], text: str,
              right_aligned: bool) -> Box:
    """Where a 7-8 point label will sit, in pixels (an estimate from its length)."""
    scale = ax.figure.dpi / 72
    width = _CHAR_PX * scale * len(text)
    px, py = ax.transData.transform(xy)
    x, y = px + offset[0] * scale, py + offset[1] * scale
    left = x - width if right_aligned else x
    return left, left + width, y - 5 * scale, y + 5 * scale


def _draw_ceilings(ax: Axes, peaks: Peaks, dtypes: list[str], xlim: tuple[float, float],
                   style: str) -> list[Box]:
    """Memory slope and compute roofs for ``dtypes``; returns the boxes of their labels."""
    import numpy as np

    boxes: list[Box] = []
    x = np.geomspace(*xlim, 200)
    bandwidth = peaks.bandwidth
    ridges = []
    for dtype in dtypes:
        peak = peaks.flops_for(dtype)
        if not peak:
            continue
        roof = np.minimum(peak, bandwidth * x) if bandwidth else np.full_like(x, peak)
        ax.plot(x, roof / 1e9, color="black", linestyle=style, linewidth=1.6)
        text = (f"{_DTYPE_NAMES.get(dtype, dtype)} peak {human(peak, 'FLOP/second', 3)}"
                f"{_clock_text(peaks)} ({peaks.origin})")
        ax.annotate(text, xy=(xlim[1], peak / 1e9), xytext=(-4, 4), textcoords="offset points",
                    ha="right", va="bottom", fontsize=8)
        boxes.append(_text_box(ax, (xlim[1], peak / 1e9), (-4, 9), text, right_aligned=True))
        if bandwidth:
            ridges.append(peak / bandwidth)
    if bandwidth:
        # the middle of the slope (in log space), away from the low-intensity points at its foot
        x0 = math.sqrt(xlim[0] * min(ridges or [xlim[1]]))
        y0 = bandwidth * x0 / 1e9
        display = ax.transData.transform([(x0, y0), (x0 * 10, y0 * 10)])
        angle = math.degrees(math.atan2(display[1][1] - display[0][1], display[1][0] - display[0][0]))
        ax.annotate(f"DRAM {human(bandwidth, 'byte/second', 3)} ({peaks.origin})", xy=(x0, y0),
                    xytext=(0, 5), textcoords="offset points", rotation=angle,
                    rotation_mode="anchor", fontsize=8)
    else:
        ax.text(0.01, 0.99, f"no memory ceiling: {peaks.origin} peaks of this device have no bandwidth",
                transform=ax.transAxes, ha="left", va="top", fontsize=8, style="italic")
    return boxes


def _clusters(ax: Axes, frame: pd.DataFrame) -> list[tuple[float, float, list[tuple[str, str]]]]:
    """Points closer than a few pixels share one label: (ai, GFLOP/s, [(op, label)...]) each."""
    groups: list[tuple[float, float, float, float, list[tuple[str, str]]]] = []
    for row in frame.sort_values(["ai", "flop_rate"]).itertuples():
        px, py = ax.transData.transform((row.ai, row.flop_rate / 1e9))
        for gx, gy, _, _, members in groups:
            if abs(px - gx) < 8 and abs(py - gy) < 8:
                members.append((str(row.op), str(row.label)))
                break
        else:
            groups.append((px, py, row.ai, row.flop_rate / 1e9, [(str(row.op), str(row.label))]))
    return [(ai, gflops, members) for _, _, ai, gflops, members in groups]


def _size_order(member: tuple[str, str]) -> tuple[str, float]:
    op, label = member
    number = label[len(op):].split()[:1]
    try:
        return op, float(number[0]) if number else 0.0
    except ValueError:
        return op, 0.0


def _cluster_text(members: list[tuple[str, str]]) -> str:
    """'add 6 MB; add 12 MB; mul 6 MB' -> 'add 6, 12 MB; mul 6 MB' (labels are 'op size unit')."""
    by_op: dict[str, list[str]] = {}
    for op, label in sorted(members, key=_size_order):
        by_op.setdefault(op, []).append(label[len(op):].strip() if label.startswith(op) else label)
    parts = []
    for op, rests in by_op.items():
        if not any(rests):                      # a kernel without a size, launched several times
            parts.append(op if len(rests) == 1 else f"{op} ×{len(rests)}")
            continue
        units = {r.rpartition(" ")[2] for r in rests}
        if len(units) == 1 and all(" " in r for r in rests):
            parts.append(f"{op} {', '.join(r.rpartition(' ')[0] for r in rests)} {units.pop()}")
        else:
            parts.append(f"{op} {', '.join(rests)}".strip())
    return "; ".join(parts)


def _label_points(ax: Axes, frame: pd.DataFrame, placed: list[Box]) -> None:
    """Every point's label (coincident points share one), moved off the labels already placed."""
    box = ax.bbox

    def fits(r: Box) -> bool:
        inside = box.x0 <= r[0] and r[1] <= box.x1
        return inside and all(r[1] < q[0] or q[1] < r[0] or r[3] < q[2] or q[3] < r[2] for q in placed)

    for ai, gflops, members in _clusters(ax, frame):
        text = _cluster_text(members)
        boxes = [(c, _text_box(ax, (ai, gflops), c, text, right_aligned=c[0] < 0)) for c in _LABEL_OFFSETS]
        offset, where = next(((c, r) for c, r in boxes if fits(r)), boxes[0])
        placed.append(where)
        ax.annotate(text, xy=(ai, gflops), xytext=offset, textcoords="offset points",
                    fontsize=7, ha="left" if offset[0] > 0 else "right", va="center")


def plot_device(frame: pd.DataFrame, device: str, peaks: list[Peaks], out_dir: Path) -> list[Path]:
    """Write ``roofline-<device>.png`` and ``.svg`` for the points of one device."""
    from matplotlib.figure import Figure

    frame = frame[(frame["ai"] > 0) & (frame["flop_rate"] > 0)]
    dtypes = sorted(set(frame["dtype"]))
    ridges = [p.flops_for(d) / p.bandwidth for p in peaks for d in dtypes
              if p.bandwidth and p.flops_for(d)]
    xlim = _x_range(frame, ridges)
    fig = Figure(figsize=(9, 6))
    # Fixed margins (not constrained layout) keep the data-to-pixel transform stable, so the
    # label nudging and the slope angle computed below hold in the saved file.
    fig.subplots_adjust(left=0.09, right=0.97, bottom=0.09, top=0.9)
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    tops = [p.flops_for(d) or 0 for p in peaks for d in dtypes] + list(frame["flop_rate"])
    lows = [r for r in frame["flop_rate"]] + [p.bandwidth * xlim[0] for p in peaks if p.bandwidth]
    ax.set_ylim(min(lows) / 1e9 / 4, max(tops) / 1e9 * 3)
    placed: list[Box] = []
    for style, ceiling in zip(_LINESTYLES, peaks):
        placed += _draw_ceilings(ax, ceiling, dtypes, xlim, style)
    for marker, (op, group) in zip(_MARKERS * len(frame), frame.groupby("op", sort=True)):
        ax.scatter(group["ai"], group["flop_rate"] / 1e9, s=30, zorder=3, marker=marker, alpha=0.8,
                   label=str(op))
    _label_points(ax, frame, placed)
    ax.set_xlabel("Arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("Performance (GFLOP/s)")
    origins = "; ".join(sorted(set(frame["origin"])))
    ceilings_note = ", ".join(f"{p.origin}" for p in peaks) or "none known"
    subtitle = textwrap.fill(f"points: {origins}; ceilings: {ceilings_note}", 110)
    ax.set_title(f"Roofline: {device}\n{subtitle}", fontsize=10)
    ax.grid(True, which="major", linewidth=0.4, alpha=0.6)
    ax.legend(title="op", fontsize=8, loc="lower right")
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"roofline-{slug(device)}.{ext}" for ext in ("png", "svg")]
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "none"}):   # SVG text stays text: searchable, small
        for path in paths:
            fig.savefig(path, dpi=150)
    return paths


def plot(frame: pd.DataFrame, peaks_by_device: dict[str, list[Peaks]], out_dir: Path) -> list[Path]:
    """One chart per device in ``frame``; returns the files written."""
    written: list[Path] = []
    for device, group in frame.groupby("device", sort=True):
        written += plot_device(group, str(device), peaks_by_device.get(str(device), []), out_dir)
    return written
