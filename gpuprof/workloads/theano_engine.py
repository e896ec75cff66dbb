"""Legacy Theano, for users of the study who type ``--engine theano``.

Theano 1.0.5 imports only with numpy < 1.24 (see docs); where it is importable this engine uses it
on the CPU. Where it is not, importing this module raises ImportError and the run falls back to
PyTensor, Theano's maintained successor, saying so (see ``gpuprof.measure``).
"""

from __future__ import annotations

import types
from collections.abc import Callable

import numpy as np
import theano  # noqa: F401  (ImportError here means: fall back to PyTensor)
import theano.tensor as tt

from gpuprof.workloads.ops import get_op

NAME = "theano"


def version() -> str:
    return f"theano {theano.__version__}"


def prepare(op: str, inputs: list[np.ndarray], scalar: float, out: np.ndarray) -> Callable[[], np.ndarray]:
    dtype = str(out.dtype)
    symbols = [tt.matrix(f"x{i}", dtype=dtype) for i in range(len(inputs))]
    a = symbols[0]
    b = symbols[1] if len(symbols) > 1 else None
    # Theano keeps sigmoid under nnet; the ops are written against pytensor.tensor's names.
    names = types.SimpleNamespace(dot=tt.dot, tanh=tt.tanh, sigmoid=tt.nnet.sigmoid)
    expr = get_op(op).symbolic(names, a, b, tt.constant(np.asarray(scalar, dtype=dtype)))
    function = theano.function(symbols, theano.Out(expr, borrow=True))
    return lambda: function(*inputs)
