"""gpuprof's pytensor-jax and pytensor-torch engines vs a bare loop of the same backend on the same
arrays, on the CPU, in one process.

The engine side is gpuprof's own path (``place``, ``prepare``, ``workloads.blocking``,
``timing.time_calls``, as ``gpuprof run`` does); the bare side is what a JAX or PyTorch user would
write: ``jax.jit`` of the jax.numpy expression with ``block_until_ready``, ``torch.compile`` of the
torch expression, each call timed with ``perf_counter_ns``. Both compile and warm up first. Rounds
alternate between the two so that clock drift and other processes hit both alike; each side's time
is the median over rounds of the per-round median. Prints, per op, both times and engine / bare
(target: within 1 ± 0.05).

``--one-thread`` runs both sides on one thread (torch.set_num_threads(1), XLA's CPU client without
its Eigen thread pool): on a shared machine a parallel region waits for a descheduled thread for a
scheduler tick (about 4 ms), which swamps millisecond ops on both sides alike but not equally.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from gpuprof import ops, workloads
from gpuprof.sizes import parse_size
from gpuprof.timing import time_calls
from gpuprof.workloads.reference import SCALAR, make_inputs

ROUNDS = 9
REPEAT = 15
WARMUP = 3
# The study's sizes (configs/paper.toml), large enough for a timed call of about a millisecond or more.
SIZES = {"add": "24MB", "mul": "24MB", "dot": "9MB", "scalar": "16MB", "sigmoid": "16MB", "tanh": "16MB"}


def bare_jax(op: str) -> Callable[..., Any]:
    import jax
    import jax.numpy as jnp

    return jax.jit({"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "dot": jnp.matmul,
                    "scalar": lambda a: jnp.asarray(SCALAR, a.dtype) * a, "sigmoid": jax.nn.sigmoid,
                    "tanh": jnp.tanh}[op])


def bare_torch(op: str) -> Callable[..., Any]:
    import torch

    return torch.compile({"add": torch.add, "mul": torch.mul, "dot": torch.matmul,
                          "scalar": lambda a: SCALAR * a, "sigmoid": torch.sigmoid, "tanh": torch.tanh}[op])


BARE = {"pytensor-jax": (bare_jax, lambda r: r.block_until_ready()), "pytensor-torch": (bare_torch, lambda r: r)}


def bare_times(function: Callable[..., Any], wait: Callable[[Any], Any], inputs: list[Any]) -> list[float]:
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter_ns()
        wait(function(*inputs))
        times.append((time.perf_counter_ns() - start) * 1e-9)
    return times


def compare(engine_name: str, op: str, dtype: str) -> float:
    """engine time / bare time for ``op``; prints one line."""
    engine = workloads.load(engine_name, "cpu")
    shape = ops.shape_for_size(op, parse_size(SIZES[op]), dtype)
    inputs = engine.place(make_inputs(op, shape, dtype, np.random.default_rng(0)), "cpu")
    call = workloads.blocking(engine, engine.prepare(op, inputs, SCALAR))
    make, wait = BARE[engine_name]
    function = make(op)
    time_calls([call], WARMUP, 1)
    bare_times(function, wait, inputs)  # compiles, then warms up
    ours, theirs = [], []
    for _ in range(ROUNDS):
        ours.append(statistics.median(time_calls([call], 0, REPEAT)))
        theirs.append(statistics.median(bare_times(function, wait, inputs)))
    mine, bare = statistics.median(ours), statistics.median(theirs)
    ratio = mine / bare
    flag = "" if abs(ratio - 1) <= 0.05 else "  OUTSIDE 5 %"
    print(f"{engine_name:15s} {op:7s} {SIZES[op]:>5s} {ops.shape_text(shape):>12s}  engine {mine * 1e3:9.3f} ms  "
          f"bare {bare * 1e3:9.3f} ms  engine/bare {ratio:.3f}{flag}", flush=True)
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", action="append", choices=list(BARE), help="default: both")
    parser.add_argument("--op", action="append", choices=list(ops.OPS), help="default: all six")
    parser.add_argument("--dtype", default="float32", choices=list(ops.DTYPES))
    parser.add_argument("--one-thread", action="store_true", help="both sides on one thread (see above)")
    args = parser.parse_args()
    if args.one_thread:
        os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        import torch

        torch.set_num_threads(1)
    ratios = [compare(engine, op, args.dtype) for engine in args.engine or BARE for op in args.op or ops.OPS]
    inside = sum(abs(r - 1) <= 0.05 for r in ratios)
    print(f"{inside} of {len(ratios)} within 5 % (target: all); engine/bare from {min(ratios):.3f} to {max(ratios):.3f}")


if __name__ == "__main__":
    main()
