"""A program's regions file (``$GPUPROF_REGIONS``, written by :mod:`gpuprof.regions`) as launches.

The named file holds the header; each process's lines are in its own segment beside it
(``<file>.<pid>``, ``<file>.<pid>.<n>``), which begins with the process's line and may end in NUL
bytes (a process killed before it cut its segment to its lines): they are skipped. Lines in the
named file itself (files written before segments) are read as well.

Every region instance becomes its own launch of kind "region": its name, the index the program gave,
its parent region (by launch index), thread, process and rank, its wall time (timed, from the two
``CLOCK_MONOTONIC`` timestamps) and its begin and end on that clock. Instances are never summed.

A region the program left open is closed where the program ended and marked: ``exit`` (the
interpreter closed it at exit), ``parent`` (its parent was closed first), or ``killed`` (its process
wrote no end at all: it was killed or crashed hard; closed at ``end_ns``, the command's end as the
parent measured it, else the file's last timestamp). A file that is not JSON lines of this format,
or whose lines belong to another run, is refused with one line.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuprof.errors import FormatError
from gpuprof.model import TIMED, Launch, Metric, Run

NAME = "gpuprof-regions"
DESCRIPTION = "gpuprof regions file (JSON lines a program writes through gpuprof.region)"
FORMAT, VERSION = "gpuprof-regions", 1
KIND = "region"
CLOCK_BASIS = "CLOCK_MONOTONIC nanoseconds at the region's begin and end, in the program's process"
KILLED = "killed"
_KNOWN_KEYS = {"e", "id", "n", "p", "t", "i", "par", "a", "ts", "unclosed", "raised"}
_SEGMENT = re.compile(r"\.\d+(\.\d+)?")  # what a segment's name adds to the file's


@dataclass
class Region:
    """One region instance as its process recorded it."""

    name: str
    process: int
    ident: int
    begin_ns: int
    thread: int = 0
    index: Any = None
    parent: int | None = None  # the parent's ident in the same process
    since: int | None = None  # when its process began (its process line's "since"): two processes of one pid apart
    end_ns: int | None = None
    rank: int | None = None
    unclosed: str | None = None
    raised: str | None = None  # the exception that ended it, by name
    attributes: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, dict[str, Any]] = field(default_factory=dict)  # hook values: {"begin": {}, "end": {}}

    @property
    def seconds(self) -> float:
        return ((self.end_ns or self.begin_ns) - self.begin_ns) / 1e9


@dataclass
class Regions:
    """What a regions file held: the regions in begin order, the run it names, its first timestamp."""

    regions: list[Region]
    run_id: str
    start_ns: int
    processes: dict[int, int | None]  # pid -> rank


def _refuse(path: Path, what: str) -> FormatError:
    return FormatError(
        f"{path}: {what}", "give the regions file gpuprof profile wrote for this run (reports/<run-id>/regions.jsonl)"
    )


def segments(path: Path) -> list[Path]:
    """The processes' segments beside the regions file ``path``."""
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    return sorted(
        path.with_name(name)
        for name in names
        if name.startswith(path.name) and _SEGMENT.fullmatch(name[len(path.name) :])
    )


def _lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of one file, one a line, its trailing NUL bytes left out."""
    try:
        text = path.read_bytes().rstrip(b"\0").decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise _refuse(path, f"cannot be read as text ({error})") from None
    if text and not text.endswith("\n"):
        raise _refuse(path, "its last line is cut short: the regions file is truncated or corrupt")
    events = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            raise _refuse(path, f"line {number} is not JSON: the regions file is corrupt") from None
        if not isinstance(event, dict):
            raise _refuse(path, f"line {number} is not a JSON object: the regions file is corrupt")
        events.append(event)
    return events


def _head(path: Path) -> list[dict[str, Any]]:
    """The named file's lines, its header first."""
    events = _lines(path)
    if not events or events[0].get("format") != FORMAT:
        raise _refuse(path, f"not a {FORMAT} file (its first line is not the header)")
    if events[0].get("version") != VERSION:
        raise _refuse(path, f"{FORMAT} version {events[0].get('version')!r}; this gpuprof reads version {VERSION}")
    return events


def _segment(path: Path) -> tuple[int, list[dict[str, Any]]]:
    """A segment's lines, its process line first, and that line's timestamp (no lines at all: a
    process killed as it created its segment; nothing to read)."""
    events = _lines(path)
    if not events:
        return 0, []
    first = events[0]
    if first.get("e") != "process" or not isinstance(first.get("ts"), int):
        raise _refuse(path, "a segment that does not begin with its process line: the regions file is corrupt")
    return first["ts"], events


