"""Import profiler output files into the results store, and summarise them per kernel.

Each file becomes one :class:`~gpuprof.model.Run` (``kind="import"``), read by the reader that
recognises its content and stored whole in one transaction, under an id derived from the file's
bytes (importing a file twice stores it once). Files are imported in order and the first file
that cannot be read stops the import: runs stored before it stay stored, nothing of the failing
file is.

The per-kernel table of those runs is :func:`gpuprof.derive.kernel_table.kernel_table`.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import itertools
import os
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpuprof import readers
from gpuprof.derive import counters, levels, skew
from gpuprof.derive.kernel_table import KEY_METRICS, kernel_table
from gpuprof.derive.pivot import Counters
from gpuprof.devices import gpu_table
from gpuprof.errors import FormatError, GpuprofError, InputError
from gpuprof.inputs import regular_file
from gpuprof.model import Run, tables
from gpuprof.readers import _cores, _ncu_csv_bulk, joining, ncu_csv
from gpuprof.store import open_store
from gpuprof.store.columns import MetricSpill, encode

if TYPE_CHECKING:
    import numpy as np


def read_file(path: str | Path, fmt: str | None = None, *, time_notes: bool = True) -> Run:
    """One file as a Run (nothing stored): its format detected from its content unless ``fmt``;
    its notes say where its kernel times cannot be trusted as they stand (:mod:`gpuprof.derive.skew`;
    without ``time_notes``, for a file joined with others, whose joined run gets them instead)."""
    path = Path(path)
    if not os.path.isdir(path):  # os.path: an over-long name or a loop is False here, one line below
        path = regular_file(path, "give a profiler output file")  # a FIFO, loop or over-long name: one line
    if path.is_file() and path.stat().st_size == 0:
        raise FormatError(
            f"{path}: the file is empty", "give the file the profiler wrote (did the profiling run fail or not finish?)"
        )
    run = readers.read(path, fmt)
    if time_notes:  # every counter the notes and the per-kernel table read, in one pass over the metric table
        Counters.of_run(run, counters.launch_keys(KEY_METRICS))
    run.notes += (skew.notes(run) if time_notes else []) + _valueless(run)
    return run


def _valueless(run: Run) -> list[str]:
    """A note naming the launches whose every counter is NaN or n/a (a profiler pass that failed for
    them): they are kept, as the file lists them, but nothing can be derived from them."""
    import numpy as np

    metrics = run.metric_table
    if metrics.empty:
        return []
    finite = np.isfinite(metrics["value"].to_numpy())
    texts = metrics["text"].to_numpy()
    has_text = np.zeros(len(texts), dtype=bool)
    given = run.text_rows()  # usually few rows hold text
    codes, found = tables.distinct(texts[given])  # a few distinct texts over many rows: each judged once
    useful_text = np.array([str(t).strip().lower() not in ("", "nan", "n/a") for t in found], dtype=bool)
    has_text[given] = useful_text[codes]
    useful = np.bincount(metrics["launch"].to_numpy(), weights=finite | has_text, minlength=len(run.launch_table))
    counted = np.bincount(metrics["launch"].to_numpy(), minlength=len(run.launch_table))
    return _valueless_note(run, counted, useful)


def _valueless_note(run: Run, counted: np.ndarray, useful: np.ndarray) -> list[str]:
    """:func:`_valueless` from the metric rows and the useful ones per launch."""
    import numpy as np

    empty = np.flatnonzero((counted > 0) & (useful == 0))
    if not len(empty):
        return []
    launches = run.launch_table
    named = ", ".join(f"{launches['index'].iat[i]} ({launches['kernel'].iat[i]})" for i in empty[:3])
    more = f" and {len(empty) - 3} more" if len(empty) > 3 else ""
    return [f"{len(empty)} launch(es) with every counter NaN or n/a, kept with nothing to derive: {named}{more}"]


def content_id(path: str | Path | Sequence[str | Path], fmt: str, between: Callable[[], None] = lambda: None) -> str:
    """The run id of an imported file (or of files read as one): a hash of the bytes and the
    format, so importing the same file again finds the run already stored instead of counting
    its kernels twice. ``between`` is called before each block is hashed.

    In blocks of 16 MiB read into one buffer: each block takes the GIL twice (read, hash), and on
    a thread beside busy Python code each take can wait out a switch interval (5 ms)."""
    digest = hashlib.sha256(fmt.encode())
    buffer = bytearray(16 << 20)
    view = memoryview(buffer)
    for one in _files([path] if isinstance(path, (str, Path)) else path):
        with open(one, "rb", buffering=0) as handle:
            while True:
                between()
                size = handle.readinto(buffer)
                if not size:
                    break
                digest.update(view[:size])
    return digest.hexdigest()[:32]


def _content_id_behind(path: str | Path, fmt: str) -> str:
    """:func:`content_id` on a thread that yields the cores to the reader's own: it waits while a
    multi-threaded parser holds them (:mod:`gpuprof.readers._cores`), at lowest priority (on
    Linux) throughout, so it runs in what the steps after the parse leave idle."""
    if sys.platform == "linux":  # a thread's id names the thread only on Linux
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    return content_id(path, fmt, _cores.wait_free)


def _read_with_id(path: str | Path, fmt: str | None, tag: str) -> tuple[Run, Callable[[], str]]:
    """One file's Run and what gives its :func:`content_id`: the file is hashed on a second thread
    while it is read (hashlib lets go of the GIL) when its format is known beforehand, as it nearly
    always is, and the hash may still be under way when the Run is back (its store columns can be
    made meanwhile)."""
    from concurrent.futures import ThreadPoolExecutor

    try:  # only a regular file is hashed ahead (a device such as /dev/zero has no end)
        guess = (fmt or readers.detect(path).NAME) if os.path.isfile(path) else None
    except (GpuprofError, OSError, ValueError):
        guess = None  # read_file says what is wrong with it
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        hashing = pool.submit(_content_id_behind, path, guess + tag) if guess else None
    finally:
        pool.shutdown(wait=False)  # the thread ends with its one task
    run = read_file(path, guess or fmt)  # detected once
    if hashing and run.format == guess:
        return run, hashing.result
    return run, lambda: content_id(path, run.format + tag)


# ncu details CSVs larger than this are read chunk by chunk into the store (:func:`_read_streamed`):
# a 10 GB file is never held as one metric table.
STREAM_MIN_BYTES = _ncu_csv_bulk.ARROW_MAX_BYTES


def _read_streamed(path: str | Path, fmt: str | None, tag: str) -> tuple[Run, str, MetricSpill] | None:
    """A large Nsight Compute details CSV read a chunk at a time, its metric rows written to a
    :class:`~gpuprof.store.columns.MetricSpill` as they are read; the Run holds its launches whole
    but only the metric rows the per-kernel table and the notes read (catalog counters,
    :data:`KEY_METRICS`, values given as text). None for any other file, or one the chunked
    reader does not take (it is then read whole)."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) <= STREAM_MIN_BYTES:
            return None
        if (fmt or readers.detect(path).NAME) != ncu_csv.NAME:
            return None
    except (GpuprofError, OSError, ValueError):
        return None  # read_file says what is wrong with it
    spill = MetricSpill()
    try:
        wanted: set[str] = set()
        run = ncu_csv.read_chunked(Path(path), lambda piece: _kept(spill, piece, wanted))
        if run is None:
            spill.close()
            return None
        run.notes += readers.unreadable_notes(run) + readers.truncation_notes(run, spill.counted)
        run.notes += skew.notes(run) + _valueless_note(run, spill.counted, spill.useful)
        return run, content_id(path, run.format + tag), spill
    except BaseException:
        spill.close()
        raise


