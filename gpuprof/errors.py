"""Errors the user can act on.

Library code raises these and never exits; the CLI entry point turns them into one line
(``error: <problem>. <fix>``) and a non-zero exit code, so nothing below the CLI prints or exits.
Exit codes: 1 a general problem, 2 bad input, 3 an unreadable file, 4 the profiler, 5 the device,
6 the store, 7 an engine, 8 the profiled command, 130 Ctrl-C; 70 an internal error (a bug: one
line naming a file with its traceback; ``GPUPROF_DEBUG=1`` or ``gpuprof --debug`` shows it).
"""

from __future__ import annotations

import errno
from pathlib import Path

# Control characters (C0, DEL, C1) and the bidirectional overrides that reorder what a terminal shows.
_CONTROLS = [*range(0x20), *range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_VISIBLE = {code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" for code in _CONTROLS} | {
    0x09: "\\t",
    0x0A: "\\n",
    0x0D: "\\r",
}
_VISIBLE_KEEP_NEWLINE = {code: text for code, text in _VISIBLE.items() if code != 0x0A}
_LONGEST = 600  # characters of one message part; file content quoted in it is cut to this


def printable(text: str, keep_newlines: bool = False) -> str:
    """``text`` with every control character written out (``\\x1b``, ``\\n``-free unless ``keep_newlines``), so
    names read from hostile files cannot move the cursor, set a window title or reorder a terminal line."""
    return text.translate(_VISIBLE_KEEP_NEWLINE if keep_newlines else _VISIBLE)


def shortened(text: str, longest: int = _LONGEST) -> str:
    """``text`` cut in the middle to at most about ``longest`` characters (a quoted line of a damaged file)."""
    if len(text) <= longest:
        return text
    return f"{text[: longest * 2 // 3]} … [{len(text) - longest:,} characters cut] … {text[-longest // 3 :]}"


def os_problem(path: str | Path, error: OSError) -> str:
    """One line for an OS error on ``path``, naming the case rather than echoing errno's words; shared
    by what reads inputs (:mod:`gpuprof.inputs`) and what writes outputs (:mod:`gpuprof.outputs`)."""
    code = error.errno
    if code == errno.ENOENT:
        return f"{path}: no such file"
    if code == errno.ENOTDIR:
        return f"{path}: a part of the path before the last is a file, not a folder"
    if code == errno.ELOOP:
        return f"{path}: a symbolic link loop (a link that leads back to itself)"
    if code == errno.ENAMETOOLONG:
        return f"{path}: the name is too long for the file system"
    if code in (errno.EACCES, errno.EPERM):
        return f"{path}: permission denied"
    if code == errno.EROFS:
        return f"{path}: the file system is read-only"
    if code in (errno.ENOSPC, errno.EDQUOT):
        return f"{path}: no space left on the device" + (" (disk quota)" if code == errno.EDQUOT else "")
    return f"{path}: {error.strerror or error}"


def os_fix(error: OSError, fix: str) -> str:
    """``fix``, unless the error has its own: a full disk is not fixed by another folder on it."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return "free space on that disk, or give a path on another one"
    return fix


class GpuprofError(Exception):
    """A problem with a one-line explanation and, where there is one, the fix."""

    exit_code = 1

    def __init__(self, problem: str, fix: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem.rstrip(".")
        self.fix = fix

    def __str__(self) -> str:
        """One line, whatever the problem quotes: control characters written out, long parts cut."""
        problem = printable(shortened(self.problem))
        return f"{problem}. {printable(shortened(self.fix))}" if self.fix else f"{problem}."


class InputError(GpuprofError):
    """Bad arguments: a size, op, dtype, shape or option value gpuprof cannot use."""

    exit_code = 2


class FormatError(GpuprofError):
    """A file gpuprof cannot read: unknown format, truncated, binary or foreign."""

    exit_code = 3


class ProfilerError(GpuprofError):
    """A profiler is missing, refused (e.g. ERR_NVGPUCTRPERM), failed or reported no data."""

    exit_code = 4


class DeviceError(GpuprofError):
    """The requested device is not there (no GPU, no driver, engine cannot reach it)."""

    exit_code = 5


class StoreError(GpuprofError):
    """The results store cannot be opened, written or migrated."""

    exit_code = 6


class EngineError(GpuprofError):
    """A workload engine is not installed or produced a wrong result."""

    exit_code = 7


class CommandFailed(GpuprofError):
    """The user's command (``gpuprof profile -- CMD``) could not start or exited with an error."""

    exit_code = 8


class Interrupted(GpuprofError):
    """Ctrl-C stopped a profiled command; what it had collected is kept."""

    exit_code = 130
