"""A self-contained HTML comparison report: the study's tables, charts as embedded PNG, the ceilings
behind every efficiency, and imported kernels.

One file, no external resources (charts are base64 ``data:`` URIs), so it can be mailed or
attached to a ticket. Every text that came from outside (kernel names, file names, device names,
notes) goes through :func:`html.escape`. Tables and chart series are capped; what was trimmed is
returned so the CLI can say so on stderr, with the option that controls it.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpuprof import compare
from gpuprof.render import compare_plots
from gpuprof.render.roofline_plot import slug
from gpuprof.render.text import cell_texts

if TYPE_CHECKING:
    import pandas as pd

    from gpuprof.compare import Comparison
    from gpuprof.workloads.timing import Progress

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1b1b1b;max-width:1500px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ccc}h3{font-size:1.05em}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #d0d0d0;padding:3px 7px}th{background:#f0f2f5;text-align:center}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.note{color:#555;font-size:13px}.trimmed{color:#a04000;font-size:13px}
img{max-width:100%;border:1px solid #e3e3e3;margin:6px 0}
.scroll{overflow-x:auto}
"""


@dataclass(frozen=True)
class Limits:
    """Caps that keep the report small: rows per table and devices per chart and study table."""

    max_rows: int = 200
    max_series: int = 8


@dataclass
class Report:
    html: str
    trimmed: list[str] = field(default_factory=list)


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _grouped_head(columns: list[str], groups: list[str]) -> str:
    """Two header rows: each group (device) spanning its columns, then the quantities."""
    top, bottom = [], []
    for column in columns:
        group = next((g for g in groups if column.startswith(g + " ")), None)
        if group is None:
            top.append([None, column, 1])
        elif top and top[-1][0] == group:
            top[-1][2] += 1
        else:
            top.append([group, group, 1])
        if group is not None:
            bottom.append(f"<th>{_esc(column[len(group) + 1 :])}</th>")
    first = "".join(
        f'<th rowspan="2">{_esc(label)}</th>' if group is None else f'<th colspan="{span}">{_esc(label)}</th>'
        for group, label, span in top
    )
    return f"<tr>{first}</tr><tr>{''.join(bottom)}</tr>"


def table_html(frame: pd.DataFrame, groups: list[str] | None = None) -> str:
    """``frame`` as an HTML table; every header and cell escaped, numbers right-aligned. Columns
    named ``"<group> <quantity>"`` for a group in ``groups`` get a spanning group header; cells
    ``frame.attrs["marks"]`` names get ' [n]', explained by ``frame.attrs["notes"]`` under the table."""
    import pandas as pd

    if frame.empty:
        return '<p class="note">(no rows)</p>'
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    columns = [str(c) for c in frame.columns]
    head = (
        _grouped_head(columns, groups) if groups else "<tr>" + "".join(f"<th>{_esc(c)}</th>" for c in columns) + "</tr>"
    )
    body = []
    for texts in zip(*cell_texts(frame)):
        cells = "".join(
            f'<td class="num">{_esc(t)}</td>' if num else f"<td>{_esc(t)}</td>" for t, num in zip(texts, numeric)
        )
        body.append(f"<tr>{cells}</tr>")
    notes = "".join(f"<li>{_esc(n)}</li>" for n in frame.attrs.get("notes", []))
    return f'<div class="scroll"><table><thead>{head}</thead><tbody>{"".join(body)}</tbody></table></div>' + (
        f'<ol class="note">{notes}</ol>' if notes else ""
    )


def _capped(frame: pd.DataFrame, what: str, limits: Limits, trimmed: list[str], groups: list[str] | None = None) -> str:
    if len(frame) > limits.max_rows:
        message = f"{what}: showing {limits.max_rows} of {len(frame)} rows (raise with --max-rows)"
        trimmed.append(message)
        return table_html(frame.head(limits.max_rows), groups) + f'<p class="trimmed">{_esc(message)}</p>'
    return table_html(frame, groups)


def _image(png: bytes | None, alt: str) -> str:
    if png is None:
        return ""
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{_esc(alt)}" src="data:image/png;base64,{data}">'


