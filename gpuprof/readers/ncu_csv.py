"""Nsight Compute ``--csv`` details page: one row per (kernel launch, metric).

Three header layouts are in use and all are read by column *name*: the 2019/2020 12-column one
(``Kernel Time`` holds a timestamp), the 15-column one with ``Block Size``/``Grid Size``/``Device``/
``CC``, and the 20-column one (2023+) with rule columns, where metric rows carry 15 fields plus a
trailing comma and rule rows have empty metric fields and prose in ``Rule Description``. The table
may sit inside the application's own output and ncu's ``==PROF==``/``==ERROR==`` lines.

Two ways in, one result. A table that is nothing but rows after its header (a file ncu wrote
itself) goes to pandas' C parser a million rows at a time, each chunk converted column-wise
(:mod:`gpuprof.readers._ncu_csv_bulk`): about half pandas' own speed on a million-row file. Any
other table is streamed line by line (:class:`_Table`): the first row of each launch and section
goes through the csv module, the rest are split by hand. In both, each distinct unit and metric
name is converted and looked up once. tests/test_readers_ncu_csv_bulk.py holds the two to the
same result. A file too large to hold as one table is read by :func:`read_chunked`, each chunk's
metric columns handed on (into the store) as they are converted.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, islice, repeat
from pathlib import Path
from sys import intern
from typing import TYPE_CHECKING, TextIO

from gpuprof.errors import FormatError
from gpuprof.model import Run, tables
from gpuprof.readers import _ncu_csv_bulk as _bulk
from gpuprof.readers._text import (
    ToolLog,
    column_index,
    find_csv_header,
    gc_paused,
    head_has_csv_header,
    metric_columns,
    open_text,
    parse_count,
    quick_split,
    split_csv_line,
)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

NAME = "ncu-csv"
DESCRIPTION = "Nsight Compute details CSV (ncu --csv), one row per kernel launch and metric"

_REQUIRED = ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value")

# Per-launch columns ncu repeats on every row, and the Launch.attributes key each becomes.
LAUNCH_COLUMNS = {
    "Process ID": "pid",
    "Process Name": "process",
    "Host Name": "host",
    "Kernel Time": "time",
    "Context": "context",
    "Stream": "stream",
    "Block Size": "block",
    "Grid Size": "grid",
    "Device": "device",
    "CC": "cc",
    # the NVTX range path of the launch, where ncu ran with --nvtx and printed it in a column of its own
    "NVTX": "nvtx",
}
_RULE_COLUMNS = ("Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup")


def rule_text(cells: tuple[str, ...]) -> str:
    """A rule row (ncu's advice) as a launch keeps it, from its :data:`_RULE_COLUMNS` cells:
    'Name [Type]: description (estimated speedup ...)'."""
    name, kind, text, speedup_type, speedup = cells
    return f"{name} [{kind}]: {text}" + (f" (estimated speedup {speedup_type} {speedup}%)" if speedup else "")


def sniff(path: Path, head: str) -> bool:
    """A details table, or an ncu log with messages and no table of any kind (ncu failed before
    profiling, e.g. ERR_NVGPUCTRPERM): :func:`read` then reports what ncu said."""
    if head_has_csv_header(head, _REQUIRED):
        return True
    lines = head.splitlines()
    return any(line.startswith(("==PROF==", "==ERROR==")) for line in lines) and not any(
        line.startswith('"') for line in lines
    )


def launch_columns(header: Sequence[str]) -> dict[str, int]:
    """Position of each per-launch column present in ``header``, keyed by its attribute name."""
    return {key: header.index(column) for column, key in LAUNCH_COLUMNS.items() if column in header}


def run_device(devices: Iterable[str] | None, attributes: Iterable[dict[str, str]]) -> dict[str, str]:
    """Run.device from the launches' device name (None: none named, as in a CSV), index and
    compute capability, when they agree."""
    attributes = list(attributes)
    devices = [""] if devices is None else list(islice(devices, len(attributes)))
    if tables.same_text(devices):  # launches share a few dicts: each looked into once
        named = devices[0] if devices else ""
        distinct = dict(zip(map(id, attributes), attributes)).values()
        seen = {(named, attrs.get("device", ""), attrs.get("cc", "")) for attrs in distinct}
    else:
        seen = {(device, attrs.get("device", ""), attrs.get("cc", "")) for device, attrs in zip(devices, attributes)}
    if len(seen) != 1:
        return {}
    return {key: value for key, value in zip(("name", "index", "cc"), seen.pop()) if value}


def read(path: Path) -> Run:
    log = ToolLog("ncu")
    with open_text(path) as handle:
        header = _header(path, handle, log)
        table = _Table(header)
        with gc_paused():
            skip = _bulk.skip_for(path, handle, len(header))
            if skip is None or not _bulk.read(path, skip, table.layout(), table.take):
                table = _Table(header)  # nothing of a refused bulk read is kept
                table.read(handle, log)
    return _run(path, table, log)


def read_chunked(path: Path, keep: Callable[[dict[str, object]], dict[str, object]]) -> Run | None:
    """A clean table read by pandas ``CHUNK_ROWS`` rows at a time, each chunk's metric columns
    handed to ``keep`` as they are converted (to be written elsewhere) and only what it returns
    held: the Run's metric table is those rows, its launch table whole. None when the table is not
    one the bulk path takes (the caller then reads the file whole with :func:`read`); ``keep`` may
    then have been given chunks already. For files too large to hold as one metric table."""
    log = ToolLog("ncu")
    with open_text(path) as handle:
        header = _header(path, handle, log)
        table = _Table(header, keep)
        with gc_paused():
            skip = _bulk.skip_for(path, handle, len(header))
            if skip is None or not _bulk.read_chunks(path, skip, table.layout(), table.take):
                return None
    return _run(path, table, log)


def _header(path: Path, handle: TextIO, log: ToolLog) -> list[str]:
    header, _ = find_csv_header(handle, _REQUIRED, log)
    if header is None:
        raise log.failure(path) or FormatError(
            f'{path}: no Nsight Compute CSV header ("ID",...,"Metric Value") found',
            "Export the details page with `ncu --csv --page details` or `ncu --import X.ncu-rep --csv`",
        )
    return header


def _run(path: Path, table: _Table, log: ToolLog) -> Run:
    notes = log.notes() + table.notes()
    if not table.kernels:
        failure = log.failure(path)
        if failure:
            raise failure
        raise FormatError(
            f"{path}: the Nsight Compute CSV has a header but no complete metric rows",
            "Re-export it; the file may be truncated",
        )
    made = table.tables()  # first: the device is found from the distinct dicts they were made with
    return Run(
        kind="import",
        format=NAME,
        source=str(path),
        device=run_device(None, table.distinct),
        environment={"tool": "ncu"},
        notes=notes,
        tables=made,
    )


# Distinct launch attribute sets a table shares (see _Table.shared): a profile's kernels, grids,
# blocks and streams give a few hundred; a field differing per launch, more than this.
DISTINCT_ATTRIBUTES = 4096


class _Table:
    """The rows of one details table as columns: one launch per ID, one metric row per row (the
    bulk path fills it too).

    Rows of one launch and section share every field up to ``Metric Name``. Once a row has been
    parsed with the csv module, that shared text becomes a prefix: following lines that start
    with it are split by hand into their last three fields (name, unit, value), which is what keeps
    a million-row file fast. Anything else (a new launch or section, a rule row, a quoted field
    spanning lines, a tool message, a cut-off last line) takes the csv path.
    """

    def __init__(self, header: list[str], keep: Callable[[dict[str, object]], dict[str, object]] | None = None) -> None:
        self.keep = keep  # what of each bulk chunk's metric columns is held (all, without it)
        col = column_index(header, (*_REQUIRED, "Section Name", *_RULE_COLUMNS))
        self.needed = max(col[name] for name in _REQUIRED) + 1
        # metric rows have every column, or (2023+ layout) stop after Metric Value
        self.widths = (len(header), self.needed)
        self.i_id, self.i_kernel, self.i_name = col["ID"], col["Kernel Name"], col["Metric Name"]
        self.i_unit, self.i_value, self.i_section = col["Metric Unit"], col["Metric Value"], col.get("Section Name")
        self.i_rule = col.get("Rule Description")  # only in the 2023+ layout
        self.rule_cells = [col.get(name) for name in _RULE_COLUMNS]
        self.launch_columns = list(launch_columns(header).items())
        self.columns = len(header)
        # per launch, in order of first appearance
        self.positions: dict[str, int] = {}  # launch ID -> its position (the line-by-line path's)
        self.last_ids: list[str] = []  # the bulk path's: the last chunk's launch IDs
        self.earlier_ids: set[str] = set()  # those of the chunks before it, made as chunks come
        self.kernels: list[str] = []
        self.indices: list[int] = []
        self.attributes: list[dict[str, str]] = []
        self.sections: list[tuple[str, ...]] = []  # distinct section names, in file order
        # each distinct attribute dict (by keys, then values) and section tuple held once, shared by the
        # launches that have it: a million launches of a few kernels, streams and grids hold a few dicts
        self.distinct_attributes: dict[tuple[str, ...], dict[tuple[str, ...], dict[str, str]]] = {}
        self.distinct_count = 0
        self.distinct_sections: dict[tuple[str, ...], tuple[str, ...]] = {}
        self.distinct: list[dict[str, str]] = []  # every launch's dict once (some twice), when the tables are made
        # per metric row: lists as the line-by-line path reads, or the bulk path's whole columns
        self.launch: list[int] = []
        self.names: list[str] = []
        self.units: list[str] = []
        self.texts: list[str] = []
        self.pieces: list[dict[str, object]] = []  # the bulk path's metric columns, a chunk each
        self.skipped = 0
        self.truncated = False

    def layout(self) -> _bulk.Layout:
        return _bulk.Layout(
            self.columns,
            self.i_id,
            self.i_kernel,
            self.i_name,
            self.i_unit,
            self.i_value,
            self.i_section,
            self.i_rule,
            self.launch_columns,
            tuple(self.rule_cells),
        )

    def take(self, rows: _bulk.Rows) -> bool:
        """One chunk of the bulk path's columns as this table's launches and metric rows, its text
        converted at once so that it is freed before the next chunk is parsed; False (taking
        nothing) when a launch of an earlier chunk comes back, other than the last one going on."""
        import numpy as np

        ids = rows.launch_ids
        on = int(bool(self.last_ids) and self.last_ids[-1] == ids[0])
        if self.last_ids:  # a file in chunks: no ID of a chunk before but the last one's going on
            self.earlier_ids.update(self.last_ids)
            if not self.earlier_ids.isdisjoint(ids[on:]):
                return False  # a launch in pieces
        self.last_ids = ids
        if len(ids) > on:  # the bulk path's IDs are plain counts: int() is parse_count
            attributes = rows.attributes[on:] if on else rows.attributes
            distinct = None if on else rows.distinct_attributes
            self.new_launches(
                ids[on:], list(map(intern, rows.kernels[on:])), attributes, list(map(int, ids[on:])), distinct
            )
        counts = np.diff(rows.bounds)
        first = len(self.kernels) - len(rows.launch_ids)
        piece = {
            "launch": np.repeat(np.arange(first, first + len(counts), dtype=np.int32), counts),
            **metric_columns(rows.names, rows.units, rows.values, numbers=rows.numbers),
        }
        self.pieces.append(piece if self.keep is None else self.keep(piece))
        if len(rows.rules):
            self._take_rules(rows.rules, first)
        if rows.sections is not None:
            self._take_sections(rows.sections, counts, first)
        return True

    def _take_rules(self, rules: _bulk.RuleRows, first: int) -> None:
        """A chunk's rule rows (a launch's together) as its launches' rules, the chunk's launches
        from position ``first`` on: each distinct rule's text made once, each distinct run of a
        launch's rules joined once (launches of a kernel mostly get the same advice), each launch's
        new dict made once per (dict, text). Runs of rows of one launch are taken in order, so a
        launch whose rules come in two runs gets both."""
        import numpy as np

        texts = list(map(rule_text, rules.cells))
        codes, positions = rules.codes, rules.launches + first
        starts = np.flatnonzero(np.diff(positions, prepend=-1))
        counts = np.diff(np.append(starts, len(positions)))
        run_of = np.empty(len(starts), dtype=np.int64)
        joined: list[str] = []
        for count in np.unique(counts).tolist():  # the launches of as many rules at once: their distinct runs
            chosen = np.flatnonzero(counts == count)
            matrix = codes[starts[chosen, None] + np.arange(count)]
            key = tables.row_codes(list(matrix.T), len(chosen))
            run_of[chosen] = key + len(joined)
            firsts = np.unique(key, return_index=True)[1]
            joined += ["\n".join(map(texts.__getitem__, run)) for run in matrix[firsts].tolist()]
        attributes = self.attributes
        # the dict a launch's attributes become with a text, held with the dict it was made from so
        # that the id of that one is not another's while this chunk is taken
        made: dict[tuple[int, int], tuple[dict[str, str], dict[str, str]]] = {}
        for position, run in zip(positions[starts].tolist(), run_of.tolist()):
            before = attributes[position]
            after = made.get((id(before), run))
            if after is None:
                after = made[id(before), run] = (before, self.with_rules(before, joined[run]))
            attributes[position] = after[1]

    def _take_sections(self, sections: object, counts: np.ndarray, first: int) -> None:
        """Each launch's sections of a chunk's rows, in file order, found on codes (the runs of one
        section in a launch; :meth:`add_sections` keeps each once)."""
        import numpy as np
        import pandas as pd

        if isinstance(sections, pd.Categorical):
            codes, names = sections.codes, sections.categories
        else:
            codes, names = pd.factorize(sections)
        if not len(codes):
            return
        names = [intern(str(name)) for name in names]
        launch = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
        starts = np.ones(len(codes), dtype=bool)  # where a launch or a section begins
        np.not_equal(codes[1:], codes[:-1], out=starts[1:])
        starts[1:] |= launch[1:] != launch[:-1]
        run_codes = codes[starts]
        runs = np.bincount(launch[starts], minlength=len(counts))  # per launch
        filled = np.flatnonzero(counts)
        ends = np.cumsum(runs)
        begins = ends - runs
        head = run_codes[begins[filled[0]] : ends[filled[0]]]  # the first launch's, which most launches repeat
        like = runs[filled] == len(head)
        at = begins[filled[like]]
        like[like] = (run_codes[at[:, None] + np.arange(len(head))] == head).all(axis=1)
        pattern = tuple(dict.fromkeys(names[code] for code in head.tolist()))  # each once, as add_sections keeps them
        shared = self.distinct_sections.setdefault(pattern, pattern)
        positions = (filled + first).tolist()
        rest = self._going_on(positions, pattern)
        skipped = len(positions) - len(rest)
        sections = self.sections
        if rest and rest[-1] - rest[0] == len(rest) - 1:  # increasing: one slice, as launches nearly always are
            sections[rest[0] : rest[-1] + 1] = repeat(shared, len(rest))
        else:
            for position in rest:
                sections[position] = shared
        for k in np.flatnonzero(~like[skipped:]).tolist():  # a launch of other sections
            launch_at = filled[skipped + k]
            more = tuple(dict.fromkeys(names[code] for code in run_codes[begins[launch_at] : ends[launch_at]].tolist()))
            sections[rest[k]] = self.distinct_sections.setdefault(more, more)

    def _going_on(self, positions: list[int], names: Sequence[str]) -> list[int]:
        """A chunk's launches ``positions`` whose sections are still to be set, each new to the table
        (with none yet: what :meth:`add_sections` then adds is its section ``names`` as they are).
        Only the first can have sections already, a launch going on from the chunk before: it gets
        its ``names`` added here."""
        if positions and self.sections[positions[0]]:
            self.add_sections(positions[0], names)
            return positions[1:]
        return positions

    def read(self, handle: TextIO, log: ToolLog) -> None:
        launch, names, units, texts = self.launch, self.names, self.units, self.texts
        prefix, width, position = "\0", 0, -1
        for line in handle:
            if line.startswith(prefix):
                cells = line[width:].split('","')
                if len(cells) == 3 and '"' not in cells[0] and '"' not in cells[1]:  # else a quote ("") to unescape
                    name, unit, value = cells
                    value = value.rstrip("\r\n,")
                    if name and value.endswith('"') and '"' not in value[:-1]:
                        launch.append(position)
                        names.append(name)
                        units.append(unit)
                        texts.append(value[:-1])
                        continue
            record = _whole_record(line, handle)
            if not record.endswith("\n") and not record.rstrip(" ,\r").endswith('"'):  # cut inside a field
                self.truncated = True
                break
            if log.add(record) or not record.strip():
                continue
            row = quick_split(record, self.widths) or split_csv_line(record)
            taken = self._row(row)
            if taken is not None:
                position = taken
                prefix = _shared_prefix(record, row, self.i_name)
                width = len(prefix)

    def _row(self, row: list[str]) -> int | None:
        """Take one csv-parsed row; the position of the launch it belongs to when it was a metric row."""
        if len(row) < self.needed:
            self.skipped += 1
            return None
        launch_id = row[self.i_id]
        position = self.positions.get(launch_id)
        if position is None:
            position = self.new_launch(launch_id, row[self.i_kernel], {key: row[i] for key, i in self.launch_columns})
        name = row[self.i_name]
        if not name:
            if self.i_rule is not None and len(row) > self.i_rule:
                text = rule_text(_bulk.rule_cells(row, self.rule_cells))
                self.attributes[position] = self.with_rules(self.attributes[position], text)
            return None
        self.launch.append(position)
        self.names.append(name)
        self.units.append(row[self.i_unit])
        self.texts.append(row[self.i_value])
        if self.i_section is not None and row[self.i_section] not in self.sections[position]:
            self.add_sections(position, [row[self.i_section]])
        return position

    def new_launch(self, launch_id: str, kernel: str, attributes: dict[str, str]) -> int:
        position = self.positions[launch_id] = self.new_launches([launch_id], [kernel], [attributes])
        return position

    def new_launches(
        self,
        launch_ids: Sequence[str],
        kernels: Sequence[str],
        attributes: Sequence[dict[str, str]],
        indices: Sequence[int] | None = None,
        distinct: Sequence[dict[str, str]] | None = None,
    ) -> int:
        """Add launches new to the table (the bulk path adds them all at once, with their IDs as
        numbers, and ``distinct``, each of ``attributes``' dicts once, where its parser knows them);
        the last one's position."""
        first = len(self.kernels)
        positions = range(first, first + len(launch_ids))
        self.kernels.extend(kernels)
        self.indices.extend(map(parse_count, launch_ids, positions) if indices is None else indices)
        self.attributes.extend(self.shared_each(attributes, distinct))
        self.sections.extend(repeat((), len(positions)))
        return positions[-1]

    def shared_each(
        self, attributes: Sequence[dict[str, str]], distinct: Sequence[dict[str, str]] | None = None
    ) -> list[dict[str, str]]:
        """:meth:`shared` of each of ``attributes``, each dict object (the scanner gives launches
        with the same attributes one) and each distinct content where all have the same keys (the
        bulk path's) looked up once: a million launches hold a few distinct dicts. ``distinct``:
        each dict object once, each of another content, where the caller knows them (the C
        scanner's); when those are the shared dicts already, ``attributes`` are as they are."""
        if distinct is None:
            objects = dict(zip(map(id, attributes), attributes))  # each dict once
            distinct = list(objects.values())
            made = self._shared_contents(distinct)
        else:
            made = list(map(self.shared, distinct))
            if all(map(operator.is_, made, distinct)):  # a table's first chunk of the scanner's dicts
                return list(attributes)
        return list(map(dict(zip(map(id, distinct), made)).__getitem__, map(id, attributes)))

    def _shared_contents(self, distinct: list[dict[str, str]]) -> list[dict[str, str]]:
        """:meth:`shared` of a copy of each of ``distinct``, each content looked up once where all
        have the same keys."""
        keys = tuple(distinct[0]) if distinct else ()
        if all(map(keys.__eq__, map(tuple, distinct))):
            contents = list(map(tuple, map(dict.values, distinct)))
            found = dict.fromkeys(contents)
            for content in found:
                found[content] = self.shared(dict(zip(keys, content)))
            return list(map(found.__getitem__, contents))
        return list(map(self.shared, distinct))

    def shared(self, attributes: dict[str, str]) -> dict[str, str]:
        """The launch's dict of the content of ``attributes`` (a new dict no one else holds): the one
        every launch with that content shares, while there are at most :data:`DISTINCT_ATTRIBUTES`
        (past that, a field differing per launch such as a kernel time, a launch keeps its own, its
        text interned as the others'). Nothing changes a launch's dict in place: :meth:`add_rule`
        and :meth:`tables` give it another."""
        same_keys = self.distinct_attributes.setdefault(tuple(attributes), {})
        found = same_keys.get(tuple(attributes.values()))
        if found is not None:
            return found
        for key, value in attributes.items():
            attributes[key] = intern(value)
        if self.distinct_count < DISTINCT_ATTRIBUTES:
            same_keys[tuple(attributes.values())] = attributes
            self.distinct_count += 1
        return attributes

    def add_sections(self, position: int, names: Iterable[str]) -> None:
        """Add the section ``names`` not there yet to launch ``position``'s, in order."""
        known = self.sections[position]
        more = known + tuple(name for name in names if name not in known)
        if len(more) > len(known):
            self.sections[position] = self.distinct_sections.setdefault(more, more)

    def with_rules(self, attributes: dict[str, str], text: str) -> dict[str, str]:
        """The shared dict of ``attributes`` with the rules ``text`` (one or more rule rows'
        :func:`rule_text` each, a line each) after those it has: one per launch, not per rule row."""
        previous = attributes.get("rules")
        return self.shared({**attributes, "rules": f"{previous}\n{text}" if previous else text})

    def notes(self) -> list[str]:
        notes = []
        if self.truncated:
            notes.append("the file ends in the middle of a row (truncated?); that last row was not read")
        if self.skipped:
            notes.append(f"{self.skipped} row(s) with fewer fields than the header were skipped")
        return notes

    def _with_sections(self) -> list[dict[str, str]]:
        """Each launch's attributes with its sections (``sections``: their names joined), made once
        per run of launches with the same attribute dict and sections (the dicts and tuples are
        shared: a run of a million launches has a few runs), and once per distinct pair."""
        import numpy as np

        count = len(self.attributes)
        if not count:
            return []
        same = np.ones(count, dtype=bool)  # where a launch has the dict and sections of the one before
        for held in (self.attributes, self.sections):
            ids = np.fromiter(map(id, held), dtype=np.uintp, count=count)
            same[1:] &= ids[1:] == ids[:-1]
        same[0] = False
        starts = np.flatnonzero(~same)
        made: dict[tuple[int, int], dict[str, str]] = {}
        runs = []
        for start in starts.tolist():
            attributes, sections = self.attributes[start], self.sections[start]
            pair = (id(attributes), id(sections))
            if pair not in made:
                made[pair] = self.shared({**attributes, "sections": "; ".join(sections)}) if sections else attributes
            runs.append(made[pair])
        self.distinct = list(made.values())
        return list(chain.from_iterable(map(repeat, runs, np.diff(np.append(starts, count)).tolist())))

    def tables(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The launch and metric tables of what was read (once: the bulk path's chunks are handed over)."""
        import numpy as np

        self.distinct_attributes, self.distinct_count = {}, 0  # now the dicts with their sections
        self.attributes = self._with_sections()
        count = len(self.kernels)
        columns = (
            _joined(self.pieces)
            if self.pieces
            else {"launch": self.launch, **metric_columns(self.names, self.units, self.texts)}
        )
        return (
            tables.launch_table(
                self.kernels,
                self.indices,
                np.full(count, "", dtype=object),
                np.ones(count, dtype=np.int64),
                self.attributes,
            ),
            tables.metric_table(**columns),
        )


def _joined(pieces: list[dict[str, object]]) -> dict[str, object]:
    """The bulk path's chunks as one set of metric columns (categories joined, not widened to
    text), emptying ``pieces`` column by column so that a column is never held twice over."""
    import numpy as np
    import pandas as pd
    from pandas.api.types import union_categoricals

    rows = [len(piece["value"]) for piece in pieces]
    joined: dict[str, object] = {}
    for key in list(pieces[0]):
        parts = [piece.pop(key) for piece in pieces]
        first = parts[0]
        if len(parts) == 1 or isinstance(first, str):  # the origin is one string for every row
            joined[key] = first
        elif key == "text":
            joined[key] = (
                None
                if all(part is None for part in parts)
                else np.concatenate(
                    [np.full(count, None, dtype=object) if part is None else part for count, part in zip(rows, parts)]
                )
            )
        elif hasattr(first, "categories"):
            joined[key] = union_categoricals(  # an empty chunk's categories have no string dtype
                [pd.Categorical.from_codes(part.codes, pd.Index(part.categories, dtype=object)) for part in parts]
            )
        else:
            joined[key] = np.concatenate(parts)
        del parts, first
    pieces.clear()
    return joined


def _whole_record(line: str, handle: TextIO) -> str:
    """``line`` joined with the following lines while a quoted field is still open. The quote
    parity is kept per line: recounting the joined text made a stray quote cost quadratic time."""
    parts, odd = [line], line.count('"') % 2
    while odd:
        more = next(handle, None)
        if more is None:
            break
        parts.append(more)
        odd ^= more.count('"') % 2
    return "".join(parts)


def _shared_prefix(record: str, row: list[str], i_name: int) -> str:
    """The raw text of ``record`` before its Metric Name field, when every field before it is
    quoted plainly (the way ncu writes them); a never-matching prefix otherwise."""
    prefix = '"' + '","'.join(row[:i_name]) + '","'
    return prefix if record.startswith(prefix) else "\0"
