"""Text, tables and the bar chart for ``gpuprof stalls``: ranked stall reasons, Top-Down shares,
source hot spots and the sentences that explain them, from one :class:`gpuprof.stalls.Findings`.

Nothing here prints: :func:`stall_report` returns the output and the lines meant for stderr, so piped
csv/json stays parseable while people still get the explanations.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from gpuprof.derive.stalls import BASIS_TEXT, UNIT, hot_spots_frame, launch_groups, ranked_frame
from gpuprof.derive.stalls import explanations as explanations_of
from gpuprof.derive.topdown import BASIS, explain_topdown, topdown_frame
from gpuprof.render import emit, emit_parts, table_width
from gpuprof.render.stall_plot import plot_shares

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from gpuprof.render.stall_plot import Panel
    from gpuprof.stalls import Findings


def stall_report(
    findings: Findings, fmt: str, show_zero: bool = False, hot_only: bool = False
) -> tuple[str, list[str]]:
    """``(output, stderr lines)`` for ``fmt``. csv/json carry one frame (hot spots with ``hot_only`` or
    when nothing else was found, else stall reasons, else Top-Down) and send the explanations to
    stderr; table/markdown put every table, its basis and the explanations in the output. The stall
    rankings stay columns up to here: one frame for all launches, each cell formatted once."""
    import pandas as pd

    explanations = [line for table in findings.stalls for line in explanations_of(table, findings.hint)]
    explanations += [explain_topdown(b) for b in findings.topdown]
    spot_frames = [hot_spots_frame(spots, name) for name, spots in findings.hot_spots]
    if fmt in ("csv", "json"):
        if hot_only or not (findings.stalls or findings.topdown):
            frame = pd.concat(spot_frames, ignore_index=True) if spot_frames else hot_spots_frame([])
        elif findings.stalls:
            frame = _ranked(findings.stalls, show_zero)
        else:
            frame = topdown_frame(findings.topdown)
        return emit(frame, fmt), explanations
    blocks = []
    if findings.stalls and not hot_only:
        blocks += _per_launch(findings.stalls, show_zero, fmt)
        bases = sorted({b for table in findings.stalls for b in table["basis"].unique().tolist()})
        blocks.append("\n".join(_fit(f"Basis ({b}): {BASIS_TEXT[b]}.") for b in bases))
    if findings.topdown and not hot_only:
        blocks.append(emit(topdown_frame(findings.topdown), fmt, title="CPU Top-Down level 1"))
        blocks.append(_fit(f"Basis: {BASIS}."))
    for (name, _), frame in zip(findings.hot_spots, spot_frames):
        blocks.append(
            emit(
                frame.drop(columns=["kernel", "origin"]),
                fmt,
                title=f"Source hot spots (PC sampling, SASS, measured), {name}",
            )
        )
    if explanations and not hot_only:
        if fmt == "markdown":  # kernel names such as f<float>(T*) must not become HTML tags
            import html

            explanations = [html.escape(line, quote=False) for line in explanations]
        blocks.append("\n".join(map(_fit, explanations)))
    return "\n\n".join(blocks), []


def _ranked(tables: list[pd.DataFrame], show_zero: bool) -> pd.DataFrame:
    import pandas as pd

    frames = [ranked_frame(table, show_zero) for table in tables]
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


def _launches(table: pd.DataFrame, keep: np.ndarray) -> tuple[list[int], list[int], np.ndarray]:
    """Per launch of a stall table: where its rows among the ``keep`` ones start and stop, and its first
    row in the table."""
    import numpy as np

    group = launch_groups(table)
    heads = np.flatnonzero(np.r_[True, np.diff(group) != 0])
    kept = group[keep]
    every = np.arange(len(heads))
    return np.searchsorted(kept, every, "left").tolist(), np.searchsorted(kept, every, "right").tolist(), heads


def _per_launch(tables: list[pd.DataFrame], show_zero: bool, fmt: str) -> list[str]:
    """One table per launch (a launch without stall cycles: an empty one), titled with its device and
    kernel; what every row of a launch shares (device, kernel, basis, unit) is in its title and headers."""
    import numpy as np

    out = []
    for table in tables:
        share = table["share"].to_numpy()
        starts, stops, heads = _launches(table, ~np.isnan(share) if show_zero else share > 0)
        devices, kernels, bases = (table[c].take(heads).tolist() for c in ("device", "kernel", "basis"))
        parts = [
            (
                start,
                stop,
                f"Warp stall reasons (measured), {f'{device}: ' if device else ''}{kernel}",
                ["rank", "reason", "label", f"value ({UNIT[basis]})" if stop > start else "value", "share %"],
            )
            for start, stop, device, kernel, basis in zip(starts, stops, devices, kernels, bases)
        ]
        frame = ranked_frame(table, show_zero)[["rank", "reason", "label", "value", "share_pct"]]
        out += emit_parts(frame, parts, fmt)
    return out


def _fit(line: str) -> str:
    """``line`` wrapped to the width tables fit."""
    width = table_width()
    return textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False) if width else line


def stall_panels(findings: Findings) -> tuple[list[Panel], str, str]:
    """Chart panels (stall reasons if any were found, else Top-Down), the x-axis label and the basis
    footer, so the chart says where its numbers came from."""
    if findings.stalls:
        panels: list[Panel] = []
        for table in findings.stalls:
            share = table["share"].to_numpy()
            positive = share > 0
            starts, stops, heads = _launches(table, positive)
            labels, percents = table["label"][positive].tolist(), (100 * share[positive]).tolist()
            for start, stop, device, kernel, coverage in zip(
                starts, stops, *(table[c].take(heads).tolist() for c in ("device", "kernel", "coverage"))
            ):
                panels.append(
                    (
                        f"{device}  "
                        + (f"[reasons collected: {100 * coverage:.1f}% of stalls]  " if coverage < 0.95 else "")
                        + kernel,
                        list(zip(labels[start:stop], percents[start:stop])),
                    )
                )
        bases = sorted({b for table in findings.stalls for b in table["basis"].unique().tolist()})
        footer = "Basis: " + "; ".join(BASIS_TEXT[b] for b in bases) + ". Origin: measured."
        return panels, "% of stall cycles", footer
    panels = [(f"{b.workload} {b.scope}".strip(), [(s.label, s.percent) for s in b.shares]) for b in findings.topdown]
    return panels, "% of pipeline slots", f"Basis: {BASIS}. Origin: measured."


def write_stall_plot(findings: Findings, path: str | Path) -> str:
    """Write the bar chart to ``path`` (.png or .svg) and return the line that tells the user where,
    and how many panels were left out of it."""
    panels, xlabel, footer = stall_panels(findings)
    written, left_out = plot_shares(panels, path, xlabel, footer)
    return f"plot written to {written}" + (f" ({left_out} panels left out; use --kernel)" if left_out else "")