def _kept(spill: MetricSpill, piece: dict, wanted: set[str]) -> dict:
    """One chunk's metric columns written to ``spill``; the rows of it the Run holds: those of the
    metrics the per-kernel table and the notes look up (``wanted``, found on the first chunk) and
    values given as text."""
    import numpy as np

    spill.append(piece)
    metric, text = piece["metric"], piece["text"]
    if not wanted:
        wanted.update(_looked_up(piece), KEY_METRICS, [""])
    canonical = piece["canonical"]
    keep = np.isin(metric.codes, [i for i, name in enumerate(metric.categories) if name in wanted])
    keep |= np.isin(canonical.codes, [i for i, name in enumerate(canonical.categories) if name in wanted])
    if text is not None:
        keep |= np.not_equal(text, None)
    return {key: column if isinstance(column, str) or column is None else column[keep] for key, column in piece.items()}


def _looked_up(piece: dict) -> set[str]:
    """The metric names the per-kernel table and the notes look up in a run of ``piece``'s rows
    (every launch of a details CSV has the same metrics, so its first chunk tells them all)."""

    looked: set[str] = set()

    class Probe(Run):
        def lookup_columns(self, keys: Sequence[str]) -> tuple[list[np.ndarray], list[str | None]]:
            looked.update(keys)
            return super().lookup_columns(keys)

    count = int(piece["launch"].max()) + 1 if len(piece["launch"]) else 0
    launches = tables.launch_table([""] * count, range(count), [""] * count, [1] * count, [{}] * count)
    metrics = tables.metric_table(**piece)
    # as imported plainly and with each option that changes what is looked up (--tensor-flop-per-inst,
    # --l2-bytes l1-reads)
    for environment in ({}, {"tensor_flop_per_inst": 1.0}, {"l2_bytes": "l1-reads"}):
        probe = Probe("import", ncu_csv.NAME, "", environment=environment, tables=(launches, metrics))
        kernel_table([probe])
        skew.notes(probe)
        take_l2_definition(probe, environment.get("l2_bytes", "lts"))
    return looked


