"""Nsight Systems SQLite exports (``nsys export --type sqlite``, the ``report1.sqlite`` beside many
``.nsys-rep`` files): every GPU activity of the session, one row each.

Read: ``CUPTI_ACTIVITY_KIND_KERNEL`` (one Launch per kernel launch, its name from the string table
``StringIds``, grid, block, stream, registers per thread, static and dynamic shared memory),
``CUPTI_ACTIVITY_KIND_MEMCPY`` and ``_MEMSET`` (launches of kind memcpy/memset, named as nvprof
names them, ``[CUDA memcpy HtoD]``, with their bytes, direction and memory kinds; Unified Memory
page migrations are counted in the notes, not launches),
``CUPTI_ACTIVITY_KIND_RUNTIME`` (CUDA API calls, launches of kind ``api``: host-side, so their time
is ``API Duration``, never a kernel duration, and they are left out of the per-kernel table) and
``NVTX_EVENTS`` (push/pop and start/end ranges, their text inline or from ``StringIds``). Each GPU
launch keeps the NVTX ranges open on the thread that launched it (found through the runtime call
with the same correlation id) as ``attributes["nvtx"]``, outermost first, joined by ``/`` as
Nsight Compute's ``--nvtx-include`` writes nested ranges. Times are nanoseconds in the file.

The export schema changed over the versions (2.x in nsys 2022, 3.x from 2024; the enum tables came
later), so columns are read by name and a missing optional column or table leaves its attribute
out. The file is opened read-only and immutable, so reading creates nothing beside it.
"""

from __future__ import annotations

import bisect
import sqlite3
from collections import defaultdict
from pathlib import Path

from gpuprof.errors import FormatError
from gpuprof.model import DERIVED, Launch, Metric, Run, catalog

NAME = "nsys-sqlite"
DESCRIPTION = (
    "Nsight Systems SQLite export (nsys export --type sqlite): kernels, memcpy/memset, CUDA runtime "
    "API calls and NVTX ranges"
)
SQLITE_MAGIC = "SQLite format 3\x00"
_MARKERS = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "TARGET_INFO_GPU")
# CUPTI's copy and memory kinds (CUpti_ActivityMemcpyKind, CUpti_ActivityMemoryKind), as nvprof names them;
# older exports have no ENUM_ tables to look them up in.
_COPY_KINDS = {
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
}
_MEMORY_KINDS = {
    0: "Pageable",
    1: "Pinned",
    2: "Device",
    3: "Array",
    4: "Managed",
    5: "Device Static",
    6: "Managed Static",
}
_UNIFIED = (11, 12, 13)  # Unified Memory page migrations: not launches, as nvprof's readers treat them
_PUSH_POP, _START_END = 59, 60  # NVTX_EVENTS.eventType of ranges (ENUM_NSYS_EVENT_TYPE)


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?immutable=1", uri=True)


def _tables(db: sqlite3.Connection) -> dict[str, list[str]]:
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {t: [c[1] for c in db.execute(f"PRAGMA table_info('{t}')")] for t in names}


def is_export(path: str | Path) -> bool:
    """Whether ``path`` is an SQLite file holding an Nsight Systems export (not a gpuprof store)."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            if handle.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC.encode():
                return False
        db = _connect(path)
        try:
            tables = _tables(db)
        finally:
            db.close()
    except (OSError, sqlite3.DatabaseError):
        return False
    return any(marker in tables for marker in _MARKERS)


def sniff(path: Path, head: str) -> bool:
    """Every SQLite file: :func:`read` says what a file that is no export is."""
    return head.startswith(SQLITE_MAGIC)


def _rows(db: sqlite3.Connection, table: str) -> list[dict]:
    """A table's rows by column name, in time order (columns differ between export versions)."""
    cursor = db.execute(f"SELECT * FROM '{table}' ORDER BY start")
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor]


