"""NVIDIA board power and energy through NVML (``nvidia-ml-py``), while the timed region runs.

Energy comes from ``nvmlDeviceGetTotalEnergyConsumption`` (millijoules since the driver loaded;
Volta and newer) read at both ends of the region. Power is sampled in a background thread: the
instantaneous field ``NVML_FI_DEV_POWER_INSTANT`` where the driver has it, else
``nvmlDeviceGetPowerUsage`` (milliwatts; averaged over 1 s on Ampere and newer except GA100, so
short regions read as their neighbourhood). Without the energy counter, energy is the integral of
the samples (trapezoids) and the method says so. Covers the whole board, memory included.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from gpuprof.energy.sampling import Reading, SampledMeter
from gpuprof.workloads import CUDA_INSTALL

MILLIWATT = 1e-3
MILLIJOULE = 1e-3


def integrate(samples: list[tuple[float, float]]) -> float | None:
    """Joules under (time s, power W) samples by the trapezoid rule; None with fewer than two."""
    if len(samples) < 2:
        return None
    return sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in itertools.pairwise(samples))


class NvmlMeter(SampledMeter):
    """Board energy and power of one GPU over a ``with`` block."""

    def __init__(self, nvml: Any, handle: Any, name: str, interval: float) -> None:
        self._nvml, self._handle = nvml, handle
        self._has_counter = self._energy_mj() is not None
        self._instant = self._instant_mw() is not None
        power = "NVML_FI_DEV_POWER_INSTANT" if self._instant else "nvmlDeviceGetPowerUsage"
        energy = (
            "nvmlDeviceGetTotalEnergyConsumption"
            if self._has_counter
            else f"integrated {power} samples (no energy counter on this GPU)"
        )
        super().__init__(f"NVML {name}: energy {energy}, power {power}; whole board", interval)
        self._samples: list[tuple[float, float]] = []
        self._start_mj: int | None = None

    def _energy_mj(self) -> int | None:
        try:
            return int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))
        except self._nvml.NVMLError:
            return None

    def _instant_mw(self) -> int | None:
        try:
            value = self._nvml.nvmlDeviceGetFieldValues(self._handle, [self._nvml.NVML_FI_DEV_POWER_INSTANT])[0]
        except (self._nvml.NVMLError, AttributeError):
            return None
        return int(value.value.uiVal) if value.nvmlReturn == self._nvml.NVML_SUCCESS else None

    def _sample(self) -> None:
        try:
            milliwatts = self._instant_mw() if self._instant else int(self._nvml.nvmlDeviceGetPowerUsage(self._handle))
        except self._nvml.NVMLError as error:
            self._reading.problems.append(f"power reading failed: {error}")
            return
        if milliwatts is None:
            self._reading.problems.append("the instantaneous power field stopped answering")
            return
        self._samples.append((time.perf_counter(), milliwatts * MILLIWATT))

    def _begin(self) -> None:
        self._samples.clear()
        self._start_mj = self._energy_mj() if self._has_counter else None
        self._sample()

    def _finish(self, reading: Reading) -> None:
        end_mj = self._energy_mj() if self._has_counter else None
        reading.powers_w = [p for _, p in self._samples]
        reading.duration_s = self._samples[-1][0] - self._samples[0][0] if len(self._samples) > 1 else 0.0
        if self._start_mj is not None and end_mj is not None:
            reading.energy_j = (end_mj - self._start_mj) * MILLIJOULE
        elif self._has_counter:
            reading.problems.append("the energy counter stopped answering")
        else:
            reading.energy_j = integrate(self._samples)
        try:
            self._nvml.nvmlShutdown()
        except self._nvml.NVMLError:
            pass


def open_nvml(index: int, interval: float, pci_bus_id: str | None = None) -> tuple[NvmlMeter | None, list[str]]:
    """An NVML meter for the GPU at ``pci_bus_id`` (as CUDA reports it, '0000:3B:00.0'), else for
    NVML's GPU ``index``; or None and why there is none here. The bus ID is what ties the GPU the
    workload runs on to NVML's: NVML numbers GPUs by PCI order, CUDA by speed unless
    CUDA_DEVICE_ORDER=PCI_BUS_ID, and CUDA_VISIBLE_DEVICES renumbers them."""
    try:
        import pynvml
    except ImportError:
        return None, [f"no GPU power source: nvidia-ml-py is not installed ({CUDA_INSTALL}); energy not measured"]
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        return None, [
            (f"no GPU power source: NVML did not start ({error}; is the NVIDIA driver installed?); energy not measured")
        ]
    which = f"the GPU at PCI {pci_bus_id}" if pci_bus_id else f"GPU {index}"
    try:
        handle = (
            pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id) if pci_bus_id else pynvml.nvmlDeviceGetHandleByIndex(index)
        )
        name = pynvml.nvmlDeviceGetName(handle)
        pynvml.nvmlDeviceGetPowerUsage(handle)
    except pynvml.NVMLError as error:
        pynvml.nvmlShutdown()
        return None, [f"no GPU power source: NVML cannot read power of {which} ({error}); energy not measured"]
    return NvmlMeter(pynvml, handle, name if isinstance(name, str) else name.decode(), interval), []
