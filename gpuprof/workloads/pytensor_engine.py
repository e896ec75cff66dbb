"""PyTensor (Theano's maintained successor) on the CPU.

One function is compiled per op (PyTensor fuses several elementwise ops in one function into one
loop, which would blur per-op numbers). The output is returned with ``borrow=True`` so PyTensor
reuses its output buffer instead of allocating per call (``out`` is not used: the result lives in
that reused buffer, which the call returns).
Mode: Numba (``mode="NUMBA"``), PyTensor's default backend, which needs no system BLAS for ``dot``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytensor
import pytensor.tensor as pt

NAME = "pytensor"
DEVICE = "cpu"
MODE = "NUMBA"


def version() -> str:
    return f"pytensor {pytensor.__version__} (mode {MODE})"


def _expression(op: str, a: pt.TensorVariable, b: pt.TensorVariable | None, scalar: float,
                dtype: str) -> pt.TensorVariable:
    if op == "add":
        return a + b
    if op == "mul":
        return a * b
    if op == "dot":
        return pt.dot(a, b)
    if op == "scalar":
        return pt.constant(np.asarray(scalar, dtype=dtype)) * a
    if op == "sigmoid":
        return pt.sigmoid(a)
    if op == "tanh":
        return pt.tanh(a)
    raise ValueError(op)


def prepare(op: str, inputs: list[np.ndarray], scalar: float, out: np.ndarray) -> Callable[[], np.ndarray]:
    dtype = str(out.dtype)
    symbols = [pt.matrix(f"x{i}", dtype=dtype) for i in range(len(inputs))]
    expr = _expression(op, symbols[0], symbols[1] if len(symbols) > 1 else None, scalar, dtype)
    function = pytensor.function(symbols, pytensor.Out(expr, borrow=True), mode=MODE)

    return lambda: function(*inputs)