def _event(
    path: Path,
    number: int,
    event: dict[str, Any],
    head: dict[str, Any],
    found: dict[tuple[int, int | None, int], Region],
    processes: dict[int, int | None],
    since: dict[int, int | None],
) -> int:
    """Take one line into ``found``/``processes`` (``since``: each pid's latest process line's);
    returns its timestamp."""
    kind, pid, ts = event["e"], int(event["p"]), int(event["ts"])
    if kind == "process":
        if event.get("run") != head.get("run"):
            raise _refuse(
                path,
                f"line {number}: process {pid} belongs to run {event.get('run')!r}, the file "
                f"to {head.get('run')!r}: lines of two runs in one file",
            )
        processes[pid], since[pid] = event.get("rank"), event.get("since")
    elif kind == "b":
        key = (pid, since.get(pid), int(event["id"]))
        found[key] = Region(
            str(event["n"]),
            pid,
            key[2],
            ts,
            int(event.get("t", 0)),
            event.get("i"),
            event.get("par"),
            key[1],
            attributes=dict(event.get("a") or {}),
            extra={"begin": {k: v for k, v in event.items() if k not in _KNOWN_KEYS}},
        )
    elif kind == "e":
        opened = found.get((pid, since.get(pid), int(event["id"])))
        if opened is None or opened.end_ns is not None:
            raise _refuse(path, f"line {number} ends region {event['id']} of process {pid}, which is not open")
        if ts < opened.begin_ns:
            raise _refuse(path, f"line {number}: region {event['id']} ends before it begins")
        opened.end_ns, opened.unclosed, opened.raised = ts, event.get("unclosed"), event.get("raised")
        opened.extra["end"] = {k: v for k, v in event.items() if k not in _KNOWN_KEYS}
    else:
        raise _refuse(path, f"line {number}: unknown event {kind!r}")
    return ts


def parse(path: str | Path, run_id: str | None = None, end_ns: int | None = None) -> Regions:
    """The regions of ``path``; ``run_id``: refuse a file (or a process in it) of any other run;
    ``end_ns``: where regions of a killed process end (default: the last timestamp in the file)."""
    path = Path(path)
    events = _head(path)
    head = events[0]
    if run_id is not None and head.get("run") != run_id:
        raise _refuse(
            path,
            f"belongs to run {head.get('run')!r}, not to this run {run_id!r} (a stale file or "
            f"a $GPUPROF_REGIONS left set from another profile)",
        )
    # The named file's own lines, then each process's segment in the order the processes began.
    begun = sorted(((*_segment(one), one) for one in segments(path)), key=lambda started: started[0])
    files = [(path, events[1:], 2), *((one, lines, 1) for _, lines, one in begun)]
    found: dict[tuple[int, int | None, int], Region] = {}
    processes: dict[int, int | None] = {}
    since: dict[int, int | None] = {}
    last = int(head.get("ts", 0))
    for source, lines, first in files:
        for number, event in enumerate(lines, start=first):
            try:
                last = max(last, _event(source, number, event, head, found, processes, since))
            except (KeyError, TypeError, ValueError):
                raise _refuse(source, f"line {number} lacks a field its event needs: the file is corrupt") from None
    close_at = end_ns if end_ns is not None else last
    regions = sorted(found.values(), key=lambda r: (r.begin_ns, r.process, r.ident))
    for one in regions:
        one.rank = processes.get(one.process)
        if one.end_ns is None:
            one.end_ns, one.unclosed = max(close_at, one.begin_ns), KILLED
    return Regions(regions, str(head.get("run", "")), int(head.get("ts", 0)), processes)


def launches(found: Regions, first_index: int = 0) -> list[Launch]:
    """One launch per region instance (kind "region"), numbered from ``first_index`` in begin order."""
    number = {(r.process, r.since, r.ident): first_index + i for i, r in enumerate(found.regions)}
    made = []
    for position, one in enumerate(found.regions):
        parent = number.get((one.process, one.since, one.parent)) if one.parent is not None else None
        attributes = {
            "kind": KIND,
            "name": one.name,
            "index": "" if one.index is None else str(one.index),
            "parent": "" if parent is None else str(parent),
            "thread": str(one.thread),
            "process": str(one.process),
            "rank": "" if one.rank is None else str(one.rank),
            "clock": "CLOCK_MONOTONIC",
        }
        if one.unclosed:
            attributes["unclosed"] = one.unclosed
        if one.raised:
            attributes["raised"] = one.raised
        if one.attributes:
            attributes["attributes"] = json.dumps(one.attributes, sort_keys=True)
        if any(one.extra.values()):
            attributes["extra"] = json.dumps(one.extra, sort_keys=True)
        metrics = [
            Metric("wall time", one.seconds, "second", None, TIMED),
            Metric("begin", one.begin_ns / 1e9, "second", None, TIMED),
            Metric("end", (one.end_ns or one.begin_ns) / 1e9, "second", None, TIMED),
        ]
        made.append(Launch(one.name, first_index + position, "", 1, attributes, metrics))
    return made


def notes(found: Regions) -> list[str]:
    """One line per kind of region that had to be closed for the program."""
    said = []
    for reason, why in (
        ("exit", "still open when the program exited; closed then"),
        ("parent", "left open inside a region that was closed; closed with it"),
        (KILLED, ("of a process that ended without closing them (killed or crashed); closed at the command's end")),
    ):
        count = sum(1 for r in found.regions if r.unclosed == reason)
        if count:
            said.append(f"{count} region(s) {why} (marked unclosed={reason})")
    return said


def sniff(path: Path, head: str) -> bool:
    first = head.lstrip().split("\n", 1)[0]
    return first.startswith("{") and f'"format":"{FORMAT}"' in first.replace(" ", "")


def read(path: Path) -> Run:
    found = parse(path)
    return Run(
        kind="import",
        format=NAME,
        source=str(path),
        launches=launches(found),
        environment={
            "run_id_of_regions": found.run_id,
            "clock": CLOCK_BASIS,
            "processes": {str(pid): rank for pid, rank in found.processes.items()},
        },
        notes=notes(found),
    )
