"""Renderers: a DataFrame in, text out, in the format the user asked for.

Commands build a DataFrame (the library's answer) and hand it here; nothing in ``render`` reads
files or runs tools. Markdown escapes kernel names (``void f<float>(T*)``), CSV neutralises cells
a spreadsheet would run as a formula.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

FORMATS = ("table", "markdown", "csv", "json")


def emit(frame: pd.DataFrame, fmt: str = "table", title: str | None = None) -> str:
    """``frame`` as text in ``fmt`` (table, markdown, csv or json)."""
    from gpuprof.render import text

    renderers = {"table": text.table, "markdown": text.markdown, "csv": text.csv, "json": text.json}
    if fmt not in renderers:
        from gpuprof.errors import InputError

        raise InputError(f"unknown format '{fmt}'", f"choose one of: {', '.join(FORMATS)}")
    return renderers[fmt](frame, title)


def emit_noted(frame: pd.DataFrame, fmt: str = "table", column: str = "source", title: str | None = None,
               width: int = 100) -> str:
    """``frame`` with its long ``column`` moved under a table or Markdown as numbered notes, so the
    table fits a terminal; CSV and JSON keep the column whole."""
    import textwrap

    if fmt in ("csv", "json") or column not in frame:
        return emit(frame, fmt, title)
    texts = list(dict.fromkeys(frame[column]))
    numbered = frame.drop(columns=[column]).assign(note=[texts.index(s) + 1 for s in frame[column]])
    notes = [textwrap.fill(f"[{i}] {text}", width, subsequent_indent="    ", break_on_hyphens=False,
                           break_long_words=False)
             for i, text in enumerate(texts, 1)]
    return "\n\n".join([emit(numbered, fmt, title), "\n".join(notes)])