def _files(paths: Iterable[str | Path]) -> list[Path]:
    """The files to hash: each path itself, or a folder's regular files in name order."""
    return [
        child
        for path in map(Path, paths)
        for child in (sorted(c for c in path.iterdir() if c.is_file()) if os.path.isdir(path) else [path])
    ]


UNNAMED_GPU = (
    "the file does not name its GPU, so no efficiency can be computed for it (roofline, compare have no "
    "peaks to judge it by): import it with --gpu NAME (the names and keys: gpuprof peaks)"
)


def import_files(
    paths: Iterable[str | Path],
    store_path: str | Path | None = None,
    fmt: str | None = None,
    on_stored: Callable[[Run, bool], None] | None = None,
    *,
    on_ready: Callable[[Run], None] | None = None,
    join: bool = False,
    gpu: str | None = None,
    tensor_flop_per_inst: float | None = None,
    nvtx_include: Sequence[str] = (),
    l2_bytes: str = "lts",
) -> list[Run]:
    """Read each file and store its Run; returns the runs in order.

    With ``join``, the files are one application's, each holding some of the metrics
    (:mod:`gpuprof.readers.joining`): they are stored as one run, or, when one cannot be read, not at
    all. ``gpu`` names the GPU (a device-table name or key) for files that do not name theirs;
    ``tensor_flop_per_inst`` is the factor for tensor-pipe instructions (:func:`take_tensor_factor`);
    ``nvtx_include`` keeps only the launches made inside matching NVTX ranges (:func:`keep_nvtx`);
    ``l2_bytes`` is the L2 traffic counted (:func:`take_l2_definition`).

    Raises the reader's :class:`~gpuprof.errors.GpuprofError` for the first file that cannot be
    read, after the files before it were stored. ``on_stored(run, added)`` is called after each
    run is stored; ``added`` is False when the same file was already in the store; ``on_ready(run)``
    before, once its tables, device and environment are those stored (a caller may derive from it
    on another thread while its file is still hashed and SQLite writes it; nothing changes them
    after; only its ``run_id``, the hash, is set after). An Nsight
    Compute details CSV over :data:`STREAM_MIN_BYTES` goes into the store a chunk at a time
    (:func:`_read_streamed`): its returned run holds the launches but only the metric rows its
    per-kernel table and notes read; the store holds them all.
    """
    spec = gpu_table.match(gpu) if gpu else None
    tag = (f"|gpu={spec.key}" if spec else "") + (f"|tensor={tensor_flop_per_inst:g}" if tensor_flop_per_inst else "")
    tag += "".join(f"|nvtx={pattern}" for pattern in nvtx_include) + (f"|l2={l2_bytes}" if l2_bytes != "lts" else "")
    paths = list(paths)
    runs: list[Run] = []
    if join:
        run = joining.join([read_file(path, fmt, time_notes=False) for path in paths])
        run.notes += skew.notes(run)
        joined_id = content_id(paths, f"join|{run.format}{tag}")
        batches = iter([(run, lambda: joined_id, None)])
    else:
        batches = (_read_one(path, fmt, tag, streamed=not nvtx_include) for path in paths)
    first = next(batches, None)  # read before the store is opened: a failed import creates no store
    if first is None:
        return runs
    with open_store(store_path) as store:
        for run, identify, spill in itertools.chain([first], batches):
            if nvtx_include:
                run = keep_nvtx(run, nvtx_include)
            if spec:
                name_device(run, spec)
            elif run.format.startswith(("ncu", "nvprof")) and not run.device.get("name"):
                run.notes.append(UNNAMED_GPU)
            if tensor_flop_per_inst:
                take_tensor_factor(run, tensor_flop_per_inst)
            if l2_bytes != "lts":
                take_l2_definition(run, l2_bytes)
            # the store opened (a new one created) before a caller derives on another thread: its
            # dozens of statements would each wait for the GIL while that thread holds it
            store.open()
            if on_ready:
                on_ready(run)
            columns = None if spill else list(encode(run.launch_table, run.metric_table, text_rows=run.text_rows()))
            run.run_id = identify()  # the file hashed meanwhile
            added = not store.has(run.run_id)
            if spill is None:
                store.add(run, columns)
            else:
                try:
                    store.add_streamed(run, spill.rows, spill.columns(len(run.launch_table)))
                finally:
                    spill.close()
            runs.append(run)
            if on_stored:
                on_stored(run, added)
    return runs


