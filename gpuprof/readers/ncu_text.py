"""Nsight Compute console output: the details page and the ``--print-summary`` tables.

Details page (``ncu ./app`` or ``ncu --metrics ... ./app`` without ``--csv``), one block per launch::

    ampere_sgemm_32x128_nn (13, 2, 2)x(256, 1, 1), Context 1, Stream 7, Device 0, CC 8.9
      Section: GPU Speed Of Light Throughput
      ----------------------- ------------- ------------
      Metric Name               Metric Unit Metric Value
      ----------------------- ------------- ------------
      Duration                      usecond        24.54
      ----------------------- ------------- ------------

      OPT   This kernel grid is too small to fill the available resources on this device, ...

Summary (``--print-summary per-gpu|per-kernel``), one block per kernel with Minimum/Maximum/Average::

    PathTracer(int, Pixel *, int), Block Size 256, Grid Size 8192, 1 invocations
      Section: Compute Workload Analysis
      Metric Name                      Metric Unit Minimum   Maximum   Average
      -------------------------------- ----------- --------- --------- ---------
      sm__inst_executed.avg.per_cycle_active     inst/cycle  1.792525  1.792525  1.792525

Both are fixed-width: the dashes under (and around) each header give the column extents, so empty
unit cells are read correctly. Units are auto-scaled per row ("Kbyte/block", "cycle/nsecond") and
converted to base units. Numbers follow the locale ncu ran under: a Spanish locale prints
``39.173.590`` and ``1.085.222,61``; the decimal mark is read from the file. One Launch per
details block (rule advice kept in its ``rules`` attribute) or per summary kernel line (value =
Average, Minimum/Maximum kept). Lines the file marks as omitted (``[... ...]``) are skipped with a note.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from pathlib import Path

from gpuprof.errors import FormatError, shortened
from gpuprof.model import Launch, Run
from gpuprof.model.units import parse_locale_number
from gpuprof.readers._text import ToolLog, convert_cell, metric_maker, number, open_text, parse_count

NAME = "ncu-text"
DESCRIPTION = (
    "Nsight Compute console output: details page (ncu [--metrics ...] without --csv) and "
    "--print-summary tables, fixed-width"
)

# Tempered and possessive groups: each part ends at its first separator, so a long line is read once.
_KERNEL = re.compile(
    r"^\s*+(?P<name>\S(?:(?!, Block Size ).)*+), Block Size (?P<block>(?:(?!, Grid Size ).)++), "
    r"Grid Size (?P<grid>.+?), (?P<invocations>\d++) invocations?\s*+$"
)
# Possessive groups: a fuzzed line of a megabyte must not make the name split in many ways.
_LAUNCH = re.compile(
    r"^\s*(?P<name>\S.*?) \((?P<grid>\d++, \d++, \d++)\)x\((?P<block>\d++, \d++, \d++)\), "
    r"Context (?P<context>\d++), Stream (?P<stream>\d++)"
    r"(?:, Device (?P<device>\d++))?(?:, CC (?P<cc>\d++\.\d++))?\s*$"
)
# ncu 2019.4-2022.x name a details-page launch by its start time: 'NAME, 2023-Mar-17 14:00:06, Context 1, Stream 7'.
_LAUNCH_DATED = re.compile(
    r"^\s*(?P<name>\S.*?), (?P<started>\d{4}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}:\d{2}), "
    r"Context (?P<context>\d++), Stream (?P<stream>\d++)\s*$"
)
_BLANK_GROUP = re.compile(r"(?<=\d) (?=\d{3}(?!\d))")  # '13 181 137': a blank between digit groups
_HEADER = re.compile(r"^\s*Metric Name\s+Metric Unit\s+(?:Minimum\s+Maximum\s+Average|Metric Value)\s*$")
_DASHES = re.compile(r"-+")
_PROCESS = re.compile(r"\[(?P<pid>\d++)\]\s++(?P<process>\S.*)")
_DEVICE = re.compile(r"^\s*Device (?P<device>\d+)\s*$")
_SECTION = re.compile(r"^\s*+Section: (?P<section>.*\S)\s*$")
_OMITTED = re.compile(r"^\s*\[\.\.\.")
_RULE = re.compile(r"^(?P<indent>\s*)(?P<kind>OPT|INF|WRN|ERR)\s{2,}+(?P<text>\S(?:.*\S)?)\s*$")
# A value printed with a decimal comma: '1.085.222,61', '39.173.590', '6,86', '1,792525'. Not ',ddd'
# or '.ddd' alone: '14,059' is C-locale grouping and '1.096' a C-locale fraction.
_COMMA_DECIMAL = re.compile(r"\s(?:\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?|\d{1,3}\.\d{3},\d+|\d+,(?:\d{1,2}|\d{4,}))\s*$")


def sniff(path: Path, head: str) -> bool:
    """A table header (ncu 2023+, --print-summary), or an older details page: a dated launch line
    and a 'Section:' line (those pages print the rule and rows with no header)."""
    lines = head.splitlines()
    return any(_HEADER.match(line) for line in lines) or (
        any(_LAUNCH_DATED.match(line) for line in lines) and any(_SECTION.match(line) for line in lines)
    )


def decimal_mark(lines: Iterable[str]) -> str:
    """',' when some table value is printed with a decimal comma (es_ES, de_DE ...), else '.'."""
    return "," if any(_COMMA_DECIMAL.search(line) for line in lines) else "."


def read(path: Path) -> Run:
    log = ToolLog("ncu")
    with open_text(path) as handle:
        lines = [line.rstrip("\r\n") for line in handle if not log.add(line)]
    page = _Page(decimal_mark(lines))
    for line in lines:
        page.line(line)
    launches = page.finish()
    if not launches or not any(launch.metrics for launch in launches):
        raise log.failure(path) or FormatError(
            f"{path}: no Nsight Compute metric tables with rows found",
            "Give a complete ncu console log (details page or --print-summary), e.g. one written with --log-file",
        )
    notes = log.notes()
    if page.decimal != ".":
        notes.append(f"numbers use '{page.decimal}' as decimal mark (ncu follows the locale)")
    notes += page.unreadable[:5]
    if len(page.unreadable) > 5:
        notes.append(f"{len(page.unreadable) - 5} more rows that do not fit their table were left out")
    if page.omitted:
        notes.append(
            f"the file marks {page.omitted} place(s) where lines were left out ([...]); "
            "only the lines present were read"
        )
    return Run(
        kind="import",
        format=NAME,
        source=str(path),
        device=_device(launches),
        environment={"tool": "ncu"},
        launches=launches,
        notes=notes,
    )


def _process(stripped: str) -> dict[str, str] | None:
    """pid, process and host of ``[1234] name@host``: the host follows the first ``@`` of the last word
    (string operations, so a long line is read once)."""
    match = _PROCESS.fullmatch(stripped)
    if not match:
        return None
    rest = match["process"]
    last_word = len(rest) - len(rest.rsplit(None, 1)[-1])
    at = rest.find("@", max(last_word, 1))
    if at < 0 or at == len(rest) - 1:
        return None
    return {"pid": match["pid"], "process": rest[:at], "host": rest[at + 1 :]}


class _Page:
    """Line-by-line state: where we are (process, device, launch, section, table columns, rule)."""

    def __init__(self, decimal: str) -> None:
        self.decimal = decimal
        self.launches: dict[tuple[str, ...], Launch] = {}
        self.context: dict[str, str] = {}
        self.launch: Launch | None = None
        self.section = ""
        self.columns: list[int] | None = None  # start of each fixed-width column
        self.rows = 0  # rows read in the current table
        self.rule: list[str] | None = None  # the rule paragraph being read
        self.rules: dict[int, list[str]] = {}  # id(launch) -> its rule paragraphs
        self.omitted = 0
        self.unreadable: list[str] = []  # rows that do not fit their table, kept as missing
        self.make = metric_maker()

    def line(self, line: str) -> None:
        stripped = line.strip()
        if self.columns is not None and stripped and not _OMITTED.match(line):
            self._in_table(line, stripped)
            return
        self.columns = None
        if self.rule is not None and stripped and not _RULE.match(line) and line.startswith(" " * 6):
            self.rule.append(stripped)  # continuation of an OPT/INF/WRN paragraph
            return
        after_rule = self.rule is not None
        self._close_rule()
        if after_rule and stripped and set(stripped) <= {"-", " "}:
            return  # ncu 2023+ separates one rule's paragraph from the next with dashes: not a table
        if _OMITTED.match(line):
            self.omitted += 1
        elif match := _LAUNCH.match(line) or _LAUNCH_DATED.match(line):
            self._details_launch(match)
        elif match := _KERNEL.match(line):
            self._summary_kernel(match)
        elif match := _SECTION.match(line):
            self.section = match["section"]
        elif self.launch is not None and stripped and set(stripped) <= {"-", " "}:
            self.columns, self.rows = [m.start() for m in _DASHES.finditer(line)], 0
        elif self.launch is not None and (match := _RULE.match(line)):
            self.rule = [f"{match['kind']}: {match['text']}"]
        elif found := _process(stripped):
            self.context.update(found)
        elif match := _DEVICE.match(line):
            self.context["device"] = match["device"]

    def finish(self) -> list[Launch]:
        if self.columns is not None and self.rows and len(self.columns) == 3:  # the rule under the rows is missing
            self.unreadable.insert(0, "the file looks truncated: its last table ends without the rule under its rows")
        self._close_rule()
        for launch in self.launches.values():
            if id(launch) in self.rules:
                launch.attributes["rules"] = "\n".join(self.rules[id(launch)])
        return list(self.launches.values())

    def _close_rule(self) -> None:
        if self.rule is not None and self.launch is not None:
            self.rules.setdefault(id(self.launch), []).append(" ".join(self.rule))
        self.rule = None

    def _in_table(self, line: str, stripped: str) -> None:
        """A line inside the dashes: the header (between two rules on the details page), a rule
        closing the table, or a row."""
        if set(stripped) <= {"-", " "}:
            if self.rows:
                self.columns = None  # the rule under the last row
            return
        if _HEADER.match(line):
            return
        self.rows += 1
        self._row(line)

    def _details_launch(self, match: re.Match[str]) -> None:
        attributes = {**self.context, **{k: v for k, v in match.groupdict().items() if v and k != "name"}}
        self.launch = self.launches[(str(len(self.launches)),)] = Launch(
            kernel=match["name"], index=len(self.launches), attributes=attributes
        )

    def _summary_kernel(self, match: re.Match[str]) -> None:
        attributes = {**self.context, "block": match["block"].strip(), "grid": match["grid"].strip()}
        key = (match["name"], *attributes.values(), match["invocations"])
        launch = self.launches.get(key)
        if launch is None:
            launch = self.launches[key] = Launch(
                kernel=match["name"],
                index=len(self.launches),
                invocations=parse_count(match["invocations"], 1),
                attributes=attributes,
            )
        self.launch = launch

    def _number(self, text: str) -> str:
        """A value cell in the C locale's spelling, so the shared converter reads it."""
        if self.decimal == "." or not text[:1].isdigit():
            return text
        # fr_FR/sv_SE/fi_FI group digits with a (narrow) no-break space, which a copy often turns into a blank
        value = parse_locale_number(_BLANK_GROUP.sub("\u202f", text), self.decimal)
        return text if value is None else repr(value)

    @staticmethod
    def _summary_cells(line: str) -> list[str] | None:
        """Name, unit, minimum, maximum, average of a --print-summary row, read as whole tokens (a row
        whose spaces were collapsed, or a value wider than its column, still reads right); None when
        the tokens do not fit."""
        tokens = line.split()
        if len(tokens) == 4 and number(tokens[1].replace(",", ".")) is not None:
            tokens.insert(1, "")  # no unit
        return tokens if len(tokens) == 5 else None

    def _details_cells(self, line: str) -> list[str] | None:
        """Name, unit, value of a details-page row, by the rule's columns (names hold spaces); None when
        a column edge cuts a token (a value wider than its column, spaces collapsed by a copy)."""
        starts = self.columns or []
        if any(0 < edge < len(line) and not line[edge - 1].isspace() for edge in starts[1:]):
            return None
        return [line[start:end].strip() for start, end in zip(starts, [*starts[1:], None])]

    def _row(self, line: str) -> None:
        assert self.launch is not None and self.columns is not None
        starts = self.columns
        if len(starts) not in (3, 5):
            return
        cells = self._summary_cells(line) if len(starts) == 5 else self._details_cells(line)
        if cells is None:
            self.unreadable.append(
                f"{shortened(self.launch.kernel, 60)}: the row '{shortened(line.strip(), 80)}' "
                "does not fit its table's columns: its metric is kept as missing"
            )
            return
        name, unit, *values = cells
        metric = self.make(name, unit, self._number(values[-1]))
        if len(values) == 3:  # summary: Minimum, Maximum, Average
            low, _ = convert_cell(self._number(values[0]), unit)
            high, _ = convert_cell(self._number(values[1]), unit)
            if low is None or high is None:
                self.unreadable.append(
                    f"{shortened(self.launch.kernel, 60)}: {shortened(name, 80)} has minimum "
                    f"'{shortened(values[0], 20)}' and maximum '{shortened(values[1], 20)}': "
                    "what is no number is kept as missing"
                )
            metric = dataclasses.replace(metric, minimum=low, maximum=high)
        self.launch.metrics.append(metric)
        sections = self.launch.attributes.get("sections", "").split("; ")
        if self.section and self.section not in sections:
            self.launch.attributes["sections"] = "; ".join(s for s in (*sections, self.section) if s)


def _device(launches: list[Launch]) -> dict[str, str]:
    devices = {launch.attributes.get("device", "") for launch in launches}
    return {"index": devices.pop()} if len(devices) == 1 and "" not in devices else {}
