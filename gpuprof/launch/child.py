"""The workload process a GPU run profiles: ``python -m gpuprof.launch.child --op ... --result FILE``.

It runs in its own process so a profiler can launch it. In order:

1. build the inputs (the CPU path's generator and seed), run the op once and check the answer
   against the float64 reference (nothing is timed when it is wrong);
2. ``--warmup`` untimed calls;
3. ``--repeat`` timed repeats, each a batch of ``--batch`` calls between two CUDA events
   (``cupy.cuda.Event``); the time per call is the batch's time / N. An event pair around one
   Python-issued launch measures the launch latency as well (a 6 MB add takes about 2 µs on an
   H100, less than CuPy needs to issue a launch), so the N calls are captured once into a CUDA
   graph and the graph is launched, which issues them back to back from the GPU; where capture
   fails (a library call that cannot be captured) they are issued in a plain loop, and the record
   says which. ``--batch 0`` picks N so a batch lasts about :data:`BATCH_TARGET_S`. The repeats run
   outside any profiler range, so a profiler's replay passes, cache flushes and clock locking
   never inflate these times. NVML meters the board's energy around all of them
   (:mod:`gpuprof.energy`), or the record says why it could not;
4. ``--profiled`` calls between ``cudaProfilerStart``/``cudaProfilerStop`` (nvprof's
   ``--profile-from-start off``), each inside the NVTX start/end range ``--range`` (ncu's
   ``--nvtx-include``; ``--range-kind push-pop`` for a push/pop range instead): the launches the
   profiler measures. A start/end range holds kernels launched from any thread (XLA and
   TorchInductor may launch from worker threads); a push/pop range only the pushing thread's.
   Skipped when ``--profiled 0``.

It writes one JSON file (``--result``): the times, the energy, the CUDA runtime's view of the
device, the engine and the check, or ``{"error": ...}`` with the exit code of the gpuprof error
class. This is a program entry point, so it may exit; everything it measures goes to the file, not
to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gpuprof import workloads
from gpuprof.energy import open_energy, to_record
from gpuprof.errors import DeviceError, GpuprofError
from gpuprof.launch.gpu_workload import Workload, framework_workload
from gpuprof.workloads import ops
from gpuprof.workloads.reference import SCALAR, check_result, make_inputs, reference

RESULT_SCHEMA = 1
BATCH_TARGET_S = 2e-3  # an auto batch lasts about this long: far above the events' ~0.5 µs resolution
MAX_BATCH = 1000
NVTX_COLOR = 0xFF76B900  # ARGB of the start/end range (CuPy's RangeStart takes one)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m gpuprof.launch.child", description=__doc__.split("\n")[0])
    parser.add_argument("--op", required=True, choices=list(ops.OPS))
    parser.add_argument("--shape", required=True, help="RxC, or MxKxN for dot")
    parser.add_argument("--dtype", required=True, choices=list(ops.DTYPES))
    parser.add_argument("--engine", required=True)
    parser.add_argument("--repeat", type=int, required=True)
    parser.add_argument("--warmup", type=int, required=True)
    parser.add_argument("--profiled", type=int, required=True)
    parser.add_argument("--batch", type=int, default=0, help="calls per timed repeat (0: about 2 ms worth)")
    parser.add_argument("--range", required=True, help="NVTX range name around each profiled launch")
    parser.add_argument(
        "--range-kind",
        choices=("start-end", "push-pop"),
        default="start-end",
        help="a start/end range (kernels of any thread) or a push/pop range (this thread's)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--result", required=True, type=Path)
    return parser.parse_args(argv)


def _device(cp: Any) -> dict[str, Any]:
    """The CUDA runtime's view of device 0 (NVML's view is recorded by the parent)."""
    runtime = cp.cuda.runtime
    props = runtime.getDeviceProperties(0)
    name = props["name"]
    return {
        "name": name.decode() if isinstance(name, bytes) else name,
        "cc": f"{props['major']}.{props['minor']}",
        "pci_bus_id": runtime.deviceGetPCIBusId(0),
        "runtime_version": runtime.runtimeGetVersion(),
        "driver_version": runtime.driverGetVersion(),
    }


def _event_seconds(cp: Any, launch: Callable[[], Any], stream: Any) -> float:
    """GPU time of ``launch()`` between two CUDA events on ``stream``."""
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record(stream)
    launch()
    stop.record(stream)
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) / 1e3


def batch_size(requested: int, one_call_s: float) -> int:
    """``requested``, or (0) enough calls for a batch of about BATCH_TARGET_S, within 1..MAX_BATCH."""
    if requested > 0:
        return requested
    return max(1, min(MAX_BATCH, math.ceil(BATCH_TARGET_S / max(one_call_s, 1e-9))))


def batch_launcher(cp: Any, call: Callable[[], Any], count: int, stream: Any) -> tuple[Callable[[], Any], str]:
    """A zero-argument launch of ``count`` calls on ``stream``, and how it issues them."""
    try:
        stream.begin_capture()
        try:
            for _ in range(count):
                call()
        finally:
            graph = stream.end_capture()
        return (
            lambda: graph.launch(stream),
            f"a CUDA graph of {count} launch(es) (stream capture), time per launch = batch / {count}",
        )
    # CuPy, cuBLAS and the driver each raise their own error types for a call that cannot be captured
    except Exception as error:  # noqa: BLE001 - the loop below measures instead, and says why
        reason = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"

    def loop() -> None:
        for _ in range(count):
            call()

    return loop, (
        f"{count} back-to-back launch(es) issued from Python (CUDA graph capture failed: {reason}), "
        f"time per launch = batch / {count}, launch latency included where it exceeds the kernel"
    )


@contextlib.contextmanager
def _cupy_workload(cp: Any, engine: Any, args: argparse.Namespace, host_inputs: list[Any]) -> Iterator[Workload]:
    """CuPy and the hand-written kernels: CUDA events on a stream of gpuprof's own, batches captured
    into a CUDA graph (see the module docstring)."""
    try:
        inputs = [cp.asarray(x) for x in host_inputs]
    except cp.cuda.runtime.CUDARuntimeError as error:
        raise DeviceError(f"CuPy cannot use a GPU here ({error})", "use --device cpu") from None
    out = cp.empty(_out_shape(args), dtype=args.dtype)
    stream = cp.cuda.Stream(non_blocking=True)  # stream capture needs a stream other than the legacy default
    with stream:
        call = engine.prepare(args.op, inputs, SCALAR, out)
        error = check_result(args.op, args.dtype, args.engine, cp.asnumpy(call()), reference(args.op, host_inputs))
        for _ in range(args.warmup):
            call()

        def batched(count: int) -> tuple[Callable[[], float], str]:
            launch, how = batch_launcher(cp, call, count, stream)
            return (lambda: _event_seconds(cp, launch, stream)), f"CUDA events (cupy.cuda.Event) around {how}"

        yield Workload(call, error, lambda: _event_seconds(cp, call, stream), batched)


def _out_shape(args: argparse.Namespace) -> tuple[int, ...]:
    shape = ops.parse_shape(args.op, args.shape)
    return (shape[0], shape[2]) if args.op == "dot" else shape


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Check, warm up, time and profile the op; the result record."""
    import numpy as np

    engine, notes = workloads.resolve(args.engine, "cuda")
    import cupy as cp

    shape = ops.parse_shape(args.op, args.shape)
    try:
        device = _device(cp)
    except cp.cuda.runtime.CUDARuntimeError as error:
        raise DeviceError(f"CuPy cannot use a GPU here ({error})", "use --device cpu") from None
    host_inputs = make_inputs(args.op, shape, args.dtype, np.random.default_rng(args.seed))
    if hasattr(engine, "place"):  # arrays of its own (JAX, PyTorch)
        session = framework_workload
    else:
        session = functools.partial(_cupy_workload, cp)
    with session(engine, args, host_inputs) as workload:
        batch = batch_size(args.batch, workload.one_call_seconds())
        timed, how = workload.batched(batch)
        timed()  # the first batch carries one-time setup (a CUDA graph's upload)
        times = []
        meter, energy_notes = open_energy("cuda", gpu_pci_bus_id=device["pci_bus_id"])  # NVML's GPU = CUDA's device 0
        with meter if meter is not None else contextlib.nullcontext():
            for _ in range(args.repeat):
                times.append(timed() / batch)
        _profile(cp, workload.call, args)
    metered = meter.metrics() if meter is not None else []
    energy_notes += meter.notes if meter is not None else []
    return {
        "schema": RESULT_SCHEMA,
        "times": times,
        "batch": batch,
        "energy": to_record(metered, energy_notes),
        "device": device,
        "engine": engine.NAME,
        "notes": notes,
        "engine_version": engine.version(),
        "relative_error": workload.relative_error,
        "compile": workload.compile,
        "kernel": getattr(engine, "kernel_name", lambda op, dt: None)(args.op, args.dtype),
        "timer": how,
    }