def _read_one(
    path: str | Path, fmt: str | None, tag: str, streamed: bool
) -> tuple[Run, Callable[[], str], MetricSpill | None]:
    """A file's Run, what gives its run id, and the spill its metric rows went to when it was read
    chunk by chunk into one (:func:`_read_streamed`, where ``streamed``)."""
    if streamed and (read := _read_streamed(path, fmt, tag)):
        run, run_id, spill = read
        return run, lambda: run_id, spill
    return (*_read_with_id(path, fmt, tag), None)


def nvtx_matches(path: str, pattern: str) -> bool:
    """Whether a launch made inside the NVTX ranges ``path`` (``outer/inner``) matches ``pattern``:
    a glob on one range's name, or on nested ranges written ``outer/inner`` as the path does."""
    ranges = path.split("/") if path else []
    parts = ("/".join(ranges[i:j]) for i in range(len(ranges)) for j in range(i + 1, len(ranges) + 1))
    return any(fnmatch.fnmatchcase(part, pattern) for part in parts)


def keep_nvtx(run: Run, patterns: Sequence[str]) -> Run:
    """``run`` with only the launches made inside an NVTX range matching one of ``patterns``
    (the ``nvtx`` attribute readers keep), as ``ncu --nvtx-include`` would have profiled them."""
    import numpy as np

    paths = [a.get("nvtx", "") for a in run.launch_table["attributes"].tolist()]
    if not any(paths):
        raise FormatError(
            f"{run.source}: no launch in this file carries NVTX ranges, so --nvtx-include has nothing to match",
            "give an Nsight Systems SQLite export or an Nsight Compute "
            "report of an application that uses NVTX, or leave out --nvtx-include",
        )
    keep = np.array([any(nvtx_matches(p, pattern) for pattern in patterns) for p in paths])
    if not keep.any():
        seen = sorted({p.split("/")[0] for p in paths if p})[:5]
        raise FormatError(
            f"{run.source}: no launch inside an NVTX range matching {', '.join(patterns)}",
            f"outermost ranges in the file: {', '.join(seen)}",
        )
    position = np.cumsum(keep) - 1
    launches = run.launch_table[keep].reset_index(drop=True)
    rows = keep[run.metric_table["launch"].to_numpy()]
    metrics = run.metric_table[rows].reset_index(drop=True)
    metrics["launch"] = position[metrics["launch"].to_numpy()].astype(np.int32)
    notes = [*run.notes, f"--nvtx-include {' '.join(patterns)}: kept {int(keep.sum())} of {len(keep)} launches"]
    return Run(
        run.kind,
        run.format,
        run.source,
        run.device,
        run.workload,
        run.environment,
        notes=notes,
        tables=(launches, metrics),
    )


