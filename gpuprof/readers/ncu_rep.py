"""Nsight Compute binary reports (``.ncu-rep``), read with NVIDIA's ``ncu_report`` Python module.

``ncu_report`` ships as the ``ncu-report`` wheel on PyPI (the ``gpuprof-hpc[ncu]`` extra); it needs
neither a GPU nor the CUDA toolkit. Every profiled kernel (an "action" in a "range") becomes one
Launch with all of its metrics; string-valued metrics stay strings. Left out: the section metadata
entries (``group:*``, ``breakdown:*``: lists of metric names, not measurements) and metrics that
have per-instance values only (``memory_access_type`` ...), which have no single value to keep.
"""

from __future__ import annotations

from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gpuprof.model import catalog
from gpuprof.model import tables
from gpuprof.errors import FormatError
from gpuprof.model import Run
from gpuprof.readers._text import metric_columns
from gpuprof.readers.ncu_csv import run_device

if TYPE_CHECKING:
    import pandas as pd

NAME = "ncu-rep"
DESCRIPTION = "Nsight Compute binary report (.ncu-rep), through NVIDIA's ncu_report module"

_MAGIC = "NVR\x00"


def sniff(path: Path, head: str) -> bool:
    return head.startswith(_MAGIC) or path.suffix == ".ncu-rep"


# NVIDIA's parser aborts the whole process on some damaged reports (a protobuf CHECK failure,
# found by fuzzing), so another process loads the report first: its crash becomes a FormatError.
_PROBE = "import sys, ncu_report; ncu_report.load_report(sys.argv[1])"
PROBE_TIMEOUT_S = 300


def check_loadable(path: Path) -> None:
    """FormatError when loading ``path`` kills or hangs the process loading it: for code that then
    loads it itself (:mod:`gpuprof.readers.ncu_source_csv`).

    Where Linux gives a process file descriptor, a forked copy of this process loads the report
    (a few milliseconds); elsewhere a new interpreter does (about 60 ms).
    """
    import os

    if hasattr(os, "pidfd_open"):
        module = _module(path)

        def load() -> bytes:
            module.load_report(str(path))
            return b""

        status, _ = _in_fork(load)
    else:
        status = _load_spawned(path)
    _raise_for(path, status)


def _raise_for(path: Path, status: int | None) -> None:
    if status is None:
        raise FormatError(f"{path}: ncu_report did not finish loading it within {PROBE_TIMEOUT_S} s",
                          "check that it is a complete Nsight Compute report (.ncu-rep)")
    if status:
        raise FormatError(f"{path}: ncu_report crashed loading it (signal {status}): the report "
                          "is damaged", "re-export it from Nsight Compute, or profile again")


def _in_fork(work: Callable[[], bytes], meanwhile: Callable[[], object] = lambda: None
             ) -> tuple[int | None, bytes]:
    """Run ``work`` in a forked child and return (the signal that ended the child, 0 when it ended
    normally, None when it ran past the time limit and was killed; the bytes ``work`` returned).
    The parent runs ``meanwhile`` while it waits.

    The child sends its bytes' length first and closes the pipe once they are all written: a
    complete answer is the normal end, so the parent goes on at once and a thread reaps the child,
    whose exit (unmapping NVIDIA's 37 MB library) takes longer than a small report's read."""
    import faulthandler
    import gc
    import os
    import select
    import signal
    import threading
    import time
    import warnings

    read_end, write_end = os.pipe()
    with warnings.catch_warnings():  # Python 3.12 warns on forking a threaded process; the child only reads
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: do the work, hand its bytes over, then leave at once, whatever happened
        try:
            gc.disable()  # a short life: a collection would touch every object it inherited, copying their pages
            os.close(read_end)
            faulthandler.disable()  # an abort is an expected answer here, not a dump on the user's terminal
            quiet = os.open(os.devnull, os.O_WRONLY)  # ncu_report logs parse failures on stderr
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)
            answer = work()
            data = memoryview(len(answer).to_bytes(8, "little") + answer)
            while data:
                data = data[os.write(write_end, data):]
            os.close(write_end)
        finally:
            os._exit(0)
    os.close(write_end)
    meanwhile()
    handle = os.pidfd_open(pid)
    deadline = time.monotonic() + PROBE_TIMEOUT_S
    chunks: list[bytes] = []
    try:
        while (left := deadline - time.monotonic()) > 0:
            ready = select.select([read_end, handle], [], [], left)[0]
            if read_end in ready:
                chunk = os.read(read_end, 1 << 20)
                if chunk:
                    chunks.append(chunk)
                    continue
                break  # end of the pipe: the child is done writing
            if handle in ready and not select.select([read_end], [], [], 0)[0]:
                break  # the child ended without writing (a crash)
    finally:
        os.close(read_end)
        os.close(handle)
    finished = time.monotonic() < deadline
    data = b"".join(chunks)
    if finished and len(data) >= 8 and int.from_bytes(data[:8], "little") == len(data) - 8:
        threading.Thread(target=os.waitpid, args=(pid, 0), daemon=True).start()
        return 0, data[8:]
    if not finished:
        os.kill(pid, signal.SIGKILL)
    status = os.waitpid(pid, 0)[1]
    if not finished:
        return None, b""
    return (os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0), b""


