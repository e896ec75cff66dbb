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
import os
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain, repeat
from operator import getitem, itemgetter
from pathlib import Path
from sys import intern
from typing import TYPE_CHECKING, TextIO

from gpuprof.model import tables
from gpuprof.readers import _cores
from gpuprof.readers._text import column_numbers, ends_with_newline

try:  # the C scanner: built by pip where a C compiler is found
    from gpuprof.readers import _ncu_csv_native
except ImportError:
    _ncu_csv_native = None

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa


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
    # positions of the rule rows' name, type, description, speedup type and speedup (None: not in the header)
    rule_cells: tuple[int | None, ...] = ()

    @property
    def metric_width(self) -> int:
        """The fields of a metric row: the header's, or in the 2023+ layout up to the value and one
        more (its rule columns only rule rows fill)."""
        return self.columns if self.i_rule is None else max(self.i_value, self.i_name, self.i_unit) + 2

    @property
    def launch_fields(self) -> list[int]:
        """The fields taken from a launch's first row: its kernel, then its attribute columns."""
        return [self.i_kernel, *(i for _, i in self.launch_columns)]


# Rows parsed per pandas call: a file of any size is held as text one chunk at a time (the reader
# converts each chunk to numbers before the next is parsed), so memory follows the result, not the file.
CHUNK_ROWS = 1_000_000
# Rows per chunk of a file read into the store chunk by chunk (:func:`read_chunks`): its parsed text
# is the larger part of what such an import holds at once.
STREAM_CHUNK_ROWS = 250_000


def read(path: Path, skip: int, layout: Layout, take: Callable[[Rows], bool]) -> bool:
    """Every row after the first ``skip`` lines of ``path``, ``CHUNK_ROWS`` at a time, as columns
    handed to ``take``; False as soon as a chunk's rows are not all plain metric and rule rows or
    ``take`` refuses them (what was taken is then to be dropped: the caller starts afresh).

    gpuprof's own scanner in C parses the file when it was built and takes every row
    (:func:`_native_chunks`); pyarrow's multi-threaded CSV reader when that is installed and takes
    every row (:func:`_arrow_chunks`); pandas' C parser otherwise, each with the same result."""
    chunks = _native_chunks(path, skip, layout)
    if chunks is None:
        chunks = _arrow_chunks(path, skip, layout)
    if chunks is not None:
        return all(rows is not None and take(rows) for rows in chunks)
    return _read_pandas(path, skip, layout, take)


def read_chunks(path: Path, skip: int, layout: Layout, take: Callable[[Rows], bool]) -> bool:
    """:func:`read` by pandas' chunks whatever the file's size (a file read chunk by chunk into a
    store: nothing but the chunk at hand is held), ``STREAM_CHUNK_ROWS`` at a time."""
    return _read_pandas(path, skip, layout, take, STREAM_CHUNK_ROWS)


def _read_pandas(path: Path, skip: int, layout: Layout, take: Callable[[Rows], bool], rows: int | None = None) -> bool:
    import pandas as pd

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)  # a row longer than the header
            with _parse(path, skip, layout.columns, rows or CHUNK_ROWS) as chunks:
                for frame in chunks:
                    rows = Rows.take(frame, layout)
                    del frame  # the columns not taken
                    if rows is None or not take(rows):
                        return False
    except (ValueError, OSError, pd.errors.ParserWarning):  # ParserError and EmptyDataError are ValueErrors
        return False
    return True


# Files up to this size go to pyarrow whole (its table holds about a third of the file's bytes: the
# repeated fields dictionary-encoded); larger ones to pandas' chunks, so that memory follows the result.
ARROW_MAX_BYTES = 1 << 30


# The C scanner splits a file into parts of at least SCAN_PART_BYTES, one per core (SCAN_THREADS
# when set), scanned on threads of their own and merged in file order.
SCAN_PART_BYTES = 16 << 20
SCAN_THREADS: int | None = None


