"""This machine's NVIDIA GPUs, read at run time through NVML and, when importable, the CUDA runtime.

NVML (``pynvml`` from nvidia-ml-py) gives name, compute capability, clocks (max and current),
memory clock and bus width without creating a CUDA context. The SM count is a CUDA device
attribute (``cudaDevAttrMultiProcessorCount``), read through CuPy or cuda-python when one is
installed; otherwise it is NVML's CUDA-core count divided by the lanes per SM of the compute
capability. Clocks come from ``cudaDeviceGetAttribute``-style queries, never ``cudaDeviceProp``
fields: CUDA 13 removed ``clockRate`` and ``memoryClockRate`` from the struct.

Peaks from these values use the device-table formulas, so the table and the live device are
judged by the same arithmetic.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from gpuprof.devices.gpu_table import load
from gpuprof.devices.peaks import Peaks
from gpuprof.errors import DeviceError
from gpuprof.model import PEAK_TABLE
from gpuprof.workloads import CUDA_INSTALL

# cudaDeviceAttr values (CUDA 13.0 driver_types.h); the same numbers in CUDA 11 and 12.
ATTR_CLOCK_RATE = 13  # cudaDevAttrClockRate, kHz ("Peak clock frequency")
ATTR_SM_COUNT = 16  # cudaDevAttrMultiProcessorCount
ATTR_MEMORY_CLOCK_RATE = 36  # cudaDevAttrMemoryClockRate, kHz (half the per-pin data rate)
ATTR_BUS_WIDTH = 37  # cudaDevAttrGlobalMemoryBusWidth, bits
ATTR_L2_BYTES = 38  # cudaDevAttrL2CacheSize
_WANTED = (ATTR_SM_COUNT, ATTR_CLOCK_RATE, ATTR_MEMORY_CLOCK_RATE, ATTR_BUS_WIDTH, ATTR_L2_BYTES)

_NO_GPU_FIX = (
    "run on a machine with an NVIDIA GPU and driver, or use the CPU (--device cpu) "
    "or import profiler output with 'gpuprof import'"
)


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as the driver reports it; None where the driver or runtime could not say."""

    index: int  # NVML index (CUDA order may differ; match by pci_bus_id)
    name: str
    pci_bus_id: str | None
    cc: str | None
    sm_count: int | None
    sm_count_source: str
    cores: int | None  # nvmlDeviceGetNumGpuCores: CUDA cores, not SMs
    max_sm_clock_hz: float | None
    sm_clock_hz: float | None  # current SM clock when read
    max_memory_clock_hz: float | None
    bus_width_bits: int | None
    memory_bytes: int | None
    l2_bytes: int | None
    driver: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "gpu", **asdict(self)}


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _nvml() -> Any:
    try:
        import pynvml
    except ImportError:
        raise DeviceError(
            "no NVIDIA GPU support: NVML bindings (nvidia-ml-py) are not installed", f"{CUDA_INSTALL}, or {_NO_GPU_FIX}"
        ) from None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        reasons = {
            pynvml.NVMLError_LibraryNotFound: "driver library libnvidia-ml.so.1 not found",
            pynvml.NVMLError_DriverNotLoaded: "NVIDIA kernel driver not loaded",
        }
        reason = next((text for kind, text in reasons.items() if isinstance(error, kind)), str(error))
        raise DeviceError(f"no NVIDIA driver/GPU found (tried NVML: {reason})", _NO_GPU_FIX) from None
    return pynvml


def _optional(nvml: Any, call: str, *args: Any) -> Any:
    """NVML's ``call(*args)``, or None where this device or driver does not support it (NVMLError)
    or this nvidia-ml-py predates the call (AttributeError: older releases lack newer calls such as
    nvmlDeviceGetNumGpuCores), so the call is looked up here, not by the caller."""
    try:
        return getattr(nvml, call)(*args)
    except (nvml.NVMLError, AttributeError):
        return None


def _bus_key(bus_id: str | bytes | None) -> str | None:
    """'00000000:3B:00.0' (NVML) and '0000:3b:00.0' (CUDA) both become '3b:00.0'."""
    if not bus_id:
        return None
    return _text(bus_id).lower().split(":", 1)[-1]


def same_bus(nvml_bus_id: str | bytes | None, cuda_bus_id: str | bytes | None) -> bool:
    """Whether an NVML and a CUDA PCI bus ID name the same GPU (their formats differ)."""
    key = _bus_key(nvml_bus_id)
    return key is not None and key == _bus_key(cuda_bus_id)


def _cuda_attributes() -> tuple[dict[str, dict[int, int]], str]:
    """CUDA attributes by PCI bus key, and which runtime read them ({} when none could)."""
    for name, read in (("CuPy", _cupy_attributes), ("cuda-python", _cuda_python_attributes)):
        try:
            return read(), name
        except Exception:  # not installed, or no driver: each runtime raises its own error types
            continue
    return {}, "none"


def _cupy_attributes() -> dict[str, dict[int, int]]:
    from cupy.cuda import runtime

    found = {}
    for dev in range(runtime.getDeviceCount()):
        key = _bus_key(runtime.deviceGetPCIBusId(dev))
        found[key or str(dev)] = {a: runtime.deviceGetAttribute(a, dev) for a in _WANTED}
    return found


