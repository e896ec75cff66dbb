"""CuPy on an NVIDIA GPU: each op as the CuPy call an engineer would write, into ``out``.

Elementwise ops are CuPy ufuncs (one generated kernel each); ``dot`` is ``cupy.matmul``, i.e.
``cublasGemmEx`` with compute type 32F for float16/float32 and 64F for float64, asking for tensor-op
algorithms on compute capability >= 8.0 (>= 7.0 for float16). So float16 dot runs on tensor cores
(HMMA, FP32 accumulation), which the FADD/FMUL/FFMA/HFMA counters do not see; float32 stays on FFMA
unless ``CUPY_TF32=1``; float64 may use FP64 tensor cores (DMMA) on A100/H100. Sources and the table:
kernels/README.md. ``sigmoid`` has no CuPy ufunc, so it is one ElementwiseKernel (one fused kernel,
like the hand-written one) rather than four ufunc calls.
Each op's call is ``Op.cupy`` in :mod:`gpuprof.workloads.ops`. Importing this module needs CuPy but no GPU; calling ``prepare`` needs a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cupy as cp

from gpuprof.workloads.ops import get_op

NAME = "cupy"


def version() -> str:
    return cp.__version__


def prepare(op: str, inputs: list[Any], scalar: float, out: Any) -> Callable[[], Any]:
    a = inputs[0]
    b = inputs[1] if len(inputs) > 1 else None
    return get_op(op).cupy(cp, a, b, out.dtype.type(scalar), out)