class _Nvtx:
    """The NVTX ranges of each thread, to name the ranges open at an instant on it."""

    def __init__(self, rows: list[dict], strings: dict[int, str]) -> None:
        self.by_thread: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
        for row in rows:
            if row.get("eventType") not in (_PUSH_POP, _START_END) or row.get("end") is None:
                continue
            text = row.get("text") or strings.get(row.get("textId"), "")
            self.by_thread[row.get("globalTid")].append((row["start"], row["end"], text))
        self.starts = {tid: [r[0] for r in ranges] for tid, ranges in self.by_thread.items()}
        self.count = sum(len(r) for r in self.by_thread.values())

    def path(self, thread: int | None, instant: int) -> str:
        """The ranges open on ``thread`` at ``instant``, outermost first, as ``outer/inner``."""
        ranges = self.by_thread.get(thread)
        if not ranges:
            return ""
        last = bisect.bisect_right(self.starts[thread], instant)
        open_ = [r for r in ranges[:last] if r[1] >= instant]  # started before, not ended yet
        open_.sort(key=lambda r: (r[0], -r[1]))
        return "/".join(r[2] for r in open_)


def _dims(row: dict, prefix: str) -> str | None:
    values = [row.get(f"{prefix}{axis}") for axis in "XYZ"]
    return f"({', '.join(str(v) for v in values)})" if None not in values else None


def _duration(row: dict) -> float:
    return (row["end"] - row["start"]) * 1e-9


def _common(row: dict, kind: str) -> dict[str, str]:
    attributes = {"kind": kind, "start_s": f"{row['start'] * 1e-9:.15g}"}
    for column, key in (("streamId", "stream"), ("correlationId", "correlation_id"), ("deviceId", "device_id")):
        if row.get(column) is not None:
            attributes[key] = str(row[column])
    return attributes


def _kernel(row: dict, strings: dict[int, str]) -> tuple[str, dict[str, str], list[Metric]]:
    name = next((strings[row[c]] for c in ("demangledName", "shortName", "mangledName") if row.get(c) in strings), "")
    attributes = _common(row, "kernel")
    for prefix in ("grid", "block"):
        if dims := _dims(row, prefix):
            attributes[prefix] = dims
    for column, key in (
        ("registersPerThread", "registers"),
        ("staticSharedMemory", "static_smem_bytes"),
        ("dynamicSharedMemory", "dynamic_smem_bytes"),
    ):
        if row.get(column) is not None:
            attributes[key] = str(row[column])
    return name, attributes, [Metric("Duration", _duration(row), "second", catalog.canonical("Duration"))]


def _memory(row: dict, kind: str, memory_kinds: dict[int, str]) -> tuple[str, dict[str, str], list[Metric]]:
    attributes = _common(row, kind)
    if kind == "memcpy":
        direction = _COPY_KINDS.get(row.get("copyKind"), "")
        name = f"[CUDA memcpy {direction}]" if direction else "[CUDA memcpy]"
        if direction:
            attributes["direction"] = direction
        for column, key in (("srcKind", "src_mem"), ("dstKind", "dst_mem")):
            if row.get(column) in memory_kinds:
                attributes[key] = memory_kinds[row[column]]
    else:
        name = "[CUDA memset]"
        if row.get("value") is not None:
            attributes["value"] = str(row["value"])
        if row.get("memKind") in memory_kinds:
            attributes["dst_mem"] = memory_kinds[row["memKind"]]
    seconds = _duration(row)
    metrics = [Metric("Duration", seconds, "second", catalog.canonical("Duration"))]
    if row.get("bytes") is not None:
        metrics.append(Metric("Size", float(row["bytes"]), "byte"))
        if seconds > 0:
            metrics.append(Metric("Throughput", row["bytes"] / seconds, "byte/second", origin=DERIVED))
    return name, attributes, metrics


def _refuse(path: Path, tables: dict[str, list[str]]) -> FormatError:
    if "runs" in tables and "meta" in tables:
        return FormatError(
            f"{path} is a gpuprof results store, not a profiler output",
            f"read it with '--store {path}', or add its runs to another store with 'gpuprof merge OUT_STORE {path}'",
        )
    return FormatError(
        f"{path} is an SQLite file but neither an Nsight Systems export nor a gpuprof results store",
        "give the file 'nsys export --type sqlite REPORT.nsys-rep' wrote, or a gpuprof store with --store",
    )


