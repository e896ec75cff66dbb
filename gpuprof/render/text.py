"""Text renderers for DataFrames: aligned table, Markdown, CSV and JSON."""

from __future__ import annotations

import html
import io
import json as _json
import math
import textwrap
import unicodedata
from typing import TYPE_CHECKING, Any

from gpuprof.errors import printable
from gpuprof.render import layout
from gpuprof.render.layout import Column

if TYPE_CHECKING:
    import pandas as pd

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

# Names come from the files people give gpuprof: escape sequences in them (window title, clipboard
# write, screen clear, right-to-left override) are written out, never sent to the terminal.
visible = printable


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        if value != 0 and (abs(value) >= 1e7 or abs(value) < 1e-3):
            return f"{value:.4g}"
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return visible(str(value))


def cell_texts(frame: pd.DataFrame) -> list[list[str]]:
    """Each column's cells as text, with ' [n]' after the cells ``frame.attrs["marks"]`` ({column:
    {row label: note number}}) points at; the notes are ``frame.attrs["notes"]``."""
    marks = frame.attrs.get("marks", {})
    texts = []
    for name in frame.columns:
        cells = [_cell(v) for v in frame[name]]
        for label, number in marks.get(name, {}).items():
            cells[frame.index.get_loc(label)] += f" [{number}]"
        texts.append(cells)
    return texts


def _columns(frame: pd.DataFrame) -> list[Column]:
    """The frame's columns for :mod:`gpuprof.render.layout`; names that ``frame.attrs["groups"]``
    lists (devices) and that prefix column names are shown once above their columns."""
    import pandas as pd

    groups = frame.attrs.get("groups") or []
    columns = []
    for name, cells in zip(frame.columns, cell_texts(frame)):
        group = next((g for g in groups if str(name).startswith(f"{g} ")), None)
        header = str(name)[len(group) + 1 :] if group else str(name)
        columns.append(
            Column(
                visible(header), cells, pd.api.types.is_numeric_dtype(frame[name]), visible(group) if group else group
            )
        )
    return columns


def table(frame: pd.DataFrame, title: str | None = None, width: int | None = None) -> str:
    """Columns aligned for a terminal, numbers right-aligned, fitting ``width`` (see
    :mod:`gpuprof.render.layout`; None: every row on one line); ``frame.attrs["notes"]`` numbered
    under it."""
    body = layout.render(_columns(frame), len(frame), width, [visible(n) for n in frame.attrs.get("notes", [])])
    title = visible(title) if title else title
    if title and width:
        title = textwrap.fill(title, width, break_long_words=False, break_on_hyphens=False)
    return f"{title}\n{body}" if title else body


def prose(text: str, width: int | None, hanging: bool = True) -> str:
    """Lines of explanation (notes, plans, a paragraph) wrapped to ``width`` like the tables beside
    them, continuation lines indented under their first (``hanging``, else a plain paragraph);
    words (paths, commands) are never cut. None: each line stays whole (a file or pipe, --wide)."""
    if not width:
        return text
    return "\n".join(
        wrapped
        for line in text.splitlines() or [""]
        for wrapped in textwrap.wrap(
            line,
            width,
            subsequent_indent=" " * min(len(line) - len(line.lstrip()) + 4 * hanging, width // 4),
            break_long_words=False,
            break_on_hyphens=False,
        )
        or [""]
    )


def _md_escape(text: str) -> str:
    return visible(html.escape(text, quote=False).replace("|", "\\|").replace("\n", " "))


def markdown(frame: pd.DataFrame, title: str | None = None) -> str:
    headers = [_md_escape(str(c)) for c in frame.columns]
    out = [f"### {_md_escape(title)}", ""] if title else []
    out.append("| " + " | ".join(headers) + " |")
    out.append("|" + "|".join("---" for _ in headers) + "|")
    for row in zip(*cell_texts(frame)):
        out.append("| " + " | ".join(_md_escape(cell) for cell in row) + " |")
    notes = frame.attrs.get("notes", [])
    if notes:
        out += [""] + [f"{n}. {_md_escape(text)}" for n, text in enumerate(notes, 1)]
    return "\n".join(out)


def _csv_safe(value: Any) -> Any:
    """Prefix text a spreadsheet would evaluate as a formula with a quote (OWASP CSV injection). Checked as
    the spreadsheet reads it: after leading blanks, with full-width signs (``＝``, ``＋``) read as ASCII."""
    if isinstance(value, str) and (
        value.startswith(_FORMULA_START) or unicodedata.normalize("NFKC", value.lstrip()[:1]).startswith(_FORMULA_START)
    ):
        return "'" + value
    return value


def csv(frame: pd.DataFrame, title: str | None = None, terminal: bool = False) -> str:
    """RFC 4180 CSV: text cells quoted (so a stray carriage return cannot split a row in a
    spreadsheet), numbers bare, formula-like text neutralised; for a ``terminal``, control
    characters written out as well (piped CSV keeps the names whole)."""
    import csv as _csv

    safe = frame.map(_csv_safe) if len(frame) else frame
    if terminal and len(safe):
        safe = safe.map(lambda value: visible(value) if isinstance(value, str) else value)
        safe.columns = [visible(str(name)) for name in safe.columns]
    buffer = io.StringIO()
    safe.to_csv(buffer, index=False, quoting=_csv.QUOTE_NONNUMERIC)
    return buffer.getvalue().rstrip("\n")


def json(frame: pd.DataFrame, title: str | None = None) -> str:
    records = _json.loads(frame.to_json(orient="records", double_precision=15))
    return _json.dumps(records, indent=2, ensure_ascii=False)
