"""Run a profiler (and the program it launches) as one process group, with its output kept in files.

The command gets a list argv (never a shell) and its own session, so a timeout or a Ctrl-C stops the
profiler together with everything it started: killing only the profiler would leave the workload
running, holding the GPU and ncu's cross-process lock file so that the next run times out too. A
descendant that moved to a process group of its own is found through the session id and the parent
links in /proc (:func:`kill_session`). Stopping is polite first: SIGINT to the group, which makes ncu, nvprof and perf
write out what they collected so far, then SIGKILL for whatever is still running after a grace
period. What was collected is the caller's to read; nothing here raises for a stopped command.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

GRACE_S = 10.0  # how long a stopped profiler may take to write its partial report
TIMEOUT, INTERRUPTED = "timeout", "interrupted"
STDOUT, STDERR = "stdout.txt", "stderr.txt"


@dataclass(frozen=True)
class Finished:
    """How a command ended: its exit code (None when it was stopped before it exited on its own),
    its wall time (``time.perf_counter_ns`` from start to end), and why it was stopped, if it was."""

    code: int | None
    seconds: float
    stopped: str | None = None  # TIMEOUT or INTERRUPTED


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def _descendants(root: int) -> set[int]:
    """Every process in ``root``'s session or below it, from /proc (empty where there is no /proc)."""
    parents: dict[int, int] = {}
    session: set[int] = set()
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        parents[int(entry)] = int(fields[1])
        if int(fields[3]) == root:  # fields: state ppid pgrp session ...
            session.add(int(entry))
    found, frontier = set(session), {root} | session
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found - {root}


def kill_session(pid: int) -> None:
    """SIGKILL the process ``pid`` (a session leader), its process group, and every process of its
    session or below it, whatever process group each moved to."""
    others = _descendants(pid)
    _signal_group(pid, signal.SIGKILL)
    for other in others:
        for kill, target in ((os.killpg, _group_of(other)), (os.kill, other)):
            if target is None:
                continue
            try:
                kill(target, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _stop(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGINT to the group, up to ``grace`` seconds for the leader to write its files and exit
    (no SIGINT at all with no grace: the caller wants nothing from a stopped command)."""
    if grace <= 0:
        return
    _signal_group(process.pid, signal.SIGINT)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        pass


def run_group(
    argv: list[str],
    run_dir: Path,
    timeout: float,
    grace: float = GRACE_S,
    prefix: str = "",
    env: dict[str, str] | None = None,
    started: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> Finished:
    """Run ``argv`` in its own session with stdout/stderr in ``run_dir`` (as ``<prefix>stdout.txt``
    and ``<prefix>stderr.txt``); stop it (and everything it started) at ``timeout`` seconds or on
    Ctrl-C, giving it ``grace`` seconds after a SIGINT to write what it has. ``env``: variables added
    to this process's environment for the command; ``started``: called with the process once it runs
    (to watch it from the parent). Raises OSError when ``argv[0]`` cannot be executed."""
    with open(run_dir / f"{prefix}{STDOUT}", "wb") as out, open(run_dir / f"{prefix}{STDERR}", "wb") as err:
        start = time.perf_counter_ns()
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            env={**os.environ, **env} if env else None,
        )
        if started is not None:
            started(process)
        stopped = None
        try:
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                stopped = TIMEOUT
                _stop(process, grace)
            except KeyboardInterrupt:
                stopped = INTERRUPTED
                _stop(process, grace)
        finally:
            if stopped or process.returncode is None:  # what is left of it (its workload) goes now
                kill_session(process.pid)
                process.wait()
        seconds = (time.perf_counter_ns() - start) / 1e9
    return Finished(None if stopped else process.returncode, seconds, stopped)


def tail(path: Path, lines: int = 5) -> str:
    """The last non-empty lines of a kept output file, joined with ' | ' (for one-line messages)."""
    found = [line for line in path.read_text(errors="replace").splitlines() if line.strip()] if path.is_file() else []
    return " | ".join(found[-lines:]) or "nothing"
