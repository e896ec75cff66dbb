"""Aligned text tables that fit a terminal's width.

A table wider than the terminal is made to fit in steps, each only when the one before was not
enough: long explanations (basis, source, origin text) move under the table as numbered notes;
text cells and headers wrap inside their columns; and what still does not fit is split into
panels of columns, each repeating the first column (the row's key) and keeping a group's columns
(one device's) together. ``width=None`` prints every row on one line, as ``--wide`` asks.
"""

from __future__ import annotations

import os
import re
import textwrap
from dataclasses import dataclass

GAP = 2
NOTE_HEADER = re.compile(r"(basis|source|origin|\. ceiling|above 100|why not used)$", re.IGNORECASE)
NOTE_AT = (16, 10)  # cells of note columns longer than this become notes when the table is too wide (2nd try)
MIN_TEXT = 8  # text columns wrap down to this width (or their longest word, up to MAX_WORD)
MAX_WORD = 32
INDENT = "  "  # before the continuation lines of a wrapped cell
WHOLE = 17  # cells up to this long (a number and its unit, a label) are never wrapped


@dataclass
class Column:
    header: str
    cells: list[str]
    numeric: bool
    group: str | None = None
    width: int = 0

    def natural(self) -> int:
        return max([len(self.header), *map(len, self.cells)])

    def narrowest(self) -> int:
        """The width below which wrapping cannot go: numbers and short cells never wrap, words up to
        MAX_WORD stay whole (on a continuation line, after its indent)."""
        words = [len(w) for w in self.header.split()]
        if self.numeric:
            return max([*map(len, self.cells), *words, 1])
        words += [len(w) + len(INDENT) for cell in self.cells for w in cell.split()[1:]]
        words += [len(cell.split()[0]) for cell in self.cells if cell.split()]
        words += [len(cell) for cell in self.cells if len(cell) <= WHOLE]  # '2.585 GFLOP/s' stays whole
        return min(max(min(max(words, default=1), MAX_WORD), MIN_TEXT), self.natural())


def _span(columns: list[Column], widths: list[int]) -> int:
    return sum(widths) + GAP * (len(columns) - 1)


def _with_notes(columns: list[Column], notes: list[str], longer: int) -> tuple[list[Column], list[str]]:
    """The columns with every cell of each explanation column that has a cell longer than
    ``longer`` as '[n]' (a column is all text or all notes), and the notes with those texts added
    (equal texts share a number), numbered in reading order."""
    notes = list(notes)
    moved = [Column(c.header, list(c.cells), c.numeric, c.group) for c in columns]
    explaining = [
        c
        for c in moved[1:]
        if not c.numeric and NOTE_HEADER.search(c.header) and any(len(cell) > longer for cell in c.cells)
    ]
    for row in range(len(columns[0].cells)):
        for column in explaining:
            cell = column.cells[row]
            if cell:
                notes += [cell] if cell not in notes else []
                column.cells[row] = f"[{notes.index(cell) + 1}]"
    return moved, notes


def _shrink(columns: list[Column], width: int) -> None:
    """Narrow columns until the row fits ``width``, widest first, in the order that costs the reader
    least: headers wider than their cells, then explanation columns, then other text, then the
    row's key; at their narrowest when even that does not fit."""
    for column in columns:
        column.width = column.natural()
    steps = (
        (lambda c: True, lambda c: max([*map(len, c.cells), c.narrowest()])),
        (lambda c: bool(NOTE_HEADER.search(c.header)), Column.narrowest),
        (lambda c: c is not columns[0], Column.narrowest),  # the row's key last
        (lambda c: True, Column.narrowest),
    )
    for chosen, floor in steps:
        while _span(columns, [c.width for c in columns]) > width:
            candidates = [c for c in columns if chosen(c) and c.width > floor(c)]
            if not candidates:
                break
            max(candidates, key=lambda c: c.width).width -= 1


