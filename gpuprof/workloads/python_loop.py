"""Pure Python loops on the CPU: the DL-Prof study's validation workload, where every FLOP is one
interpreted multiply or add, so counted FP instructions can be held against 2n³ and n²(2n−1).

The matrix product is the i-k-j order (row of A times rows of B, accumulated into a row of C), on
Python floats (float64 arithmetic whatever the dtype); the result is written into ``out`` at the end.
"""

from __future__ import annotations

import math
import platform
from collections.abc import Callable

import numpy as np

NAME = "python-loop"


def version() -> str:
    return f"Python {platform.python_version()} loops"


def matmul_ikj(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    """C = A·B, i-k-j: n·m·k multiplies and as many adds (the first add per element is onto 0.0)."""
    columns = len(b[0])
    c = []
    for row in a:
        out = [0.0] * columns
        for k, aik in enumerate(row):
            brow = b[k]
            for j in range(columns):
                out[j] += aik * brow[j]
        c.append(out)
    return c


def prepare(op: str, inputs: list[np.ndarray], scalar: float, out: np.ndarray) -> Callable[[], np.ndarray]:
    a = inputs[0].tolist()
    b = inputs[1].tolist() if len(inputs) > 1 else None
    elementwise: dict[str, Callable[..., float]] = {
        "add": lambda x, y: x + y,
        "mul": lambda x, y: x * y,
        "scalar": lambda x: x * scalar,
        "tanh": math.tanh,
        "sigmoid": lambda x: 1.0 / (1.0 + math.exp(-x)),
    }

    def run() -> np.ndarray:
        if op == "dot":
            out[...] = matmul_ikj(a, b)
        elif b is not None:
            function = elementwise[op]
            out[...] = [[function(x, y) for x, y in zip(ra, rb, strict=True)] for ra, rb in zip(a, b, strict=True)]
        else:
            function = elementwise[op]
            out[...] = [[function(x) for x in row] for row in a]
        return out

    if op != "dot" and op not in elementwise:
        raise ValueError(op)
    return run
