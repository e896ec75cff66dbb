"""Workload engines: what computes the op. Each engine module follows :class:`Engine`: ``NAME``,
``version()`` and ``prepare(op, inputs, scalar, out) -> Callable[[], array]``: a zero-argument call that computes the
op and returns the result, written into the preallocated ``out`` (or an engine's own reused output
buffer), so that allocation is never inside the timed region.

Engines whose arrays live in a framework of their own (:mod:`.pytensor_jax`, :mod:`.pytensor_torch`)
follow :class:`FrameworkEngine`: they also have ``place(arrays, device)`` (the host operands copied to the device, before anything is
timed), ``block(result)`` (wait until an asynchronously dispatched result is ready; ``WAITS`` says
how, per device) and ``to_host`` (the result as a NumPy array, for the check). Their ``prepare``
call only dispatches; :func:`blocking` makes the call a timer can stop after. Engines that compile the op
name what in ``COMPILER``; the compile time is reported on its own (:mod:`.compile_time`).

Engines are imported only when chosen (PyTensor, JAX, PyTorch and CuPy are slow to import).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol, cast

from gpuprof.errors import EngineError, InputError


class Engine(Protocol):
    """What computes an op: the code for each op is ``gpuprof.workloads.ops.Op``'s, the engine runs it."""

    NAME: str

    def version(self) -> str:
        """The library and its version, for the Run."""
        ...

    def prepare(self, op: str, inputs: list[Any], scalar: float, out: Any) -> Callable[[], Any]:
        """A zero-argument call that computes ``op`` on the placed ``inputs`` (into ``out`` where it can)."""
        ...


class FrameworkEngine(Engine, Protocol):
    """An engine whose arrays live in a framework of its own, dispatched asynchronously and compiled."""

    COMPILER: str  # what compiles the op (its compile time is reported apart)
    WAITS: dict[str, str]  # per device, how :meth:`block` waits

    def place(self, arrays: list[Any], device: str) -> list[Any]:
        """The host operands copied to ``device``, before anything is timed."""
        ...

    def block(self, result: Any) -> Any:
        """``result`` once it is computed (the call only dispatches)."""
        ...

    def to_host(self, result: Any) -> Any:
        """The result as a NumPy array, for the check against the float64 reference."""
        ...


# engine name -> (module, devices it runs on)
ENGINES: dict[str, tuple[str, tuple[str, ...]]] = {
    "numpy": ("numpy_engine", ("cpu",)),
    "python-loop": ("python_loop", ("cpu",)),
    "pytensor": ("pytensor_engine", ("cpu", "cuda")),
    "pytensor-jax": ("pytensor_jax", ("cpu", "cuda")),
    "pytensor-torch": ("pytensor_torch", ("cpu", "cuda")),
    "theano": ("theano_engine", ("cpu", "cuda")),
    "cupy": ("cupy_engine", ("cuda",)),
    "cuda-kernels": ("cuda_kernels", ("cuda",)),
}
DEFAULT = {"cpu": "numpy", "cuda": "cupy"}
# On a GPU, ``pytensor`` (and ``theano``) take the first of these backends that is installed with GPU support.
GPU_BACKENDS = ("pytensor-jax", "pytensor-torch")
# The GPU extras, one per CUDA line (pyproject.toml); every "not installed" message names both.
CUDA_INSTALL = (
    'pip install "gpuprof-hpc[cuda13]" (driver 580 or newer, CUDA 13) or "gpuprof-hpc[cuda12]" (CUDA 12 drivers)'
)


def engine_names(device: str | None = None) -> list[str]:
    return [name for name, (_, devices) in ENGINES.items() if device is None or device in devices]


def gpu_only(name: str | None) -> bool:
    """Does ``name`` run on a GPU and nowhere else (so ``--device auto`` means the GPU)?"""
    return name in ENGINES and ENGINES[name][1] == ("cuda",)


