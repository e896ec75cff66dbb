"""gpuprof's hand-written CUDA kernels (``kernels/gpuprof_ops.cu``), compiled at run time by NVRTC
through CuPy's RawModule and launched by name (``gpuprof_<op>_<f32|f64|f16>``).

The source ships inside the package: ``gpuprof/kernels`` is a link to the repository's ``kernels/``
folder, and the package data rule ``"gpuprof" = ["kernels/*.cu"]`` copies it into wheels, so an
editable checkout and an installed package read the same file, ``gpuprof/kernels/gpuprof_ops.cu``
(found next to this package by path: ``gpuprof`` is a namespace package, which
``importlib.resources`` cannot open in an editable install).
NVRTC has no built-in ``cuda_fp16.h``: the include folder comes from CuPy's CUDA path, ``CUDA_PATH``
or ``/usr/local/cuda``. CuPy adds its own defaults (the GPU's architecture, ``-ftz=true``).
Importing this module needs CuPy but no GPU; calling ``prepare`` needs a GPU.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cupy as cp
import numpy as np

from gpuprof.errors import EngineError
from gpuprof.workloads.ops import get_op

NAME = "cuda-kernels"
SOURCE = "gpuprof_ops.cu"
KERNELS_DIR = Path(__file__).resolve().parent.parent / "kernels"
SUFFIX = {"float32": "f32", "float64": "f64", "float16": "f16"}
BLOCK = 256  # elementwise threads per block (the kernels' __launch_bounds__)
TILE = 16  # dot tile edge (TILE in gpuprof_ops.cu)
MAX_BLOCKS = 65535 * 32  # elementwise grids are grid-stride loops, so any cap is correct


def version() -> str:
    return f"gpuprof kernels (NVRTC via CuPy {cp.__version__})"


def source() -> str:
    """The kernel source as shipped with the package."""
    return (KERNELS_DIR / SOURCE).read_text()


def kernel_name(op: str, dtype: str) -> str:
    return f"gpuprof_{op}_{SUFFIX[dtype]}"


def include_dirs() -> list[str]:
    """Folders that hold ``cuda_fp16.h`` for NVRTC, most specific first."""
    roots = [cp.cuda.get_cuda_path(), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    return [
        str(Path(root) / "include") for root in roots if root and (Path(root) / "include" / "cuda_fp16.h").is_file()
    ]


def nvrtc_options() -> tuple[str, ...]:
    found = include_dirs()
    if not found:
        raise EngineError(
            "NVRTC cannot compile the gpuprof kernels: cuda_fp16.h is not in CuPy's CUDA "
            "path, CUDA_PATH or /usr/local/cuda",
            "install the CUDA headers (pip install nvidia-cuda-runtime, or a CUDA toolkit) "
            "or set CUDA_PATH to a toolkit",
        )
    return ("-std=c++17", f"-I{found[0]}")


@functools.cache
def _module() -> Any:
    module = cp.RawModule(code=source(), options=nvrtc_options(), backend="nvrtc")
    try:
        module.compile()
    except cp.cuda.compiler.CompileException as error:
        first = str(error).strip().splitlines()[:1]
        raise EngineError(
            f"NVRTC could not compile {SOURCE} for this GPU: {first[0] if first else error}",
            "check that NVRTC supports this GPU's architecture (a CUDA 13 NVRTC starts at sm_75), or use --engine cupy",
        ) from None
    return module


def launch_shape(op: str, out: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(grid, block) of one launch."""
    if get_op(op).kernel == "matmul":
        m, n = out.shape
        return ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE), (TILE, TILE)
    return (min((out.size + BLOCK - 1) // BLOCK, MAX_BLOCKS),), (BLOCK,)


def prepare(op: str, inputs: list[Any], scalar: float, out: Any) -> Callable[[], Any]:
    kernel = _module().get_function(kernel_name(op, out.dtype.name))
    grid, block = launch_shape(op, out)
    a = inputs[0]
    kind = get_op(op).kernel
    if kind == "matmul":
        b = inputs[1]
        args: tuple[Any, ...] = (a, b, out, np.int32(a.shape[0]), np.int32(a.shape[1]), np.int32(b.shape[1]))
    elif kind == "binary":
        args = (a, inputs[1], out, np.uint64(out.size))
    elif kind == "scalar":
        args = (a, out.dtype.type(scalar), out, np.uint64(out.size))
    else:
        args = (a, out, np.uint64(out.size))

    def call() -> Any:
        kernel(grid, block, args)
        return out

    return call
