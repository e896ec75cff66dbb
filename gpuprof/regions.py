"""Regions of a user's program (``with gpuprof.region("epoch", index=i):``), recorded for ``gpuprof profile``.

This module is what a training or inference script imports, so it imports only the standard library
and costs nothing when nothing records: without ``$GPUPROF_REGIONS`` (set by ``gpuprof profile``),
without :func:`record_to` and without hooks, a region's begin and end return at once.

When recording, every region instance appends two JSON lines to the file named by ``$GPUPROF_REGIONS``
(its begin and its end), each one ``os.write`` on a descriptor opened with ``O_APPEND``: lines from
several processes (``torchrun`` children, DDP ranks) and threads never interleave, and a process that
is killed keeps every line written before. Timestamps are ``CLOCK_MONOTONIC`` nanoseconds, one clock
for the whole machine on Linux, so the parent lines them up with what it measured (power samples).
Regions still open when the interpreter exits are closed then and marked ``"unclosed": "exit"``; those
of a process that was killed are closed by the reader and marked there. The format is documented in
docs/training.md; :mod:`gpuprof.readers.regions` reads it.

Per-region measurements plug in as hooks (:func:`add_hook`): a hook's ``begin(event)`` and
``end(event)`` are called with the event about to be written and may add JSON-ready keys to it
(e.g. CPU counter readings), which the reader keeps.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, Self

from gpuprof import counting

ENV_FILE = "GPUPROF_REGIONS"  # the file regions are appended to
ENV_RUN = "GPUPROF_RUN_ID"  # the run they belong to (written in every process-start line)
FORMAT = "gpuprof-regions"
VERSION = 1
# Rank of the process in a distributed job, from the launchers' own variables (first found wins).
RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")


def now_ns() -> int:
    """CLOCK_MONOTONIC in nanoseconds (the same clock the parent's samplers read)."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) if hasattr(time, "CLOCK_MONOTONIC") else time.monotonic_ns()


class Hook(Protocol):
    """Called at every region's begin and end with the event about to be written; may add keys."""

    def begin(self, event: dict[str, Any]) -> None: ...

    def end(self, event: dict[str, Any]) -> None: ...


class _Recorder:
    """One process's recording state: the file, the id counter, each thread's open regions."""

    def __init__(self) -> None:
        self.fd: int | None = None
        self.run_id = ""
        self.hooks: list[Hook] = []
        self.ids = itertools.count(1)
        self.local = threading.local()
        self.open: dict[int, dict[str, Any]] = {}  # id -> begin event, for closing at exit
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.started = False

    @property
    def active(self) -> bool:
        return self.fd is not None or bool(self.hooks)

    def stack(self) -> list[int]:
        found = getattr(self.local, "stack", None)
        if found is None:
            found = self.local.stack = []
        return found

    def thread(self) -> int:
        """This thread's native id, asked of the kernel once per thread (a system call per region
        slowed a 10 ms loop by about 0.5 % on a VM); a forked child starts a new ``local``."""
        found = getattr(self.local, "tid", None)
        if found is None:
            found = self.local.tid = threading.get_native_id()
        return found

    def write(self, event: dict[str, Any]) -> None:
        if self.fd is None:
            return
        if not self.started:
            self.started = True
            self.write(
                {
                    "e": "process",
                    "p": self.pid,
                    "ppid": os.getppid(),
                    "run": self.run_id,
                    "rank": rank(),
                    "ts": now_ns(),
                }
            )
        os.write(self.fd, _line(event))


_state = _Recorder()
_strings: dict[str, str] = {}  # a string (key, name, event kind) -> its JSON text, made once


def _text(value: str) -> str:
    found = _strings.get(value)
    if found is None:
        found = json.dumps(value)
        if len(_strings) < 4096:  # names made up on the fly ("epoch 17") must not grow it for ever
            _strings[value] = found
    return found


def _value(value: Any) -> str:
    """One JSON value: integers, finite floats, strings and flat objects of them (a counter hook's
    ``{event: count}``) written directly (a region costs a few microseconds), anything else
    (attributes, nested values) through json."""
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is str:
        return _text(value)
    if kind is float and value - value == 0.0:  # finite: repr is valid JSON
        return repr(value)
    if kind is dict and all(type(k) is str and type(v) in (int, float, str) for k, v in value.items()):
        return "{" + ",".join(f"{_text(k)}:{_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value, separators=(",", ":"))


def _line(event: dict[str, Any]) -> bytes:
    """The event as one JSON line (:func:`_value` for each value)."""
    return ("{" + ",".join(f"{_text(key)}:{_value(value)}" for key, value in event.items()) + "}\n").encode()


def rank() -> int | None:
    """This process's rank in a distributed job, or None outside one."""
    for name in RANK_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return None


def record_to(path: str | os.PathLike[str] | None, run_id: str = "") -> None:
    """Append this process's regions to ``path`` from now on (None: stop recording to a file).
    ``gpuprof profile`` does this through ``$GPUPROF_REGIONS`` without any call."""
    if _state.fd is not None:
        os.close(_state.fd)
        _state.fd = None
    if path is not None:
        try:  # the first process to open a new file writes its header
            fd = os.open(os.fspath(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, (json.dumps(header(run_id), separators=(",", ":")) + "\n").encode())
        except FileExistsError:
            fd = os.open(os.fspath(path), os.O_WRONLY | os.O_APPEND)
        _state.fd, _state.run_id, _state.started = fd, run_id, False


def header(run_id: str) -> dict[str, Any]:
    """The file's first line: what it is, which run it belongs to, the clock and when it began."""
    return {"format": FORMAT, "version": VERSION, "run": run_id, "clock": "CLOCK_MONOTONIC", "ts": now_ns()}


def add_hook(hook: Hook) -> None:
    """Have ``hook.begin(event)``/``hook.end(event)`` called at every region's begin and end."""
    _state.hooks.append(hook)


def remove_hook(hook: Hook) -> None:
    _state.hooks.remove(hook)


def begin(name: str, index: int | None = None, **attributes: Any) -> int:
    """Open a region on this thread, inside the thread's innermost open one; returns its id for
    :func:`end` (0 when nothing records). ``attributes``: JSON-ready values kept with the region."""
    state = _state
    if not state.active:
        return 0
    stack = state.stack()
    ident = next(state.ids)
    event: dict[str, Any] = {"e": "b", "id": ident, "n": str(name), "p": state.pid, "t": state.thread()}
    if index is not None:
        event["i"] = index
    if stack:
        event["par"] = stack[-1]
    if attributes:
        event["a"] = attributes
    for hook in state.hooks:
        hook.begin(event)
    event["ts"] = now_ns()  # last: the hooks' own cost falls outside the region
    stack.append(ident)
    with state.lock:
        state.open[ident] = event
    state.write(event)
    return ident


def end(ident: int | None = None, raised: str | None = None) -> None:
    """Close region ``ident`` (default: this thread's innermost open region), and any region opened
    inside it on this thread that was left open; ``raised``: the exception that ended it, by name."""
    state = _state
    if not state.active or ident == 0:
        return
    stack = state.stack()
    if not stack:
        return
    target = stack[-1] if ident is None else ident
    if target not in stack:
        return
    while stack:
        top = stack.pop()
        _close(top, None if top == target else "parent", raised if top == target else None)
        if top == target:
            break


def _close(ident: int, unclosed: str | None, raised: str | None = None) -> None:
    state = _state
    event: dict[str, Any] = {"e": "e", "id": ident, "p": state.pid, "ts": now_ns()}
    if unclosed:
        event["unclosed"] = unclosed
    if raised:
        event["raised"] = raised
    for hook in state.hooks:
        hook.end(event)
    with state.lock:
        state.open.pop(ident, None)
    state.write(event)


class Region:
    """``with region(...):`` or ``@region(...)``: one region instance per ``with`` or per call."""

    __slots__ = ("_ids", "attributes", "index", "name")

    def __init__(self, name: str, index: int | None = None, **attributes: Any) -> None:
        self.name, self.index, self.attributes = name, index, attributes
        self._ids: list[int] = []

    def __enter__(self) -> Self:
        self._ids.append(begin(self.name, self.index, **self.attributes) if _state.active else 0)
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        ident = self._ids.pop()
        if ident:
            end(ident, kind.__name__ if kind else None)

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            ident = begin(self.name, self.index, **self.attributes)
            try:
                result = function(*args, **kwargs)
            except BaseException as error:
                end(ident, type(error).__name__)
                raise
            end(ident)
            return result

        return wrapped


def region(name: str, index: int | None = None, **attributes: Any) -> Region:
    """A region named ``name`` (e.g. "epoch", "train", "validation"), ``index`` its number (epoch
    3); a context manager and a decorator. While nothing records it costs one small object and two
    calls that return at once."""
    return Region(name, index, **attributes)


def _at_exit() -> None:
    """Close what is still open (every thread's) and mark it: the program ended inside it."""
    state = _state
    with state.lock:
        still = sorted(state.open)
    for ident in reversed(still):
        _close(ident, "exit")


def _start_from_environment() -> None:
    path = os.environ.get(ENV_FILE)
    if path:
        try:
            record_to(path, os.environ.get(ENV_RUN, ""))
        except OSError:
            _state.fd = None  # the program must run on: the parent reports the missing regions
    if os.environ.get("GPUPROF_COUNTERS"):  # gpuprof profile --counters: counts at every begin and end
        hook, _ = counting.hook_from_environment()
        if hook is not None:
            add_hook(hook)


def _after_fork() -> None:
    """A forked child starts its own process record (new pid) with no regions open."""
    _state.pid, _state.started, _state.open = os.getpid(), False, {}
    _state.local = threading.local()


_start_from_environment()
atexit.register(_at_exit)
os.register_at_fork(after_in_child=_after_fork)
