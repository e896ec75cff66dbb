"""Low-level text helpers every profiler reader shares.

Profiler logs are rarely clean CSV: Nsight Compute and nvprof write their own message lines
(``==PROF==``, ``==WARNING==``, ``==ERROR==``, ``==12345==``, ``======== Warning: ...``) around and
between the table, and a ``--log-file``-less capture also holds the application's own stdout. These
helpers find the table by its header *content*, set tool messages aside in a :class:`ToolLog`, stream
the rows with the csv module, and notice a file that was cut mid-row.

Typical use in a reader::

    log = ToolLog("ncu")
    with open_text(path) as handle:
        header, preamble = find_csv_header(handle, ("ID", "Metric Name"), log)
        if header is None:
            raise log.failure() or FormatError(...)
        rows = CsvRows(handle, log, cut=cut_off(path), open_end=not ends_with_newline(path))
        for row in rows: ...
    run.notes += log.notes() + rows.notes()
"""

from __future__ import annotations

import contextlib
import csv
import gc
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from gpuprof.errors import ProfilerError
from gpuprof.model import MEASURED, Metric
from gpuprof.model.catalog import canonical
from gpuprof.model.units import parse_number, scale

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

# "==PROF== ...", "==WARNING== ...", "==ERROR== ...", "==21206== ..." (nvprof, the PID) and
# "======== Warning: ..." (nvprof before it knows a PID).
_TOOL_LINE = re.compile(r"^(?:==(PROF|WARNING|ERROR|INFO|\d+)==|={4,})[ \t]?(.*\S|)\s*$")
_LEVEL_WORD = re.compile(r"^(error|warning)\b:?", re.IGNORECASE)

_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


@dataclass(frozen=True)
class ToolMessage:
    """One message line a profiler printed: ``level`` is ``info``, ``warning`` or ``error``."""

    level: str
    text: str  # without a leading "Error:"/"Warning:"
    tag: str  # what stood between the '==': PROF, WARNING, ERROR, a PID, or '' for '========'


def tool_message(line: str) -> ToolMessage | None:
    """The profiler message on ``line``, or None when the line is not one.

    nvprof puts its PID between the ``==`` and the level in the text (``==21206== Warning: ...``),
    Nsight Compute puts the level between the ``==``; both come back with the same ``level``.
    """
    if not line.startswith("=="):
        return None
    match = _TOOL_LINE.match(line)
    if not match:
        return None
    tag, text = match.group(1) or "", match.group(2)
    word = _LEVEL_WORD.match(text)
    if word:
        text = text[word.end() :].lstrip()
    if tag in ("ERROR", "WARNING"):
        level = tag.lower()
    else:
        level = word.group(1).lower() if word else "info"
    return ToolMessage(level, text, tag)


# Failures a profiler reports in its messages, keyed by a text that identifies them, with the fix.
_KNOWN_FAILURES: tuple[tuple[str, str], ...] = (
    (
        "ERR_NVGPUCTRPERM",
        "Run the profiler as root, or let all users read the counters by loading the NVIDIA driver with "
        "NVreg_RestrictProfilingToAdminUsers=0 (see https://developer.nvidia.com/ERR_NVGPUCTRPERM)",
    ),
    (
        "No kernels were profiled",
        "Check that the application launches CUDA kernels, that --kernel-name/--launch-skip/--launch-count "
        "match them, and add --target-processes all when the kernels run in a child process",
    ),
    (
        "No profile data collected",
        "Check that the application launches CUDA kernels and calls cudaDeviceReset() or exits normally",
    ),
)


