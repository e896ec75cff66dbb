"""NVML calls a driver or an nvidia-ml-py release may not have: the GPU is still described, with
None where NVML could not say. The stand-in pynvml answers like an older nvidia-ml-py: it has the
basic calls and lacks the newer ones altogether (no attribute), as releases made before a call was
added do. Its values are a Tesla V100's from NVIDIA's datasheet, a plumbing check, not a GPU reading."""

from __future__ import annotations

import sys
import types

import pytest

from gpuprof.devices import gpu_detect


class _OldNvmlError(Exception):
    pass


def _older_pynvml(unsupported: str) -> types.ModuleType:
    """pynvml without nvmlDeviceGetNumGpuCores / nvmlDeviceGetMemoryBusWidth; ``unsupported`` raises NVMLError."""
    module = types.ModuleType("pynvml")
    module.NVMLError = module.NVMLError_LibraryNotFound = module.NVMLError_DriverNotLoaded = _OldNvmlError
    module.NVML_CLOCK_SM, module.NVML_CLOCK_MEM = 1, 2
    module.nvmlInit = module.nvmlShutdown = lambda: None
    module.nvmlDeviceGetCount = lambda: 1
    module.nvmlDeviceGetHandleByIndex = lambda index: index
    module.nvmlDeviceGetName = lambda handle: b"Tesla V100-SXM2-16GB"
    module.nvmlDeviceGetPciInfo = lambda handle: types.SimpleNamespace(busId=b"00000000:00:1E.0")
    module.nvmlDeviceGetCudaComputeCapability = lambda handle: (7, 0)
    module.nvmlDeviceGetMaxClockInfo = lambda handle, clock: {1: 1530, 2: 877}[clock]
    module.nvmlDeviceGetClockInfo = lambda handle, clock: 1312
    module.nvmlDeviceGetMemoryInfo = lambda handle: types.SimpleNamespace(total=16 * 2**30)
    module.nvmlSystemGetDriverVersion = lambda: b"418.67"

    def refuse(*args: object) -> None:
        raise _OldNvmlError("Not Supported")

    setattr(module, unsupported, refuse)
    return module


def test_an_older_nvml_without_newer_calls_still_describes_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    old = _older_pynvml(unsupported="nvmlDeviceGetClockInfo")
    assert not hasattr(old, "nvmlDeviceGetNumGpuCores") and not hasattr(old, "nvmlDeviceGetMemoryBusWidth")
    monkeypatch.setitem(sys.modules, "pynvml", old)
    monkeypatch.setattr(gpu_detect, "_cuda_attributes", lambda: ({}, "none"))
    [info] = gpu_detect.detect()
    assert (info.name, info.cc, info.driver) == ("Tesla V100-SXM2-16GB", "7.0", "418.67")
    assert info.max_sm_clock_hz == 1530e6 and info.max_memory_clock_hz == 877e6
    # absent calls (AttributeError) and an unsupported one (NVMLError) both read as "unknown"
    assert info.cores is None and info.bus_width_bits is None and info.sm_clock_hz is None
    assert info.sm_count is None and info.sm_count_source.startswith("unknown")