def read(path: Path) -> Run:
    try:
        db = _connect(path)
        tables = _tables(db)
    except sqlite3.DatabaseError as error:
        raise FormatError(
            f"{path}: cannot read this SQLite file ({error})", "give the complete file nsys export wrote"
        ) from None
    try:
        if not any(marker in tables for marker in _MARKERS):
            raise _refuse(path, tables)
        return _read(path, db, tables)
    except sqlite3.DatabaseError as error:
        raise FormatError(
            f"{path}: cannot read this Nsight Systems export ({error})", "give the complete file nsys export wrote"
        ) from None
    finally:
        db.close()


def _read(path: Path, db: sqlite3.Connection, tables: dict[str, list[str]]) -> Run:
    def rows(table: str) -> list[dict]:
        return _rows(db, table) if table in tables else []

    strings = dict(db.execute("SELECT id, value FROM StringIds")) if "StringIds" in tables else {}
    memory_kinds = dict(_MEMORY_KINDS)
    if "ENUM_CUDA_MEM_KIND" in tables:
        memory_kinds.update(db.execute("SELECT id, label FROM ENUM_CUDA_MEM_KIND"))
    devices = dict(db.execute("SELECT id, name FROM TARGET_INFO_GPU")) if "TARGET_INFO_GPU" in tables else {}
    nvtx = _Nvtx(rows("NVTX_EVENTS"), strings)
    runtime = rows("CUPTI_ACTIVITY_KIND_RUNTIME")
    callers = {row["correlationId"]: row for row in runtime if row.get("correlationId") is not None}

    gpu: list[tuple[int, str, dict[str, str], list[Metric]]] = []
    for row in rows("CUPTI_ACTIVITY_KIND_KERNEL"):
        gpu.append((row["start"], *_kernel(row, strings)))
    migrations = 0
    for table, kind in (("CUPTI_ACTIVITY_KIND_MEMCPY", "memcpy"), ("CUPTI_ACTIVITY_KIND_MEMSET", "memset")):
        for row in rows(table):
            if kind == "memcpy" and row.get("copyKind") in _UNIFIED:
                migrations += 1
                continue
            gpu.append((row["start"], *_memory(row, kind, memory_kinds)))
    gpu.sort(key=lambda entry: entry[0])
    launches: list[Launch] = []
    for _, name, attributes, metrics in gpu:
        caller = callers.get(int(attributes.get("correlation_id", -1)))
        if caller is not None:
            if path_ := nvtx.path(caller.get("globalTid"), caller["start"]):
                attributes["nvtx"] = path_
            if caller.get("nameId") in strings:
                attributes["api"] = strings[caller["nameId"]]
        device = devices.get(int(attributes.get("device_id", -1)), "")
        launches.append(Launch(name, len(launches), device, 1, attributes, metrics))
    for row in runtime:
        attributes = _common(row, "api")
        attributes["thread"] = str(row.get("globalTid"))
        if path_ := nvtx.path(row.get("globalTid"), row["start"]):
            attributes["nvtx"] = path_
        launches.append(
            Launch(
                strings.get(row.get("nameId"), ""),
                len(launches),
                "",
                1,
                attributes,
                [Metric("API Duration", _duration(row), "second")],
            )
        )
    if not launches:
        raise FormatError(
            f"{path}: this Nsight Systems export holds no kernel, memory operation or CUDA API call",
            "profile with 'nsys profile -t cuda' an application that launches kernels",
        )
    notes = []
    if migrations:
        notes.append(f"skipped {migrations} Unified Memory memcpy rows (page migrations, not launches)")
    if runtime:
        notes.append(
            f"{len(runtime)} CUDA API calls stored as launches of kind 'api' (host side: not in the per-kernel table)"
        )
    if nvtx.count:
        notes.append(
            f"{nvtx.count} NVTX ranges: each launch keeps the ranges open when it was launched (attribute nvtx)"
        )
    meta = {}
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if table in tables:
            meta = dict(db.execute(f"SELECT name, value FROM {table}"))
            break
    environment = {"tool": "nsys"}
    if meta.get("EXPORT_PRODUCT_VERSION"):
        environment["tool_version"] = meta["EXPORT_PRODUCT_VERSION"]
    used = {launch.device for launch in launches if launch.device}
    return Run(
        kind="import",
        format=NAME,
        source=str(path),
        device={"name": used.pop()} if len(used) == 1 else {},
        environment=environment,
        launches=launches,
        notes=notes,
    )