def _load_spawned(path: Path) -> int | None:
    """As :func:`_in_fork` with a load, in a new interpreter: the signal, 0, or None on the time limit."""
    import subprocess
    import sys

    try:
        done = subprocess.run([sys.executable, "-c", _PROBE, str(path)], capture_output=True,
                              timeout=PROBE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return None
    return -done.returncode if done.returncode < 0 else 0


def _module(path: Path) -> Any:
    try:
        import ncu_report
    except ImportError:
        raise FormatError(f"{path}: reading .ncu-rep reports needs NVIDIA's ncu_report module",
                          'Install it with: pip install "gpuprof-hpc[ncu]"') from None
    return ncu_report


def _collect(module: Any, path: Path) -> _Columns:
    """Every action of the report at ``path``, loaded with ``module`` (ncu_report)."""
    try:
        report = module.load_report(str(path))
    except (OSError, RuntimeError) as error:
        raise FormatError(f"{path}: ncu_report could not load it ({error})",
                          "Check that it is an Nsight Compute report (.ncu-rep)") from None
    columns = _Columns()
    for range_index in range(report.num_ranges()):
        profiled_range = report.range_by_idx(range_index)
        for action_index in range(profiled_range.num_actions()):
            columns.add(module, profiled_range.action_by_idx(action_index))
    return columns


def _collect_forked(module: Any, path: Path) -> _Columns:
    """:func:`_collect` in a forked child, which sends the columns back: a report that crashes
    ncu_report ends the child, not gpuprof, and the report is parsed once, not once to check it
    and once more to read it."""
    import pickle

    def work() -> bytes:
        try:
            return pickle.dumps(_collect(module, path))
        except FormatError as error:
            return pickle.dumps((error.problem, error.fix))
        except Exception as error:  # noqa: BLE001 - ncu_report's calls on damaged data raise all kinds
            return pickle.dumps((f"{path}: ncu_report failed reading it ({type(error).__name__}: {error})",
                                 "re-export it from Nsight Compute, or profile again"))

    status, data = _in_fork(work, meanwhile=lambda: catalog.canonical(""))  # warm the catalog the columns need next
    _raise_for(path, status)
    if not data:  # the child ended without a signal or a word
        raise FormatError(f"{path}: ncu_report stopped reading it without a result",
                          "re-export it from Nsight Compute, or profile again")
    found = pickle.loads(data)  # from this process's own child: its columns, or the error it met
    if isinstance(found, tuple):
        raise FormatError(*found)
    return found


def read(path: Path) -> Run:
    import os

    module = _module(path)
    if hasattr(os, "pidfd_open"):
        columns = _collect_forked(module, path)
    else:
        _raise_for(path, _load_spawned(path))
        columns = _collect(module, path)
    if not columns.kernels:
        raise FormatError(f"{path}: the report holds no profiled kernels (empty or truncated)",
                          "Re-export it from Nsight Compute, or profile again")
    return Run(kind="import", format=NAME, source=str(path), device=run_device(columns.devices, columns.attributes),
               environment={"tool": "ncu"}, tables=columns.tables())


class _Columns:
    """Every action's metrics as columns (name, unit, value as text), launches in report order."""

    def __init__(self) -> None:
        self.kernels: list[str] = []
        self.devices: list[str] = []
        self.attributes: list[dict[str, str]] = []
        self.launch: list[int] = []
        self.names: list[str] = []
        self.units: list[str] = []
        self.texts: list[str] = []

    def add(self, module: Any, action: Any) -> None:
        string_kind = module.IMetric.ValueKind_STRING
        position = len(self.kernels)
        values: dict[str, Any] = {}
        for name in action.metric_names():
            if name.startswith(("group:", "breakdown:")):
                continue
            try:
                metric = action.metric_by_name(name)
            except TypeError:  # a name read from damaged bytes, which ncu_report cannot take back
                continue
            if metric is None or not metric.has_value():
                continue
            value = metric.as_string() if metric.kind() == string_kind else metric.as_double()
            values[name] = value
            self.launch.append(position)
            self.names.append(name)
            self.units.append(metric.unit())
            self.texts.append(value if isinstance(value, str) else repr(value))
        self.kernels.append(action.name(module.IAction.NameBase_DEMANGLED) or action.name())
        self.devices.append(str(values.get("device__attribute_display_name", "")))
        attributes = _attributes(values, action.name())
        if path := _nvtx_path(action):
            attributes["nvtx"] = path
        self.attributes.append(attributes)

    def tables(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        count = len(self.kernels)
        return (tables.launch_table(self.kernels, range(count), self.devices, [1] * count, self.attributes),
                tables.metric_table(self.launch, **metric_columns(self.names, self.units, self.texts)))


def _nvtx_path(action: Any) -> str:
    """The NVTX push/pop ranges open at the launch (``--nvtx`` profiling), outermost first, joined by
    '/' as ``--nvtx-include`` writes nested ranges; domains in the report's order."""
    state = action.nvtx_state()
    if state is None:
        return ""
    ranges: list[str] = []
    for domain in state.domains():
        ranges += [str(name) for name in state.domain_by_id(domain).push_pop_ranges()]
    return "/".join(ranges)


def _attributes(values: dict[str, Any], short_name: str) -> dict[str, str]:
    """The launch facts the CSV readers take from their per-launch columns, from metrics here."""
    def whole(name: str) -> str:
        value = values.get(name)
        return str(int(value)) if isinstance(value, float) else str(value or "")

    attributes = {"function": short_name, "device": whole("launch__device_id"),
                  "context": whole("launch__context_id"), "stream": whole("launch__stream_id")}
    for key, prefix in (("block", "launch__block_dim_"), ("grid", "launch__grid_dim_")):
        dims = [whole(prefix + axis) for axis in "xyz"]
        if all(dims):
            attributes[key] = f"({', '.join(dims)})"
    major, minor = (whole(f"device__attribute_compute_capability_{part}") for part in ("major", "minor"))
    if major:
        attributes["cc"] = f"{major}.{minor or 0}"
    return {key: value for key, value in attributes.items() if value}
