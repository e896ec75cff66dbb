"""The six operations of the reference study: each declared once, with its cost model and the code
every engine runs for it.

An :class:`Op` holds the formula, the operands counted in ``--size``, the analytic FLOPs per output
element and how they are counted, the float64 reference, and one implementation per engine family,
written against the namespace the engine passes in (``numpy``, ``cupy``, ``pytensor.tensor`` or
Theano's): this module imports none of them. The hand-written CUDA kernel of an op is
``gpuprof_<op>_<f16|f32|f64>`` in ``kernels/gpuprof_ops.cu``, launched with the arguments its
``kernel`` kind names. Adding an op: its :class:`Op` here, its kernel there.

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

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpuprof.errors import InputError

DTYPES = {"float16": 2, "float32": 4, "float64": 8}


# Implementations take (namespace, a, b, s, out): the engine's array module, the operands (b is None for
# one-input ops), the scalar s (a number, or a graph constant for the symbolic engines) and the output.
Kernel = Callable[..., Any]


@dataclass(frozen=True)
class Op:
    name: str
    formula: str
    arrays: int  # operands counted in --size (inputs + output)
    flops_per_element: int | None  # per output element; None for dot (depends on k)
    flop_basis: str  # how the analytic FLOPs are counted, as ``gpuprof run`` shows it
    reference: Kernel  # (numpy, a, b, s) -> the float64 result
    numpy: Kernel  # (numpy, a, b, s, out) -> a call that computes into out: the NumPy engine
    cupy: Kernel  # (cupy, a, b, s, out) -> a call that computes into out: the CuPy engine
    symbolic: Kernel  # (tensor namespace, a, b, s) -> the graph: PyTensor (and its backends), Theano
    kernel: str  # argument list of the CUDA kernel: "matmul", "binary", "scalar" or "unary"


def _numpy_sigmoid(np: Any, a: Any, b: Any, s: Any, out: Any) -> Callable[[], Any]:
    """1 / (1 + e^-a) in four ufunc calls into ``out``: no temporary array."""
    one = out.dtype.type(1)

    def sigmoid() -> Any:
        np.negative(a, out=out)
        np.exp(out, out=out)
        np.add(out, one, out=out)
        return np.reciprocal(out, out=out)

    return sigmoid


@functools.cache
def _cupy_sigmoid_kernel(cp: Any) -> Any:
    """One fused kernel (CuPy has no sigmoid ufunc): like the hand-written one, not four ufunc calls."""
    return cp.ElementwiseKernel("T x", "T y", "y = T(1) / (T(1) + exp(-x))", "gpuprof_cupy_sigmoid")


def _cupy_sigmoid(cp: Any, a: Any, b: Any, s: Any, out: Any) -> Callable[[], Any]:
    kernel = _cupy_sigmoid_kernel(cp)
    return lambda: kernel(a, out)


OPS: dict[str, Op] = {
    "add": Op(
        "add",
        "C = A + B",
        3,
        1,
        "1 per element",
        reference=lambda np, a, b, s: a + b,
        numpy=lambda np, a, b, s, out: lambda: np.add(a, b, out=out),
        cupy=lambda cp, a, b, s, out: lambda: cp.add(a, b, out=out),
        symbolic=lambda t, a, b, s: a + b,
        kernel="binary",
    ),
    "mul": Op(
        "mul",
        "C = A ∘ B, elementwise",
        3,
        1,
        "1 per element",
        reference=lambda np, a, b, s: a * b,
        numpy=lambda np, a, b, s, out: lambda: np.multiply(a, b, out=out),
        cupy=lambda cp, a, b, s, out: lambda: cp.multiply(a, b, out=out),
        symbolic=lambda t, a, b, s: a * b,
        kernel="binary",
    ),
    "dot": Op(
        "dot",
        "C = A · B, matrix product",
        3,
        None,
        "2·m·n·k",
        reference=lambda np, a, b, s: a @ b,
        numpy=lambda np, a, b, s, out: lambda: np.matmul(a, b, out=out),
        cupy=lambda cp, a, b, s, out: lambda: cp.matmul(a, b, out=out),
        symbolic=lambda t, a, b, s: t.dot(a, b),
        kernel="matmul",
    ),
    "scalar": Op(
        "scalar",
        "C = s · A",
        2,
        1,
        "1 per element",
        reference=lambda np, a, b, s: s * a,
        numpy=lambda np, a, b, s, out: lambda: np.multiply(a, s, out=out),
        cupy=lambda cp, a, b, s, out: lambda: cp.multiply(a, s, out=out),
        symbolic=lambda t, a, b, s: s * a,
        kernel="scalar",
    ),
    "sigmoid": Op(
        "sigmoid",
        "C = 1 / (1 + e^-A)",
        2,
        4,
        "4 per element (neg, exp, add, div)",
        reference=lambda np, a, b, s: 1.0 / (1.0 + np.exp(-a)),
        numpy=_numpy_sigmoid,
        cupy=_cupy_sigmoid,
        symbolic=lambda t, a, b, s: t.sigmoid(a),
        kernel="unary",
    ),
    "tanh": Op(
        "tanh",
        "C = tanh(A)",
        2,
        5,
        "5 per element (scale, exp, add, div, sub)",
        reference=lambda np, a, b, s: np.tanh(a),
        numpy=lambda np, a, b, s, out: lambda: np.tanh(a, out=out),
        cupy=lambda cp, a, b, s, out: lambda: cp.tanh(a, out=out),
        symbolic=lambda t, a, b, s: t.tanh(a),
        kernel="unary",
    ),
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
        raise InputError(
            f"--size {size_bytes} B is too small for {op} in {dtype}",
            f"give at least {spec.arrays * itemsize(dtype)} bytes",
        )
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
        raise InputError(f"--shape '{text}' does not fit {op}: it takes {expected} dimensions", f"give {want}")
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
