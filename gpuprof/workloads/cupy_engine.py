"""CuPy on an NVIDIA GPU: each op as the CuPy call an engineer would write, into ``out``.

Elementwise ops are CuPy ufuncs (one generated kernel each); ``dot`` is ``cupy.matmul``, i.e.
``cublasGemmEx`` with compute type 32F for float16/float32 and 64F for float64, asking for tensor-op
algorithms on compute capability >= 8.0 (>= 7.0 for float16). So float16 dot runs on tensor cores
(HMMA, FP32 accumulation), which the FADD/FMUL/FFMA/HFMA counters do not see; float32 stays on FFMA
unless ``CUPY_TF32=1``; float64 may use FP64 tensor cores (DMMA) on A100/H100. Sources and the table:
kernels/README.md. ``sigmoid`` has no CuPy ufunc, so it is one ElementwiseKernel (one fused kernel,
like the hand-written one) rather than four ufunc calls.
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
