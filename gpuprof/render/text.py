"""Text renderers for DataFrames: aligned table, Markdown, CSV and JSON."""

from __future__ import annotations

import html
import io
import json as _json
import math
from typing import Any

import pandas as pd

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        if value != 0 and (abs(value) >= 1e7 or abs(value) < 1e-3):
            return f"{value:.4g}"
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)


def table(frame: pd.DataFrame, title: str | None = None) -> str:
    """Columns aligned for a terminal; numbers right-aligned."""
    headers = [str(c) for c in frame.columns]
    rows = [[_cell(v) for v in row] for row in frame.itertuples(index=False)]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if num else c.ljust(w)
                         for c, w, num in zip(cells, widths, numeric)).rstrip()

    out = [title] if title else []
    out += [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]
    if not rows:
        out.append("(no rows)")
    return "\n".join(out)


def _md_escape(text: str) -> str:
    return html.escape(text, quote=False).replace("|", "\\|").replace("\n", " ")


def markdown(frame: pd.DataFrame, title: str | None = None) -> str:
    headers = [_md_escape(str(c)) for c in frame.columns]
    out = [f"### {_md_escape(title)}", ""] if title else []
    out.append("| " + " | ".join(headers) + " |")
    out.append("|" + "|".join("---" for _ in headers) + "|")
    for row in frame.itertuples(index=False):
        out.append("| " + " | ".join(_md_escape(_cell(v)) for v in row) + " |")
    return "\n".join(out)


def _csv_safe(value: Any) -> Any:
    """Prefix text a spreadsheet would evaluate as a formula with a quote (OWASP CSV injection)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def csv(frame: pd.DataFrame, title: str | None = None) -> str:
    """RFC 4180 CSV: text cells quoted (so a stray carriage return cannot split a row in a
    spreadsheet), numbers bare, formula-like text neutralised."""
    import csv as _csv

    safe = frame.map(_csv_safe) if len(frame) else frame
    buffer = io.StringIO()
    safe.to_csv(buffer, index=False, quoting=_csv.QUOTE_NONNUMERIC)
    return buffer.getvalue().rstrip("\n")


def json(frame: pd.DataFrame, title: str | None = None) -> str:
    records = _json.loads(frame.to_json(orient="records", double_precision=15))
    return _json.dumps(records, indent=2, ensure_ascii=False)
