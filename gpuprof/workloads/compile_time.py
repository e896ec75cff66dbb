"""The first call of an engine that compiles (PyTensor's backends, legacy Theano): compilation is
never timed with the repeats, and its duration is reported on its own.

``prepare`` builds the op's function (PyTensor's graph rewrite; Theano's C code) and the first call
compiles what the backend compiles lazily (XLA, TorchInductor, Numba) and runs the op once, the
answer that is checked. Both are timed with ``perf_counter`` and stored as one launch with
``phase = compile`` and no ``kernel_duration``, so no timing statistic ever includes them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from gpuprof.errors import EngineError
from gpuprof.model import TIMED, Launch, Metric

PHASE = "compile"
PREPARE = "compile_prepare"  # canonical names of the two metrics
FIRST_CALL = "compile_first_call"


def first_call(engine: Any, call: Callable[[], Any], op: str, dtype: str, device: str) -> tuple[Any, float]:
    """The first call's result and its seconds; a backend that cannot compute the op in ``dtype``
    on ``device`` is one EngineError naming both."""
    start = time.perf_counter()
    try:
        result = call()
    except Exception as error:  # noqa: BLE001 - every backend raises its own types; the user needs one line
        text = str(error).strip().splitlines()
        raise EngineError(
            f"engine {engine.NAME} cannot compute {op} in {dtype} on {device}: "
            f"{type(error).__name__}: {text[0][:200] if text else ''}",
            "try another --dtype or --engine (docs/theano-gpu.md lists what each backend supports)",
        ) from None
    return result, time.perf_counter() - start


def launch(
    compiler: str | None, kernel: str, device: str, index: int, prepare_s: float, first_s: float
) -> list[Launch]:
    """The compile launch of an engine that names its ``COMPILER``; none for the others."""
    if compiler is None:
        return []
    return [
        Launch(
            kernel,
            index,
            device,
            1,
            {"phase": PHASE, "compiler": compiler},
            [
                Metric("prepare_time", prepare_s, "second", PREPARE, TIMED),
                Metric("first_call_time", first_s, "second", FIRST_CALL, TIMED),
            ],
        )
    ]
