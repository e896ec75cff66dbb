"""Text, tables and the bar chart for ``gpuprof stalls``: ranked stall reasons, Top-Down shares,
source hot spots and the sentences that explain them, from one :class:`gpuprof.stalls.Findings`.

Nothing here prints: :func:`stall_report` returns the output and the lines meant for stderr, so piped
csv/json stays parseable while people still get the explanations.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from gpuprof.derive.stalls import BASIS_TEXT, explain, hot_spots_frame, profiles_frame
from gpuprof.derive.topdown import BASIS, explain_topdown, topdown_frame
from gpuprof.render import emit, table_width
from gpuprof.render.stall_plot import plot_shares

if TYPE_CHECKING:
    from gpuprof.render.stall_plot import Panel
    from gpuprof.stalls import Findings


def stall_report(
    findings: Findings, fmt: str, show_zero: bool = False, hot_only: bool = False
) -> tuple[str, list[str]]:
    """``(output, stderr lines)`` for ``fmt``. csv/json carry one frame (hot spots with ``hot_only`` or
    when nothing else was found, else stall reasons, else Top-Down) and send the explanations to
    stderr; table/markdown put every table, its basis and the explanations in the output."""
    explanations = [explain(p, findings.hint) for p in findings.profiles]
    explanations += [explain_topdown(b) for b in findings.topdown]
    spot_frames = [hot_spots_frame(spots, name) for name, spots in findings.hot_spots]
    if fmt in ("csv", "json"):
        import pandas as pd

        if hot_only or not (findings.profiles or findings.topdown):
            frame = pd.concat(spot_frames, ignore_index=True) if spot_frames else hot_spots_frame([])
        elif findings.profiles:
            frame = profiles_frame(findings.profiles, show_zero)
        else:
            frame = topdown_frame(findings.topdown)
        return emit(frame, fmt), explanations
    blocks = []
    if findings.profiles and not hot_only:
        for profile in findings.profiles:
            frame = profiles_frame([profile], show_zero)
            # what every row shares goes to the title and headers, so the table is narrower
            frame = frame.drop(columns=["device", "kernel", "basis", "origin", "unit"]).rename(
                columns={"value": f"value ({frame['unit'].iloc[0]})" if len(frame) else "value", "share_pct": "share %"}
            )
            where = f"{profile.device}: " if profile.device else ""
            blocks.append(emit(frame, fmt, title=f"Warp stall reasons (measured), {where}{profile.kernel}"))
        bases = sorted({p.basis for p in findings.profiles})
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


def _fit(line: str) -> str:
    """``line`` wrapped to the width tables fit."""
    width = table_width()
    return textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False) if width else line


def stall_panels(findings: Findings) -> tuple[list[Panel], str, str]:
    """Chart panels (stall reasons if any were found, else Top-Down), the x-axis label and the basis
    footer, so the chart says where its numbers came from."""
    if findings.profiles:
        panels: list[Panel] = [
            (
                f"{p.device}  "
                + (f"[reasons collected: {100 * p.coverage:.1f}% of stalls]  " if p.coverage < 0.95 else "")
                + p.kernel,
                [(s.label, 100 * s.share) for s in p.reasons if s.share > 0],
            )
            for p in findings.profiles
        ]
        bases = sorted({p.basis for p in findings.profiles})
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