def _panels(columns: list[Column], width: int) -> list[list[Column]]:
    """The columns in panels that fit ``width``, each starting with the key column."""
    key, rest = columns[0], columns[1:]
    units: list[list[Column]] = []
    for column in rest:  # a group's columns stay together
        if units and column.group is not None and units[-1][0].group == column.group:
            units[-1].append(column)
        else:
            units.append([column])
    panels: list[list[Column]] = [[key]]
    for unit in units:
        trial = panels[-1] + unit
        if len(panels[-1]) > 1 and _span(trial, [c.narrowest() for c in trial]) > width:
            panels.append([key])
        panels[-1] += unit
    return panels


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` in lines of ``width``; continuation lines indented so a wrapped cell reads as one."""
    return textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=True, break_on_hyphens=False) or [""]


def _render(columns: list[Column], rows: int) -> list[str]:
    def line(parts: list[str]) -> str:
        return (" " * GAP).join(parts).rstrip()

    def aligned(text: str, column: Column) -> str:
        return text.rjust(column.width) if column.numeric else text.ljust(column.width)

    out = []
    if any(c.group for c in columns):
        out.append(_group_line(columns))
    heads = [_wrap(c.header, c.width) for c in columns]
    depth = max(map(len, heads))
    for i in range(depth):  # headers wrap upwards-aligned to their last line, above the rule
        out.append(
            line([aligned(h[i - depth + len(h)] if i >= depth - len(h) else "", c) for h, c in zip(heads, columns)])
        )
    out.append(line(["-" * c.width for c in columns]))
    for r in range(rows):
        cells = [_wrap(c.cells[r], c.width, INDENT) if not c.numeric else [c.cells[r]] for c in columns]
        for i in range(max(map(len, cells))):
            out.append(line([aligned(cell[i] if i < len(cell) else "", c) for cell, c in zip(cells, columns)]))
    return out


def _fit_groups(columns: list[Column], width: int) -> None:
    """Widen a group's last column so the group's name fits over its columns, where the row has room."""
    for i, column in enumerate(columns):
        if column.group and (i == len(columns) - 1 or columns[i + 1].group != column.group):
            members = [c for c in columns[: i + 1] if c.group == column.group]
            short = len(column.group) - (sum(c.width for c in members) + GAP * (len(members) - 1))
            room = width - _span(columns, [c.width for c in columns])
            column.width += max(0, min(short, room))


def _group_line(columns: list[Column]) -> str:
    """One line naming each group (a device) over its columns, cut to their width (:func:`_cut`)."""
    names = list(dict.fromkeys(c.group for c in columns if c.group))
    line = ""
    start = 0
    for i, column in enumerate(columns):
        if column.group and (i == 0 or columns[i - 1].group != column.group):
            span = sum(c.width + GAP for c in columns[i:] if c.group == column.group) - GAP
            line = line.ljust(start) + _cut(column.group, span, names)
        start += column.width + GAP
    return line.rstrip()


def _cut(name: str, width: int, names: list[str]) -> str:
    """``name`` in ``width`` characters, an ellipsis where it was cut. What all ``names`` share at
    their start ('AMD EPYC · ') goes first, so names that differ only at their end (one device's
    engines: pytensor, pytensor-jax) stay told apart; then the name is cut in the middle, keeping
    its end."""
    if len(name) <= width:
        return name
    shared = len(os.path.commonprefix(names)) if len(names) > 1 else 0
    shared = name.rfind(" ", 0, shared) + 1  # at a word's start: 'AMD EPYC · ' of 'AMD EPYC · pyt…'
    rest = name[shared:]
    if shared and len(rest) + 1 <= width:
        return "…" + rest
    if width < 2:
        return "…"[:width]
    end = (width - 1) // 2 if not shared else width - 1
    return name[: width - 1 - end] + "…" + name[len(name) - end :] if end else name[: width - 1] + "…"


def render(columns: list[Column], rows: int, width: int | None, notes: list[str]) -> str:
    """``columns`` of ``rows`` cells as aligned text fitting ``width`` (None: one line per row),
    then ``notes`` numbered under it, with the explanations moved out of the table."""
    for longer in NOTE_AT:  # short explanations stay in the table when moving the long ones was enough
        if width is not None and _span(columns, [c.natural() for c in columns]) > width:
            trial, trial_notes = _with_notes(columns, notes, longer)
            if longer == NOTE_AT[-1] or _span(trial, [c.natural() for c in trial]) <= width:
                columns, notes = trial, trial_notes
    if width is None or _span(columns, [c.natural() for c in columns]) <= width:
        for column in columns:
            column.width = column.natural()
        out = _render(columns, rows)
    else:
        panels = _panels(columns, width)
        if len(panels) > 1 and columns[0].natural() > width // 4:  # a long key would crowd every panel
            panels = _panels([Column("#", [str(n) for n in range(1, rows + 1)], True), *columns], width)
        out = []
        for panel in panels:
            _shrink(panel, width)
            _fit_groups(panel, width)
            out += [""] if out else []
            out += _render(panel, rows)
    if not rows:
        out.append("(no rows)")
    for n, text in enumerate(notes, 1):
        tag = f"[{n}] "
        lines = textwrap.wrap(text, width - len(tag)) if width else [text]
        out += [(tag if i == 0 else " " * len(tag)) + part for i, part in enumerate(lines or [""])]
    return "\n".join(out)
