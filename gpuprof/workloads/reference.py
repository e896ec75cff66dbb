"""Operands and the correctness check every engine, CPU or GPU, passes before it is timed.

Inputs are uniform in [-1, 1) from a seeded generator (so float16 dot products stay far from
overflow); the reference is computed in float64 from the same inputs, and an engine's answer must
be within a relative Frobenius-norm error that depends on the dtype.
"""

from __future__ import annotations

import math
from typing import Any

from gpuprof.errors import EngineError
from gpuprof.workloads import ops

SCALAR = 1.5  # the s of the scalar op, C = s·A
TOLERANCE = {"float64": 1e-10, "float32": 1e-4, "float16": 2e-2}


def make_inputs(op: str, shape: tuple[int, ...], dtype: str, rng: Any) -> list[Any]:
    """The op's input operands (NumPy arrays on the host) for ``shape``."""
    inputs = ops.get_op(op).arrays - 1
    dims = [(shape[0], shape[1]), (shape[1], shape[2])] if op == "dot" else [shape] * inputs
    return [rng.uniform(-1.0, 1.0, size=dim).astype(dtype) for dim in dims]


def reference(op: str, inputs: list[Any]) -> Any:
    """The op's result in float64 from the same inputs."""
    import numpy as np

    wide = [x.astype(np.float64) for x in inputs]
    return ops.get_op(op).reference(np, wide[0], wide[1] if len(wide) > 1 else None, SCALAR)


def check_result(op: str, dtype: str, engine: str, result: Any, expected: Any) -> float:
    """The relative error of ``result``; EngineError when it exceeds the dtype's tolerance."""
    import numpy as np

    error = float(np.linalg.norm(result.astype(np.float64) - expected) / max(np.linalg.norm(expected), 1e-300))
    if not math.isfinite(error) or error > TOLERANCE[dtype]:
        raise EngineError(
            f"engine {engine} computed a wrong {op} in {dtype}: relative error {error:.3g} against "
            f"the float64 reference exceeds {TOLERANCE[dtype]:g}",
            "nothing was timed; report this engine/dtype combination",
        )
    return error
