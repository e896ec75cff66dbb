"""Workload engines: what computes the op. Each engine module has ``NAME``, ``DEVICE``,
``INSTALL`` (the pip extra that provides it), ``version()`` and
``prepare(op, inputs, scalar, out) -> Callable[[], array]``: a zero-argument call that computes the
op and returns the result, written into the preallocated ``out`` (or an engine's own reused output
buffer), so that allocation is never inside the timed region.

Engines are imported only when chosen (PyTensor and CuPy are slow to import).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from gpuprof.errors import EngineError, InputError

# engine name -> (module, device)
ENGINES: dict[str, tuple[str, str]] = {
    "numpy": ("numpy_engine", "cpu"),
    "pytensor": ("pytensor_engine", "cpu"),
    "theano": ("theano_engine", "cpu"),
    "cupy": ("cupy_engine", "cuda"),
    "cuda-kernels": ("cuda_kernels", "cuda"),
}
DEFAULT = {"cpu": "numpy", "cuda": "cupy"}
# The GPU extras, one per CUDA line (pyproject.toml); every "not installed" message names both.
CUDA_INSTALL = ('pip install "gpuprof-hpc[cuda13]" (driver 580 or newer, CUDA 13) or '
                '"gpuprof-hpc[cuda12]" (CUDA 12 drivers)')


def engine_names(device: str | None = None) -> list[str]:
    return [name for name, (_, dev) in ENGINES.items() if device in (None, dev)]


def load(name: str, device: str) -> ModuleType:
    """The engine module ``name`` for ``device``; a clear error if unknown, wrong device or missing."""
    if name not in ENGINES:
        raise InputError(f"unknown engine '{name}'", f"choose one of: {', '.join(ENGINES)}")
    module_name, engine_device = ENGINES[name]
    if engine_device != device:
        raise InputError(f"engine '{name}' runs on {engine_device}, not {device}",
                         f"use --device {engine_device} or one of: {', '.join(engine_names(device))}")
    try:
        return importlib.import_module(f"gpuprof.workloads.{module_name}")
    except ImportError as error:
        fix = CUDA_INSTALL if engine_device == "cuda" else f'pip install "gpuprof-hpc[{_EXTRAS.get(name, name)}]"'
        raise EngineError(f"engine '{name}' is not installed ({error.name or error})", fix) from None


_EXTRAS = {"pytensor": "theano", "theano": "theano"}
