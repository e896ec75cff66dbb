"""The power of every device over a profiled command, with the program's regions shaded.

Input: a profile run with a power series (``gpuprof profile --energy``) and, when the program marked
them, its regions; output: a Matplotlib figure through Agg (:func:`gpuprof.render.compare_plots.png`
turns it into bytes). Time is seconds since the command started. The top-level regions are shaded
(alternating tones, named when there is room); deeper ones would hide each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpuprof.derive.regions import region_frame
from gpuprof.model import Run
from gpuprof.render.chart_style import series, wrap

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SHADES = ("#56B4E9", "#E69F00")  # light blue and orange of the palette, alternating
MOST_NAMED = 12  # region names written on the chart; more are shaded without a name


def power_chart(run: Run) -> Figure | None:
    """Power (W) of each device against time, regions shaded; None when the run has no power series."""
    from matplotlib.figure import Figure

    record = run.environment.get("power")
    if not record or len(record.get("t", [])) < 2:
        return None
    origin = (run.environment.get("energy") or {}).get("window_s", [record["t"][0]])[0]
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    ax = fig.add_subplot()
    for i, (name, trace) in enumerate(record["devices"].items()):
        points = [(t - origin, p) for t, p in zip(trace["t"], trace["power_w"]) if p is not None]
        if points:
            style = {**series(i), "markersize": 3}
            ax.plot(
                [t for t, _ in points],
                [p for _, p in points],
                label=f"{name}{'' if trace['in_use'] else ' (idle)'}",
                **style,
            )
    regions = region_frame(run)
    top = regions[regions["parent"] == ""] if not regions.empty else regions
    if not top.empty:
        begin, _ = run.lookup(["begin"])
        first = dict(zip(run.launch_table["index"].tolist(), begin[:, 0].tolist()))
        for n, (_, row) in enumerate(top.iterrows()):
            start = first[row["launch"]] - origin
            ax.axvspan(start, start + row["wall time (s)"], color=SHADES[n % 2], alpha=0.18, linewidth=0)
            if len(top) <= MOST_NAMED:
                label = f"{row['name']} {row['index']}".strip()
                ax.text(start, 1.0, label, transform=ax.get_xaxis_transform(), fontsize=7, va="bottom", rotation=0)
    ax.set_xlabel("time since the command started (s, CLOCK_MONOTONIC)")
    ax.set_ylabel("power (W)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    title = f"Power per device, sampled every {record.get('interval_s', 0):g} s; top-level regions shaded"
    fig.suptitle(wrap(title, fig, 10), fontsize=10)
    return fig
