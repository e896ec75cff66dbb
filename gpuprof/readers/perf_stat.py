"""Linux ``perf stat`` counting output: the human table and the ``-x,`` CSV form.

Both forms, with interval (``-I``), per-CPU/per-core/per-socket (``-A``, ``--per-core``) and
cgroup (``-G``) columns, ``<not counted>``/``<not supported>`` values, the multiplexing percentage,
``-r`` spreads, program output before the block, the ``# started on`` header ``-o`` writes and
CRLF line ends. The human form follows LC_NUMERIC: de_DE prints ``3.642.649.330`` and
``1,101976138 seconds``, de_CH ``1’234’567``, en_IN ``1,23,45,678``; the decimal mark is taken
from the file (the 9-decimal elapsed time, a percentage or an msec value).

Top-Down output (``--topdown``, TopdownL1, ``-M Pipeline*``) is :mod:`perf_topdown`'s; ``sniff``
leaves it alone. :func:`parse_csv` is also what :mod:`gpuprof.launch.perf` reads live output with.
perf prints no version in this output, so the layout is recognised by its lines.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from gpuprof.errors import FormatError, shortened
from gpuprof.model import DERIVED, MEASURED, Launch, Metric, Run
from gpuprof.model.units import parse_locale_number as perf_number
from gpuprof.model.units import to_base

NAME = "perf-stat"
DESCRIPTION = "Linux perf stat counts (human table or -x, CSV; -I, -A, --per-core, -G, -o, -r)"

NOT_COUNTED = ("<not counted>", "<not supported>")
# Units perf stat prints beside a count (task-clock msec, duration_time ns, RAPL Joules, IMC MiB).
UNITS = ("msec", "ns", "us", "Joules", "MiB", "KiB", "GiB", "MB", "kB", "W")

# Every pattern below runs in time linear in the line: fuzzed files hold lines of a megabyte, and a
# pattern that can split a run of digits or blanks in many ways (a lazy group before an optional
# tail, a value class that overlaps \s, a shadow number beside free text) took minutes on them.
# Possessive quantifiers and atomic groups (Python 3.11+) commit where no other split could match.
# The header line's target and '(N runs)' are cut by _header(), not by a lazy group.
_HEADER = re.compile(r"Performance counter stats for (?P<rest>.+)")
_DIGITS = re.compile(r"\d+")
_STARTED = re.compile(r"^#\s*started on\s+(?P<when>\S(?:.*\S)?|\s)\s*$")
_SECONDS = re.compile(
    r"^\s*(?P<value>\d[\d.,'’]*)(?:\s*\+-\s*[\d.,]+)?\s+seconds\s+(?P<what>time elapsed|user|sys)"
    r"(?:\s*\(\s*\+-\s*(?P<spread>[\d.,]+)\s*%\s*\))?"
)
# A line shaped like an elapsed-time or counter line whose value token perf would never print
# ('-1', '1e308', 'nan', 'n/a', '2,84.766,97'): its value is kept as missing, with a note.
_ANY_SECONDS = re.compile(r"^\s*+(?P<value>\S++)(?:\s*+\+-\s*+\S++)?+\s++seconds\s++(?P<what>time elapsed|user|sys)")
_ANY_COUNT = re.compile(
    r"^\s*+(?P<value>[-+]?+(?:nan|n/a|inf(?:inity)?+|\.?+\d\S*+))\s++"
    r"(?:(?:" + "|".join(UNITS) + r")\s++)?+(?P<event>[A-Za-z{][^\s#(]*+)",
    re.IGNORECASE,
)
_VALUE = r"<not counted>|<not supported>|\d[\d.,'’\u202f\u00a0]*"
_AGGREGATE = r"CPU\d+|S\d+(?:-D\d+)?(?:-(?:C|L\d|N)\d+)?|N\d+"
# The value may end in a (narrow) no-break space that perf meant as the blank after it: the atomic
# group lets the value give that one back, then commits (a shorter value cannot start an event).
_HUMAN = re.compile(
    rf"^\s*(?:(?P<time>\d+[.,]\d{{6,9}})\s+)?"
    rf"(?:(?P<agg>{_AGGREGATE})\s+(?:(?P<cpus>\d+)\s+)?)?"
    rf"(?>(?P<value>{_VALUE})\s+)"
    rf"(?:(?P<unit>{'|'.join(UNITS)})\s+)?"
    r"(?P<event>[A-Za-z{][^\s#(]*)(?P<rest>.*)$"
)
_PCT = re.compile(r"\(\s*(?P<pct>\d[\d.,]*)\s*%\s*\)\s*$")
_SPREAD = re.compile(r"\(\s*\+-\s*(?P<spread>[\d.,]+)\s*%\s*\)")
# '# <number> <words>' up to a '(' or the end; the words are the text between, stripped.
_SHADOW = re.compile(r"#\s*+(?P<num>-?\d[\d.,]*+)\s*+(?P<text>(?:[^(#\s]++(?:\s++[^(#\s]++)*+)?+)\s*+(?:\(|$)")
_TOPDOWN = re.compile(r"tma_|TopdownL\d|--topdown|retiring\s+bad speculat|\bPipelineL\d")
_TOPDOWN_WORDS = ("tma_", "TopdownL", "--topdown", "retiring", "PipelineL")  # one is in every match: looked for first
_TIME = re.compile(r"^\d+\.\d+$")
# '--per-thread' rows start with 'comm-tid' (a name of up to 16 characters, no blanks): one cell, then blanks.
_THREAD = re.compile(r"^\s*+(?P<thread>[^\s\d<]\S{0,40}?-\d+)\s++(?=[\d<])")
_CSV_THREAD = re.compile(r"^[^\d<\s][^,;\t]{0,40}-\d++$")  # the same cell in -x form ('writer-0-3515547')
_VARIANCE = re.compile(r"^(?P<pct>\d+\.\d+)%$")  # -r's relative standard deviation in -x form ('0.20%')
AGGREGATE = re.compile(rf"^(?:{_AGGREGATE})$")  # a whole -A/--per-core/--per-socket cell
# perf's shadow-metric words -> (factor, base unit) for the value printed before them.
# '-M GFLOPS' annotates the first event of its group with the metric ('# 129.3 GFLOPs'; newer perf
# metric files name it tma_info_system_gflops), computed by perf from the FP events over duration_time.
_SHADOW_UNITS = {
    "GHz": (1e9, "hertz"),
    "G/sec": (1e9, "event/second"),
    "M/sec": (1e6, "event/second"),
    "K/sec": (1e3, "event/second"),
    "/sec": (1.0, "event/second"),
    "GFLOPs": (1e9, "FLOP/second"),
    "tma_info_system_gflops": (1e9, "FLOP/second"),
}
# perf stat options that take a value (so the workload starts after it).
_VALUED = {
    "-e",
    "-M",
    "-I",
    "-x",
    "-o",
    "-G",
    "-p",
    "-C",
    "-r",
    "-t",
    "--pid",
    "--cpu",
    "--metrics",
    "--event",
    "--interval-print",
    "--repeat",
    "--output",
    "--cgroup",
}


@dataclass(frozen=True)
class PerfCount:
    """One counter line: ``value`` is a number in ``unit`` or '<not counted>'/'<not supported>'."""

    event: str
    value: float | str
    unit: str = ""
    time: float | None = None  # interval end, seconds since start (-I)
    aggregate: str | None = None  # CPU0, S0-D0-C1, ... (-A, --per-core, --per-socket)
    cpus: int | None = None  # how many CPUs perf summed into the aggregate (not with -A)
    cgroup: str | None = None  # -G
    running_pct: float | None = None  # share of the time the event was on the PMU (multiplexing)
    spread_pct: float | None = None  # -r: relative standard deviation over the runs
    shadow: tuple[float, str] | None = None  # perf's own derived metric: (value, words)
    thread: str | None = None  # --per-thread: the comm-tid cell ('ls-3125')
    more: tuple[tuple[float, str], ...] = ()  # -M: perf's further metrics on their own -x lines


@dataclass
class PerfStat:
    """Everything one perf stat output holds."""

    counts: list[PerfCount]
    form: str  # "human" or "csv"
    target: str | None = None  # 'command', process id '123', system wide
    runs: int | None = None  # -r N
    started: str | None = None  # '# started on' (-o)
    seconds: dict[str, tuple[float, float | None]] = field(default_factory=dict)  # elapsed/user/sys -> (s, spread %)
    decimal: str = "."
    skipped_lines: int = 0  # program output before the block
    unreadable: list[str] = field(default_factory=list)  # 'line N: ...' for values kept as missing


def detect_decimal(text: str) -> str:
    """The decimal mark of a human-form output: ',' under de_DE-like locales, else '.'."""
    for pattern in (r"\d([.,])\d{9}\s+seconds\b", r"\(\s*\d+([.,])\d+\s*%\s*\)", r"\d([.,])\d{2}\s+msec\b"):
        match = re.search(pattern, text)
        if match:
            return match.group(1)
    return "."


def _header(line: str) -> tuple[str, str | None] | None:
    """(target, runs digits or None) of a 'Performance counter stats for TARGET [(N runs)]:' line.

    The target is the text after 'for ' up to a trailing '(N runs)', ':' and blanks (the shortest
    that leaves such a tail, at least one character), cut with string operations in linear time."""
    match = _HEADER.search(line)
    if match is None:
        return None
    rest = match.group("rest")
    body = rest.rstrip()
    core = body.removesuffix(":")
    if core.endswith(" runs)"):
        opening = core.rfind("(")
        digits = core[opening + 1 : -len(" runs)")]
        if opening > 0 and _DIGITS.fullmatch(digits):
            return rest[: max(1, len(core[:opening].rstrip()))], digits
    return rest[: max(1, len(core))], None


def _value(text: str, decimal: str) -> float | str | None:
    return text if text in NOT_COUNTED else perf_number(text, decimal)


def parse_human_line(line: str, decimal: str = ".") -> PerfCount | None:
    """One counter line of the human table, or None."""
    match = _HUMAN.match(line)
    if not match:
        return None
    value = _value(match.group("value"), decimal)
    if value is None:
        return None
    rest = match.group("rest")
    pct = _PCT.search(rest)
    spread = _SPREAD.search(rest)
    shadow = _SHADOW.search(rest)
    cgroup = re.split(r"[#(]", rest, maxsplit=1)[0].strip() or None
    time = match.group("time")
    return PerfCount(
        event=match.group("event"),
        value=value,
        unit=match.group("unit") or "",
        time=perf_number(time, decimal) if time else None,
        aggregate=match.group("agg"),
        cpus=int(match.group("cpus")) if match.group("cpus") and not match.group("agg").startswith("CPU") else None,
        cgroup=cgroup,
        running_pct=perf_number(pct.group("pct"), decimal) if pct else None,
        spread_pct=perf_number(spread.group("spread"), decimal) if spread else None,
        shadow=(
            (shadow_value, shadow.group("text"))
            if shadow
            and shadow.group("text")
            and (shadow_value := perf_number(shadow.group("num"), decimal)) is not None
            else None
        ),
    )


def parse_thread_line(line: str, decimal: str = ".") -> PerfCount | None:
    """A ``--per-thread`` counter line: a ``comm-tid`` cell (the command's name, then the thread
    id), then what a plain counter line holds; None for any other line."""
    found = _THREAD.match(line)
    if not found:
        return None
    count = parse_human_line(line[found.end() :], decimal)
    return dataclasses.replace(count, thread=found.group("thread")) if count else None


def _is_value(field: str) -> bool:
    return field in NOT_COUNTED or perf_number(field) is not None


def _csv_prefix(fields: list[str]) -> tuple[float | None, str | None, int]:
    """(time, thread, index of the next field) for a ``-x`` line's optional leading cells: the
    ``-I`` time stamp, then a ``--per-thread`` ``comm-tid`` cell (the comm may hold '-' itself)."""
    start = 0
    time = None
    if len(fields) > 1 and _TIME.match(fields[0]) and (_is_value(fields[1]) or _CSV_THREAD.match(fields[1])):
        time, start = float(fields[0]), 1
    thread = None
    if start + 1 < len(fields) and _CSV_THREAD.match(fields[start]) and not AGGREGATE.match(fields[start]):
        thread, start = fields[start], start + 1
    return time, thread, start


def parse_csv_fields(fields: list[str]) -> PerfCount | None:
    """One ``-x`` line split into fields: [time,] [comm-tid | aggregate[, nr],] value, unit, event,
    [cgroup,] [-r variance %,] run time, running %, metric value, metric unit. None when the fields
    do not fit. perf prints ``-r``'s variance right after the event (util/stat-display.c), before
    the run time, though perf-stat(1) lists it after the percentage."""
    fields = [f.strip() for f in fields]
    time, thread, start = _csv_prefix(fields)
    aggregate = cpus = None
    if thread is None and start < len(fields) and AGGREGATE.match(fields[start]):
        aggregate = fields[start]
        # --per-core/--per-socket/--per-node print how many CPUs were summed; -A (CPUn) does not.
        if not aggregate.startswith("CPU") and start + 1 < len(fields) and fields[start + 1].isdigit():
            cpus = int(fields[start + 1])
        start += 1 if aggregate.startswith("CPU") else 2
    if len(fields) < start + 3:
        return None
    value_text, unit, event = fields[start : start + 3]
    if not _is_value(value_text) or unit not in ("", *UNITS) or not re.match(r"[A-Za-z{]", event):
        return None
    rest = fields[start + 3 :]
    cgroup = rest.pop(0) if rest and rest[0] and perf_number(rest[0]) is None and not _VARIANCE.match(rest[0]) else None
    variance = _VARIANCE.match(rest[0]) if rest else None
    if variance:
        rest.pop(0)
    pct = perf_number(rest[1]) if len(rest) > 1 and rest[1] else None
    shadow_value = perf_number(rest[2]) if len(rest) > 2 and rest[2] else None
    shadow_text = rest[3] if len(rest) > 3 else ""
    return PerfCount(
        event=event,
        value=_value(value_text, "."),
        unit=unit,
        time=time,
        aggregate=aggregate,
        cpus=cpus,
        cgroup=cgroup,
        running_pct=pct,
        spread_pct=float(variance["pct"]) if variance else None,
        shadow=(shadow_value, shadow_text) if shadow_value is not None and shadow_text else None,
        thread=thread,
    )


def parse_csv_metric_line(fields: list[str]) -> tuple[str | None, tuple[float, str]] | None:
    """A ``-x`` line that holds only a metric (perf's second and later ``-M`` metrics of one event:
    the prefix cells, empty value/unit/event/run/percentage cells, then metric value and unit):
    (comm-tid or None, (value, unit words)); None for any other line."""
    fields = [f.strip() for f in fields]
    _, thread, start = _csv_prefix(fields)
    if thread is None and start < len(fields) and AGGREGATE.match(fields[start]):
        start += 1 if fields[start].startswith("CPU") else 2
    cells = fields[start:]
    if len(cells) < 3 or any(cells[:-2]) or not cells[-1]:
        return None
    value = perf_number(cells[-2]) if cells[-2] else None
    return (thread, (value, cells[-1])) if value is not None else None


def _split(line: str, separator: str) -> list[str]:
    return line.rstrip("\r\n").split(separator)


def _csv_separator(lines: list[str]) -> str | None:
    """The ``-x`` separator that makes the most lines parse (',' ';' or tab), None if none does."""
    best, best_count = None, 0
    for separator in (",", ";", "\t"):
        count = sum(1 for line in lines if separator in line and parse_csv_fields(_split(line, separator)))
        if count > best_count:
            best, best_count = separator, count
    return best


def parse_csv(text: str) -> PerfStat:
    """A ``perf stat -x<sep>`` output (with or without ``-o``'s header)."""
    lines = text.splitlines()
    separator = _csv_separator(lines) or ","
    counts: list[PerfCount] = []
    started = None
    skipped = 0
    unreadable: list[str] = []
    for number, line in enumerate(lines, 1):
        header = _STARTED.match(line)
        if header:
            started = header.group("when")
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = _split(line, separator)
        count = parse_csv_fields(fields)
        if count:
            counts.append(count)
        elif (metric := parse_csv_metric_line(fields)) and counts:
            at = next((i for i in range(len(counts) - 1, -1, -1) if counts[i].thread == metric[0]), len(counts) - 1)
            counts[at] = dataclasses.replace(counts[at], more=(*counts[at].more, metric[1]))
        elif bad := _ANY_COUNT.match(" ".join(field.strip() for field in fields[:3] if field.strip())):
            unreadable.append(_unreadable_count(number, bad["value"], bad["event"]))
        else:
            skipped += 1
    return PerfStat(counts, "csv", started=started, skipped_lines=skipped, unreadable=unreadable)


def parse_human(text: str) -> PerfStat:
    """A ``perf stat`` human table; lines before the 'Performance counter stats' header are
    program output and are skipped (an interval run has no header: every line is tried)."""
    decimal = detect_decimal(text)
    lines = text.splitlines()
    result = PerfStat([], "human", decimal=decimal)
    start = next((i for i, line in enumerate(lines) if _HEADER.search(line)), None)
    if start is not None:
        found = _header(lines[start])
        assert found is not None
        target, runs = found[0].strip(), found[1]
        quoted = len(target) > 1 and target[0] == target[-1] == "'"
        result.target = target[1:-1] if quoted else target
        try:
            result.runs = int(runs) if runs else None
        except ValueError:  # more digits than int() converts (4300): not a run count
            result.runs = None
        result.skipped_lines = sum(1 for line in lines[:start] if line.strip() and not _STARTED.match(line))
    for line in lines:
        started = _STARTED.match(line)
        if started:
            result.started = started.group("when")
    for number, line in enumerate(lines[(start or 0) :], (start or 0) + 1):
        seconds = _SECONDS.match(line)
        value = perf_number(seconds.group("value"), decimal) if seconds else None
        if value is not None:
            spread = seconds.group("spread")
            result.seconds[seconds.group("what")] = (value, perf_number(spread, decimal) if spread else None)
            continue
        if bad := _ANY_SECONDS.match(line):
            result.unreadable.append(
                f"line {number}: '{shortened(bad['value'], 40)}' is not a duration perf prints, "
                f"so 'seconds {bad['what']}' is kept as missing"
            )
            continue
        if line.lstrip().startswith("#"):
            continue
        count = parse_human_line(line, decimal) or parse_thread_line(line, decimal)
        if count:
            result.counts.append(count)
        elif bad := _ANY_COUNT.match(line):
            result.unreadable.append(_unreadable_count(number, bad["value"], bad["event"]))
    return result


def _unreadable_count(number: int, value: str, event: str) -> str:
    return (
        f"line {number}: '{shortened(value, 40)}' is not a count perf prints, so {event_name(event)} is kept as missing"
    )


def event_name(event: str) -> str:
    """perf's event as gpuprof names it: 'cpu_core/cycles/' -> 'cpu_core/cycles'."""
    return event[:-1] if event.endswith("/") and event.count("/") >= 2 else event


def count_metrics(count: PerfCount) -> list[Metric]:
    """The metrics one counter line gives: the count in base units, then its running share when
    it was multiplexed (< 100 %), its -r spread, and perf's derived value beside it."""
    name = event_name(count.event)
    if isinstance(count.value, str):
        metrics = [Metric(name, count.value, "event", origin=MEASURED)]
    else:
        value, unit = to_base(count.value, count.unit) if count.unit else (count.value, "event")
        metrics = [Metric(name, value, unit, origin=MEASURED)]
    if count.running_pct is not None and count.running_pct < 100:
        metrics.append(Metric(f"{name}:running", count.running_pct, "%", origin=MEASURED))
    if count.spread_pct is not None:
        metrics.append(Metric(f"{name}:spread", count.spread_pct, "%", origin=MEASURED))
    for number, words in (count.shadow, *count.more) if count.shadow is not None else count.more:
        factor, unit = _SHADOW_UNITS.get(words, (1.0, "%" if words.startswith("%") else ""))
        # 15 significant digits: perf prints 4 at most, and 129.3 x 1e9 is 129300000000.00002 in binary.
        metrics.append(Metric(f"{name}: {words}", float(f"{number * factor:.15g}"), unit, origin=DERIVED))
    return metrics


def launches(stat: PerfStat, kernel: str) -> list[Launch]:
    """One Launch per interval × aggregate × cgroup × thread (one in all for a plain run), in file order;
    elapsed/user/sys go with the only launch, or into a 'whole run' launch after the intervals.
    With ``-r N`` perf printed means over N runs: ``invocations`` is N."""
    groups: dict[tuple[float | None, str | None, str | None, str | None], Launch] = {}
    for count in stat.counts:
        key = (count.time, count.aggregate, count.cgroup, count.thread)
        if key not in groups:
            attributes = {
                k: str(v)
                for k, v in (
                    ("time_s", count.time),
                    ("aggregate", count.aggregate),
                    ("cpus", count.cpus),
                    ("cgroup", count.cgroup),
                    ("thread", count.thread),
                )
                if v is not None
            }
            groups[key] = Launch(kernel, len(groups), count.aggregate or "", stat.runs or 1, attributes)
        groups[key].metrics.extend(count_metrics(count))
    out = list(groups.values())
    seconds = [
        Metric(f"time {what}" if what != "time elapsed" else what, value, "second", origin=MEASURED)
        for what, (value, _) in stat.seconds.items()
    ]
    seconds += [
        Metric(f"{what}:spread", spread, "%", origin=MEASURED)
        for what, (_, spread) in stat.seconds.items()
        if spread is not None
    ]
    if seconds:
        if len(out) == 1:
            out[0].metrics.extend(seconds)
        else:
            out.append(Launch(kernel, len(out), "", stat.runs or 1, {"scope": "whole run"}, seconds))
    return out


def _is_csv(head: str) -> bool:
    lines = [line for line in head.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    separator = _csv_separator(lines[:200])
    if separator is None:
        return False
    with_separator = [line for line in lines[:200] if separator in line]
    good = sum(1 for line in with_separator if parse_csv_fields(_split(line, separator)))
    return good >= max(1, len(with_separator) // 2)


def _is_trimmed_block(head: str) -> bool:
    """A human block pasted without its 'Performance counter stats' header (people trim it): at
    least two counter lines, one of them with perf's own '# value words' beside the count."""
    if "#" not in head:  # no line with perf's '# value words' (a CSV or trace of another tool, at once)
        return False
    decimal = detect_decimal(head)
    counts = [count for line in head.splitlines() if (count := parse_human_line(line, decimal))]
    return len(counts) >= 2 and any(count.shadow for count in counts)


def sniff(path: Path, head: str) -> bool:
    if any(word in head for word in _TOPDOWN_WORDS) and _TOPDOWN.search(head):
        return False
    if _HEADER.search(head):
        decimal = detect_decimal(head)
        return any(parse_human_line(line, decimal) for line in head.splitlines())
    return _is_csv(head) or _is_trimmed_block(head)


def prompt_command(lines: list[str]) -> str | None:
    """The profiled command on a pasted '$ perf stat ... CMD' prompt line (options skipped)."""
    for line in lines:
        words = line.split()
        if len(words) > 2 and words[0] in ("$", "%", "#") and "perf" in words[1:3]:
            rest = words[words.index("perf") + 1 :]
            if rest[:1] != ["stat"]:
                continue
            rest = rest[1:]
            if "--" in rest:
                return " ".join(rest[rest.index("--") + 1 :]) or None
            i = 0
            while i < len(rest) and rest[i].startswith("-"):
                i += 2 if rest[i] in _VALUED else 1
            if i < len(rest):
                return " ".join(rest[i:])
    return None


def parse(text: str) -> PerfStat:
    """Either form, decided by the text itself."""
    return parse_human(text) if _HEADER.search(text) or not _is_csv(text) else parse_csv(text)


def notes(stat: PerfStat) -> list[str]:
    notes: list[str] = []
    absent = sorted({f"{event_name(c.event)} {c.value}" for c in stat.counts if isinstance(c.value, str)})
    if absent:
        notes.append("perf could not count: " + ", ".join(absent))
    multiplexed = [c for c in stat.counts if c.running_pct is not None and 0 < c.running_pct < 100]
    if multiplexed:
        low = min(c.running_pct or 0 for c in multiplexed)
        notes.append(
            f"{len(multiplexed)} counts were multiplexed (on the PMU {low:g}% of the time at least) "
            "and scaled up by perf; their ':running' metric gives the share"
        )
    if stat.form == "human" and stat.target is None and not stat.seconds and all(c.time is None for c in stat.counts):
        notes.append(
            "no 'Performance counter stats' header and no elapsed time (a trimmed paste): "
            "the counts are read as printed"
        )
    notes += stat.unreadable
    if stat.skipped_lines:
        notes.append(f"{stat.skipped_lines} non-perf lines (program output) skipped")
    if stat.decimal != ".":
        notes.append(f"numbers use '{stat.decimal}' as decimal mark (perf follows LC_NUMERIC)")
    return notes


def run_from_stat(stat: PerfStat, source: str, command: str | None = None) -> Run:
    kernel = stat.target or command or "perf stat"
    environment = {
        k: v
        for k, v in (
            ("tool", "perf stat"),
            ("form", stat.form),
            ("target", stat.target),
            ("runs", stat.runs),
            ("started", stat.started),
        )
        if v is not None
    }
    return Run(
        kind="import",
        format=NAME,
        source=source,
        device={"kind": "cpu"},
        environment=environment,
        launches=launches(stat, kernel),
        notes=notes(stat),
    )


_SEPARATOR = re.compile(r"^\s*-{3,}\s*$")  # a '---' line people put between pasted runs


def blocks(text: str) -> list[str]:
    """The text of each perf stat run in ``text``: one per 'Performance counter stats for' header
    (several runs pasted one after another, each block running to the next header), else one per
    '# started on' line (``-o FILE --append`` writes one for each run), else the parts between
    '---' lines that hold counts; the whole text when it holds at most one run."""
    # substring counts first: a file of one run (nearly all) is not split into lines here
    several = [(text.count("Performance counter stats for") > 1, _HEADER), (text.count("started on") > 1, _STARTED)]
    if not any(found for found, _ in several) and "---" not in text:
        return [text]
    lines = text.splitlines(keepends=True)
    for _, pattern in filter(lambda pair: pair[0], several):
        starts = [i for i, line in enumerate(lines) if pattern.search(line)]
        if len(starts) >= 2:
            cuts = [0, *starts[1:], len(lines)]
            return ["".join(lines[a:b]) for a, b in zip(cuts, cuts[1:])]
    separators = [i for i, line in enumerate(lines) if _SEPARATOR.match(line)]
    if separators:
        cuts = [-1, *separators, len(lines)]
        parts = ["".join(lines[a + 1 : b]) for a, b in zip(cuts, cuts[1:])]
        parts = [part for part in parts if parse(part).counts]
        if len(parts) >= 2:
            return parts
    return [text]


def _several(path: Path, texts: list[str], command: str | None) -> Run:
    """One launch group per perf stat run of the file, each named by the command it counted."""
    stats = [parse(text) for text in texts]
    runs = [
        run_from_stat(stat, str(path), prompt_command(text.splitlines()) or command or f"perf stat run {number}")
        for number, (stat, text) in enumerate(zip(stats, texts), start=1)
    ]
    launches = [launch for run in runs for launch in run.launches]
    for number, run in enumerate(runs, start=1):
        for launch in run.launches:
            launch.attributes = {**launch.attributes, "perf_run": str(number)}
    for index, launch in enumerate(launches):
        launch.index = index
    notes = [f"{len(runs)} perf stat runs in one file: each is its own launch, named by the command it counted"]
    if any(launch.kernel.startswith("perf stat run ") for launch in launches):
        notes[0] += " ('perf stat run N' where the file names none)"
    notes += list(dict.fromkeys(note for run in runs for note in run.notes))
    targets = [run.environment.get("target") for run in runs]
    environment = {"tool": "perf stat", "form": stats[0].form, "targets": [t for t in targets if t]}
    return Run(
        kind="import",
        format=NAME,
        source=str(path),
        device={"kind": "cpu"},
        environment=environment,
        launches=launches,
        notes=notes,
    )


def read(path: Path) -> Run:
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    stat = parse(text)
    if not stat.counts:
        raise FormatError(
            f"{path}: no perf stat counter lines found",
            "give the output of 'perf stat' (human form or -x,), e.g. the file written with -o",
        )
    command = prompt_command(text.splitlines())
    texts = blocks(text)
    if len(texts) > 1:
        return _several(path, texts, command)
    return run_from_stat(stat, str(path), command)
