"""Roofline charts, one per device, hierarchical where the counters allow (NERSC's style).

A kernel is up to three points at its FLOP/s: its arithmetic intensity at L1 (hollow marker), L2
(half-filled) and DRAM (filled), joined by a thin line, under the device's memory ceilings (one per
level drawn, in its points' colour) and the compute ceilings of the precisions counted (with and
without FMA, tensor). Points that coincide share a number; the key under the chart names each with
its values, and the notes say where points and ceilings come from (origin, formula, clock) and
what was left out. Labels are placed by measured extents (:mod:`gpuprof.render.placement`).

Input is the frame of :mod:`gpuprof.derive.roofline` and the peaks per device; nothing here reads
the store. Matplotlib's object API through Agg: no display, no global state.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuprof import outputs
from gpuprof.derive.roofline import at_clock, chart_clock, drawable, roofs, with_file_ceilings
from gpuprof.errors import InputError
from gpuprof.model.units import human
from gpuprof.render.chart_style import log_ticks, series, wrap
from gpuprof.render.placement import Placer, ring

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from gpuprof.devices.gpu_table import Ceiling
    from gpuprof.devices.peaks import Peaks
    from gpuprof.render.placement import Placer

MAX_KERNELS = 30
SUFFIXES = (".png", ".svg")
# level, its AI column, name, colour (Okabe-Ito), marker fill: hollow, half, full tell them apart in grey
LEVELS = (
    ("l1", "ai_l1", "L1", "#0072B2", "none"),
    ("l2", "ai_l2", "L2", "#D55E00", "bottom"),
    ("dram", "ai", "DRAM", "#009E73", "full"),
)
_COMPUTE_STYLE = {"fma": "-", "no-fma": "--", "tensor": "-.", "tensor-f16acc": "-."}
_PRECISION_TEXT = {
    "all": "every precision and the tensor cores",
    "fp64": "FP64 only",
    "fp32": "FP32 only",
    "fp16": "FP16 only (CUDA cores)",
    "tensor": "tensor cores only",
}
_BACKING = {"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.75}
_KEY_WIDTH = 118  # characters of a key line: a kernel's name gives way to its values
_PLOT_HEIGHT = 4.8  # inches of the plot area itself


def slug(device: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-") or "device"


@dataclass
class Cluster:
    """Points that coincide on the chart: one number, one line in the key."""

    number: int
    rows: list[Any]


def _levels(frame: pd.DataFrame) -> list[tuple[str, str, str, str, str]]:
    """The levels any point has an intensity for, DRAM always."""
    return [level for level in LEVELS if level[0] == "dram" or frame[level[1]].notna().any()]


def _precisions(frame: pd.DataFrame) -> list[str]:
    return sorted({p for text in frame["precision"] for p in str(text).split("+")})


def _compute_roofs(roofs: list[Ceiling], frame: pd.DataFrame) -> tuple[list[Ceiling], list[str]]:
    """The compute ceilings of the precisions counted, and a note for what the table lacks. Tensor
    work is judged against the tensor type the derive step names, else FP16 with FP32 accumulate."""
    chosen, notes = [], []
    for precision in _precisions(frame):
        if precision == "tensor":
            named = sorted({k for k in frame["tensor_kind"] if k})
            found = [r for r in roofs if f"{r.precision}/{r.kind}" in named]
            if not named:
                found = [r for r in roofs if (r.precision, r.kind) == ("fp16", "tensor")]
                notes += (
                    ["tensor roof: FP16 tensor with FP32 accumulate (the counters do not say which tensor type ran)"]
                    if found
                    else []
                )
        elif precision == "total":  # FLOPs of no known precision (AMD's fp_ret_sse_avx_ops.all)
            found = [r for r in roofs if r.precision in ("fp64", "fp32") and r.kind == "fma"]
            notes += ["FLOPs of no one precision (the counter sums them all): the FP64 and FP32 roofs drawn"] * bool(
                found
            )
        else:
            found = [r for r in roofs if r.precision == precision and r.kind in ("fma", "no-fma")]
        if not found and roofs:
            notes.append(f"no {precision.upper()} compute ceiling known for this device")
        chosen += found
    return chosen, notes


def _memory_roofs(roofs: list[Ceiling], levels: list[tuple[str, ...]]) -> tuple[list[tuple[Ceiling, str]], list[str]]:
    """(ceiling, colour) per level drawn, and a note for each level the peaks lack."""
    if not roofs:
        return [], [
            "no ceilings: no peaks are known for this device (a profile that does not name its GPU: "
            "'gpuprof roofline --peaks GPU' names one)"
        ]
    chosen, notes = [], []
    for level, _, name, colour, _ in levels:
        found = [r for r in roofs if r.kind == level]
        if found:
            chosen += [(r, colour) for r in found]
        elif level != "dram":
            notes.append(
                f"{name}: the device table has no {name} bandwidth for this GPU (NVIDIA publishes "
                f"none), so its {name} points have no roof"
            )
    if not any(r.kind == "dram" for r in roofs):
        origins = ", ".join(sorted({r.origin for r in roofs}))
        notes.append(
            f"no memory ceiling: the {origins} peaks of this device have no bandwidth"
            " (a CPU gets one from 'gpuprof calibrate')"
        )
    return chosen, notes


def _value_text(roof: Ceiling) -> str:
    unit = "byte/second" if roof.unit == "byte/s" else roof.unit.replace("/s", "/second")
    return human(roof.value, unit, 3)


def _roof_note(roof: Ceiling) -> str:
    """'FP32 FMA 19.5 TFLOP/s published, 1410 MHz boost' or, derived, with the formula it came from."""
    clock = f"{roof.clock_mhz:g} MHz {roof.clock}".strip() if roof.clock_mhz else ""
    how = "; ".join(part for part in (roof.formula, clock) if part)
    return f"{roof.name} {_value_text(roof)} {roof.origin}" + (f" ({how})" if how else "")


def _limits(
    frame: pd.DataFrame, compute: list[Ceiling], memory: list[tuple[Ceiling, str]], levels: list[tuple[str, ...]]
) -> tuple[tuple[float, float], tuple[float, float]]:
    ais = [v for level in levels for v in frame[level[1]] if v > 0]
    top = max((c.value for c in compute), default=0)
    ridges = [top / m.value for m, _ in memory if top]
    xlim = (min(ais + ridges) / 4, max(ais + ridges) * 4)
    rates = list(frame["flop_rate"])
    ylim = (min(rates) / 6, max(rates + [top]) * 4)
    return xlim, ylim


def _draw_roofs(ax: Axes, compute: list[Ceiling], memory: list[tuple[Ceiling, str]], xlim: tuple[float, float]) -> None:
    """Memory slopes from the left edge up to the highest compute roof; compute roofs from where
    they meet the fastest memory level to the right edge (NERSC's hierarchical layout)."""
    top = max((c.value for c in compute), default=None)
    fastest = max((m.value for m, _ in memory), default=None)
    for roof, colour in memory:
        end = top / roof.value if top else xlim[1]
        ax.plot([xlim[0], end], [roof.value * xlim[0], roof.value * end], color=colour, linewidth=1.6)
    for roof in compute:
        start = roof.value / fastest if fastest else xlim[0]
        ax.plot(
            [start, xlim[1]],
            [roof.value] * 2,
            color="black",
            linewidth=1.3,
            linestyle=_COMPUTE_STYLE.get(roof.kind, "-"),
        )


def _clusters(ax: Axes, frame: pd.DataFrame) -> list[Cluster]:
    """Points within a few pixels of each other (at DRAM) share a number; numbered left to right."""
    groups: list[tuple[float, float, list[Any]]] = []
    for row in frame.sort_values(["ai", "flop_rate"]).itertuples():
        px, py = ax.transData.transform((row.ai, row.flop_rate))
        for gx, gy, members in groups:
            if abs(px - gx) < 7 and abs(py - gy) < 7:
                members.append(row)
                break
        else:
            groups.append((px, py, [row]))
    return [Cluster(i, members) for i, (_, _, members) in enumerate(groups, 1)]


def _draw_points(
    ax: Axes, frame: pd.DataFrame, levels: list[tuple[str, ...]], styles: dict[str, dict[str, Any]], hierarchical: bool
) -> None:
    """Every kernel's points (joined across levels)."""
    for row in frame.itertuples():
        style = styles[row.op]
        xs = [getattr(row, column) for _, column, *_ in levels if getattr(row, column) > 0]
        if len(xs) > 1:
            ax.plot(xs, [row.flop_rate] * len(xs), color="0.55", linewidth=0.8, zorder=2)
        for _, column, _, colour, fill in levels:
            x = getattr(row, column)
            if x > 0:
                ax.plot(
                    [x],
                    [row.flop_rate],
                    linestyle="",
                    marker=style["marker"],
                    markersize=7,
                    zorder=3,
                    color=colour if hierarchical else style["color"],
                    fillstyle=fill if hierarchical else "full",
                    markeredgewidth=1.3,
                )


def _size_order(member: tuple[str, str]) -> tuple[str, float]:
    op, label = member
    number = label[len(op) :].split()[:1]
    try:
        return op, float(number[0]) if number else 0.0
    except ValueError:
        return op, 0.0


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _cluster_text(rows: list[Any], hierarchical: bool) -> str:
    """'add 6, 12 MB; mul 6 MB' for coincident sizes (labels 'op size unit'); one kernel with its values."""
    if len(rows) == 1:
        row = rows[0]
        ais = [
            f"{getattr(row, column):.3g} {name}" for _, column, name, *_ in reversed(LEVELS) if getattr(row, column) > 0
        ]
        where = f"AI {', '.join(ais)}" if hierarchical else f"AI {row.ai:.3g}"
        clock = f" at {human(row.clock, 'hertz', 3)}" if row.clock > 0 else ""
        values = f": {human(row.flop_rate, 'FLOP/second', 3)}{clock}, {where} FLOP/byte"
        name, _, launches = str(row.label).partition(" (")  # 'gemm (2 launches)': the name gives way
        launches = f" ({launches}" if launches else ""
        return _cut(name, _KEY_WIDTH - len(values) - len(launches)) + launches + values
    by_op: dict[str, list[str]] = {}
    for op, label in sorted(((str(r.op), str(r.label)) for r in rows), key=_size_order):
        by_op.setdefault(op, []).append(label[len(op) :].strip() if label.startswith(op) else label)
    parts = []
    for op, rests in by_op.items():
        units = {r.rpartition(" ")[2] for r in rests}
        if len(units) == 1 and all(_size_order((op, f"{op} {r}"))[1] and " " in r for r in rests):
            parts.append(f"{op} {', '.join(r.rpartition(' ')[0] for r in rests)} {units.pop()}")
        elif len(set(rests)) == 1:  # the same kernel from several runs: 'randomInit<float> (2 launches) ×2'
            parts.append(f"{op} {rests[0]}".strip() + (f" ×{len(rests)}" if len(rests) > 1 else ""))
        else:
            parts.append(f"{op} {', '.join(rests)}".strip())
    return "; ".join(parts) + _span(rows)


def _span(rows: list[Any]) -> str:
    """The values of coincident points, as one or a range: ': 1.9-2.3 GFLOP/s, AI 0.083 FLOP/byte'."""

    def shown(values: list[float], unit: str) -> str:
        low, high = human(min(values), unit, 2), human(max(values), unit, 2)
        return (
            low
            if low == high
            else f"{low.split()[0]}-{high}"
            if low.split()[1:] == high.split()[1:]
            else f"{low}-{high}"
        )

    rates = [float(r.flop_rate) for r in rows]
    ais = [float(r.ai) for r in rows]
    if not rows:
        return ""
    low, high = f"{min(ais):.2g}", f"{max(ais):.2g}"
    return f": {shown(rates, 'FLOP/second')}, AI {low if low == high else f'{low}-{high}'} FLOP/byte"


def _label_or_note(placer: Placer, text: str, spots: list[Any], notes: list[str], first: int, **style: Any) -> None:
    """``text`` at the first of ``spots`` clear of every point and label; where none is, a number
    there instead (``first`` on, after the key's) and the text under the chart as that numbered note."""
    if placer.label(text, spots, force=False, **style) is None:
        number = first + len(notes)
        placer.label(str(number), spots, **{**style, "fontsize": 7, "fontstyle": "italic"})
        notes.append(f"{number}: {text}")


def _label_roofs(
    placer: Placer,
    compute: list[Ceiling],
    memory: list[tuple[Ceiling, str]],
    xlim: tuple[float, float],
    ylim: tuple[float, float],
    first: int,
) -> list[str]:
    """Each compute roof's name and value on its line (coincident roofs share one label), then each
    memory slope's along it, at the first spot clear of the others; returns the numbered notes of
    those that fit nowhere (numbered from ``first``)."""
    notes: list[str] = []
    ax = placer.ax
    fastest = max((m.value for m, _ in memory), default=None)
    groups: list[list[Ceiling]] = []
    for roof in sorted(compute, key=lambda r: -r.value):
        if groups and abs(groups[-1][0].value / roof.value - 1) < 0.005:
            groups[-1].append(roof)
        else:
            groups.append([roof])
    for group in groups:
        value = group[0].value
        text = " = ".join(f"{r.name} ({r.origin})" for r in group) + f": {_value_text(group[0])}"
        start = value / fastest if fastest else xlim[0]
        middle = math.sqrt(max(start, xlim[0]) * xlim[1])
        spots = [((xlim[1], value), (-4, dy), {"ha": "right"}) for dy in (3, -3)]
        spots += [((middle, value), (0, dy), {"ha": "center"}) for dy in (3, -3)]
        _label_or_note(placer, text, spots, notes, first, fontsize=8, bbox=_BACKING)
    top = max((c.value for c in compute), default=ylim[1])
    for roof, colour in sorted(memory, key=lambda pair: pair[0].value):  # the slowest, nearest the points, first
        low = max(xlim[0], ylim[0] / roof.value)
        high = min(top / roof.value, ylim[1] / roof.value, xlim[1])
        if high <= low:
            continue
        (x0, y0), (x1, y1) = ax.transData.transform([(low, roof.value * low), (high, roof.value * high)])
        angle = math.degrees(math.atan2(y1 - y0, x1 - x0))
        spots = []
        for share in (0.06, 0.2, 0.35, 0.5, 0.65, 0.8, 0.13, 0.27, 0.42, 0.57, 0.72, 0.88):  # coarse, then finer
            x = low * (high / low) ** share
            spots += [
                (
                    (x, roof.value * x),
                    (0, dy),
                    {"rotation": angle, "rotation_mode": "anchor", "va": "bottom" if dy > 0 else "top", "ha": "left"},
                )
                for dy in (3, -3)
            ]
        text = f"{roof.name} {_value_text(roof)} ({roof.origin})"
        _label_or_note(placer, text, spots, notes, first, fontsize=8, color=colour, bbox=_BACKING)
    return notes


def _number_points(placer: Placer, clusters: list[Cluster]) -> None:
    """Each cluster's number beside its DRAM point, further out (with a leader) when crowded."""
    for cluster in clusters:
        row = cluster.rows[0]
        radii = (5, 9, 16, 24, 34, 48, 64)
        spots = [((row.ai, row.flop_rate), offset, {}) for radius in radii for offset in ring(radius)]
        placer.label(str(cluster.number), spots, fontsize=8, fontweight="bold")


def _styles(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    return {op: series(i) for i, op in enumerate(dict.fromkeys(frame.sort_values("ai")["op"]))}


def _key(key_ax: Axes, clusters: list[Cluster], styles: dict[str, dict[str, Any]], hierarchical: bool) -> Any:
    """The numbered key: each cluster's marker, number and what it holds."""
    from matplotlib.lines import Line2D

    handles, labels = [], []
    for cluster in clusters:
        style = styles[cluster.rows[0].op]
        handles.append(
            Line2D(
                [],
                [],
                linestyle="",
                marker=style["marker"],
                markersize=6,
                color="0.2" if hierarchical else style["color"],
            )
        )
        text = _cluster_text(cluster.rows, hierarchical)
        labels.append(f"{cluster.number}  {_cut(text, _KEY_WIDTH)}")
    columns = 1 if max(map(len, labels)) > 52 else 2
    return key_ax.legend(
        handles,
        labels,
        loc="upper left",
        bbox_to_anchor=(0, 1),
        borderaxespad=0,
        frameon=False,
        ncols=columns,
        fontsize=8,
        handletextpad=0.3,
        columnspacing=1.5,
        alignment="left",
    )


def _level_legend(ax: Axes) -> None:
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], linestyle="", marker="o", markersize=7, color=colour, fillstyle=fill, markeredgewidth=1.3)
        for _, _, _, colour, fill in LEVELS
    ]
    ax.legend(
        handles,
        [f"AI at {name}" for _, _, name, _, _ in LEVELS],
        loc="upper left",
        bbox_to_anchor=(1.01, 1),
        borderaxespad=0,
        fontsize=8,
        title="points",
        title_fontsize=8,
    )


