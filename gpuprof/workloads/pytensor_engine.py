"""PyTensor (Theano's maintained successor) on the CPU, and the graph every PyTensor engine compiles.

One function is compiled per op (PyTensor fuses several elementwise ops in one function into one
loop, which would blur per-op numbers) and operand shape, and kept for the process, so buffer sets
reuse it and a sweep's next size gets its own (torch.compile would otherwise recompile the same
function for any shape, with dynamic-shape kernels). The output is returned with ``borrow=True`` so
PyTensor reuses its output buffer instead of allocating per call (``out`` is not used: the result
lives in that reused buffer, which the call returns). ``trust_input=True``: the operands are the
engine's own arrays, so PyTensor's per-call input check and copy are skipped (and the JAX and
PyTorch engines can pass device arrays).
Mode: Numba (``mode="NUMBA"``), PyTensor's default backend, which needs no system BLAS for ``dot``.
On ``--device cuda`` the name ``pytensor`` means a GPU backend instead (``gpuprof.workloads.resolve``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytensor
import pytensor.tensor as pt

from gpuprof.workloads.ops import get_op

NAME = "pytensor"
MODE = "NUMBA"
COMPILER = "PyTensor graph rewrite, then Numba JIT on the first call"


def version() -> str:
    return f"pytensor {pytensor.__version__} (mode {MODE})"


def _expression(
    op: str, a: pt.TensorVariable, b: pt.TensorVariable | None, scalar: float, dtype: str
) -> pt.TensorVariable:
    return get_op(op).symbolic(pt, a, b, pt.constant(np.asarray(scalar, dtype=dtype)))


def compiled(op: str, inputs: list[Any], scalar: float, mode: str) -> Any:
    """The op's PyTensor function for ``mode`` and the shapes and dtype of ``inputs`` (NumPy, JAX or
    torch arrays), compiled once per process."""
    dtype = str(inputs[0].dtype).removeprefix("torch.")
    return _compiled(op, tuple(tuple(int(n) for n in x.shape) for x in inputs), scalar, dtype, mode)


@functools.cache
def _compiled(op: str, shapes: tuple[tuple[int, ...], ...], scalar: float, dtype: str, mode: str) -> Any:
    symbols = [pt.matrix(f"x{i}", dtype=dtype) for i in range(len(shapes))]
    expr = _expression(op, symbols[0], symbols[1] if len(symbols) > 1 else None, scalar, dtype)
    return pytensor.function(symbols, pytensor.Out(expr, borrow=True), mode=mode, trust_input=True)


def prepare(op: str, inputs: list[np.ndarray], scalar: float, out: np.ndarray) -> Callable[[], np.ndarray]:
    function = compiled(op, inputs, scalar, MODE)
    return lambda: function(*inputs)