def scan(
    path: Path, skip: int, layout: Layout, threads: int | None = None, part_bytes: int | None = None
) -> dict | str | None:
    """The C scanner's columns of the rows after the first ``skip`` lines of ``path``, or why it
    leaves them to the line-by-line reader (a str); None when it was not built or the layout puts
    a launch column after the metric rows' last field. On ``threads`` threads (default: one per
    core, or ``SCAN_THREADS``), in parts of ``part_bytes`` (default ``SCAN_PART_BYTES``)."""
    wanted = layout.launch_fields
    if _ncu_csv_native is None or max(layout.i_id, layout.i_section or 0, *wanted) >= layout.metric_width:
        return None
    with open(path, "rb") as handle, _cores.held():
        return _ncu_csv_native.scan(
            handle.fileno(),
            _offset_of_line(path, skip),
            layout.columns,
            layout.metric_width,
            layout.i_id,
            layout.i_name,
            layout.i_unit,
            layout.i_value,
            -1 if layout.i_section is None else layout.i_section,
            -1 if layout.i_rule is None else layout.i_rule,
            wanted,
            threads or SCAN_THREADS or len(os.sched_getaffinity(0)),
            part_bytes or SCAN_PART_BYTES,
        )


def _native_chunks(path: Path, skip: int, layout: Layout) -> list[Rows | None] | None:
    """The rows as :func:`read` hands them on, parsed by the C scanner (:mod:`_ncu_csv_native`,
    one pass over the file with every repeated field held once); None (pyarrow or pandas then
    parse) when it was not built or the file is over ``ARROW_MAX_BYTES``; ``[None]`` when it
    leaves the rows to the line-by-line reader (a quoted line break, a stray quote, a row of
    another length, a metric without a name or value, no UTF-8: see the scanner), which reads
    such a file as the reference does, where pyarrow's and pandas' readings of stray quotes
    can differ from it."""
    if path.stat().st_size > ARROW_MAX_BYTES:
        return None
    scanned = scan(path, skip, layout)
    if scanned is None:
        return None
    if isinstance(scanned, str) or not scanned["metric_rows"]:
        return [None]  # why, in the str: the line-by-line reader decides, as the reference
    return [Rows.from_scan(scanned, layout)]


