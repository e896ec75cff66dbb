"""Tables of a framework trace (:mod:`gpuprof.readers.chrome_trace`): pure functions over a Run.

- :func:`events`: one row per launch (kind, name, device, stream, step, start, duration, self time,
  the op that launched it), the frame the others group.
- :func:`op_table`: per op name, count, total and self time, the GPU time of the kernels it launched
  (and their share of all GPU time), kernels per call and analytic FLOPs from the recorded shapes.
- :func:`kernel_table`: per GPU activity name, launches and time per launch, as for ncu files.
- :func:`step_table`: per ``ProfilerStep#N``, its host time and the GPU busy time of its work.
- :func:`breakdown`: per GPU, HolisticTraceAnalysis's temporal breakdown and its
  communication-computation overlap, with its definitions (``get_temporal_breakdown``,
  ``get_comm_comp_overlap``): kernels (and copies/sets) with a stream; communication kernels match
  ``^nccl|^hip|^hccl|ncclKernel``, memory ones ``^Memcpy|^Memset|^dma`` (and any activity the
  profiler marked a copy or set, whatever its name: TF1's ``MEMCPYHtoD``, JAX's ``CopyDeviceToDevice``),
  computation ones are the rest; ``kernel time`` runs from the first start to the last end, ``idle`` is the part no activity
  covers, ``compute`` the union of computation kernels, ``non-compute`` what is left; ``overlap`` is
  the time computation and communication both run, over the communication time.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np
import pandas as pd

from gpuprof.errors import InputError
from gpuprof.model import ANALYTIC, Run

GPU_KINDS = ("kernel", "memcpy", "memset")
TRACE_FORMATS = ("chrome-trace", "xplane")  # the readers whose runs these tables read
# HolisticTraceAnalysis's grouping patterns (hta/common/types.py), applied with re.match as it does.
_COMMUNICATION = re.compile(r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)")
_MEMORY = re.compile(r"(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)")
_NOT_COMPUTE = re.compile(
    r"(^nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(^.*Sync)|(^Stream Wait Event)|(cuda.*LaunchKernel)|(^runFunction)"
    r"|(^hip)|(^job_exe)|(^packet)|(^pe_exe)|(^cpum_exe_subgraph)|(^hccl)|(^collective_subgraph_execution)"
)


def events(run: Run) -> pd.DataFrame:
    """One row per launch of a trace run: launch, kind, name, device, gpu, stream, thread, step,
    start (s from the trace's start), duration (s: a GPU activity's, an op's total), self (s, ops),
    op_launch (the launching op's row, -1), op, bytes and shapes."""
    table = run.launch_table
    attributes = table["attributes"].tolist()
    if not attributes or "kind" not in attributes[0] or run.format not in TRACE_FORMATS:
        raise InputError(
            f"{run.source}: not a framework trace (format {run.format})",
            "give a PyTorch, TensorFlow or JAX profiler trace",
        )
    values, _ = run.lookup(["start", "duration", "total time", "self time", "bytes"])
    duration = np.where(np.isnan(values[:, 1]), values[:, 2], values[:, 1])

    def column(key: str, default: str = "") -> list[str]:
        return [a.get(key, default) for a in attributes]

    return pd.DataFrame(
        {
            "launch": np.arange(len(table)),
            "kind": column("kind"),
            "name": table["kernel"].to_numpy(),
            "device": table["device"].to_numpy(),
            "stream": column("stream"),
            "thread": column("thread"),
            "step": column("step"),
            "start": values[:, 0],
            "duration": duration,
            "self": values[:, 3],
            "op_launch": np.asarray([int(x) for x in column("op_launch", "-1")], dtype=np.int64),
            "op": column("op"),
            "bytes": values[:, 4],
            "shapes": column("shapes"),
        }
    )


def _matmul_flops(a: list[int], b: list[int]) -> float:
    """2·M·K·N times the broadcast batch of a matmul of shapes ``a`` and ``b`` (torch.matmul's rules)."""
    if not a or not b:
        return math.nan
    if len(a) == 1:
        a = [1, *a]
    if len(b) == 1:
        b = [*b, 1]
    m, k, n = a[-2], a[-1], b[-1]
    batch = np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2])) if len(a) > 2 or len(b) > 2 else ()
    return 2.0 * math.prod(batch) * m * k * n


