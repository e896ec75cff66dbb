"""The counting fallback that needs nothing in the program: ``perf stat -I MS -x, -e EVENTS -- CMD``.

Where neither in-program backend opens (:mod:`gpuprof.counting`: perf_event_open, PAPI), or the
program is not Python, perf counts the whole command in fixed intervals and the parent attributes
each interval's counts to the program's regions by their timestamps afterwards
(:func:`gpuprof.derive.region_counters.counts_from_intervals`), at the interval's resolution.

perf stamps each interval's end in seconds since it enabled its counters, and prints its last,
partial interval when the command exits. The parent reads CLOCK_MONOTONIC (the regions' clock) when
perf exits and places that last interval's end there: the intervals land on the regions' clock up to
perf's own exit (a few milliseconds; its start-up, which can take much longer while it opens the
events, does not shift them). Events go to perf by name (vendor events too: perf knows them from its
own tables), and which of them perf can count here is asked first (:func:`gpuprof.launch.perf.probe`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpuprof.launch import perf
from gpuprof.readers import perf_stat

OUTPUT = "counter-intervals.csv"
MINIMUM_S = 0.01  # perf stat refuses -I below 10 ms
NAME = "perf stat -I"


@dataclass(frozen=True)
class IntervalCounting:
    """perf and what it will count around the command, every ``interval_s`` seconds."""

    perf: str
    version: str | None
    events: tuple[str, ...]
    interval_s: float

    def wrap(self, argv: list[str], run_dir: Path) -> list[str]:
        """``perf stat -I MS -x, -o run_dir/OUTPUT -e EVENTS -- argv`` (a list: no shell)."""
        return [
            self.perf,
            "stat",
            "-I",
            f"{round(self.interval_s * 1e3)}",
            "-x,",
            "-o",
            str(run_dir / OUTPUT),
            "-e",
            ",".join(self.events),
            "--",
            *argv,
        ]


def plan(events: list[str], interval_s: float, perf_name: str = "perf") -> tuple[IntervalCounting | None, str]:
    """The interval counting perf can do here for ``events`` (``NAME`` or ``NAME=r<hex>``: the name
    goes to perf), or None; and one line on why it is or is not used."""
    names = tuple(dict.fromkeys(event.partition("=")[0] for event in events))
    found = perf.probe(names, perf_name)
    if found.error or found.perf is None:
        return None, f"not used: {NAME}: {found.error or 'perf is not installed'}"
    left_out = [
        f"{what}: {', '.join(events)}"
        for what, events in (("<not supported>", found.unsupported), ("unknown to this perf", found.unknown))
        if events
    ]
    missing = f" ({'; '.join(left_out)})" if left_out else ""
    if not found.usable:
        return None, f"not used: {NAME}: perf counts none of these events here{missing}"
    made = IntervalCounting(found.perf, found.version, found.usable, max(interval_s, MINIMUM_S))
    return made, (
        f"used: {NAME} {made.interval_s * 1e3:g} ms around the command ({found.version or 'perf'}), "
        f"{len(found.usable)} of {len(names)} events{missing}; counts per region attributed by time"
    )


def read(path: Path, end_s: float) -> list[dict[str, float]]:
    """One row per interval in time order: ``begin (s)`` and ``end (s)`` on the regions' clock (the
    last interval ends at ``end_s``, when perf exited; the first begins when perf enabled its counters)
    and each event's count in that interval. ``<not counted>`` is 0 where the event was enabled all
    the time it could be (100 %: the command did not run in that interval, e.g. asleep), NaN where
    multiplexing left it off the PMU (unknown, not 0)."""
    stat = perf_stat.parse_csv(path.read_text(errors="replace"))
    rows: dict[float, dict[str, float]] = {}
    for count in stat.counts:
        if count.time is None or count.aggregate or count.thread:
            continue
        row = rows.setdefault(count.time, {})
        if isinstance(count.value, float):
            value = count.value
        else:
            idle = count.value == "<not counted>" and count.running_pct == 100.0
            value = 0.0 if idle else float("nan")
        name = perf_stat.event_name(count.event)
        row[name] = row.get(name, 0.0) + value  # one event over several cgroups/PMUs: summed
    times = sorted(rows)
    shift = end_s - times[-1] if times else 0.0
    return [
        {"begin (s)": shift + before, "end (s)": shift + time, **rows[time]}
        for before, time in zip([0.0, *times], times, strict=False)
    ]
