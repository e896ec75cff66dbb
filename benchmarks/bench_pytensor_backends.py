"""gpuprof's pytensor-jax and pytensor-torch engines vs bare loops of the same backend on the same
arrays, on the CPU, in one process.

Three ways of timing one call, each compiled and warmed up first:

* engine: gpuprof's own path (``place``, ``prepare``, ``workloads.blocking``, ``timing.time_calls``),
  as ``gpuprof run`` does;
* PyTensor bare: the function PyTensor compiled, called in a plain ``perf_counter_ns`` loop (what
  the engine calls, without gpuprof's timing code): engine / this is gpuprof's own overhead;
* framework bare: what a JAX or PyTorch user would write, ``jax.jit`` of the jax.numpy expression
  with ``block_until_ready``, ``torch.compile`` of the torch expression: engine / this is the target
  (within 1 ± 0.05), and it also holds whatever PyTensor's compiled function costs beyond the kernel.

Each of ``ROUNDS`` rounds times one call of each, in a shuffled order (a fixed order favours some
positions: the allocator reuses what the call before freed), so drift and other processes on a shared
machine hit all three alike. Ratios are of the medians and of the fastest deciles: on a loaded machine
a call is often preempted and the times split into two clusters, so a median can jump between them;
the fastest decile is the calls no other process interrupted.

``--one-thread`` runs everything on one thread (torch.set_num_threads(1), XLA's CPU client without
its Eigen thread pool): on a shared machine a parallel region waits for a descheduled thread for a
scheduler tick (about 4 ms), which swamps millisecond ops.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from gpuprof import workloads
from gpuprof.model.sizes import parse_size
from gpuprof.workloads import ops
from gpuprof.workloads.reference import SCALAR, make_inputs
from gpuprof.workloads.timing import time_calls

ROUNDS = 300
WARMUP = 3
# The study's sizes (configs/paper.toml), large enough for a timed call of about a millisecond or more.
SIZES = {"add": "24MB", "mul": "24MB", "dot": "9MB", "scalar": "16MB", "sigmoid": "16MB", "tanh": "16MB"}


def bare_jax(op: str) -> Callable[..., Any]:
    import jax
    import jax.numpy as jnp

    return jax.jit(
        {
            "add": lambda a, b: a + b,
            "mul": lambda a, b: a * b,
            "dot": jnp.matmul,
            "scalar": lambda a: jnp.asarray(SCALAR, a.dtype) * a,
            "sigmoid": jax.nn.sigmoid,
            "tanh": jnp.tanh,
        }[op]
    )


def bare_torch(op: str) -> Callable[..., Any]:
    import torch

    return torch.compile(
        {
            "add": torch.add,
            "mul": torch.mul,
            "dot": torch.matmul,
            "scalar": lambda a: SCALAR * a,
            "sigmoid": torch.sigmoid,
            "tanh": torch.tanh,
        }[op]
    )


BARE = {"pytensor-jax": (bare_jax, lambda r: r.block_until_ready()), "pytensor-torch": (bare_torch, lambda r: r)}


def bare_call(function: Callable[..., Any], wait: Callable[[Any], Any], inputs: list[Any]) -> float:
    start = time.perf_counter_ns()
    wait(function(*inputs))
    return (time.perf_counter_ns() - start) * 1e-9


def compare(engine_name: str, op: str, dtype: str) -> tuple[float, float, float, float]:
    """engine / PyTensor bare and engine / framework bare, of the medians and the fastest deciles; prints one line."""
    engine = workloads.load(engine_name, "cpu")
    shape = ops.shape_for_size(op, parse_size(SIZES[op]), dtype)
    inputs = engine.place(make_inputs(op, shape, dtype, np.random.default_rng(0)), "cpu")
    dispatch = engine.prepare(op, inputs, SCALAR)
    call = workloads.blocking(engine, dispatch)
    make, wait = BARE[engine_name]
    function = make(op)
    sides: dict[str, Callable[[], float]] = {
        "engine": lambda: time_calls([call], 0, 1)[0],
        "pytensor": lambda: bare_call(dispatch, wait, []),
        "framework": lambda: bare_call(function, wait, inputs),
    }
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(WARMUP + 1):  # compiles, then warms up
        for side in sides.values():
            side()
    order, shuffle = list(sides), random.Random(0).shuffle
    for _ in range(ROUNDS):
        shuffle(order)
        for name in order:
            times[name].append(sides[name]())
    median = {name: statistics.median(t) for name, t in times.items()}
    fast = {name: decile(t) for name, t in times.items()}
    ratios = (
        median["engine"] / median["pytensor"],
        fast["engine"] / fast["pytensor"],
        median["engine"] / median["framework"],
        fast["engine"] / fast["framework"],
    )
    flag = "" if max(abs(r - 1) for r in ratios[2:]) <= 0.05 else "  OUTSIDE 5 %"
    print(
        f"{engine_name:15s} {op:7s} {SIZES[op]:>5s} {ops.shape_text(shape):>12s}"
        f"  engine {median['engine'] * 1e3:8.3f} ms"
        f"  pytensor bare {median['pytensor'] * 1e3:8.3f} ms  framework bare {median['framework'] * 1e3:8.3f} ms"
        f"  engine/pytensor {ratios[0]:.3f} ({ratios[1]:.3f})  engine/framework {ratios[2]:.3f} ({ratios[3]:.3f})"
        f"{flag}",
        flush=True,
    )
    return ratios


def decile(times: list[float]) -> float:
    """The 10th percentile: the calls no other process interrupted."""
    return statistics.quantiles(times, n=10)[0]


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
    for index, name in enumerate(
        (
            "engine/pytensor bare, median",
            "engine/pytensor bare, fastest decile",
            "engine/framework bare, median",
            "engine/framework bare, fastest decile",
        )
    ):
        values = [r[index] for r in ratios]
        inside = sum(abs(v - 1) <= 0.05 for v in values)
        print(f"{name}: {inside} of {len(values)} within 5 %, from {min(values):.3f} to {max(values):.3f}")


if __name__ == "__main__":
    main()