def load(name: str, device: str) -> Engine:
    """The engine module ``name`` for ``device``; a clear error if unknown, wrong device or missing."""
    if name not in ENGINES:
        raise InputError(f"unknown engine '{name}'", f"choose one of: {', '.join(ENGINES)}")
    module_name, devices = ENGINES[name]
    if device not in devices:
        raise InputError(
            f"engine '{name}' runs on {' or '.join(devices)}, not {device}",
            f"use --device {devices[0]} or one of: {', '.join(engine_names(device))}",
        )
    try:
        return cast(Engine, importlib.import_module(f"gpuprof.workloads.{module_name}"))
    except ImportError as error:
        fix = CUDA_INSTALL if devices == ("cuda",) else f'pip install "gpuprof-hpc[{_EXTRAS.get(name, name)}]"'
        raise EngineError(f"engine '{name}' is not installed ({error.name or error})", fix) from None


def resolve(name: str, device: str) -> tuple[Engine, list[str]]:
    """The engine that runs ``name`` on ``device``, with a note whenever it is not ``name`` itself.

    ``theano`` is legacy Theano where it imports (on the CPU: its GPU backend, pygpu, is gone), else
    PyTensor, Theano's maintained successor. ``pytensor`` is PyTensor's default backend (Numba) on the
    CPU and, on a GPU, the first of :data:`GPU_BACKENDS` that is installed.
    """
    if name == "theano":
        if device == "cpu":
            try:
                return load("theano", "cpu"), []
            except EngineError as error:
                why = f"legacy Theano is not importable here ({error.problem.split('(')[-1].rstrip(')')})"
        else:
            why = "legacy Theano ran on GPUs through pygpu/libgpuarray, which are gone (not on PyPI)"
        engine, notes = resolve("pytensor", device)
        return engine, [
            f"engine theano: {why}; using PyTensor, Theano's maintained successor and gpuprof's "
            f"supported Theano engine, as {engine.NAME}",
            *notes,
        ]
    if name == "pytensor" and device == "cuda":
        missing = []
        for backend in GPU_BACKENDS:
            try:
                engine = load(backend, device)
            except EngineError as error:
                missing.append(f"{backend}: {error.problem.split('(')[-1].rstrip(')')} not installed")
                continue
            return engine, [
                f"engine pytensor on the GPU: {backend} ({cast(FrameworkEngine, engine).COMPILER}), the first installed of "
                f"{', '.join(GPU_BACKENDS)}"
            ]
        raise EngineError(
            f"engine pytensor needs a GPU backend on --device cuda ({'; '.join(missing)})",
            'pip install "gpuprof-hpc[jax]" with "jax[cuda12]", or "gpuprof-hpc[torch]" with a CUDA '
            "build of torch (docs/theano-gpu.md)",
        )
    if name == "pytensor":
        return load(name, device), [
            "engine pytensor on the CPU: Numba, PyTensor's default backend "
            "(--engine pytensor-jax or pytensor-torch for the others)"
        ]
    return load(name, device), []


def place(engine: Engine, arrays: list[Any], device: str) -> list[Any]:
    """The operands where ``engine`` computes: the NumPy arrays themselves unless it has its own."""
    return cast(FrameworkEngine, engine).place(arrays, device) if hasattr(engine, "place") else arrays


def to_host(engine: Engine, result: Any) -> Any:
    """A result as a NumPy array, for the check against the float64 reference."""
    return cast(FrameworkEngine, engine).to_host(result) if hasattr(engine, "to_host") else result


def blocking(engine: Engine, call: Callable[[], Any]) -> Callable[[], Any]:
    """``call``, returning only once its result is computed (asynchronous backends dispatch and return)."""
    block = getattr(engine, "block", None)
    return call if block is None else lambda: block(call())


_EXTRAS = {"pytensor": "theano", "theano": "theano", "pytensor-jax": "jax", "pytensor-torch": "torch"}