def _conv_flops(inputs: list[Any], concrete: list[Any] | None, nhwc: bool, outputs: list[Any] | None) -> float:
    """2·N·Cout·Hout·Wout·(Cin/groups)·kh·kw. Output size from the recorded outputs, else from
    stride, padding and dilation when the trace records them (PyTorch's Concrete Inputs)."""
    x, w = inputs[0], inputs[1]
    if len(x) != 4 or len(w) != 4:
        return math.nan
    if nhwc:  # TensorFlow: input NHWC, filter HWIO
        kh, kw, cin, cout = w
        batch = x[0]
    else:
        cout, cin, kh, kw = w
        batch = x[0]
    if outputs and len(outputs[0]) == 4:
        out = outputs[0]
        ho, wo = (out[1], out[2]) if nhwc else (out[2], out[3])
    elif concrete and len(concrete) >= 6 and not nhwc:
        try:
            stride, padding, dilation = (json.loads(c) if isinstance(c, str) and c else c for c in concrete[3:6])
            sh, sw = (stride * 2)[:2] if isinstance(stride, list) else (stride, stride)
            ph, pw = (padding * 2)[:2] if isinstance(padding, list) else (padding, padding)
            dh, dw = (dilation * 2)[:2] if isinstance(dilation, list) else (dilation, dilation)
            ho = (x[2] + 2 * ph - dh * (kh - 1) - 1) // sh + 1
            wo = (x[3] + 2 * pw - dw * (kw - 1) - 1) // sw + 1
        except (TypeError, ValueError):
            return math.nan
    else:
        return math.nan
    return 2.0 * batch * cout * ho * wo * cin * kh * kw


def op_flops(name: str, shapes: str) -> float:
    """Analytic FLOPs of one op call from its recorded shapes (JSON of inputs, outputs, concrete
    inputs); NaN when the op has no formula here or the shapes do not fit it. A multiply-add is 2."""
    if not shapes:
        return math.nan
    recorded = json.loads(shapes)
    inputs = [s for s in recorded.get("inputs", []) if isinstance(s, list)]
    try:
        if name in ("aten::mm", "aten::matmul", "aten::bmm", "MatMul"):
            return _matmul_flops(inputs[0], inputs[1])
        if name == "aten::addmm":
            return _matmul_flops(inputs[1], inputs[2])
        if name == "aten::linear":  # input [..., K], weight [N, K]
            x, w = inputs[0], inputs[1]
            return 2.0 * math.prod(x[:-1]) * x[-1] * w[0]
        if name in ("aten::conv2d", "Conv2D"):
            return _conv_flops(inputs, recorded.get("concrete"), name == "Conv2D", recorded.get("outputs"))
    except (IndexError, ValueError, TypeError):
        return math.nan
    return math.nan


def _gpu_time_total(frame: pd.DataFrame) -> float:
    return float(frame.loc[frame["kind"].isin(GPU_KINDS), "duration"].sum())


