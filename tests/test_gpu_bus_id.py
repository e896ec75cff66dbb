"""The GPU the workload ran on (CUDA's device 0) is found in NVML by its PCI bus ID, for its
record and for its energy: NVML orders GPUs by PCI address, CUDA by speed unless
CUDA_DEVICE_ORDER=PCI_BUS_ID, and CUDA_VISIBLE_DEVICES renumbers them. No GPU here: NVML is a
stand-in module that answers like pynvml."""

from __future__ import annotations

import dataclasses
import sys
import types

import pytest

from gpuprof.devices import gpu_detect
from gpuprof.devices.gpu_detect import GpuInfo, same_bus
from gpuprof.energy.nvml_power import open_nvml
from gpuprof.launch import gpu_session

FIRST = GpuInfo(
    index=0,
    name="NVIDIA A100-SXM4-40GB",
    pci_bus_id="00000000:07:00.0",
    cc="8.0",
    sm_count=108,
    sm_count_source="nvml",
    cores=None,
    max_sm_clock_hz=1.41e9,
    sm_clock_hz=None,
    max_memory_clock_hz=None,
    bus_width_bits=None,
    memory_bytes=None,
    l2_bytes=None,
    driver=None,
)
SECOND = dataclasses.replace(FIRST, index=1, name="NVIDIA H100 80GB HBM3", pci_bus_id="00000000:3B:00.0", cc="9.0")


def test_nvml_and_cuda_bus_ids_compare_across_their_formats() -> None:
    assert same_bus("00000000:3B:00.0", "0000:3b:00.0")
    assert same_bus(b"00000000:3B:00.0", "0000:3B:00.0")
    assert not same_bus("00000000:3B:00.0", "0000:07:00.0")
    assert not same_bus(None, "0000:3b:00.0") and not same_bus("00000000:3B:00.0", None)


def test_the_record_describes_the_gpu_cuda_ran_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_detect, "detect", lambda: [FIRST, SECOND])
    assert gpu_session._matching_gpu(FIRST, "0000:3b:00.0") is SECOND
    assert gpu_session._matching_gpu(FIRST, "0000:07:00.0") is FIRST
    assert gpu_session._matching_gpu(FIRST, None) is FIRST  # an older child record: NVML's first GPU
    assert gpu_session._matching_gpu(FIRST, "0000:99:00.0") is FIRST  # not in NVML's list: keep what we have


class _NvmlError(Exception):
    pass


def _stand_in_pynvml(calls: list[tuple[str, object]]) -> types.ModuleType:
    """pynvml's calls that open_nvml makes, for two GPUs keyed by NVML bus ID."""
    boards = {"00000000:07:00.0": ("A100", 250_000), "00000000:3B:00.0": ("H100", 400_000)}
    order = list(boards)
    module = types.ModuleType("pynvml")
    module.NVMLError = _NvmlError
    module.nvmlInit = lambda: None
    module.nvmlShutdown = lambda: None

    def by_index(index: int) -> str:
        calls.append(("index", index))
        return order[index]

    def by_bus(bus_id: str) -> str:
        calls.append(("bus", bus_id))
        for key in boards:
            if same_bus(key, bus_id):
                return key
        raise _NvmlError("Not Found")

    module.nvmlDeviceGetHandleByIndex = by_index
    module.nvmlDeviceGetHandleByPciBusId = by_bus
    module.nvmlDeviceGetName = lambda handle: boards[handle][0]
    module.nvmlDeviceGetPowerUsage = lambda handle: boards[handle][1]

    def no_energy_counter(handle: str) -> int:
        raise _NvmlError("Not Supported")

    module.nvmlDeviceGetTotalEnergyConsumption = no_energy_counter
    return module


def test_energy_is_read_from_the_gpu_at_the_bus_id(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, object]] = []
    monkeypatch.setitem(sys.modules, "pynvml", _stand_in_pynvml(calls))
    meter, notes = open_nvml(0, 60, pci_bus_id="0000:3B:00.0")
    assert notes == [] and meter is not None
    assert calls == [("bus", "0000:3B:00.0")]
    assert "NVML H100" in meter._reading.method
    meter, notes = open_nvml(0, 60)  # no bus ID known: NVML's first GPU
    assert meter is not None and "NVML A100" in meter._reading.method


def test_a_bus_id_nvml_does_not_know_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", _stand_in_pynvml([]))
    meter, notes = open_nvml(0, 60, pci_bus_id="0000:99:00.0")
    assert meter is None
    assert notes == [
        "no GPU power source: NVML cannot read power of the GPU at PCI 0000:99:00.0 (Not Found); energy not measured"
    ]
