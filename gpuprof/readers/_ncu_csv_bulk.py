"""The fast path of the Nsight Compute details-CSV reader: pandas' C parser for a clean table.

A table that is nothing but rows after its header (what ``ncu --csv --page details --log-file``
and ``ncu --import X.ncu-rep --csv`` write) is parsed by ``pandas.read_csv`` in one call, every
field as text, and turned into launches and metrics column by column. Python then does work per
launch, not per row, which is what keeps a million-row file within reach of pandas' own speed.

It is taken only when its result is the one the line-by-line reader gives: every ID is a number,
each launch's rows are together, every row names a metric and has a value (or is a rule row of
the 2023+ layout), and nothing else sits among the rows. Anything else (a tool message or
program output between rows, a short or long row, a line pandas refuses) makes :func:`read`
return False before anything is added, and the line-by-line reader in
:mod:`gpuprof.readers.ncu_csv` takes the file.
"""

from __future__ import annotations

import csv
import warnings
from bisect import bisect_left
from itertools import compress, count, islice, repeat
from operator import ne
from pathlib import Path
from typing import TYPE_CHECKING

from gpuprof.model import Launch

if TYPE_CHECKING:
    from gpuprof.readers.ncu_csv import _Table


def read(table: _Table, path: Path, skip: int) -> bool:
    """Add every row after the first ``skip`` lines of ``path`` to ``table``; False, adding
    nothing, when the rows are not all plain metric and rule rows."""
    import pandas as pd

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)  # a row longer than the header
            frame = pd.read_csv(path, skiprows=skip, header=None, names=range(table.columns), index_col=False,
                                dtype=object, na_filter=False, encoding="utf-8", encoding_errors="replace",
                                engine="c", on_bad_lines="error")
    except (ValueError, OSError, pd.errors.ParserWarning):  # ParserError and EmptyDataError are ValueErrors
        return False
    ids, names = frame[table.i_id].tolist(), frame[table.i_name].tolist()
    if not ids or not all(map(str.isdigit, ids)):
        return False
    starts = [0, *compress(count(1), map(ne, ids, islice(ids, 1, None)))]
    launch_ids = [ids[start] for start in starts]
    if (len(set(launch_ids)) < len(launch_ids) or not "".join(launch_ids).isascii()
            or max(map(len, launch_ids)) > 18):  # a launch in pieces, or IDs that are no plain counts
        return False
    rules = [row for row, name in enumerate(names) if not name] if "" in names else []
    if rules and (table.i_rule is None or not all(frame[table.i_rule].array[row] for row in rules)):
        return False
    kept = _without(rules, len(names))

    def metric_column(i: int) -> list[str]:
        column = frame[i].tolist()
        return column if kept is None else [column[row] for row in kept]

    values = metric_column(table.i_value)
    if "" in values:  # a row cut short, or a metric ncu left empty: the line-by-line reader decides
        return False
    names = names if kept is None else [names[row] for row in kept]
    metrics = table.make_many(names, metric_column(table.i_unit), values)
    bounds = [*starts, len(ids)] if kept is None else [bisect_left(kept, row) for row in [*starts, len(ids)]]
    pieces = list(map(slice, bounds, islice(bounds, 1, None)))
    keys = [key for key, _ in table.attributes]
    fields = zip(*(frame[i].to_numpy()[starts] for _, i in table.attributes)) if keys else repeat(())
    table.launches.update(zip(launch_ids, map(
        Launch, frame[table.i_kernel].to_numpy()[starts].tolist(), map(int, launch_ids), repeat(""), repeat(1),
        map(dict, map(zip, repeat(keys), fields)), map(metrics.__getitem__, pieces))))
    if table.i_section is None:
        table.sections.update((launch_id, {}) for launch_id in launch_ids)
    else:
        sections = metric_column(table.i_section)
        table.sections.update(zip(launch_ids, map(dict.fromkeys, map(sections.__getitem__, pieces))))
    for row in rules:
        table.add_rule(table.launches[ids[row]], [frame[i].array[row] for i in range(table.columns)])
    return True


def _without(rows: list[int], total: int) -> list[int] | None:
    """The row numbers below ``total`` that are not in ``rows`` (sorted); None when none are left out."""
    if not rows:
        return None
    left_out = set(rows)
    return [row for row in range(total) if row not in left_out]


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