def _charts(
    comparison: Comparison, shown: list[str], limits: Limits, trimmed: list[str], progress: Progress | None
) -> list[str]:
    """Efficiency and roofline-relative efficiency against size, best MFLOP/s, one roofline per device
    (measured, the paper's, and imported kernels that have FLOPs, DRAM bytes and a time)."""
    import pandas as pd

    frame = comparison.rows
    say = progress or (lambda phase, done, total: None)
    charts = (
        (
            "FLOP efficiency against size per op",
            lambda: compare_plots.lines_by_op(
                frame, shown, "Efic.%", "Efic. (% of FLOP peak)", "FLOP efficiency against size, one line per device"
            ),
        ),
        (
            "roofline-relative efficiency against size per op",
            lambda: compare_plots.lines_by_op(
                frame, shown, "roof.%", "roof. (% of roofline)", "Roofline-relative efficiency against size"
            ),
        ),
        ("best MFLOP/s per device and op", lambda: compare_plots.best_rate_bars(frame, shown)),
    )
    parts = []
    for number, (alt, draw) in enumerate(charts):
        say(f"chart of {alt}", number, len(charts))
        parts.append(_image(compare_plots.png(draw()), alt))
    points = compare_plots.roofline_points(frame[frame["device"].isin(shown)])
    devices = list(shown)
    imported = comparison.imported_points
    if imported is not None and len(imported):
        found = list(dict.fromkeys(imported["device"]))
        room = max(0, limits.max_series - len(shown))
        if len(found) > room:
            trimmed.append(
                f"rooflines of imported results: showing {room} of {len(found)} devices (raise with --max-series)"
            )
        points = pd.concat([points, imported[imported["device"].isin(found[:room])]], ignore_index=True)
        devices += [d for d in found[:room] if d not in devices]
    for device, png in compare_plots.rooflines(points, comparison.peaks, devices, progress).items():
        parts.append(
            f'<h3 id="roofline-{slug(device)}">Roofline: {_esc(device)}</h3>' + _image(png, f"roofline of {device}")
        )
    return parts


def build(
    comparison: Comparison,
    title: str,
    sources: list[str],
    limits: Limits = Limits(),
    stalls: pd.DataFrame | None = None,
    progress: Progress | None = None,
) -> Report:
    """The whole report as one HTML string, and what was trimmed; ``progress`` hears of each chart
    (they take most of the time: seconds each)."""
    trimmed: list[str] = []
    all_devices = compare.devices(comparison.rows)
    shown = all_devices[: limits.max_series]
    if len(all_devices) > len(shown):
        trimmed.append(
            f"devices: showing {len(shown)} of {len(all_devices)} in tables and charts (raise with --max-series)"
        )
    now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    parts = [
        f"<h1>{_esc(title)}</h1>",
        f'<p class="note">Generated {_esc(now)} by gpuprof from: {_esc(", ".join(sources))}.</p>',
        (
            '<p class="note">MFLOP/s: FLOPs over kernel time. Efic.(%): achieved over the device\'s FLOP '
            "peak for the dtype. roof.%: achieved over the roofline (min of FLOP peak and intensity × "
            "peak bandwidth); bound says which one limits. Where each number comes from is listed under "
            '<a href="#sources">Sources</a>.</p>'
        ),
    ]
    if comparison.rows["J/call"].notna().any():
        parts.append(
            '<p class="note">J/call: measured energy of the timed repeats per call (RAPL or NVML, '
            "whole socket or board); GFLOP/s/W: analytic FLOPs per joule / 1e9. Devices without a "
            "power source have no energy columns; the notes say why.</p>"
        )
    parts.append("<h2>Tables: MFLOP/s and efficiency by size</h2>")
    studies = compare.study_sections(comparison, shown)
    if not studies:
        parts.append('<p class="note">No measured or reference rows match.</p>')
    for heading, table in studies:
        parts.append(f"<h3>{_esc(heading)}</h3>" + _capped(table, heading.split(":")[0], limits, trimmed, shown))
    parts += ['<h2 id="charts">Charts</h2>', *_charts(comparison, shown, limits, trimmed, progress)]
    for heading, table in compare.detail_sections(comparison, stalls, shown):
        anchor = ' id="sources"' if heading.startswith("Sources") else ""
        parts.append(f"<h2{anchor}>{_esc(heading)}</h2>" + _capped(table, heading.split(":")[0], limits, trimmed))
    if comparison.notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_esc(n)}</li>" for n in comparison.notes) + "</ul>")
    document = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>'
        f"<style>{_CSS}</style></head><body>{''.join(parts)}</body></html>\n"
    )
    return Report(document, trimmed)
