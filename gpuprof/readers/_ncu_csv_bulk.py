"""The fast path of the Nsight Compute details-CSV reader: pandas' C parser for a clean table.

A table that is nothing but rows after its header (what ``ncu --csv --page details --log-file``
and ``ncu --import X.ncu-rep --csv`` write) is parsed by ``pandas.read_csv`` (``CHUNK_ROWS`` rows per call), every
field as text, and turned into launches and metrics column by column. Python then does work per
launch, not per row, which is what keeps a million-row file within reach of pandas' own speed.

It is taken only when its result is the one the line-by-line reader gives: every ID is a number,
each launch's rows are together, every row names a metric and has a value (or is a rule row of
the 2023+ layout), and nothing else sits among the rows. Anything else (a tool message or
program output between rows, a short or long row, a line pandas refuses, a launch whose rows
come back in a later chunk) makes :func:`read` return False, and the line-by-line reader in :mod:`gpuprof.readers.ncu_csv` takes the file. This module
only returns columns (:class:`Rows`); the reader that owns the table builds it from them.
"""

from __future__ import annotations

import csv
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from gpuprof.readers._text import ends_with_newline

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


@dataclass(frozen=True)
class Layout:
    """Where a details table's fields sit in its rows, as the reader found them in the header."""

    columns: int
    i_id: int
    i_kernel: int
    i_name: int
    i_unit: int
    i_value: int
    i_section: int | None
    i_rule: int | None  # only in the 2023+ layout
    launch_columns: list[tuple[str, int]]  # (attribute key, position) of the per-launch columns


# Rows parsed per pandas call: a file of any size is held as text one chunk at a time (the reader
# converts each chunk to numbers before the next is parsed), so memory follows the result, not the file.
CHUNK_ROWS = 1_000_000


def read(path: Path, skip: int, layout: Layout, take: Callable[[Rows], bool]) -> bool:
    """Every row after the first ``skip`` lines of ``path``, ``CHUNK_ROWS`` at a time, as columns
    handed to ``take``; False as soon as a chunk's rows are not all plain metric and rule rows or
    ``take`` refuses them (what was taken is then to be dropped: the caller starts afresh)."""
    import pandas as pd

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)  # a row longer than the header
            with _parse(path, skip, layout.columns) as chunks:
                for frame in chunks:
                    rows = Rows.take(frame, layout)
                    del frame  # the columns not taken
                    if rows is None or not take(rows):
                        return False
    except (ValueError, OSError, pd.errors.ParserWarning):  # ParserError and EmptyDataError are ValueErrors
        return False
    return True


def _parse(path: Path, skip: int, columns: int) -> pd.io.parsers.TextFileReader:
    import pandas as pd

    return pd.read_csv(
        path,
        skiprows=skip,
        header=None,
        names=range(columns),
        index_col=False,
        dtype=object,
        na_filter=False,
        encoding="utf-8",
        encoding_errors="replace",
        engine="c",
        on_bad_lines="error",
        chunksize=CHUNK_ROWS,
    )


@dataclass
class Rows:
    """What the table needs from the parsed rows: per launch its ID, kernel, attributes and the
    range of its metric rows; the metric rows' cells as whole columns; the rule rows whole."""

    launch_ids: list[str]
    kernels: list[str]
    attributes: list[dict[str, str]]
    bounds: np.ndarray  # launch k's metric rows are bounds[k]:bounds[k + 1]
    names: np.ndarray
    units: np.ndarray
    values: np.ndarray
    sections: np.ndarray | None
    rules: list[tuple[str, tuple[str, ...]]]  # (launch ID, the whole row)

    @classmethod
    def take(cls, frame: pd.DataFrame, table: Layout) -> Rows | None:
        """The rows of ``frame``; None unless every row is a plain metric or rule row."""
        import numpy as np

        ids, names = frame[table.i_id].to_numpy(), frame[table.i_name].to_numpy()
        if not len(ids):
            return None
        # Every row whose ID differs from the row before starts a run, so checking the runs' IDs
        # checks every row's: a tool message or a line of program output has an ID of its own.
        starts = np.concatenate(([0], np.flatnonzero(ids[1:] != ids[:-1]) + 1))
        launch_ids = ids[starts].tolist()
        if (
            not all(map(str.isdigit, launch_ids))
            or not "".join(launch_ids).isascii()
            or max(map(len, launch_ids)) > 18
            or len(set(launch_ids)) < len(launch_ids)
        ):
            return None  # not plain counts, or a launch in pieces
        is_rule = names == ""
        rules = np.flatnonzero(is_rule)
        if len(rules) and (table.i_rule is None or not all(frame[table.i_rule].to_numpy()[rules])):
            return None
        kept = ~is_rule

        def metric_column(i: int | None) -> np.ndarray | None:
            if i is None:
                return None
            column = frame[i].to_numpy()
            return column[kept] if len(rules) else column

        values = metric_column(table.i_value)
        if (values == "").any():  # a row cut short, or a metric ncu left empty: the line-by-line reader decides
            return None
        keys = [key for key, _ in table.launch_columns]
        fields = zip(*(frame[i].to_numpy()[starts] for _, i in table.launch_columns)) if keys else repeat(())
        kept_before = np.concatenate(([0], np.cumsum(kept)))
        return cls(
            launch_ids,
            frame[table.i_kernel].to_numpy()[starts].tolist(),
            list(map(dict, map(zip, repeat(keys), fields))),
            kept_before[[*starts, len(ids)]],
            metric_column(table.i_name),
            metric_column(table.i_unit),
            values,
            metric_column(table.i_section),
            list(zip(ids[rules].tolist(), zip(*(frame[i].to_numpy()[rules].tolist() for i in range(table.columns))))),
        )


def skip_for(path: Path, handle: TextIO, columns: int) -> int | None:
    """:func:`read`'s ``skip`` for the rows after the header ``handle`` has just read, or None
    when pandas cannot be given the rest of the file: not UTF-8 (the handle's position is then no
    byte offset), cut off in the middle of a row, or see :func:`data_start`."""
    if handle.encoding not in ("utf-8", "utf-8-sig") or not ends_with_newline(path):
        return None
    return data_start(path, handle.tell(), columns)


def data_start(path: Path, offset: int, columns: int) -> int | None:
    """How many lines the first ``offset`` bytes of ``path`` hold, for ``read``'s ``skip``.

    None (the file is left to the line-by-line reader) when ``offset`` is no byte offset (a text
    handle's ``tell()`` packs the decoder's state above the position when a character was cut),
    when a line before it has an odd number of quotes (pandas would read a field running on into
    the next line), or when the first row has more fields than the header's ``columns`` (pandas
    then spends seconds per megabyte before it warns, where a longer row further down is refused
    at once).
    """
    if offset > path.stat().st_size:
        return None
    with open(path, "rb") as handle:
        lines = handle.read(offset).split(b"\n")
        first = handle.readline()
        while first and not first.strip():
            first = handle.readline()
    if any(line.count(b'"') % 2 for line in lines):
        return None
    try:
        fields = next(csv.reader([first.decode("utf-8", "replace")]), [])
    except csv.Error:  # a field over the csv module's limit
        return None
    return len(lines) - 1 if len(fields) <= columns else None
