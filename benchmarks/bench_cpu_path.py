"""gpuprof's CPU timed path vs a bare NumPy loop on the same arrays, in the same process.

Prints dot GFLOP/s and add GB/s both ways and their ratio (target >= 0.97). Rounds alternate
between the two so that clock drift and noise hit both alike.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from gpuprof.workloads import numpy_engine, ops
from gpuprof.workloads.timing import time_calls

ROUNDS = 7
REPEAT = 20


def bare(call_args: tuple, op: str) -> list[float]:
    a, b, out = call_args
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter_ns()
        if op == "dot":
            np.matmul(a, b, out=out)
        else:
            np.add(a, b, out=out)
        times.append((time.perf_counter_ns() - start) * 1e-9)
    return times


def compare(op: str, size: str) -> None:
    from gpuprof.model.sizes import parse_size

    shape = ops.shape_for_size(op, parse_size(size), "float32")
    rng = np.random.default_rng(0)
    dims = [(shape[0], shape[1]), (shape[1], shape[2])] if op == "dot" else [shape, shape]
    a, b = (rng.uniform(-1, 1, d).astype(np.float32) for d in dims)
    out = np.empty((shape[0], shape[-1]), np.float32)
    call = numpy_engine.prepare(op, [a, b], 1.5, out)
    work = ops.flops(op, shape) if op == "dot" else ops.bytes_moved(op, shape, "float32")
    ours, theirs = [], []
    time_calls([call], 3, 3)
    for _ in range(ROUNDS):
        ours.append(statistics.median(time_calls([call], 0, REPEAT)))
        theirs.append(statistics.median(bare((a, b, out), op)))
    rate_ours, rate_bare = work / statistics.median(ours), work / statistics.median(theirs)
    unit = "GFLOP/s" if op == "dot" else "GB/s"
    print(
        f"{op:4s} {size:>6s}  gpuprof {rate_ours / 1e9:8.2f} {unit}  bare numpy {rate_bare / 1e9:8.2f} {unit}"
        f"  ratio {rate_ours / rate_bare:.3f}  (target >= 0.97)"
    )


if __name__ == "__main__":
    compare("dot", "12MB")
    compare("add", "96MB")
