"""Writing a file the user named without damaging what is there.

Every writer (export, merge, HTML reports, charts, the results store, report folders) goes through
here, because the path a user gives need not be a regular file: a symlink is written through to its
target (the link stays a link), a character device or FIFO is written through directly (``export
/dev/stdout``, a pipe's reader gets the data), and only a regular file (or a new one) is written
beside itself and renamed over, so a failed write leaves the old file whole. Nothing here ever
replaces a device, FIFO or symlink with a regular file. A failed write (a full disk) leaves no partial
file, and a writer of several files (a roofline's charts) can make them all or none
(:func:`all_or_none`). OS errors are worded by :func:`gpuprof.errors.os_problem`, as inputs' are. This
module sits beside ``errors``: it imports nothing else of gpuprof, so every stage may use it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any

from gpuprof.errors import GpuprofError, InputError, os_fix, os_problem

_FIX = "give a path in a folder that exists and that you can write"
# What the innermost all_or_none block has created so far (files, then folders), or None outside one.
_CREATED: ContextVar[list[Path] | None] = ContextVar("_CREATED", default=None)


def _cannot_write(path: str | Path, error: OSError) -> InputError:
    return InputError(f"cannot write {os_problem(path, error)}", os_fix(error, _FIX))


def _created(path: Path) -> None:
    made = _CREATED.get()
    if made is not None:
        made.append(path)


@contextmanager
def all_or_none() -> Iterator[None]:
    """Files and folders created inside the block are removed again when it fails: a roofline whose
    second chart hits a full disk leaves neither the first chart nor the folder made for them. Files
    that were there before (replaced whole or not at all) are left as they are."""
    made: list[Path] = []
    token = _CREATED.set(made)
    try:
        yield
    except BaseException:
        for path in reversed(made):
            with suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()  # only when empty: a file the user put there meanwhile stays
                else:
                    path.unlink()
        raise
    finally:
        _CREATED.reset(token)


def target(path: str | Path) -> tuple[Path, bool]:
    """Where writing ``path`` really goes (symlinks followed) and whether it is a stream (a
    character device or FIFO) to write through rather than a file to replace.

    A folder, a block device or a socket is refused with one line: none can take a file's bytes.
    """
    real = Path(os.path.realpath(path))
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        return real, False
    except OSError as error:
        raise _cannot_write(path, error) from None
    if stat.S_ISREG(mode):
        return real, False
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return real, True
    what = (
        "a folder" if stat.S_ISDIR(mode) else "a block device (a disk)" if stat.S_ISBLK(mode) else "not a regular file"
    )
    raise InputError(f"cannot write {path}: it is {what}", "give the path of a file to write")


@contextmanager
def replacing(path: str | Path, mode: str = "w", **open_args: Any) -> Iterator[IO[Any]]:
    """An open handle whose contents become the whole of ``path`` when the block ends.

    A regular file is written as ``.NAME.partial`` beside its (symlink-resolved) target, synced and
    renamed over it; a device or FIFO is opened and written directly. OSErrors become one InputError.
    """
    real, stream = target(path)
    partial = real if stream else real.with_name(f".{real.name}.partial")
    new = not stream and not os.path.lexists(real)
    try:
        try:
            with open(partial, mode, **open_args) as handle:
                yield handle
                handle.flush()
                if not stream:
                    os.fsync(handle.fileno())
            if not stream:
                os.replace(partial, real)
                if new:
                    _created(real)
        except OSError as error:
            raise _cannot_write(path, error) from None
    finally:
        if not stream:
            partial.unlink(missing_ok=True)


def write_text(path: str | Path, text: str) -> None:
    """``text`` (UTF-8) as the whole of ``path``, through :func:`replacing`."""
    with replacing(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def appending(path: str | Path, **open_args: Any) -> IO[Any]:
    """``path`` opened to add to its end (through a symlink; a device or FIFO as it is)."""
    target(path)
    try:
        return open(path, "a", **open_args)
    except OSError as error:
        raise _cannot_write(path, error) from None


def creatable_in(folder: str | Path) -> str | None:
    """Why a file cannot be created in ``folder``, or None when it can. Tried for real (a probe file
    made and removed at once): permission bits say yes for root in /proc, where nothing can be made."""
    import tempfile

    try:
        handle, name = tempfile.mkstemp(prefix=".gpuprof-probe-", dir=folder)
    except OSError as error:
        return error.strerror or str(error)
    os.close(handle)
    os.unlink(name)
    return None


def make_folder(path: str | Path) -> Path:
    """``path`` as a folder, created with its parents when missing; one InputError when it cannot
    be (a parent that is a file, a read-only place, a path under /proc)."""
    folder = Path(path)
    missing = [p for p in (folder, *folder.parents) if not os.path.lexists(p)]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError(f"cannot create folder {folder}: a file is in the way", "give another folder") from None
    except OSError as error:
        raise InputError(
            f"cannot create folder {os_problem(folder, error)}",
            os_fix(error, "give a folder you can write (or one that can be created)"),
        ) from None
    for made in reversed(missing):  # outermost first: removed last
        _created(made)
    return folder


def regular_file(path: str | Path, what: str, error: type[GpuprofError], fix: str) -> Path:
    """``path`` with symlinks followed, for a file that only works as a regular file (an SQLite
    store needs to seek and to keep its journal beside it): a device or FIFO is refused with one
    line (``error``), as writing through it makes no sense. A folder is left to the caller."""
    real = Path(os.path.realpath(path))
    if os.path.islink(real):  # realpath stops at a link only where the links lead back to themselves
        raise error(f"{path} is a symbolic link loop (a link that leads back to itself), not a {what}", fix)
    with suppress(OSError):
        if not (real.is_file() or real.is_dir() or not real.exists()):
            raise error(f"{path} is a device or FIFO, not a {what}: it must be a regular file", fix)
    return real
