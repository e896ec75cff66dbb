"""What the workload child (:mod:`gpuprof.launch.child`) times on a GPU: a checked :class:`Workload`,
and the one of an engine whose arrays live in a framework of its own (PyTensor's JAX and PyTorch
backends).

A framework engine's kernels run on its own streams, not on a CuPy stream, so the child's CuPy events and
CUDA-graph capture cannot time them; the engine times a batch of N dispatches its own way
(``batch_seconds``: ``torch.cuda.Event`` pairs on PyTorch's stream; for JAX, which exposes no CUDA
events, a wall clock stopped when the last result is ready) and says how (``GPU_TIMER``). The
operands are placed on the GPU once; the results stay there. The first call compiles (XLA,
TorchInductor): it is timed apart from everything else (:mod:`gpuprof.workloads.compile_time`),
its result is the one checked, and the record keeps both compile durations. Every call the profiler
sees waits for its result before the NVTX range closes, so the op's kernels, however many the
framework launches, are inside it.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from gpuprof import workloads
from gpuprof.workloads import compile_time
from gpuprof.workloads.reference import SCALAR, check_result, reference


@dataclass
class Workload:
    """One engine's op on the GPU, checked: a call that returns when its work is done (for the
    profiled calls), the time of one call, a timed batch of N, and what the record says about them."""

    call: Callable[[], Any]
    relative_error: float
    one_call_seconds: Callable[[], float]
    batched: Callable[[int], tuple[Callable[[], float], str]]  # N -> (seconds of one batch, how it is issued)
    compile: dict[str, Any] | None = None


@contextlib.contextmanager
def framework_workload(engine: Any, args: argparse.Namespace, host_inputs: list[Any]) -> Iterator[Workload]:
    inputs = engine.place(host_inputs, "cuda")
    started = time.perf_counter()
    dispatch = engine.prepare(args.op, inputs, SCALAR)
    prepare_s = time.perf_counter() - started
    call = workloads.blocking(engine, dispatch)
    result, first_s = compile_time.first_call(engine, call, args.op, args.dtype, "cuda")
    error = check_result(args.op, args.dtype, engine.NAME, engine.to_host(result), reference(args.op, host_inputs))
    for _ in range(args.warmup):
        call()

    def batched(count: int) -> tuple[Callable[[], float], str]:
        return (lambda: engine.batch_seconds(dispatch, count)), engine.GPU_TIMER.format(count=count)

    yield Workload(
        call,
        error,
        lambda: engine.batch_seconds(dispatch, 1),
        batched,
        {"compiler": engine.COMPILER, "prepare_s": prepare_s, "first_call_s": first_s},
    )
