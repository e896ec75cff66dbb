"""The columns every Chrome-trace dialect fills, and what they share: nesting, links, steps, the Run.

A dialect (:mod:`gpuprof.readers.chrome_trace`) walks the trace's events once and appends each
duration event it keeps to :class:`Events`: one Python list per field, no object per event. Then,
over whole arrays: each thread's ops are nested by time (an op's self time is its duration less
its child ops'), each GPU activity is linked to the op that launched it (through the runtime call
with the same correlation id, or a key the dialect gives), every event gets the ``ProfilerStep#N``
window it belongs to, and the columns become the run's two tables (:mod:`gpuprof.model.tables`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuprof.errors import FormatError
from gpuprof.model import MEASURED, Run
from gpuprof.model import tables as _tables
from gpuprof.readers._compressed import read_all

# Kinds of event kept: GPU activity, framework ops, the runtime calls that launch GPU work (kept
# only to link), and step annotations (ProfilerStep#N, JAX/TF step markers).
GPU_KINDS = ("kernel", "memcpy", "memset")
OP, RUNTIME, STEP = "op", "runtime", "step"
_STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
_STEP_SUFFIX = re.compile(r"#(\d+)$")
_DIRECTION = re.compile(r"(HtoD|DtoH|DtoD|HtoH|PtoP|DtoA|AtoD|HtoA|AtoH)", re.IGNORECASE)
# Ops whose recorded input shapes give their FLOPs (gpuprof.derive.traces.op_flops).
SHAPED_OPS = frozenset(
    {"aten::mm", "aten::addmm", "aten::bmm", "aten::linear", "aten::conv2d", "aten::matmul", "MatMul", "Conv2D"}
)


@dataclass
class Events:
    """Duration events as columns. ``link`` is the key joining a GPU activity to what launched
    it: on GPU rows the key they carry, on runtime or op rows the key they own (None: no link).
    ``extra`` holds the event's ``args`` dict where the row needs more of it (kernels, copies,
    shaped ops), else None; it is read once when the tables are built."""

    kind: list[str] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    thread: list[Any] = field(default_factory=list)  # (pid, tid) for host rows, the stream's for GPU rows
    ts: list[float] = field(default_factory=list)  # microseconds, as the trace gives them
    dur: list[float] = field(default_factory=list)
    device: list[str] = field(default_factory=list)
    stream: list[str] = field(default_factory=list)
    link: list[Any] = field(default_factory=list)
    extra: list[dict[str, Any] | None] = field(default_factory=list)

    def add(
        self,
        kind: str,
        name: str,
        thread: Any,
        ts: float,
        dur: float,
        device: str = "",
        stream: str = "",
        link: Any = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.kind.append(kind)
        self.name.append(name)
        self.thread.append(thread)
        self.ts.append(ts)
        self.dur.append(dur)
        self.device.append(device)
        self.stream.append(stream)
        self.link.append(link)
        self.extra.append(extra)


def read_text(path: Path) -> str:
    """The (decompressed) file as text; its bytes are dropped before any parsing, so the file is
    held once (json.loads of bytes would hold both)."""
    return read_all(path).decode("utf-8", errors="replace")


_EVENTS_KEY = re.compile(r'"traceEvents"\s*:\s*\[')
_BOUNDARY = re.compile(r"\}\s*,\s*\{")  # where one event may end and the next begin
_KINETO_KEYS = ('"schemaVersion"', '"deviceProperties"', '"distributedInfo"')
CHUNK = 1 << 22  # characters of events parsed at a time


def _cut(path: object, detail: str) -> FormatError:
    return FormatError(
        f"{path}: not valid JSON ({detail}): the trace is cut or damaged",
        "give the whole file the profiler wrote (it writes the trace when profiling stops)",
    )


def stream_kineto(text: str, path: object) -> tuple[Iterator[dict[str, Any]], Callable[[], dict[str, Any]]] | None:
    """For a Kineto trace (a Kineto key before its event list): its events, parsed a few MB of text
    at a time and each dropped once handed out (only one chunk's events exist as Python objects),
    and a call giving the rest of the document once they are read. None for any other trace:
    parse it whole.

    A chunk ends at a ``},{`` after :data:`CHUNK` characters and is parsed as ``[...]`` by json;
    when that ``},{`` lies inside an event (a nested list of objects) or a string, the chunk is
    not valid JSON and the next one is tried, so only a cut between two whole events is taken."""
    found = _EVENTS_KEY.search(text, 0, 1 << 20)
    if found is None or not any(key in text[: found.start()] for key in _KINETO_KEYS):
        return None
    end = [found.end()]

    def events() -> Iterator[dict[str, Any]]:
        at = found.end()
        while True:
            cut = _BOUNDARY.search(text, at + CHUNK) if at + CHUNK < len(text) else None
            while cut is not None:
                try:
                    batch = json.loads("[" + text[at : cut.start() + 1] + "]")
                    break
                except ValueError:
                    cut = _BOUNDARY.search(text, cut.end())
            if cut is None:  # the last chunk: up to the end of the event list
                try:
                    batch, stop = json.JSONDecoder().raw_decode("[" + text[at:])
                except ValueError as error:
                    raise _cut(path, str(error)) from None
                end[0] = at + stop - 1
                yield from dropped(batch)
                return
            at = cut.end() - 1  # the next event's '{'
            yield from dropped(batch)

    def rest() -> dict[str, Any]:
        doc, _ = parse_events(text[: found.end()] + "]" + text[end[0] :], path)
        return doc

    return events(), rest


def dropped(items: list[Any]) -> Iterator[dict[str, Any]]:
    """The objects of a parsed list, each dropped from the list as it is handed out."""
    for index, item in enumerate(items):
        items[index] = None
        if isinstance(item, dict):
            yield item


def parse_events(text: str, path: object) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The trace's top-level object (``{}`` for a bare event list) and its event list, parsed whole."""
    try:
        doc = json.loads(text)
    except ValueError as error:
        raise FormatError(
            f"{path}: not valid JSON ({error}): the trace is cut or damaged",
            "give the whole file the profiler wrote (it writes the trace when profiling stops)",
        ) from None
    if isinstance(doc, list):
        return {}, doc
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise FormatError(
            f"{path}: JSON without a traceEvents list, not a Chrome trace",
            "give a PyTorch, TensorFlow or JAX profiler trace (*.pt.trace.json, timeline, trace.json.gz)",
        )
    return doc, events


def _nest(kind: list[str], thread: list[Any], ts: Any, end: Any) -> tuple[list[int], list[float]]:
    """Per row, the innermost op (or step) on its thread that encloses it (-1: none), and per op
    the summed duration of its direct child ops. Rows are visited per thread by start, longest
    first, with a stack of the enclosing ones."""
    import numpy as np

    rows = [i for i, k in enumerate(kind) if k in (OP, STEP, RUNTIME)]
    parent = [-1] * len(kind)
    children = [0.0] * len(kind)
    if not rows:
        return parent, children
    codes = {t: n for n, t in enumerate(dict.fromkeys(thread[i] for i in rows))}
    picked = np.asarray(rows)
    order = picked[
        np.lexsort((-(end[picked] - ts[picked]), ts[picked], np.array([codes[thread[i]] for i in rows])))
    ].tolist()
    stack: list[int] = []
    starts, ends = ts.tolist(), end.tolist()
    for i in order:
        while stack and (thread[stack[-1]] != thread[i] or ends[stack[-1]] <= starts[i]):
            stack.pop()
        if stack:
            top = stack[-1]
            parent[i] = top
            if kind[i] == OP and kind[top] == OP:
                children[top] += ends[i] - starts[i]
        if kind[i] != RUNTIME:
            stack.append(i)
    return parent, children


def _steps(events: Events, ts: Any) -> tuple[list[tuple[float, float, str]], Any]:
    """The step windows (start, end, number) from the step rows, and per row the index of the
    window holding its start (-1: none)."""
    import numpy as np

    windows = sorted(
        (events.ts[i], events.ts[i] + events.dur[i], events.name[i]) for i, k in enumerate(events.kind) if k == STEP
    )
    if not windows:
        return [], np.full(len(ts), -1)
    starts = np.array([w[0] for w in windows])
    ends = np.array([w[1] for w in windows])
    at = np.searchsorted(starts, ts, side="right") - 1
    inside = (at >= 0) & (ts < ends[np.clip(at, 0, None)])
    return windows, np.where(inside, at, -1)


def step_number(name: str) -> str:
    """``ProfilerStep#7`` (or ``train#7``) -> ``7``; other step names as they are."""
    found = _STEP_SUFFIX.search(name)
    return found.group(1) if found else name


def is_profiler_step(name: str) -> bool:
    return bool(_STEP_NAME.match(name))


def _grid(value: Any) -> str | None:
    if isinstance(value, list) and value:
        return "(" + ", ".join(str(v) for v in value) + ")"
    return None


def _gpu_extra(
    kind: str, name: str, args: dict[str, Any], attributes: dict[str, str], metrics: list[tuple[str, float, str]]
) -> None:
    """A GPU row's launch configuration and sizes, from its args (Kineto's spellings)."""
    for key, attribute in (("grid", "grid"), ("block", "block")):
        if (text := _grid(args.get(key))) is not None:
            attributes[attribute] = text
    for key, unit in (
        ("registers per thread", "register"),
        ("shared memory", "byte"),
        ("blocks per SM", "block"),
        ("warps per SM", "warp"),
        ("est. achieved occupancy %", "%"),
        ("bytes", "byte"),
    ):
        value = args.get(key)
        if isinstance(value, (int, float)):
            metrics.append((key.removesuffix(" %"), float(value), unit))
    if kind == "memcpy" and isinstance(args.get("direction"), str):
        attributes["direction"] = args["direction"]
    elif kind == "memcpy" and (found := _DIRECTION.search(name)):
        attributes["direction"] = found.group(1)
    for key in ("hlo_op", "hlo_module", "tf_op"):  # TF2/JAX: the XLA op and module, or TF op, of a kernel
        if isinstance(args.get(key), str):
            attributes[key] = args[key]
    if "correlation" in args:
        attributes["correlation"] = str(args["correlation"])


def _shapes(args: dict[str, Any]) -> str | None:
    """The recorded input (and output) shapes of an op as compact JSON, when the trace has them."""
    inputs = args.get("Input Dims", args.get("Input dims"))
    if not isinstance(inputs, list):
        return None
    found: dict[str, Any] = {"inputs": inputs}
    if isinstance(args.get("Output dims"), list) and args["Output dims"]:
        found["outputs"] = args["Output dims"]
    if isinstance(args.get("Concrete Inputs"), list):
        found["concrete"] = args["Concrete Inputs"]
    return json.dumps(found, separators=(",", ":"))


def to_run(
    events: Events,
    *,
    path: object,
    fmt: str,
    dialect: str,
    device: dict[str, Any],
    environment: dict[str, Any],
    notes: list[str],
) -> Run:
    """The run of one trace: a launch per GPU activity, op and step (runtime calls are only links);
    times in seconds from the trace's first kept event, so they keep their precision. The metric
    columns are built per metric over whole arrays; only the attributes are made per launch."""
    import numpy as np
    import pandas as pd

    n = len(events.kind)
    if not n:
        raise FormatError(
            f"{path}: a {dialect} trace without a single op, kernel or copy in it",
            "profile a span in which the program runs work (check the profiler's schedule)",
        )
    kinds = events.kind
    ts = np.asarray(events.ts, dtype=np.float64)
    dur = np.asarray(events.dur, dtype=np.float64)
    end = ts + dur
    origin = float(ts.min())
    parent, children = _nest(kinds, events.thread, ts, end)
    windows, window_of = _steps(events, ts)
    if windows and not any(window_of[i] >= 0 for i, k in enumerate(kinds) if k != STEP):
        raise FormatError(
            f"{path}: its {len(windows)} step window(s) hold no events",
            "profile active steps (the profiler's schedule recorded only empty steps)",
        )
    step_names = [step_number(w[2]) for w in windows]
    window_of = window_of.tolist()

    def enclosing_op(row: int) -> int:
        while row >= 0 and kinds[row] != OP:
            row = parent[row]
        return row

    owners: dict[Any, int] = {}
    for i, (kind, key) in enumerate(zip(kinds, events.link)):
        if key is not None and kind in (OP, RUNTIME):
            owners.setdefault(key, i)
    keep = [i for i, k in enumerate(kinds) if k != RUNTIME]
    position = {row: p for p, row in enumerate(keep)}
    threads = {t: "/".join(str(part) for part in t) for t in dict.fromkeys(events.thread)}
    attributes: list[dict[str, str]] = []
    extra_launch: list[int] = []
    extra_values: list[tuple[str, float, str]] = []
    unlinked = 0
    for p, i in enumerate(keep):
        kind = kinds[i]
        attrs: dict[str, str] = {"kind": kind}
        if events.stream[i]:
            attrs["stream"] = events.stream[i]
        if kind in GPU_KINDS:
            op = -1
            if events.link[i] is not None and (owner := owners.get(events.link[i])) is not None:
                op = enclosing_op(owner)
            if op >= 0:
                attrs["op"] = events.name[op]
                attrs["op_launch"] = str(position[op])
            else:
                unlinked += 1
            step = window_of[op] if op >= 0 and window_of[op] >= 0 else window_of[i]
            if events.extra[i]:
                before = len(extra_values)
                _gpu_extra(kind, events.name[i], events.extra[i], attrs, extra_values)
                extra_launch.extend([p] * (len(extra_values) - before))
        else:
            attrs["thread"] = threads[events.thread[i]]
            if kind == OP:
                if (outer := enclosing_op(parent[i])) >= 0:
                    attrs["parent_launch"] = str(position[outer])
                if events.extra[i] and (shapes := _shapes(events.extra[i])):
                    attrs["shapes"] = shapes
            step = window_of[i]
        if kind == STEP:
            attrs["step"] = step_number(events.name[i])
        elif step >= 0:
            attrs["step"] = step_names[step]
        attributes.append(attrs)
    rows = np.asarray(keep, dtype=np.int64)
    launch = np.arange(len(keep), dtype=np.int64)
    kept_kinds = np.asarray([kinds[i] for i in keep], dtype=object)
    gpu = np.isin(kept_kinds, GPU_KINDS)
    ops = kept_kinds == OP
    child = np.asarray(children, dtype=np.float64)[rows]
    columns = [
        ("start", launch, (ts[rows] - origin) * 1e-6, "second"),
        ("duration", launch[gpu], dur[rows][gpu] * 1e-6, "second"),
        ("total time", launch[~gpu], dur[rows][~gpu] * 1e-6, "second"),
        ("self time", launch[ops], np.maximum(dur[rows][ops] - child[ops], 0.0) * 1e-6, "second"),
    ]
    names = [c[0] for c in columns] + list(dict.fromkeys(v[0] for v in extra_values))
    code = {name: k for k, name in enumerate(names)}
    units = {c[0]: c[3] for c in columns} | {v[0]: v[2] for v in extra_values}
    m_launch = np.concatenate([c[1] for c in columns] + [np.asarray(extra_launch, dtype=np.int64)])
    m_value = np.concatenate([c[2] for c in columns] + [np.asarray([v[1] for v in extra_values], dtype=np.float64)])
    m_code = np.concatenate(
        [np.full(len(c[1]), code[c[0]], dtype=np.int16) for c in columns]
        + [np.asarray([code[v[0]] for v in extra_values], dtype=np.int16)]
    )
    unit_names = list(dict.fromkeys(units.values()))
    unit_code = np.asarray([unit_names.index(units[name]) for name in names], dtype=np.int16)
    canonical_code = np.where(m_code == code["duration"], 0, -1).astype(np.int8)
    metric_table = _tables.metric_table(
        m_launch,
        pd.Categorical.from_codes(m_code, names),
        pd.Categorical.from_codes(canonical_code, ["kernel_duration"]),
        m_value,
        None,
        pd.Categorical.from_codes(unit_code[m_code], unit_names),
        MEASURED,
    )
    launch_table = _tables.launch_table(
        [events.name[i] for i in keep],
        launch,
        [events.device[i] for i in keep],
        np.ones(len(keep), dtype=np.int64),
        attributes,
    )
    gpu_rows = int(gpu.sum())
    runtime_rows = n - len(keep)
    if gpu_rows and unlinked:
        notes.append(
            f"{unlinked} of {gpu_rows} GPU activities are linked to no op (no runtime call or op "
            "with their correlation id in the trace)"
        )
    if runtime_rows:
        notes.append(f"{runtime_rows} runtime calls (cudaLaunchKernel ...) used only to link GPU work to its op")
    if not gpu_rows:
        notes.append("no GPU activity in this trace (CPU-only profile): ops only")
    environment = {"tool": dialect, "trace_start_us": origin, **environment}
    if windows:
        environment["steps"] = step_names
    return Run(
        kind="import",
        format=fmt,
        source=str(path),
        device=device,
        environment=environment,
        notes=notes,
        tables=(launch_table, metric_table),
    )