def _arrow_chunks(path: Path, skip: int, layout: Layout) -> list[Rows | None] | None:
    """The rows as :func:`read` hands them on, ``CHUNK_ROWS`` at a time, parsed by pyarrow; None
    when pyarrow is not installed, the file is over ``ARROW_MAX_BYTES``, or pyarrow does not read
    every row as pandas does (not UTF-8, a quoted line break, a row of another length than the
    metric rows' but a rule row): pandas then parses it.

    Every field but the value is read dictionary-encoded (the kernel, section, metric and unit of
    a million rows are a few hundred strings), the values as text turned into numbers in one cast.
    In the 2023+ layout the metric rows are read as rows of 16 fields and the rule rows (20 fields,
    a few per launch) come back through the invalid-row handler, in file order: that layout is
    parsed on one thread.
    """
    try:
        import pyarrow as pa
        from pyarrow import csv as arrow_csv
    except ImportError:
        return None
    if path.stat().st_size > ARROW_MAX_BYTES:
        return None
    names = [str(i) for i in range(layout.metric_width)]
    text, codes = pa.string(), pa.dictionary(pa.int32(), pa.string())
    rules: list[tuple[int, list[str]]] = []  # (the rule row's number among the rows, its fields)

    def other_row(row: arrow_csv.InvalidRow) -> str:
        fields = _rule_fields(row.text, layout)
        if fields is None or row.number is None:
            return "error"  # a row of another length that is no rule row: pandas decides
        rules.append((row.number - 1, fields))
        return "skip"

    try:
        with pa.OSFile(str(path)) as source, _cores.held():
            source.seek(_offset_of_line(path, skip))
            table = arrow_csv.read_csv(
                source,
                read_options=arrow_csv.ReadOptions(column_names=names, use_threads=layout.i_rule is None),
                parse_options=arrow_csv.ParseOptions(invalid_row_handler=other_row),
                convert_options=arrow_csv.ConvertOptions(
                    column_types={name: text if i == layout.i_value else codes for i, name in enumerate(names)},
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
    except (pa.ArrowException, OSError):  # not UTF-8, a quote left open ...
        return None
    if not table.num_rows:
        return None
    try:
        return [Rows.from_arrow(table.unify_dictionaries(), layout, rules)]
    except _PandasDecides:
        return None


class _PandasDecides(Exception):
    """Rows that the pyarrow path leaves to pandas' parser and :meth:`Rows.take` to judge."""


def _rule_fields(line: str, layout: Layout) -> list[str] | None:
    """The fields of a rule row of the 2023+ layout (no metric name, a rule description), else None."""
    if layout.i_rule is None:
        return None
    try:
        fields = next(csv.reader([line]), [])
    except csv.Error:
        return None
    if len(fields) != layout.columns or fields[layout.i_name] or not fields[layout.i_rule]:
        return None
    return fields


def _offset_of_line(path: Path, line: int) -> int:
    """The byte offset at which line ``line`` (from 0) of ``path`` starts."""
    with open(path, "rb") as handle:
        for _ in range(line):
            handle.readline()
        return handle.tell()


def _parse(path: Path, skip: int, columns: int, rows: int) -> pd.io.parsers.TextFileReader:
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
        chunksize=rows,
    )


@dataclass
class RuleRows:
    """A chunk's rule rows (ncu's advice): each one's launch (its place among the chunk's launches,
    in file order) and the code of its cells among ``cells``, the distinct (name, type,
    description, speedup type, speedup) the rows hold, '' for a column the header or a row lacks."""

    launches: np.ndarray
    codes: np.ndarray
    cells: list[tuple[str, ...]]

    def __len__(self) -> int:
        return len(self.launches)

    @classmethod
    def of_rows(cls, rows: list[tuple[str, Sequence[str]]], launch_ids: list[str], layout: Layout) -> RuleRows:
        """Of (launch ID, the whole row) each, the launch one of ``launch_ids``."""
        import numpy as np

        place = {launch_id: k for k, launch_id in enumerate(launch_ids)}
        cells = [rule_cells(row, layout.rule_cells) for _, row in rows]
        found = dict.fromkeys(cells)
        for code, cell in enumerate(found):
            found[cell] = code
        return cls(
            np.fromiter(map(place.__getitem__, map(itemgetter(0), rows)), dtype=np.int64, count=len(rows)),
            np.fromiter(map(found.__getitem__, cells), dtype=np.int64, count=len(cells)),
            list(found),
        )

    @classmethod
    def of_codes(cls, codes: np.ndarray, strings: list[list[str]], layout: Layout) -> RuleRows:
        """Of the C scanner's: per rule row its launch, then the code of each field among ``strings``
        (the field's column's distinct strings). The rows' distinct cells are found on codes, a
        column at a time, without a string per row."""
        import numpy as np

        key = tables.row_codes([codes[:, 1 + i] for i in layout.rule_cells if i is not None], len(codes))
        firsts = np.unique(key, return_index=True)[1]
        cells = [
            tuple("" if i is None else strings[i][code] for i, code in zip(layout.rule_cells, row))
            for row in codes[firsts][:, [1 + (i or 0) for i in layout.rule_cells]].tolist()
        ]
        return cls(codes[:, 0].astype(np.int64), key, cells)


def rule_cells(row: Sequence[str], cells: Sequence[int | None]) -> tuple[str, ...]:
    """The rule cells (:attr:`Layout.rule_cells`) of one rule row, '' where the header or the row lacks one."""
    return tuple(row[i] if i is not None and i < len(row) else "" for i in cells)


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
    values: np.ndarray | dict[int, str]  # the value cells as text (see numbers)
    sections: np.ndarray | pd.Categorical | None
    rules: RuleRows
    numbers: np.ndarray | None = None  # the values converted already; ``values`` then the non-finite ones' text
    distinct_attributes: list[dict[str, str]] | None = None  # each dict of ``attributes`` once, where known

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
        if not _plain_launch_ids(launch_ids):
            return None
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
        # the repeated text held once: one string object per distinct value, as pyarrow's dictionaries give
        fields = (
            zip(*(map(intern, frame[i].to_numpy()[starts]) for _, i in table.launch_columns)) if keys else repeat(())
        )
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
            RuleRows.of_rows(
                list(
                    zip(ids[rules].tolist(), zip(*(frame[i].to_numpy()[rules].tolist() for i in range(table.columns))))
                ),
                launch_ids,
                table,
            ),
        )

    @classmethod
    def from_arrow(cls, table: pa.Table, layout: Layout, rules: list[tuple[int, list[str]]]) -> Rows | None:
        """The rows of pyarrow's ``table`` (the metric rows, every field but the value in one
        dictionary per column) and of the ``rules`` read beside it (each with its number among all
        rows), as :meth:`take` gives them for the same rows; None where :meth:`take` gives None.
        Raises _PandasDecides for rows this does not judge (few files have them)."""
        import numpy as np
        import pyarrow as pa

        def coded(i: int) -> tuple[np.ndarray, np.ndarray]:  # (a code per row, the strings coded)
            column = table.column(str(i))
            codes = np.concatenate([chunk.indices.to_numpy(zero_copy_only=False) for chunk in column.chunks])
            return codes, column.chunk(0).dictionary.to_numpy(zero_copy_only=False)

        ids, id_names = coded(layout.i_id)
        if len(rules):  # the rule rows' IDs put back among the metric rows', where the file has them
            code_of = {name: code for code, name in enumerate(id_names.tolist())}
            rule_ids = [code_of.get(fields[layout.i_id], -1) for _, fields in rules]
            if min(rule_ids) < 0:
                raise _PandasDecides  # a launch of rule rows only
            at = np.array([number - k for k, (number, _) in enumerate(rules)])
            ids = np.insert(ids, at, rule_ids)
            is_rule = np.insert(np.zeros(table.num_rows, dtype=bool), at, True)
        starts = np.concatenate(([0], np.flatnonzero(ids[1:] != ids[:-1]) + 1))
        launch_ids = id_names[ids[starts]].tolist()
        if not _plain_launch_ids(launch_ids):
            return None
        if len(rules):
            kept_before = np.concatenate(([0], np.cumsum(~is_rule)))  # metric rows before each row
            first_rows = kept_before[starts + 1] - 1  # each launch's first metric row up to its first row
            first_rules = np.flatnonzero(is_rule[starts])  # launches whose first row is a rule row
            rule_at = np.cumsum(is_rule) - 1  # at a rule row, its place in rules
            bounds = kept_before[[*starts, len(ids)]]
        else:
            first_rows, first_rules, bounds = starts, np.zeros(0, dtype=np.int64), np.append(starts, len(ids))

        at_first = pa.array(first_rows % max(table.num_rows, 1))  # -1 (a rule row before any): replaced below

        def first_fields(i: int) -> list[str]:  # field i of each launch's first row
            column = table.column(str(i)).take(at_first).combine_chunks()  # the launches' rows alone
            names = column.dictionary.to_numpy(zero_copy_only=False)
            out = names[column.indices.to_numpy(zero_copy_only=False)]
            for k in first_rules.tolist():
                out[k] = rules[rule_at[starts[k]]][1][i]
            return out.tolist()

        metric_names, name_strings = coded(layout.i_name)
        if np.isin(metric_names, np.flatnonzero(name_strings == "")).any():
            raise _PandasDecides  # a row of the metric rows' length without a metric name
        numbers, texts = _numbers(table.column(str(layout.i_value)))
        keys = [key for key, _ in layout.launch_columns]
        fields = zip(*(first_fields(i) for _, i in layout.launch_columns)) if keys else repeat(())
        sections = None if layout.i_section is None else _categorical(*coded(layout.i_section))
        return cls(
            launch_ids,
            first_fields(layout.i_kernel),
            list(map(dict, map(zip, repeat(keys), fields))),
            bounds,
            _categorical(metric_names, name_strings),
            _categorical(*coded(layout.i_unit)),
            texts,
            sections,
            RuleRows.of_rows([(fields[layout.i_id], fields) for _, fields in rules], launch_ids, layout),
            numbers,
        )

    @classmethod
    def from_scan(cls, scanned: dict, layout: Layout) -> Rows | None:
        """The rows of the C scanner's columns (``_ncu_csv_native.scan``), as :meth:`take` gives
        them for the same rows; None where :meth:`take` gives None."""
        import numpy as np
        import pandas as pd

        strings = scanned["strings"]
        ids = np.frombuffer(scanned["ids"], dtype=np.int32)
        # The scanner holds each ID some row has, coded in order of first appearance: as many IDs
        # as launches means each launch has its own, and the IDs in order are the launches'.
        launch_ids = strings[layout.i_id]
        if len(launch_ids) != len(ids) or not _plain_launch_ids(launch_ids, distinct=True):
            return None
        wanted = layout.launch_fields
        firsts = np.frombuffer(scanned["firsts"], dtype=np.int32).reshape(len(ids), len(wanted))
        kernels = np.array(strings[layout.i_kernel], dtype=object)[firsts[:, 0]].tolist()
        attributes, distinct_attributes = _attribute_dicts(
            firsts[:, 1:], [key for key, _ in layout.launch_columns], [strings[i] for i in wanted[1:]]
        )
        rows = scanned["metric_rows"]
        numbers = np.frombuffer(scanned["numbers"], dtype=np.float64).copy()
        others = np.frombuffer(scanned["others"], dtype=np.int64).reshape(-1, 2)
        texts = {}
        if len(others):  # the cells that are no plain decimal, each distinct one read as the other parsers read it
            distinct = column_numbers(scanned["texts"])
            distinct[~np.isfinite(distinct)] = np.nan
            numbers[others[:, 0]] = distinct[others[:, 1]]
            kept = np.isnan(distinct[others[:, 1]])  # no finite number: its text stays
            text_of = np.array(scanned["texts"], dtype=object)
            texts = dict(zip(others[kept, 0].tolist(), text_of[others[kept, 1]].tolist()))

        def coded(i: int, key: str) -> pd.Categorical:  # the scanner's codes: in order of first appearance already
            return pd.Categorical.from_codes(
                np.frombuffer(scanned[key], dtype=np.int32), np.array(strings[i], dtype=object), validate=False
            )

        return cls(
            launch_ids,
            kernels,
            attributes,
            np.append(np.frombuffer(scanned["starts"], dtype=np.int64), rows),
            coded(layout.i_name, "names"),
            coded(layout.i_unit, "units"),
            texts,
            None if layout.i_section is None else coded(layout.i_section, "sections"),
            RuleRows.of_codes(
                np.frombuffer(scanned["rules"], dtype=np.int32).reshape(-1, 1 + layout.columns), strings, layout
            ),
            numbers,
            distinct_attributes,
        )


