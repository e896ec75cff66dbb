"""PyTensor's JAX backend: the op's PyTensor graph compiled with ``mode="JAX"``, run by XLA on the
CPU or an NVIDIA GPU (with a CUDA build of jaxlib: ``pip install "jax[cuda12]"``).

PyTensor turns the graph into a Python function of ``jax.numpy`` calls and wraps it in ``jax.jit``
(its ``Function.vm.jit_fn``); XLA compiles it on the first call. The engine calls that jitted
function directly on arrays already on the device, so nothing is copied per call and the result
stays on the device (``Function.__call__`` would add its Python bookkeeping, a few µs per call).
JAX dispatches asynchronously: a call returns before the work is done, so every timed call waits
for ``block_until_ready``. Like every XLA program it allocates its output on each call (XLA's
pooled allocator), where the NumPy engines write into a preallocated one.
JAX computes float64 only in its 64-bit mode (``jax_enable_x64``), which PyTensor turns on only
when it loads its JAX backend, that is after ``place`` has already put the operands on the device,
where a float64 array silently becomes float32. This module turns the mode on when it is imported,
before any array is placed, so float64 is float64 in any fresh process (float32 and float16 arrays
keep their dtype in 64-bit mode). JAX's default lets a float32 matrix product run in TF32 on recent
GPUs (JAX documentation, "Matmul precision"); the engine asks for full float32
(``jax_default_matmul_precision = "highest"``), as the study's SGEMM and the other engines compute it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytensor

from gpuprof.errors import DeviceError
from gpuprof.workloads import pytensor_engine

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_default_matmul_precision", "highest")

NAME = "pytensor-jax"
MODE = "JAX"
COMPILER = "PyTensor graph rewrite, then jax.jit: XLA compiles on the first call"
WAITS = {
    "cpu": "block_until_ready (JAX dispatches asynchronously)",
    "cuda": "block_until_ready (JAX dispatches asynchronously)",
}
_PLATFORM = {"cpu": "cpu", "cuda": "gpu"}


def version() -> str:
    return f"pytensor {pytensor.__version__} (mode {MODE}), jax {jax.__version__}"


def _device(device: str) -> Any:
    try:
        return jax.devices(_PLATFORM[device])[0]
    except RuntimeError as error:
        raise DeviceError(
            f"JAX {jax.__version__} cannot use a {device} device here "
            f"({str(error).splitlines()[0] if str(error) else type(error).__name__})",
            'install a CUDA build of jaxlib: pip install "jax[cuda12]" (or "jax[cuda13]")',
        ) from None


def place(arrays: list[np.ndarray], device: str) -> list[Any]:
    target = _device(device)
    return [jax.device_put(x, target) for x in arrays]


def block(result: Any) -> Any:
    return result.block_until_ready()


def to_host(result: Any) -> np.ndarray:
    return np.asarray(result)


GPU_TIMER = (
    "time.perf_counter around {count} dispatches, stopped when the last result is ready "
    "(block_until_ready: a device runs XLA's executions in order on its compute stream; JAX exposes "
    "no CUDA events), time per call = batch / {count}, dispatch latency included where it exceeds the kernel"
)


def batch_seconds(call: Callable[[], Any], count: int) -> float:
    """Seconds for ``count`` dispatches of ``call`` on a GPU, up to the last result being ready."""
    start = time.perf_counter()
    for _ in range(count - 1):
        call()
    block(call())
    return time.perf_counter() - start


def prepare(op: str, inputs: list[Any], scalar: float, out: Any = None) -> Callable[[], Any]:
    """The dispatching call; ``out`` is not used (the compiled function allocates its result)."""
    jitted = pytensor_engine.compiled(op, inputs, scalar, MODE).vm.jit_fn
    return lambda: jitted(*inputs)[0]
