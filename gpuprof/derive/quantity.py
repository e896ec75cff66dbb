"""One reported number, and the ceilings a run recorded: the leaf every producer of quantities imports.

Kept apart from :mod:`gpuprof.derive.summary`, which assembles the producers' quantities, so that a
producer never imports the module that calls it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuprof.devices.peaks import Peaks
from gpuprof.model import Run


@dataclass(frozen=True)
class Quantity:
    """One reported number with its unit, origin and a few words on how it was obtained."""

    name: str
    value: float | str | None
    unit: str
    origin: str
    basis: str


def run_peaks(run: Run) -> list[Peaks]:
    """The ceilings recorded with the run (theoretical, table, calibrated), in that order."""
    return [Peaks(**{**p, "notes": tuple(p.get("notes", ()))}) for p in run.device.get("peaks", [])]
