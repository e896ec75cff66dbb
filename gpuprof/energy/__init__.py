"""Energy of the timed region: CPU RAPL counters or NVIDIA board power, with where each number came from.

``open_energy(device_kind)`` returns ``(meter, notes)``. ``meter`` is None when no power source can be
read here (no RAPL in a VM, RAPL readable only by root, no NVIDIA driver), and the notes say why in
one line. Otherwise it is a context manager wrapped around the timed repeats, like the hardware
counter session::

    meter, notes = open_energy("cpu")
    with meter:            # the timed region
        ...
    metrics = meter.metrics()   # list[gpuprof.model.Metric], base units (joule, watt, second)
    notes += meter.notes        # impossible readings are reported here, never as numbers

Metrics: ``energy`` (joules, measured), per-domain energies for RAPL, ``power (avg)`` (derived:
energy / region time), ``power (min sample)``/``power (max sample)``, ``energy samples``,
``energy sampling interval``, ``energy region`` (seconds the meter ran) and ``energy method``.
``gpuprof.derive.energy`` turns them into joules per call, energy per FLOP and GFLOP/s per watt.

A process that meters for another (the GPU workload child) hands the result over as JSON:
``to_record(meter.metrics(), notes)`` after the region, ``from_record(entry)`` on the other side.

RAPL is read from ``/sys/class/powercap``, or from the folder in ``$GPUPROF_POWERCAP_ROOT`` (a
container that mounts the host's sysfs elsewhere), or from ``powercap_root`` when given.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from gpuprof.energy.nvml_power import open_nvml
from gpuprof.energy.rapl import open_rapl
from gpuprof.energy.rapl import powercap_root as configured_root
from gpuprof.energy.sampling import SampledMeter as EnergyMeter
from gpuprof.model import Metric

DEFAULT_INTERVAL = 0.1  # seconds between power samples
__all__ = ["DEFAULT_INTERVAL", "EnergyMeter", "from_record", "open_energy", "to_record"]


def open_energy(
    device_kind: str,
    interval: float = DEFAULT_INTERVAL,
    powercap_root: str | Path | None = None,
    gpu_index: int = 0,
    gpu_pci_bus_id: str | None = None,
) -> tuple[EnergyMeter | None, list[str]]:
    """A meter for ``device_kind`` ("cpu" or "cuda"; the GPU by its PCI bus ID when given, else by
    NVML index), or None and the reason no power source is readable."""
    if device_kind == "cpu":
        if powercap_root:
            return open_rapl(Path(powercap_root), interval)
        root, hint = configured_root()
        return open_rapl(root, interval, hint)
    if device_kind == "cuda":
        return open_nvml(gpu_index, interval, gpu_pci_bus_id)
    raise ValueError(f"device kind {device_kind!r}: expected 'cpu' or 'cuda'")


def to_record(metrics: list[Metric], notes: list[str]) -> dict[str, Any]:
    """A finished meter's metrics and the energy notes (from :func:`open_energy` and the meter) as
    JSON-ready data."""
    return {"metrics": [dataclasses.asdict(m) for m in metrics], "notes": list(notes)}


def from_record(entry: dict[str, Any] | None) -> tuple[list[Metric], list[str]]:
    """The metrics and notes :func:`to_record` wrote; nothing for a record without energy."""
    if not entry:
        return [], []
    return [Metric(**m) for m in entry.get("metrics", [])], list(entry.get("notes", []))