def name_device(run: Run, gpu: gpu_table.GpuSpec) -> None:
    """Give ``run`` the GPU the user named, when the file names none (an ncu CSV gives at most its
    compute capability, which must then agree); say so in its notes."""
    named = {d for d in run.launch_table["device"].tolist() if d} | {str(run.device.get("name") or "")} - {""}
    if named:
        run.notes.append(f"--gpu {gpu.key} not used: the file names its GPU ({', '.join(sorted(named))})")
        return
    stated = {a.get("cc", "") for a in run.launch_table["attributes"].tolist()} | {str(run.device.get("cc", ""))}
    stated -= {""}
    if stated and stated != {gpu.cc}:
        raise InputError(
            f"{run.source}: the file says compute capability {', '.join(sorted(stated))}, but "
            f"--gpu {gpu.key} ({gpu.title}) is {gpu.cc}",
            "name the GPU the file was profiled on",
        )
    run.device = {**run.device, "name": gpu.title, "cc": gpu.cc}
    run.notes.append(
        f"GPU named on the command line (--gpu): {gpu.title}, compute capability {gpu.cc}; the file does not name it"
    )


def take_tensor_factor(run: Run, factor: float) -> None:
    """Count ``factor`` FLOPs per tensor-pipe warp instruction where no documented rule counts the
    work (:mod:`gpuprof.derive.tensor`), as NERSC's method does with 512; say so in its notes."""
    run.environment = {**run.environment, "tensor_flop_per_inst": factor}
    run.notes.append(
        f"--tensor-flop-per-inst {factor:g}: tensor FLOPs = {factor:g} x tensor-pipe warp instructions "
        "where the file has no sm__ops_path_tensor_* counter and the GPU is not a Volta (an estimate: "
        "docs/tensor-cores.md section 8)"
    )


def take_l2_definition(run: Run, definition: str) -> None:
    """Count L2 traffic as ``definition`` (:data:`gpuprof.derive.levels.L2_DEFINITIONS`; 'lts', NERSC's
    lts__t_bytes, is the default) and say so in the run's notes, or that the file lacks its counter."""
    import numpy as np

    if definition not in levels.L2_DEFINITIONS:
        raise InputError(
            f"--l2-bytes {definition} is not a definition gpuprof knows",
            f"give one of {', '.join(levels.L2_DEFINITIONS)}",
        )
    run.environment = {**run.environment, "l2_bytes": definition}
    found = ~np.isnan(levels.level_parts(Counters.of_run(run), "l2")[0])
    run.notes.append(
        f"--l2-bytes {definition}: L2 bytes are the L1/TEX unit's reads from L2 (32 x "
        "lts__t_sectors_srcunit_tex_op_read.sum, Nsight Compute's L2 -> L1 arrow), not NERSC's lts__t_bytes; "
        "the AI check holds them to DRAM reads"
        + ("" if found.all() else f"; {int((~found).sum())} launch(es) lack that counter: their L2 bytes are empty")
    )