def _profile(cp: Any, call: Callable[[], Any], args: argparse.Namespace) -> None:
    """``--profiled`` calls, each alone inside the NVTX range, between cudaProfilerStart/Stop."""
    if args.profiled:
        nvtx = cp.cuda.nvtx
        cp.cuda.runtime.deviceSynchronize()
        cp.cuda.profiler.start()
        push_pop = args.range_kind == "push-pop"
        for _ in range(args.profiled):
            opened = nvtx.RangePush(args.range) if push_pop else nvtx.RangeStart(args.range, NVTX_COLOR)
            call()
            cp.cuda.runtime.deviceSynchronize()
            if push_pop:
                nvtx.RangePop()
            else:
                nvtx.RangeEnd(opened)
        cp.cuda.profiler.stop()


PROFILED_ENVIRONMENT = {
    # JAX's GPU client takes 75 % of the GPU's memory when it starts, and ncu saves all memory a kernel
    # can reach before each replay pass (about 60 GB on an H100): under a profiler JAX allocates on demand
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
}


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.profiled:  # before any engine imports its framework; a value the user set is kept
        for name, value in PROFILED_ENVIRONMENT.items():
            os.environ.setdefault(name, value)
    try:
        record = measure(args)
        code = 0
    except GpuprofError as error:
        record = {
            "schema": RESULT_SCHEMA,
            "error": {"type": type(error).__name__, "problem": error.problem, "fix": error.fix},
        }
        code = error.exit_code
    args.result.write_text(json.dumps(record, indent=1))
    return code


if __name__ == "__main__":
    sys.exit(main())
