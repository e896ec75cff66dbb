"""One reader per profiler output format, all returning the same :class:`gpuprof.model.Run`.

Each reader module follows :class:`Reader`: ``NAME``, ``DESCRIPTION``, ``sniff(path, head) -> bool``
(does this file look like my format? ``head`` is the first 64 KiB, decompressed when the file is gzip,
decoded leniently) and ``read(path) -> Run``. A gzip-compressed file is read through one helper
(:mod:`gpuprof.readers._compressed`): a reader with ``READS_GZIP = True`` opens it itself with
``open_bytes``; any other gets a decompressed copy in a temporary folder. Readers
import only the standard library at module level; heavy imports go inside ``read``. A reader raises
:class:`gpuprof.errors.FormatError` or :class:`gpuprof.errors.ProfilerError`, never exits or prints.
To add a format: write the module and list it in ``_MODULES`` (order matters: more specific first).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Protocol, cast

from gpuprof.errors import FormatError
from gpuprof.model import Run
from gpuprof.readers import _compressed

# Binary reports first: their magic bytes decide at once, where the text sniffers would scan 64 KiB
# of decoded binary with their patterns (a quarter of the time of reading a small .ncu-rep).
_MODULES: list[str] = [
    "ncu_rep", "nsys_rep", "nsys_sqlite", "xplane", "regions",
    "ncu_source_csv", "perf_topdown", "perf_stat", "dlprof_papi", "nsys_trace",
    "ncu_raw", "ncu_text", "ncu_csv",
    "nvprof_csv_metrics", "nvprof_csv_trace", "nvprof_api_trace", "nvprof_text_trace", "nvprof_text_metrics",
    "nvprof_text_summary", "nsys_stats", "chrome_trace", "stonne",
]

HEAD_BYTES = 65536


class Reader(Protocol):
    """One profiler output format."""

    NAME: str          # what --reader takes and Run.format records: "ncu-csv"
    DESCRIPTION: str   # one line for --help and for the "formats gpuprof reads" error

    def sniff(self, path: Path, head: str) -> bool:
        """Does ``path`` (whose first 64 KiB are ``head``) look like this format? Cheap, never raises."""
        ...

    def read(self, path: Path) -> Run:
        """The whole file as a Run; FormatError or ProfilerError when it cannot be read."""
        ...


def modules() -> list[Reader]:
    return [cast(Reader, importlib.import_module(f"gpuprof.readers.{name}")) for name in _MODULES]


def formats() -> list[tuple[str, str]]:
    """(name, description) of every format gpuprof reads, for --help and error messages."""
    return [(m.NAME, m.DESCRIPTION) for m in modules()]


def read_head(path: Path) -> str:
    raw = _compressed.head(path, HEAD_BYTES)
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if raw.startswith(bom):
            return raw.decode(codec, errors="replace")
    return raw.decode("utf-8", errors="replace")


def detect(path: str | Path) -> Reader:
    """The reader module that recognises ``path``; FormatError naming the known formats otherwise."""
    path = Path(path)
    if not path.exists():
        raise FormatError(f"{path}: no such file", "check the path")
    if path.is_dir():
        for module in modules():
            if hasattr(module, "sniff_dir") and module.sniff_dir(path):
                return module
        raise FormatError(f"{path}: a folder gpuprof cannot read as one run",
                          "give a profiler output file, or a folder of STONNE layer outputs")
    if not path.is_file():
        raise FormatError(f"{path}: not a regular file", "give a profiler output file")
    head = read_head(path)
    for module in modules():
        if module.sniff(path, head):
            return module
    names = ", ".join(name for name, _ in formats())
    raise FormatError(f"{path}: not a profiler output gpuprof recognises",
                      f"gpuprof reads: {names}")


def read(path: str | Path, fmt: str | None = None) -> Run:
    """Read one file into a Run, detecting its format unless ``fmt`` names one."""
    if fmt:
        by_name = {m.NAME: m for m in modules()}
        if fmt not in by_name:
            raise FormatError(f"unknown format '{fmt}'", f"choose one of: {', '.join(by_name)}")
        return _read(by_name[fmt], Path(path))
    return _read(detect(path), Path(path))


def _read(module: Reader, path: Path) -> Run:
    if getattr(module, "READS_GZIP", False) or not path.is_file():
        return module.read(path)
    with _compressed.plain_file(path) as plain:
        if plain == path:
            return module.read(path)
        run = module.read(plain)
    run.source = str(path)
    run.notes.append("read from the gzip-compressed file")
    return run
