"""Renderers: a DataFrame in, text out, in the format the user asked for.

Commands build a DataFrame (the library's answer) and hand it here; nothing in ``render`` reads
files or runs tools. Markdown escapes kernel names (``void f<float>(T*)``), CSV neutralises cells
a spreadsheet would run as a formula.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from gpuprof.errors import InputError
from gpuprof.render import text

if TYPE_CHECKING:
    import pandas as pd

FORMATS = ("table", "markdown", "csv", "json")
WIDE = "gpuprof.wide"  # Click context meta key: --wide was given


def table_width() -> int | None:
    """The width tables fit while a gpuprof command prints: $COLUMNS, else the terminal's (stdout's,
    or stderr's when stdout is piped into a pager or head), else 80. None (every row on one line)
    with --wide, and for library calls outside a command."""
    import os

    import click

    context = click.get_current_context(silent=True)
    if context is None or context.meta.get(WIDE):
        return None
    if os.environ.get("COLUMNS", "").isdigit():
        return int(os.environ["COLUMNS"])
    for fd in (1, 2):
        try:
            return os.get_terminal_size(fd).columns
        except OSError:
            continue
    return 80


class Renderer(Protocol):
    """One text format of a DataFrame: the whole frame, with ``title`` above it where the format has room."""

    def __call__(self, frame: pd.DataFrame, title: str | None = None) -> str: ...


def renderers() -> dict[str, Renderer]:
    """Every ``--format`` by name; ``table`` fits the terminal (:func:`table_width`)."""
    return {
        "table": lambda frame, title=None: text.table(frame, title, table_width()),
        "markdown": text.markdown,
        "json": text.json,
        # to a terminal, escape sequences in names are written out
        "csv": lambda frame, title=None: text.csv(frame, title, terminal=sys.stdout.isatty()),
    }


def emit(frame: pd.DataFrame, fmt: str = "table", title: str | None = None) -> str:
    """``frame`` as text in ``fmt`` (table, markdown, csv or json); a table fits :func:`table_width`."""
    chosen = renderers()
    if fmt not in chosen:
        raise InputError(f"unknown format '{fmt}'", f"choose one of: {', '.join(FORMATS)}")
    return chosen[fmt](frame, title)


def emit_parts(frame: pd.DataFrame, parts: Sequence[text.Part], fmt: str = "table") -> list[str]:
    """:func:`emit` of several parts of one frame (rows ``start:stop``, a title, the column headers),
    each cell formatted once: the per-launch tables of a run with thousands of launches."""
    if fmt == "table":
        return text.table_parts(frame, parts, table_width())
    if fmt == "markdown":
        return text.markdown_parts(frame, parts)
    return [
        emit(frame.iloc[start:stop].set_axis(list(headers), axis=1), fmt, title)
        for start, stop, title, headers in parts
    ]