def op_table(run: Run) -> pd.DataFrame:
    """Per op name: calls, total and self time, the GPU time of the activities it launched itself
    (not through a child op) and their share of all GPU time, GPU activities per call (these
    three only when the trace has GPU activity), and
    analytic FLOPs from recorded shapes (summed over its calls; an op inside another FLOP-counted
    op, such as ``aten::addmm`` under ``aten::linear``, counts the same work again)."""
    frame = events(run)
    ops = frame[frame["kind"] == "op"]
    gpu = frame[frame["kind"].isin(GPU_KINDS) & (frame["op_launch"] >= 0)]
    launched_by = frame["name"].to_numpy()[gpu["op_launch"].to_numpy()]
    device = pd.DataFrame({"name": launched_by, "duration": gpu["duration"].to_numpy()}).groupby("name")["duration"]
    flops = [op_flops(name, shapes) if shapes else math.nan for name, shapes in zip(ops["name"], ops["shapes"])]
    grouped = ops.assign(flops=flops).groupby("name", sort=False)
    out = pd.DataFrame(
        {"calls": grouped.size(), "total (s)": grouped["duration"].sum(), "self (s)": grouped["self"].sum()}
    )
    total_gpu = _gpu_time_total(frame)
    if total_gpu:  # a CPU-only trace has no GPU columns
        out["GPU time (s)"] = device.sum().reindex(out.index).fillna(0.0)
        out["share of GPU time (%)"] = 100.0 * out["GPU time (s)"] / total_gpu
        out["GPU activities/call"] = device.size().reindex(out.index).fillna(0).to_numpy() / out["calls"]
    out["FLOP (analytic)"] = grouped["flops"].sum(min_count=1)
    out = out.sort_values(["total (s)"], ascending=False).reset_index().rename(columns={"name": "op"})
    out["origin"] = f"measured by the profiler ({run.environment.get('dialect', run.format)}); FLOP {ANALYTIC}"
    return out


def kernel_table(run: Run) -> pd.DataFrame:
    """Per GPU activity name and device: launches, total, mean, min and max time per launch, share
    of all GPU time, and the first launch's grid and block."""
    frame = events(run)
    gpu = frame[frame["kind"].isin(GPU_KINDS)]
    attributes = run.launch_table["attributes"].to_numpy()[gpu["launch"].to_numpy()]
    gpu = gpu.assign(grid=[a.get("grid", "") for a in attributes], block=[a.get("block", "") for a in attributes])
    grouped = gpu.groupby(["kind", "name", "device"], sort=False)
    out = grouped["duration"].agg(["size", "sum", "mean", "min", "max"])
    out.columns = ["launches", "total (s)", "time/launch (s)", "min (s)", "max (s)"]
    total = _gpu_time_total(frame)
    out["share of GPU time (%)"] = 100.0 * out["total (s)"] / total if total else math.nan
    for column in ("grid", "block"):  # TF1 timelines and xprof traces record neither
        if (gpu[column] != "").any():
            out[column] = grouped[column].first()
    return out.sort_values("total (s)", ascending=False).reset_index()


