"""PyTensor's PyTorch backend: the op's PyTensor graph compiled with ``mode="PYTORCH"``, run by
PyTorch on the CPU or an NVIDIA GPU (with a CUDA build of torch).

PyTensor turns the graph into a Python function of ``torch`` calls and wraps it in
``torch.compile`` (TorchInductor: C++/OpenMP on the CPU, Triton kernels on a GPU), compiled on the
first call. PyTensor's own call wrapper copies every output to a NumPy array (``out.cpu().numpy()``,
a device-to-host copy on a GPU), so the engine calls the compiled function inside it directly, on
tensors already on the device, and the result stays there. That function looks up PyTensor's
generated helpers as attributes of ``pytensor.link.utils``; the wrapper sets them around each call,
the engine sets them once. CUDA launches are asynchronous: on a GPU every timed call waits for
``torch.cuda.synchronize``; on the CPU PyTorch returns when the result is computed. The compiled
function allocates its output on each call (PyTorch's allocator), where the NumPy engines write
into a preallocated one. Float32 matrix products are computed in full float32
(``torch.set_float32_matmul_precision("highest")``, PyTorch's default, set so that nothing else in
the process can turn TF32 on).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytensor
import pytensor.link.utils
import torch

from gpuprof.errors import DeviceError
from gpuprof.workloads import pytensor_engine

NAME = "pytensor-torch"
MODE = "PYTORCH"
COMPILER = "PyTensor graph rewrite, then torch.compile: TorchInductor compiles on the first call"
torch.set_float32_matmul_precision("highest")
# PyTensor hands its read-only constant (the s of ``scalar``) to torch.as_tensor, which warns that
# writing to it would be undefined; nothing writes to it.
warnings.filterwarnings(
    "ignore", message="The given NumPy array is not writable", category=UserWarning, module=r"pytensor\.link\.pytorch"
)
WAITS = {
    "cpu": "the result (PyTorch on the CPU computes before it returns)",
    "cuda": "torch.cuda.synchronize (CUDA launches are asynchronous)",
}


def version() -> str:
    return f"pytensor {pytensor.__version__} (mode {MODE}), torch {torch.__version__}"


def place(arrays: list[np.ndarray], device: str) -> list[Any]:
    if device == "cpu":
        return [torch.from_numpy(x) for x in arrays]
    if not torch.cuda.is_available():
        build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}, no usable device"
        raise DeviceError(
            f"PyTorch {torch.__version__} cannot use a GPU here ({build})",
            "install a CUDA build of torch (docs/theano-gpu.md), or use --device cpu",
        )
    return [torch.as_tensor(x, device="cuda") for x in arrays]


def block(result: Any) -> Any:
    if result.is_cuda:
        torch.cuda.synchronize(result.device)
    return result


def to_host(result: Any) -> np.ndarray:
    return result.detach().cpu().numpy()


GPU_TIMER = (
    "CUDA events (torch.cuda.Event) on PyTorch's current stream around {count} dispatches, "
    "time per call = batch / {count}, dispatch latency included where it exceeds the kernels"
)


def batch_seconds(call: Callable[[], Any], count: int) -> float:
    """GPU seconds of ``count`` dispatches of ``call``, between two CUDA events on torch's current stream."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(count):
        call()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / 1e3


def prepare(op: str, inputs: list[Any], scalar: float, out: Any = None) -> Callable[[], Any]:
    """The dispatching call; ``out`` is not used (the compiled function allocates its result)."""
    wrapper = pytensor_engine.compiled(op, inputs, scalar, MODE).vm.jit_fn
    for name, functor in getattr(wrapper, "gen_functors", ()):
        setattr(pytensor.link.utils, name[1:], functor)
    inner = getattr(wrapper, "fn", wrapper)  # torch.compile of PyTensor's function (PyTensor before 3.0 had no wrapper)
    return lambda: inner(*inputs)[0]
