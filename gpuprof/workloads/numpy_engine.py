"""NumPy on the CPU: each op written as the ufunc / BLAS call an engineer would use, into ``out``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

NAME = "numpy"
DEVICE = "cpu"


def version() -> str:
    return f"numpy {np.__version__}"


def prepare(op: str, inputs: list[np.ndarray], scalar: float, out: np.ndarray) -> Callable[[], np.ndarray]:
    a = inputs[0]
    b = inputs[1] if len(inputs) > 1 else None
    s = out.dtype.type(scalar)
    if op == "add":
        return lambda: np.add(a, b, out=out)
    if op == "mul":
        return lambda: np.multiply(a, b, out=out)
    if op == "dot":
        return lambda: np.matmul(a, b, out=out)
    if op == "scalar":
        return lambda: np.multiply(a, s, out=out)
    if op == "tanh":
        return lambda: np.tanh(a, out=out)
    if op == "sigmoid":
        one = out.dtype.type(1)

        def sigmoid() -> np.ndarray:
            np.negative(a, out=out)
            np.exp(out, out=out)
            np.add(out, one, out=out)
            return np.reciprocal(out, out=out)

        return sigmoid
    raise ValueError(op)
