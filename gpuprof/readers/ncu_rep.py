"""Nsight Compute binary reports (``.ncu-rep``), read with NVIDIA's ``ncu_report`` Python module.

``ncu_report`` ships as the ``ncu-report`` wheel on PyPI (the ``gpuprof-hpc[ncu]`` extra); it needs
neither a GPU nor the CUDA toolkit. Every profiled kernel (an "action" in a "range") becomes one
Launch with all of its metrics; string-valued metrics stay strings. Left out: the section metadata
entries (``group:*``, ``breakdown:*``: lists of metric names, not measurements) and metrics that
have per-instance values only (``memory_access_type`` ...), which have no single value to keep.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gpuprof.errors import FormatError
from gpuprof.model import Run, catalog, tables
from gpuprof.readers._text import metric_columns
from gpuprof.readers.ncu_csv import run_device

NAME = "ncu-rep"
DESCRIPTION = "Nsight Compute binary report (.ncu-rep), through NVIDIA's ncu_report module"

_MAGIC = "NVR\x00"


def sniff(path: Path, head: str) -> bool:
    return head.startswith(_MAGIC) or path.suffix == ".ncu-rep"


# NVIDIA's parser aborts the whole process on some damaged reports (a protobuf CHECK failure,
# found by fuzzing), so a new interpreter reads the report (_ncu_rep_child.py): its crash becomes a
# FormatError, and no fork of a process with threads can deadlock.
_CHILD = Path(__file__).with_name("_ncu_rep_child.py")
PROBE_TIMEOUT_S = 300


def check_loadable(path: Path) -> None:
    """FormatError when loading ``path`` kills or hangs the process loading it: for code that then
    loads it itself (:mod:`gpuprof.readers.ncu_source_csv`)."""
    _raise_for(path, *_in_child(path, "load"))


def _raise_for(path: Path, status: int | None, answer: tuple[Any, ...] | None) -> Any:
    """What the child read, or the FormatError for how it ended."""
    if status is None:
        raise FormatError(
            f"{path}: ncu_report did not finish loading it within {PROBE_TIMEOUT_S} s",
            "check that it is a complete Nsight Compute report (.ncu-rep)",
        )
    if status:
        raise FormatError(
            f"{path}: ncu_report crashed loading it (signal {status}): the report is damaged",
            "re-export it from Nsight Compute, or profile again",
        )
    if answer is None:  # the child ended without a signal or a word
        raise FormatError(
            f"{path}: ncu_report stopped reading it without a result",
            "re-export it from Nsight Compute, or profile again",
        )
    if answer[0] == "error":
        raise FormatError(*answer[1:])
    return answer[1]


def _in_child(
    path: Path, mode: str, meanwhile: Callable[[], object] = lambda: None
) -> tuple[int | None, tuple[Any, ...] | None]:
    """Run the reading child on ``path`` (or take the one :func:`start` started): (the signal that
    ended it, 0 when it ended normally, None when it ran past the time limit and was killed; its
    answer, None when it gave none). The parent runs ``meanwhile`` while it waits.

    The child sends its answer's length first and closes the pipe once it is all written: a
    complete answer is the normal end, so the parent goes on at once and a thread reaps the child,
    whose exit (unmapping NVIDIA's 37 MB library) takes longer than a small report's read."""
    import marshal
    import os
    import select
    import threading
    import time

    started = _started.pop((str(path), mode), None)
    child, deadline = started if started else (_spawn(path, mode), time.monotonic() + PROBE_TIMEOUT_S)
    meanwhile()
    chunks: list[bytes] = []
    out = child.stdout.fileno()
    try:
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([out], [], [], left)[0]:
                continue
            chunk = os.read(out, 1 << 20)
            if not chunk:
                break  # end of the pipe: the child is done writing, or gone
            chunks.append(chunk)
    finally:
        child.stdout.close()
    finished = time.monotonic() < deadline
    data = b"".join(chunks)
    if finished and len(data) >= 8 and int.from_bytes(data[:8], "little") == len(data) - 8:
        threading.Thread(target=child.wait, daemon=True).start()
        return 0, marshal.loads(data[8:])  # from our own child: its columns, or the error it met
    if not finished:
        child.kill()
        child.wait()
        return None, None
    code = child.wait()
    return (-code if code < 0 else 0), None


# Children started ahead of the read that takes them (:func:`start`): (path, mode) -> (child, deadline).
_started: dict[tuple[str, str], tuple[Any, float]] = {}


def start(path: str | Path) -> bool:
    """Start reading ``path`` in the child now, when it is a regular file that looks like a report,
    so that a caller still loading the library (pandas, gpuprof's own modules) does so while the
    child loads ncu_report and reads; :func:`read` of the same path takes the child's answer, and
    :func:`forget` ends a child no read took. Whether a child was started."""
    import os
    import time

    name = str(Path(path))
    if (name, "read") in _started or not os.path.isfile(name) or _spec() is None:
        return False
    with open(name, "rb") as handle:
        if not (handle.read(len(_MAGIC)) == _MAGIC.encode() or name.endswith(".ncu-rep")):
            return False
    _started[(name, "read")] = (_spawn(Path(name), "read"), time.monotonic() + PROBE_TIMEOUT_S)
    return True


def forget(path: str | Path) -> None:
    """End the child :func:`start` started for ``path`` if no read took it (the read failed first)."""
    started = _started.pop((str(Path(path)), "read"), None)
    if started:
        child, _ = started
        child.kill()
        child.stdout.close()
        child.wait()


@contextlib.contextmanager
def ahead(path: str | Path, fmt: str | None = None) -> Iterator[None]:
    """:func:`start` ``path``'s child (when ``fmt`` allows a report) for the body, which loads the
    library and then reads; :func:`forget` it afterwards if the body did not take it."""
    started = fmt in (None, NAME) and start(path)
    try:
        yield
    finally:
        if started:
            forget(path)


def _spec() -> Any:
    """Where ncu_report is installed (its import spec), or None."""
    import importlib.util

    return importlib.util.find_spec("ncu_report")


def _spawn(path: Path, mode: str) -> Any:
    """The child reading ``path`` (``python -I -S _ncu_rep_child.py MODE PATH SITE_DIR``)."""
    import subprocess
    import sys

    spec = _spec()
    if spec is None:
        _module(path)  # the FormatError naming the extra
    site_dir = str(Path(spec.submodule_search_locations[0] if spec.submodule_search_locations else spec.origin).parent)
    return subprocess.Popen(
        [sys.executable, "-I", "-S", str(_CHILD), mode, str(path), site_dir],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def _warm() -> None:
    """What turning the columns into tables needs next, loaded while the child reads."""
    import pandas  # noqa: F401

    catalog.canonical("")


def _module(path: Path) -> Any:
    try:
        import ncu_report
    except ImportError:
        raise FormatError(
            f"{path}: reading .ncu-rep reports needs NVIDIA's ncu_report module",
            'Install it with: pip install "gpuprof-hpc[ncu]"',
        ) from None
    return ncu_report


def read(path: Path) -> Run:
    columns = _raise_for(path, *_in_child(path, "read", meanwhile=_warm))
    kernels, unnamed = [], []
    for position, name in enumerate(columns["kernels"], 1):
        if not name:  # damaged bytes where the name was: the launch is kept under a placeholder
            name = f"(unnamed kernel {position})"
            unnamed.append(position)
        kernels.append(name)
    if not kernels:
        raise FormatError(
            f"{path}: the report holds no profiled kernels (empty or truncated)",
            "Re-export it from Nsight Compute, or profile again",
        )
    notes = (
        [
            (
                f"launch(es) {', '.join(map(str, unnamed))} have no kernel name in the report "
                "(damaged?): shown as '(unnamed kernel N)'"
            )
        ]
        if unnamed
        else []
    )
    count = len(kernels)
    launch_table = tables.launch_table(kernels, range(count), columns["devices"], [1] * count, columns["attributes"])
    metric_table = tables.metric_table(
        columns["launch"], **metric_columns(columns["names"], columns["units"], columns["texts"])
    )
    return Run(
        kind="import",
        format=NAME,
        source=str(path),
        device=run_device(columns["devices"], columns["attributes"]),
        environment={"tool": "ncu"},
        notes=notes,
        tables=(launch_table, metric_table),
    )
