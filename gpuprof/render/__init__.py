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
