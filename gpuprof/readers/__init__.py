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
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, cast

from gpuprof import inputs
from gpuprof.errors import FormatError, shortened
from gpuprof.model import Run
from gpuprof.readers import _compressed

# Binary reports first: their magic bytes decide at once, where the text sniffers would scan 64 KiB
# of decoded binary with their patterns (a quarter of the time of reading a small .ncu-rep).
_MODULES: list[str] = [
    "ncu_rep",
    "nsys_rep",
    "nsys_sqlite",
    "xplane",
    "regions",
    "ncu_source_csv",
    "perf_topdown",
    "perf_stat",
    "dlprof_papi",
    "nsys_trace",
    "ncu_raw",
    "ncu_text",
    "ncu_csv",
    "nvprof_csv_metrics",
    "nvprof_csv_trace",
    "nvprof_text_trace",
    "nvprof_api_trace",  # after the GPU traces: a file with both is theirs, and they add its API calls
    "nvprof_text_metrics",
    "nvprof_text_summary",
    "nsys_stats",
    "chrome_trace",
    "stonne",
]

HEAD_BYTES = 65536
# Magic bytes of compressed files, for the hint to decompress one that no reader takes.
_COMPRESSED = (("gzip", b"\x1f\x8b"), ("xz", b"\xfd7zXZ\x00"), ("zstd", b"\x28\xb5\x2f\xfd"), ("bz2", b"BZh"))


class Reader(Protocol):
    """One profiler output format."""

    NAME: str  # what --reader takes and Run.format records: "ncu-csv"
    DESCRIPTION: str  # one line for --help and for the "formats gpuprof reads" error

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
    if os.path.isdir(path):  # os.path: an over-long name or a loop is False here, one line below
        for module in modules():
            if hasattr(module, "sniff_dir") and module.sniff_dir(path):
                return module
        raise FormatError(
            f"{path}: a folder gpuprof cannot read as one run",
            "give a profiler output file, or a folder of STONNE layer outputs",
        )
    path = inputs.regular_file(path, "give a profiler output file")
    head = read_head(path)
    for module in modules():
        if module.sniff(path, head):
            return module
    with open(path, "rb") as handle:
        magic = handle.read(6)
    packed = next((name for name, start in _COMPRESSED if magic.startswith(start)), None)
    if packed:
        raise FormatError(
            f"{path}: compressed ({packed}) and no reader takes it",
            "decompress it first (gunzip, xz -d, zstd -d or bunzip2) and import the result",
        )
    names = ", ".join(name for name, _ in formats())
    raise FormatError(f"{path}: not a profiler output gpuprof recognises", f"gpuprof reads: {names}")


def read(path: str | Path, fmt: str | None = None) -> Run:
    """Read one file into a Run, detecting its format unless ``fmt`` names one."""
    if fmt:
        by_name = {m.NAME: m for m in modules()}
        if fmt not in by_name:
            raise FormatError(f"unknown format '{fmt}'", f"choose one of: {', '.join(by_name)}")
        run = _read(
            by_name[fmt],
            Path(path) if os.path.isdir(path) else inputs.regular_file(path, "give a profiler output file"),
        )
    else:
        run = _read(detect(path), Path(path))
    run.notes += unreadable_notes(run) + truncation_notes(run)
    return run


# Formats whose launches each get the profiler's whole metric list (perf intervals, cgroups and nsys
# summaries legitimately differ).
_SAME_METRICS_PER_LAUNCH = ("ncu-csv", "ncu-raw", "ncu-text", "ncu-rep", "nvprof-csv-metrics", "nvprof-text-metrics")


def truncation_notes(run: Run, counted: Sequence[int] | None = None) -> list[str]:
    """'The file looks truncated' when its last launch has fewer metric rows than every other launch:
    a file cut at a line boundary reads as a smaller profile, and this is the trace such a cut leaves.
    ``counted``: the metric rows per launch, for a run whose metric table holds only some of them."""
    import numpy as np

    launches = run.launch_table
    if len(launches) < 2 or run.format not in _SAME_METRICS_PER_LAUNCH:
        return []
    rows = (
        np.bincount(run.metric_table["launch"].to_numpy(), minlength=len(launches))
        if counted is None
        else np.asarray(counted)
    )
    last, others = int(rows[-1]), int(rows[:-1].min())
    if last >= others:
        return []
    kernel = shortened(str(launches["kernel"].iloc[-1]), 60)
    return [
        f"the file looks truncated: its last launch ({kernel}) has {last} metric row(s), every other launch "
        f"at least {others}; give the whole file if the profiler finished"
    ]


# Cells a tool meant as a number but that hold none: kept as missing (their text), never as 0 or a neighbour's digits.
_NOT_NUMBERS = r"[-+]?(?:nan|inf|infinity|n/a)|[-+]?[\d.,]*\d[\d.,]*%?"


def unreadable_notes(run: Run) -> list[str]:
    """A note naming the rows whose value is no number although it was written as one ('nan', 'n/a',
    'inf', '1.2.3'): the metric is kept as missing, and the note says so instead of it vanishing."""
    rows = run.text_rows()
    if not len(rows):
        return []
    written = run.metric_table["text"].iloc[rows].astype(str).str.strip()
    bad = written[written.str.fullmatch(_NOT_NUMBERS, case=False)]
    if bad.empty:
        return []
    table = run.metric_table.loc[bad.index]
    kernels = run.launch_table["kernel"].to_numpy()
    examples = [
        f"launch {launch} ({shortened(str(kernels[launch]), 60)}) {metric} = '{shortened(text, 20)}'"
        for launch, metric, text in zip(table["launch"][:3], table["metric"][:3], bad[:3])
    ]
    return [
        f"{len(bad)} value(s) are not numbers and are kept as missing: {'; '.join(examples)}"
        + (" …" if len(bad) > 3 else "")
    ]


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
