"""The ceilings a kernel is judged against, whichever way they were obtained.

CPU peaks come from the processor's cores, vector width, FMA units and clock (theoretical) or from
``gpuprof calibrate`` (measured ceilings); GPU peaks from the device table in ``configs/`` or from
SM count × lanes × 2 × clock at run time. Every value says where it came from and at which clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Peaks:
    """Peak FLOP/s per dtype and peak memory bandwidth of one device, with provenance."""

    device: str
    flops: dict[str, float]  # dtype ("float32", "float64", "float16") -> FLOP/s
    bandwidth: float | None  # byte/s
    clock_hz: float | None  # the clock the FLOP peaks assume (None: unknown)
    origin: str  # gpuprof.model origin: "peak-table", "calibrated", "derived"
    source: str  # formula or citation, printed beside the number
    notes: tuple[str, ...] = field(default_factory=tuple)

    def flops_for(self, dtype: str) -> float | None:
        return self.flops.get(dtype)