@dataclass
class ToolLog:
    """The profiler's own message lines from one file, and what they mean for the import."""

    tool: str
    messages: list[ToolMessage] = field(default_factory=list)

    def add(self, line: str) -> bool:
        """Keep ``line`` if it is a tool message; True when it was one."""
        message = tool_message(line)
        if message is None:
            return False
        self.messages.append(message)
        return True

    def of_level(self, level: str) -> list[ToolMessage]:
        return [m for m in self.messages if m.level == level]

    def notes(self) -> list[str]:
        """One note per error or warning, in file order, for ``Run.notes``."""
        return [f"{self.tool} {m.level}: {m.text}" for m in self.messages if m.level != "info"]

    def failure(self, source: object = None) -> ProfilerError | None:
        """The ProfilerError for a run that produced no data, built from what the tool reported
        (prefixed with ``source``, e.g. the file's path, when given).

        Known failures (missing counter permission, no kernels profiled) get their fix; otherwise
        the first error line is quoted. None when the tool reported no error at all.
        """
        where = f"{source}: " if source is not None else ""
        for key, fix in _KNOWN_FAILURES:
            for message in self.messages:
                if key in message.text:
                    return ProfilerError(f"{where}{self.tool} reported: {_first_sentence(message.text)}", fix)
        errors = self.of_level("error")
        if errors:
            return ProfilerError(
                f"{where}{self.tool} reported: {_first_sentence(errors[0].text)}",
                f"See the {self.tool} messages in the file",
            )
        return None


def _first_sentence(text: str) -> str:
    head, dot, _ = text.partition(". ")
    return head if dot else text.rstrip(".")


def open_text(path: Path) -> TextIO:
    """``path`` opened for the csv module: BOM-aware (UTF-8/UTF-16), undecodable bytes replaced."""
    with open(path, "rb") as handle:
        start = handle.read(3)
    encoding = next((codec for bom, codec in _BOMS if start.startswith(bom)), "utf-8")
    return open(path, encoding=encoding, errors="replace", newline="")


