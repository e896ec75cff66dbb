"""Input paths checked before they are opened, and their operating-system errors as one line.

A FIFO blocks a reader forever and ``/dev/zero`` never ends, so every file gpuprof reads (profiler
outputs, run files, sweep configs, stores) is first checked to be a regular file; a symlink loop, an
over-long name or a missing permission becomes a :class:`~gpuprof.errors.FormatError` naming the
path (worded by :func:`gpuprof.errors.os_problem`, as writers word theirs), not a traceback. Sits
beside :mod:`gpuprof.errors` at the bottom of the layers.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gpuprof.errors import FormatError, os_problem

# What a file that is not a regular one is, for the message.
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def regular_file(path: str | Path, fix: str = "give the file's path") -> Path:
    """``path`` when it is a regular file (symlinks followed) this process can open; one-line FormatError otherwise."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise FormatError(os_problem(path, error), fix) from None
    for test, kind in _KINDS:
        if test(mode):
            raise FormatError(f"{path} is {kind}, not a regular file", fix)
    if not os.access(path, os.R_OK):
        raise FormatError(f"{path}: permission denied (cannot be read)", fix)
    return path


def read_capped(path: str | Path, limit: int, what: str, fix: str = "give the file's path") -> bytes:
    """The bytes of the regular file ``path``, refused when it holds more than ``limit`` (a config, a header)."""
    path = regular_file(path, fix)
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as error:
        raise FormatError(os_problem(path, error), fix) from None
    if len(data) > limit:
        raise FormatError(f"{path}: over {limit // 1024} KiB, too big for {what}", fix)
    return data
