"""Text renderers for DataFrames: aligned table, Markdown, CSV and JSON."""

from __future__ import annotations

import html
import io
import json as _json
import math
import textwrap
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gpuprof.errors import printable
from gpuprof.render import layout
from gpuprof.render.layout import Column

if TYPE_CHECKING:
    import pandas as pd

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# One table of several cut from one frame: rows start:stop, its title and its column headers.
Part = tuple[int, int, "str | None", Sequence[str]]

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
    return _table(_columns(frame), len(frame), title, width, frame.attrs.get("notes", []))


def _table(columns: list[Column], rows: int, title: str | None, width: int | None, notes: list[str]) -> str:
    body = layout.render(columns, rows, width, [visible(n) for n in notes])
    title = visible(title) if title else title
    if title and width:
        title = textwrap.fill(title, width, break_long_words=False, break_on_hyphens=False)
    return f"{title}\n{body}" if title else body


def table_parts(frame: pd.DataFrame, parts: Sequence[Part], width: int | None = None) -> list[str]:
    """:func:`table` of each part of ``frame`` (its rows ``start:stop``, its title and column headers),
    each cell formatted once for the whole frame: thousands of small tables without a DataFrame each."""
    import pandas as pd

    texts = cell_texts(frame)
    numeric = [pd.api.types.is_numeric_dtype(frame[name]) for name in frame.columns]
    return [
        _table(
            [Column(visible(h), cells[start:stop], n) for h, cells, n in zip(headers, texts, numeric)],
            stop - start,
            title,
            width,
            [],
        )
        for start, stop, title, headers in parts
    ]


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
    return _markdown(list(map(str, frame.columns)), list(zip(*cell_texts(frame))), title, frame.attrs.get("notes", []))


def markdown_parts(frame: pd.DataFrame, parts: Sequence[Part]) -> list[str]:
    """:func:`markdown` of each part of ``frame``, as :func:`table_parts`."""
    rows = list(zip(*cell_texts(frame)))
    return [_markdown(list(headers), rows[start:stop], title, []) for start, stop, title, headers in parts]


def _markdown(headers: list[str], rows: Sequence[Sequence[str]], title: str | None, notes: list[str]) -> str:
    out = [f"### {_md_escape(title)}", ""] if title else []
    out.append("| " + " | ".join(map(_md_escape, headers)) + " |")
    out.append("|" + "|".join("---" for _ in headers) + "|")
    for row in rows:
        out.append("| " + " | ".join(_md_escape(cell) for cell in row) + " |")
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

    import pandas as pd

    safe = frame
    if len(frame):  # only text can look like a formula: number columns are left as they are
        safe = frame.copy()
        for i in range(frame.shape[1]):
            if not pd.api.types.is_numeric_dtype(frame.iloc[:, i]) or frame.iloc[:, i].dtype == bool:
                safe.isetitem(i, frame.iloc[:, i].map(_csv_safe))
    if terminal and len(safe):
        safe = safe.map(lambda value: visible(value) if isinstance(value, str) else value)
        safe.columns = [visible(str(name)) for name in safe.columns]
    buffer = io.StringIO()
    safe.to_csv(buffer, index=False, quoting=_csv.QUOTE_NONNUMERIC)
    return buffer.getvalue().rstrip("\n")


def json(frame: pd.DataFrame, title: str | None = None) -> str:
    """The rows as a JSON array of objects indented by two, as ``json.dumps(records, indent=2)`` writes
    the records pandas gives (15 significant digits). Written column by column: a column's cells are
    encoded in one call of the standard library's C encoder (its indenting encoder is pure Python), a
    text category once; then each row is one ``%`` of a template. A frame with a list or dict in a
    cell, or no rows, takes the plain way."""
    if not len(frame) or not len(frame.columns) or not frame.columns.is_unique:
        return _plain_json(frame)
    cells = []
    for i in range(frame.shape[1]):
        column = frame.iloc[:, i]
        if _text_categories(column):
            texts = [_json.dumps(name, ensure_ascii=False) for name in column.cat.categories] + ["null"]
            cells.append(list(map(texts.__getitem__, column.cat.codes.tolist())))
            continue
        if column.dtype.kind in "iuf":
            cells.append(_number_cells(column))
            continue
        values = _json.loads(column.to_json(orient="values", double_precision=15))
        if (
            column.dtype.kind == "O"
            and _infer(column) not in _PLAIN
            and any(isinstance(v, (dict, list)) for v in values)
        ):
            return _plain_json(frame)
        # a NUL cannot appear in encoded JSON (strings escape it), so it splits the cells apart again
        cells.append(_json.dumps(values, ensure_ascii=False, separators=("\0", ":"))[1:-1].split("\0"))
    keys = [_json.dumps(str(name), ensure_ascii=False).replace("%", "%%") for name in frame.columns]
    template = "  {\n" + ",\n".join(f"    {key}: %s" for key in keys) + "\n  }"
    return "[\n" + ",\n".join(map(template.__mod__, zip(*cells))) + "\n]"


def _number_cells(column: pd.Series) -> list[str]:
    """Each number of ``column`` as ``json.dumps(json.loads(pandas' JSON))`` writes it: pandas' text
    (15 decimals) read back as a float and written by ``float.__repr__``, as the encoder does, without
    building a list of Python objects for the whole column first; null and infinities as JSON has them."""
    tokens = column.to_json(orient="values", double_precision=15)[1:-1].split(",")
    if column.dtype.kind != "f":
        return tokens  # whole numbers: pandas writes them as Python does
    if "null" in tokens:
        texts = ["null" if t == "null" else repr(float(t)) for t in tokens]
    else:  # builtins mapped over the column: no Python frame per number
        texts = list(map(repr, map(float, tokens)))
    if "inf" in texts or "-inf" in texts:
        texts = [{"inf": "Infinity", "-inf": "-Infinity"}.get(t, t) for t in texts]
    return texts


# What pandas' infer_dtype calls an object column that holds no list or dict.
_PLAIN = {"string", "empty", "integer", "floating", "mixed-integer-float", "boolean", "decimal", "bytes"}


def _infer(column: pd.Series) -> str:
    import pandas as pd

    return pd.api.types.infer_dtype(column, skipna=True)


def _text_categories(column: pd.Series) -> bool:
    import pandas as pd

    return isinstance(column.dtype, pd.CategoricalDtype) and all(isinstance(c, str) for c in column.cat.categories)


def _plain_json(frame: pd.DataFrame) -> str:
    return _json.dumps(_json.loads(frame.to_json(orient="records", double_precision=15)), indent=2, ensure_ascii=False)
