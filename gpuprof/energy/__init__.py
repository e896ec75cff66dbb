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
"""

from __future__ import annotations

from pathlib import Path

from gpuprof.energy.sampling import SampledMeter as EnergyMeter

DEFAULT_INTERVAL = 0.1  # seconds between power samples
__all__ = ["DEFAULT_INTERVAL", "EnergyMeter", "open_energy"]


def open_energy(device_kind: str, interval: float = DEFAULT_INTERVAL, powercap_root: str | Path | None = None,
                gpu_index: int = 0) -> tuple[EnergyMeter | None, list[str]]:
    """A meter for ``device_kind`` ("cpu" or "cuda"), or None and the reason no power source is readable."""
    if device_kind == "cpu":
        from gpuprof.energy.rapl import POWERCAP_ROOT, open_rapl

        return open_rapl(Path(powercap_root) if powercap_root else POWERCAP_ROOT, interval)
    if device_kind == "cuda":
        from gpuprof.energy.nvml_power import open_nvml

        return open_nvml(gpu_index, interval)
    raise ValueError(f"device kind {device_kind!r}: expected 'cpu' or 'cuda'")