def _attribute_dicts(
    codes: np.ndarray, keys: list[str], strings: list[list[str]]
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Each launch's attributes from its row of ``codes`` (one column per key, coding ``strings``):
    one dict per distinct row, shared by the launches that have it; and those dicts. Launches in a
    row mostly have the same attributes, so only the rows that differ from the row before are
    looked up."""
    import numpy as np

    if not len(codes):
        return [], []
    starts = np.concatenate(([0], np.flatnonzero((codes[1:] != codes[:-1]).any(axis=1)) + 1))
    made: dict[tuple[int, ...], dict[str, str]] = {}
    runs = [
        made.get(row) or made.setdefault(row, dict(zip(keys, map(getitem, strings, row))))
        for row in map(tuple, codes[starts].tolist())
    ]
    lengths = np.diff(np.append(starts, len(codes))).tolist()
    return list(chain.from_iterable(map(repeat, runs, lengths))), list(made.values())


def _plain_launch_ids(launch_ids: list[str], distinct: bool = False) -> bool:
    """Whether the IDs of the runs of rows are plain counts, each run a launch of its own (a tool
    message or program output has an ID of its own; a launch in pieces comes back); ``distinct``
    when the caller knows no ID to come twice. Tested on all of them joined (ASCII digits)."""
    lengths = list(map(len, launch_ids))
    joined = "".join(launch_ids)
    return (
        bool(lengths)
        and joined.isascii()
        and joined.isdigit()
        and min(lengths) > 0
        and max(lengths) <= 18
        and (distinct or len(set(launch_ids)) == len(launch_ids))
    )


def _categorical(codes: np.ndarray, names: np.ndarray) -> pd.Categorical:
    """Coded strings as a categorical whose categories come in order of first appearance, as
    :func:`gpuprof.readers._text.metric_columns` makes them of the strings themselves. pyarrow's
    unified dictionary is already in that order (each block's strings in the order met, blocks in
    file order), which one pass checks; otherwise the codes are factorized."""
    import numpy as np
    import pandas as pd

    if len(codes) and len(names) and codes[0] == 0:
        highest = np.maximum.accumulate(codes)
        if highest[-1] == len(names) - 1 and (np.diff(highest) <= 1).all():
            return pd.Categorical.from_codes(codes, names, validate=False)
    order, first = pd.factorize(codes)
    return pd.Categorical.from_codes(order, names[first])


def _numbers(column: pa.ChunkedArray) -> tuple[np.ndarray, dict[int, str]]:
    """The value cells as :func:`gpuprof.readers._text.number` reads them (NaN for None), and the
    text of each cell that is no finite number. Plain decimals (the
    thousands separators dropped) are cast at once; only the rest (``28.05%``, ``n/a``, names of
    policies) go through Python."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    for separators in (False, True):  # as it is, then without thousands separators
        try:
            numbers = _cast(column, separators)
        except pa.ArrowInvalid:  # a cell no float (''; 28.05%; n/a): cell by cell below
            continue
        # Arrow reads every decimal Python's float() reads the same (plus 'inf', 'nan': no number)
        texts = {}
        if not np.isfinite(numbers).all():
            rest = np.flatnonzero(~np.isfinite(numbers))
            numbers[rest] = np.nan
            texts = dict(zip(rest.tolist(), column.take(rest).to_pylist()))
        return numbers, texts
    if pc.any(pc.equal(column, "")).as_py():
        raise _PandasDecides  # a metric without a value
    plain_text = pc.replace_substring(column, ",", "")
    plain = pc.match_substring_regex(plain_text, r"^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$")
    numbers = pc.cast(pc.if_else(plain, plain_text, "0"), pa.float64()).to_numpy().copy()
    rest = np.flatnonzero(~plain.to_numpy(zero_copy_only=False))
    if len(rest):
        numbers[rest] = column_numbers(column.take(rest).to_pylist())
    texts = {}
    if not np.isfinite(numbers).all():
        rest = np.flatnonzero(~np.isfinite(numbers))
        texts = dict(zip(rest.tolist(), column.take(rest).to_pylist()))
    return numbers, texts


def _cast(column: pa.ChunkedArray, separators: bool) -> np.ndarray:
    """The text cells as float64 (without their thousands separators with ``separators``), one
    writable array; ArrowInvalid when a cell is no decimal. Chunks are cast on every core."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    def cast(chunk: pa.Array) -> np.ndarray:
        return (pc.replace_substring(chunk, ",", "") if separators else chunk).cast(pa.float64()).to_numpy()

    with ThreadPoolExecutor(pa.cpu_count()) as pool:
        chunks = list(pool.map(cast, column.chunks))
    return np.concatenate(chunks) if chunks else np.zeros(0)


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
