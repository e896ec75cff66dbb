"""Gzip-compressed profiler files, recognised by their magic bytes, not their name.

Framework traces are usually written gzipped (``*.pt.trace.json.gz``, ``trace.json.gz``), and any
other profiler output may have been compressed on its way off a cluster. Every reader reaches a
file's bytes through :func:`open_bytes`; a reader that needs a plain file on disk (pandas, NVIDIA's
report module) gets a decompressed copy in a temporary folder from :func:`plain_file`, never one
beside the user's file.
"""

from __future__ import annotations

import contextlib
import gzip
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from gpuprof.errors import FormatError

GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def open_bytes(path: Path) -> BinaryIO:
    """``path`` opened for reading bytes, decompressed when it is gzip."""
    return gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")  # type: ignore[return-value]


def head(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of the (decompressed) content; as much as a cut gzip stream gives."""
    with open_bytes(path) as handle:
        try:
            return handle.read(size)
        except (EOFError, OSError, zlib.error):
            return b""


def read_all(path: Path) -> bytes:
    """The whole (decompressed) content; FormatError for a cut or corrupt gzip stream."""
    with open_bytes(path) as handle:
        try:
            return handle.read()
        except (EOFError, OSError, zlib.error) as error:
            raise FormatError(
                f"{path}: the gzip stream is cut or corrupt ({error})",
                "copy the file again from where the profiler wrote it",
            ) from None


@contextlib.contextmanager
def plain_file(path: Path) -> Iterator[Path]:
    """``path`` itself when it is not compressed; else a decompressed copy in a temporary folder,
    removed afterwards."""
    if not is_gzip(path):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="gpuprof-gunzip-") as folder:
        name = path.name.removesuffix(".gz")
        copy = Path(folder) / name
        with open_bytes(path) as source, open(copy, "wb") as target:
            try:
                shutil.copyfileobj(source, target, 1 << 20)
            except (EOFError, OSError, zlib.error) as error:
                raise FormatError(
                    f"{path}: the gzip stream is cut or corrupt ({error})",
                    "copy the file again from where the profiler wrote it",
                ) from None
        yield copy