def _shown(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """At most MAX_KERNELS points, the longest-running first; a note when some are left out."""
    if len(frame) <= MAX_KERNELS:
        return frame, []
    kept = frame.sort_values("time", ascending=False, na_position="last").head(MAX_KERNELS)
    return kept, [
        f"{len(frame) - MAX_KERNELS} more kernels (the shortest) are not drawn: choose with --kernel, --run or --op"
    ]


def figure(
    frame: pd.DataFrame, device: str, peaks: list[Peaks], precision: str = "all", carried: Sequence[Ceiling] = ()
) -> Figure:
    """The roofline chart of one device's points (``gpuprof.derive.roofline.points`` rows) under
    ``peaks``' roofs, those the files carry (``carried``: ``roofline.file_ceilings``) in their place."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    left_out = [f"{row.label}: {row.left_out}" for row in frame.itertuples() if row.left_out]
    frame, notes = _shown(drawable(frame))
    levels = _levels(frame)
    hierarchical = len(levels) > 1
    clock = chart_clock(frame)
    ceilings = at_clock(with_file_ceilings(roofs(peaks), list(carried)), clock)
    compute, compute_notes = _compute_roofs(ceilings, frame)
    memory, memory_notes = _memory_roofs(ceilings, levels)
    xlim, ylim = _limits(frame, compute, memory, levels)

    fig = Figure(figsize=(10, _PLOT_HEIGHT + 2), layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(2, 1, height_ratios=[_PLOT_HEIGHT, 1])
    ax, key_ax = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    key_ax.set_axis_off()
    ax.set(
        xscale="log",
        yscale="log",
        xlim=xlim,
        ylim=ylim,
        xlabel="Arithmetic intensity (FLOP/byte)",
        ylabel="Performance (FLOP/s)",
    )
    counted = _PRECISION_TEXT.get(precision, precision)
    if precision == "all":
        counted += f" (here: {' + '.join(p.upper() if p != 'tensor' else 'tensor' for p in _precisions(frame))})"
    at = f"; roofs at {clock / 1e6:.0f} MHz, the points' clock" if clock else ""
    ax.set_title(f"Roofline: {device}\nFLOPs counted: {counted}{at}", fontsize=10)
    ax.grid(True, which="major", linewidth=0.4, alpha=0.5)
    _draw_roofs(ax, compute, memory, xlim)
    styles = _styles(frame)
    if hierarchical:
        _level_legend(ax)
    log_ticks(ax.xaxis)
    log_ticks(ax.yaxis)
    ax.yaxis.set_major_formatter(_rate_formatter())

    origins = "; ".join(sorted(set(frame["origin"])))
    roof_notes = "; ".join(_roof_note(r) for r in [*compute, *(m for m, _ in memory)]) or "none known"
    notes = [f"Points: {origins}.", f"Ceilings: {roof_notes}.", *compute_notes, *memory_notes, *notes, *left_out]
    fig.get_layout_engine().execute(fig)  # a first layout, so points cluster by where they will sit
    clusters = _clusters(ax, frame)
    notes += [
        f"{c.number} {row.label}: {row.ai_check}"
        for c in clusters
        for row in c.rows
        if isinstance(row.ai_check, str) and row.ai_check
    ]
    key = _key(key_ax, clusters, styles, hierarchical)
    note_text = key_ax.text(
        0,
        0,
        _notes_text(notes, fig),
        transform=key_ax.transAxes,
        fontsize=7,
        color="0.3",
        va="bottom",
        ha="left",
    )
    _fit_key(fig, grid, key, note_text)
    _draw_points(ax, frame, levels, styles, hierarchical)
    numbered = _place_labels(ax, frame, levels, compute, memory, xlim, ylim, clusters)
    if numbered:  # labels that fit nowhere: their notes join the others, the key row grows, all placed again
        note_text.set_text(_notes_text([*notes, *numbered], fig))
        for text in list(ax.texts):
            text.remove()
        fig.set_layout_engine("constrained")
        _fit_key(fig, grid, key, note_text)
        _place_labels(ax, frame, levels, compute, memory, xlim, ylim, clusters)
    return fig


def _notes_text(notes: list[str], fig: Figure) -> str:
    return wrap("\n".join(notes), fig, 7, share=0.88)


def _place_labels(
    ax: Axes,
    frame: pd.DataFrame,
    levels: list[tuple[str, ...]],
    compute: list[Ceiling],
    memory: list[tuple[Ceiling, str]],
    xlim: tuple[float, float],
    ylim: tuple[float, float],
    clusters: list[Cluster],
) -> list[str]:
    """Roof labels and cluster numbers placed clear of the points (any placed before are removed
    first: the layout may have moved); returns the numbered notes of roof labels that fit nowhere."""
    placer = Placer(ax)
    placer.marker_boxes(
        ax.transData.transform((getattr(row, column), row.flop_rate))
        for row in frame.itertuples()
        for _, column, *_ in levels
        if getattr(row, column) > 0
    )
    numbered = _label_roofs(placer, compute, memory, xlim, ylim, len(clusters) + 1)
    _number_points(placer, clusters)
    return numbered


def _rate_formatter() -> Any:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: human(v, "FLOP/second", 3))


def _fit_key(fig: Figure, grid: Any, key: Any, notes: Any) -> None:
    """Give the key row the height its legend and notes need (the margins the layout found kept),
    then fix the layout so labels placed afterwards by measured extents stay where measured."""
    engine = fig.get_layout_engine()
    engine.execute(fig)
    renderer = fig.canvas.get_renderer()
    needed = (key.get_window_extent(renderer).height + notes.get_window_extent(renderer).height) / fig.dpi + 0.15
    chart, key_row = (ax.get_position().height * fig.get_figheight() for ax in fig.axes[:2])
    margins = fig.get_figheight() - chart - key_row
    fig.set_figheight(margins + _PLOT_HEIGHT + needed)
    grid.set_height_ratios([_PLOT_HEIGHT, needed])
    engine.execute(fig)
    fig.set_layout_engine("none")


def save(fig: Figure, paths: list[Path]) -> list[Path]:
    """Write ``fig`` to each of ``paths`` (PNG at 150 dpi; SVG with its text kept as text)."""
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "none"}):  # SVG text stays text: searchable, small
        for path in paths:
            outputs.make_folder(path.parent)
            with outputs.replacing(path, "wb") as handle:
                fig.savefig(handle, format=path.suffix[1:].lower(), dpi=150)
    return paths


def plot_device(
    frame: pd.DataFrame,
    device: str,
    peaks: list[Peaks],
    out_dir: Path,
    precision: str = "all",
    carried: Sequence[Ceiling] = (),
) -> list[Path]:
    """Write ``roofline-<device>.png`` and ``.svg`` for the points of one device."""
    paths = [out_dir / f"roofline-{slug(device)}.{ext}" for ext in ("png", "svg")]
    return save(figure(frame, device, peaks, precision, carried), paths)


def plot(
    frame: pd.DataFrame,
    peaks_by_device: dict[str, list[Peaks]],
    out: Path,
    precision: str = "all",
    carried: dict[str, list[Ceiling]] | None = None,
) -> list[Path]:
    """One chart per device in ``frame``: into directory ``out`` as PNG and SVG, or, when ``out``
    names a .png or .svg file, to that file (``<stem>-<device>`` when there are several devices).
    ``carried``: per device, the ceilings its files carry, drawn in place of the table's."""
    devices = sorted(set(drawable(frame)["device"]))
    as_file = out.suffix.lower() in SUFFIXES
    if out.suffix and not as_file and not out.is_dir():
        raise InputError(f"cannot write a roofline to '{out.name}'", "name a .png or .svg file, or a directory")
    written: list[Path] = []
    with outputs.all_or_none():  # a full disk at the last chart leaves none of them (nor the folder made)
        for device in devices:
            mine, peaks = frame[frame["device"] == device], peaks_by_device.get(device, [])
            own = (carried or {}).get(device, [])
            if not as_file:
                written += plot_device(mine, device, peaks, out, precision, own)
                continue
            path = out if len(devices) == 1 else out.with_name(f"{out.stem}-{slug(device)}{out.suffix}")
            written += save(figure(mine, device, peaks, precision, own), [path])
    return written
