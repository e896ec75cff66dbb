"""The workload process a GPU run profiles: ``python -m gpuprof.launch.child --op ... --result FILE``.

It runs in its own process so a profiler can launch it. In order:

1. build the inputs (the CPU path's generator and seed), run the op once and check the answer
   against the float64 reference (nothing is timed when it is wrong);
2. ``--warmup`` untimed calls;
3. ``--repeat`` calls, each between two CUDA events (``cupy.cuda.Event``): the *timed* launches.
   They run outside any profiler range, so a profiler's replay passes, cache flushes and clock
   locking never inflate these times. NVML meters the board's energy around all of them
   (:mod:`gpuprof.energy`), or the record says why it could not;
4. ``--profiled`` calls between ``cudaProfilerStart``/``cudaProfilerStop`` (nvprof's
   ``--profile-from-start off``), each inside the NVTX push/pop range ``--range`` (ncu's
   ``--nvtx-include``): the launches the profiler measures. Skipped when ``--profiled 0``.

It writes one JSON file (``--result``): the times, the energy, the CUDA runtime's view of the
device, the engine and the check, or ``{"error": ...}`` with the exit code of the gpuprof error
class. This is a program entry point, so it may exit; everything it measures goes to the file, not
to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from gpuprof import ops
from gpuprof.errors import DeviceError, GpuprofError

RESULT_SCHEMA = 1


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m gpuprof.launch.child", description=__doc__.split("\n")[0])
    parser.add_argument("--op", required=True, choices=list(ops.OPS))
    parser.add_argument("--shape", required=True, help="RxC, or MxKxN for dot")
    parser.add_argument("--dtype", required=True, choices=list(ops.DTYPES))
    parser.add_argument("--engine", required=True)
    parser.add_argument("--repeat", type=int, required=True)
    parser.add_argument("--warmup", type=int, required=True)
    parser.add_argument("--profiled", type=int, required=True)
    parser.add_argument("--range", required=True, help="NVTX range name around each profiled launch")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--result", required=True, type=Path)
    return parser.parse_args(argv)


def _device(cp: Any) -> dict[str, Any]:
    """The CUDA runtime's view of device 0 (NVML's view is recorded by the parent)."""
    runtime = cp.cuda.runtime
    props = runtime.getDeviceProperties(0)
    name = props["name"]
    return {"name": name.decode() if isinstance(name, bytes) else name,
            "cc": f"{props['major']}.{props['minor']}",
            "pci_bus_id": runtime.deviceGetPCIBusId(0),
            "runtime_version": runtime.runtimeGetVersion(),
            "driver_version": runtime.driverGetVersion()}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Check, warm up, time and profile the op; the result record."""
    import numpy as np

    from gpuprof import workloads
    from gpuprof.energy import open_energy, to_record
    from gpuprof.workloads.reference import SCALAR, check_result, make_inputs, reference

    engine = workloads.load(args.engine, "cuda")
    import cupy as cp

    shape = ops.parse_shape(args.op, args.shape)
    try:
        device = _device(cp)
        host_inputs = make_inputs(args.op, shape, args.dtype, np.random.default_rng(args.seed))
        inputs = [cp.asarray(x) for x in host_inputs]
    except cp.cuda.runtime.CUDARuntimeError as error:
        raise DeviceError(f"CuPy cannot use a GPU here ({error})", "use --device cpu") from None
    out_shape = (shape[0], shape[2]) if args.op == "dot" else shape
    out = cp.empty(out_shape, dtype=args.dtype)
    call = engine.prepare(args.op, inputs, SCALAR, out)
    error = check_result(args.op, args.dtype, args.engine, cp.asnumpy(call()), reference(args.op, host_inputs))

    for _ in range(args.warmup):
        call()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    meter, energy_notes = open_energy("cuda", gpu_pci_bus_id=device["pci_bus_id"])  # NVML's GPU = CUDA's device 0
    with meter if meter is not None else contextlib.nullcontext():
        for _ in range(args.repeat):
            start.record()
            call()
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    metered = meter.metrics() if meter is not None else []
    energy_notes += meter.notes if meter is not None else []
    if args.profiled:
        cp.cuda.runtime.deviceSynchronize()
        cp.cuda.profiler.start()
        for _ in range(args.profiled):
            cp.cuda.nvtx.RangePush(args.range)
            call()
            cp.cuda.runtime.deviceSynchronize()
            cp.cuda.nvtx.RangePop()
        cp.cuda.profiler.stop()
    return {"schema": RESULT_SCHEMA, "times": times, "energy": to_record(metered, energy_notes),
            "device": device, "engine": engine.NAME,
            "engine_version": engine.version(), "relative_error": error,
            "kernel": getattr(engine, "kernel_name", lambda op, dt: None)(args.op, args.dtype),
            "timer": "CUDA events (cupy.cuda.Event) around each unprofiled launch"}


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        record = measure(args)
        code = 0
    except GpuprofError as error:
        record = {"schema": RESULT_SCHEMA, "error": {"type": type(error).__name__, "problem": error.problem,
                                                     "fix": error.fix}}
        code = error.exit_code
    args.result.write_text(json.dumps(record, indent=1))
    return code


if __name__ == "__main__":
    sys.exit(main())
