"""Errors the user can act on.

Library code raises these and never exits; the CLI entry point turns them into one line
(``error: <problem>. <fix>``) and a non-zero exit code, so nothing below the CLI prints or exits.
Exit codes: 1 a general problem, 2 bad input, 3 an unreadable file, 4 the profiler, 5 the device,
6 the store, 7 an engine, 8 the profiled command, 130 Ctrl-C; 70 an internal error (a bug: one
line naming a file with its traceback; ``GPUPROF_DEBUG=1`` or ``gpuprof --debug`` shows it).
"""

from __future__ import annotations


class GpuprofError(Exception):
    """A problem with a one-line explanation and, where there is one, the fix."""

    exit_code = 1

    def __init__(self, problem: str, fix: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem.rstrip(".")
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.problem}. {self.fix}" if self.fix else f"{self.problem}."


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
