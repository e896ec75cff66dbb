"""CPU hardware counters read at every region's begin and end (``gpuprof profile --counters``).

Like :mod:`gpuprof.regions`, this runs inside the user's program, so it imports only the standard
library. Backends share one interface (``name``, ``open(events)`` -> a reader of cumulative counts)
and are tried in order; each says why it was or was not used:

- ``perf_event_open``: the system call through ctypes, one group per thread (``inherit``: child
  threads count into it) or one per CPU of a CPU list; read with ``PERF_FORMAT_GROUP |
  TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING``, so counts the kernel multiplexed are scaled by
  enabled/running and marked;
- ``papi``: PAPI through python-papi (the optional ``papi`` extra);
- ``replay``: a stand-in that replays recorded cumulative counts from a JSON file
  (``$GPUPROF_COUNTER_REPLAY``), for machines without a PMU and for tests.

The hook adds ``"c": {event: count}`` to each region's begin and end line (and ``"cm"`` with the
fraction of time counted when multiplexed); the region's counts are end − begin.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
from collections.abc import Sequence
from typing import Any

ENV_EVENTS = "GPUPROF_COUNTERS"  # comma-separated event names
ENV_REPLAY = "GPUPROF_COUNTER_REPLAY"  # JSON file of cumulative readings (the stand-in backend)
ENV_CPUS = "GPUPROF_COUNTER_CPUS"  # "0-3,8": count per CPU of this list instead of per thread

PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW = 0, 1, 3, 4
FORMAT_TOTAL_TIME_ENABLED, FORMAT_TOTAL_TIME_RUNNING, FORMAT_GROUP = 1, 2, 8
_NR_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241, "ppc64le": 319, "riscv64": 241}
# perf's generic names -> (type, config). Raw vendor events come from gpuprof/data/cpu_events.json's
# encodings, passed in as "name=r<hex>" (perf's own raw syntax).
GENERIC = {
    "cycles": (PERF_TYPE_HARDWARE, 0),
    "instructions": (PERF_TYPE_HARDWARE, 1),
    "branches": (PERF_TYPE_HARDWARE, 4),
    "branch-instructions": (PERF_TYPE_HARDWARE, 4),
    "branch-misses": (PERF_TYPE_HARDWARE, 5),
    "l1-dcache-loads": (PERF_TYPE_HW_CACHE, 0),
    "l1-dcache-stores": (PERF_TYPE_HW_CACHE, 1 << 8),
    # Kernel software counters: no PMU needed, so they open in a VM too.
    "task-clock": (PERF_TYPE_SOFTWARE, 1),
    "page-faults": (PERF_TYPE_SOFTWARE, 2),
    "context-switches": (PERF_TYPE_SOFTWARE, 3),
}


class CounterError(Exception):
    """A backend cannot count here; the message is the one-line reason."""


def _encode(event: str) -> tuple[str, int, int]:
    """'instructions' -> ('instructions', HARDWARE, 1); 'fp_arith_inst_retired.scalar_double=r1c7' -> raw 0x1c7."""
    name, _, raw = event.partition("=")
    if raw:
        if not raw.startswith("r"):
            raise CounterError(f"event {event!r}: a raw encoding is r<hex> (perf's syntax)")
        return name, PERF_TYPE_RAW, int(raw[1:], 16)
    if name.lower() not in GENERIC:
        raise CounterError(f"event {name!r} has no generic encoding; give it as NAME=r<hex>")
    kind, config = GENERIC[name.lower()]
    return name, kind, config


class _Attr(ctypes.Structure):
    """struct perf_event_attr up to config2 (PERF_ATTR_SIZE_VER1 = 72 bytes); the kernel accepts
    any published size and zero-fills the rest."""

    _fields_ = [
        ("type", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64),
        ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),
        ("wakeup_events", ctypes.c_uint32),
        ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64),
        ("config2", ctypes.c_uint64),
    ]


_DISABLED, _INHERIT, _EXCLUDE_KERNEL, _EXCLUDE_HV = 1 << 0, 1 << 1, 1 << 5, 1 << 6


def user_space_only() -> bool:
    """True where the kernel lets this process count only user space: ``perf_event_paranoid`` 2 or
    more, not root (perf stat then adds ``:u`` itself; without it the system call is refused)."""
    try:
        with open("/proc/sys/kernel/perf_event_paranoid", encoding="ascii") as handle:
            level = int(handle.read().strip())
    except (OSError, ValueError):
        return False
    return level >= 2 and os.geteuid() != 0


def cpu_list(text: str) -> list[int]:
    """'0-3,8' -> [0, 1, 2, 3, 8]."""
    cpus: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


class PerfEventOpen:
    """One event group per thread (inherit) or per CPU; a read sums the groups, scaled."""

    name = "perf_event_open"

    def __init__(self, events: Sequence[str], cpus: Sequence[int] = ()) -> None:
        import platform

        number = _NR_PERF_EVENT_OPEN.get(platform.machine())
        if number is None:
            raise CounterError(f"perf_event_open: no system call number known for {platform.machine()}")
        libc = ctypes.CDLL(None, use_errno=True)
        self._members: dict[int, list[int]] = {}  # group leader -> its descriptors
        self.encoded = [_encode(e) for e in events]
        self.names = [name for name, _, _ in self.encoded]
        self.groups: list[int] = []
        self._layout = struct.Struct(f"{3 + len(self.names)}Q")  # nr, time enabled, time running, values
        self.user_only = user_space_only()
        self.name = "perf_event_open" + (" (user space only: perf_event_paranoid >= 2)" if self.user_only else "")
        targets = [(-1, cpu) for cpu in cpus] or [(0, -1)]  # (pid, cpu): per CPU, or this thread and children
        try:
            for pid, cpu in targets:
                leader = -1
                for _, kind, config in self.encoded:
                    attr = _Attr(
                        type=kind,
                        size=ctypes.sizeof(_Attr),
                        config=config,
                        read_format=FORMAT_GROUP | FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING,
                        flags=(_INHERIT if pid == 0 else 0) | _EXCLUDE_HV | (_EXCLUDE_KERNEL if self.user_only else 0),
                    )
                    fd = libc.syscall(number, ctypes.byref(attr), pid, cpu, leader, 0)
                    if fd < 0:
                        errno = ctypes.get_errno()
                        where = f"CPU {cpu}" if cpu >= 0 else "this thread (inherit)"
                        raise CounterError(
                            f"perf_event_open refused {self.names[len(self._fds(leader))]!r} on "
                            f"{where}: {os.strerror(errno)} (errno {errno})"
                            + (": no PMU here (a VM?)" if errno in (2, 95, 19) else "")
                            + ("; see /proc/sys/kernel/perf_event_paranoid" if errno in (1, 13) else "")
                        )
                    if leader < 0:
                        leader = fd
                        self.groups.append(fd)
                    self._members.setdefault(leader, []).append(fd)
        except CounterError:
            self.close()
            raise

    def _fds(self, leader: int) -> list[int]:
        return self._members.get(leader, [])

    def read(self) -> tuple[dict[str, float], float]:
        """Cumulative counts summed over the groups, each scaled by enabled/running; and the
        smallest running/enabled fraction (1.0 when nothing was multiplexed)."""
        if len(self.groups) == 1:  # one group (per thread): read as is when nothing was multiplexed
            count, enabled, running, *values = self._layout.unpack(os.read(self.groups[0], self._layout.size))
            if running == enabled:
                return dict(zip(self.names, values[:count], strict=True)), 1.0
        totals = [0.0] * len(self.names)
        fraction = 1.0
        size = self._layout.size
        for leader in self.groups:
            data = os.read(leader, size)
            count, enabled, running, *values = struct.unpack(f"{len(data) // 8}Q", data)
            if running and running < enabled:
                fraction = min(fraction, running / enabled)
            scale = enabled / running if running else 0.0
            for i, value in enumerate(values[:count]):
                totals[i] += value * scale
        return dict(zip(self.names, totals, strict=True)), fraction

    def close(self) -> None:
        for fds in self._members.values():
            for fd in fds:
                os.close(fd)
        self._members, self.groups = {}, []


class Papi:
    """PAPI's low-level API through python-papi (the ``papi`` extra): one event set on this thread,
    events by PAPI name (PAPI_TOT_INS) or native name."""

    name = "papi"

    def __init__(self, events: Sequence[str]) -> None:
        try:
            from pypapi import events as papi_events  # type: ignore[import-not-found]
            from pypapi import papi_low
            from pypapi.exceptions import PapiError  # type: ignore[import-not-found]
        except ImportError:
            raise CounterError("papi: python-papi is not installed (pip install 'gpuprof[papi]')") from None
        self.names, self._low = [e.partition("=")[0] for e in events], papi_low
        try:
            papi_low.library_init()
            self._set = papi_low.create_eventset()
            for event in self.names:
                code = getattr(papi_events, event.upper(), None)
                if code is None:
                    papi_low.add_named_event(self._set, event)
                else:
                    papi_low.add_event(self._set, code)
            papi_low.start(self._set)
        except PapiError as error:
            raise CounterError(f"papi: adding {self.names} failed: {type(error).__name__}: {error}") from None

    def read(self) -> tuple[dict[str, float], float]:
        return dict(zip(self.names, (float(v) for v in self._low.read(self._set)), strict=True)), 1.0

    def close(self) -> None:
        self._low.stop(self._set)


class Replay:
    """The stand-in: each read returns the next recorded cumulative reading of a JSON file
    ``{"events": [...], "readings": [[...], ...], "running": [...]?}``; after the last, the last.
    It replays the events recorded in the file, whichever were asked for."""

    name = "replay"

    def __init__(self, events: Sequence[str], path: str) -> None:
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
            self.names = [str(e) for e in data["events"]]
            self.readings = [[float(v) for v in row] for row in data["readings"]]
            self.running = [float(v) for v in data.get("running", [1.0] * len(self.readings))]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise CounterError(f"replay: {path}: {error}") from None
        if not self.readings or any(len(row) != len(self.names) for row in self.readings):
            raise CounterError(f"replay: {path}: every reading needs one value per event")
        self.position = 0

    def read(self) -> tuple[dict[str, float], float]:
        at = min(self.position, len(self.readings) - 1)
        self.position += 1
        return dict(zip(self.names, self.readings[at], strict=True)), self.running[at]

    def close(self) -> None:
        pass


def choose(events: Sequence[str], cpus: Sequence[int] = (), replay: str | None = None) -> tuple[Any | None, list[str]]:
    """The first backend that opens, and one line per backend tried: why it was used or not."""
    reasons: list[str] = []
    attempts: list[tuple[str, Any]] = []
    if replay:
        attempts.append(("replay", lambda: Replay(events, replay)))
    attempts.append(("perf_event_open", lambda: PerfEventOpen(events, cpus)))
    attempts.append(("papi", lambda: Papi(events)))
    for name, make in attempts:
        try:
            backend = make()
        except CounterError as error:
            reasons.append(f"not used: {error}")
            continue
        reasons.append(
            f"used: {backend.name}" + (f" on CPUs {','.join(map(str, cpus))}" if cpus and name != "replay" else "")
        )
        return backend, reasons
    return None, reasons


class CounterHook:
    """A :mod:`gpuprof.regions` hook: the backend's cumulative counts on every begin and end line."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    def _add(self, event: dict[str, Any]) -> None:
        counts, fraction = self.backend.read()
        event["c"] = counts
        if fraction < 1.0:
            event["cm"] = fraction

    begin = end = _add


def hook_from_environment() -> tuple[CounterHook | None, list[str]]:
    """With ``$GPUPROF_COUNTERS`` set, a regions hook on the chosen backend (None where none opens), and the
    reasons; :mod:`gpuprof.regions` adds it, so this module never imports the recorder back."""
    events = [e for e in os.environ.get(ENV_EVENTS, "").split(",") if e]
    if not events:
        return None, []
    backend, reasons = choose(events, cpu_list(os.environ.get(ENV_CPUS, "")), os.environ.get(ENV_REPLAY))
    return (CounterHook(backend) if backend is not None else None), reasons
