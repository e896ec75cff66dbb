"""The six operations of the reference study and their analytic cost model.

Shapes: elementwise ops take ``(rows, cols)``; ``dot`` takes ``(m, k, n)`` for C[m×n] = A[m×k]·B[k×n].
``--size`` is the footprint of every operand (inputs and output), so an op with ``arrays`` operands
of ``rows × cols`` elements of ``itemsize`` bytes has size ``arrays · rows · cols · itemsize``;
square matrices are chosen, the largest that fit in the requested size.

FLOP conventions (analytic, per output element): add, mul, scalar = 1; dot = 2·k (so 2·m·n·k in
total, one multiply and one add per term); sigmoid = 4 (negate, exp, add, divide of 1/(1+e^-x));
tanh = 5 (scale, exp, add, divide, subtract of 1 - 2/(e^(2x)+1)). The transcendental counts as one
operation, as a textbook count does. Hardware counters count differently: exp and division expand
into several FMA/ADD instructions plus special-function-unit ops that are not counted at all, which
is why nvprof reported 10-18 flops per element for these ops in the study.

Bytes moved (analytic) are the compulsory traffic: every input read once, the output written once.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from gpuprof.errors import InputError

DTYPES = {"float16": 2, "float32": 4, "float64": 8}


@dataclass(frozen=True)
class Op:
    name: str
    formula: str
    arrays: int            # operands counted in --size (inputs + output)
    flops_per_element: int | None  # per output element; None for dot (depends on k)


OPS: dict[str, Op] = {
    "add": Op("add", "C = A + B", 3, 1),
    "mul": Op("mul", "C = A ∘ B, elementwise", 3, 1),
    "dot": Op("dot", "C = A · B, matrix product", 3, None),
    "scalar": Op("scalar", "C = s · A", 2, 1),
    "sigmoid": Op("sigmoid", "C = 1 / (1 + e^-A)", 2, 4),
    "tanh": Op("tanh", "C = tanh(A)", 2, 5),
}


def get_op(name: str) -> Op:
    try:
        return OPS[name]
    except KeyError:
        raise InputError(f"unknown op '{name}'", f"choose one of: {', '.join(OPS)}") from None


def itemsize(dtype: str) -> int:
    try:
        return DTYPES[dtype]
    except KeyError:
        raise InputError(f"unknown dtype '{dtype}'", f"choose one of: {', '.join(DTYPES)}") from None


def shape_for_size(op: str, size_bytes: int, dtype: str) -> tuple[int, ...]:
    """The largest square shape whose operands fit in ``size_bytes``."""
    spec = get_op(op)
    n = math.isqrt(size_bytes // (spec.arrays * itemsize(dtype)))
    if n < 1:
        raise InputError(f"--size {size_bytes} B is too small for {op} in {dtype}",
                         f"give at least {spec.arrays * itemsize(dtype)} bytes")
    return (n, n, n) if op == "dot" else (n, n)


def parse_shape(op: str, text: str) -> tuple[int, ...]:
    """``--shape``: ``RxC`` or ``N`` for elementwise ops, ``MxKxN`` or ``N`` for dot."""
    get_op(op)
    parts = [p for p in re.split(r"[x×,\s]+", text.strip().lower()) if p]
    want = "MxKxN (or N for square)" if op == "dot" else "ROWSxCOLS (or N for square)"
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise InputError(f"--shape '{text}' is not a shape", f"give {want}, e.g. 1024x1024") from None
    if not dims or any(d <= 0 for d in dims):
        raise InputError(f"--shape '{text}' needs positive dimensions", f"give {want}")
    expected = 3 if op == "dot" else 2
    if len(dims) == 1:
        return dims * expected
    if len(dims) != expected:
        raise InputError(f"--shape '{text}' does not fit {op}: it takes {expected} dimensions",
                         f"give {want}")
    return dims


def elements(op: str, shape: tuple[int, ...]) -> list[int]:
    """Element counts of each operand, inputs first, output last."""
    if op == "dot":
        m, k, n = shape
        return [m * k, k * n, m * n]
    count = shape[0] * shape[1]
    return [count] * get_op(op).arrays


def footprint(op: str, shape: tuple[int, ...], dtype: str) -> int:
    """Bytes of all operands (what --size means)."""
    return sum(elements(op, shape)) * itemsize(dtype)


def flops(op: str, shape: tuple[int, ...]) -> int:
    """Analytic floating-point operations of one execution (conventions in the module docstring)."""
    if op == "dot":
        m, k, n = shape
        return 2 * m * n * k
    return shape[0] * shape[1] * get_op(op).flops_per_element


def bytes_moved(op: str, shape: tuple[int, ...], dtype: str) -> int:
    """Analytic compulsory memory traffic: inputs read once, output written once."""
    return footprint(op, shape, dtype)


def shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in shape)
