"""Framework profiler traces in Chrome trace JSON (gzipped or not), in three dialects.

- **Kineto** (PyTorch's profiler, ``*.pt.trace.json``): ``schemaVersion``, ``deviceProperties``,
  ``distributedInfo``; categories spelled ``cpu_op``, ``cuda_runtime``, ``kernel``, ``gpu_memcpy``,
  ``gpu_memset``, ``user_annotation`` (since 2021-22) or ``Operator``, ``Runtime``, ``Kernel``,
  ``Memcpy``, ``Memset`` (2021). A kernel is linked to its op through the runtime call with the same
  ``correlation`` (the id the ``ac2g``/``async`` flow events also carry).
- **TensorFlow 1 timeline** (``tf.profiler``'s ``Timeline.generate_chrome_trace_format``): ``cat: "Op"``
  events whose ``args.op`` is the op type and ``args.name`` the graph node, on processes named
  ``/job:.../device:CPU:0 Compute`` (ops), ``/device:GPU:0/stream:16 Compute`` (GPU work per stream)
  (copies are the ``MEMCPYHtoD``... ops on a stream); ``stream:all`` and ``/device:GPU:0/memcpy``
  repeat those events and are skipped. GPU work is linked to the op of the same node on the GPU's
  host-side process.
- **TensorFlow 2 / JAX** ``trace.json.gz`` (the profiler plugin's trace viewer data,
  ``displayTimeUnit``): processes ``/host:CPU`` (ops per thread) and ``/device:GPU:N`` (kernels per
  stream); step markers carry ``step_num``. Python tracer frames (``$file.py:12 f``) are skipped.

Every kernel, copy and set becomes a launch (kind kernel/memcpy/memset) with its duration, start,
device, stream and, where the trace has them, grid, block, registers, shared memory, occupancy,
bytes and direction; every framework op a launch of kind ``op`` with its total and self time;
every step annotation a launch of kind ``step``. Each launch carries its step. A Kineto trace
whose schema keys come before its events (as Kineto writes them) is read a few MB of events at a
time (:func:`gpuprof.readers._trace_events.stream_kineto`); any other trace is parsed whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gpuprof.errors import FormatError
from gpuprof.model import Run
from gpuprof.readers._text import gc_paused
from gpuprof.readers._trace_events import (
    OP,
    RUNTIME,
    SHAPED_OPS,
    STEP,
    Events,
    dropped,
    is_profiler_step,
    parse_events,
    read_text,
    stream_kineto,
    to_run,
)

NAME = "chrome-trace"
DESCRIPTION = (
    "framework profiler traces in Chrome trace JSON, gzipped or not: PyTorch/Kineto *.pt.trace.json, "
    "TensorFlow 1 timelines, TensorFlow 2 and JAX trace.json.gz"
)
READS_GZIP = True

# Kineto's categories, both spellings, -> the kind of launch.
_KINETO = {
    "kernel": "kernel",
    "Kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "Memcpy": "memcpy",
    "gpu_memset": "memset",
    "Memset": "memset",
    "cpu_op": OP,
    "Operator": OP,
    "cuda_runtime": RUNTIME,
    "Runtime": RUNTIME,
    "cuda_driver": RUNTIME,
    "user_annotation": OP,
}
_TF1_PROCESS = re.compile(r"/device:(CPU|GPU):(\d+)(?:/(stream:\w+|memcpy))? Compute$")
_DEVICE_PROCESS = re.compile(r"^/device:([A-Z]+):(\d+)")
_STREAM_THREAD = re.compile(r"[Ss]tream #?(\d+)")


def sniff(path: Path, head: str) -> bool:
    text = head.lstrip()
    return text[:1] in ("{", "[") and ('"traceEvents"' in head or ('"ph"' in head and '"ts"' in head))


def _processes(events: list[dict[str, Any]]) -> tuple[dict[Any, str], dict[Any, str]]:
    """The process names and thread names the metadata events give ({pid: name}, {(pid, tid): name})."""
    processes: dict[Any, str] = {}
    threads: dict[Any, str] = {}
    for event in events:
        if event.get("ph") == "M":
            name = (event.get("args") or {}).get("name")
            if event.get("name") == "process_name" and isinstance(name, str):
                processes[event.get("pid")] = name
            elif event.get("name") == "thread_name" and isinstance(name, str):
                threads[(event.get("pid"), event.get("tid"))] = name
    return processes, threads


def dialect(doc: dict[str, Any], events: list[dict[str, Any]], processes: dict[Any, str]) -> str | None:
    """kineto, tf1-timeline or tf-trace; None when the trace is from none of them."""
    if "schemaVersion" in doc or "deviceProperties" in doc or "distributedInfo" in doc:
        return "kineto"
    names = list(processes.values())
    if any(_TF1_PROCESS.search(name) for name in names):
        return "tf1-timeline"
    if any(name.startswith(("/host:", "/device:")) for name in names):
        return "tf-trace"
    for event in events[:10000]:
        if event.get("cat") in _KINETO:
            return "kineto"
    return None


def _kineto_events(events: Iterable[dict[str, Any]]) -> tuple[Events, set[Any]]:
    """Kineto's events as columns (GPU rows named ``GPU <id>`` until the device table is read),
    and the GPU ids seen. ``events`` may be a stream: each event is dropped once read."""
    out = Events()
    add = out.add
    gpus: set[Any] = set()
    for event in events:
        kind = _KINETO.get(event.get("cat"))  # type: ignore[arg-type]
        if kind is None or event.get("ph") != "X":
            continue
        args = event.get("args") or {}
        name = event.get("name", "")
        if kind == OP:
            if is_profiler_step(name):
                add(STEP, name, (event.get("pid"), event.get("tid")), float(event["ts"]), float(event.get("dur", 0)))
                continue
            if event.get("cat") == "user_annotation":
                continue  # record_function ranges other than steps nest ops but are not ops
            extra = args if name in SHAPED_OPS else None
            add(
                OP,
                name,
                (event.get("pid"), event.get("tid")),
                float(event["ts"]),
                float(event.get("dur", 0)),
                "host",
                extra=extra,
            )
        elif kind == RUNTIME:
            add(
                RUNTIME,
                name,
                (event.get("pid"), event.get("tid")),
                float(event["ts"]),
                float(event.get("dur", 0)),
                link=args.get("correlation"),
            )
        else:
            gpu = args.get("device", event.get("pid"))
            stream = args.get("stream", event.get("tid"))
            gpus.add(gpu)
            add(
                kind,
                name,
                (f"GPU {gpu}", stream),
                float(event["ts"]),
                float(event.get("dur", 0)),
                f"GPU {gpu}",
                str(stream),
                args.get("correlation"),
                args,
            )
    return out, gpus


def _kineto(doc: dict[str, Any], out: Events, gpus: set[Any]) -> tuple[Events, dict[str, Any], dict[str, Any]]:
    """The GPUs named from ``deviceProperties``, and rank and world size from ``distributedInfo``."""
    properties = {p.get("id"): p for p in doc.get("deviceProperties") or [] if isinstance(p, dict)}
    names = {f"GPU {gpu}": (properties.get(gpu) or {}).get("name") for gpu in gpus}
    out.device = [names.get(device) or device for device in out.device]
    device: dict[str, Any] = {}
    if gpus:
        first = properties.get(min(gpus, key=str)) or {}
        if first.get("name"):
            device = {"name": first["name"]}
            if "computeMajor" in first:
                device["cc"] = f"{first['computeMajor']}.{first.get('computeMinor', 0)}"
    environment: dict[str, Any] = {"gpus": sorted(str(g) for g in gpus)} if gpus else {}
    info = doc.get("distributedInfo")
    if isinstance(info, dict):
        for key in ("rank", "world_size", "backend"):
            if key in info:
                environment[key] = info[key]
    return out, device, environment


def _tf1(events: list[dict[str, Any]], processes: dict[Any, str]) -> tuple[Events, dict[str, Any], dict[str, Any]]:
    roles: dict[Any, tuple[str, str, str]] = {}  # pid -> (kind, device, stream)
    for pid, name in processes.items():
        found = _TF1_PROCESS.search(name)
        if not found:
            continue
        device, where = f"{found.group(1)}:{found.group(2)}", found.group(3) or ""
        if where in ("stream:all", "memcpy"):
            continue  # every stream's kernels again; the copies again (they are on their streams too)
        if where:
            roles[pid] = ("kernel", device, where.split(":", 1)[1])
        else:
            roles[pid] = (OP, device, "")
    out = Events()
    for event in events:
        role = roles.get(event.get("pid"))
        if role is None or event.get("ph") != "X":
            continue
        kind, device, stream = role
        args = event.get("args") or {}
        op_type = args.get("op") or event.get("name", "")
        node = args.get("name")
        if kind != OP and op_type.upper().startswith("MEMCPY"):
            kind = "memcpy"
        link = (device, node) if node is not None and device.startswith("GPU") else None
        out.add(
            kind,
            op_type,
            (event.get("pid"), event.get("tid")),
            float(event["ts"]),
            float(event.get("dur", 0)),
            device,
            stream,
            link,
            {"node": node} if kind != OP else None,
        )
    return out, {}, {"devices": sorted({role[1] for role in roles.values()})}


_STREAM_LINE = re.compile(r"^Stream #(\d+)(?:\((\w*)\))?")
_DETAIL = re.compile(r"(\w+):([^ ]+)")
_COPY_DIRECTION = {"MemcpyH2D": "HtoD", "MemcpyD2H": "DtoH", "MemcpyD2D": "DtoD", "MemcpyP2P": "PtoP"}


def _device_lines(pid: Any, tids: set[Any], threads: dict[Any, str]) -> set[Any] | None:
    """The threads of a TF2/JAX device process that hold its GPU activity: the ``Stream #N(...)``
    lines when there are any (the ``XLA Ops``, ``XLA Modules``, ``Framework Ops``, ``Source code``
    lines repeat that time as views), else the ``XLA Ops`` line, else every thread (None)."""
    names = {tid: threads.get((pid, tid), "") for tid in tids}
    streams = {tid for tid, name in names.items() if _STREAM_LINE.match(name)}
    if streams:
        return streams
    xla_ops = {tid for tid, name in names.items() if name.startswith("XLA Ops")}
    return xla_ops or None


def _tf2_gpu_args(args: dict[str, Any], label: str) -> tuple[str | None, dict[str, Any]]:
    """A device event's kind from its stream's label (``Stream #9(MemcpyD2H)``) and its xprof
    details (``kernel_details``: grid, block, registers, shared memory; ``memcpy_details``: size)
    in Kineto's spellings, so one code path reads them; its HLO op and module kept as they are."""
    kind = "memcpy" if label.startswith("Memcpy") else "memset" if label.startswith("Memset") else None
    extra: dict[str, Any] = {key: args[key] for key in ("hlo_op", "hlo_module") if key in args}
    if isinstance(args.get("annotation"), str):  # TensorFlow: the op that ran it, "scope/node:OpType"
        extra["tf_op"] = args["annotation"]
    details = dict(_DETAIL.findall(str(args.get("kernel_details", "")) + " " + str(args.get("memcpy_details", ""))))
    for key in ("grid", "block"):
        if key in details:
            extra[key] = [int(v) for v in details[key].split(",") if v.isdigit()]
    numbers = {k: int(v) for k, v in details.items() if v.isdigit()}
    if 0 < numbers.get("regs", 0) <= 1024:  # ROCm traces carry an unset register count (billions): left out
        extra["registers per thread"] = numbers["regs"]
    if "static_shared" in numbers or "dynamic_shared" in numbers:
        extra["shared memory"] = numbers.get("static_shared", 0) + numbers.get("dynamic_shared", 0)
    if "size" in numbers:
        extra["bytes"] = numbers["size"]
    if label in _COPY_DIRECTION:
        extra["direction"] = _COPY_DIRECTION[label]
    return kind, extra


def _tf2(
    events: list[dict[str, Any]], processes: dict[Any, str], threads: dict[Any, str]
) -> tuple[Events, dict[str, Any], dict[str, Any]]:
    devices: dict[Any, str] = {}
    for pid, name in processes.items():
        if found := _DEVICE_PROCESS.match(name):
            devices[pid] = f"{found.group(1)}:{found.group(2)}"
    tids: dict[Any, set[Any]] = {pid: set() for pid in devices}
    for event in events:
        if event.get("ph") == "X" and event.get("pid") in tids:
            tids[event["pid"]].add(event.get("tid"))
    lines = {pid: _device_lines(pid, found, threads) for pid, found in tids.items()}
    host_steps = any(e.get("ph") == "X" and "step_num" in (e.get("args") or {}) for e in events)
    out = Events()
    views = 0
    for event in events:
        if event.get("ph") != "X":
            continue
        pid, tid, name = event.get("pid"), event.get("tid"), event.get("name", "")
        args = event.get("args") or {}
        if pid in devices and not host_steps and threads.get((pid, tid)) == "Steps" and "group_id" in args:
            # TensorFlow 2 marks steps only here (xprof's step line, one per step group)
            out.add(STEP, f"step#{args['group_id']}", (pid, tid), float(event["ts"]), float(event.get("dur", 0)))
        elif pid in devices:
            if lines[pid] is not None and tid not in lines[pid]:
                views += 1
                continue
            found = _STREAM_LINE.match(threads.get((pid, tid), ""))
            stream = found.group(1) if found else str(tid)
            kind, extra = _tf2_gpu_args(args, (found.group(2) or "") if found else "")
            lowered = name.lower()
            kind = kind or ("memcpy" if "memcpy" in lowered else "memset" if "memset" in lowered else "kernel")
            out.add(
                kind,
                name,
                (pid, tid),
                float(event["ts"]),
                float(event.get("dur", 0)),
                devices[pid],
                stream,
                args.get("correlation_id"),
                extra,
            )
        elif name.startswith("$"):
            continue  # Python tracer frames
        elif "step_num" in args:
            out.add(STEP, f"{name}#{args['step_num']}", (pid, tid), float(event["ts"]), float(event.get("dur", 0)))
        else:
            launches = "correlation_id" in args  # the host call that launched a kernel or copy
            out.add(
                RUNTIME if launches else OP,
                name,
                (pid, tid),
                float(event["ts"]),
                float(event.get("dur", 0)),
                "host",
                link=args.get("correlation_id"),
                extra=args if name in SHAPED_OPS else None,
            )
    environment: dict[str, Any] = {"devices": sorted(set(devices.values()))}
    if views:
        environment["device_view_events"] = views
    return out, {}, environment


def read(path: Path) -> Run:
    with gc_paused():  # millions of small dicts from json: no cyclic collections while they are made
        return _read(path)


def _read(path: Path) -> Run:
    text = read_text(path)
    streamed = stream_kineto(text, path)
    if streamed is not None:  # a Kineto trace: read in chunks, never the whole document at once
        events, rest = streamed
        del streamed
        columns, gpus = _kineto_events(events)
        doc = rest()
        del events, rest, text  # the text goes before the tables are built
        columns, device, environment = _kineto(doc, columns, gpus)
        return to_run(
            columns,
            path=path,
            fmt=NAME,
            dialect="kineto",
            device=device,
            environment={"dialect": "kineto", **environment},
            notes=[],
        )
    doc, events = parse_events(text, path)
    del text
    return from_events(doc, events, path, NAME)


def from_events(
    doc: dict[str, Any],
    events: list[dict[str, Any]],
    path: Path,
    fmt: str,
    environment_extra: dict[str, Any] | None = None,
) -> Run:
    """The run of a parsed trace (its top-level object and event list), in whichever dialect it is."""
    processes, threads = _processes(events)
    found = dialect(doc, events, processes)
    if found is None:
        raise FormatError(
            f"{path}: a Chrome trace, but from no framework profiler gpuprof reads "
            "(no Kineto schema, TensorFlow device processes or JAX host/device processes)",
            "give a trace written by PyTorch's, TensorFlow's or JAX's profiler",
        )
    if found == "kineto":
        columns, device, environment = _kineto(doc, *_kineto_events(dropped(events)))
    elif found == "tf1-timeline":
        columns, device, environment = _tf1(events, processes)
    else:
        columns, device, environment = _tf2(events, processes, threads)
    del doc, events
    notes = []
    if views := environment.pop("device_view_events", 0):
        notes.append(
            f"{views} events of the devices' view lines (XLA Ops, XLA Modules, TensorFlow Ops, name "
            "scopes, source code) left out: they repeat the time of the streams, which are read"
        )
    return to_run(
        columns,
        path=path,
        fmt=fmt,
        dialect=found,
        device=device,
        environment={"dialect": found, **environment, **(environment_extra or {})},
        notes=notes,
    )