def _cuda_python_attributes() -> dict[str, dict[int, int]]:
    from cuda.bindings import runtime

    def ok(result: tuple[Any, ...]) -> Any:
        if result[0] != runtime.cudaError_t.cudaSuccess:
            raise RuntimeError(str(result[0]))
        return result[1]

    found = {}
    for dev in range(ok(runtime.cudaGetDeviceCount())):
        key = _bus_key(ok(runtime.cudaDeviceGetPCIBusId(32, dev)).split(b"\0")[0])
        found[key or str(dev)] = {
            a: ok(runtime.cudaDeviceGetAttribute(runtime.cudaDeviceAttr(a), dev)) for a in _WANTED
        }
    return found


def _mhz(value: int | None) -> float | None:
    return value * 1e6 if value else None


def _lanes(cc: str | None) -> int | None:
    lanes = load().lanes.get(cc or "")
    return lanes.fp32 if lanes else None


def _read_device(nvml: Any, index: int, cuda: dict[str, dict[int, int]], runtime: str) -> GpuInfo:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    pci = _optional(nvml, "nvmlDeviceGetPciInfo", handle)
    bus = _bus_key(pci.busId) if pci is not None else None
    attrs = cuda.get(bus or "", {})
    capability = _optional(nvml, "nvmlDeviceGetCudaComputeCapability", handle)
    cc = f"{capability[0]}.{capability[1]}" if capability else None
    cores = _optional(nvml, "nvmlDeviceGetNumGpuCores", handle)
    sm_count, sm_source = attrs.get(ATTR_SM_COUNT), f"cudaDevAttrMultiProcessorCount via {runtime}"
    lanes = _lanes(cc)
    if sm_count is None and cores and lanes:
        sm_count, sm_source = cores // lanes, f"NVML cores {cores} / {lanes} lanes per SM (CC {cc})"
    elif sm_count is None:
        sm_source = "unknown (no CUDA runtime and no NVML core count)"
    max_sm = _mhz(_optional(nvml, "nvmlDeviceGetMaxClockInfo", handle, nvml.NVML_CLOCK_SM))
    max_mem = _mhz(_optional(nvml, "nvmlDeviceGetMaxClockInfo", handle, nvml.NVML_CLOCK_MEM))
    memory = _optional(nvml, "nvmlDeviceGetMemoryInfo", handle)
    return GpuInfo(
        index=index,
        name=_text(nvml.nvmlDeviceGetName(handle)),
        pci_bus_id=_text(pci.busId) if pci is not None else None,
        cc=cc,
        sm_count=sm_count,
        sm_count_source=sm_source,
        cores=cores,
        max_sm_clock_hz=max_sm or (attrs[ATTR_CLOCK_RATE] * 1e3 if ATTR_CLOCK_RATE in attrs else None),
        sm_clock_hz=_mhz(_optional(nvml, "nvmlDeviceGetClockInfo", handle, nvml.NVML_CLOCK_SM)),
        max_memory_clock_hz=max_mem
        or (attrs[ATTR_MEMORY_CLOCK_RATE] * 1e3 if ATTR_MEMORY_CLOCK_RATE in attrs else None),
        bus_width_bits=_optional(nvml, "nvmlDeviceGetMemoryBusWidth", handle) or attrs.get(ATTR_BUS_WIDTH),
        memory_bytes=memory.total if memory is not None else None,
        l2_bytes=attrs.get(ATTR_L2_BYTES),
        driver=_text(_optional(nvml, "nvmlSystemGetDriverVersion") or "") or None,
    )


def detect() -> list[GpuInfo]:
    """Every NVIDIA GPU NVML sees; DeviceError naming what was tried when there is none."""
    nvml = _nvml()
    try:
        count = nvml.nvmlDeviceGetCount()
        if count == 0:
            raise DeviceError("no NVIDIA GPU found (NVML loaded but reports 0 devices)", _NO_GPU_FIX)
        cuda, runtime = _cuda_attributes()
        return [_read_device(nvml, index, cuda, runtime) for index in range(count)]
    finally:
        nvml.nvmlShutdown()


def runtime_peaks(info: GpuInfo) -> Peaks:
    """Peaks from the live device's own numbers: SMs x lanes(CC) x 2 x max SM clock, and
    2 x max memory clock x bus width / 8. Missing inputs leave that peak out (and say so)."""
    lanes = load().lanes.get(info.cc or "")
    notes: list[str] = []
    flops: dict[str, float] = {}
    if lanes and info.sm_count and info.max_sm_clock_hz:
        for dtype, per_sm in (("float32", lanes.fp32), ("float64", lanes.fp64)):
            flops[dtype] = info.sm_count * per_sm * 2 * info.max_sm_clock_hz
        notes.extend(f"{name} lanes per SM for CC {info.cc} are {flag}" for name, flag in lanes.status.items())
    else:
        notes.append(
            f"no FLOP peak: needs SM count ({info.sm_count}), lanes for CC {info.cc} "
            f"and max SM clock ({info.max_sm_clock_hz})"
        )
    bandwidth = None
    if info.max_memory_clock_hz and info.bus_width_bits:
        bandwidth = 2 * info.max_memory_clock_hz * info.bus_width_bits / 8
    lanes_text = f"{lanes.fp32}/{lanes.fp64}" if lanes else "?"
    source = (
        f"FP32/FP64 = {info.sm_count} SM ({info.sm_count_source}) x {lanes_text} lanes (CC {info.cc})"
        f" x 2 x max SM clock (NVML); BW = 2 x max memory clock x {info.bus_width_bits} bit / 8 (NVML)"
    )
    return Peaks(
        device=info.name,
        flops=flops,
        bandwidth=bandwidth,
        clock_hz=info.max_sm_clock_hz,
        origin=PEAK_TABLE,
        source=source,
        notes=tuple(notes),
    )
