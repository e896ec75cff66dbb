"""Regions of a user's program (``with gpuprof.region("epoch", index=i):``), recorded for ``gpuprof profile``.

This module is what a training or inference script imports, so it imports only the standard library
and costs nothing when nothing records: without ``$GPUPROF_REGIONS`` (set by ``gpuprof profile``),
without :func:`record_to` and without hooks, a region's begin and end return at once.

When recording, every region instance writes two JSON lines (its begin and its end). The file named
by ``$GPUPROF_REGIONS`` holds the header; each process writes its own lines into its own segment
beside it (``<file>.<pid>``, created at its first line), through a shared memory map of that file:
no system call per line (two ``write`` calls per region slowed a 10 ms loop by more than 1 % on a
VM), and the lines are in the page cache the moment they are copied, so a process that is killed
keeps every line written before. The segment grows in blocks reserved on disk beforehand
(``posix_fallocate`` where the file system can: a full disk then stops the recording, it cannot
fault the program); the unwritten rest of the last block is NUL bytes, cut off when the process
exits or stops recording and skipped by the reader where it was killed. A forked child opens a
segment of its own. Timestamps are ``CLOCK_MONOTONIC`` nanoseconds, one clock for the whole machine
on Linux, so the parent lines them up with what it measured (power samples). Regions still open when
the interpreter exits are closed then and marked ``"unclosed": "exit"``; those of a process that was
killed are closed by the reader and marked there. The format is documented in docs/training.md;
:mod:`gpuprof.readers.regions` reads it.

A plain region's lines are formatted from bytes made once per name and per thread. Per-region
measurements plug in as hooks (:func:`add_hook`): a hook's ``begin(event)`` and ``end(event)`` are
called with the event (a dict) about to be written and may add JSON-ready keys to it (e.g. CPU
counter readings), which the reader keeps; events with hooks, attributes, a name that is not a
string or an index that is not an integer go through that dict.
"""

from __future__ import annotations

import atexit
import errno
import functools
import itertools
import json
import mmap
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, Self

from gpuprof import counting

ENV_FILE = "GPUPROF_REGIONS"  # the file regions are recorded to
ENV_RUN = "GPUPROF_RUN_ID"  # the run they belong to (written in every process-start line)
FORMAT = "gpuprof-regions"
VERSION = 1
# Rank of the process in a distributed job, from the launchers' own variables (first found wins).
RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
BLOCK = 1 << 20  # a segment grows by this much (about 5,000 regions)

if hasattr(time, "CLOCK_MONOTONIC"):  # the same clock the parent's samplers read, in nanoseconds
    now_ns = functools.partial(time.clock_gettime_ns, time.CLOCK_MONOTONIC)
else:  # pragma: no cover - not Linux
    now_ns = time.monotonic_ns


class Hook(Protocol):
    """Called at every region's begin and end with the event about to be written; may add keys."""

    def begin(self, event: dict[str, Any]) -> None: ...

    def end(self, event: dict[str, Any]) -> None: ...


def _reserve(fd: int, size: int) -> None:
    """Make the segment ``size`` bytes, its blocks allocated (writing through the map cannot then
    meet a full disk, which would kill the program with SIGBUS)."""
    try:
        os.posix_fallocate(fd, 0, size)
        return
    except OSError as error:
        if error.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
    except AttributeError:  # pragma: no cover - not Linux
        pass
    os.ftruncate(fd, size)  # a file system that cannot allocate ahead: a full disk may then fault the program


