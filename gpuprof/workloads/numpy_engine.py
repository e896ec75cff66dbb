"""NumPy on the CPU: each op written as the ufunc / BLAS call an engineer would use, into ``out``
(``Op.numpy`` in :mod:`gpuprof.workloads.ops`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpuprof.workloads.ops import get_op

NAME = "numpy"


def version() -> str:
    return f"numpy {np.__version__}"


def prepare(op: str, inputs: list[np.ndarray], scalar: float, out: np.ndarray) -> Callable[[], np.ndarray]:
    a = inputs[0]
    b = inputs[1] if len(inputs) > 1 else None
    return get_op(op).numpy(np, a, b, out.dtype.type(scalar), out)