def _union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Intervals merged where they overlap (HTA's merge_kernel_intervals)."""
    if not len(starts):
        return starts, ends
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    reach = np.maximum.accumulate(ends)
    group = np.concatenate([[0], np.cumsum(starts[1:] > reach[:-1])])
    count = int(group[-1]) + 1
    merged_start = np.full(count, np.inf)
    np.minimum.at(merged_start, group, starts)
    merged_end = np.full(count, -np.inf)
    np.maximum.at(merged_end, group, ends)
    return merged_start, merged_end


def step_table(run: Run) -> pd.DataFrame:
    """Per step: the step annotation's host time, the GPU activities that belong to it (through
    the op that launched them) and the union of their busy time."""
    frame = events(run)
    steps = frame[frame["kind"] == "step"]
    if not len(steps):
        raise InputError(
            f"{run.source}: the trace has no step annotations (ProfilerStep#N, step_num)",
            "profile with a schedule (torch.profiler.schedule) and call prof.step() each step; in JAX or "
            "TensorFlow wrap each step in jax.profiler.StepTraceAnnotation or tf.profiler.experimental.Trace",
        )
    gpu = frame[frame["kind"].isin(GPU_KINDS)]
    rows = []
    for step, host in zip(steps["step"], steps["duration"]):
        mine = gpu[gpu["step"] == step]
        starts, ends = _union(mine["start"].to_numpy(), (mine["start"] + mine["duration"]).to_numpy())
        rows.append(
            {
                "step": step,
                "host time (s)": host,
                "GPU activities": len(mine),
                "GPU busy (s)": float((ends - starts).sum()) if len(mine) else 0.0,
            }
        )
    return pd.DataFrame(rows)


def _kernel_type(name: str) -> str:
    if _COMMUNICATION.match(name):
        return "communication"
    if _MEMORY.match(name):
        return "memory"
    return "computation" if not _NOT_COMPUTE.match(name) else "other"


def _overlap(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> float:
    """The time both of two sets of merged intervals cover (HTA's running-status sweep)."""
    times = np.concatenate([a[0], a[1], b[0], b[1]])
    status = np.concatenate(
        [np.full(len(a[0]), 1), np.full(len(a[1]), -1), np.full(len(b[0]), 2), np.full(len(b[1]), -2)]
    )
    order = np.argsort(times, kind="stable")
    times, running = times[order], np.cumsum(status[order])
    both = np.flatnonzero(running[:-1] == 3)
    return float((times[both + 1] - times[both]).sum())


def breakdown(run: Run, include_last_step: bool = False) -> pd.DataFrame:
    """Per GPU: kernel time (first start to last end), idle, compute, non-compute and their
    percentages, communication time and the comm-compute overlap, in HTA's definitions (times
    in µs, as HTA prints them). As HTA does, a trace of two or more steps leaves out the GPU work
    of its last step (the profiler stops in it) unless ``include_last_step``."""
    frame = events(run)
    gpu = frame[frame["kind"].isin(GPU_KINDS) & (frame["stream"] != "")]
    steps = frame[frame["kind"] == "step"]
    if len(steps) >= 2 and not include_last_step:
        last = steps.loc[steps["start"].idxmax()]
        gpu = gpu[(gpu["step"] != last["step"]) & ((gpu["step"] != "") | (gpu["start"] < last["start"]))]
    if not len(gpu):
        raise InputError(
            f"{run.source}: no GPU activity in this trace (a CPU-only profile)",
            "profile with ProfilerActivity.CUDA on a GPU to get the temporal breakdown",
        )
    rows = []
    for device, mine in gpu.groupby(gpu["device"].astype(str), sort=True):
        start = mine["start"].to_numpy() * 1e6
        end = start + mine["duration"].to_numpy() * 1e6
        kinds = np.asarray(  # a copy or set the profiler marked as such is memory whatever its name
            [
                "memory" if kind in ("memcpy", "memset") else _kernel_type(name)
                for kind, name in zip(mine["kind"], mine["name"])
            ]
        )
        merged = _union(start, end)
        span = float(merged[1][-1] - merged[0][0])
        busy = float((merged[1] - merged[0]).sum())
        compute = _union(start[kinds == "computation"], end[kinds == "computation"])
        comm = _union(start[kinds == "communication"], end[kinds == "communication"])
        compute_time = float((compute[1] - compute[0]).sum())
        comm_time = float((comm[1] - comm[0]).sum())
        idle = span - busy
        rows.append(
            {
                "device": device,
                "rank": run.environment.get("rank", ""),
                "kernel time (us)": span,
                "idle (us)": idle,
                "compute (us)": compute_time,
                "non-compute (us)": span - compute_time - idle,
                "idle (%)": 100 * idle / span,
                "compute (%)": 100 * compute_time / span,
                "non-compute (%)": 100 * (span - compute_time - idle) / span,
                "communication (us)": comm_time,
                "comm-compute overlap (%)": 100 * _overlap(comm, compute) / comm_time if comm_time else math.nan,
            }
        )
    return pd.DataFrame(rows)


def gpu_launches(run: Run) -> Run:
    """The run with only its GPU activities (kernels, copies, sets): what a per-kernel table of
    any profiler output shows; the ops and steps stay in the stored run."""
    attributes = run.launch_table["attributes"].tolist()
    keep = np.flatnonzero([a.get("kind") in GPU_KINDS for a in attributes])
    renumber = np.full(len(attributes), -1, dtype=np.int64)
    renumber[keep] = np.arange(len(keep))
    metrics = run.metric_table
    rows = renumber[metrics["launch"].to_numpy()] >= 0
    picked = metrics[rows].reset_index(drop=True)
    picked["launch"] = renumber[picked["launch"].to_numpy()].astype(np.int32)
    return run.replaced(tables=(run.launch_table.iloc[keep].reset_index(drop=True), picked))