def _create(base: str) -> int:
    """A new segment file: ``base``, else ``base.1``, ``base.2``... (one of this pid exists: this
    process recorded to the same file before, or an earlier process had its pid)."""
    for number in range(100):
        try:
            return os.open(base if number == 0 else f"{base}.{number}", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
    raise FileExistsError(f"{base}: 100 segments of this pid exist")


class _Recorder:
    """One process's recording state: its segment, the id counter, each thread's open regions."""

    def __init__(self) -> None:
        self.path: str | None = None  # the named file; this process's segment lies beside it
        self.run_id = ""
        self.hooks: list[Hook] = []
        self.active = False  # recording to a file or hooked: begin and end have work to do
        self.ids = itertools.count(1)
        self.fd = -1
        self.map: mmap.mmap | None = None
        self.pos = self.size = 0
        self.forked()

    def forked(self) -> None:
        """A new process (or a forked child): its pid, no segment yet, no thread known."""
        self.pid = os.getpid()
        self.since = now_ns()  # with the pid, names this process apart from an earlier one of its pid
        self.where = b',"p":%d' % self.pid  # an end line's process part
        self.local = threading.local()  # per thread: its stack, its id and its lines' part naming both
        self.lock = threading.Lock()  # around an append (the process's threads share its segment)
        self.open: set[int] = set()  # every thread's open regions, for closing at exit
        if self.map is not None:  # the parent's segment: unmapped here, left to the parent
            self.map.close()
            os.close(self.fd)
            self.map, self.fd, self.pos, self.size = None, -1, 0, 0

    def update(self) -> None:
        self.active = self.path is not None or bool(self.hooks)

    def stack(self) -> list[int]:
        """This thread's open regions (ids, innermost last)."""
        found: list[int] | None = getattr(self.local, "stack", None)
        if found is None:
            found = self.local.stack = []
            # Its native id is asked of the kernel once per thread (a system call per region slowed
            # a 10 ms loop by about 0.5 % on a VM).
            tid = self.local.tid = threading.get_native_id()
            self.local.where = b',"p":%d,"t":%d' % (self.pid, tid)
        return found

    def append(self, line: bytes) -> None:
        with self.lock:
            if self.map is None and not self._open():
                return
            pos = self.pos
            end = pos + len(line)
            if end > self.size and not self._grow(end):
                return
            self.map[pos:end] = line  # type: ignore[index]
            self.pos = end

    def _open(self) -> bool:
        """Create this process's segment and write its process line; False (and stop recording to a
        file: the program must run on, the parent reports what is missing) where that fails."""
        if self.path is None:
            return False
        try:
            fd = _create(f"{self.path}.{self.pid}")
            try:
                _reserve(fd, BLOCK)
                self.map = mmap.mmap(fd, BLOCK, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
            except OSError:
                os.close(fd)
                raise
        except OSError:
            self.path = None
            self.update()
            return False
        self.fd, self.pos, self.size = fd, 0, BLOCK
        process = {
            "e": "process",
            "p": self.pid,
            "ppid": os.getppid(),
            "run": self.run_id,
            "rank": rank(),
            "since": self.since,
            "ts": now_ns(),
        }
        line = json.dumps(process, separators=(",", ":")).encode() + b"\n"
        self.map[: len(line)] = line
        self.pos = len(line)
        return True

    def _grow(self, end: int) -> bool:
        size = (end // BLOCK + 1) * BLOCK
        try:
            _reserve(self.fd, size)
            self.map.resize(size)  # type: ignore[union-attr]
        except (OSError, ValueError, SystemError):
            self._close()
            self.path = None
            self.update()
            return False
        self.size = size
        return True

    def _close(self) -> None:
        """Unmap the segment and cut its unwritten NUL bytes off."""
        if self.map is not None:
            self.map.close()
            try:
                os.ftruncate(self.fd, self.pos)
            finally:
                os.close(self.fd)
            self.map, self.fd, self.pos, self.size = None, -1, 0, 0

    def stop(self) -> None:
        with self.lock:
            self._close()
            self.path = None
            self.update()


_state = _Recorder()
_strings: dict[str, str] = {}  # a string (key, name, event kind) -> its JSON text, made once
_names: dict[str, bytes] = {}  # a region's name -> its begin line's name part, made once


def _text(value: str) -> str:
    found = _strings.get(value)
    if found is None:
        found = json.dumps(value)
        if len(_strings) < 4096:  # names made up on the fly ("epoch 17") must not grow it for ever
            _strings[value] = found
    return found


def _name(name: str) -> bytes:
    found = _names.get(name)
    if found is None:
        found = b',"n":' + _text(name).encode()
        if len(_names) < 4096:
            _names[name] = found
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
    return json.dumps(value, separators=(",", ":"), default=_plain)


def _plain(value: Any) -> Any:
    """A value json cannot write as it is: a NumPy (or other library's) scalar as the Python number
    it holds (``index=np.int64(3)`` from a loop over ``np.arange``), anything else as its text, so
    that a region never raises inside the user's program."""
    item = getattr(value, "item", None)
    if callable(item):
        try:
            found = item()
        except (TypeError, ValueError):  # an array of several values: no one number
            return str(value)
        if type(found) in (int, float, bool, str):
            return found
    return str(value)


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
    """Record this process's regions to ``path`` from now on (None: stop recording to a file); its
    lines go to a segment beside it (module docstring). ``gpuprof profile`` does this through
    ``$GPUPROF_REGIONS`` without any call."""
    _state.stop()
    if path is not None:
        path = os.fspath(path)
        try:  # the first process to open a new file writes its header
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(header(run_id), separators=(",", ":")) + "\n")
        _state.path, _state.run_id = path, run_id
    _state.update()


def header(run_id: str) -> dict[str, Any]:
    """The file's first line: what it is, which run it belongs to, the clock and when it began."""
    return {"format": FORMAT, "version": VERSION, "run": run_id, "clock": "CLOCK_MONOTONIC", "ts": now_ns()}


def add_hook(hook: Hook) -> None:
    """Have ``hook.begin(event)``/``hook.end(event)`` called at every region's begin and end."""
    _state.hooks.append(hook)
    _state.update()


def remove_hook(hook: Hook) -> None:
    _state.hooks.remove(hook)
    _state.update()


def begin(name: str, index: int | None = None, **attributes: Any) -> int:
    """Open a region on this thread, inside the thread's innermost open one; returns its id for
    :func:`end` (0 when nothing records). ``attributes``: JSON-ready values kept with the region."""
    state = _state
    if not state.active:
        return 0
    local = state.local
    stack = getattr(local, "stack", None)
    if stack is None:
        stack = state.stack()
    ident = next(state.ids)
    if state.hooks or attributes or type(name) is not str or (index is not None and type(index) is not int):
        event: dict[str, Any] = {"e": "b", "id": ident, "n": str(name), "p": state.pid, "t": local.tid}
        if index is not None:
            event["i"] = index
        if stack:
            event["par"] = stack[-1]
        if attributes:
            event["a"] = attributes
        for hook in state.hooks:
            hook.begin(event)
        event["ts"] = now_ns()  # last: the hooks' own cost falls outside the region
        line = _line(event)
    else:
        line = b'{"e":"b","id":%d%s%s%s%s,"ts":%d}\n' % (
            ident,
            _names.get(name) or _name(name),
            local.where,
            b"" if index is None else b',"i":%d' % index,
            b',"par":%d' % stack[-1] if stack else b"",
            now_ns(),
        )
    stack.append(ident)
    state.open.add(ident)
    state.append(line)
    return ident


def end(ident: int | None = None, raised: str | None = None) -> None:
    """Close region ``ident`` (default: this thread's innermost open region), and any region opened
    inside it on this thread that was left open; ``raised``: the exception that ended it, by name."""
    state = _state
    if not state.active or ident == 0:
        return
    stack = getattr(state.local, "stack", None)
    if not stack:
        return
    if ident is None or ident == stack[-1]:  # the innermost: the usual case
        _close(stack.pop(), None, raised)
        return
    if ident not in stack:
        return
    while (top := stack.pop()) != ident:  # left open inside it
        _close(top, "parent")
    _close(ident, None, raised)


def _close(ident: int, unclosed: str | None, raised: str | None = None) -> None:
    state = _state
    if state.hooks or unclosed or raised:
        event: dict[str, Any] = {"e": "e", "id": ident, "p": state.pid, "ts": now_ns()}
        if unclosed:
            event["unclosed"] = unclosed
        if raised:
            event["raised"] = raised
        for hook in state.hooks:
            hook.end(event)
        line = _line(event)
    else:
        line = b'{"e":"e","id":%d%s,"ts":%d}\n' % (ident, state.where, now_ns())
    state.open.discard(ident)
    state.append(line)


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
    """Close what is still open (every thread's) and mark it: the program ended inside it. Then cut
    the segment to its lines and stop: a daemon thread's later lines are dropped, not misfiled."""
    state = _state
    for ident in sorted(state.open, reverse=True):
        _close(ident, "exit")
    state.stop()


def _start_from_environment() -> None:
    path = os.environ.get(ENV_FILE)
    if path:
        try:
            record_to(path, os.environ.get(ENV_RUN, ""))
        except OSError:
            _state.stop()  # the program must run on: the parent reports the missing regions
    if os.environ.get("GPUPROF_COUNTERS"):  # gpuprof profile --counters: counts at every begin and end
        hook, _ = counting.hook_from_environment()
        if hook is not None:
            add_hook(hook)


_start_from_environment()
atexit.register(_at_exit)
os.register_at_fork(after_in_child=_state.forked)