def ends_with_newline(path: Path) -> bool:
    """Whether the file's last byte is a newline. Profilers end every line with one, so a file
    without it was cut (by a crash, a quota, a copy) and its last row cannot be trusted."""
    with open(path, "rb") as handle:
        start = handle.read(2)
        handle.seek(0, 2)
        if handle.tell() == 0:
            return True
        if start in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 (PowerShell's '>'): a newline is two bytes
            handle.seek(-2, 2)
            return handle.read(2) == (b"\n\x00" if start == b"\xff\xfe" else b"\x00\n")
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"


def cut_off(path: Path) -> bool:
    """Whether a file of fully quoted CSV records (Nsight Compute's) was cut inside its last
    record: no final newline, and the last record does not end with a closing quote (a complete
    file may just lack the final newline)."""
    if ends_with_newline(path):
        return False
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        handle.seek(max(0, handle.tell() - 8))
        tail = handle.read().replace(b"\x00", b"")
    return not tail.rstrip(b" ,\r").endswith(b'"')


def last_line_complete(last: str, before: str) -> bool:
    """Whether ``last``, a file's final line with no newline after it, is whole: a complete file
    may simply lack the final newline. A CSV record is whole when it has as many fields as the
    record before it and its quotes are closed; a fixed-width text row when it has as many cells
    as the row before it and is as long (such tables pad their last column). A number cut inside
    its digits cannot be told from a whole one and is kept."""
    if not before.strip():
        return False
    if len(column_spans(before)) < 2:  # no fixed-width columns: a CSV record
        if last.count('"') % 2:
            return False
        return len(split_csv_line(last)) == len(split_csv_line(before)) and (
            not before.rstrip().endswith('"') or last.rstrip().endswith('"')
        )
    return len(column_spans(last)) == len(column_spans(before)) and len(last) >= len(before)


def csv_records(lines: Iterable[str]) -> Iterator[list[str] | None]:
    """``csv.reader`` over ``lines``, yielding None for a record the csv module refuses (a field
    over its 128 KiB limit, a line break inside an unquoted field: damaged files) instead of
    stopping the whole read with ``csv.Error``; callers skip it like any malformed row."""
    reader = csv.reader(lines)
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error:
            yield None


def split_csv_line(line: str) -> list[str]:
    """The fields of one CSV line (quotes and commas inside quotes handled); [] if unreadable."""
    return next(csv_records([line]), None) or []


def is_csv_header(line: str, required: Iterable[str]) -> list[str] | None:
    """The fields of ``line`` when it is a CSV header holding every ``required`` column, else None."""
    required = tuple(required)
    if not all(name in line for name in required):  # cheap test before splitting
        return None
    fields = [f.strip() for f in split_csv_line(line)]
    return fields if all(name in fields for name in required) else None


def head_has_csv_header(head: str, required: Iterable[str]) -> bool:
    """For ``sniff``: does some line of ``head`` look like a CSV header with these columns?"""
    required = tuple(required)
    return any(is_csv_header(line, required) for line in head.splitlines())


def find_csv_header(handle: TextIO, required: Sequence[str], log: ToolLog) -> tuple[list[str] | None, list[str]]:
    """Read ``handle`` up to and including the CSV header that holds every ``required`` column.

    Returns the header fields (None when the file has no such header) and the other lines seen
    before it (application output, without line ends). Tool messages go to ``log``. The handle is
    left positioned on the first row after the header.
    """
    preamble: list[str] = []
    while True:
        line = handle.readline()
        if not line:
            return None, preamble
        if log.add(line):
            continue
        header = is_csv_header(line, required)
        if header is not None:
            return header, preamble
        if line.strip():
            preamble.append(line.rstrip("\r\n"))


class CsvRows:
    """The CSV rows after a header, streamed.

    Tool message lines between rows go to the :class:`ToolLog`; blank lines are skipped. When the
    file was cut (``cut=True``, see :func:`ends_with_newline`) the final row is incomplete and is
    held back: :attr:`truncated` then holds it, and :meth:`notes` says so.
    """

    def __init__(self, handle: TextIO, log: ToolLog, cut: bool = False, open_end: bool = False) -> None:
        self._handle = handle
        self._log = log
        self._cut = cut
        self._open_end = open_end  # no final newline: the last row is whole only if it is as wide as the one before
        self.truncated: list[str] | None = None
        self.unreadable = 0  # records the csv module refused

    def __iter__(self) -> Iterator[list[str]]:
        rows = self._rows()
        if not self._cut and not self._open_end:
            yield from rows
            return
        previous: list[str] | None = None
        width = 0
        for row in rows:
            if previous is not None:
                width = len(previous)
                yield previous
            previous = row
        if previous is not None and not self._cut and len(previous) == width:
            yield previous  # a whole row: the file only lacks its final newline
        else:
            self.truncated = previous

    def _rows(self) -> Iterator[list[str]]:
        add = self._log.add
        for row in csv_records(self._handle):
            if row is None:
                self.unreadable += 1
                continue
            if not row:
                continue
            first = row[0]
            if first.startswith("==") and add(",".join(row)):
                continue
            yield row

    def notes(self) -> list[str]:
        notes = []
        if self.unreadable:
            notes.append(
                f"{self.unreadable} malformed CSV record(s) (a stray line break or a field over 128 KiB) were skipped"
            )
        if self.truncated is not None:
            notes.append(
                f"file ends in the middle of a row (truncated?): its last row "
                f"({len(self.truncated)} fields) was not read"
            )
        return notes


def parse_count(text: str, default: int) -> int:
    """``text`` as a count or ID the way profilers print them (ASCII digits), else ``default``.
    Not ``int()`` after ``str.isdigit()``: that accepts '²' and an ID of 5,000 digits, both of
    which ``int()`` then refuses with a ValueError."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else default


def column_index(header: Sequence[str], names: Iterable[str]) -> dict[str, int]:
    """Position of each of ``names`` present in ``header`` (absent names are left out)."""
    positions = {name: i for i, name in reversed(list(enumerate(header)))}
    return {name: positions[name] for name in names if name in positions}


def number(text: str) -> float | None:
    """``text`` as a float when it is a number as profilers print it ('5,323,503,232.00',
    '1.3746e+11', '28.05%'); None for anything else ('PolicySpread', 'n/a', 'nan', 'inf', '')."""
    if "," in text:
        text = text.replace(",", "")
    try:
        value = float(text)
    except ValueError:
        return parse_number(text) if text.endswith("%") else None
    return value if math.isfinite(value) else None


def convert_cell(text: str, unit: str) -> tuple[float | None, str]:
    """A value cell in ``unit`` as (number in base units, base unit); (None, unit) if not a number."""
    value = number(text)
    if value is None:
        return None, unit
    multiply, divide, base = _conversion(unit)
    return value * multiply / divide, base


def _conversion(unit: str) -> tuple[float, float, str]:
    """(multiplier, divisor, base unit) for ``unit``: dividing by 1e9 keeps 406240 ns at exactly
    0.00040624 s, where multiplying by 1e-9 would not."""
    factor, base = scale(unit)
    if 0.0 < factor < 1.0:
        return 1.0, float(f"{1.0 / factor:.15g}"), base
    return factor, 1.0, base


def metric_maker(origin: str = MEASURED) -> Callable[[str, str, str], Metric]:
    """A function building a :class:`Metric` from a tool's (name, unit, value text) cells.

    Each distinct name is looked up in the catalog and each distinct unit converted once; numbers
    go to base units, other text stays a string under the tool's unit. Profiles repeat the same
    few hundred names over millions of rows, so the per-row work is a dict lookup, a float() and
    one constructor call. A closure, because calling one is cheaper than calling an object's
    ``__call__``.
    """
    entries: dict[str, tuple[str, str, str | None, float, float]] = {}

    def make(name: str, unit: str, text: str) -> Metric:
        entry = entries.get(name)
        if entry is None or entry[0] != unit:
            multiply, divide, base = _conversion(unit)
            entry = entries[name] = (unit, base, canonical(name), multiply, divide)
        _, base, canon, multiply, divide = entry
        try:
            value = float(text.replace(",", "") if "," in text else text)
            if not math.isfinite(value):  # 'nan', 'inf': kept as the text, noted by gpuprof.readers.read
                raise ValueError(text)
        except ValueError:
            parsed = number(text)
            if parsed is None:  # a string-valued metric: keep it as the tool wrote it
                return Metric(name, text.strip() or None, unit, canon, origin)
            value = parsed
        if multiply != divide:
            value = value * multiply / divide
        return Metric(name, value, base, canon, origin)

    return make


def metric_columns(
    names: Sequence[str] | pd.Categorical,
    units: Sequence[str] | pd.Categorical,
    texts: Sequence[str] | Mapping[int, str],
    origin: str = MEASURED,
    numbers: np.ndarray | None = None,
) -> dict[str, object]:
    """The metric-table columns (:mod:`gpuprof.model.tables`: metric, canonical, value, text, unit,
    origin) of whole columns of a tool's (name, unit, value text) cells, with the values
    :func:`metric_maker` gives row by row.

    Numbers are converted column-wise: one ``map(float)`` (after dropping thousands separators
    when there are any), then one scaling per distinct unit and one catalog lookup per distinct
    name, applied to all rows at once through category codes. A column holding other text goes
    through :func:`number` (which also takes ``28.05%``); rows that are no number at all (``n/a``,
    string-valued metrics like ``CachePreferNone``) keep their text under the tool's unit. A
    parser that converted the cells already gives them as ``numbers`` (what :func:`number` gives,
    NaN for None), ``texts`` then holding only the cells whose number is not finite, and may give
    names and units as categoricals.
    """
    import numpy as np
    import pandas as pd

    values = column_numbers(texts) if numbers is None else numbers.copy()
    rows = len(values)
    others: list[int] = []
    if not np.isfinite(values).all():  # the rows above, and 'nan' or 'inf' cells: kept as their text
        others = np.flatnonzero(~np.isfinite(values)).tolist()
    tool_units = _categorical(units)
    kinds = [_conversion(unit) for unit in tool_units.categories]
    multiply = np.array([k[0] for k in kinds] + [1.0])  # the last entry serves code -1
    divide = np.array([k[1] for k in kinds] + [1.0])
    codes = tool_units.codes
    if (multiply != divide).any():  # usually a few units (ns, Kbyte) on a few rows
        scaled = np.flatnonzero(multiply[codes] != divide[codes])
        values[scaled] = values[scaled] * multiply[codes[scaled]] / divide[codes[scaled]]
    bases = [k[2] for k in kinds]
    unit_codes = np.array(codes, dtype=np.int64)
    base_names = list(dict.fromkeys([*bases, *tool_units.categories]))
    if bases != list(tool_units.categories):  # some unit is not its own base unit
        to_base = np.array([base_names.index(base) for base in bases] + [-1])
        unit_codes = to_base[codes]
    text = None
    if others:
        text = np.full(rows, None, dtype=object)
        values[others] = math.nan
        cells = list(map(texts.__getitem__, others))
        stripped = {cell: cell.strip() or None for cell in set(cells)}  # a few distinct texts over many rows
        text[others] = list(map(stripped.__getitem__, cells))
        tool_unit = np.array([base_names.index(unit) for unit in tool_units.categories] + [-1])
        unit_codes[others] = tool_unit[codes[others]]
    metric = _categorical(names)
    canonicals = [canonical(name) for name in metric.categories]
    canonical_names = list(dict.fromkeys(c for c in canonicals if c))
    to_canonical = np.array([canonical_names.index(c) if c else -1 for c in canonicals] + [-1])
    return {
        "metric": metric,
        "canonical": pd.Categorical.from_codes(to_canonical[metric.codes], canonical_names),
        "value": values,
        "text": text,
        "unit": _used_categories(unit_codes, base_names),
        "origin": origin,
    }


def _used_categories(codes: np.ndarray, names: list[str]) -> pd.Categorical:
    """``pd.Categorical.from_codes(codes, names).remove_unused_categories()``, the categories in use
    found by counting codes (pandas sorts a million of them to find them)."""
    import numpy as np
    import pandas as pd

    used = np.bincount(codes[codes >= 0], minlength=len(names)) > 0
    if used.all():
        return pd.Categorical.from_codes(codes, names)
    renumber = np.append(np.cumsum(used) - 1, -1)  # the last entry serves code -1
    return pd.Categorical.from_codes(renumber[codes], [name for name, kept in zip(names, used) if kept])


def column_numbers(texts: Sequence[str]) -> np.ndarray:
    """Each text as :func:`number` reads it (NaN for None); ``float`` over the whole column while it can."""
    import numpy as np

    rows = len(texts)

    try:
        return np.fromiter(map(float, texts), dtype=np.float64, count=rows)
    except ValueError:
        try:  # '5,323,503,232.00'
            return np.fromiter(
                map(float, map(str.replace, texts, repeat(","), repeat(""))), dtype=np.float64, count=rows
            )
        except ValueError:
            parsed = list(map(number, map(str.replace, texts, repeat(","), repeat(""))))
            return np.array([math.nan if value is None else value for value in parsed], dtype=np.float64)


def _categorical(texts: Sequence[str] | pd.Categorical) -> pd.Categorical:
    """``texts`` as a categorical (as it is when it is one), categories in order of appearance:
    ``pd.factorize`` hashes a million repeated names in half the time ``pd.Categorical`` takes to
    also sort them."""
    import numpy as np
    import pandas as pd

    if isinstance(texts, pd.Categorical):
        return texts

    codes, categories = pd.factorize(np.asarray(texts, dtype=object))
    return pd.Categorical.from_codes(codes, categories)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a reader builds millions of small acyclic objects
    (Metrics): otherwise each full collection rescans all of them, which costs a third of the time.

    On the way out the new objects are moved to the oldest generation (``gc.freeze()`` then
    ``gc.unfreeze()``, when nothing else was frozen) instead of being left in the youngest, whose
    first collection would otherwise walk all of them at once: they are long-lived results, and
    the regular full collections see them like any other old object.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if was_enabled:
            gc.enable()


def quick_split(record: str, widths: Sequence[int]) -> list[str] | None:
    """The fields of a CSV record in which every field is quoted plainly (as Nsight Compute writes
    them), when it has one of the expected ``widths`` (field counts); None otherwise, and the
    caller uses :func:`split_csv_line`. A trailing comma (an empty last field) is dropped."""
    body = record.rstrip("\r\n")
    if body.endswith(","):
        body = body[:-1]
    if len(body) < 2 or body[0] != '"' or body[-1] != '"' or '""' in body:
        return None
    fields = body[1:-1].split('","')
    return fields if len(fields) in widths else None


_CELL_RUN = re.compile(r"\S+(?: \S+)*")


def column_spans(line: str) -> list[tuple[str, int, int]]:
    """(text, start, end) of each cell of a fixed-width header or dashes line: runs of text
    separated by two or more spaces, as nvprof and nsys lay out their console tables."""
    return [(found.group(), found.start(), found.end()) for found in _CELL_RUN.finditer(line)]
