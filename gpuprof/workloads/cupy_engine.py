"""CuPy on an NVIDIA GPU: each op as the CuPy call an engineer would write, into ``out``.

Elementwise ops are CuPy ufuncs (one generated kernel each); ``dot`` is ``cupy.matmul``, i.e.
cuBLAS (for float16, CuPy's default compute type is float32). ``sigmoid`` has no CuPy ufunc, so it
is one ElementwiseKernel (one fused kernel, like the hand-written one) rather than four ufunc calls.
Importing this module needs CuPy but no GPU; calling ``prepare`` needs a GPU.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import cupy as cp

NAME = "cupy"
DEVICE = "cuda"
INSTALL = "cuda"


def version() -> str:
    return cp.__version__


@functools.cache
def _sigmoid() -> Any:
    return cp.ElementwiseKernel("T x", "T y", "y = T(1) / (T(1) + exp(-x))", "gpuprof_cupy_sigmoid")


def prepare(op: str, inputs: list[Any], scalar: float, out: Any) -> Callable[[], Any]:
    if op == "sigmoid":
        kernel, a = _sigmoid(), inputs[0]
        return lambda: kernel(a, out)
    if op == "scalar":
        inputs = [inputs[0], out.dtype.type(scalar)]
    func = {"add": cp.add, "mul": cp.multiply, "dot": cp.matmul, "scalar": cp.multiply, "tanh": cp.tanh}[op]
    return lambda: func(*inputs, out=out)
